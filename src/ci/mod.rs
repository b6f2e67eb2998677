//! Continuous integration: the GitHub Actions matrix computed from the family and release
//! tables (`rockbuild matrix`).

pub mod matrix;
pub mod releases;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{table} has no entry for release type '{release_type}'")]
    NoRelease { table: String, release_type: String },
    #[error("--amdgpu-families: {0}")]
    Family(String),
    #[error("--amdgpu-families: empty family list")]
    NoFamilies,
    #[error(
        "--amdgpu-families: family '{0}' has no linux entry in the family table, so it is not built"
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
            | Error::NothingToBuild { .. }
            | Error::MatrixTooLarge { .. } => ExitStatus::Usage,
        }
    }
}
