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
    /// Several projects failed; the message holds each one's error.
    #[error("{message}")]
    Failed { message: String, status: ExitStatus },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Dirty { .. }
            | Error::NotInLock { .. }
            | Error::LockDisagrees { .. }
            | Error::AbbreviatedSha { .. }
            | Error::Invalid { .. } => ExitStatus::Usage,
            Error::Failed { status, .. } => *status,
            Error::NoPins { .. } | Error::Panicked { .. } => ExitStatus::Failure,
        }
    }
}
