//! The checkout stage: resolve → inspect → plan → apply, every project on its own thread.
//!
//! - resolve ([`resolve`]): each project's origin and ref (flags, preset, pins), fetched into the
//!   mirror cache with every submodule; projects pinned by another (audio, vision, apex and
//!   triton by torch) start as soon as the pinning commit is in the cache. `lock` stops here.
//! - inspect ([`inspect`]): what the tree must become and what the directory holds.
//! - plan ([`plan`], pure): up to date, fetch or repair, with steps.
//! - apply ([`apply`]): the steps, timed per phase.
//!
//! When every project succeeded the lock is written atomically; a failed run leaves the
//! previous lock untouched.

pub mod apply;
mod error;
pub mod inspect;
pub mod lockfile;
mod overlap;
mod pins;
pub mod plan;
mod repos;
pub mod resolve;
mod snapshot;
mod submodules;

use std::path::{Path, PathBuf};

use indexmap::IndexMap;

use crate::context::Context;
use crate::git::TransferLimits;
use crate::lock::manifest::ReproducePin;
use crate::lock::resolve::Request;
use crate::lock::{BuildRecord, Lock, LockedProject};
use crate::recipes::Recipes;
use crate::stack::{Project, Stack};
use crate::ui::Task;
use apply::{Outcome, SummaryRow};
pub use error::Error;
use pins::{PinBoard, PinFiles};
use plan::{CheckoutPlan, LockBefore, ProjectPlan};
pub use repos::resolve_submodule_url;
use resolve::Resolved;

/// What to resolve: shared by `checkout` and `lock`, made by their settings.
#[derive(Debug)]
pub struct Selection {
    pub stack: Stack,
    /// Selected projects, in stack order.
    pub projects: Vec<String>,
    /// The root directory (pins of unselected projects come from its checkouts).
    pub root: PathBuf,
    /// Origin and ref rule per selected project (unused when reproducing a lock).
    pub requests: IndexMap<String, Request>,
    /// Which preset applies and why.
    pub preset: Option<String>,
    pub release: bool,
    /// The lock or manifest being reproduced (its path, or the masked URL `--manifest-url`
    /// downloaded it from: what the lock records as the pins' source), and its pins.
    pub from_lock: Option<(PathBuf, IndexMap<String, ReproducePin>)>,
    pub submodules: bool,
    pub depth: Option<u32>,
    pub jobs: usize,
    pub limits: TransferLimits,
    pub cache_dir: PathBuf,
    /// A cache made for this run alone (the default one could not be used): removed when the
    /// selection is dropped, at the end of the run.
    pub _temporary_cache: Option<tempfile::TempDir>,
    /// The lock this run writes (named when the run fails: it is then left as it was).
    pub lock_path: PathBuf,
}

/// What `checkout` does to the trees (beyond resolving).
#[derive(Debug)]
pub struct TreeOptions {
    /// Checkout directory per selected project (absolute).
    pub dirs: IndexMap<String, PathBuf>,
    pub hipify: bool,
    pub commit_hipify: bool,
    pub python: PathBuf,
    pub force: bool,
    /// Leftover CUDA includes fail the checkout of every project (`--strict`), not only of
    /// those whose config says `leftover-cuda: refuse`.
    pub strict: bool,
}

/// What a checkout run produced: the plan alone (`--dry-run`), or the outcomes.
pub enum Checkout {
    Planned(CheckoutPlan),
    Done(Vec<Outcome>),
}

