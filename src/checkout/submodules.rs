//! Submodule working trees straight from the mirror cache, all at once.
//!
//! `git submodule update --init --recursive` clones each submodule (a process chain per
//! submodule) and checks them out one level at a time. Every submodule's objects are already
//! in its mirror, so each one here is a repository laid out as git lays it out
//! (`<parent git dir>/modules/<name>` with `core.worktree`, a `.git` file in the working
//! tree, the URL in the parent's config) that borrows the mirror's packs (hard links) and
//! gets one `git checkout`. Siblings run concurrently; a nested submodule starts once its
//! parent is checked out. [`Progress`] tells the steps that need only some of them (hipify)
//! which are out, so they can start while the others are still being written; the others
//! (all but `Request::first`) run at the lowest CPU priority from the start, beside the
//! parent's own checkout and the script, so that on a machine with few cores the files the
//! next step needs are written first and the rest takes the CPU those steps leave idle.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::sync::{Condvar, Mutex};

use indexmap::IndexMap;
use rayon::prelude::*;

use super::resolve::ResolvedSubmodule;
use crate::context::Context;
use crate::exec::priority;
use crate::git::mirror::{Mirror, Transfer};
use crate::git::{self, Git, TransferLimits, local};

/// What to check out.
pub struct Request<'a> {
    /// The project's working tree (its `.git` is the root repository).
    pub root: &'a Path,
    pub submodules: &'a [ResolvedSubmodule],
    /// Commits to check out instead of the recorded ones (cached hipify commits), by path.
    pub commits: &'a IndexMap<String, String>,
    pub jobs: usize,
    pub log: &'a Path,
    pub project: &'a str,
    /// Told of every submodule checked out, and of the end.
    pub progress: &'a Progress,
    /// The top-level submodules a step waits for; the others run beside them at the lowest
    /// CPU priority (none: all at once, at normal priority).
    pub first: Option<&'a [String]>,
    /// Limits of a fetch that heals a damaged mirror.
    pub limits: TransferLimits,
}

/// Which submodules are checked out so far, shared between the thread checking them out and
/// the steps waiting for some of them.
#[derive(Debug, Default)]
pub struct Progress {
    state: Mutex<ProgressState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct ProgressState {
    done: HashSet<String>,
    /// The checkout stopped (finished or failed): nothing more will be done.
    stopped: bool,
    /// A submodule failed: the others not yet started are skipped.
    failed: bool,
    gate: Gate,
}

/// Whether the parent's own checkout is out (the submodules' protection in the parent's
/// index waits for it).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Gate {
    #[default]
    Closed,
    Open,
    /// The other steps failed: the parent is not checked out.
    Abandoned,
}

impl Progress {
    fn update(&self, change: impl FnOnce(&mut ProgressState)) {
        // A poisoned lock means a panicking checkout thread; its join reports that.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut state);
        self.changed.notify_all();
    }

    /// Whether the submodules not yet started should be skipped: one failed, or the other
    /// steps did (the checkout fails either way).
    fn should_stop(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.failed || state.gate == Gate::Abandoned
    }

    /// Tells that the parent's own checkout is out.
    pub fn open_gate(&self) {
        self.update(|state| state.gate = Gate::Open);
    }

    /// The other steps failed: nothing waits for the parent any more, and the submodules not
    /// yet started are skipped.
    pub fn abandon(&self) {
        self.update(|state| {
            if state.gate == Gate::Closed {
                state.gate = Gate::Abandoned;
            }
        });
    }

