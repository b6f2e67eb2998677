//! The steps a recipe returns: what each does (a process, a file written or removed, the wheel
//! collected or installed, a smoke check) and how it uses the venv every project builds in.
//! The build's plan carries them; its executor runs them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::exec::Cmd;

/// An environment difference: variables a step sets on top of the start-up environment.
pub type EnvDiff = BTreeMap<String, String>;

/// What one step does.
#[derive(Clone, Debug)]
pub enum Action {
    /// A process.
    Run(Cmd),
    /// `rm -rf`, done by rockbuild.
    Remove { path: PathBuf },
    /// A generated file, written only when its content changes (mtimes stay stable).
    Write { path: PathBuf, content: String },
    /// Exactly one `<dist>-<version>-*.whl` must be in `dist_dir`; it is copied to the output.
    Collect { dist_dir: PathBuf },
    /// Installs the collected wheel: the command gets the wheel's path appended.
    InstallWheel(Cmd),
    /// A process that must print something (only an empty answer means failure: F24).
    Smoke(Cmd),
    /// The build machine's environment must hold these variables, set up before rockbuild
    /// starts by a tool it does not run (vcvars64.bat sets up MSVC); otherwise the build stops
    /// here and says how to set them up.
    RequireEnv { vars: Vec<String>, fix: String },
    /// A file the build machine's environment locates, copied into a directory of the tree.
    CopyIn(CopyIn),
}

/// A file copied into the tree from where a variable of the build machine's environment
/// points (only that machine knows the path: `%VCToolsRedistDir%`, `%libuv_ROOT%`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CopyIn {
    /// The variable naming the directory the file is taken from.
    pub var: String,
    pub file: FileIn,
    /// The directory it is copied into.
    pub into: PathBuf,
}

/// Which file of the variable's directory.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileIn {
    /// This path under it.
    At(String),
    /// The first file of this name anywhere under it (in path order).
    Find(String),
}

#[derive(Clone, Debug)]
pub struct Step {
    pub label: String,
    pub action: Action,
    /// What the step does to the venv every project builds in.
    pub venv: VenvUse,
    /// Why the step is there, when its label does not say (shown by `plan`).
    pub why: Option<&'static str>,
}

impl Step {
    /// The step with each placeholder of `values` replaced by its value (what the build made
    /// of a pinned project: [`super::built_version`]).
    pub fn filled(&self, values: &[(String, String)]) -> Step {
        let fill = |cmd: &Cmd| {
            values
                .iter()
                .fold(cmd.clone(), |cmd, (from, to)| cmd.replace_text(from, to))
        };
        let action = match &self.action {
            Action::Run(cmd) => Action::Run(fill(cmd)),
            Action::InstallWheel(cmd) => Action::InstallWheel(fill(cmd)),
            Action::Smoke(cmd) => Action::Smoke(fill(cmd)),
            Action::Write { path, content } => Action::Write {
                path: path.clone(),
                content: values
                    .iter()
                    .fold(content.clone(), |text, (from, to)| text.replace(from, to)),
            },
            other => other.clone(),
        };
        Step {
            action,
            ..self.clone()
        }
    }
}

/// How a step (or a whole project) uses the one venv every project builds in. Ordered: a
/// project's use is the largest of its steps'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum VenvUse {
    /// Touches it not at all (removing `dist/`, writing a file, collecting the wheel).
    #[default]
    None,
    /// Runs its Python and sees what is installed (a build, a smoke test).
    Reads,
    /// Installs or uninstalls (requirements, the project's own wheel).
    Changes,
}
