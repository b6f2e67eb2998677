//! Resolving one project: its origin and ref (pins read from the pinning project's commit in
//! the cache), the commit, and every submodule commit, recursively — all fetched into the
//! mirror cache, none into a working tree. `lock` stops here; `checkout` goes on to inspect
//! the tree and plan.

use std::time::{Duration, Instant};

use git2::Oid;
use rayon::prelude::*;

use super::error::Error;
use super::pins::{PinBoard, PinFiles};
use super::{Selection, resolve_submodule_url};
use crate::context::Context;
use crate::git::mirror::Mirror;
use crate::git::{self, local};
use crate::lock::PinOrigin;
use crate::lock::resolve::{self, RefRequest, Request, ResolvedPin};
use crate::stack::Project;
use crate::ui::Task;

/// A project resolved to commits, with the mirrors that hold them.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub pin: ResolvedPin,
    pub preset: Option<String>,
    pub origin_flag: Option<String>,
    pub commit: String,
    pub tree: String,
    pub mirror: Mirror,
    /// Every submodule, recursively, parents first (empty when submodules are off).
    pub submodules: Vec<ResolvedSubmodule>,
    /// Whether anything came over the network (false: all from the cache).
    pub transferred: bool,
    pub elapsed: Duration,
}

#[derive(Clone, Debug)]
pub struct ResolvedSubmodule {
    /// Path relative to the project root (nested ones joined).
    pub path: String,
    /// Its name in the parent's `.gitmodules` (git keeps its repository under that name).
    pub name: String,
    /// The repository it belongs to: empty for the root, else another submodule's `path`.
    pub parent: String,
    pub commit: String,
    /// The URL as `.gitmodules` gives it.
    pub url: String,
    /// That URL resolved against its superproject's origin.
    pub origin: String,
    pub mirror: Mirror,
}

/// Resolves `project`: posts its commit to `posts_to` as soon as it is fetched, so projects it
/// pins can start.
pub fn project(
    ctx: &Context,
    selection: &Selection,
    project: &Project,
    pins_from: Option<&PinBoard>,
    posts_to: Option<&PinBoard>,
    task: &Task,
) -> anyhow::Result<Resolved> {
    let started = Instant::now();
    let name = project.name.as_str();
    let (request, pin, fetch_ref) = pin_of(project, selection, pins_from, task)?;
    let origin = valid(name, &pin, git::Origin::parse(&pin.origin))?;
    let fetch_ref = valid(name, &pin, git::RefName::parse(&fetch_ref))?;
    // Whether anything is fetched is known after: a pinned commit the cache holds is not.
    task.phase(format!("resolving {}", pin.requested_ref));
    let warn = |message: String| ctx.ui.warn(message);
    let mirror = Mirror::open(&selection.cache_dir, &origin, &warn)?;
    let mut progress =
        |line: &str| task.progress(format!("fetching {}: {line}", pin.requested_ref));
    let fetched = mirror.fetch(
        &ctx.runner,
        &fetch_ref,
        selection.depth,
        selection.limits,
        name,
        &mut progress,
    )?;
    if let Some(board) = posts_to {
        board.post(Ok(PinFiles::Commit {
            repo_dir: mirror.dir.clone(),
            commit: fetched.commit.to_string(),
            display_prefix: format!("{}/", project.checkout_dir),
        }));
    }
    let tree = local::tree_of(&mirror.repo()?, fetched.commit)?;
    let mut transferred = fetched.transferred;
    let submodules = if selection.submodules && project.submodules {
        task.phase("resolving submodules");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(selection.jobs.max(1))
            .build()?;
        let walk = Walk {
            ctx,
            selection,
            project: name,
            root_origin: &pin.origin,
        };
        let found = pool.install(|| walk.below(&mirror, &pin.origin, fetched.commit, ""))?;
        transferred |= found.iter().any(|(_, t)| *t);
        found.into_iter().map(|(s, _)| s).collect()
    } else {
        Vec::new()
    };
    Ok(Resolved {
        preset: request.preset,
        origin_flag: request.origin_flag,
        pin,
        commit: fetched.commit.to_string(),
        tree: tree.to_string(),
        mirror,
        submodules,
        transferred,
        elapsed: started.elapsed(),
    })
}

