//! `rockbuild verify [WHEEL|DIR]... [--lock FILE] [--targets gfxA,gfxB] [--index-url URL]
//! [--json]`: every problem of every wheel on stderr, the report as JSON on stdout, exit 5
//! when anything is wrong.

use std::path::{Path, PathBuf};

use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::exit::{self, ExitStatus};
use crate::lock::Lock;
use crate::stack::{self, FamilyTable, Stack};
use crate::ui::{self, human_bytes, plural};
use crate::wheel::verify::{VerifyError, VerifyOptions, VerifyReport, collect_wheels, verify_set};

/// A wheel with thousands of problems (an empty RECORD) should not bury the others.
const SHOWN_PER_WHEEL: usize = 40;

pub fn run(args: VerifyArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let VerifyArgs {
        paths,
        lock,
        targets,
        index_url,
        json,
        allow_linux_tag,
        config,
    } = args;
    let stack = config.stack(ctx)?;
    let table = config.family_table(ctx)?;
    let (mut options, _) = expectations(
        ctx,
        &stack,
        &table,
        lock.as_deref(),
        targets.as_deref(),
        index_url,
    )?;
    options.allow_linux_tag = allow_linux_tag;

    let inputs: Vec<_> = paths.iter().map(|p| ctx.absolute(p)).collect();
    let wheels = collect(&inputs)?;
    let report = verify_wheels(ctx, &wheels, &options)?;
    if json {
        let mut text = serde_json::to_string_pretty(&report)?;
        text.push('\n');
        ctx.ui.data(&text);
    }
    Ok(if report.ok {
        ExitStatus::Success
    } else {
        ExitStatus::VerificationFailed
    })
}

/// What a set is verified against: the lock's build record (targets, versions, the SDK's
/// index), `--targets` over the lock's targets (with a warning), `--index-url` over the
/// lock's index. Also says where the targets came from, when there are any.
pub(super) fn expectations(
    ctx: &Context,
    stack: &Stack,
    table: &FamilyTable,
    lock: Option<&Path>,
    targets: Option<&str>,
    index_url: Option<String>,
) -> anyhow::Result<(VerifyOptions, Option<String>)> {
    let recipes = crate::build::recipes::Recipes::builtin().wheel_expectations(stack)?;
    let mut options = VerifyOptions::for_stack(stack, recipes);
    let mut targets_from = None;
    let mut lock_index = None;
    if let Some(lock_path) = lock {
        let lock_path = ctx.absolute(lock_path);
        let lock = Lock::read(&lock_path)?;
        options
            .expect_lock(&lock, stack)
            .map_err(|e| exit::usage(format!("{}: {e}", lock_path.display())))?;
        if let Some(build) = &lock.build {
            targets_from = Some(format!("the build record of {}", lock_path.display()));
            // The lock keeps the URL with its password masked; such a URL cannot be read.
            lock_index = build
                .index_url
                .clone()
                .filter(|url| !crate::redact::is_masked(url));
        }
    }
    if let Some(list) = targets {
        let given = table
            .targets(list)
            .map_err(|e| exit::usage(format!("--targets: {e}")))?;
        if !options.targets.is_empty() && options.targets != given {
            ctx.ui.warn(format!(
                "--targets {} replaces the lock's targets {}",
                stack::families::join(&given),
                stack::families::join(&options.targets)
            ));
        }
        options.targets = given;
        targets_from = Some("--targets".into());
    }
    options.index_url = index_url.or(lock_index);
    Ok((options, targets_from))
}

/// The wheels of the command line's files and directories. A directory without wheels is a
/// failed verification (exit 5: an empty build output is not a pass, W5); a path that does
/// not exist is a usage error.
pub(super) fn collect(inputs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    collect_wheels(inputs).map_err(|error| match error {
        VerifyError::EmptyDirectory(_) => {
            exit::classified(ExitStatus::VerificationFailed, error.to_string())
        }
        other => exit::usage(other.to_string()),
    })
}

