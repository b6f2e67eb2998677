//! One project's checkout: resolve its pin, fetch, move to the commit, tag, submodules,
//! hipify, stamp — or notice that the tree already is exactly that and change nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use git2::{Oid, Repository};
use indexmap::IndexMap;

use super::pins::{PinBoard, PinFiles};
use super::repos::{self, Node};
use super::{Selection, Settings};
use crate::context::Context;
use crate::git::{self, Git, local};
use crate::hipify::{self, leftover};
use crate::lock::resolve::{self, ResolvedPin};
use crate::lock::{HipifyStamp, LockedProject, LockedSubmodule, PinOrigin};
use crate::stack::{HipifyPolicy, Project};
use crate::ui::Task;

/// The file triton's "hipify" writes (F7). Listed in `.git/info/exclude` so it never counts
/// as a change to the tree.
const TRITON_BUILD_ENV: &str = "build_env.json";

/// One row of the summary table.
#[derive(Clone, Debug)]
pub struct SummaryRow {
    pub project: String,
    pub reference: String,
    pub commit: String,
    pub submodules: usize,
    pub hipify: String,
    pub state: &'static str,
    pub elapsed: Duration,
}

pub struct Outcome {
    pub locked: LockedProject,
    pub row: SummaryRow,
}

/// Everything one project's thread needs.
pub struct Job<'a> {
    pub project: &'a Project,
    pub dir: PathBuf,
    pub settings: &'a Settings,
    /// Board of the project that pins this one.
    pub pins_from: Option<&'a PinBoard>,
    /// Board this project posts its pin files to, when others depend on it.
    pub posts_to: Option<&'a PinBoard>,
}

