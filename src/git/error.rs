//! Git failures with the facts to act on: which project, ref, origin, repository.

use std::path::PathBuf;

use crate::exec::ProcessError;
use crate::exit::{ExitStatus, HasExitStatus};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "unknown ref '{reference}' for '{project}' on {origin}: no branch, tag or commit by that name there"
    )]
    UnknownRef {
        reference: String,
        project: String,
        origin: String,
    },
    #[error(
        "commit {commit} of '{project}' is not on {origin}: it was never pushed there, or a force-push or branch deletion dropped it; pin a commit the origin has (re-run `rockbuild lock`), or point the origin at a fork that has it"
    )]
    UnknownCommit {
        commit: String,
        project: String,
        origin: String,
    },
    #[error(
        "fetching '{reference}' of '{project}' from {origin} {what}{}",
        advice(source)
    )]
    Fetch {
        reference: String,
        project: String,
        origin: String,
        /// `failed` or `stopped` (timeout, watchdog).
        what: &'static str,
        #[source]
        source: Box<ProcessError>,
    },
    #[error(
        "'{project}': submodule {path} points at the local path {url}, but the project comes from {origin}; rockbuild only follows local submodules of local origins (CVE-2022-39253)"
    )]
    LocalSubmodule {
        project: String,
        path: String,
        url: String,
        origin: String,
    },
    #[error("'{project}': submodule {path} has no url in .gitmodules at {commit}")]
    SubmoduleWithoutUrl {
        project: String,
        path: String,
        commit: String,
    },
    #[error("{}: {what}: {source}", dir.display())]
    Local {
        dir: PathBuf,
        what: String,
        #[source]
        source: git2::Error,
    },
    #[error("the git cache {}: {what}: {source}", dir.display())]
    Cache {
        dir: PathBuf,
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Process(Box<ProcessError>),
}

impl From<ProcessError> for Error {
    fn from(error: ProcessError) -> Self {
        Error::Process(Box::new(error))
    }
}

impl Error {
    pub fn local(dir: impl Into<PathBuf>, what: impl Into<String>, source: git2::Error) -> Self {
        Error::Local {
            dir: dir.into(),
            what: what.into(),
            source,
        }
    }

    pub fn cache(dir: impl Into<PathBuf>, what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Cache {
            dir: dir.into(),
            what: what.into(),
            source,
        }
    }
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        let process = match self {
            Error::UnknownRef { .. }
            | Error::UnknownCommit { .. }
            | Error::LocalSubmodule { .. }
            | Error::SubmoduleWithoutUrl { .. } => return ExitStatus::Usage,
            Error::Fetch { source, .. } | Error::Process(source) => source,
            Error::Local { .. } | Error::Cache { .. } => return ExitStatus::Failure,
        };
        match process.as_ref() {
            ProcessError::Interrupted { signal, .. } => ExitStatus::Signal(*signal),
            _ => ExitStatus::Failure,
        }
    }
}

/// What to do about a transfer that was stopped (the causes below say how).
fn advice(source: &ProcessError) -> &'static str {
    match source {
        ProcessError::Stalled { .. } => {
            ": the origin accepted the connection but sent nothing; check that it is reachable \
             and serving (a proxy, a firewall, an overloaded server) and run again — a slow \
             but live origin needs a larger --stall-timeout, a flaky one more --fetch-attempts"
        }
        ProcessError::TimedOut { .. } => {
            ": it was still transferring when --fetch-timeout ran out; run again with a larger \
             --fetch-timeout, or a --depth for a smaller transfer"
        }
        _ => "",
    }
}

/// Turns a failed fetch into the error a user can act on: an unknown ref is a usage error
/// (nothing to retry), anything else a step failure naming project, ref and origin.
pub fn fetch_failure(error: ProcessError, reference: &str, project: &str, origin: &str) -> Error {
    let origin = crate::redact::redact_url(origin);
    let tail = error.tail().join("\n");
    let unknown = tail.contains("couldn't find remote ref")
        || tail.contains("not our ref")
        || tail.contains("upload-pack: not our ref");
    if unknown && super::is_full_sha(reference) {
        return Error::UnknownCommit {
            commit: reference.to_string(),
            project: project.to_string(),
            origin,
        };
    }
    if unknown {
        return Error::UnknownRef {
            reference: reference.to_string(),
            project: project.to_string(),
            origin,
        };
    }
    let what = match &error {
        ProcessError::Stalled { .. } | ProcessError::TimedOut { .. } => "stopped",
        _ => "failed",
    };
    Error::Fetch {
        reference: reference.to_string(),
        project: project.to_string(),
        origin,
        what,
        source: Box::new(error),
    }
}