    /// Waits until the parent's own checkout is out (the gate opened): false when the other
    /// steps failed first.
    pub fn root_is_out(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while state.gate == Gate::Closed {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.gate == Gate::Open
    }

    /// Waits until every one of `paths` is checked out. False when the checkout stopped
    /// before (it failed: its own result says why).
    pub fn wait_for(&self, paths: &[&str]) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if paths.iter().all(|p| state.done.contains(*p)) {
                return true;
            }
            if state.stopped || state.failed {
                return false;
            }
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The directories of the top-level submodules, made before the parent's own `git checkout`
/// runs beside [`check_out`]: git leaves an existing directory at a gitlink alone, but two
/// writers racing to create one would fail.
pub fn make_top_level_dirs(root: &Path, submodules: &[ResolvedSubmodule]) -> anyhow::Result<()> {
    for submodule in submodules.iter().filter(|s| s.parent.is_empty()) {
        fs_err::create_dir_all(root.join(&submodule.path))?;
    }
    Ok(())
}

/// Checks every submodule out at its commit (or the one `commits` names for its path).
pub fn check_out(ctx: &Context, request: &Request<'_>) -> anyhow::Result<()> {
    let result = in_order(ctx, request);
    request.progress.update(|state| state.stopped = true);
    result
}

/// All at once, or `first` beside the others, which run at the lowest CPU priority: the
/// steps waiting for `first` (the parent's own checkout, then hipify's script) keep the CPU
/// they need, and the others take what is left, from the start. Each half has `--jobs`
/// threads: the niced half yields the CPU, not the disk, which it shares.
fn in_order(ctx: &Context, request: &Request<'_>) -> anyhow::Result<()> {
    let root_git_dir = request.root.join(".git");
    let pool = |lowered: bool| {
        let builder = rayon::ThreadPoolBuilder::new().num_threads(request.jobs.max(1));
        match lowered {
            true => builder.start_handler(|_| priority::lower_this_thread()),
            false => builder,
        }
        .build()
    };
    let Some(first) = request.first else {
        return pool(false)?.install(|| level(ctx, request, "", &root_git_dir, &|_| true));
    };
    // Both halves write into the root's config: all of it first (one writer per file).
    let top_level = record_in_parent(request, "", &|_| true)?;
    let (first, others): (Vec<_>, Vec<_>) =
        top_level.into_iter().partition(|s| first.contains(&s.path));
    let (lowered, normal) = (pool(true)?, pool(false)?);
    std::thread::scope(|scope| {
        let others = scope
            .spawn(|| lowered.install(|| check_out_each(ctx, request, &others, &root_git_dir)));
        let first = normal.install(|| check_out_each(ctx, request, &first, &root_git_dir));
        let others = others
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("a submodule checkout panicked")));
        match (first, others) {
            (Err(error), Err(also)) => {
                ctx.ui
                    .warn(format!("another submodule failed too: {also:#}"));
                Err(error)
            }
            (first, others) => first.and(others),
        }
    })
}

/// The submodules of the repository at `parent` (its git directory `parent_git_dir`) that are
/// `wanted`, each followed by all of its own.
fn level(
    ctx: &Context,
    request: &Request<'_>,
    parent: &str,
    parent_git_dir: &Path,
    wanted: &(dyn Fn(&ResolvedSubmodule) -> bool + Sync),
) -> anyhow::Result<()> {
    let children = record_in_parent(request, parent, wanted)?;
    check_out_each(ctx, request, &children, parent_git_dir)
}

/// The submodules of `parent` that are `wanted`, with what `git submodule init` records of
/// them written into the parent's config (before any of them starts: one writer per file).
fn record_in_parent<'r>(
    request: &'r Request<'_>,
    parent: &str,
    wanted: &(dyn Fn(&ResolvedSubmodule) -> bool + Sync),
) -> anyhow::Result<Vec<&'r ResolvedSubmodule>> {
    let children: Vec<&ResolvedSubmodule> = request
        .submodules
        .iter()
        .filter(|s| s.parent == parent && wanted(s))
        .collect();
    if children.is_empty() {
        return Ok(children);
    }
    let parent_dir = if parent.is_empty() {
        request.root.to_path_buf()
    } else {
        request.root.join(parent)
    };
    let parent_repo = local::open(&parent_dir)?;
    for submodule in &children {
        let section = format!("submodule.{}", submodule.name);
        local::set_config(&parent_repo, &format!("{section}.url"), &submodule.origin)?;
        local::set_config(&parent_repo, &format!("{section}.active"), "true")?;
    }
    Ok(children)
}

/// Checks `children` out at once, each followed by its own submodules and its checkout pack.
fn check_out_each(
    ctx: &Context,
    request: &Request<'_>,
    children: &[&ResolvedSubmodule],
    parent_git_dir: &Path,
) -> anyhow::Result<()> {
    children.par_iter().try_for_each(|submodule| {
        if request.progress.should_stop() {
            return Ok(());
        }
        let git_dir = one(ctx, request, submodule, parent_git_dir)
            .inspect_err(|_| request.progress.update(|state| state.failed = true))?;
        level(ctx, request, &submodule.path, &git_dir, &|_| true)?;
        // Once its own submodules are out: nothing this run needs waits for it.
        keep_checkout_pack(
            ctx,
            request.project,
            &submodule.mirror,
            (&submodule.path, &request.root.join(&submodule.path)),
            commit_of(request, submodule),
            None,
        );
        Ok(())
    })
}

