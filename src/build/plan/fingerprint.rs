//! The build cache's key of a project: everything that decides what its wheel contains.

use std::collections::BTreeMap;

use serde::Serialize;

use super::render::StepView;
use super::{Action, ProjectPlan};
use crate::build::compilers::LAUNCHER_VARS;
use crate::build::targets::TargetChoice;
use crate::lock::LockedProject;
use crate::recipes::SdkFacts;

/// The cache key of a project: its sources (HEAD + uncommitted changes, hipify stamp), every
/// step's argv, cwd and environment (clean-up steps and compiler launchers aside: they do not
/// change the output; the PATH stands in as the tools it resolves), its version, the SDK
/// version, the targets, the venv's Python, the tools by name and the keys of the projects it
/// builds against (or pins at the version their build makes).
pub fn fingerprint(
    plan: &ProjectPlan,
    locked: Option<&LockedProject>,
    sdk: &SdkFacts,
    targets: &TargetChoice,
    tools: &BTreeMap<String, String>,
    deps: &[Option<String>],
) -> Option<String> {
    let digest = plan.source.digest.as_ref()?;
    let deps: Vec<&String> = deps.iter().map(Option::as_ref).collect::<Option<_>>()?;
    #[derive(Serialize)]
    struct Key<'a> {
        project: &'a str,
        source: &'a str,
        hipify: Option<&'a str>,
        /// `None`: decided by the build (from the sources and steps the key covers).
        version: Option<&'a str>,
        sdk: &'a str,
        python: &'a str,
        targets: Vec<&'a str>,
        tools: &'a BTreeMap<String, String>,
        steps: Vec<StepView>,
        deps: Vec<&'a String>,
    }
    let steps = plan
        .steps
        .iter()
        // Clean-up steps (`--clean` removes build/) do not change what is built.
        .filter(|s| !matches!(s.action, Action::Remove { .. }))
        .map(|s| {
            let mut view = StepView::of(s);
            // The PATH stands in the key through what it resolves (`tools`): a venv put
            // first, or a shell's own additions, find the same compilers.
            view.env
                .retain(|k, _| !LAUNCHER_VARS.contains(&k.as_str()) && k != crate::env_vars::PATH);
            view
        })
        .collect();
    let key = Key {
        project: &plan.name,
        source: digest,
        hipify: locked
            .and_then(|l| l.hipify.as_ref())
            .map(|h| h.result_tree.as_str()),
        version: plan.version.known(),
        sdk: &sdk.info.version,
        python: &sdk.info.python,
        targets: targets.targets.iter().map(|t| t.as_str()).collect(),
        tools,
        steps,
        deps,
    };
    let bytes = serde_json::to_vec(&key).ok()?;
    Some(crate::fsutil::sha256_hex(&bytes))
}
