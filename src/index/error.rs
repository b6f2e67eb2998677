//! The one error type of the index: reading an index over HTTP or from files, and reading a
//! store's listing into one.

use crate::exit::{ExitStatus, HasExitStatus};
use crate::store::StoreError;
use crate::store::transfer::TransferError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("'{url}' is not a usable index URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("could not read {url}: {message}")]
    Transfer { url: String, message: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} is not a valid index page: {message}")]
    Parse { url: String, message: String },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("reading the index listing: {0}")]
    Listing(TransferError),
    #[error(
        "{store} holds {} .whl file{} that {} not a readable wheel, and an index never lists one:{}\n\
         remove or replace {}, then publish again (or run `rockbuild index`); no index page was changed",
        files.len(),
        crate::ui::plural(files.len()),
        if files.len() == 1 { "is" } else { "are" },
        files.iter().map(|(key, why)| format!("\n  - {key}: {why}")).collect::<String>(),
        if files.len() == 1 { "it" } else { "them" }
    )]
    NotWheels {
        store: String,
        files: Vec<(String, String)>,
    },
}

/// An index URL that cannot be used is a usage error; a stored `.whl` that is not a readable
/// wheel failed verification; the rest failed steps (or an interrupted listing: 128+n).
impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::BadUrl { .. } => ExitStatus::Usage,
            Error::NotWheels { .. } => ExitStatus::VerificationFailed,
            Error::Store(error) => error.exit_status(),
            Error::Listing(error) => match error.interrupted {
                Some(signal) => ExitStatus::Signal(signal),
                None => ExitStatus::Failure,
            },
            Error::Transfer { .. } | Error::Status { .. } | Error::Parse { .. } => {
                ExitStatus::Failure
            }
        }
    }
}