pub fn run(job: &Job<'_>, ctx: &Context, task: &Task) -> anyhow::Result<Outcome> {
    let Job {
        project,
        dir,
        settings,
        ..
    } = job;
    let name = project.name.as_str();
    let (resolved, fetch_ref) = resolve(project, &settings.selection, job.pins_from, task)?;
    // The repository: created, or pointed at the (possibly new) origin.
    fs_err::create_dir_all(dir)?;
    let fresh = !dir.join(".git").exists();
    let repo = if fresh {
        let mut options = git2::RepositoryInitOptions::new();
        options.initial_head("main").no_reinit(true);
        Repository::init_opts(dir, &options)
            .with_context(|| format!("creating a git repository in {}", dir.display()))?
    } else {
        local::open(dir)?
    };
    local::set_config(&repo, "advice.detachedHead", "false")?;
    match repo.find_remote("origin") {
        Ok(_) => repo.remote_set_url("origin", &resolved.origin)?,
        Err(_) => {
            repo.remote("origin", &resolved.origin)?;
        }
    }
    if project.hipify == HipifyPolicy::TritonBuildEnv {
        exclude_locally(dir, TRITON_BUILD_ENV)?;
    }
    let state_dir = dir.join(".git/rockbuild");
    fs_err::create_dir_all(&state_dir)?;
    let log = state_dir.join("checkout.log");
    let _ = fs_err::remove_file(&log);
    let marker = state_dir.join("incomplete");
    let interrupted = marker.exists();
    let git = Git::new(dir, name)
        .log_to(&log)
        .allow_file_protocol(git::is_local_origin(&resolved.origin));

    // Refuse to touch changes the user made, before any network traffic.
    let dirty = dirty_nodes(ctx, dir, &git)?;
    let user_changes: Vec<String> = dirty
        .iter()
        .filter(|d| !d.explained_by_stamp)
        .flat_map(|d| {
            d.changes
                .iter()
                .map(move |c| format!("{}{c}", prefix(&d.node.rel)))
        })
        .collect();
    if !user_changes.is_empty() && !settings.force && !interrupted {
        return Err(crate::exit::usage(format!(
            "{} ('{name}') has uncommitted changes that hipify did not make:\n    {}\n  commit or stash them, or pass --force to discard them",
            dir.display(),
            user_changes.join("\n    ")
        )));
    }
    if interrupted {
        ctx.ui.warn(format!(
            "{name}: the previous checkout of {} was interrupted; discarding its partial state",
            dir.display()
        ));
    }

    // The commit: fetched unless a pinned SHA is already here.
    let (commit, fetched) = match Oid::from_str(&fetch_ref)
        .ok()
        .filter(|oid| git::is_full_sha(&fetch_ref) && repo.find_commit(*oid).is_ok())
    {
        Some(oid) => (oid, false),
        None => (
            fetch(ctx, name, &git, settings, &resolved, &fetch_ref, task)?,
            true,
        ),
    };
    let upstream_tree = local::tree_of(&repo, commit)?;
    if let Some(board) = job.posts_to {
        board.post(Ok(PinFiles::Commit {
            repo_dir: dir.clone(),
            commit: commit.to_string(),
            display_prefix: format!("{}/", project.checkout_dir),
        }));
    }

    let (script, check_paths, allow) = match &project.hipify {
        HipifyPolicy::Script {
            script,
            check_paths,
            allow,
        } if settings.hipify => (
            Some(script.as_str()),
            check_paths.as_slice(),
            allow.as_slice(),
        ),
        _ => (None, &[][..], &[][..]),
    };
    let script_blob = match script {
        Some(script) => local::read_file_at(&repo, commit, script)?,
        None => None,
    };
    let expect = Expectation {
        commit,
        upstream_tree,
        hipify: script_blob
            .as_ref()
            .map(|blob| crate::fsutil::sha256_hex(blob)),
        commit_hipify: settings.commit_hipify,
        submodules: settings.selection.submodules && project.submodules,
    };

    if !fresh && !interrupted && dirty.iter().all(|d| d.explained_by_stamp) {
        let nodes = repos::discover(dir, expect.submodules)?;
        if let Some(stamp) = up_to_date(ctx, &repo, &nodes, &expect)? {
            ensure_tags(&nodes, &expect)?;
            if project.hipify == HipifyPolicy::TritonBuildEnv && settings.hipify {
                write_triton_build_env(dir, &resolved.pin)?;
            }
            let hipify = match (&stamp, script, &project.hipify) {
                (Some(_), _, _) => "up to date".to_string(),
                (None, Some(_), _) => "no script".to_string(),
                (None, None, HipifyPolicy::TritonBuildEnv) if settings.hipify => {
                    TRITON_BUILD_ENV.to_string()
                }
                _ => "off".to_string(),
            };
            return Ok(outcome(
                job,
                &resolved,
                commit,
                upstream_tree,
                &nodes,
                stamp,
                hipify,
                "up to date",
                task,
            ));
        }
    }

    // Move to the commit. From here until the stamp is written the tree is in flux: the
    // marker makes the next run repair it instead of trusting it.
    fs_err::write(&marker, b"checkout in progress\n")?;
    hipify::remove_stamp(dir)?;
    for dirty in dirty.iter().rev() {
        let node_git = Git::new(&dirty.node.dir, name).log_to(&log);
        ctx.runner.run(&node_git.cmd(["reset", "-q", "--hard"]))?;
        ctx.runner.run(&node_git.cmd(["clean", "-ffdq"]))?;
    }
    task.phase(format!("checking out {}", short(&commit.to_string())));
    ctx.runner
        .run(&git.cmd(["checkout", "-q", "--force", "--detach", &commit.to_string()]))?;
    local::force_tag(&repo, git::UPSTREAM_TAG, commit)?;

    let mut nodes = repos::discover(dir, false)?;
    if expect.submodules && !nodes[0].gitlinks.is_empty() {
        task.phase("fetching submodules");
        update_submodules(ctx, &git, settings, name, task)?;
        nodes = repos::discover(dir, true)?;
        protect_submodules(ctx, &nodes, &log)?;
    }

    let (stamp, hipify_summary) = match (script, &script_blob) {
        (Some(script), Some(blob)) => {
            task.phase("hipify");
            let stamp = run_hipify(
                ctx,
                job,
                &git,
                &nodes,
                &expect,
                script,
                blob,
                check_paths,
                allow,
                &log,
            )?;
            let summary = format!("{} files changed", stamp.changed_files);
            (Some(stamp), summary)
        }
        (Some(_), None) => (None, "no script".to_string()),
        _ if project.hipify == HipifyPolicy::TritonBuildEnv && settings.hipify => {
            write_triton_build_env(dir, &resolved.pin)?;
            (None, TRITON_BUILD_ENV.to_string())
        }
        _ => (None, "off".to_string()),
    };
    if let (Some(stamp), Some((lock_file, pins))) = (&stamp, &settings.selection.from_lock)
        && let Some(expected) = pins.get(name).and_then(|pin| pin.hipify.as_ref())
        && expected.script_sha256 == stamp.script_sha256
        && (expected.result_tree != stamp.result_tree
            || expected.submodule_trees != stamp.submodule_trees)
    {
        return Err(anyhow::anyhow!(
            "{name}: hipify produced tree {} but {} records {}; the hipify script is not deterministic on this machine (check the python version, `--python`) — the tree is left for inspection",
            stamp.result_tree,
            lock_file.display(),
            expected.result_tree
        ));
    }
    fs_err::remove_file(&marker)?;
    let state = if fetched || fresh {
        "checked out"
    } else {
        "checked out (local)"
    };
    Ok(outcome(
        job,
        &resolved,
        commit,
        upstream_tree,
        &nodes,
        stamp,
        hipify_summary,
        state,
        task,
    ))
}