/// Origin and ref — from the lock being reproduced, or from the request settings made and the
/// pins — and what to fetch (the locked commit, or the ref).
fn pin_of(
    project: &Project,
    selection: &Selection,
    pins_from: Option<&PinBoard>,
    task: &Task,
) -> anyhow::Result<(Request, ResolvedPin, String)> {
    let name = project.name.clone();
    if let Some((file, pins)) = &selection.from_lock {
        let pin = pins.get(&name).ok_or_else(|| Error::NotInLock {
            file: file.clone(),
            project: name.clone(),
        })?;
        let request = Request {
            origin: pin.origin.clone(),
            origin_flag: None,
            rule: RefRequest::Exact {
                reference: pin.requested_ref.clone(),
                pin: PinOrigin::Lock {
                    file: file.display().to_string(),
                },
            },
            preset: pin.preset.clone(),
        };
        let resolved = ResolvedPin {
            origin: pin.origin.clone(),
            requested_ref: pin.requested_ref.clone(),
            pin: PinOrigin::Lock {
                file: file.display().to_string(),
            },
        };
        return Ok((request, resolved, pin.commit.clone()));
    }
    let request = selection
        .requests
        .get(&name)
        .cloned()
        .ok_or_else(|| Error::NoPins {
            project: name.clone(),
            reason: "no origin or ref rule was resolved for it".into(),
        })?;
    let needs_pins = matches!(request.rule, RefRequest::Pinned { .. });
    let files = match (needs_pins, pins_from) {
        (true, Some(board)) => {
            if let Some(from) = project.pin.pinned_by() {
                task.phase(format!("waiting for the pins of {from}"));
            }
            Some(board.wait().map_err(|reason| Error::NoPins {
                project: name.clone(),
                reason,
            })?)
        }
        _ => None,
    };
    let from = project.pin.pinned_by().unwrap_or_default().to_string();
    let read = |path: &str| match &files {
        Some(files) => files.read(path).map_err(|e| crate::lock::Error::PinFile {
            from: from.clone(),
            file: path.to_string(),
            reason: format!("{e:#}"),
        }),
        None => Ok((path.to_string(), None)),
    };
    let resolved = resolve::resolve_pin(project, &request, selection.release, &read)?;
    // Credentials, options and remote helpers in the origin are refused by `valid` below.
    if git::is_abbreviated_sha(&resolved.requested_ref) {
        return Err(Error::AbbreviatedSha {
            project: name,
            reference: resolved.requested_ref,
        }
        .into());
    }
    let fetch_ref = resolved.requested_ref.clone();
    Ok((request, resolved, fetch_ref))
}

/// A value of a pin checked at the choke point every source passes (flags, presets, the
/// stack config, pin files, locks); the place its ref came from is named.
fn valid<T>(project: &str, pin: &ResolvedPin, parsed: Result<T, git::Invalid>) -> Result<T, Error> {
    parsed.map_err(|invalid| Error::Invalid {
        project: project.to_string(),
        place: pin.pin.describe(),
        invalid,
    })
}

/// The recursive submodule walk of one project.
struct Walk<'a> {
    ctx: &'a Context,
    selection: &'a Selection,
    project: &'a str,
    root_origin: &'a str,
}

impl Walk<'_> {
    /// Every submodule below `commit` of `mirror` (whose origin is `origin`), each fetched
    /// into its own mirror; with whether that took a transfer.
    fn below(
        &self,
        mirror: &Mirror,
        origin: &str,
        commit: Oid,
        prefix: &str,
    ) -> anyhow::Result<Vec<(ResolvedSubmodule, bool)>> {
        let links = local::gitlinks_at(&mirror.repo()?, commit)?;
        let nested: Vec<anyhow::Result<Vec<(ResolvedSubmodule, bool)>>> = links
            .par_iter()
            .map(|link| {
                let path = format!("{prefix}{}", link.path);
                if link.url.is_empty() {
                    return Err(git::Error::SubmoduleWithoutUrl {
                        project: self.project.to_string(),
                        path,
                        commit: commit.to_string(),
                    }
                    .into());
                }
                let url = resolve_submodule_url(origin, &link.url);
                if git::is_local_origin(&url) && !git::is_local_origin(self.root_origin) {
                    return Err(git::Error::LocalSubmodule {
                        project: self.project.to_string(),
                        path,
                        url,
                        origin: crate::redact::redact_url(self.root_origin),
                    }
                    .into());
                }
                let invalid = |invalid| Error::Invalid {
                    project: self.project.to_string(),
                    place: format!(".gitmodules at {commit}, submodule {path}"),
                    invalid,
                };
                git::check_submodule_path("submodule name", &link.name).map_err(invalid)?;
                git::check_submodule_path("submodule path", &path).map_err(invalid)?;
                let child_origin = git::Origin::parse(&url).map_err(invalid)?;
                let child_commit = git::RefName::parse(&link.commit).map_err(invalid)?;
                let warn = |message: String| self.ctx.ui.warn(message);
                let child = Mirror::open(&self.selection.cache_dir, &child_origin, &warn)?;
                let fetched = child.fetch(
                    &self.ctx.runner,
                    &child_commit,
                    self.selection.depth,
                    self.selection.limits,
                    self.project,
                    &mut |_| {},
                )?;
                let nested = self.below(&child, &url, fetched.commit, &format!("{path}/"))?;
                let mut found = vec![(
                    ResolvedSubmodule {
                        path,
                        name: link.name.clone(),
                        parent: prefix.trim_end_matches('/').to_string(),
                        commit: link.commit.clone(),
                        url: link.url.clone(),
                        origin: url,
                        mirror: child,
                    },
                    fetched.transferred,
                )];
                found.extend(nested);
                Ok(found)
            })
            .collect();
        let mut all = Vec::new();
        for result in nested {
            all.extend(result?);
        }
        Ok(all)
    }
}
