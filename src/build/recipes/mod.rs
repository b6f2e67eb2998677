//! Build recipes: for each project, the environment and the steps that turn its checkout into
//! a wheel. Recipes are data: they return commands with their own explicit environment, and
//! nothing here starts a process or touches the process environment (W10). The executor runs
//! what they return; `plan` prints it.

mod apex;
mod audio;
mod torch;
mod triton;
mod vision;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::env_vars::{self, Environment};
use crate::exec::{Cmd, Retry};
use crate::sdk::install::Installer;
use crate::sdk::{SdkInfo, Venv};
use crate::stack::{Project, RecipeKind};

use super::compilers::CompilerCache;
use super::plan::{Action, EnvDiff, Step};
use super::targets::TargetChoice;

pub use torch::ROCM_INIT;
pub use triton::{SUFFIX_KEY as TRITON_SUFFIX_KEY, setup_dir as triton_setup_dir};

/// A single build step may run this long before it is stopped.
const BUILD_TIMEOUT: Duration = Duration::from_secs(8 * 3600);
/// ... and stay silent this long (linking libtorch prints nothing for minutes).
const BUILD_IDLE: Duration = Duration::from_secs(45 * 60);
const PIP_TIMEOUT: Duration = Duration::from_secs(3600);
const PIP_IDLE: Duration = Duration::from_secs(15 * 60);
const QUICK_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// What the SDK looks like to the recipes. `known` is false when `plan` runs without an
/// installed SDK: paths are then placeholders and optional SDK directories count as present.
#[derive(Clone, Debug)]
pub struct SdkFacts {
    pub info: SdkInfo,
    pub known: bool,
}

impl SdkFacts {
    /// Whether `<root>/<relative>` is a directory (assumed when the SDK is not known yet).
    pub fn has_dir(&self, relative: &str) -> bool {
        !self.known || self.info.root.join(relative).is_dir()
    }

    pub fn path(&self, relative: &str) -> String {
        self.info.root.join(relative).display().to_string()
    }
}

/// Inputs shared by every project of a build.
#[derive(Clone, Debug)]
pub struct Shared<'a> {
    pub sdk: &'a SdkFacts,
    pub venv: &'a Venv,
    pub installer: Installer,
    pub cache_dir: &'a Path,
    pub output_dir: &'a Path,
    pub logs_dir: &'a Path,
    pub targets: &'a TargetChoice,
    /// The stack's local version suffix (`+rocm7.10.0`).
    pub suffix: String,
    pub build_number: u32,
    pub clean: bool,
    pub flash_attention: bool,
    pub compiler_cache: &'a CompilerCache,
    /// `triton==<version>` when triton is part of this build (torch pins it).
    pub triton_requirement: Option<String>,
    /// torch's wheel version when torch is part of this build (audio and vision pin it).
    pub torch_version: Option<String>,
    pub base_env: &'a Environment,
}

/// One project's inputs.
#[derive(Clone, Debug)]
pub struct RecipeInput<'a> {
    pub project: &'a Project,
    pub dir: &'a Path,
    /// The version handed to the build (torch appends `.post<N>` itself when N > 1).
    pub build_version: &'a str,
    /// Keys of triton's build_env.json (see [`triton`]).
    pub triton_build_env: &'a BTreeMap<String, String>,
    pub shared: &'a Shared<'a>,
}

/// What a recipe produces.
#[derive(Clone, Debug)]
pub struct Recipe {
    /// The project's environment difference (every step runs with it).
    pub env: EnvDiff,
    pub steps: Vec<Step>,
}

/// Builds the recipe of a project.
pub fn recipe(input: &RecipeInput<'_>) -> anyhow::Result<Recipe> {
    let common = common_env(input.shared);
    match input.project.recipe {
        RecipeKind::Torch => torch::recipe(input, common),
        RecipeKind::Audio => Ok(audio::recipe(input, common)),
        RecipeKind::Vision => Ok(vision::recipe(input, common)),
        RecipeKind::Triton => Ok(triton::recipe(input, common)),
        RecipeKind::Apex => Ok(apex::recipe(input, common)),
    }
}

