//! Hipify within an apply: run the project's script (or take its result from the cache),
//! commit what it changed, check what it left, and keep a fresh result for the next run.

use super::*;

impl<'a> Run<'a> {
    /// Runs hipify or takes its result from the cache; then, with commits, moves every changed
    /// repository to its hipify commit, and records the stamp. A fresh result is returned for
    /// the cache. The script waits only for the submodules it edits; what follows it for all of
    /// them.
    pub(super) fn hipify(
        &mut self,
        how: &HipifyStep,
        background: &mut Option<Background<'_>>,
    ) -> anyhow::Result<Option<Fresh>> {
        let (ctx, job) = (self.ctx, self.job);
        // The cache key a result made here is stored under.
        let mut fresh = match &job.target.hipify {
            HipifyTarget::Run { key, .. } => Some(key.clone()),
            _ => None,
        };
        let found = match (how, &job.target.hipify) {
            (HipifyStep::Run { script }, HipifyTarget::Run { script_sha256, .. }) => {
                let found = self.run_hipify(script, script_sha256, background)?;
                self.hipify_summary = format!("{} files changed", found.stamp.changed_files);
                found
            }
            (
                HipifyStep::FromCache { .. },
                HipifyTarget::Cached {
                    record,
                    key,
                    script,
                    script_sha256,
                },
            ) => {
                self.join_submodules(background)?;
                self.nodes()?;
                self.task.phase("hipify");
                match from_cache(ctx, job, &self.nodes, record, key, &self.log) {
                    Ok(found) => {
                        self.hipify_summary =
                            format!("from cache ({} files)", found.stamp.changed_files);
                        found
                    }
                    // A record that does not reproduce is a miss: the script runs as if
                    // there were none, and its result replaces the record.
                    Err(error) if is_cache_mismatch(&error) => {
                        ctx.ui.warn(format!(
                            "{}: the cached hipify result {key} does not reproduce here \
                             ({error:#}); running the hipify script instead, after every \
                             submodule (the reference's order), and replacing the record",
                            job.project.name
                        ));
                        self.task
                            .phase("hipify (the cached result did not reproduce)");
                        let nodes = self.nodes.clone();
                        check_out_upstream(ctx, job, &nodes, &self.log)?;
                        let found = self.run_in_reference_order(&nodes, script, script_sha256)?;
                        self.hipify_summary =
                            format!("{} files changed", found.stamp.changed_files);
                        fresh = Some(key.clone());
                        found
                    }
                    Err(error) => return Err(error),
                }
            }
            _ => {
                self.join_submodules(background)?;
                self.hipify_summary = "no script".into();
                self.lap(Phase::Hipify);
                return Ok(None);
            }
        };
        self.lap(Phase::Hipify);
        check_locked_stamp(job, &found.stamp)?;
        if job.target.commit_hipify {
            for (rel, commit) in &found.commits {
                let git = self.node_git(rel);
                let head = local::head_commit(&local::open(git.dir())?);
                if head.map(|h| h.to_string()).as_deref() != Some(commit.as_str()) {
                    ctx.runner
                        .run(&git.cmd(["reset", "-q", "--end-of-options", commit]))?;
                }
            }
        }
        hipify::write_stamp(self.dir, &found.stamp)?;
        self.stamp = Some(found.stamp.clone());
        Ok(fresh.map(|key| Fresh { key, record: found }))
    }

    /// Runs the script: beside the submodules it is not listed for when the stack config
    /// lists the ones it edits (`overlap`), and again in the reference's order when that
    /// run cannot be trusted; else once every submodule is out.
    pub(super) fn run_hipify(
        &mut self,
        script: &str,
        script_sha256: &str,
        background: &mut Option<Background<'_>>,
    ) -> anyhow::Result<cache::Record> {
        let (ctx, job) = (self.ctx, self.job);
        let overlap = Overlap::of(job);
        let waits: Vec<&str> = match &overlap {
            Some(overlap) => overlap.listed.iter().map(String::as_str).collect(),
            None => job
                .resolved
                .submodules
                .iter()
                .map(|s| s.path.as_str())
                .collect(),
        };
        self.wait_for_submodules(background, &waits)?;
        self.task.phase("hipify");
        let Some(overlap) = overlap else {
            run_script(ctx, job, &self.git, script, &self.log, None)?;
            self.lap(Phase::Hipify);
            self.join_submodules(background)?;
            self.nodes()?;
            let changed = changed_nodes(&self.nodes)?;
            return hipify_result(ctx, job, &self.nodes, &changed, script_sha256, &self.log);
        };
        let watch = overlap.watch(self.dir)?;
        let started = SystemTime::now();
        let ran = run_script(ctx, job, &self.git, script, &self.log, Some(&watch));
        self.lap(Phase::Hipify);
        // Every submodule out before judging, a failed run included: the slow way needs them.
        self.join_submodules(background)?;
        self.nodes()?;
        let changed = changed_nodes(&self.nodes)?;
        let reach = watch.read();
        let Some(doubt) = overlap.doubt(&reach, &self.nodes, &changed) else {
            // Nothing outside the list was reached: a failure is the script's own.
            ran?;
            return hipify_result(ctx, job, &self.nodes, &changed, script_sha256, &self.log);
        };
        if let Err(error) = &ran {
            tracing::debug!("{}: the first hipify run failed: {error}", job.project.name);
        }
        self.task.phase("hipify again, after every submodule");
        let nodes = self.nodes.clone();
        overlap::undo_script(ctx, &nodes, &self.log, started)?;
        let found = self.run_in_reference_order(&nodes, script, script_sha256)?;
        ctx.ui.warn(overlap::warning(job, &doubt));
        Ok(found)
    }