/// Origin and ref — from the lock being reproduced, or from flags, pins and defaults — and
/// what to fetch (the locked commit, or the ref).
pub(super) fn resolve(
    project: &Project,
    selection: &Selection,
    pins_from: Option<&PinBoard>,
    task: &Task,
) -> anyhow::Result<(ResolvedPin, String)> {
    if let Some((file, pins)) = &selection.from_lock {
        let pin = pins.get(&project.name).ok_or_else(|| {
            crate::exit::usage(format!(
                "{} has no entry for '{}'",
                file.display(),
                project.name
            ))
        })?;
        let resolved = ResolvedPin {
            origin: pin.origin.clone(),
            requested_ref: pin.requested_ref.clone(),
            pin: PinOrigin::Lock {
                file: file.display().to_string(),
            },
        };
        return Ok((resolved, pin.commit.clone()));
    }
    let overrides = selection
        .overrides
        .get(&project.name)
        .cloned()
        .unwrap_or_default();
    let read = |path: &str| -> anyhow::Result<(String, Option<String>)> {
        let board = pins_from.ok_or_else(|| {
            anyhow::anyhow!("internal error: no pin source for '{}'", project.name)
        })?;
        if let Some(from) = project.pin.pinned_by() {
            task.phase(format!("waiting for the pins of {from}"));
        }
        let files = board.wait().map_err(|reason| {
            anyhow::anyhow!("cannot resolve the pin of '{}': {reason}", project.name)
        })?;
        files.read(path)
    };
    let resolved = resolve::resolve_pin(
        project,
        &overrides,
        selection.release,
        selection.require_related_commit,
        &read,
    )?;
    if crate::redact::url_has_password(&resolved.origin) {
        return Err(crate::exit::usage(format!(
            "the origin of '{}' carries credentials ({}); rockbuild never stores or prints them: use a git credential helper instead",
            project.name,
            crate::redact::redact_url(&resolved.origin)
        )));
    }
    if git::is_abbreviated_sha(&resolved.requested_ref) {
        return Err(crate::exit::usage(format!(
            "ref '{}' of '{}' looks like an abbreviated commit; git can only fetch full 40-character SHAs",
            resolved.requested_ref, project.name
        )));
    }
    let fetch_ref = resolved.requested_ref.clone();
    Ok((resolved, fetch_ref))
}