/// The environment every project gets (F18). build_env.json is not merged here: its keys
/// only concern triton and go to triton's recipe (W9).
pub fn common_env(shared: &Shared<'_>) -> EnvDiff {
    let sdk = shared.sdk;
    let base = shared.base_env;
    let mut env = EnvDiff::new();
    let mut set = |key: &str, value: String| {
        env.insert(key.to_string(), value);
    };
    set("PYTHONUTF8", "1".into());
    // The venv acts as if activated: build scripts that run `python` or `pip` get the venv's.
    set("VIRTUAL_ENV", shared.venv.dir.display().to_string());
    set(
        env_vars::PATH,
        prepend_path(
            &[&sdk.info.bin, &shared.venv.bin()],
            base.get(env_vars::PATH),
        ),
    );
    set("CMAKE_PREFIX_PATH", sdk.info.cmake.display().to_string());
    set("ROCM_HOME", sdk.info.root.display().to_string());
    set("ROCM_PATH", sdk.info.root.display().to_string());
    set("PYTORCH_ROCM_ARCH", shared.targets.cmake_list());
    if base.get(env_vars::USE_KINETO).is_none() {
        set("USE_KINETO", "ON".into());
    }
    set("USE_GLOO", "ON".into());
    // clang's device-library search breaks when ROCM_PATH points at the SDK root.
    if sdk.has_dir("lib/llvm/amdgcn/bitcode") {
        set("HIP_DEVICE_LIB_PATH", sdk.path("lib/llvm/amdgcn/bitcode"));
    }
    if sdk.has_dir("lib/host-math") {
        set("BLAS", "OpenBLAS".into());
        set("OpenBLAS_HOME", sdk.path("lib/host-math"));
        set("OpenBLAS_LIB_NAME", "rocm-openblas".into());
    }
    // GCC 12+ false positives that -Werror turns into failures in PyTorch's tree.
    const WARNINGS: &str =
        "-Wno-error=maybe-uninitialized -Wno-error=uninitialized -Wno-error=restrict";
    set(
        "CXXFLAGS",
        append_flags(base.get(env_vars::CXXFLAGS), WARNINGS),
    );
    set(
        "CPPFLAGS",
        append_flags(base.get(env_vars::CPPFLAGS), WARNINGS),
    );
    for (key, value) in shared.compiler_cache.env() {
        set(&key, value);
    }
    env
}

/// `a:b:<inherited>`.
pub fn prepend_path(dirs: &[&Path], inherited: Option<&str>) -> String {
    let mut parts: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if let Some(rest) = inherited.filter(|r| !r.is_empty()) {
        parts.push(rest.to_string());
    }
    parts.join(":")
}

/// `<inherited> <ours>`: the user's flags stay, ours come last.
pub fn append_flags(inherited: Option<&str>, ours: &str) -> String {
    match inherited.map(str::trim).filter(|s| !s.is_empty()) {
        Some(inherited) => format!("{inherited} {ours}"),
        None => ours.to_string(),
    }
}

/// Steps of one project share its env, cwd and log file.
pub(crate) struct Steps<'a> {
    input: &'a RecipeInput<'a>,
    env: &'a EnvDiff,
    log: PathBuf,
    pub steps: Vec<Step>,
}

impl<'a> Steps<'a> {
    pub fn new(input: &'a RecipeInput<'a>, env: &'a EnvDiff) -> Self {
        let log = input
            .shared
            .logs_dir
            .join(format!("{}.log", input.project.name));
        Steps {
            input,
            env,
            log,
            steps: Vec::new(),
        }
    }

    fn cmd(&self, label: &str, cmd: Cmd, cwd: &Path) -> Cmd {
        cmd.label(format!("{}: {label}", self.input.project.name))
            .envs(self.env.iter().map(|(k, v)| (k.clone(), v.clone())))
            .cwd(cwd)
            .log_to(&self.log)
    }

    fn python(&self) -> Cmd {
        Cmd::new(self.input.shared.venv.python())
    }

