//! The steps of a project's apply in the plan's order, with the submodules on a thread of
//! their own beside them (see the parent module): what waits for which submodules, the tags,
//! and the indexes left as git would.

use super::*;

impl<'a> Run<'a> {
    /// The plan's steps, the submodules on a thread of their own (the module's doc).
    pub(super) fn steps<'scope>(
        &mut self,
        scope: &'scope Scope<'scope, '_>,
        progress: &'scope Progress,
    ) -> anyhow::Result<()>
    where
        'a: 'scope,
    {
        let steps = &self.job.plan.steps;
        let has_submodules = steps.iter().any(|s| matches!(s, Step::Submodules { .. }));
        let mut background = None;
        let mut packer = None;
        let mut storer = None;
        if has_submodules && self.job.state.nodes.is_empty() {
            submodules::make_top_level_dirs(self.dir, &self.job.resolved.submodules)?;
            let first = edited_submodules(self.job)
                .filter(|_| self.runs_script())
                .map(|edited| top_level_of(&self.job.resolved.submodules, &edited));
            background = Some(self.spawn_submodules(scope, progress, first));
        }
        for step in steps {
            match step {
                Step::Submodules { .. } => {
                    self.task.phase("submodules");
                    if background.is_none() {
                        background = Some(self.spawn_submodules(scope, progress, None));
                    }
                }
                Step::Hipify { how } => {
                    if let Some(fresh) = self.hipify(how, &mut background)? {
                        // Stored beside the commits and tags: nothing in this tree waits for
                        // the cache, only the next checkout of the same tree.
                        let (ctx, job) = (self.ctx, self.job);
                        storer = Some(scope.spawn(move || store_in_cache(ctx, job, &fresh)));
                    }
                }
                Step::Checkout { commit } => {
                    self.step(step)?;
                    progress.open_gate();
                    // The tree's checkout pack, written beside the next steps (hipify).
                    let (ctx, job, dir) = (self.ctx, self.job, self.dir);
                    packer = Some(scope.spawn(move || {
                        submodules::keep_checkout_pack(
                            ctx,
                            &job.project.name,
                            &job.resolved.mirror,
                            (".", dir),
                            commit,
                            None,
                        );
                    }));
                }
                Step::Discard { .. } | Step::Objects | Step::TagUpstream => self.step(step)?,
                _ => {
                    self.join_submodules(&mut background)?;
                    self.step(step)?;
                }
            }
        }
        let panicked = || Error::Panicked {
            project: self.job.project.name.clone(),
        };
        if let Some(packer) = packer {
            packer.join().map_err(|_| panicked())?;
        }
        if let Some(storer) = storer
            && let Err(error) = storer.join().map_err(|_| panicked())?
        {
            // The cache only spares the next checkout of this tree the script: this one is
            // complete without it.
            self.ctx.ui.warn(format!(
                "{}: the hipify result was not kept in the cache ({error:#}); the next checkout \
                 of this tree runs the script again",
                self.job.project.name
            ));
        }
        self.join_submodules(&mut background)
    }

    /// Starts checking out every submodule from its mirror (with cached hipify commits,
    /// those directly).
    pub(super) fn spawn_submodules<'scope>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        progress: &'scope Progress,
        first: Option<Vec<String>>,
    ) -> Background<'scope>
    where
        'a: 'scope,
    {
        let (ctx, job) = (self.ctx, self.job);
        let commits: IndexMap<String, String> = match &job.target.hipify {
            HipifyTarget::Cached { record, .. } if job.target.commit_hipify => record
                .commits
                .iter()
                .filter(|(rel, _)| !rel.is_empty())
                .map(|(rel, commit)| (rel.clone(), commit.clone()))
                .collect(),
            _ => IndexMap::new(),
        };
        let log = self.log.clone();
        let script = self
            .runs_script()
            .then(|| ScriptReach(edited_submodules(job)));
        let handle = scope.spawn(move || {
            submodules::check_out(
                ctx,
                &submodules::Request {
                    root: &job.target.dir,
                    submodules: &job.resolved.submodules,
                    commits: &commits,
                    jobs: job.selection.jobs,
                    log: &log,
                    project: &job.project.name,
                    progress,
                    first: first.as_deref(),
                    limits: job.selection.limits,
                },
            )?;
            // Tags and skip-worktree here, beside the script rather than after it. The root's
            // own checkout must be out first (its index and HEAD).
            if !progress.root_is_out() {
                // The other steps failed: nothing reads this.
                return Ok(Vec::new());
            }
            let nodes = repos::discover(&job.target.dir, true)?;
            protect_submodules(ctx, &nodes, &log, script.as_ref())?;
            if let Some(script) = &script {
                settle_indexes(ctx, &nodes, &log, script)?;
            }
            Ok(nodes)
        });
        Background { handle, progress }
    }

    /// Waits until `paths` are checked out: the submodule checkout's error if it failed first.
    pub(super) fn wait_for_submodules(
        &mut self,
        background: &mut Option<Background<'_>>,
        paths: &[&str],
    ) -> anyhow::Result<()> {
        if let Some(running) = background {
            running.progress.open_gate();
            if !running.progress.wait_for(paths) {
                self.join_submodules(background)?;
            }
        }
        self.lap(Phase::Submodules);
        Ok(())
    }

    /// Waits for every submodule, tagged and with their changes hidden from their parents.
    pub(super) fn join_submodules(
        &mut self,
        background: &mut Option<Background<'_>>,
    ) -> anyhow::Result<()> {
        let Some(running) = background.take() else {
            return Ok(());
        };
        running.progress.open_gate();
        self.nodes = running.handle.join().map_err(|_| Error::Panicked {
            project: self.job.project.name.clone(),
        })??;
        self.lap(Phase::Submodules);
        Ok(())
    }

    pub(super) fn step(&mut self, step: &Step) -> anyhow::Result<()> {
        let (ctx, target) = (self.ctx, self.job.target);
        match step {
            Step::Discard { repositories } => {
                for rel in repositories {
                    let git = self.node_git(rel);
                    ctx.runner.run(&git.cmd(["reset", "-q", "--hard"]))?;
                    ctx.runner.run(&git.cmd(["clean", "-ffdq"]))?;
                }
            }
            Step::Objects => {
                self.task.phase("objects from the cache");
                let git_dir = self.dir.join(".git");
                let checking_out = self.job.plan.steps.iter().find_map(|step| match step {
                    Step::Checkout { commit } => Some(commit.as_str()),
                    _ => None,
                });
                submodules::objects(
                    ctx,
                    &self.git,
                    &self.job.resolved.mirror,
                    &git_dir,
                    checking_out.unwrap_or(&target.commit),
                )?;
            }
            Step::Checkout { commit } => {
                self.task.phase(format!(
                    "checking out {}",
                    crate::checkout::plan::short(commit)
                ));
                submodules::check_out_healing(
                    ctx,
                    &self.job.project.name,
                    (&self.git, &self.dir.join(".git")),
                    &self.job.resolved.mirror,
                    (commit, &target.commit),
                    self.job.selection.limits,
                )?;
            }
            Step::TagUpstream => {
                local::force_tag(
                    &self.repo,
                    git::UPSTREAM_TAG,
                    Oid::from_str(&target.commit)?,
                )?;
                self.lap(Phase::Tree);
            }
            // Scheduled by `steps`.
            Step::Submodules { .. } | Step::Hipify { .. } => {}
            Step::CommitHipify => {
                let stamp = self.stamp.clone();
                self.nodes()?.par_iter().try_for_each(|node| {
                    if !stamp
                        .as_ref()
                        .is_some_and(|s| changed_by_hipify(s, &node.rel))
                    {
                        return Ok(());
                    }
                    let node_repo = local::open(&node.dir)?;
                    if let Some(head) = local::head_commit(&node_repo) {
                        local::force_tag(&node_repo, git::HIPIFY_TAG, head)?;
                    }
                    anyhow::Ok(())
                })?;
            }
            Step::WriteFiles { files } => {
                write_files(target, self.dir)?;
                self.hipify_summary = CheckoutFile::paths(files);
            }
            Step::EnsureTags => {}
        }
        Ok(())
    }
}

