//! The checkout stage: every selected project of the stack at once, each on its own thread.
//! Projects pinned by another (audio, vision, apex and triton by torch) start as soon as the
//! pinning project's commit is fetched. When every project succeeded the lock is written
//! atomically; a failed run leaves the previous lock untouched.

pub mod lockonly;
mod pins;
pub mod project;
mod repos;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use indexmap::IndexMap;

use crate::context::Context;
use crate::exit::ExitStatus;
use crate::git::TransferLimits;
use crate::lock::Lock;
use crate::lock::manifest::ReproducePin;
use crate::lock::resolve::Overrides;
use crate::stack::Project;
use crate::stack::Stack;
use crate::ui::Task;
use pins::PinBoard;
use project::{Job, Outcome, SummaryRow};

pub use repos::resolve_submodule_url;

/// What to resolve: shared by `checkout` and `lock`.
#[derive(Debug)]
pub struct Selection {
    pub stack: Stack,
    /// Selected projects, in stack order.
    pub projects: Vec<String>,
    /// The root directory (default lock location; pins of unselected projects).
    pub root: PathBuf,
    pub overrides: IndexMap<String, Overrides>,
    pub release: bool,
    pub require_related_commit: bool,
    /// The lock or manifest being reproduced, and its pins.
    pub from_lock: Option<(PathBuf, IndexMap<String, ReproducePin>)>,
    pub submodules: bool,
    pub jobs: usize,
    pub limits: TransferLimits,
    pub lock_path: PathBuf,
}

/// Everything a checkout run needs, resolved once from flags, environment and config.
#[derive(Debug)]
pub struct Settings {
    pub selection: Selection,
    /// Checkout directory per selected project (absolute).
    pub dirs: IndexMap<String, PathBuf>,
    pub depth: Option<u32>,
    pub hipify: bool,
    pub commit_hipify: bool,
    pub python: PathBuf,
    pub force: bool,
}

/// Checks out the selected projects concurrently, prints the summary, writes the lock.
pub fn run(settings: &Settings, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let outcomes = run_projects(
        &settings.selection,
        ctx,
        |project, pins_from, posts_to, task| {
            let job = Job {
                project,
                dir: settings.dirs[&project.name].clone(),
                settings,
                pins_from,
                posts_to,
            };
            project::run(&job, ctx, task)
        },
    )?;
    finish(&settings.selection, ctx, outcomes)
}

/// Runs `work` for every selected project on its own thread, wiring pin boards between
/// pinning and pinned projects. Returns the outcomes in stack order, or every failure.
pub(crate) fn run_projects<F>(
    selection: &Selection,
    ctx: &Context,
    work: F,
) -> anyhow::Result<Vec<Outcome>>
where
    F: Fn(&Project, Option<&PinBoard>, Option<&PinBoard>, &Task) -> anyhow::Result<Outcome> + Sync,
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
            project::pin_files_for_absent(p, selection)
                .map(|files| (p.name.clone(), PinBoard::ready(files)))
        })
        .collect();
    let tasks: IndexMap<String, Task> = selection
        .projects
        .iter()
        .map(|name| (name.clone(), ctx.ui.task(name)))
        .collect();

    let results: Vec<(String, anyhow::Result<Outcome>)> = std::thread::scope(|scope| {
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
                    match &result {
                        Ok(outcome) => task.finish(format!(
                            "{} {} ({})",
                            outcome.row.state,
                            project::short(&outcome.row.commit),
                            outcome.row.hipify
                        )),
                        Err(_) => task.finish("failed"),
                    }
                    result
                });
                (name.clone(), handle)
            })
            .collect();
        handles
            .into_iter()
            .map(|(name, handle)| {
                let result = handle
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("the thread of '{name}' panicked")));
                (name, result)
            })
            .collect()
    });

    let mut outcomes = Vec::new();
    let mut failures = Vec::new();
    for (name, result) in results {
        match result {
            Ok(outcome) => outcomes.push(outcome),
            Err(error) => failures.push((name, error)),
        }
    }
    ctx.ui.clear_progress();
    if !outcomes.is_empty() {
        print_summary(
            ctx,
            &outcomes.iter().map(|o| o.row.clone()).collect::<Vec<_>>(),
        );
    }
    if !failures.is_empty() {
        return Err(combine_failures(ctx, selection, failures));
    }
    Ok(outcomes)
}

