//! Continuous integration: the GitHub Actions matrix computed from the family and release
//! tables (`rockbuild matrix`), and the workflows generated from the same tables
//! (`rockbuild ci generate`).

mod chain;
pub mod files;
pub mod generate;
pub mod matrix;
mod parts;
pub mod releases;
pub mod workflow;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{table} has no entry for release type '{release_type}'")]
    NoRelease { table: String, release_type: String },
    #[error("--amdgpu-family: {0}")]
    Family(String),
    #[error("--amdgpu-family: empty family list")]
    NoFamilies,
    #[error(
        "--amdgpu-family: family '{0}' has no linux entry in the family table, so it is not built"
    )]
    NotBuiltOnLinux(String),
    #[error("--python-version: {0}")]
    Python(String),
    #[error(
        "--python-version: Python {python} is not built for release type '{release_type}' ({table} lists {known})"
    )]
    PythonNotInRelease {
        python: String,
        release_type: String,
        table: String,
        known: String,
    },
    #[error("--pytorch-ref: {0}")]
    Ref(String),
    #[error(
        "--full-tests: release type '{0}' does not publish, so nothing is staged for the full suite to install"
    )]
    FullTestsUnpublished(String),
    #[error(
        "release type '{release_type}' builds nothing: every family ({families}) is excluded from every ref ({refs}) in the family table"
    )]
    NothingToBuild {
        release_type: String,
        families: String,
        refs: String,
    },
    #[error(
        "the {matrix} matrix would have {jobs} jobs; GitHub runs at most {limit} per matrix: select fewer refs, families or Python versions",
        limit = matrix::GITHUB_MATRIX_LIMIT
    )]
    MatrixTooLarge { matrix: &'static str, jobs: usize },
    #[error(
        "{table}: release type 'ci' publishes, but it is what pull requests build: set `publish: false` (pull requests get no credentials)"
    )]
    PullRequestsPublish { table: String },
    #[error("{}: cannot write the workflows: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{dir}: the committed workflows differ from `rockbuild ci generate`: {files}; run `rockbuild ci generate` and commit the result"
    )]
    Stale { dir: String, files: String },
    #[error(
        "{dir}: no such directory, so there are no workflows to check; pass --output-dir the directory that holds them (run from the repository that has workflows/), or run `rockbuild ci generate` to write them"
    )]
    NothingToCheck { dir: String },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Config(_)
            | Error::NoRelease { .. }
            | Error::Family(_)
            | Error::NoFamilies
            | Error::NotBuiltOnLinux(_)
            | Error::Python(_)
            | Error::PythonNotInRelease { .. }
            | Error::Ref(_)
            | Error::FullTestsUnpublished(_)
            | Error::NothingToBuild { .. }
            | Error::MatrixTooLarge { .. }
            | Error::PullRequestsPublish { .. } => ExitStatus::Usage,
            Error::Write { .. } => ExitStatus::Failure,
            Error::Stale { .. } => ExitStatus::VerificationFailed,
            Error::NothingToCheck { .. } => ExitStatus::Usage,
        }
    }
}