fn fetch(
    ctx: &Context,
    project: &str,
    git: &Git,
    settings: &Settings,
    resolved: &ResolvedPin,
    fetch_ref: &str,
    task: &Task,
) -> anyhow::Result<Oid> {
    task.phase(format!("fetching {}", resolved.requested_ref));
    let mut args = vec![
        "fetch".to_string(),
        "--progress".into(),
        "--no-recurse-submodules".into(),
    ];
    if let Some(depth) = settings.depth {
        args.push(format!("--depth={depth}"));
    }
    args.push("origin".into());
    args.push(fetch_ref.to_string());
    let mut progress =
        |line: &str| task.progress(format!("fetching {}: {line}", resolved.requested_ref));
    ctx.runner
        .run_streaming(
            &git.transfer(args, settings.selection.limits),
            &mut progress,
        )
        .map_err(|error| {
            git::fetch_failure(error, &resolved.requested_ref, project, &resolved.origin)
        })?;
    let fetch_head = fs_err::read_to_string(git.dir().join(".git/FETCH_HEAD"))?;
    let (object, _) = git::parse_fetch_head(&fetch_head).ok_or_else(|| {
        anyhow::anyhow!("could not read .git/FETCH_HEAD after fetching '{fetch_ref}'")
    })?;
    let repo = local::open(git.dir())?;
    local::peel_to_commit(&repo, Oid::from_str(&object)?)
}

fn update_submodules(
    ctx: &Context,
    git: &Git,
    settings: &Settings,
    name: &str,
    task: &Task,
) -> anyhow::Result<()> {
    ctx.runner
        .run(&git.cmd(["submodule", "sync", "--recursive", "--quiet"]))?;
    let mut args = vec![
        "submodule".to_string(),
        "update".into(),
        "--init".into(),
        "--recursive".into(),
        "--force".into(),
        "--progress".into(),
        format!("--jobs={}", settings.selection.jobs.max(1)),
    ];
    if let Some(depth) = settings.depth {
        args.push(format!("--depth={depth}"));
    }
    let mut progress = |line: &str| task.progress(format!("submodules: {line}"));
    ctx.runner
        .run_streaming(
            &git.transfer(args, settings.selection.limits),
            &mut progress,
        )
        .map_err(|error| {
            let detail = error
                .tail()
                .iter()
                .find(|l| l.contains("submodule path"))
                .cloned()
                .unwrap_or_default();
            anyhow::Error::new(error).context(
                format!("fetching the submodules of '{name}' failed {detail}")
                    .trim_end()
                    .to_string(),
            )
        })?;
    Ok(())
}

/// Tags every submodule's upstream commit, and hides submodule changes from the parent
/// (`submodule.<name>.ignore=all` plus skip-worktree on the gitlinks), as the reference does.
fn protect_submodules(ctx: &Context, nodes: &[Node], log: &Path) -> anyhow::Result<()> {
    for node in nodes {
        let repo = local::open(&node.dir)?;
        if !node.rel.is_empty() {
            local::force_tag(&repo, git::UPSTREAM_TAG, Oid::from_str(&node.recorded)?)?;
        }
        if node.gitlinks.is_empty() {
            continue;
        }
        for link in &node.gitlinks {
            local::set_config(&repo, &format!("submodule.{}.ignore", link.name), "all")?;
        }
        let git = Git::new(&node.dir, node.label()).log_to(log);
        let mut update = git.cmd(["update-index", "--skip-worktree", "--"]);
        for path in node.gitlink_paths() {
            update = update.arg(path);
        }
        ctx.runner.run(&update)?;
    }
    Ok(())
}

/// What the tree must look like to be "up to date".
struct Expectation {
    commit: Oid,
    upstream_tree: Oid,
    /// The hipify script's hash, when hipify applies to this checkout.
    hipify: Option<String>,
    commit_hipify: bool,
    submodules: bool,
}