/// The repositories the hipify script may write into beside the submodules' protection and
/// settling: the root and the submodules it edits (`None`: the stack config does not say, so
/// any). Their indexes are rewritten by git, which re-hashes the files written in the index's
/// second; the others' by `local::rewrite_index`, which compares their stat data instead. A
/// script that reaches a submodule it is not listed for is noticed (`overlap`: the watch on
/// its Python, its failure, the statuses) and its work redone in the reference's order, every
/// file hashed first: a rewrite at the same size in the tick git wrote the file in would fool
/// the stat data.
pub(super) struct ScriptReach(pub(super) Option<Vec<String>>);

impl ScriptReach {
    pub(super) fn reaches(&self, node: &Node) -> bool {
        let ScriptReach(Some(edited)) = self else {
            return true;
        };
        node.rel.is_empty()
            || edited
                .iter()
                .any(|e| node.rel == *e || node.rel.starts_with(&format!("{e}/")))
    }
}

/// Tags every submodule's upstream commit, and hides submodule changes from the parent
/// (`submodule.<name>.ignore=all` plus skip-worktree on the gitlinks), as the reference does.
pub(super) fn protect_submodules(
    ctx: &Context,
    nodes: &[Node],
    log: &Path,
    script: Option<&ScriptReach>,
) -> anyhow::Result<()> {
    // Each repository's own files only: all at once.
    nodes.par_iter().try_for_each(|node| {
        let repo = local::open(&node.dir)?;
        if !node.rel.is_empty() {
            local::force_tag(&repo, git::UPSTREAM_TAG, Oid::from_str(&node.recorded)?)?;
        }
        if node.gitlinks.is_empty() {
            return Ok(());
        }
        for link in &node.gitlinks {
            local::set_config(&repo, &format!("submodule.{}.ignore", link.name), "all")?;
        }
        match script {
            // Nothing writes beside: libgit2, no re-hash.
            None => return Ok(local::rewrite_index(&repo, &node.gitlink_paths())?),
            // `settle_indexes` writes it (skip-worktree included) once the second is over.
            Some(script) if !script.reaches(node) => return Ok(()),
            Some(_) => {}
        }
        let git = Git::new(&node.dir, node.label()).log_to(log);
        let mut update = git.cmd(["update-index", "--skip-worktree", "--"]);
        for path in node.gitlink_paths() {
            update = update.arg(path);
        }
        ctx.runner.run(&update)?;
        Ok(())
    })
}

