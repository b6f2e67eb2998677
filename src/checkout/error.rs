//! Checkout failures: what a user must fix, with the project and directory.

use std::path::PathBuf;

use crate::exit::{ExitStatus, HasExitStatus};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{} ('{project}') has uncommitted changes that hipify did not make:\n    {}\n  commit or stash them, or pass --force to discard them",
        dir.display(),
        changes.join("\n    ")
    )]
    Dirty {
        project: String,
        dir: PathBuf,
        changes: Vec<String>,
    },
    #[error("{} has no entry for '{project}'", file.display())]
    NotInLock { file: PathBuf, project: String },
    /// The lock says the commit holds something it does not (an edited or damaged lock).
    #[error(
        "{}: '{project}' {what}: the lock says {locked}, commit {commit} has {found}; the lock was edited or damaged: write a new one with `rockbuild lock`",
        file.display()
    )]
    LockDisagrees {
        file: PathBuf,
        project: String,
        commit: String,
        what: String,
        locked: String,
        found: String,
    },
    #[error(
        "ref '{reference}' of '{project}' looks like an abbreviated commit; git can only fetch full 40-character SHAs"
    )]
    AbbreviatedSha { project: String, reference: String },
    #[error("'{project}': {place}: {invalid}")]
    Invalid {
        project: String,
        /// Where the value was written (a flag, a file and line, a preset, a lock).
        place: String,
        invalid: crate::git::Invalid,
    },
    #[error("cannot resolve the pin of '{project}': {reason}")]
    NoPins { project: String, reason: String },
    #[error("the work of '{project}' panicked")]
    Panicked { project: String },
    /// Several projects failed. Each one's error is kept as data: `diagnostics` renders each
    /// below this line and derives the exit status from them (usage only when every failure
    /// is one).
    #[error(
        "{verb} failed for {}; the lock {} was not written",
        failures.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(", "),
        lock.display()
    )]
    Failed {
        verb: String,
        lock: PathBuf,
        failures: Vec<(String, anyhow::Error)>,
    },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Dirty { .. }
            | Error::NotInLock { .. }
            | Error::LockDisagrees { .. }
            | Error::AbbreviatedSha { .. }
            | Error::Invalid { .. } => ExitStatus::Usage,
            // Refined from the projects' errors by `diagnostics::exit_status_of`.
            Error::Failed { .. } | Error::NoPins { .. } | Error::Panicked { .. } => {
                ExitStatus::Failure
            }
        }
    }
}
