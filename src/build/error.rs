//! The build stage's one error type: every way `plan` or `build` refuses, each variant holding
//! the facts (project, flag, file, targets), and the exit status it maps to.

use std::path::PathBuf;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::{ConfigError, Target, families::join};
use crate::version::VersionError;

use super::source::SourceError;
use super::targets::TargetError;
use crate::recipes::Hint;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    // ---- the command line ----
    #[error("--dir `{given}`: expected NAME=DIR, e.g. --dir torch=../pytorch")]
    DirSyntax { given: String },
    #[error("{flag}: unknown project '{name}'{hint}; projects in {stack}: {known}")]
    UnknownProject {
        flag: String,
        name: String,
        hint: String,
        stack: String,
        known: String,
    },
    #[error(
        "{flag}: no project of {stack} is built by the `{recipe}` recipe; name the project with --dir NAME=DIR, --build NAME or --skip NAME"
    )]
    NoProjectForRecipe {
        flag: String,
        recipe: String,
        stack: String,
    },
    #[error("{first} and {second} contradict each other for project '{project}': keep one")]
    Contradiction {
        project: String,
        first: String,
        second: String,
    },
    #[error(
        "--arch-from-sdk needs the installed SDK to ask, and none is installed in the venv: install it first (`rockbuild install-rocm`)"
    )]
    ArchFromSdkWithoutSdk,
    #[error(
        "--platform {platform}: this machine runs {host}; a {platform} build is planned here (`rockbuild plan --platform {platform}`) and built on {platform}"
    )]
    ForeignPlatform {
        platform: crate::platform::Platform,
        host: crate::platform::Platform,
    },

    // ---- the stack and its checkouts ----
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{flag}: {} is not a directory: check the path, or drop the flag to use {}", dir.display(), default.display())]
    NotADirectory {
        flag: String,
        dir: PathBuf,
        default: PathBuf,
    },
    #[error("{flag}: no {project} checkout at {}: run `rockbuild checkout`, or point at it with --root-checkout-dir or --dir {project}=DIR", dir.display())]
    NoCheckout {
        flag: String,
        project: String,
        dir: PathBuf,
    },
    #[error("nothing to build: no checkouts in {} (looked for {dirs}); run `rockbuild checkout --root-checkout-dir {}` first", root.display(), root.display())]
    NothingToBuild { root: PathBuf, dirs: String },
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A file of the output directory the split moves, writes or removes.
    #[error("{project}: {}: {source}", path.display())]
    OutputFile {
        project: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file of the checkout its recipe reads is refused as content (a link, too large).
    #[error("{project}: {error}")]
    Content {
        project: String,
        error: crate::input::InputError,
    },
    #[error(transparent)]
    Version(#[from] VersionError),
    #[error(
        "projects {} wait for each other's wheels (their recipes' builds_against and pins): none of them can start; a recipe must not build against or pin a project that waits for it",
        projects.join(", ")
    )]
    Cycle { projects: Vec<String> },
    /// A recipe's answer: an unknown recipe, a version file, a combination it refuses.
    #[error(transparent)]
    Recipes(#[from] crate::recipes::Error),

    // ---- targets and the SDK ----
    #[error(transparent)]
    Targets(#[from] TargetError),
    #[error("{}", sdk_lacks_targets(missing, sdk_targets, inferred_from.as_deref()))]
    SdkLacksTargets {
        missing: Vec<Target>,
        sdk_targets: Vec<String>,
        /// The family and the `--index-url` it was inferred from, when it was.
        inferred_from: Option<String>,
    },
    /// `--rocm-sdk-version` is no specifier (the SDK stage's error says which and the fix).
    #[error(transparent)]
    SdkSpec(crate::sdk::Error),
    #[error(
        "cannot plan versions: the ROCm SDK version is unknown ({why} and --rocm-sdk-version `{spec}` is not an exact pin); install the SDK first (`rockbuild install-rocm`), or pass --rocm-sdk-version ==VERSION"
    )]
    SdkVersionUnknown { why: String, spec: String },
    #[error("the venv {} has rocm {installed}, but the lock records rocm {locked}: run `rockbuild install-rocm --lock <lock>` (or build with --install-rocm) to install the locked SDK", venv.display())]
    SdkNotLocked {
        venv: PathBuf,
        installed: String,
        locked: String,
    },
    #[error("the venv {} has rocm {installed}, which --rocm-sdk-version `{spec}` excludes: add --install-rocm to install a matching SDK", venv.display())]
    SdkExcluded {
        venv: PathBuf,
        installed: String,
        spec: String,
    },
    #[error("{flag}: `{tool}` is not on PATH{looked}; install it{install}")]
    NoCompilerCache {
        flag: &'static str,
        tool: &'static str,
        looked: String,
        install: &'static str,
    },

    // ---- the build itself ----
    #[error("{}", headline(failures, skipped, *total))]
    Failed {
        /// Each failed project's error, as data: `diagnostics` renders each below this line
        /// (message, log tail, repro, the recipe's hints).
        failures: Vec<ProjectFailure>,
        /// Projects not built because one whose wheel they need failed.
        skipped: Vec<String>,
        total: usize,
    },
    /// A multi-arch build's fat wheel that cannot be split (the split's own error says why).
    #[error("{project}: splitting {} into host and device wheels: {message}", wheel.display())]
    Split {
        project: String,
        wheel: PathBuf,
        message: String,
    },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Failed { .. } | Error::OutputFile { .. } | Error::Split { .. } => {
                ExitStatus::Failure
            }
            Error::Content { error, .. } => error.exit_status(),
            Error::Recipes(error) => error.exit_status(),
            Error::DirSyntax { .. }
            | Error::UnknownProject { .. }
            | Error::NoProjectForRecipe { .. }
            | Error::Contradiction { .. }
            | Error::ArchFromSdkWithoutSdk
            | Error::ForeignPlatform { .. }
            | Error::Config(_)
            | Error::NotADirectory { .. }
            | Error::NoCheckout { .. }
            | Error::NothingToBuild { .. }
            | Error::Source(_)
            | Error::Version(_)
            | Error::Cycle { .. }
            | Error::Targets(_)
            | Error::SdkLacksTargets { .. }
            | Error::SdkSpec(_)
            | Error::SdkVersionUnknown { .. }
            | Error::SdkNotLocked { .. }
            | Error::SdkExcluded { .. }
            | Error::NoCompilerCache { .. } => ExitStatus::Usage,
        }
    }
}

