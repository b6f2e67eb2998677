//! Running a plan: the lock records every computed version first, then the compiler cache is
//! readied, the DAG runs, and the report, the summary and the table tell what happened. A
//! failed project becomes part of one [`Error::Failed`], which keeps its error and the hints
//! of its recipe for `diagnostics` to render.

use std::path::Path;

use super::error::{Error, ProjectFailure};
use super::execute::{self, ProjectOutcome};
use super::plan::Plan;
use super::report::{self, BuildReport, SUMMARY_FILE, Status};
use super::split;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::lock::{BuildRecord, Lock};
use crate::recipes::WheelVersion;

/// What the lock records about a build before anything runs: every version known up front
/// (given or predicted), and the projects whose version the build decides, so a re-run from
/// the same lock names its wheels the same way. [`record_built`] completes it afterwards.
pub fn build_record(plan: &Plan, index_url: Option<String>) -> BuildRecord {
    BuildRecord {
        sdk_version: plan.sdk.info.version.clone(),
        index_url,
        sdk_targets: plan.sdk.info.targets.clone(),
        targets: plan.targets.targets.clone(),
        mode: plan.mode.mode,
        release_type: plan.release_type.as_str().to_string(),
        version_suffix: plan.suffix.clone(),
        // The record names wheels: a source component has no version in it.
        versions: plan
            .projects
            .iter()
            .filter(|p| p.dist.is_some())
            .filter_map(|p| Some((p.name.clone(), p.version.known()?.to_string())))
            .collect(),
        stems: plan
            .projects
            .iter()
            .filter_map(|p| {
                let dist = crate::wheel::filename::escape_name(p.dist.as_deref()?);
                Some((p.name.clone(), format!("{dist}-{}", p.version.known()?)))
            })
            .collect(),
        decided: plan
            .projects
            .iter()
            .filter(|p| p.dist.is_some())
            .filter_map(|p| match &p.version {
                WheelVersion::Decided { why } => Some((p.name.clone(), why.clone())),
                _ => None,
            })
            .collect(),
    }
}

/// Completes the record with what the build made of every version it was not handed: a
/// decided one, or a prediction the wheel did not bear out (then noted in `decided`). Returns
/// what changed, for people: `triton 3.5.0+… (decided by the build)`.
pub fn record_built(
    record: &mut BuildRecord,
    plan: &Plan,
    outcomes: &[ProjectOutcome],
) -> Vec<String> {
    let mut changed = Vec::new();
    for project in &plan.projects {
        let (Some(dist), Some(built)) = (
            project.dist.as_deref(),
            outcomes
                .iter()
                .find(|o| o.name == project.name)
                .and_then(|o| o.version.as_deref()),
        ) else {
            continue;
        };
        let note = match &project.version {
            WheelVersion::Given { .. } => continue,
            WheelVersion::Predicted { version, .. } if version == built => continue,
            WheelVersion::Predicted { version, from } => {
                let note = format!("predicted {version} ({from}); the build made {built}");
                record.decided.insert(project.name.clone(), note.clone());
                note
            }
            WheelVersion::Decided { .. } => "decided by the build".to_string(),
        };
        if record.versions.get(&project.name).map(String::as_str) != Some(built) {
            changed.push(format!("{} {built} ({note})", project.name));
        }
        record
            .versions
            .insert(project.name.clone(), built.to_string());
        let dist = crate::wheel::filename::escape_name(dist);
        record
            .stems
            .insert(project.name.clone(), format!("{dist}-{built}"));
    }
    changed
}

