//! What `lock` records, before any tree or build exists: every resolved project (with the
//! hipify result the cache already knows for its tree), and — when their inputs are given —
//! the SDK version, the gfx targets and every wheel's version and file-name stem, computed by
//! build's recipes from the files of the locked commits (read from the mirrors).

use std::collections::BTreeMap;

use anyhow::Context as _;
use std::path::Path;

use git2::Oid;
use indexmap::IndexMap;

use super::Selection;
use super::resolve::Resolved;
use crate::git::local;
use crate::hipify::cache;
use crate::lock::{BuildRecord, HipifyStamp, Lock, LockedProject};
use crate::recipes::SourceState;
use crate::recipes::{CheckoutFiles, Recipes, VersionInput, WheelVersion};
use crate::stack::{HipifyPolicy, Project, Stack, Target};
use crate::version::ReleaseType;

/// The build facts `lock` was given or found.
#[derive(Clone, Debug, Default)]
pub struct BuildFacts {
    /// The SDK version the preflight chose, and the index it is on.
    pub sdk: Option<(String, String)>,
    pub targets: Vec<Target>,
    pub version_suffix: Option<String>,
    pub release_type: Option<ReleaseType>,
    pub build_number: u32,
}

/// The lock entries of the resolved projects, in stack order.
pub fn locked_projects(
    selection: &Selection,
    resolved: &[Resolved],
) -> anyhow::Result<IndexMap<String, LockedProject>> {
    let mut out = IndexMap::new();
    for (name, resolved) in selection.projects.iter().zip(resolved) {
        let project = &selection.stack.projects[name];
        let stamp = cached_stamp(project, resolved, &selection.cache_dir)?;
        out.insert(
            name.clone(),
            super::apply::locked_project(project, resolved, stamp),
        );
    }
    Ok(out)
}

/// The hipify result the cache holds for this tree and script, if any.
fn cached_stamp(
    project: &Project,
    resolved: &Resolved,
    cache_dir: &Path,
) -> anyhow::Result<Option<HipifyStamp>> {
    let HipifyPolicy::Script { script, .. } = &project.hipify else {
        return Ok(None);
    };
    let commit = Oid::from_str(&resolved.commit)?;
    let Some(blob) = local::read_file_at(&resolved.mirror.repo()?, commit, script)? else {
        return Ok(None);
    };
    let key = cache::key(
        &resolved.tree,
        &crate::fsutil::sha256_hex(&blob),
        !resolved.submodules.is_empty(),
    );
    Ok(cache::read(cache_dir, &key).map(|record| record.stamp))
}

/// By locked project whose checkout writes files for its recipe (`hipify: {mode:
/// recipe-files}`): their paths, for people (`build_env.json`).
pub fn checkout_files(
    lock: &Lock,
    stack: &Stack,
    recipes: &Recipes,
) -> Result<BTreeMap<String, String>, crate::recipes::Error> {
    let mut out = BTreeMap::new();
    for (name, locked) in &lock.projects {
        let Some(project) = stack.projects.get(name) else {
            continue;
        };
        if project.hipify != HipifyPolicy::RecipeFiles {
            continue;
        }
        let paths: Vec<&str> = recipes
            .of(stack, project)?
            .checkout_files(&locked.pin)
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        if !paths.is_empty() {
            out.insert(name.clone(), paths.join(", "));
        }
    }
    Ok(out)
}

/// The build record, when there is anything to record; `None` otherwise. Wheel versions
/// come from build's own rules (`Recipe::version`, given the files each recipe reads, taken
/// from the locked commits in the mirrors), so `build --lock` computes exactly these; a
/// version no rule can predict is listed as decided by the build, which records it.
pub fn build_record(
    selection: &Selection,
    resolved: &[Resolved],
    facts: &BuildFacts,
    recipes: &Recipes,
) -> anyhow::Result<Option<BuildRecord>> {
    let sdk_version = facts.sdk.as_ref().map(|(v, _)| v.clone());
    let suffix = match (facts.version_suffix.as_deref().map(str::trim), &sdk_version) {
        (Some(given), _) if !given.is_empty() => Some(given.to_string()),
        (_, Some(sdk)) => Some(crate::version::rocm_suffix(sdk)?),
        _ => None,
    };
    if sdk_version.is_none() && suffix.is_none() && facts.targets.is_empty() {
        return Ok(None);
    }
    let release_type = facts.release_type.unwrap_or(ReleaseType::Nightly);
    let mut versions = IndexMap::new();
    let mut stems = IndexMap::new();
    let mut decided = IndexMap::new();
    if let Some(suffix) = &suffix {
        for (name, resolved) in selection.projects.iter().zip(resolved) {
            let project = &selection.stack.projects[name];
            let recipe = recipes.of(&selection.stack, project)?;
            // The record names wheels: a project that makes none has no version in it.
            let Some(wheel) = &project.wheel else {
                continue;
            };
            let files = files_at(recipe.reads(), resolved).with_context(|| {
                format!("'{name}': reading the files its wheel version comes from")
            })?;
            let source = SourceState {
                // A rockbuild checkout is detached at the upstream commit.
                head: Some(resolved.commit.clone()),
                branch: None,
                upstream: Some(resolved.commit.clone()),
                digest: None,
                epoch: None,
            };
            let planned = recipe
                .version(&VersionInput {
                    project: name,
                    dir: &selection.root.join(&project.checkout_dir),
                    files: &files,
                    source: &source,
                    suffix,
                    release_type,
                    build_number: facts.build_number,
                })?
                .wheel;
            // What rockbuild cannot predict the build decides; the build records it.
            let Some(version) = planned.known().map(str::to_string) else {
                if let WheelVersion::Decided { why } = planned {
                    decided.insert(name.clone(), why);
                }
                continue;
            };
            let dist = crate::wheel::filename::escape_name(wheel);
            stems.insert(name.clone(), format!("{dist}-{version}"));
            versions.insert(name.clone(), version);
        }
    }
    Ok(Some(BuildRecord {
        sdk_version: sdk_version.unwrap_or_default(),
        index_url: facts
            .sdk
            .as_ref()
            .map(|(_, index)| crate::redact::redact_url(index)),
        sdk_targets: Vec::new(),
        targets: facts.targets.clone(),
        mode: Default::default(),
        release_type: suffix
            .as_ref()
            .map(|_| release_type.as_str().to_string())
            .unwrap_or_default(),
        version_suffix: suffix.unwrap_or_default(),
        versions,
        stems,
        decided,
    }))
}

/// The files a recipe reads, as they are at the locked commit.
fn files_at(paths: &[&str], resolved: &Resolved) -> anyhow::Result<CheckoutFiles> {
    let repo = resolved.mirror.repo()?;
    let commit = Oid::from_str(&resolved.commit)?;
    let mut files = CheckoutFiles::default();
    for path in paths {
        let text = local::read_file_at(&repo, commit, path)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        files.files.insert((*path).to_string(), text);
    }
    Ok(files)
}