    /// `rm -rf <dir>` (done by rockbuild, not a shell).
    pub fn remove(&mut self, dir: PathBuf) {
        let label = format!(
            "remove {}/",
            dir.strip_prefix(self.input.dir).unwrap_or(&dir).display()
        );
        self.steps.push(Step {
            label,
            action: Action::Remove { path: dir },
            mutates_venv: false,
        });
    }

    /// The usual clean-up: dist/ always (exactly one wheel must come out), build/ with --clean.
    pub fn clean(&mut self, build_root: &Path) {
        self.remove(build_root.join("dist"));
        if self.input.shared.clean {
            self.remove(build_root.join("build"));
        }
    }

    /// A venv-changing installer step (serialized with other projects' installer steps).
    pub fn installer(&mut self, label: &str, cmd: Cmd) {
        let cmd = self
            .cmd(label, cmd, self.input.dir)
            .timeout(PIP_TIMEOUT)
            .idle_timeout(PIP_IDLE)
            .retry(Retry {
                attempts: 3,
                backoff: Duration::from_secs(5),
                is_transient: crate::sdk::install::is_transient_download_error,
            });
        self.steps.push(Step {
            label: label.to_string(),
            action: Action::Run(cmd),
            mutates_venv: true,
        });
    }

    pub fn uninstall(&mut self, dist: &str) {
        let cmd = self
            .input
            .shared
            .installer
            .uninstall(self.input.shared.venv, &[dist]);
        self.installer(&format!("uninstall {dist}"), cmd);
    }

    /// `pip install -r <file>` when the file exists in the checkout.
    pub fn install_requirements(&mut self, relative: &str) {
        if self.input.dir.join(relative).is_file() {
            let cmd = self.install_cmd().args(["-r", relative]);
            self.installer(&format!("install {relative}"), cmd);
        }
    }

    pub fn install_cmd(&self) -> Cmd {
        self.input
            .shared
            .installer
            .install(self.input.shared.venv, self.input.shared.cache_dir)
    }

    /// The long step: `python <args>` in `cwd`.
    pub fn build(&mut self, label: &str, args: &[&str], cwd: &Path) {
        let cmd = self
            .cmd(label, self.python().args(args.iter().copied()), cwd)
            .timeout(BUILD_TIMEOUT)
            .idle_timeout(BUILD_IDLE);
        self.steps.push(Step {
            label: label.to_string(),
            action: Action::Run(cmd),
            mutates_venv: false,
        });
    }

    pub fn write(&mut self, path: PathBuf, content: String) {
        let label = format!(
            "write {}",
            path.strip_prefix(self.input.dir).unwrap_or(&path).display()
        );
        self.steps.push(Step {
            label,
            action: Action::Write { path, content },
            mutates_venv: false,
        });
    }

    /// Find exactly one `<dist>-<version>-*.whl` in `dist_dir` and copy it to the output.
    pub fn collect(&mut self, dist_dir: &Path) {
        self.steps.push(Step {
            label: "collect wheel".into(),
            action: Action::Collect {
                dist_dir: dist_dir.to_path_buf(),
            },
            mutates_venv: false,
        });
    }

    /// Install the collected wheel into the venv (its dependencies are the build's business).
    pub fn install_wheel(&mut self) {
        let shared = self.input.shared;
        let cmd = self
            .install_cmd()
            .arg(shared.installer.reinstall_flag())
            .arg("--no-deps");
        let cmd = self
            .cmd("install wheel", cmd, shared.output_dir)
            .timeout(PIP_TIMEOUT)
            .idle_timeout(PIP_IDLE);
        self.steps.push(Step {
            label: "install wheel".into(),
            action: Action::InstallWheel(cmd),
            mutates_venv: true,
        });
    }

    /// `python -c <code>` outside the source tree; fails unless it prints something (F24).
    pub fn smoke(&mut self, code: &str) {
        let shared = self.input.shared;
        let cmd = self
            .cmd(
                "smoke test",
                self.python().args(["-c", code]),
                shared.output_dir,
            )
            .timeout(QUICK_TIMEOUT)
            .capture_stdout();
        self.steps.push(Step {
            label: "smoke test".into(),
            action: Action::Smoke(cmd),
            mutates_venv: false,
        });
    }
}