/// Resolves, inspects and plans every selected project, then (unless `dry_run`) applies.
/// `recipes` name the files a project's checkout writes (`hipify: {mode: recipe-files}`).
pub fn checkout(
    selection: &Selection,
    options: &TreeOptions,
    dry_run: bool,
    ctx: &Context,
    recipes: &Recipes,
) -> anyhow::Result<Checkout> {
    let results = run_projects(
        "checkout",
        selection,
        ctx,
        |project, pins_from, posts_to, task| {
            let resolved = resolve::project(ctx, selection, project, pins_from, posts_to, task)?;
            let dir = &options.dirs[&project.name];
            let target = inspect::target(
                project,
                recipes,
                &selection.stack,
                &resolved,
                dir,
                options,
                &selection.cache_dir,
            )?;
            let state = inspect::tree(&ctx.runner, dir, !target.submodules.is_empty())?;
            // A dry run reports the world as it is: a tree the checkout would refuse is a
            // line of the plan, not a failure.
            let plan = match plan::project(&target, &state) {
                Err(Error::Dirty { changes, .. }) if dry_run => plan::refused(&target, changes),
                plan => plan?,
            };
            if dry_run {
                task.finish(plan_line(&plan));
                return Ok((plan, None));
            }
            let outcome = apply::project(
                ctx,
                &apply::Job {
                    project,
                    selection,
                    options,
                    resolved: &resolved,
                    target: &target,
                    state: &state,
                    plan: &plan,
                },
                task,
            )?;
            let row = &outcome.row;
            // An up-to-date tree's hipify is up to date too: said once.
            task.finish(if row.hipify == row.state {
                format!("{} {}", row.state, plan::short(&row.commit))
            } else {
                format!(
                    "{} {} ({})",
                    row.state,
                    plan::short(&row.commit),
                    row.hipify
                )
            });
            Ok((plan, Some(outcome)))
        },
    )?;
    let mut plans = Vec::new();
    let mut outcomes = Vec::new();
    for (plan, outcome) in results {
        plans.push(plan);
        outcomes.extend(outcome);
    }
    if dry_run {
        let lock = lock_before(selection, &plans);
        return Ok(Checkout::Planned(CheckoutPlan {
            preset: selection.preset.clone(),
            projects: plans,
            lock,
        }));
    }
    Ok(Checkout::Done(outcomes))
}

/// The lock at the path a checkout writes, when the checkout resolves refs instead of
/// reproducing it (a dry run shows what its pins become; build reads that lock by default).
fn lock_before(selection: &Selection, plans: &[ProjectPlan]) -> Option<LockBefore> {
    if selection.from_lock.is_some() || !selection.lock_path.exists() {
        return None;
    }
    let (pins, unreadable) = match Lock::read(&selection.lock_path) {
        Ok(lock) => {
            let pins = plans
                .iter()
                .map(|plan| {
                    let commit = lock.projects.get(&plan.project).map(|p| p.commit.clone());
                    (plan.project.clone(), commit)
                })
                .collect();
            (pins, None)
        }
        Err(error) => (IndexMap::new(), Some(error.to_string())),
    };
    Some(LockBefore {
        path: selection.lock_path.display().to_string(),
        unreadable,
        pins,
    })
}

fn plan_line(plan: &ProjectPlan) -> String {
    match &plan.action {
        plan::Action::UpToDate => "up to date".into(),
        plan::Action::Fetch { .. } => format!("would fetch {}", plan::short(&plan.commit)),
        plan::Action::Repair { .. } => format!("would repair at {}", plan::short(&plan.commit)),
        plan::Action::Refuse { changes } => format!(
            "would refuse {} uncommitted change{}",
            changes.len(),
            crate::ui::plural(changes.len())
        ),
    }
}

/// Resolves every selected project into the cache, without working trees (`lock`).
pub fn resolve_all(selection: &Selection, ctx: &Context) -> anyhow::Result<Vec<Resolved>> {
    run_projects(
        "lock",
        selection,
        ctx,
        |project, pins_from, posts_to, task| {
            let resolved = resolve::project(ctx, selection, project, pins_from, posts_to, task)?;
            task.finish(format!("resolved {}", plan::short(&resolved.commit)));
            Ok(resolved)
        },
    )
}

