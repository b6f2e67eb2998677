//! The one error type of the SDK stage: bad SDK flags, a preflight that finds the index lacking,
//! an install that produced something else than asked, an installed SDK that cannot answer.

use std::path::PathBuf;

use super::preflight::IndexSource;
use crate::exec::ProcessError;
use crate::exit::{ExitStatus, HasExitStatus};
use crate::index::Error as ClientError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    // Flags and the lock (exit 2): caught before anything is read or installed.
    #[error(
        "no venv to install into: pass --venv DIR, activate a venv, or pass --output-dir DIR (the venv then goes to DIR/venv)"
    )]
    NoVenvGiven,
    #[error("--rocm-sdk-version `{spec}` is a version, not a specifier: write `=={version}`")]
    BareVersion { spec: String, version: String },
    #[error("--rocm-sdk-version `{spec}` is not a PEP 440 version specifier: {reason}")]
    BadSpec { spec: String, reason: String },
    #[error("--rocm-extras: `{0}` is not an extra name (e.g. device-gfx942)")]
    BadExtra(String),
    #[error("--find-links {}: no such directory", .0.display())]
    MissingFindLinks(PathBuf),

    // The preflight (exit 1): the index does not have what is asked for.
    #[error("{0}; check the URL and the network (the preflight runs before anything is installed)")]
    Index(ClientError),
    #[error(
        "could not read {what}: {reason}; check the URL and the network (the preflight runs before anything is installed)"
    )]
    Unreachable { what: String, reason: String },
    #[error("{} has no page for `{project}` (HTTP 404): is this the right index for the ROCm SDK?", index.display())]
    NoPage { project: String, index: IndexSource },
    #[error("no `{project}` version matching `{spec}`{} on {}{}{}", pre_note(*pre), sources, nearest_list(nearest), hint_line(hint))]
    NoMatch {
        project: String,
        spec: String,
        pre: bool,
        sources: String,
        nearest: Vec<String>,
        hint: Option<String>,
    },
    #[error(
        "`rocm` {version} is on {sources}, but `{companion}` {version}, which it pins, is not{}; pip would fail or fall back to an older SDK (TheRock#4746, #4824): wait for the index to be complete or pick another version",
        nearest_list(nearest)
    )]
    CompanionMissing {
        version: String,
        companion: String,
        sources: String,
        nearest: Vec<String>,
    },

    // The install (exit 1).
    /// A step of the install (venv, pip/uv) failed; its own message names it.
    #[error(transparent)]
    Step(#[from] ProcessError),
    #[error("preparing the venv {}", path.display())]
    Venv {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("creating the installer cache {}", path.display())]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("after installing rocm {wanted}, the venv {} has {} installed: the installer resolved something else (TheRock#4824); check the index and the installer log {}", venv.display(), found.as_deref().map_or("no rocm".to_string(), |v| format!("rocm {v}")), log.display())]
    DistMismatch {
        wanted: String,
        found: Option<String>,
        venv: PathBuf,
        log: PathBuf,
    },
    #[error(
        "rocm {version} has no extra `{extra}` (pip only warns and installs without it); it provides: {}; pick one of those with --rocm-extras, or an index whose SDK was built for it",
        provided.join(", ")
    )]
    ExtraNotProvided {
        extra: String,
        version: String,
        provided: Vec<String>,
    },
    #[error(
        "the extra `{extra}` of rocm {version} requires {requirement}, which is not installed in {}; check the installer log {}",
        venv.display(),
        log.display()
    )]
    ExtraNotInstalled {
        extra: String,
        version: String,
        requirement: String,
        venv: PathBuf,
        log: PathBuf,
    },
    #[error("`python -m rocm_sdk version` reports {reported} but rocm {wanted} was installed into {}: the SDK packages are inconsistent; reinstall with `rockbuild install-rocm`", venv.display())]
    ReportedMismatch {
        wanted: String,
        reported: String,
        venv: PathBuf,
    },
    #[error("serializing the SDK record")]
    RecordJson(#[source] serde_json::Error),
    #[error(transparent)]
    Record(#[from] crate::fsutil::FsError),

    // Asking the installed SDK about itself (exit 1).
    #[error("no Python venv at {}: install the ROCm SDK first (`rockbuild install-rocm --venv {}`, or `rockbuild build --install-rocm`)", venv.display(), venv.display())]
    NoVenv { venv: PathBuf },
    #[error("`{command}` failed, so the ROCm SDK in {} cannot be used: reinstall it with `rockbuild install-rocm`", venv.display())]
    Query {
        command: String,
        venv: PathBuf,
        #[source]
        source: Box<ProcessError>,
    },
    #[error("`{command}` printed nothing{}; the ROCm SDK in {} looks broken: reinstall it with `rockbuild install-rocm`", stderr_note(stderr), venv.display())]
    Empty {
        command: String,
        venv: PathBuf,
        stderr: Vec<String>,
    },
    #[error("`{command}` printed `{}`, which does not exist; the ROCm SDK in {} looks broken: reinstall it with `rockbuild install-rocm`", path.display(), venv.display())]
    MissingPath {
        command: String,
        path: PathBuf,
        venv: PathBuf,
    },
}

/// By hand rather than `#[from]`: the message already holds the client's error, and a source
/// would print it a second time as `caused by`.
impl From<ClientError> for Error {
    fn from(error: ClientError) -> Self {
        Error::Index(error)
    }
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::NoVenvGiven
            | Error::BareVersion { .. }
            | Error::BadSpec { .. }
            | Error::BadExtra(_)
            | Error::MissingFindLinks(_) => ExitStatus::Usage,
            Error::Step(step) => step.exit_status(),
            Error::Index(_)
            | Error::Unreachable { .. }
            | Error::NoPage { .. }
            | Error::NoMatch { .. }
            | Error::CompanionMissing { .. }
            | Error::Cache { .. }
            | Error::Venv { .. }
            | Error::DistMismatch { .. }
            | Error::ExtraNotProvided { .. }
            | Error::ExtraNotInstalled { .. }
            | Error::ReportedMismatch { .. }
            | Error::RecordJson(_)
            | Error::Record(_)
            | Error::NoVenv { .. }
            | Error::Query { .. }
            | Error::Empty { .. }
            | Error::MissingPath { .. } => ExitStatus::Failure,
        }
    }

    fn output_tail(&self) -> &[String] {
        match self {
            Error::Step(step) => step.tail(),
            _ => &[],
        }
    }
}

fn stderr_note(stderr: &[String]) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {})", stderr.join(" / "))
    }
}

fn pre_note(pre: bool) -> &'static str {
    if pre {
        ""
    } else {
        " (pre-releases excluded by --no-pre)"
    }
}

fn nearest_list(nearest: &[String]) -> String {
    if nearest.is_empty() {
        "; it offers no versions at all".to_string()
    } else {
        format!("; nearest available: {}", nearest.join(", "))
    }
}

fn hint_line(hint: &Option<String>) -> String {
    hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default()
}