/// Records the plan in the lock (when there is one), runs it, and reports.
pub fn apply(
    ctx: &Context,
    plan: &Plan,
    lock: Option<(&Path, &Lock)>,
    index_url: Option<String>,
) -> anyhow::Result<ExitStatus> {
    let mut record = build_record(plan, index_url);
    if let Some((path, lock)) = lock {
        let mut lock = lock.clone();
        lock.build = Some(record.clone());
        lock.write(path)?;
    }
    let (reused, built): (Vec<_>, Vec<_>) = plan.projects.iter().partition(|p| p.reuse.is_some());
    let named = |projects: &[&super::plan::ProjectPlan]| {
        projects
            .iter()
            .map(|p| format!("{} {}", p.name, p.version.shown()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let reusing = if reused.is_empty() {
        String::new()
    } else {
        format!(
            "; left out, their wheels of an earlier build used as they are: {}",
            named(&reused)
        )
    };
    ctx.ui.status(format!(
        "building {} for {} with rocm {} ({} at a time){reusing}",
        named(&built),
        crate::stack::families::join(&plan.targets.targets),
        plan.sdk.info.version,
        plan.jobs
    ));
    let previous = if plan.clean {
        None
    } else {
        BuildReport::read(&plan.output_dir)
    };
    crate::fsutil::create_dirs_below(&plan.output_dir, &plan.logs_dir, None)?;
    let cache_log = plan.logs_dir.join("compiler-cache.log");
    for (cmd, tolerate) in plan.compiler_cache.before(&cache_log) {
        if let Err(error) = ctx.runner.run(&cmd)
            && !tolerate
        {
            return Err(error.into());
        }
    }
    split::restore_fat(plan)?;
    let started_at = jiff::Timestamp::now();
    let clock = std::time::Instant::now();
    let outcomes = execute::execute(ctx, plan, previous.as_ref())?;
    let wall = clock.elapsed();
    let stats = compiler_stats(ctx, plan, &cache_log);
    let mut report = report::of_build(plan, &outcomes, started_at, wall, stats);
    // The split's outcome goes in the report; the report is written either way.
    let split = if ctx.runner.interrupted().is_none() {
        split::split_built(ctx, plan, &outcomes)
    } else {
        Ok(Vec::new())
    };
    for (project, split) in split.as_deref().unwrap_or_default() {
        if let Some(entry) = report.projects.get_mut(project) {
            entry.split = Some(split.clone());
        }
    }
    show(ctx, plan, &report)?;
    // What the build decided goes into the lock, so verify, stage and promote check against
    // the wheels as built.
    let decided = record_built(&mut record, plan, &outcomes);
    if let Some((path, lock)) = lock
        && !decided.is_empty()
    {
        let mut lock = lock.clone();
        lock.build = Some(record);
        lock.write(path)?;
        ctx.ui.status(format!(
            "{} records the versions the build decided: {}",
            path.display(),
            decided.join(", ")
        ));
    }
    split?;
    failures(ctx, plan, outcomes)
}

/// The compiler cache's statistics for this build, shown in a group; a failure to read them
/// is a warning.
fn compiler_stats(ctx: &Context, plan: &Plan, log: &Path) -> Option<String> {
    let cmd = plan.compiler_cache.stats(log)?;
    match ctx.runner.run(&cmd) {
        Ok(output) => {
            ctx.ui.group(
                &format!(
                    "{} statistics",
                    plan.compiler_cache.name().unwrap_or_default()
                ),
                output.stdout.trim_end(),
            );
            Some(output.stdout)
        }
        Err(error) => {
            ctx.ui.warn(format!(
                "could not read the compiler cache statistics: {error}"
            ));
            None
        }
    }
}

/// Writes the report and the Markdown summary, and prints the table.
fn show(ctx: &Context, plan: &Plan, report: &BuildReport) -> anyhow::Result<()> {
    let report_path = report.write(&plan.output_dir)?;
    let markdown = report.markdown();
    crate::fsutil::write_atomic(
        &plan.output_dir.join(SUMMARY_FILE),
        markdown.as_str().as_bytes(),
    )?;
    ctx.ui.step_summary(&markdown);
    let rows: Vec<Vec<String>> = report
        .projects
        .iter()
        .map(|(name, p)| {
            vec![
                name.clone(),
                p.status.as_str().into(),
                p.version.clone(),
                p.wheel.clone().unwrap_or_else(|| "-".into()),
                format!("{:.1}s", p.duration_seconds),
            ]
        })
        .collect();
    ctx.ui.status(crate::ui::text_table(
        &["project", "status", "version", "wheel", "time"],
        &rows,
    ));
    ctx.ui.status(format!(
        "wall {:.1}s (critical path {:.1}s, serial {:.1}s); report {}; wheels in {}",
        report.wall_seconds,
        report.critical_path_seconds,
        report.serial_seconds,
        report_path.display(),
        plan.output_dir.display()
    ));
    Ok(())
}

/// Success, the signal that stopped the build, or every failure as one error.
fn failures(
    ctx: &Context,
    plan: &Plan,
    outcomes: Vec<ProjectOutcome>,
) -> anyhow::Result<ExitStatus> {
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    for outcome in outcomes {
        match (outcome.status, outcome.error) {
            (Status::Failed, Some(error)) => {
                if execute::interrupted(&error) {
                    return Err(error);
                }
                let hints = plan
                    .projects
                    .iter()
                    .find(|p| p.name == outcome.name)
                    .map_or(&[][..], |p| p.hints);
                failures.push(ProjectFailure {
                    name: outcome.name,
                    error,
                    hints,
                });
            }
            (Status::Skipped, _) => skipped.push(outcome.name),
            _ => {}
        }
    }
    if let Some(signal) = ctx.runner.interrupted() {
        return Ok(ExitStatus::Signal(signal));
    }
    if !failures.is_empty() {
        return Err(Error::Failed {
            failures,
            skipped,
            total: plan.projects.len(),
        }
        .into());
    }
    Ok(ExitStatus::Success)
}
