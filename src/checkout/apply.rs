//! Applying a project's plan: the effects, through the one runner, timed per phase (fetch,
//! tree, submodules, hipify, tags and commits). Between the first change and the end the tree
//! carries a marker, so a killed run is repaired next time rather than trusted.
//!
//! The steps run in the plan's order, except the submodules: they are checked out on a thread
//! of their own beside the other steps — in a new checkout from the start, beside the root's
//! own checkout; else from their step on — and what needs them waits: the hipify script for
//! the submodules it edits (`hipify: edits-submodules`), every other step for all of them.
//! When the script runs, only the submodules it edits (and theirs) are written beside the
//! root's checkout; the others start once that is done, beside the script (on two cores,
//! writing them all at once only slows the root's checkout, which the script needs). That
//! order is a fast path with an assumption, checked on every run (`overlap`).

use std::path::Path;
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant, SystemTime};

use git2::{Oid, Repository};
use indexmap::IndexMap;
use rayon::prelude::*;
use serde::Serialize;

use super::inspect;
use super::overlap::{self, Overlap};
use super::plan::{
    Action, CheckoutFile, HipifyStep, HipifyTarget, NodeState, ProjectPlan, Step, Target, TreeState,
};
use super::repos::{self, Node};
use super::resolve::{Resolved, ResolvedSubmodule};
use super::snapshot;
use super::submodules::{self, Progress};
use super::{Error, Selection, TreeOptions};
use crate::context::Context;
use crate::git::{self, Git, local};
use crate::hipify::reach::Watch;
use crate::hipify::{self, cache, leftover};
use crate::lock::{HipifyStamp, LockedProject, LockedSubmodule};
use crate::stack::{HipifyPolicy, LeftoverPolicy, Project};
use crate::ui::Task;

/// Seconds spent per phase of one project's checkout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Phases {
    /// Resolving refs and fetching into the cache (the project and its submodules).
    pub fetch: f64,
    /// Objects into the tree, checkout, upstream tag.
    pub tree: f64,
    /// Waiting for the submodules (they are checked out beside the other steps), and tagging
    /// them.
    pub submodules: f64,
    pub hipify: f64,
    /// Hipify commits, tags, stamps, the hipify cache.
    pub tags: f64,
    /// Checkout packs written into the cache for the next new tree of these commits (in
    /// `--report`, not in the summary table).
    pub cache: f64,
}

/// One row of the summary (and of `--report`).
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRow {
    pub project: String,
    pub reference: String,
    pub commit: String,
    pub submodules: usize,
    pub hipify: String,
    pub state: &'static str,
    /// Whether anything came from an origin (false: everything was in the cache).
    pub network: bool,
    pub seconds: f64,
    pub phases: Phases,
    /// CUDA-only includes left after hipify, reported (see `refuse_leftovers`).
    pub leftovers: Vec<String>,
}

pub struct Outcome {
    pub locked: LockedProject,
    pub row: SummaryRow,
}

/// Everything one project's apply needs.
pub struct Job<'a> {
    pub project: &'a Project,
    pub selection: &'a Selection,
    pub options: &'a TreeOptions,
    pub resolved: &'a Resolved,
    pub target: &'a Target,
    pub state: &'a TreeState,
    pub plan: &'a ProjectPlan,
}

pub fn project(ctx: &Context, job: &Job<'_>, task: &Task) -> anyhow::Result<Outcome> {
    let mut run = Run::start(ctx, job, task)?;
    if job.plan.action == Action::UpToDate {
        return run.up_to_date();
    }
    // From here until the stamp is written the tree is in flux.
    let marker = inspect::marker(run.dir);
    write(&marker, b"checkout in progress\n")?;
    snapshot::forget(run.dir)?;
    hipify::remove_stamp(run.dir)?;
    if job.state.interrupted {
        ctx.ui.warn(format!(
            "{}: the previous checkout of {} was interrupted; discarding its partial state",
            job.project.name,
            run.dir.display()
        ));
        clear_stale_locks(&run.dir.join(".git"))?;
    }
    let progress = Progress::default();
    std::thread::scope(|scope| {
        let result = run.steps(scope, &progress);
        if result.is_err() {
            // The submodule thread need not wait for the root's checkout.
            progress.abandon();
        }
        result
    })?;
    fs_err::remove_file(&marker)?;
    run.record_snapshot()?;
    run.lap(Phase::Tags);
    run.keep_checkout_packs()?;
    let state = match job.plan.action {
        Action::Fetch { .. } => "checked out",
        _ => "repaired",
    };
    run.outcome(state)
}

