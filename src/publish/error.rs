//! The one error type of publishing (`stage`, and the publishing half of `promote`).

use std::path::PathBuf;

use super::Conflict;
use crate::exit::{ExitStatus, HasExitStatus};
use crate::index::ordering::OrderingProblem;
use crate::stack::NameError;
use crate::store::StoreError;
use crate::store::transfer::TransferError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("--amdgpu-family: {0}")]
    Family(NameError),
    #[error("--amdgpu-family '{family}' cannot be a store path segment: {reason}")]
    FamilySegment {
        family: String,
        reason: &'static str,
    },
    #[error("{what} (above); nothing was uploaded to {dest}")]
    NotVerified { what: String, dest: String },
    #[error(
        "{}: the verification report has no {missing}, and only verified wheels are published; \
         run `rockbuild verify` on it, fix what it reports, then publish again",
        wheel.display()
    )]
    Unverified {
        wheel: PathBuf,
        missing: &'static str,
    },
    #[error(
        "the ROCm SDK's index {url} ({from}) cannot be read: {message}\nstage brings the SDK \
         wheels the set pins from that index, so nothing was uploaded to {dest}; {fix}"
    )]
    SdkIndex {
        url: String,
        from: String,
        message: String,
        dest: String,
        fix: String,
    },
    #[error("listing the destination: {0}")]
    List(StoreError),
    #[error(
        "refusing to {verb} to {dest}: it {relation} {other}, and one index inside another would overwrite \
         or mix their pages; nothing was written\npublish to {other} itself or to a prefix outside it"
    )]
    Nested {
        verb: &'static str,
        dest: String,
        other: String,
        relation: &'static str,
    },
    #[error(
        "refusing to {verb} to {dest}: the new builds would not be the ones pip installs; nothing was {nothing}{}",
        bullets(problems)
    )]
    Ordering {
        verb: &'static str,
        dest: String,
        nothing: &'static str,
        problems: Vec<OrderingProblem>,
    },
    #[error("checking {dest}: {error}")]
    Check { dest: String, error: TransferError },
    #[error(
        "refusing to {verb} to {dest}: published objects are never replaced, and nothing was {nothing}{}\n{}",
        bullets(conflicts),
        next_step(verb, restage.as_deref())
    )]
    Conflicts {
        verb: &'static str,
        dest: String,
        nothing: &'static str,
        conflicts: Vec<Conflict>,
        /// The command that stages the same set under a prefix of its own (stage only).
        restage: Option<String>,
    },
    #[error("{0}\nthe index pages were not changed; fix the cause and run the same command again")]
    Transfer(TransferError),
    #[error(
        "all objects are in place, but writing the index failed: {0}\nrun `rockbuild index` on the destination (or this command again) to finish"
    )]
    Index(crate::index::Error),
    #[error(transparent)]
    Lease(#[from] crate::store::lease::LeaseError),
}

/// A refusal to replace a published object or to shadow a published version is a publish
/// conflict (6); a failed verification 5; a bad flag 2; an interrupted transfer 128+n.
impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Family(_) | Error::FamilySegment { .. } | Error::Nested { .. } => {
                ExitStatus::Usage
            }
            Error::NotVerified { .. } => ExitStatus::VerificationFailed,
            Error::Ordering { .. } | Error::Conflicts { .. } => ExitStatus::PublishConflict,
            Error::Transfer(error) => match error.interrupted {
                Some(signal) => ExitStatus::Signal(signal),
                None if error.is_conflict() => ExitStatus::PublishConflict,
                // A file that is no longer the one verified: a failed verification.
                None if error
                    .failures
                    .iter()
                    .any(|f| matches!(f, StoreError::Changed { .. })) =>
                {
                    ExitStatus::VerificationFailed
                }
                None => ExitStatus::Failure,
            },
            Error::Check { error, .. } => match error.interrupted {
                Some(signal) => ExitStatus::Signal(signal),
                None => ExitStatus::Failure,
            },
            Error::Index(error) => match error {
                crate::index::Error::NotWheels { .. } => error.exit_status(),
                _ => ExitStatus::Failure,
            },
            Error::Lease(error) => error.exit_status(),
            Error::Unverified { .. } | Error::List(_) | Error::SdkIndex { .. } => {
                ExitStatus::Failure
            }
        }
    }
}

/// What to do when a set meets files published under its names with other bytes (a rebuild
/// of the same versions, say): the command that gets it published.
fn next_step(verb: &str, restage: Option<&str>) -> String {
    match (verb, restage) {
        ("promote", _) => "a promoted file is final: build the set again under a version not yet \
                           released (a new --version-suffix), then stage, test and promote that"
            .into(),
        (_, Some(command)) => format!(
            "to stage this rebuild, give it a prefix of its own (named after the set, so running \
             this again is safe):\n  {command}\nor build it under a version not yet published (a \
             new --version-suffix) and stage that"
        ),
        (_, None) => "to publish a rebuild of the same versions, stage it under another prefix \
                      (--to), or build it under a version not yet published (a new \
                      --version-suffix) and stage that"
            .into(),
    }
}

fn bullets<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(|i| format!("\n  - {i}"))
        .collect::<String>()
}