    /// The slow, correct way, on a tree whose every repository is at its upstream commit and
    /// clean, every submodule out: their changes hidden from their parents and their indexes
    /// settled (as when hipify waits for every submodule), then the script, then its result.
    pub(super) fn run_in_reference_order(
        &mut self,
        nodes: &[Node],
        script: &str,
        script_sha256: &str,
    ) -> anyhow::Result<cache::Record> {
        let (ctx, job) = (self.ctx, self.job);
        protect_submodules(ctx, nodes, &self.log, Some(&ScriptReach(None)))?;
        settle_indexes(ctx, nodes, &self.log, &ScriptReach(None))?;
        run_script(ctx, job, &self.git, script, &self.log, None)?;
        self.lap(Phase::Hipify);
        let changed = changed_nodes(nodes)?;
        hipify_result(ctx, job, nodes, &changed, script_sha256, &self.log)
    }
}

/// Whether hipify changed the repository at `rel` (the reference commits and tags those
/// only: repo_management.py's commit_hipify_module returns early on a clean status).
pub(super) fn changed_by_hipify(stamp: &HipifyStamp, rel: &str) -> bool {
    if rel.is_empty() {
        stamp.result_tree != stamp.upstream_tree
    } else {
        stamp.submodule_trees.contains_key(rel)
    }
}

/// Runs the script on the pristine tree (the root and the submodules it edits), watched
/// when `watch` is given.
pub(super) fn run_script(
    ctx: &Context,
    job: &Job<'_>,
    git: &Git,
    script: &str,
    log: &Path,
    watch: Option<&Watch>,
) -> anyhow::Result<()> {
    hipify::run_script(
        &ctx.runner,
        git,
        &job.options.python,
        script,
        log,
        watch,
        &mut |_| {},
    )
    .map_err(|source| hipify::Error::Script {
        project: job.project.name.clone(),
        source,
    })?;
    Ok(())
}

/// Whether `error` is a cached hipify result that did not reproduce.
pub(super) fn is_cache_mismatch(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<hipify::Error>(),
        Some(hipify::Error::CacheMismatch { .. })
    )
}

/// Every repository back at its upstream commit and clean (parents first: a parent's checkout
/// leaves its submodules' trees alone), after a cached hipify result was checked out.
pub(super) fn check_out_upstream(
    ctx: &Context,
    job: &Job<'_>,
    nodes: &[Node],
    log: &Path,
) -> anyhow::Result<()> {
    for node in nodes {
        let upstream = if node.rel.is_empty() {
            job.target.commit.as_str()
        } else {
            node.recorded.as_str()
        };
        let git = Git::new(&node.dir, node.label()).log_to(log);
        ctx.runner.run(&git.checkout_detached(upstream))?;
        ctx.runner.run(&git.cmd(["clean", "-ffdq"]))?;
    }
    Ok(())
}

/// Which repositories the script changed: a status each, all at once.
pub(super) fn changed_nodes(nodes: &[Node]) -> anyhow::Result<Vec<bool>> {
    nodes
        .par_iter()
        .map(|node| {
            let repo = local::open(&node.dir)?;
            Ok(!local::uncommitted_changes(&repo)?.is_empty())
        })
        .collect()
}

