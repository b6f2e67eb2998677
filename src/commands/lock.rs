//! `rockbuild lock`: resolve pins to commits without working trees. Also home of the
//! selection resolution `checkout` shares.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;

use crate::checkout::{self, Selection};
use crate::cli::{LockArgs, SelectionArgs, flag};
use crate::context::Context;
use crate::env_vars;
use crate::exit::ExitStatus;
use crate::git::TransferLimits;
use crate::lock::resolve::Overrides;

pub fn run(args: LockArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let LockArgs {
        selection,
        root_checkout_dir,
        lock,
    } = args;
    let cache = cache_dir(selection.cache_dir.as_deref(), ctx)?;
    let root = root_checkout_dir.map_or_else(|| ctx.cwd.clone(), |r| ctx.absolute(&r));
    let selection = resolve_selection(selection, &root, Some(&lock), ctx)?;
    checkout::lockonly::run(&selection, &cache, ctx)
}

/// Turns the shared selection flags into a [`Selection`]: the stack, the projects in stack
/// order, per-project overrides, the lock being reproduced, transfer limits.
pub fn resolve_selection(
    args: SelectionArgs,
    root: &Path,
    lock: Option<&Path>,
    ctx: &Context,
) -> anyhow::Result<Selection> {
    let SelectionArgs {
        config,
        projects,
        repo_hashtag,
        gitrepo_origin,
        origins,
        hashtags,
        release,
        require_related_commit,
        from_lock,
        submodules,
        no_submodules,
        depth: _,
        jobs,
        cache_dir: _,
        network,
    } = args;
    let stack = config.stack(ctx)?;
    for name in &projects {
        stack.project(name)?;
    }
    let from_lock = match from_lock {
        Some(path) => {
            if repo_hashtag.is_some()
                || gitrepo_origin.is_some()
                || !origins.is_empty()
                || !hashtags.is_empty()
                || release
            {
                return Err(crate::exit::usage(
                    "--from-lock reproduces the locked commits exactly; it cannot be combined with --repo-hashtag, --gitrepo-origin, --origin, --hashtag or --release",
                ));
            }
            let path = ctx.absolute(&path);
            let pins = checkout::read_from_lock(&path, &stack)?;
            Some((path, pins))
        }
        None => None,
    };
    // Default selection: the whole stack, or what the lock being reproduced holds.
    let selected: Vec<String> = stack
        .projects
        .keys()
        .filter(|name| {
            if projects.is_empty() {
                from_lock
                    .as_ref()
                    .is_none_or(|(_, pins)| pins.contains_key(*name))
            } else {
                projects.contains(name)
            }
        })
        .cloned()
        .collect();

    // --repo-hashtag / --gitrepo-origin apply to torch, or to the single --project.
    let primary = match projects.as_slice() {
        [only] => only.clone(),
        _ => stack
            .projects
            .values()
            .find(|p| p.pin.pinned_by().is_none())
            .map(|p| p.name.clone())
            .unwrap_or_default(),
    };
    let mut overrides: IndexMap<String, Overrides> = IndexMap::new();
    if let Some(reference) = repo_hashtag {
        overrides.entry(primary.clone()).or_default().reference =
            Some((reference, "--repo-hashtag".into()));
    }
    if let Some(url) = gitrepo_origin {
        overrides.entry(primary.clone()).or_default().origin =
            Some((url, "--gitrepo-origin".into()));
    }
    for (flag_name, values, is_origin) in [
        ("--origin", &origins, true),
        ("--hashtag", &hashtags, false),
    ] {
        for value in values {
            let (name, rest) = value.split_once('=').ok_or_else(|| {
                crate::exit::usage(format!(
                    "{flag_name} {value}: expected NAME={}",
                    if is_origin { "URL" } else { "REF" }
                ))
            })?;
            stack.project(name)?;
            let entry = overrides.entry(name.to_string()).or_default();
            let slot = if is_origin {
                &mut entry.origin
            } else {
                &mut entry.reference
            };
            if let Some((previous, previous_flag)) = slot
                && previous != rest
            {
                return Err(crate::exit::usage(format!(
                    "{flag_name} {value} contradicts {previous_flag} {previous} for '{name}'"
                )));
            }
            *slot = Some((rest.to_string(), format!("{flag_name} {value}")));
        }
    }
    let lock_path = lock.map_or_else(|| checkout::default_lock_path(root), |l| ctx.absolute(l));
    Ok(Selection {
        stack,
        projects: selected,
        root: root.to_path_buf(),
        overrides,
        release,
        require_related_commit,
        from_lock,
        submodules: flag(submodules, no_submodules).unwrap_or(true),
        jobs,
        limits: TransferLimits {
            timeout: Duration::from_secs(network.fetch_timeout.max(1)),
            stall: Duration::from_secs(network.stall_timeout.max(1)),
            attempts: network.fetch_attempts.max(1),
        },
        lock_path,
    })
}

/// `--cache-dir`, else `$XDG_CACHE_HOME/rockbuild`, else `~/.cache/rockbuild`.
fn cache_dir(flag: Option<&Path>, ctx: &Context) -> anyhow::Result<PathBuf> {
    if let Some(dir) = flag {
        return Ok(ctx.absolute(dir));
    }
    let env = ctx.env();
    if let Some(xdg) = env.non_empty(env_vars::XDG_CACHE_HOME) {
        return Ok(PathBuf::from(xdg).join("rockbuild"));
    }
    match env.non_empty(env_vars::HOME) {
        Some(home) => Ok(PathBuf::from(home).join(".cache/rockbuild")),
        None => Err(crate::exit::usage(
            "no cache directory: pass --cache-dir (or set HOME)",
        )),
    }
}