/// Writes the lock from the outcomes and says where it is.
pub(crate) fn finish(
    selection: &Selection,
    ctx: &Context,
    outcomes: Vec<Outcome>,
) -> anyhow::Result<ExitStatus> {
    let locked = outcomes
        .into_iter()
        .map(|o| (o.row.project.clone(), o.locked))
        .collect();
    write_lock(selection, locked)?;
    ctx.ui
        .status(format!("lock: {}", selection.lock_path.display()));
    Ok(ExitStatus::Success)
}

/// Writes the lock, keeping entries of projects not selected in this run when the existing
/// lock describes the same stack.
fn write_lock(
    selection: &Selection,
    locked: IndexMap<String, crate::lock::LockedProject>,
) -> anyhow::Result<()> {
    let mut lock = match Lock::read(&selection.lock_path) {
        Ok(existing) if existing.stack == selection.stack.source_name => existing,
        _ => Lock::new(&selection.stack.source_name),
    };
    lock.generated_by = Lock::new("").generated_by;
    // Sources changed: whatever a previous build resolved no longer applies.
    if locked
        .iter()
        .any(|(name, project)| lock.projects.get(name) != Some(project))
    {
        lock.build = None;
    }
    for (name, project) in locked {
        lock.projects.insert(name, project);
    }
    let order: Vec<String> = selection.stack.projects.keys().cloned().collect();
    lock.projects
        .sort_by_key(|name, _| order.iter().position(|n| n == name).unwrap_or(usize::MAX));
    lock.write(&selection.lock_path)
}

/// Reports every failed project; the exit status is a usage error only when every failure
/// is one (a bad ref, a dirty tree), otherwise a step failure.
fn combine_failures(
    ctx: &Context,
    selection: &Selection,
    failures: Vec<(String, anyhow::Error)>,
) -> anyhow::Error {
    let all_usage = failures.iter().all(|(_, e)| {
        matches!(
            crate::diagnostics::exit_status_of(ctx, e),
            ExitStatus::Usage
        )
    });
    let names: Vec<&str> = failures.iter().map(|(n, _)| n.as_str()).collect();
    let mut message = format!(
        "checkout failed for {}; the lock {} was not written",
        names.join(", "),
        selection.lock_path.display()
    );
    for (name, error) in &failures {
        let text = crate::diagnostics::render(error).replacen("error: ", "", 1);
        ctx.ui
            .error_annotation(&format!("checkout of {name} failed"), &text);
        message.push_str(&format!("\n\n[{name}] {}", text.replace('\n', "\n  ")));
    }
    if all_usage {
        crate::exit::usage(message)
    } else {
        anyhow::anyhow!(message)
    }
}

fn print_summary(ctx: &Context, rows: &[SummaryRow]) {
    let headers = [
        "project",
        "ref",
        "commit",
        "submodules",
        "hipify",
        "state",
        "time",
    ];
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
                project::short(&row.commit).to_string(),
                row.submodules.to_string(),
                row.hipify.clone(),
                row.state.to_string(),
                format_duration(row.elapsed),
            ]
        })
        .collect();
    ctx.ui.status(crate::ui::text_table(&headers, &table));
    ctx.ui.step_summary(&format!(
        "### rockbuild checkout\n\n{}",
        crate::ui::markdown_table(&headers, &table)
    ));
}

fn format_duration(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

/// The lock path default: `<root>/rockbuild.lock.json`.
pub fn default_lock_path(root: &std::path::Path) -> PathBuf {
    root.join(crate::lock::DEFAULT_FILE_NAME)
}

/// Reads `--from-lock` pins (a rockbuild lock or a TheRock manifest).
pub fn read_from_lock(
    path: &std::path::Path,
    stack: &Stack,
) -> anyhow::Result<IndexMap<String, ReproducePin>> {
    crate::lock::manifest::read_pins(path, stack)
        .with_context(|| format!("reading {}", path.display()))
}