/// Verifies a set with a progress line, then shows every problem (stderr, GitHub
/// annotations, step summary). What a failed verification means is the caller's to say.
pub(super) fn verify_wheels(
    ctx: &Context,
    wheels: &[PathBuf],
    options: &VerifyOptions,
) -> anyhow::Result<VerifyReport> {
    let bytes: u64 = wheels
        .iter()
        .filter_map(|w| fs_err::metadata(w).ok())
        .map(|m| m.len())
        .sum();
    let targets_text = if options.targets.is_empty() {
        "no gfx targets requested".to_string()
    } else {
        format!("targets {}", stack::families::join(&options.targets))
    };
    let task = ctx.ui.task("verify");
    task.phase(format!(
        "{} wheel{} ({}), {targets_text}",
        wheels.len(),
        plural(wheels.len()),
        human_bytes(bytes)
    ));
    let report = verify_set(wheels, options).map_err(|e| exit::usage(e.to_string()))?;
    task.finish(format!(
        "{} wheel{} in {:.1}s",
        wheels.len(),
        plural(wheels.len()),
        task.elapsed().as_secs_f64()
    ));
    print_report(ctx, &report, &targets_text);
    Ok(report)
}

fn print_report(ctx: &Context, report: &VerifyReport, targets_text: &str) {
    let mut rows = Vec::new();
    for wheel in &report.wheels {
        let gpu: Vec<&crate::wheel::verify::LibraryReport> =
            wheel.libraries.iter().filter(|l| l.bundles > 0).collect();
        let mut targets: Vec<&str> = gpu
            .iter()
            .flat_map(|l| l.targets.iter().map(String::as_str))
            .collect();
        targets.sort_unstable();
        targets.dedup();
        let gpu_text = if gpu.is_empty() {
            String::new()
        } else {
            format!(
                ", {} GPU librar{}: {}",
                gpu.len(),
                if gpu.len() == 1 { "y" } else { "ies" },
                targets.join(" ")
            )
        };
        if wheel.ok() {
            ctx.ui.status(format!(
                "  ok    {}  ({} files{gpu_text})",
                wheel.file, wheel.entries
            ));
        } else {
            ctx.ui.status(format!(
                "  FAIL  {}  {} problem{}",
                wheel.file,
                wheel.problems.len(),
                plural(wheel.problems.len())
            ));
            for problem in wheel.problems.iter().take(SHOWN_PER_WHEEL) {
                ctx.ui.status(format!("        {problem}"));
                ctx.ui.error_annotation(
                    &format!("verify: {}", problem.kind()),
                    &format!("{}: {problem}", wheel.file),
                );
            }
            if wheel.problems.len() > SHOWN_PER_WHEEL {
                ctx.ui.status(format!(
                    "        … and {} more (--json lists them all)",
                    wheel.problems.len() - SHOWN_PER_WHEEL
                ));
            }
        }
        rows.push(vec![
            wheel.file.clone(),
            if wheel.ok() {
                "ok".into()
            } else {
                format!("{} problems", wheel.problems.len())
            },
            targets.join(" "),
        ]);
    }
    for problem in &report.set_problems {
        ctx.ui.status(format!("  FAIL  set: {problem}"));
        ctx.ui
            .error_annotation(&format!("verify: {}", problem.kind()), &problem.to_string());
    }
    let failed = report.wheels.iter().filter(|w| !w.ok()).count();
    if report.ok {
        ctx.ui.status(format!(
            "verify: all {} wheel{} passed ({targets_text})",
            report.wheels.len(),
            plural(report.wheels.len())
        ));
    } else if failed == 0 {
        // Only the set as a whole failed (a missing project, a duplicate file).
        ctx.ui.status(format!(
            "verify: all {} wheel{} passed one by one, but the set has {} problem{} ({targets_text})",
            report.wheels.len(),
            plural(report.wheels.len()),
            report.set_problems.len(),
            plural(report.set_problems.len())
        ));
    } else {
        ctx.ui.status(format!(
            "verify: {failed} of {} wheel{} failed, {} problem{} in all ({targets_text})",
            report.wheels.len(),
            plural(report.wheels.len()),
            report.problem_count,
            plural(report.problem_count)
        ));
    }
    ctx.ui.step_summary(&format!(
        "### rockbuild verify\n\n{}",
        ui::markdown_table(&["wheel", "result", "gfx targets"], &rows)
    ));
}
