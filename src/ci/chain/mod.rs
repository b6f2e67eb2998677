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

/// The chain workflow's file name; callers use `./.github/workflows/<it>`.
pub const CHAIN_FILE: &str = "rockbuild-chain.yml";

/// The chain workflow of `mode` (a family's, or a multi-arch set's), from its tables.
pub fn workflow(mode: BuildMode) -> Workflow {
    let (name, what): (&str, &[&str]) = match mode {
        BuildMode::PerFamily => ("rockbuild chain", &tables::HEADER),
        BuildMode::MultiArch => ("rockbuild multi-arch chain", &tables::MULTI_ARCH_HEADER),
    };
    Workflow {
        file: CHAIN_FILE.into(),
        name: name.into(),
        header: header(what),
        on: on(),
        permissions: Vec::new(),
        concurrency: None,
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: resolve::jobs(&tables::JOBS, mode),
    }
}

/// `on: workflow_call` with every input of the chain, each required.
fn on() -> Yaml {
    let inputs: Vec<(String, Yaml)> = tables::CHAIN_INPUTS
        .iter()
        .map(|(name, kind, description)| {
            (
                name.to_string(),
                Yaml::map(vec![
                    ("description", Yaml::str(*description)),
                    ("type", Yaml::str(*kind)),
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
