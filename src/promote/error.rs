//! The one error type of promotion. Every refusal says that nothing was copied or written.

use crate::exit::{ExitStatus, HasExitStatus};
use crate::promote::evidence::EvidenceError;
use crate::promote::rewrite::SplitError;
use crate::stack::ConfigError;
use crate::store::transfer::TransferError;
use crate::wheel::rewrite::RewriteError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("--from and --to are the same store ({0}); promote copies between two prefixes")]
    SameStore(String),
    #[error(transparent)]
    Waiver(ConfigError),
    #[error(
        "--test-report {0}\nhint: pass the report `rockbuild smoke --report FILE` or a JUnit XML run wrote \
         for exactly this staged set; nothing was copied"
    )]
    Evidence(EvidenceError),
    /// A report that is missing or cannot be opened is no evidence (docs/publishing.md).
    #[error(
        "--test-report {0}\npromotion denied: no evidence; nothing was copied\n\
         hint: pass the report `rockbuild smoke --report FILE` or a JUnit XML run wrote for \
         exactly this staged set"
    )]
    NoEvidence(EvidenceError),
    /// A `--test-report` directory with no reports in it (or one that cannot be listed) is no
    /// evidence either, never "no evidence needed".
    #[error(
        "--test-report {}: the directory holds no reports (*.json, *.xml)\n\
         promotion denied: no evidence; nothing was copied\n\
         hint: give the directory the tests wrote their reports into",
        dir.display()
    )]
    NoReportsIn {
        dir: std::path::PathBuf,
        #[source]
        source: Option<std::io::Error>,
    },
    #[error("reading the staged set at {url}")]
    Scan {
        url: String,
        source: crate::index::Error,
    },
    #[error(
        "nothing to promote: {0} holds no wheels in the <project>/<file> layout\n\
         hint: a set staged with --amdgpu-family lives under <from>/<family>: pass that as --from"
    )]
    NothingToPromote(String),
    #[error(
        "promotion denied: {denied} of {total} wheels have no passing test evidence; nothing was copied\n\
         hint: pass the reports of the runs that tested exactly these files (--test-report), \
         or a waiver with an owner, a reason and an expiry (--waiver)"
    )]
    Denied { denied: usize, total: usize },
    #[error(
        "promotion denied: {denied} of the {total} staged files {} ROCm SDK file{} not shown \
         to be what {} index publishes; nothing was copied\n\
         hint: the ROCm SDK's files are promoted as their index publishes them: give that index \
         (--index-url, or --lock with a build record naming it), or stage the set again",
        if *denied == 1 { "is a" } else { "are" },
        if *denied == 1 { "" } else { "s" },
        if *denied == 1 { "its" } else { "their" }
    )]
    NotAsPublished { denied: usize, total: usize },
    #[error(
        "the promotion moves the ROCm SDK the set carries to {promoted}, and no index that \
         publishes it was given; nothing was copied\n\
         hint: give the index of the SDK's {promoted} release with --index-url (rockbuild \
         carries the SDK's wheels as their index publishes them; it never renames them)"
    )]
    NoSdkIndex { promoted: String },
    #[error(
        "the set names {} ROCm SDK releases ({}: its wheels' pins, its SDK wheels, the lock); \
         promote a set built on one\nnothing was written",
        versions.len(),
        versions.join(", ")
    )]
    SeveralSdks { versions: Vec<String> },

    #[error(transparent)]
    Split(SplitError),
    #[error("creating a work directory for the rewritten wheels")]
    WorkDir(#[source] std::io::Error),
    #[error(transparent)]
    Io(#[from] std::io::Error),
    #[error("downloading the tested set from {url}: {error}")]
    Download { url: String, error: TransferError },
    #[error("'{key}' of {url} was not among the downloaded wheels")]
    NotDownloaded { key: String, url: String },
    #[error("{0}\nnothing was written")]
    Rewrite(RewriteError),
    #[error("the rewritten set failed verification; nothing was written to {0}")]
    RewrittenNotVerified(String),
    /// The staged set is not the one the lock names.
    #[error(transparent)]
    Lock(#[from] crate::lock::Error),
    #[error(transparent)]
    Verify(#[from] crate::verify::Error),
    #[error(transparent)]
    Publish(#[from] crate::publish::Error),
}

/// Denied or missing evidence, an empty staged set and a rewritten set that fails
/// verification are failed verifications (5);
/// flags, reports and waivers that cannot be used, and versions that cannot be promoted, are
/// usage errors (2); a wheel that cannot be read or rewritten is a failed step (1).
impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::SameStore(_)
            | Error::Waiver(_)
            | Error::Evidence(_)
            | Error::Split(_)
            | Error::NoSdkIndex { .. }
            | Error::SeveralSdks { .. } => ExitStatus::Usage,
            // Nothing staged is nothing verified, never a pass (as stage/verify/retag on an
            // empty directory).
            Error::Denied { .. }
            | Error::NotAsPublished { .. }
            | Error::NoEvidence(_)
            | Error::NoReportsIn { .. }
            | Error::NothingToPromote(_)
            | Error::RewrittenNotVerified(_) => ExitStatus::VerificationFailed,
            Error::Rewrite(error) if error.is_wheel_failure() => ExitStatus::Failure,
            Error::Rewrite(_) => ExitStatus::Usage,
            Error::Download { error, .. } => match error.interrupted {
                Some(signal) => ExitStatus::Signal(signal),
                None => ExitStatus::Failure,
            },
            Error::Lock(error) => error.exit_status(),
            Error::Verify(error) => error.exit_status(),
            Error::Publish(error) => error.exit_status(),
            Error::Scan { .. } | Error::WorkDir(_) | Error::Io(_) | Error::NotDownloaded { .. } => {
                ExitStatus::Failure
            }
        }
    }
}
