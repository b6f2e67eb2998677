//! The reusable chain workflow: one family's chain for one ref. Written as tables (`tables`:
//! its inputs, jobs and steps as data), resolved into the workflow model (`resolve`: jobs and
//! steps, pure), rendered by `workflow` (the YAML emitter), as maturin's generator keeps its
//! data, its model and its rendering apart.

mod resolve;
mod tables;

use super::parts::{header, pairs};
use super::workflow::{Workflow, Yaml};

/// The chain workflow's file name; callers use `./.github/workflows/<it>`.
pub const CHAIN_FILE: &str = "rockbuild-chain.yml";

/// The chain workflow, from its tables.
pub fn workflow() -> Workflow {
    Workflow {
        file: CHAIN_FILE.into(),
        name: "rockbuild chain".into(),
        header: header(&tables::HEADER),
        on: on(),
        permissions: Vec::new(),
        concurrency: None,
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: resolve::jobs(&tables::JOBS),
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
