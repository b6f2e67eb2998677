//! Everything that can go wrong resolving pins and reading or honouring a lock, with the facts
//! a user needs to fix it.

use std::path::PathBuf;

use super::related_commits::RelatedCommitsError;
use crate::exit::{ExitStatus, HasExitStatus};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    RelatedCommits(#[from] RelatedCommitsError),
    #[error(
        "{file} has no `{os}|…|{key}|…` row for project '{project}' (required by {required_by}); add the row or name a ref with --hashtag {project}=REF"
    )]
    MissingRow {
        file: String,
        os: String,
        key: String,
        project: String,
        required_by: String,
    },
    #[error(
        "'{from}' has no {file} to pin '{project}' (required by {required_by}); check out a '{from}' ref that carries it, or name a ref with --hashtag {project}=REF"
    )]
    MissingPinFile {
        from: String,
        file: String,
        project: String,
        required_by: String,
    },
    #[error("{file}: `{value}` is not a full commit SHA")]
    NotACommit { file: String, value: String },
    #[error("--release: project '{project}' has no release-version-file in the stack config")]
    NoReleaseVersionFile { project: String },
    #[error("--release: '{from}' has no {file} to derive the {project} release branch from")]
    NoVersionFile {
        from: String,
        file: String,
        project: String,
    },
    #[error("{file}: `{value}` is not a version like 3.4.0; cannot derive the release branch")]
    BadVersionFile { file: String, value: String },
    #[error("cannot read {file} of '{from}': {reason}")]
    PinFile {
        from: String,
        file: String,
        reason: String,
    },
    #[error("cannot read the lock {}: {reason}", path.display())]
    Unreadable { path: PathBuf, reason: String },
    #[error("{}:{line}:{column}: not a rockbuild lock: {reason}", path.display())]
    NotALock {
        path: PathBuf,
        line: usize,
        column: usize,
        reason: String,
    },
    #[error(
        "{}: lock schema {found} is not supported by this rockbuild (reads schema {})",
        path.display(),
        super::SCHEMA
    )]
    Schema { path: PathBuf, found: u32 },
    #[error(
        "{what} drifted from the lock: {} says {locked}, {found_where} says {found}; {fix}",
        lock.display()
    )]
    Drift {
        lock: PathBuf,
        what: String,
        locked: String,
        found: String,
        found_where: String,
        fix: String,
    },
    #[error("the lock's sdk_version `{version}` is not a PEP 440 version: {reason}")]
    BadSdkVersion { version: String, reason: String },
    #[error("{}: {problem}", path.display())]
    Manifest { path: PathBuf, problem: String },
    /// `--manifest-url` names nothing a manifest can be read from (bad URL, HTTP 4xx, too
    /// large an answer).
    #[error("--manifest-url {url}: {reason}")]
    ManifestUrl { url: String, reason: String },
    /// The manifest could not be downloaded (network, timeouts, HTTP 5xx after every attempt).
    #[error("downloading the manifest {url} failed: {reason}")]
    ManifestDownload { url: String, reason: String },
    #[error("{}:{line}: `{field}`: {invalid}", path.display())]
    Field {
        path: PathBuf,
        line: usize,
        field: String,
        invalid: crate::git::Invalid,
    },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::PinFile { .. } | Error::ManifestDownload { .. } => ExitStatus::Failure,
            _ => ExitStatus::Usage,
        }
    }
}
