//! The process exit codes of rockbuild: one enum, documented once, rendered into
//! docs/exit-codes.md by a test so the table cannot drift from the code.

use std::fmt;

/// How a rockbuild command ended. `main` turns this into the process exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    // The meaning of each status is written once, in `table()`.
    Success,
    Failure,
    Usage,
    VerificationFailed,
    PublishConflict,
    Busy,
    RunnerUnfit,
    Signal(i32),
}

impl ExitStatus {
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Usage => 2,
            ExitStatus::VerificationFailed => 5,
            ExitStatus::PublishConflict => 6,
            ExitStatus::Busy => 7,
            ExitStatus::RunnerUnfit => 8,
            ExitStatus::Signal(signal) => 128 + signal,
        }
    }

    /// One row per status for the generated documentation.
    pub fn table() -> Vec<(String, &'static str, &'static str)> {
        vec![
            ("0".into(), "success", "Everything asked for was done."),
            (
                "1".into(),
                "step failed",
                "A step failed (git transfer, hipify, build, upload). The error names the step, \
                 the last lines of its log, the log path and a copy-paste repro line.",
            ),
            (
                "2".into(),
                "usage or configuration",
                "Unknown flag, project, family, target or ref; a ref, origin or lock field git \
                 would read as an option; malformed config, lock or pin file; a bad \
                 `--version-suffix`; a dirty tree without `--force`. A multi-project checkout or \
                 lock whose failures are all usage errors exits 2 too. Nothing was changed.",
            ),
            (
                "5".into(),
                "verification failed",
                "A wheel failed verification, or promotion was denied for lack of passing \
                 evidence (a missing or unopenable `--test-report` is no evidence). Nothing to \
                 verify is never a pass: `verify`, `stage` and `retag` on a directory without \
                 wheels, and `promote` from a prefix without wheels, exit 5.",
            ),
            (
                "6".into(),
                "publish conflict",
                "An existing released object has different bytes, or the new versions would \
                 sort below ones already published.",
            ),
            (
                "7".into(),
                "busy",
                "Another run holds the lease of the store prefix (or the lock of the checkout \
                 root) this run writes to; nothing was changed. The error names the holder (host, \
                 pid, start time). Retry when it is done; `--break-lease` takes a stale lease.",
            ),
            (
                "8".into(),
                "runner unfit",
                "`test`: the runner cannot run the suite, so nothing was tested — no AMD GPU or no \
                 amdgpu driver where the suite needs one, or GPUs none of which is of the family \
                 under test (the facts `detect` reads). An infrastructure problem, not a test \
                 failure: run the shard again on a runner of the family. The shard's report \
                 says why and is never evidence.",
            ),
            (
                "128+n".into(),
                "interrupted",
                "Stopped by signal n (130 for SIGINT, 143 for SIGTERM); children were stopped \
                 and no partial lock or index was left.",
            ),
        ]
    }
}

/// The exit-code table as `--help` shows it.
pub fn help_text() -> String {
    let mut text = String::from("Exit codes:\n");
    for (code, name, _) in ExitStatus::table() {
        text.push_str(&format!("  {code:<6} {name}\n"));
    }
    text.push_str("\nDocumentation: docs/ (cli.md, exit-codes.md, user-guide.md)");
    text
}

impl fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

/// A library error that knows which exit status it produces. Each stage's error enum implements
/// it and is listed once, in `diagnostics::classify`, the one place where errors become exit
/// codes; code deep in a library never picks an exit code itself.
pub trait HasExitStatus: std::error::Error + 'static {
    fn exit_status(&self) -> ExitStatus;

    /// The last output lines of the failed subprocess this error reports, if it reports one:
    /// diagnostics scans them for known failures. Needed where a stage error wraps a failed
    /// step transparently (the wrapper, not the step's error, is then the link in the chain).
    fn output_tail(&self) -> &[String] {
        &[]
    }
}

impl HasExitStatus for Classified {
    fn exit_status(&self) -> ExitStatus {
        self.status
    }
}

/// An error that carries the exit status it should produce. Library modules attach this
/// to errors a caller should not see as a generic step failure (e.g. configuration errors).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Classified {
    pub status: ExitStatus,
    pub message: String,
}

/// Shorthand for a usage/configuration error (exit 2).
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    Classified {
        status: ExitStatus::Usage,
        message: message.into(),
    }
    .into()
}

/// Shorthand for an error with an explicit exit status.
pub fn classified(status: ExitStatus, message: impl Into<String>) -> anyhow::Error {
    Classified {
        status,
        message: message.into(),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(ExitStatus::Success.code(), 0);
        assert_eq!(ExitStatus::Failure.code(), 1);
        assert_eq!(ExitStatus::Usage.code(), 2);
        assert_eq!(ExitStatus::VerificationFailed.code(), 5);
        assert_eq!(ExitStatus::PublishConflict.code(), 6);
        assert_eq!(ExitStatus::Signal(2).code(), 130);
        assert_eq!(ExitStatus::Signal(15).code(), 143);
    }
}