/// Which phase a step's time counts towards.
#[derive(Clone, Copy)]
enum Phase {
    Tree,
    Submodules,
    Hipify,
    Tags,
    Cache,
}

/// One project's apply in progress: the repository, its log, the phase clock and what the
/// steps found so far.
struct Run<'a> {
    ctx: &'a Context,
    job: &'a Job<'a>,
    task: &'a Task,
    dir: &'a Path,
    repo: Repository,
    git: Git,
    log: std::path::PathBuf,
    phases: Phases,
    clock: Instant,
    nodes: Vec<Node>,
    stamp: Option<HipifyStamp>,
    hipify_summary: String,
}

impl<'a> Run<'a> {
    fn start(ctx: &'a Context, job: &'a Job<'a>, task: &'a Task) -> anyhow::Result<Run<'a>> {
        let dir = job.target.dir.as_path();
        let repo = prepare(dir, &job.resolved.pin.origin, &job.target.files)?;
        let log = dir.join(".git/rockbuild/checkout.log");
        let _ = fs_err::remove_file(&log);
        let git = Git::new(dir, job.project.name.as_str())
            .log_to(&log)
            .allow_file_protocol(true);
        Ok(Run {
            ctx,
            job,
            task,
            dir,
            repo,
            git,
            log,
            phases: Phases {
                fetch: job.resolved.elapsed.as_secs_f64(),
                ..Phases::default()
            },
            clock: Instant::now(),
            nodes: Vec::new(),
            stamp: None,
            hipify_summary: "off".into(),
        })
    }

    /// Adds the time since the last lap to `phase`.
    fn lap(&mut self, phase: Phase) {
        let slot = match phase {
            Phase::Tree => &mut self.phases.tree,
            Phase::Submodules => &mut self.phases.submodules,
            Phase::Hipify => &mut self.phases.hipify,
            Phase::Tags => &mut self.phases.tags,
            Phase::Cache => &mut self.phases.cache,
        };
        *slot += self.clock.elapsed().as_secs_f64();
        self.clock = Instant::now();
    }

    /// The repositories of the checkout (the root, and submodules when they are on).
    fn nodes(&mut self) -> anyhow::Result<&[Node]> {
        if self.nodes.is_empty() {
            self.nodes = repos::discover(self.dir, !self.job.target.submodules.is_empty())?;
        }
        Ok(&self.nodes)
    }

    fn node_git(&self, rel: &str) -> Git {
        let dir = if rel.is_empty() || rel == "." {
            self.dir.to_path_buf()
        } else {
            self.dir.join(rel)
        };
        Git::new(dir, self.job.project.name.as_str()).log_to(&self.log)
    }

    /// A snapshot for the next run's up-to-date check, when the tree is clean by construction
    /// (every repository at a commit it was checked out or reset to; uncommitted hipify
    /// changes are recorded by the next run's status instead).
    fn record_snapshot(&mut self) -> anyhow::Result<()> {
        if has_script(self.job.target) && !self.job.target.commit_hipify {
            return Ok(());
        }
        let recurse = !self.job.target.submodules.is_empty();
        let nodes = repos::discover(self.dir, recurse)?;
        let rels: Vec<String> = nodes.iter().map(|n| n.rel.clone()).collect();
        // Clean by construction: the index's stat data is the tree's.
        let digests = snapshot::digests(self.dir, &rels, snapshot::Source::Index);
        let states: Vec<Option<NodeState>> = nodes
            .par_iter()
            .map(|node| inspect::node_state(&self.ctx.runner, node, true))
            .collect::<anyhow::Result<_>>()?;
        let states: Vec<NodeState> = states.into_iter().flatten().collect();
        snapshot::record(self.dir, recurse, &states, &digests)?;
        self.nodes = nodes;
        Ok(())
    }

    /// Gives every repository's commit a checkout pack in its mirror, so that the next new
    /// tree of these commits copies its files instead of inflating them (see
    /// `git/mirror/checkout_packs.rs`): the upstream commits' were written beside hipify, so
    /// what is left is mostly the hipify commits, each with its upstream commit as base.
    /// `--jobs` at a time.
    fn keep_checkout_packs(&mut self) -> anyhow::Result<()> {
        let job = self.job;
        let mut wanted = Vec::new();
        for node in self.nodes()? {
            let (mirror, upstream) = if node.rel.is_empty() {
                (&job.resolved.mirror, &job.target.commit)
            } else {
                match job.resolved.submodules.iter().find(|s| s.path == node.rel) {
                    Some(submodule) => (&submodule.mirror, &submodule.commit),
                    None => continue,
                }
            };
            let Some(head) = local::head_commit(&local::open(&node.dir)?) else {
                continue;
            };
            if !mirror.has_checkout_pack(head) && mirror.commit(&head.to_string()).is_some() {
                let base = (head.to_string() != *upstream).then_some(upstream.as_str());
                let node = (node.label().to_string(), node.dir.clone());
                wanted.push((mirror, head.to_string(), base, node));
            }
        }
        if !wanted.is_empty() {
            self.task.phase("checkout packs into the cache");
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(job.selection.jobs.max(1))
                .build()?;
            let ctx = self.ctx;
            pool.install(|| {
                wanted
                    .par_iter()
                    .for_each(|(mirror, head, base, (label, dir))| {
                        submodules::keep_checkout_pack(
                            ctx,
                            &job.project.name,
                            mirror,
                            (label, dir),
                            head,
                            *base,
                        );
                    });
            });
        }
        self.lap(Phase::Cache);
        Ok(())
    }

    fn up_to_date(mut self) -> anyhow::Result<Outcome> {
        let target = self.job.target;
        // The statuses this run read, with the digests taken before them.
        if !self.job.state.digests.is_empty() {
            let recurse = !self.job.target.submodules.is_empty();
            let state = self.job.state;
            snapshot::record(self.dir, recurse, &state.nodes, &state.digests)?;
        }
        let stamp = self.job.state.stamp.clone();
        ensure_tags(self.nodes()?, target, stamp.as_ref())?;
        write_files(target, self.dir)?;
        self.lap(Phase::Tags);
        self.stamp = self.job.state.stamp.clone().filter(|_| has_script(target));
        if let Some(stamp) = &self.stamp {
            refuse_leftovers(self.job, &stamp.leftovers)?;
        }
        self.hipify_summary = match &target.hipify {
            HipifyTarget::Run { .. } | HipifyTarget::Cached { .. } => "up to date".to_string(),
            HipifyTarget::NoScript { .. } => "no script".into(),
            HipifyTarget::Off if !target.files.is_empty() => CheckoutFile::paths(&target.files),
            HipifyTarget::Off => "off".into(),
        };
        self.outcome("up to date")
    }

    /// Whether the plan runs the hipify script (rather than taking its result from the cache).
    fn runs_script(&self) -> bool {
        self.job.plan.steps.iter().any(|s| {
            matches!(
                s,
                Step::Hipify {
                    how: HipifyStep::Run { .. }
                }
            )
        })
    }

    /// The plan's steps, the submodules on a thread of their own (the module's doc).
    fn steps<'scope>(
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
    fn spawn_submodules<'scope>(
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
    fn wait_for_submodules(
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
    fn join_submodules(&mut self, background: &mut Option<Background<'_>>) -> anyhow::Result<()> {
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

    fn step(&mut self, step: &Step) -> anyhow::Result<()> {
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
                self.task
                    .phase(format!("checking out {}", super::plan::short(commit)));
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

    /// Runs hipify or takes its result from the cache; then, with commits, moves every changed
    /// repository to its hipify commit, and records the stamp. A fresh result is returned for
    /// the cache. The script waits only for the submodules it edits; what follows it for all of
    /// them.
    fn hipify(
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
    fn run_hipify(
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
    fn run_in_reference_order(
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

    fn outcome(mut self, state: &'static str) -> anyhow::Result<Outcome> {
        self.nodes()?;
        let resolved = self.job.resolved;
        let leftovers = self
            .stamp
            .as_ref()
            .map(|stamp| stamp.leftovers.clone())
            .unwrap_or_default();
        let locked = locked_project(self.job.project, resolved, self.stamp.take());
        if !leftovers.is_empty() {
            self.hipify_summary.push_str(&format!(
                ", {} CUDA include{} left",
                leftovers.len(),
                crate::ui::plural(leftovers.len())
            ));
        }
        let row = SummaryRow {
            project: self.job.project.name.clone(),
            reference: resolved.pin.requested_ref.clone(),
            commit: resolved.commit.clone(),
            submodules: self
                .nodes
                .len()
                .saturating_sub(1)
                .max(locked.submodules.len()),
            hipify: self.hipify_summary,
            state,
            network: resolved.transferred,
            seconds: self.task.elapsed().as_secs_f64(),
            phases: self.phases,
            leftovers,
        };
        Ok(Outcome { locked, row })
    }
}

fn has_script(target: &Target) -> bool {
    matches!(
        target.hipify,
        HipifyTarget::Run { .. } | HipifyTarget::Cached { .. }
    )
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent)?;
    }
    fs_err::write(path, bytes)?;
    Ok(())
}

/// Removes the lock files a killed git left in the repositories of an interrupted checkout
/// (`index.lock`, `HEAD.lock`, …; a submodule can be cut off half-way now that it is written
/// beside hipify): git refuses to touch a repository that has one, and nothing else writes
/// there while this checkout holds the root's lock.
fn clear_stale_locks(git_dir: &Path) -> anyhow::Result<()> {
    let walk = walkdir::WalkDir::new(git_dir)
        .into_iter()
        .filter_entry(|e| !(e.file_type().is_dir() && e.file_name() == "objects"));
    for entry in walk {
        let entry = entry?;
        if entry.file_type().is_file() && entry.path().extension().is_some_and(|x| x == "lock") {
            fs_err::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// The repository: created, or pointed at the (possibly new) origin.
fn prepare(dir: &Path, origin: &str, files: &[CheckoutFile]) -> anyhow::Result<Repository> {
    fs_err::create_dir_all(dir)?;
    let repo = if dir.join(".git").exists() {
        local::open(dir)?
    } else {
        let mut options = git2::RepositoryInitOptions::new();
        options.initial_head("main").no_reinit(true);
        Repository::init_opts(dir, &options)
            .map_err(|e| git::Error::local(dir, "creating a git repository", e))?
    };
    local::set_config(&repo, "advice.detachedHead", "false")?;
    let set = match repo.find_remote("origin") {
        Ok(_) => repo.remote_set_url("origin", origin),
        Err(_) => repo.remote("origin", origin).map(|_| ()),
    };
    set.map_err(|e| git::Error::local(dir, "setting the origin", e))?;
    for file in files {
        exclude_locally(dir, &file.path)?;
    }
    fs_err::create_dir_all(dir.join(".git/rockbuild"))?;
    Ok(repo)
}

/// The repositories the hipify script may write into beside the submodules' protection and
/// settling: the root and the submodules it edits (`None`: the stack config does not say, so
/// any). Their indexes are rewritten by git, which re-hashes the files written in the index's
/// second; the others' by `local::rewrite_index`, which compares their stat data instead. A
/// script that reaches a submodule it is not listed for is noticed (`overlap`: the watch on
/// its Python, its failure, the statuses) and its work redone in the reference's order, every
/// file hashed first: a rewrite at the same size in the tick git wrote the file in would fool
/// the stat data.
struct ScriptReach(Option<Vec<String>>);

impl ScriptReach {
    fn reaches(&self, node: &Node) -> bool {
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
fn protect_submodules(
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
fn settle_indexes(
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

/// Whether hipify changed the repository at `rel` (the reference commits and tags those
/// only: repo_management.py's commit_hipify_module returns early on a clean status).
fn changed_by_hipify(stamp: &HipifyStamp, rel: &str) -> bool {
    if rel.is_empty() {
        stamp.result_tree != stamp.upstream_tree
    } else {
        stamp.submodule_trees.contains_key(rel)
    }
}

/// Up to date: the upstream and hipify tags where they belong (moving only what moved).
fn ensure_tags(nodes: &[Node], target: &Target, stamp: Option<&HipifyStamp>) -> anyhow::Result<()> {
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
struct Background<'scope> {
    /// Every repository of the tree, protected (see `spawn_submodules`).
    handle: ScopedJoinHandle<'scope, anyhow::Result<Vec<Node>>>,
    progress: &'scope Progress,
}

/// The submodules of this checkout the hipify script edits (`hipify: edits-submodules`);
/// `None` when the stack config does not say (then it waits for all of them).
pub(super) fn edited_submodules(job: &Job<'_>) -> Option<Vec<String>> {
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
fn top_level_of(submodules: &[ResolvedSubmodule], paths: &[String]) -> Vec<String> {
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

/// Runs the script on the pristine tree (the root and the submodules it edits), watched
/// when `watch` is given.
fn run_script(
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
fn is_cache_mismatch(error: &anyhow::Error) -> bool {
    matches!(
        error.downcast_ref::<hipify::Error>(),
        Some(hipify::Error::CacheMismatch { .. })
    )
}

/// Every repository back at its upstream commit and clean (parents first: a parent's checkout
/// leaves its submodules' trees alone), after a cached hipify result was checked out.
fn check_out_upstream(
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
fn changed_nodes(nodes: &[Node]) -> anyhow::Result<Vec<bool>> {
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
fn hipify_result(
    ctx: &Context,
    job: &Job<'_>,
    nodes: &[Node],
    changed: &[bool],
    script_sha256: &str,
    log: &Path,
) -> anyhow::Result<cache::Record> {
    let name = &job.project.name;
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
    if let Some((lock_file, pins)) = &job.selection.from_lock
        && let Some(expected) = pins.get(name.as_str()).and_then(|pin| pin.hipify.as_ref())
        && expected.script_sha256 == stamp.script_sha256
        && (expected.result_tree != stamp.result_tree
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
    Ok(cache::Record { stamp, commits })
}

/// Checks the cached hipify result out: in commit mode the root already is at its hipify
/// commit (the plan checked it out), submodules move to theirs; without commits, the files of
/// the hipify commits are restored over the upstream trees. The result must match the record.
fn from_cache(
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
fn check_leftovers(job: &Job<'_>, changed_paths: &[String]) -> anyhow::Result<Vec<String>> {
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
fn refuse_leftovers(job: &Job<'_>, leftovers: &[String]) -> anyhow::Result<()> {
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
struct Fresh {
    key: String,
    record: cache::Record,
}

/// Keeps a fresh hipify result for the next checkout of this tree with this script: the
/// commits into the mirrors of their repositories, then the record.
fn store_in_cache(ctx: &Context, job: &Job<'_>, fresh: &Fresh) -> anyhow::Result<()> {
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

fn write_files(target: &Target, dir: &Path) -> anyhow::Result<()> {
    for file in &target.files {
        crate::fsutil::write_if_changed(&dir.join(&file.path), file.content.as_bytes())?;
    }
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

/// The lock entry of a resolved project.
pub fn locked_project(
    project: &Project,
    resolved: &Resolved,
    hipify: Option<HipifyStamp>,
) -> LockedProject {
    LockedProject {
        checkout_dir: project.checkout_dir.clone(),
        origin: resolved.pin.origin.clone(),
        requested_ref: resolved.pin.requested_ref.clone(),
        commit: resolved.commit.clone(),
        tree: resolved.tree.clone(),
        pin: resolved.pin.pin.clone(),
        preset: resolved.preset.clone(),
        origin_flag: resolved.origin_flag.clone(),
        submodules: resolved
            .submodules
            .iter()
            .map(|s| LockedSubmodule {
                path: s.path.clone(),
                commit: s.commit.clone(),
                url: s.url.clone(),
            })
            .collect(),
        hipify,
    }
}

fn prefix(rel: &str) -> String {
    if rel.is_empty() {
        String::new()
    } else {
        format!("{rel}/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(rel: &str) -> Node {
        Node {
            rel: rel.into(),
            dir: std::path::PathBuf::from("/t").join(rel),
            recorded: String::new(),
            gitlinks: Vec::new(),
        }
    }

    #[test]
    fn the_script_reaches_the_root_and_what_it_is_listed_to_edit() {
        let listed = ScriptReach(Some(vec!["third_party/kineto".into()]));
        let reached: Vec<(&str, bool)> = [
            "",
            "third_party/kineto",
            "third_party/kineto/third_party/fmt",
            "third_party/kineto2",
            "third_party/XNNPACK",
        ]
        .into_iter()
        .map(|rel| (rel, listed.reaches(&node(rel))))
        .collect();
        assert_eq!(
            reached,
            [
                ("", true),
                ("third_party/kineto", true),
                ("third_party/kineto/third_party/fmt", true),
                ("third_party/kineto2", false),
                ("third_party/XNNPACK", false),
            ]
        );
        // Not listed at all: it may write anywhere.
        assert!(ScriptReach(None).reaches(&node("third_party/XNNPACK")));
    }
}