/// Runs `work` for every selected project on its own thread, wiring pin boards between
/// pinning and pinned projects. Returns the results in stack order, or every failure.
fn run_projects<T, F>(
    verb: &str,
    selection: &Selection,
    ctx: &Context,
    work: F,
) -> anyhow::Result<Vec<T>>
where
    T: Send,
    F: Fn(&Project, Option<&PinBoard>, Option<&PinBoard>, &Task) -> anyhow::Result<T> + Sync,
{
    let selected = |name: &str| selection.projects.iter().any(|s| s == name);
    // One board per pinning project that is part of this run...
    let boards: IndexMap<String, PinBoard> = selection
        .projects
        .iter()
        .filter_map(|name| selection.stack.projects[name].pin.pinned_by())
        .filter(|from| selected(from))
        .map(|from| (from.to_string(), PinBoard::default()))
        .collect();
    // ...and, for pinning projects outside it, their existing checkout (or nothing).
    let outside: IndexMap<String, PinBoard> = selection
        .projects
        .iter()
        .map(|name| &selection.stack.projects[name])
        .filter(|p| p.pin.pinned_by().is_some_and(|from| !selected(from)))
        .filter_map(|p| {
            pin_files_for_absent(p, selection).map(|files| (p.name.clone(), PinBoard::ready(files)))
        })
        .collect();
    let tasks: IndexMap<String, Task> = selection
        .projects
        .iter()
        .map(|name| (name.clone(), ctx.ui.task(name)))
        .collect();

    let results: Vec<(String, anyhow::Result<T>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = selection
            .projects
            .iter()
            .map(|name| {
                let project = &selection.stack.projects[name];
                let pins_from = project
                    .pin
                    .pinned_by()
                    .and_then(|from| boards.get(from))
                    .or_else(|| outside.get(name));
                let posts_to = boards.get(name);
                let task = &tasks[name];
                let work = &work;
                let handle = scope.spawn(move || {
                    let result = work(project, pins_from, posts_to, task);
                    // A project that fails before posting must not leave dependents waiting.
                    if let Some(board) = posts_to {
                        board.post(Err(format!(
                            "'{}' failed before its pins could be read",
                            project.name
                        )));
                    }
                    if result.is_err() {
                        task.finish("failed");
                    }
                    result
                });
                (name.clone(), handle)
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, handle)| {
                let result = handle.join().unwrap_or_else(|_| {
                    Err(Error::Panicked {
                        project: name.clone(),
                    }
                    .into())
                });
                (name, result)
            })
            .collect()
    });
    ctx.ui.clear_progress();
    let mut done = Vec::new();
    let mut failures = Vec::new();
    for (name, result) in results {
        match result {
            Ok(value) => done.push(value),
            Err(error) => failures.push((name, error)),
        }
    }
    if failures.is_empty() {
        Ok(done)
    } else {
        // Every failed project in one error, each project's error kept for diagnostics.
        Err(Error::Failed {
            verb: verb.to_string(),
            lock: selection.lock_path.clone(),
            failures,
        }
        .into())
    }
}

