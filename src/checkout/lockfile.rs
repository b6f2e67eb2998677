//! What `lock` records, before any tree or build exists: every resolved project (with the
//! hipify result the cache already knows for its tree), and — when their inputs are given —
//! the SDK version, the gfx targets and every wheel's version and file-name stem, computed
//! from the version files of the locked commits (read from the mirrors).

use std::path::Path;

use git2::Oid;
use indexmap::IndexMap;

use super::Selection;
use super::resolve::Resolved;
use crate::git::local;
use crate::hipify::cache;
use crate::lock::versions::{self, Naming, VersionSource};
use crate::lock::{BuildRecord, HipifyStamp, LockedProject};
use crate::stack::{HipifyPolicy, Project, RecipeKind, Target};
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

/// The build record, when there is anything to record; `None` otherwise.
pub fn build_record(
    selection: &Selection,
    resolved: &[Resolved],
    facts: &BuildFacts,
) -> anyhow::Result<Option<BuildRecord>> {
    let sdk_version = facts.sdk.as_ref().map(|(v, _)| v.clone());
    let naming = match (&sdk_version, &facts.version_suffix) {
        (None, None) => None,
        (sdk, suffix) => Some(
            Naming::new(
                sdk.as_deref().unwrap_or_default(),
                suffix.as_deref(),
                facts.release_type.unwrap_or(ReleaseType::Nightly),
                facts.build_number,
            )
            .map_err(crate::lock::Error::from)?,
        ),
    };
    if sdk_version.is_none() && naming.is_none() && facts.targets.is_empty() {
        return Ok(None);
    }
    let names = match &naming {
        Some(naming) => {
            let mut sources = Vec::new();
            for (name, resolved) in selection.projects.iter().zip(resolved) {
                let project = &selection.stack.projects[name];
                sources.push(version_source(project, resolved)?);
            }
            versions::wheel_names(&sources, naming).map_err(crate::lock::Error::from)?
        }
        None => IndexMap::new(),
    };
    Ok(Some(BuildRecord {
        sdk_version: sdk_version.unwrap_or_default(),
        index_url: facts
            .sdk
            .as_ref()
            .map(|(_, index)| crate::redact::redact_url(index)),
        sdk_targets: Vec::new(),
        targets: facts.targets.clone(),
        release_type: naming
            .as_ref()
            .map(|n| n.release_type.as_str().to_string())
            .unwrap_or_default(),
        version_suffix: naming
            .as_ref()
            .map(|n| n.suffix.clone())
            .unwrap_or_default(),
        versions: names
            .iter()
            .map(|(p, n)| (p.clone(), n.version.clone()))
            .collect(),
        stems: names.into_iter().map(|(p, n)| (p, n.stem)).collect(),
    }))
}

/// A project's base version at its locked commit: version.txt, or triton's setup.py (at the
/// repository root or, before it moved, in python/).
fn version_source(project: &Project, resolved: &Resolved) -> anyhow::Result<VersionSource> {
    let repo = resolved.mirror.repo()?;
    let commit = Oid::from_str(&resolved.commit)?;
    let read = |path: &str| -> anyhow::Result<Option<String>> {
        Ok(local::read_file_at(&repo, commit, path)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
    };
    let problem = |problem: String| crate::lock::Error::BaseVersion {
        project: project.name.clone(),
        problem,
        commit: super::plan::short(&resolved.commit).to_string(),
    };
    let base = if project.recipe == RecipeKind::Triton {
        let setup = match read("python/setup.py")? {
            Some(text) => Some(("python/setup.py", text)),
            None => read("setup.py")?.map(|text| ("setup.py", text)),
        };
        let (path, text) = setup.ok_or_else(|| problem("no setup.py".into()))?;
        crate::version::triton_base_version(&text)
            .ok_or_else(|| problem(format!("no `TRITON_VERSION = \"X.Y.Z\"` line in {path}")))?
    } else {
        let text = read("version.txt")?.unwrap_or_default();
        let first = text.lines().next().unwrap_or_default().trim().to_string();
        if first.is_empty() {
            return Err(problem(
                "version.txt is missing or empty (it must hold the base version, e.g. 2.10.0a0)"
                    .into(),
            )
            .into());
        }
        first
    };
    Ok(VersionSource {
        project: project.name.clone(),
        dist: project.wheel.clone(),
        recipe: project.recipe,
        commit: resolved.commit.clone(),
        base,
    })
}