/// Rewrites every repository's index in a later second than its files, so that the statuses
/// after the script compare stat data instead of reading every file: git re-reads each entry
/// written in the same second as its index ("racily clean") at every status until the index
/// is written again in a later second. Torch's submodules are 28k such files (XNNPACK alone: a
/// 0.3 s status before, 0.01 s after). Beside the script, on the core it leaves free; waits up
/// to a second when a repository was checked out in this one. The repositories the script
/// reaches go through git (`ScriptReach`).
pub(super) fn settle_indexes(
    ctx: &Context,
    nodes: &[Node],
    log: &Path,
    script: &ScriptReach,
) -> anyhow::Result<()> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    for node in nodes {
        if local::index_written(&local::open(&node.dir)?)? >= now.as_secs() {
            std::thread::sleep(Duration::from_secs(now.as_secs() + 1) - now);
            break;
        }
    }
    nodes.par_iter().try_for_each(|node| {
        if !script.reaches(node) {
            local::rewrite_index(&local::open(&node.dir)?, &node.gitlink_paths())?;
            return Ok(());
        }
        let git = Git::new(&node.dir, node.label()).log_to(log);
        ctx.runner
            .run(&git.cmd(["update-index", "-q", "--refresh", "--force-write-index"]))?;
        anyhow::Ok(())
    })
}

/// Up to date: the upstream and hipify tags where they belong (moving only what moved).
pub(super) fn ensure_tags(
    nodes: &[Node],
    target: &Target,
    stamp: Option<&HipifyStamp>,
) -> anyhow::Result<()> {
    for node in nodes {
        let repo = local::open(&node.dir)?;
        let upstream = if node.rel.is_empty() {
            Oid::from_str(&target.commit)?
        } else {
            Oid::from_str(&node.recorded)?
        };
        if local::tag_target(&repo, git::UPSTREAM_TAG) != Some(upstream) {
            local::force_tag(&repo, git::UPSTREAM_TAG, upstream)?;
        }
        if target.commit_hipify
            && stamp.is_some_and(|s| changed_by_hipify(s, &node.rel))
            && let Some(head) = local::head_commit(&repo)
            && local::tag_target(&repo, git::HIPIFY_TAG) != Some(head)
        {
            local::force_tag(&repo, git::HIPIFY_TAG, head)?;
        }
    }
    Ok(())
}

/// The submodules being checked out beside the other steps.
pub(super) struct Background<'scope> {
    /// Every repository of the tree, protected (see `spawn_submodules`).
    handle: ScopedJoinHandle<'scope, anyhow::Result<Vec<Node>>>,
    progress: &'scope Progress,
}

/// The submodules of this checkout the hipify script edits (`hipify: edits-submodules`);
/// `None` when the stack config does not say (then it waits for all of them).
pub(in crate::checkout) fn edited_submodules(job: &Job<'_>) -> Option<Vec<String>> {
    let HipifyPolicy::Script {
        edits_submodules: Some(listed),
        ..
    } = &job.project.hipify
    else {
        return None;
    };
    Some(
        job.resolved
            .submodules
            .iter()
            .filter(|s| listed.contains(&s.path))
            .map(|s| s.path.clone())
            .collect(),
    )
}

/// The top-level submodules that are or hold one of `paths`.
pub(super) fn top_level_of(submodules: &[ResolvedSubmodule], paths: &[String]) -> Vec<String> {
    submodules
        .iter()
        .filter(|s| s.parent.is_empty())
        .filter(|s| {
            paths
                .iter()
                .any(|p| p == &s.path || p.starts_with(&format!("{}/", s.path)))
        })
        .map(|s| s.path.clone())
        .collect()
}
