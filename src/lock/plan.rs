//! The lock as a plan: what `rockbuild lock` prints — per project the origin, ref, commit,
//! submodules, where the ref came from and what hipify will do; then the SDK, the targets and
//! every wheel's file-name stem.

use std::collections::BTreeMap;

use super::Lock;
use crate::stack::{HipifyPolicy, Stack};

/// The lock in lines a person reads; `stack` says what hipify means for each project, and
/// `files` (by project) which files its checkout writes, where its recipe names any.
pub fn describe(
    lock: &Lock,
    preset: Option<&str>,
    stack: &Stack,
    files: &BTreeMap<String, String>,
) -> String {
    let mut out = String::new();
    if let Some(preset) = preset {
        out.push_str(&format!("preset: {preset}\n\n"));
    }
    let short = |sha: &str| sha.get(..12).unwrap_or(sha).to_string();
    for (name, project) in &lock.projects {
        let reference = if crate::git::is_full_sha(&project.requested_ref) {
            short(&project.requested_ref)
        } else {
            project.requested_ref.clone()
        };
        let mut why = project.pin.describe();
        if let Some(preset) = &project.preset
            && !matches!(project.pin, super::PinOrigin::Preset { .. })
        {
            why.push_str(&format!("; preset {preset}"));
        }
        let hipify = match (&project.hipify, stack.projects.get(name).map(|p| &p.hipify)) {
            (Some(stamp), _) => format!("cached ({} files changed)", stamp.changed_files),
            (None, Some(HipifyPolicy::Script { script, .. })) => {
                format!("{script} at checkout, if the commit has it")
            }
            (None, Some(HipifyPolicy::RecipeFiles)) if files.contains_key(name) => {
                format!("{} at checkout", files[name])
            }
            (None, _) => "off".to_string(),
        };
        out.push_str(&format!(
            "{name} ({}): {}\n  ref         {reference} ({why})\n  origin      {}\n  submodules  {}\n  hipify      {hipify}\n",
            project.checkout_dir,
            short(&project.commit),
            crate::redact::redact_url(&project.origin),
            project.submodules.len(),
        ));
        if let Some(flag) = &project.origin_flag {
            out.push_str(&format!("  origin from {flag}\n"));
        }
    }
    match &lock.build {
        None => out.push_str("\nsdk, targets, wheels: not locked (pass --index-url, --pytorch-rocm-arch or --amdgpu-family, --version-suffix)\n"),
        Some(build) => {
            out.push('\n');
            if !build.sdk_version.is_empty() {
                out.push_str(&format!(
                    "sdk      rocm {}{}\n",
                    build.sdk_version,
                    build
                        .index_url
                        .as_deref()
                        .map(|u| format!(" from {u}"))
                        .unwrap_or_default()
                ));
            }
            if !build.targets.is_empty() {
                let targets: Vec<String> = build.targets.iter().map(ToString::to_string).collect();
                out.push_str(&format!("targets  {}\n", targets.join(",")));
            }
            if !build.stems.is_empty() {
                out.push_str(&format!(
                    "wheels   {} ({}, suffix {})\n",
                    build.stems.values().cloned().collect::<Vec<_>>().join(", "),
                    build.release_type,
                    build.version_suffix
                ));
            }
            for (project, why) in &build.decided {
                out.push_str(&format!("decided  {project}: by the build ({why})\n"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use indexmap::IndexMap;

    use super::*;
    use crate::lock::{BuildRecord, HipifyStamp, LockedProject, LockedSubmodule, PinOrigin};

    #[test]
    fn a_whole_lock_reads_as_a_plan() {
        let mut lock = Lock::new("configs/stack.yaml");
        lock.projects.insert(
            "torch".into(),
            LockedProject {
                checkout_dir: "pytorch".into(),
                origin: "https://github.com/ROCm/pytorch.git".into(),
                requested_ref: "release/2.9".into(),
                commit: "1".repeat(40),
                tree: "2".repeat(40),
                pin: PinOrigin::Flag {
                    flag: "--repo-hashtag".into(),
                },
                preset: Some("rocm-release".into()),
                origin_flag: None,
                submodules: vec![LockedSubmodule {
                    path: "third_party/kineto".into(),
                    commit: "3".repeat(40),
                    url: "../kineto.git".into(),
                }],
                hipify: Some(HipifyStamp {
                    upstream_tree: "2".repeat(40),
                    script_sha256: "4".repeat(64),
                    result_tree: "5".repeat(40),
                    submodule_trees: IndexMap::new(),
                    changed_files: 876,
                    leftovers: Vec::new(),
                }),
            },
        );
        lock.projects.insert(
            "audio".into(),
            LockedProject {
                checkout_dir: "pytorch_audio".into(),
                origin: "https://github.com/pytorch/audio".into(),
                requested_ref: "6".repeat(40),
                commit: "6".repeat(40),
                tree: "7".repeat(40),
                pin: PinOrigin::RelatedCommits {
                    file: "pytorch/related_commits".into(),
                    line: 7,
                },
                preset: Some("rocm-release".into()),
                origin_flag: Some("--origin audio=https://github.com/pytorch/audio".into()),
                submodules: vec![],
                hipify: None,
            },
        );
        let stack = Stack::load(None).expect("stack");
        let unbuilt = describe(
            &lock,
            Some("rocm-release — torch ref 'release/2.9' is listed"),
            &stack,
            &BTreeMap::new(),
        );
        lock.build = Some(BuildRecord {
            sdk_version: "7.10.0a20251124".into(),
            index_url: Some("https://rocm.nightlies.amd.com/v2/gfx110X-all/".into()),
            sdk_targets: vec![],
            targets: vec![serde_json::from_str("\"gfx1100\"").expect("target")],
            mode: Default::default(),
            release_type: "nightly".into(),
            version_suffix: "+rocm7.10.0a20251124".into(),
            versions: IndexMap::from([
                ("torch".to_string(), "2.9.0+rocm7.10.0a20251124".to_string()),
                ("audio".to_string(), "2.9.0+rocm7.10.0a20251124".to_string()),
            ]),
            stems: IndexMap::from([
                (
                    "torch".to_string(),
                    "torch-2.9.0+rocm7.10.0a20251124".to_string(),
                ),
                (
                    "audio".to_string(),
                    "torchaudio-2.9.0+rocm7.10.0a20251124".to_string(),
                ),
            ]),
            decided: IndexMap::new(),
        });
        insta::assert_snapshot!(format!(
            "{unbuilt}\n---\n{}",
            describe(&lock, None, &stack, &BTreeMap::new())
        ));
    }
}