/// Returns `Some(stamp)` (the stamp, if hipify applies) when the checkout already is exactly
/// the expected state, `None` when it must be redone.
fn up_to_date(
    ctx: &Context,
    repo: &Repository,
    nodes: &[Node],
    expect: &Expectation,
) -> anyhow::Result<Option<Option<HipifyStamp>>> {
    let stamp = match &expect.hipify {
        Some(script_sha) => match hipify::read_stamp(&nodes[0].dir) {
            Some(stamp)
                if stamp.upstream_tree == expect.upstream_tree.to_string()
                    && &stamp.script_sha256 == script_sha =>
            {
                Some(stamp)
            }
            _ => return Ok(None),
        },
        None => None,
    };
    let Some(head) = local::head_commit(repo) else {
        return Ok(None);
    };
    let hipify_commits = stamp.is_some() && expect.commit_hipify;
    if !is_at(repo, head, expect.commit, hipify_commits) {
        return Ok(None);
    }
    // Every submodule the commit records must be checked out at its commit.
    if expect.submodules {
        for node in nodes {
            for link in &node.gitlinks {
                let rel = if node.rel.is_empty() {
                    link.path.clone()
                } else {
                    format!("{}/{}", node.rel, link.path)
                };
                if !nodes.iter().any(|n| n.rel == rel) {
                    return Ok(None);
                }
            }
        }
    }
    for node in nodes {
        let node_repo = local::open(&node.dir)?;
        let Some(node_head) = local::head_commit(&node_repo) else {
            return Ok(None);
        };
        let recorded = Oid::from_str(&node.recorded)?;
        let recorded = if node.rel.is_empty() {
            expect.commit
        } else {
            recorded
        };
        if !is_at(&node_repo, node_head, recorded, hipify_commits) {
            return Ok(None);
        }
        let clean = local::uncommitted_changes(&node_repo)?.is_empty();
        if hipify_commits && !clean {
            return Ok(None);
        }
        let state = if clean {
            local::tree_of(&node_repo, node_head)?.to_string()
        } else {
            hipify::working_tree_id(
                &ctx.runner,
                &Git::new(&node.dir, node.label()),
                &node.gitlink_paths(),
            )?
        };
        let upstream = local::tree_of(&node_repo, recorded)?.to_string();
        let expected = match &stamp {
            Some(stamp) if node.rel.is_empty() => stamp.result_tree.clone(),
            Some(stamp) => stamp
                .submodule_trees
                .get(&node.rel)
                .cloned()
                .unwrap_or(upstream),
            None => upstream,
        };
        if state != expected {
            return Ok(None);
        }
    }
    Ok(Some(stamp))
}

/// HEAD is `target`, or (when hipify commits) rockbuild's hipify commit on top of it.
fn is_at(repo: &Repository, head: Oid, target: Oid, hipify_commits: bool) -> bool {
    if head == target {
        return true;
    }
    hipify_commits
        && local::parent_of(repo, head) == Some(target)
        && repo
            .find_commit(head)
            .ok()
            .and_then(|c| {
                c.summary()
                    .ok()
                    .flatten()
                    .map(|s| s == git::HIPIFY_COMMIT_MESSAGE)
            })
            .unwrap_or(false)
}

fn ensure_tags(nodes: &[Node], expect: &Expectation) -> anyhow::Result<()> {
    for node in nodes {
        let repo = local::open(&node.dir)?;
        let upstream = if node.rel.is_empty() {
            expect.commit
        } else {
            Oid::from_str(&node.recorded)?
        };
        if local::tag_target(&repo, git::UPSTREAM_TAG) != Some(upstream) {
            local::force_tag(&repo, git::UPSTREAM_TAG, upstream)?;
        }
        if expect.commit_hipify
            && expect.hipify.is_some()
            && let Some(head) = local::head_commit(&repo)
            && local::tag_target(&repo, git::HIPIFY_TAG) != Some(head)
        {
            local::force_tag(&repo, git::HIPIFY_TAG, head)?;
        }
    }
    Ok(())
}

/// A repository of the checkout with uncommitted changes.
struct Dirty {
    node: Node,
    changes: Vec<String>,
    /// The changes are exactly what the recorded hipify run produced.
    explained_by_stamp: bool,
}

