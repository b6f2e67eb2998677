//! The reusable chain workflow: one family's chain for one ref, or (multi-arch) one set of
//! every family's targets for one ref. Written as tables (`tables`:
//! its inputs, jobs and steps as data), resolved into the workflow model (`resolve`: jobs and
//! steps, pure), rendered by `workflow` (the YAML emitter), as maturin's generator keeps its
//! data, its model and its rendering apart.

mod resolve;
mod tables;

use super::parts::{header, pairs};
use super::workflow::{Workflow, Yaml};
use crate::lock::mode::BuildMode;
use crate::platform::Platform;

/// The chain workflow's file name; callers use `./.github/workflows/<it>`.
pub const CHAIN_FILE: &str = "rockbuild-chain.yml";
/// The Windows chain workflow's file name.
pub const WINDOWS_CHAIN_FILE: &str = "rockbuild-windows-chain.yml";

/// The chain input only the Linux chain has: its smoke and test jobs run in the test image.
const LINUX_ONLY_INPUT: &str = "test-image";

/// The chain workflow of `mode` (a family's, or a multi-arch set's) on `platform`, from its
/// tables.
pub fn workflow(mode: BuildMode, platform: Platform) -> Workflow {
    let (file, name, what): (&str, &str, &[&str]) = match (mode, platform) {
        (BuildMode::PerFamily, Platform::Linux) => (CHAIN_FILE, "rockbuild chain", &tables::HEADER),
        (BuildMode::MultiArch, Platform::Linux) => (
            CHAIN_FILE,
            "rockbuild multi-arch chain",
            &tables::MULTI_ARCH_HEADER,
        ),
        (BuildMode::PerFamily, Platform::Windows) => (
            WINDOWS_CHAIN_FILE,
            "rockbuild Windows chain",
            &tables::WINDOWS_HEADER,
        ),
        (BuildMode::MultiArch, Platform::Windows) => (
            WINDOWS_CHAIN_FILE,
            "rockbuild multi-arch Windows chain",
            &tables::MULTI_ARCH_WINDOWS_HEADER,
        ),
    };
    Workflow {
        file: file.into(),
        name: name.into(),
        header: header(what),
        on: on(platform),
        permissions: Vec::new(),
        concurrency: None,
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: resolve::jobs(&tables::JOBS, mode, platform),
    }
}

/// The names of the inputs of the chain on `platform`, in their order.
pub fn inputs(platform: Platform) -> Vec<&'static str> {
    chain_inputs(platform).map(|(name, _, _)| name).collect()
}

fn chain_inputs(
    platform: Platform,
) -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    let windows: &[(&str, &str, &str)] = match platform {
        Platform::Linux => &[],
        Platform::Windows => &tables::WINDOWS_INPUTS,
    };
    tables::CHAIN_INPUTS
        .into_iter()
        .filter(move |(name, _, _)| platform == Platform::Linux || *name != LINUX_ONLY_INPUT)
        .chain(windows.iter().copied())
}

/// `on: workflow_call` with every input of the chain, each required.
fn on(platform: Platform) -> Yaml {
    let inputs: Vec<(String, Yaml)> = chain_inputs(platform)
        .map(|(name, kind, description)| {
            (
                name.to_string(),
                Yaml::map(vec![
                    ("description", Yaml::str(description)),
                    ("type", Yaml::str(kind)),
                    ("required", Yaml::Bool(true)),
                ]),
            )
        })
        .collect();
    Yaml::map(vec![(
        "workflow_call",
        Yaml::map(vec![("inputs", Yaml::Map(inputs))]),
    )])
}