fn sdk_lacks_targets(missing: &[Target], sdk_targets: &[String], inferred: Option<&str>) -> String {
    let extras: Vec<String> = missing.iter().map(|t| format!("device-{t}")).collect();
    let listed = sdk_targets.join(",");
    match inferred {
        Some(inferred) => format!(
            "the targets of {inferred} are not all in the ROCm SDK installed from it: `rocm-sdk targets` lists {listed}, not {}; pass --amdgpu-family or --pytorch-rocm-arch with targets it has, or install from the index of the family you mean",
            join(missing)
        ),
        None => format!(
            "the installed ROCm SDK does not list {} among its targets ({listed}, from `rocm-sdk targets`): install its device packages (e.g. --rocm-extras {}) or build for targets it has",
            join(missing),
            extras.join(",")
        ),
    }
}

/// A project that failed: its error and the failure hints of its recipe.
#[derive(Debug)]
pub struct ProjectFailure {
    pub name: String,
    pub error: anyhow::Error,
    pub hints: &'static [Hint],
}

fn headline(failures: &[ProjectFailure], skipped: &[String], total: usize) -> String {
    let names: Vec<&str> = failures.iter().map(|f| f.name.as_str()).collect();
    let mut text = format!(
        "{} of {total} project(s) failed: {}",
        failures.len(),
        names.join(", ")
    );
    if !skipped.is_empty() {
        text.push_str(&format!(
            "; skipped (they need the wheel of a failed project): {}",
            skipped.join(", ")
        ));
    }
    text
}