fn dirty_nodes(ctx: &Context, dir: &Path, git: &Git) -> anyhow::Result<Vec<Dirty>> {
    let repo = local::open(dir)?;
    if local::head_commit(&repo).is_none() {
        return Ok(Vec::new());
    }
    let stamp = hipify::read_stamp(dir);
    let mut dirty = Vec::new();
    for node in repos::discover(dir, true)? {
        let changes = local::uncommitted_changes(&local::open(&node.dir)?)?;
        if changes.is_empty() {
            continue;
        }
        let explained_by_stamp = match &stamp {
            Some(stamp) => {
                let expected = if node.rel.is_empty() {
                    Some(&stamp.result_tree)
                } else {
                    stamp.submodule_trees.get(&node.rel)
                };
                let node_git = Git::new(&node.dir, git.dir().display().to_string());
                expected.is_some_and(|tree| {
                    hipify::working_tree_id(&ctx.runner, &node_git, &node.gitlink_paths())
                        .is_ok_and(|state| &state == tree)
                })
            }
            None => false,
        };
        dirty.push(Dirty {
            node,
            changes,
            explained_by_stamp,
        });
    }
    Ok(dirty)
}

#[expect(
    clippy::too_many_arguments,
    reason = "one call site; the pieces are all distinct inputs of the step"
)]
fn run_hipify(
    ctx: &Context,
    job: &Job<'_>,
    git: &Git,
    nodes: &[Node],
    expect: &Expectation,
    script: &str,
    blob: &[u8],
    check_paths: &[String],
    allow: &[String],
    log: &Path,
) -> anyhow::Result<HipifyStamp> {
    let Job {
        project,
        dir,
        settings,
        ..
    } = job;
    let mut quiet = |_: &str| {};
    hipify::run_script(&ctx.runner, git, &settings.python, script, log, &mut quiet).with_context(
        || {
            format!(
                "hipify of '{}' failed; the tree is left as the script left it",
                project.name
            )
        },
    )?;

    let mut changed_paths = Vec::new();
    let mut result_tree = expect.upstream_tree.to_string();
    let mut submodule_trees = IndexMap::new();
    let mut changed_nodes = Vec::new();
    for node in nodes {
        let node_repo = local::open(&node.dir)?;
        if local::uncommitted_changes(&node_repo)?.is_empty() {
            continue;
        }
        let node_git = Git::new(&node.dir, node.label()).log_to(log);
        let state = hipify::working_tree_id(&ctx.runner, &node_git, &node.gitlink_paths())?;
        let upstream = if node.rel.is_empty() {
            expect.upstream_tree
        } else {
            local::tree_of(&node_repo, Oid::from_str(&node.recorded)?)?
        };
        for path in changed_files(&node_repo, upstream, Oid::from_str(&state)?)? {
            changed_paths.push(format!("{}{path}", prefix(&node.rel)));
        }
        if node.rel.is_empty() {
            result_tree = state;
        } else {
            submodule_trees.insert(node.rel.clone(), state);
        }
        changed_nodes.push(node);
    }

    let allow = leftover::allow_set(allow)?;
    let leftovers = leftover::scan(
        dir,
        &changed_paths,
        check_paths,
        &allow,
        &settings.selection.stack.cuda_only_headers,
    )?;
    if !leftovers.is_empty() {
        let list: Vec<String> = leftovers.iter().take(20).map(ToString::to_string).collect();
        return Err(anyhow::anyhow!(
            "hipify of '{}' left {} CUDA-only include(s) that have HIP equivalents (TheRock#7266):\n    {}\n  the file(s) were skipped or mistranslated; fix the hipify mapping or list deliberate ones under `hipify: allow:` in {} — the tree is left for inspection",
            project.name,
            leftovers.len(),
            list.join("\n    "),
            settings.selection.stack.source_name
        ));
    }

    if settings.commit_hipify {
        for node in changed_nodes.iter().rev() {
            let node_repo = local::open(&node.dir)?;
            let node_git = Git::new(&node.dir, node.label()).log_to(log);
            let upstream = if node.rel.is_empty() {
                expect.commit
            } else {
                Oid::from_str(&node.recorded)?
            };
            ctx.runner.run(&node_git.cmd(["add", "-A"]))?;
            ctx.runner.run(&node_git.commit_as_rockbuild(
                git::HIPIFY_COMMIT_MESSAGE,
                &local::commit_date(&node_repo, upstream)?,
            ))?;
        }
        for node in nodes {
            let node_repo = local::open(&node.dir)?;
            if let Some(head) = local::head_commit(&node_repo) {
                local::force_tag(&node_repo, git::HIPIFY_TAG, head)?;
            }
        }
    }
    let stamp = HipifyStamp {
        upstream_tree: expect.upstream_tree.to_string(),
        script_sha256: crate::fsutil::sha256_hex(blob),
        result_tree,
        submodule_trees,
        changed_files: changed_paths.len(),
    };
    hipify::write_stamp(dir, &stamp)?;
    Ok(stamp)
}