/// One submodule: its repository (made or reused), objects, checkout. Returns its git dir.
fn one(
    ctx: &Context,
    request: &Request<'_>,
    submodule: &ResolvedSubmodule,
    parent_git_dir: &Path,
) -> anyhow::Result<PathBuf> {
    let work_tree = request.root.join(&submodule.path);
    let git_dir = repository(&work_tree, parent_git_dir, &submodule.name)?;
    let repo = local::open(&work_tree)?;
    local::set_config(&repo, "remote.origin.url", &submodule.origin)?;
    local::set_config(
        &repo,
        "remote.origin.fetch",
        "+refs/heads/*:refs/remotes/origin/*",
    )?;

    let label = submodule.path.as_str();
    let git = Git::new(&work_tree, label)
        .log_to(request.log)
        .allow_file_protocol(true);
    let commit = commit_of(request, submodule);
    objects(ctx, &git, &submodule.mirror, &git_dir, commit)?;
    check_out_healing(
        ctx,
        request.project,
        (&git, &git_dir),
        &submodule.mirror,
        (commit, &submodule.commit),
        request.limits,
    )
    .map_err(|error| {
        error.context(format!(
            "checking out the submodule {} of '{}' at {commit} failed",
            submodule.path, request.project
        ))
    })?;
    request.progress.update(|state| {
        state.done.insert(submodule.path.clone());
    });
    Ok(git_dir)
}

/// The commit a submodule is checked out at: its cached hipify commit, else its pin.
fn commit_of<'r>(request: &'r Request<'_>, submodule: &'r ResolvedSubmodule) -> &'r str {
    request
        .commits
        .get(&submodule.path)
        .unwrap_or(&submodule.commit)
}

/// Writes the checkout pack of `commit` into `mirror` (with only what `base` lacks, when it
/// has one) for the next new tree of it, unless there is one, from the working tree `dir`
/// (shown as `label`) where its files are those blobs; a failure only costs that speed, so it
/// is a warning.
pub fn keep_checkout_pack(
    ctx: &Context,
    project: &str,
    mirror: &Mirror,
    (label, dir): (&str, &Path),
    commit: &str,
    base: Option<&str>,
) {
    let (Ok(commit), base) = (
        git2::Oid::from_str(commit),
        base.and_then(|b| git2::Oid::from_str(b).ok()),
    ) else {
        return;
    };
    if mirror.has_checkout_pack(commit) {
        return;
    }
    if let Err(error) = mirror.write_checkout_pack(commit, base, dir) {
        ctx.ui.warn(format!(
            "{project}: no checkout pack of {label} at {commit} in the cache ({error}); the next \
             checkout of it inflates its files from the mirror"
        ));
    }
}

/// The submodule's repository: the one its working tree already has, else a new one at
/// `<parent git dir>/modules/<name>`, laid out as `git submodule` lays it out.
fn repository(work_tree: &Path, parent_git_dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let dot_git = work_tree.join(".git");
    if dot_git.is_dir() {
        return Ok(dot_git);
    }
    if let Ok(text) = fs_err::read_to_string(&dot_git)
        && let Some(target) = text.trim().strip_prefix("gitdir:")
    {
        let git_dir = work_tree.join(target.trim());
        if git_dir.join("HEAD").is_file() {
            return Ok(git_dir);
        }
    }
    let git_dir = parent_git_dir.join("modules").join(name);
    if !git_dir.join("HEAD").is_file() {
        let repo = git2::Repository::init_bare(&git_dir)
            .map_err(|e| git::Error::local(&git_dir, "creating a submodule repository", e))?;
        local::set_config(&repo, "core.bare", "false")?;
    }
    fs_err::create_dir_all(work_tree)?;
    let repo = git2::Repository::open_bare(&git_dir)
        .map_err(|e| git::Error::local(&git_dir, "opening a submodule repository", e))?;
    local::set_config(
        &repo,
        "core.worktree",
        &relative(&git_dir, work_tree).display().to_string(),
    )?;
    fs_err::write(
        &dot_git,
        format!("gitdir: {}\n", relative(work_tree, &git_dir).display()),
    )?;
    Ok(git_dir)
}