/// Projects pinned by a project not in this run read the pins from its existing checkout (as
/// the reference does with `--torch-dir`), or from nothing.
fn pin_files_for_absent(project: &Project, selection: &Selection) -> Option<PinFiles> {
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

/// The summary table (stderr) and the step summary (GitHub Actions).
pub fn print_summary(ctx: &Context, title: &str, rows: &[SummaryRow]) {
    let headers = [
        "project",
        "ref",
        "commit",
        "submodules",
        "hipify",
        "state",
        "fetch",
        "tree",
        "subs",
        "hipify",
        "tags",
        "total",
    ];
    let seconds = |s: f64| format!("{s:.1}s");
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            vec![
                row.project.clone(),
                // A pinned SHA is already in the commit column; keep the table narrow.
                if crate::git::is_full_sha(&row.reference) {
                    "(pinned)".to_string()
                } else {
                    row.reference.clone()
                },
                plan::short(&row.commit).to_string(),
                row.submodules.to_string(),
                row.hipify.clone(),
                row.state.to_string(),
                seconds(row.phases.fetch),
                seconds(row.phases.tree),
                seconds(row.phases.submodules),
                seconds(row.phases.hipify),
                seconds(row.phases.tags),
                seconds(row.seconds),
            ]
        })
        .collect();
    ctx.ui.status(crate::ui::text_table(&headers, &table));
    let mut summary = crate::ui::Markdown::lit("### rockbuild ");
    summary
        .push_text(title)
        .push_lit("\n\n")
        .push(crate::ui::markdown_table(&headers, &table));
    for row in rows.iter().filter(|row| !row.leftovers.is_empty()) {
        let count = row.leftovers.len();
        ctx.ui.warn(format!(
            "{}: hipify left {count} CUDA-only include{} (reported, not refused; `--strict` fails \
             the checkout on them):\n    {}",
            row.project,
            crate::ui::plural(count),
            shown(&row.leftovers)
        ));
        summary
            .push_lit("\n**")
            .push_text(&row.project)
            .push_lit("**: ")
            .push_text(&format!(
                "{count} CUDA-only include{} left after hipify",
                crate::ui::plural(count)
            ))
            .push_lit("\n\n")
            .push(crate::ui::Markdown::join(
                row.leftovers.iter().map(|leftover| {
                    let mut item = crate::ui::Markdown::lit("- ");
                    item.push(crate::ui::Markdown::code(leftover));
                    item
                }),
                "\n",
            ))
            .push_lit("\n");
    }
    ctx.ui.step_summary(&summary);
}

/// The first leftovers of a list, one per line, and how many more the lock and report hold.
fn shown(leftovers: &[String]) -> String {
    const SHOWN: usize = 20;
    let mut text = leftovers
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n    ");
    if leftovers.len() > SHOWN {
        text.push_str(&format!(
            "\n    … and {} more (the lock and `--report` list every one)",
            leftovers.len() - SHOWN
        ));
    }
    text
}

/// The lock this run writes: its projects over the existing lock (or the lock being
/// reproduced) when that describes the same stack. A build record survives only if every
/// project's sources are unchanged; a new one replaces it.
pub fn merged_lock(
    selection: &Selection,
    path: &Path,
    locked: IndexMap<String, LockedProject>,
    build: Option<BuildRecord>,
) -> Lock {
    let reproduced = selection
        .from_lock
        .as_ref()
        .and_then(|(file, _)| Lock::read(file).ok());
    let mut lock = match reproduced.or_else(|| Lock::read(path).ok()) {
        Some(existing) if existing.stack == selection.stack.source_name => existing,
        _ => Lock::new(&selection.stack.source_name),
    };
    lock.generated_by = Lock::new("").generated_by;
    let same_sources = |a: &LockedProject, b: &LockedProject| {
        a.commit == b.commit && a.tree == b.tree && a.submodules == b.submodules
    };
    if locked.iter().any(|(name, project)| {
        !lock
            .projects
            .get(name)
            .is_some_and(|old| same_sources(old, project))
    }) {
        lock.build = None;
    }
    for (name, project) in locked {
        lock.projects.insert(name, project);
    }
    if build.is_some() {
        lock.build = build;
    }
    let order: Vec<String> = selection.stack.projects.keys().cloned().collect();
    lock.projects
        .sort_by_key(|name, _| order.iter().position(|n| n == name).unwrap_or(usize::MAX));
    lock
}

/// Writes [`merged_lock`] atomically and returns it.
pub fn write_lock(
    selection: &Selection,
    path: &Path,
    locked: IndexMap<String, LockedProject>,
    build: Option<BuildRecord>,
) -> anyhow::Result<Lock> {
    let lock = merged_lock(selection, path, locked, build);
    lock.write(path)?;
    Ok(lock)
}