/// Paths that differ between two trees (added, modified, deleted).
fn changed_files(repo: &Repository, old: Oid, new: Oid) -> anyhow::Result<Vec<String>> {
    let old = repo.find_tree(old)?;
    let new = repo.find_tree(new)?;
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    Ok(diff
        .deltas()
        .filter_map(|delta| {
            delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
        })
        .collect())
}

/// F7: `{"TRITON_WHEEL_VERSION_SUFFIX": ""}` when the commit came from torch's CI pin, `{}`
/// otherwise.
fn write_triton_build_env(dir: &Path, pin: &PinOrigin) -> anyhow::Result<()> {
    let content = if matches!(pin, PinOrigin::CommitFile { .. }) {
        "{\"TRITON_WHEEL_VERSION_SUFFIX\": \"\"}\n"
    } else {
        "{}\n"
    };
    crate::fsutil::write_if_changed(&dir.join(TRITON_BUILD_ENV), content.as_bytes())?;
    Ok(())
}

/// Adds `pattern` to the repository's own exclude file (never committed, never shared).
fn exclude_locally(dir: &Path, pattern: &str) -> anyhow::Result<()> {
    let path = dir.join(".git/info/exclude");
    let existing = fs_err::read_to_string(&path).unwrap_or_default();
    if existing.lines().any(|l| l.trim() == pattern) {
        return Ok(());
    }
    fs_err::create_dir_all(dir.join(".git/info"))?;
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(pattern);
    text.push('\n');
    Ok(crate::fsutil::write_atomic(&path, text.as_bytes())?)
}

#[expect(
    clippy::too_many_arguments,
    reason = "assembles the outcome from the step's results"
)]
fn outcome(
    job: &Job<'_>,
    resolved: &ResolvedPin,
    commit: Oid,
    tree: Oid,
    nodes: &[Node],
    stamp: Option<HipifyStamp>,
    hipify: String,
    state: &'static str,
    task: &Task,
) -> Outcome {
    let submodules: Vec<LockedSubmodule> = nodes
        .iter()
        .skip(1)
        .map(|node| LockedSubmodule {
            path: node.rel.clone(),
            commit: node.recorded.clone(),
            url: node.url.clone(),
        })
        .collect();
    let row = SummaryRow {
        project: job.project.name.clone(),
        reference: resolved.requested_ref.clone(),
        commit: commit.to_string(),
        submodules: submodules.len(),
        hipify,
        state,
        elapsed: task.elapsed(),
    };
    Outcome {
        locked: LockedProject {
            checkout_dir: job.project.checkout_dir.clone(),
            origin: resolved.origin.clone(),
            requested_ref: resolved.requested_ref.clone(),
            commit: commit.to_string(),
            tree: tree.to_string(),
            pin: resolved.pin.clone(),
            submodules,
            hipify: stamp,
        },
        row,
    }
}

fn prefix(rel: &str) -> String {
    if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    }
}

pub fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// Projects that pin nothing need no board; those pinned by a project not in this run read
/// the pins from its existing checkout (as the reference does with `--torch-dir`).
pub fn pin_files_for_absent(project: &Project, selection: &Selection) -> Option<PinFiles> {
    let from = project.pin.pinned_by()?;
    let pinning = selection.stack.projects.get(from)?;
    let dir = selection.root.join(&pinning.checkout_dir);
    let display_prefix = format!("{}/", pinning.checkout_dir);
    Some(if dir.exists() {
        PinFiles::WorkTree {
            dir,
            display_prefix,
        }
    } else {
        PinFiles::Absent { display_prefix }
    })
}
