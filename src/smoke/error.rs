//! The one error type of the smoke test.

use std::path::PathBuf;

use crate::exit::{ExitStatus, HasExitStatus};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{}: the lock has no build record (versions); run `rockbuild build` with it first, or omit --lock to test the newest wheels",
        .0.display()
    )]
    NoBuildRecord(PathBuf),
    #[error(
        "--venv {}: the directory is not empty and is not a venv; smoke will only empty a directory that holds a venv",
        .0.display()
    )]
    VenvNotEmpty(PathBuf),
    #[error(transparent)]
    Index(crate::index::Error),
    #[error("reading {wheel}'s page from {url}")]
    Page {
        wheel: String,
        url: String,
        source: crate::index::Error,
    },
    #[error("the lock's {project} version '{version}' is not PEP 440: {reason}")]
    LockVersion {
        project: String,
        version: String,
        reason: String,
    },
    /// `--targets` names something that is not a gfx processor.
    #[error("--targets: {0}")]
    Targets(String),
    #[error("{wheel}=={version} (locked) is not on {url}; the index has {have}")]
    NotOnIndex {
        wheel: String,
        version: String,
        url: String,
        have: String,
    },
    /// A split product's device wheel for a tested target, missing at the product's version.
    #[error(
        "{device}=={version} is not on {url} (the index has {have}): {product}=={version} was split per target, so its device wheel for each tested target must be there; stage the whole multi-arch set"
    )]
    DeviceNotOnIndex {
        device: String,
        product: String,
        version: String,
        url: String,
        have: String,
    },
    #[error(
        "{file} on {url} has no #sha256= hash; a hash-checked install needs one for every file"
    )]
    NoHash { file: String, url: String },
    #[error("none of the stack's wheels ({wheels}) is on {url}")]
    NothingOnIndex { wheels: String, url: String },
    #[error("creating a work directory")]
    WorkDir(#[source] std::io::Error),
    #[error(transparent)]
    File(#[from] crate::fsutil::FsError),
    #[error("serializing the test report")]
    ReportJson(#[source] serde_json::Error),
    #[error("writing the test report {}", path.display())]
    Report {
        path: PathBuf,
        source: crate::fsutil::FsError,
    },
    #[error(
        "smoke was interrupted; the report records the run as cancelled ({})",
        report.display()
    )]
    Interrupted { signal: i32, report: PathBuf },
    #[error("smoke failed ({failed} of {total} checks); logs in {}\n{details}", logs.display())]
    Failed {
        failed: usize,
        total: usize,
        logs: PathBuf,
        details: String,
    },
}

/// Flags and locks that cannot be used are usage errors; an interrupted run is the
/// interruption (its report says cancelled); everything else is a failed step.
impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::NoBuildRecord(_)
            | Error::VenvNotEmpty(_)
            | Error::LockVersion { .. }
            | Error::Targets(_) => ExitStatus::Usage,
            Error::Index(error) => error.exit_status(),
            Error::Interrupted { signal, .. } => ExitStatus::Signal(*signal),
            Error::Page { .. }
            | Error::NotOnIndex { .. }
            | Error::DeviceNotOnIndex { .. }
            | Error::NoHash { .. }
            | Error::NothingOnIndex { .. }
            | Error::WorkDir(_)
            | Error::File(_)
            | Error::ReportJson(_)
            | Error::Report { .. }
            | Error::Failed { .. } => ExitStatus::Failure,
        }
    }
}
