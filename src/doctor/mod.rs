//! `rockbuild doctor`: what this machine lacks before a long build fails on it.
//!
//! [`inspect::inspect`] gathers [`inspect::Facts`] (tool versions, the venv, a test compile, free space,
//! the index, commit dates), every program through the runner with a timeout; [`judge`] —
//! pure — turns them into a [`Report`] of checks, each pass, warn, fail or skip with what to
//! do. A failed check makes the command exit 1.

pub mod disk;
pub mod inspect;
mod judge;

use std::fmt::Write as _;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::NameError;

pub use judge::{Expectations, judge};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Warn,
    Fail,
    /// Not applicable here (nothing to check against).
    Skip,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Check {
    /// Stable name for machines (`git`, `sdk-lock`, `disk`).
    pub id: &'static str,
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do about it, when something is to be done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    pub checks: Vec<Check>,
    pub passed: usize,
    pub warnings: usize,
    pub failures: usize,
}

impl Report {
    pub fn new(checks: Vec<Check>) -> Report {
        let count = |status| checks.iter().filter(|c| c.status == status).count();
        Report {
            passed: count(Status::Pass),
            warnings: count(Status::Warn),
            failures: count(Status::Fail),
            checks,
        }
    }

    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for check in &self.checks {
            let _ = writeln!(
                out,
                "{:<4}  {:<14} {}",
                check.status.label(),
                check.id,
                check.detail
            );
            if let Some(fix) = &check.fix {
                let _ = writeln!(out, "{:<20}→ {fix}", "");
            }
        }
        let _ = writeln!(
            out,
            "\n{} passed, {} warning{}, {} failed",
            self.passed,
            self.warnings,
            crate::ui::plural(self.warnings),
            self.failures
        );
        out
    }

    /// The failed checks as an error, or `Ok` when none failed.
    pub fn outcome(&self) -> Result<(), Error> {
        let failed: Vec<String> = self
            .checks
            .iter()
            .filter(|c| c.status == Status::Fail)
            .map(|c| c.id.to_string())
            .collect();
        if failed.is_empty() {
            Ok(())
        } else {
            Err(Error::Failed { failed })
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the targets to check: {0}")]
    Targets(#[from] NameError),
    #[error("doctor found {} problem{} to fix first: {}", failed.len(), crate::ui::plural(failed.len()), failed.join(", "))]
    Failed { failed: Vec<String> },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Targets(_) => ExitStatus::Usage,
            Error::Failed { .. } => ExitStatus::Failure,
        }
    }
}