/// The script's result, once every submodule is out (`changed`: per node, whether the script
/// changed it): checked for leftover CUDA includes, and recorded as commits (checked out or
/// not, as asked) with a stamp.
pub(super) fn hipify_result(
    ctx: &Context,
    job: &Job<'_>,
    nodes: &[Node],
    changed: &[bool],
    script_sha256: &str,
    log: &Path,
) -> anyhow::Result<cache::Record> {
    let mut changed_paths = Vec::new();
    let mut result_tree = job.target.upstream_tree.clone();
    let mut submodule_trees = IndexMap::new();
    let mut commits = IndexMap::new();
    for (node, _) in nodes.iter().zip(changed).filter(|(_, changed)| **changed) {
        let node_repo = local::open(&node.dir)?;
        let node_git = Git::new(&node.dir, node.label()).log_to(log);
        let state = hipify::working_tree_id(&ctx.runner, &node_git, &node.gitlink_paths())?;
        let upstream_commit = if node.rel.is_empty() {
            Oid::from_str(&job.target.commit)?
        } else {
            Oid::from_str(&node.recorded)?
        };
        let upstream = local::tree_of(&node_repo, upstream_commit)?;
        for path in changed_files(&node_repo, upstream, Oid::from_str(&state)?)? {
            changed_paths.push(format!("{}{path}", prefix(&node.rel)));
        }
        let date = local::commit_date(&node_repo, upstream_commit)?;
        let commit = ctx
            .runner
            .run(&node_git.commit_tree_as_rockbuild(&state, &upstream_commit.to_string(), &date))?
            .stdout
            .trim()
            .to_string();
        commits.insert(node.rel.clone(), commit);
        if node.rel.is_empty() {
            result_tree = state;
        } else {
            submodule_trees.insert(node.rel.clone(), state);
        }
    }
    let leftovers = check_leftovers(job, &changed_paths)?;
    let stamp = HipifyStamp {
        upstream_tree: job.target.upstream_tree.clone(),
        script_sha256: script_sha256.to_string(),
        result_tree,
        submodule_trees,
        changed_files: changed_paths.len(),
        leftovers,
    };
    Ok(cache::Record { stamp, commits })
}

/// Reproducing a lock: the hipify result, run here or taken from the cache, must be the one
/// the lock recorded (the upstream tree was checked at resolve, so the script is the same).
fn check_locked_stamp(job: &Job<'_>, stamp: &HipifyStamp) -> anyhow::Result<()> {
    let name = &job.project.name;
    if let Some((lock_file, pins)) = &job.selection.from_lock
        && let Some(expected) = pins.get(name.as_str()).and_then(|pin| pin.hipify.as_ref())
        && (expected.script_sha256 != stamp.script_sha256
            || expected.result_tree != stamp.result_tree
            || expected.submodule_trees != stamp.submodule_trees)
    {
        return Err(hipify::Error::NotDeterministic {
            project: name.clone(),
            found: stamp.result_tree.clone(),
            expected: expected.result_tree.clone(),
            lock: lock_file.display().to_string(),
        }
        .into());
    }
    Ok(())
}

/// Checks the cached hipify result out: in commit mode the root already is at its hipify
/// commit (the plan checked it out), submodules move to theirs; without commits, the files of
/// the hipify commits are restored over the upstream trees. The result must match the record.
pub(super) fn from_cache(
    ctx: &Context,
    job: &Job<'_>,
    nodes: &[Node],
    record: &cache::Record,
    key: &str,
    log: &Path,
) -> anyhow::Result<cache::Record> {
    let name = &job.project.name;
    let mut changed_paths = Vec::new();
    for (rel, commit) in &record.commits {
        let Some(node) = nodes.iter().find(|n| &n.rel == rel) else {
            continue;
        };
        let node_git = Git::new(&node.dir, node.label())
            .log_to(log)
            .allow_file_protocol(true);
        let node_repo = local::open(&node.dir)?;
        if node_repo.find_commit(Oid::from_str(commit)?).is_err() {
            let mirror = if rel.is_empty() {
                &job.resolved.mirror
            } else {
                &job.resolved
                    .submodules
                    .iter()
                    .find(|s| &s.path == rel)
                    .ok_or_else(|| anyhow::anyhow!("no mirror for submodule {rel}"))?
                    .mirror
            };
            let _guard = mirror.shared()?;
            submodules::fetch_from(
                ctx,
                &node_git,
                mirror,
                &format!("refs/rockbuild/hipify/{commit}"),
            )?;
        }
        let found = if job.target.commit_hipify {
            // The tree checkout wrote the cached commit (submodules included): `checkout
            // --force` leaves exactly its tree, so no walk of the working tree is needed.
            let commit = Oid::from_str(commit)?;
            if local::head_commit(&node_repo) != Some(commit) {
                ctx.runner
                    .run(&node_git.checkout_detached(&commit.to_string()))?;
            }
            local::tree_of(&node_repo, commit)?.to_string()
        } else {
            let mut restore = node_git.cmd([
                "restore".to_string(),
                format!("--source={commit}"),
                "--worktree".into(),
                "--".into(),
                ".".into(),
            ]);
            for path in node.gitlink_paths() {
                restore = restore.arg(format!(":(exclude){path}"));
            }
            ctx.runner.run(&restore)?;
            hipify::working_tree_id(&ctx.runner, &node_git, &node.gitlink_paths())?
        };
        let expected = if rel.is_empty() {
            Some(&record.stamp.result_tree)
        } else {
            record.stamp.submodule_trees.get(rel)
        };
        if expected != Some(&found) {
            return Err(hipify::Error::CacheMismatch {
                project: name.clone(),
                key: key.to_string(),
                repo: node.label().to_string(),
                found,
                expected: expected.cloned().unwrap_or_default(),
                path: cache::record_path(&job.selection.cache_dir, key),
            }
            .into());
        }
        let upstream = local::tree_of(&node_repo, Oid::from_str(&node.recorded)?)?;
        let upstream = if rel.is_empty() {
            Oid::from_str(&job.target.upstream_tree)?
        } else {
            upstream
        };
        for path in changed_files(&node_repo, upstream, Oid::from_str(&found)?)? {
            changed_paths.push(format!("{}{path}", prefix(rel)));
        }
    }
    // Checked again: the stack config's allow list and policy may have changed since.
    let leftovers = check_leftovers(job, &changed_paths)?;
    Ok(cache::Record {
        stamp: HipifyStamp {
            leftovers,
            ..record.stamp.clone()
        },
        commits: record.commits.clone(),
    })
}

