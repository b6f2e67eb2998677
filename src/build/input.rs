//! What `build` and `plan` act on: the build stage's input, resolved by `settings::build`
//! (flags, stack.yaml, families.yaml, the lock and the environment) and owned here, so the
//! stage never names the settings layer.

use std::path::PathBuf;

use pep440_rs::Version;

use super::compilers::CompilerCache;
use super::mode::ModeChoice;
use super::select::Selection;
use super::targets::TargetRequest;
use crate::env_vars::Environment;
use crate::lock::Lock;
use crate::platform::Platform;
use crate::recipes::OptionValues;
use crate::sdk::Venv;
use crate::sdk::install::{InstallSettings, Installer};
use crate::stack::{FamilyTable, Stack};
use crate::version::ReleaseType;

/// Everything `build` and `plan` act on.
#[derive(Clone, Debug)]
pub struct BuildSettings {
    pub stack: Stack,
    pub families: FamilyTable,
    pub output_dir: PathBuf,
    pub selection: Selection,
    pub lock: Option<LockFile>,
    pub sdk: SdkSettings,
    pub targets: TargetRequest,
    /// Per-family or multi-arch, and what chose it.
    pub mode: ModeChoice,
    pub release_type: ReleaseType,
    /// `--version-suffix` (unset: derived from the SDK version, as the reference).
    pub version_suffix: Option<String>,
    pub build_number: u32,
    /// The recipes' options as given (`--recipe-option`, the reference's flags for them).
    pub options: OptionValues,
    pub compiler_cache: CompilerCache,
    pub clean: bool,
    pub jobs: usize,
    /// Print the plan instead of running it (`plan`, `--dry-run`), as JSON with `--json`.
    pub dry_run: bool,
    pub json: bool,
    /// The start-up environment the build steps inherit.
    pub base_env: Environment,
    /// The platform the build is for (`--platform`, else this machine's).
    pub platform: Platform,
}

/// The lock the build follows and records its versions in.
#[derive(Clone, Debug)]
pub struct LockFile {
    pub path: PathBuf,
    pub lock: Lock,
}

/// The ROCm SDK of the build.
#[derive(Clone, Debug)]
pub struct SdkSettings {
    pub venv: Venv,
    /// `--install-rocm`: how to install it first.
    pub install: Option<InstallSettings>,
    /// `--rocm-sdk-version`, as given.
    pub spec_text: String,
    pub installer: Installer,
    pub cache_dir: PathBuf,
    /// The SDK version the lock records.
    pub locked_version: Option<Version>,
    /// The index the lock's build record names: the one installed from now, else the lock's.
    pub record_index_url: Option<String>,
}
