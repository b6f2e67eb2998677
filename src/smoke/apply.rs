//! Running the planned checks in order — each only when the check it waits for passed — and
//! the test report that records the exact wheels (SHA-256) and every check.

use std::path::Path;

use super::Error;
use super::plan::{Check as PlannedCheck, SmokePlan};
use crate::context::Context;
use crate::exec::{Cmd, ProcessError};
use crate::promote::evidence::{Check, Outcome, REPORT_SCHEMA, TestReport, TestedWheel};

/// A finished smoke run.
pub struct SmokeRun {
    pub report: TestReport,
    /// Set when a signal stopped the run.
    pub interrupted: Option<i32>,
}

/// Runs the plan and returns its report (written by the caller).
pub fn apply(ctx: &Context, plan: &SmokePlan) -> Result<SmokeRun, Error> {
    let started = jiff::Timestamp::now();
    for (path, text) in &plan.files {
        crate::fsutil::write_atomic(path, text.as_bytes())?;
    }
    let task = ctx.ui.task("smoke");
    let mut checks: Vec<Check> = Vec::with_capacity(plan.checks.len());
    let mut interrupted = None;
    let mut installed = Vec::new();
    for (index, planned) in plan.checks.iter().enumerate() {
        task.phase(planned.name.clone());
        let ready = planned
            .after
            .is_none_or(|after| checks[after].result == Outcome::Passed);
        let check = run_check(ctx, planned, ready, &mut interrupted);
        let report = plan.pip_reports.iter().find(|(check, _)| *check == index);
        if let (Some((_, path)), Outcome::Passed) = (report, check.result) {
            match crate::input::read_text(path, crate::input::REPORT)
                .map_err(|e| e.to_string())
                .and_then(|text| crate::pip::report::parse(&text))
            {
                Ok(report) => installed.extend(report.installed),
                Err(error) => ctx.ui.warn(format!(
                    "reading pip's install report {}: {error}; the test report will not name what it installed",
                    path.display()
                )),
            }
        }
        checks.push(check);
    }
    // Evidence: every file installed from the index under test, dependencies included
    // (the ROCm SDK wheels staged next to torch), named by its SHA-256.
    let wheels = match crate::index::client::IndexClient::new(&plan.index_url)
        .and_then(|client| crate::pip::report::from_index(&installed, &client))
    {
        Ok(found) => found,
        Err(error) => {
            ctx.ui.warn(format!(
                "{error}; the test report will not name the installed wheels"
            ));
            Vec::new()
        }
    };
    let failed = checks
        .iter()
        .filter(|c| c.result == Outcome::Failed)
        .count();
    let result = if interrupted.is_some() {
        Outcome::Cancelled
    } else if failed > 0 {
        Outcome::Failed
    } else {
        Outcome::Passed
    };
    task.finish(match result {
        Outcome::Passed => format!("{} checks passed", checks.len()),
        Outcome::Cancelled => "interrupted".to_string(),
        _ => format!("{failed} of {} checks failed", checks.len()),
    });
    let report = TestReport {
        schema: REPORT_SCHEMA,
        kind: "smoke".into(),
        generated_by: format!("rockbuild {}", env!("CARGO_PKG_VERSION")),
        index_url: crate::redact::redact_url(&plan.index_url),
        python: python_version(ctx, &plan.python),
        started,
        finished: jiff::Timestamp::now(),
        result,
        wheels: wheels
            .into_iter()
            .filter_map(|item| {
                Some(TestedWheel {
                    sha256: item.sha256?,
                    name: item.name,
                    version: item.version,
                    filename: item.filename,
                })
            })
            .collect(),
        checks,
        // The smoke report's checks carry their own details.
        failures: Vec::new(),
    };
    Ok(SmokeRun {
        report,
        interrupted,
    })
}

/// Runs one check (skipped when what it waits for did not pass, cancelled once the run was
/// interrupted).
fn run_check(
    ctx: &Context,
    planned: &PlannedCheck,
    ready: bool,
    interrupted: &mut Option<i32>,
) -> Check {
    let started = jiff::Timestamp::now();
    let (result, detail) = if interrupted.is_some() {
        (Outcome::Cancelled, "the run was interrupted".to_string())
    } else if !ready {
        (Outcome::Skipped, "an earlier step failed".to_string())
    } else {
        match ctx.runner.run(&planned.cmd) {
            Ok(output) => (Outcome::Passed, output.tail.join("\n")),
            Err(ProcessError::Interrupted { signal, .. }) => {
                *interrupted = Some(signal);
                (
                    Outcome::Cancelled,
                    format!("interrupted by signal {signal}"),
                )
            }
            Err(error) => (Outcome::Failed, error.to_string()),
        }
    };
    Check {
        name: planned.name.clone(),
        kind: planned.kind.to_string(),
        project: planned.project.clone(),
        result,
        started,
        finished: jiff::Timestamp::now(),
        detail: tail(&detail, 30),
    }
}

impl SmokeRun {
    /// What the run means for the command: an interruption (the report says cancelled), a
    /// failure listing each failed check with its detail, or a pass.
    pub fn verdict(&self, report: &Path, logs: &Path) -> Result<(), Error> {
        if let Some(signal) = self.interrupted {
            return Err(Error::Interrupted {
                signal,
                report: report.to_path_buf(),
            });
        }
        if self.report.result == Outcome::Passed {
            return Ok(());
        }
        let failed: Vec<String> = self
            .report
            .checks
            .iter()
            .filter(|c| c.result == Outcome::Failed)
            .map(|c| format!("  - {}:\n{}", c.name, indent(&c.detail)))
            .collect();
        Err(Error::Failed {
            failed: failed.len(),
            total: self.report.checks.len(),
            logs: logs.to_path_buf(),
            details: failed.join("\n"),
        })
    }
}

/// Writes the test report (atomically: `promote` never reads half of one).
pub fn write_report(report: &TestReport, path: &Path) -> Result<(), Error> {
    let mut text = serde_json::to_string_pretty(report).map_err(Error::ReportJson)?;
    text.push('\n');
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(|source| Error::Report {
        path: path.to_path_buf(),
        source,
    })
}

/// The line of a check's detail worth a table cell: the last one of a failure (the error),
/// the first one of a success (what it printed).
pub fn summary_line(detail: &str, failed: bool) -> String {
    let line = if failed {
        detail.lines().rev().find(|l| !l.trim().is_empty())
    } else {
        detail.lines().find(|l| !l.trim().is_empty())
    };
    let line = line.unwrap_or_default().trim();
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("      {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

fn python_version(ctx: &Context, python: &Path) -> Option<String> {
    let cmd = Cmd::new(python)
        .label("smoke: python version")
        .args(["-c", "import platform; print(platform.python_version())"])
        .capture_stdout();
    ctx.runner
        .run(&cmd)
        .ok()
        .map(|o| o.stdout.trim().to_string())
        .filter(|v| !v.is_empty())
}
