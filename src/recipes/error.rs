//! The recipes' one error type: a project naming a recipe that does not exist, a file a version
//! rule reads saying nothing usable, a combination a recipe refuses. Every stage that asks a
//! recipe passes it on unchanged (the build's `Error::Recipes`).

use std::path::PathBuf;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::ConfigError;
use crate::version::VersionError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The stack names a recipe this rockbuild does not have (at its line).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A file a recipe computes the version from is missing or says nothing usable.
    #[error("{project}: {}{}: {problem}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    VersionSource {
        project: String,
        path: PathBuf,
        line: Option<usize>,
        problem: String,
    },
    #[error(transparent)]
    Version(#[from] VersionError),
    /// A recipe refuses the combination it was given.
    #[error("{project}: {message}")]
    Recipe { project: String, message: String },
    /// A `--recipe-option` naming no project, no option of its recipe, or no on/off value.
    #[error("--recipe-option {given}: {message}")]
    Option { given: String, message: String },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Config(_)
            | Error::VersionSource { .. }
            | Error::Version(_)
            | Error::Recipe { .. }
            | Error::Option { .. } => ExitStatus::Usage,
        }
    }
}