/// The CUDA-only includes that survived hipify (in the files it changed and the check paths),
/// as the report lists them; an error instead when this checkout refuses them
/// ([`refuse_leftovers`]).
pub(super) fn check_leftovers(
    job: &Job<'_>,
    changed_paths: &[String],
) -> anyhow::Result<Vec<String>> {
    let HipifyPolicy::Script {
        check_paths, allow, ..
    } = &job.project.hipify
    else {
        return Ok(Vec::new());
    };
    let allow = leftover::allow_set(allow)?;
    let stack = &job.selection.stack;
    let leftovers: Vec<String> = leftover::scan(
        &job.target.dir,
        changed_paths,
        check_paths,
        &allow,
        &stack.cuda_only_headers,
    )?
    .iter()
    .map(ToString::to_string)
    .collect();
    refuse_leftovers(job, &leftovers)?;
    Ok(leftovers)
}

/// Leftover includes are reported, as the reference (which has no such check) would build the
/// tree anyway; they fail the checkout only with `--strict` or the project's `hipify:
/// leftover-cuda: refuse`.
pub(super) fn refuse_leftovers(job: &Job<'_>, leftovers: &[String]) -> anyhow::Result<()> {
    let config = &job.selection.stack.source_name;
    let refused_by = match &job.project.hipify {
        _ if job.options.strict => "--strict".to_string(),
        HipifyPolicy::Script {
            leftover_cuda: LeftoverPolicy::Refuse,
            ..
        } => format!("`hipify: leftover-cuda: refuse` in {config}"),
        _ => return Ok(()),
    };
    if leftovers.is_empty() {
        return Ok(());
    }
    Err(hipify::Error::Leftovers {
        project: job.project.name.clone(),
        leftovers: leftovers.to_vec(),
        config: config.clone(),
        refused_by,
    }
    .into())
}

/// A hipify result the script just made, for the cache under `key`.
pub(super) struct Fresh {
    key: String,
    record: cache::Record,
}

/// Keeps a fresh hipify result for the next checkout of this tree with this script: the
/// commits into the mirrors of their repositories, then the record.
pub(super) fn store_in_cache(ctx: &Context, job: &Job<'_>, fresh: &Fresh) -> anyhow::Result<()> {
    for (rel, commit) in &fresh.record.commits {
        let (mirror, dir) = if rel.is_empty() {
            (&job.resolved.mirror, job.target.dir.clone())
        } else {
            let Some(sub) = job.resolved.submodules.iter().find(|s| &s.path == rel) else {
                return Ok(());
            };
            (&sub.mirror, job.target.dir.join(rel))
        };
        mirror.store(&ctx.runner, &dir, Oid::from_str(commit)?, "hipify")?;
    }
    cache::write(&job.selection.cache_dir, &fresh.key, &fresh.record)?;
    Ok(())
}

/// Paths that differ between two trees (added, modified, deleted).
pub(super) fn changed_files(repo: &Repository, old: Oid, new: Oid) -> anyhow::Result<Vec<String>> {
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

pub(super) fn write_files(target: &Target, dir: &Path) -> anyhow::Result<()> {
    for file in &target.files {
        crate::fsutil::write_if_changed(&dir.join(&file.path), file.content.as_bytes())?;
    }
    Ok(())
}

/// Adds `pattern` to the repository's own exclude file (never committed, never shared).
pub(super) fn exclude_locally(dir: &Path, pattern: &str) -> anyhow::Result<()> {
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
