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

mod hipify_step;
mod steps;

use hipify_step::*;
pub(in crate::checkout) use steps::edited_submodules;
use steps::*;

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
    crate::fsutil::write(path, bytes)?;
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
