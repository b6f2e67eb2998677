//! The one error type of the verify stage: a set that cannot be verified at all. A set that
//! was verified and failed is a report, not an error; the verbs decide what it means.

use std::path::PathBuf;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::index::Error as ClientError;
use crate::stack::families::NameError;
use crate::verify::companions::CompanionError;
use crate::wheel::verify::CollectError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Inputs(#[from] CollectError),
    #[error("--index-url: {0}")]
    Index(ClientError),
    #[error("--targets: {0}")]
    Targets(NameError),
    #[error("creating a scratch directory: {0}")]
    Scratch(std::io::Error),
    #[error(transparent)]
    Companion(#[from] CompanionError),
    #[error(
        "{}: the lock's build record has a version for project '{project}', which {stack} does not define",
        lock.display()
    )]
    LockProject {
        lock: PathBuf,
        project: String,
        stack: String,
    },
    #[error(
        "{}: the lock's build record gives '{project}' version '{version}', which is not PEP 440: {reason}",
        lock.display()
    )]
    LockVersion {
        lock: PathBuf,
        project: String,
        version: String,
        reason: String,
    },
}

/// An empty build output is a failed verification (W5), never a pass; everything else means
/// the command line or the lock is wrong.
impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Inputs(CollectError::EmptyDirectory(_)) => ExitStatus::VerificationFailed,
            // The SDK's index lacks what the set pins, or serves other bytes.
            Error::Companion(CompanionError::Index(error)) => error.exit_status(),
            Error::Companion(_) => ExitStatus::VerificationFailed,
            Error::Scratch(_) => ExitStatus::Failure,
            Error::Inputs(_)
            | Error::Index(_)
            | Error::Targets(_)
            | Error::LockProject { .. }
            | Error::LockVersion { .. } => ExitStatus::Usage,
        }
    }
}