/// Every object of the mirror into `git_dir`: hard-linked packs (with the checkout pack of
/// `commit`, the one about to be checked out), or a local fetch when the cache is on another
/// file system. The mirror's shared lock is held meanwhile.
pub fn objects(
    ctx: &Context,
    git: &Git,
    mirror: &Mirror,
    git_dir: &Path,
    commit: &str,
) -> anyhow::Result<()> {
    let _guard = mirror.shared()?;
    if mirror.link_into(git_dir, commit)? == Transfer::NeedsCopy {
        fetch_from(ctx, git, mirror, "+refs/rockbuild/*:refs/rockbuild/*")?;
    }
    Ok(())
}

/// `git checkout` of `commit` in the repository of `git` (its objects linked from `mirror`
/// into `git_dir`). The mirror's check at open reads pack trailers, not every object: when
/// git finds an object of the cache damaged, the mirror is healed (`Mirror::heal`: damaged
/// packs removed, `upstream` fetched again from the origin, as a new clone would), the links
/// to the removed packs leave this repository, the new ones come in, and the checkout runs
/// once more, with a warning.
pub fn check_out_healing(
    ctx: &Context,
    project: &str,
    at: (&Git, &Path),
    mirror: &Mirror,
    (commit, upstream): (&str, &str),
    limits: TransferLimits,
) -> anyhow::Result<()> {
    let (git, git_dir) = at;
    let error = match ctx.runner.run(&git.checkout_detached(commit)) {
        Ok(_) => return Ok(()),
        Err(error) if damaged_object(&error) => error,
        Err(error) => return Err(error.into()),
    };
    let seen = error
        .tail()
        .iter()
        .rev()
        .find(|line| !line.trim().is_empty())
        .cloned()
        .unwrap_or_default();
    ctx.ui.warn(format!(
        "{project}: git found an object damaged in the cache {} ({seen}); verifying its packs \
         and fetching {upstream} again from {}, as a new clone would",
        mirror.dir.display(),
        crate::redact::redact_url(mirror.origin.as_str())
    ));
    let upstream = git::RefName::parse(upstream)?;
    let removed = mirror.heal(&ctx.runner, &upstream, limits, project)?;
    let pack_dir = git_dir.join("objects/pack");
    for name in &removed {
        for extension in ["pack", "idx", "rev"] {
            let file = pack_dir.join(format!("{name}.{extension}"));
            if file.exists() {
                fs_err::remove_file(&file)?;
            }
        }
    }
    objects(ctx, git, mirror, git_dir, commit)?;
    ctx.runner.run(&git.checkout_detached(commit))?;
    Ok(())
}

/// Whether git's output says an object it read is damaged (rather than the checkout being
/// wrong in itself).
fn damaged_object(error: &crate::exec::ProcessError) -> bool {
    const SIGNS: &[&str] = &[
        "is corrupt",
        "inflate:",
        "bad object",
        "failed to read object",
        "unable to read",
        "missing blob",
        "missing tree",
        "unknown object type",
        "invalid object",
    ];
    error
        .tail()
        .iter()
        .any(|line| SIGNS.iter().any(|sign| line.contains(sign)))
}

/// A local fetch of `refspec` from the mirror into the repository of `git` (hold the mirror's
/// shared lock meanwhile).
pub fn fetch_from(ctx: &Context, git: &Git, mirror: &Mirror, refspec: &str) -> anyhow::Result<()> {
    ctx.runner.run(&git.cmd([
        "fetch".to_string(),
        "-q".into(),
        "--no-tags".into(),
        "--no-write-fetch-head".into(),
        "--".into(),
        mirror.dir.display().to_string(),
        refspec.to_string(),
    ]))?;
    Ok(())
}

/// `to` relative to the directory `from` (both absolute, no `..` in them), as git writes
/// `core.worktree` and `gitdir:` for submodules.
fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in common..from.len() {
        path.push("..");
    }
    for part in &to[common..] {
        path.push(part);
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_as_git_writes_them() {
        let root = Path::new("/w/pytorch");
        assert_eq!(
            relative(
                &root.join(".git/modules/third_party/kineto"),
                &root.join("third_party/kineto")
            ),
            Path::new("../../../../third_party/kineto")
        );
        assert_eq!(
            relative(
                &root.join("third_party/kineto/third_party/fmt"),
                &root.join(".git/modules/third_party/kineto/modules/third_party/fmt")
            ),
            Path::new("../../../../.git/modules/third_party/kineto/modules/third_party/fmt")
        );
    }
}
