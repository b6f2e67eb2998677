//! The steps recipes are made of: each one a process with the project's environment, cwd,
//! log file, timeout and idle watchdog, or an action rockbuild does itself (remove, write,
//! collect the wheel).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::step::{CopyIn, FileIn};
use super::{Action, EnvDiff, Step, VenvUse};
use super::{ProjectSteps, RecipeInput};
use crate::env_vars;
use crate::exec::{Cmd, Retry};

/// A single build step may run this long before it is stopped.
const BUILD_TIMEOUT: Duration = Duration::from_secs(8 * 3600);
/// ... and stay silent this long (linking libtorch prints nothing for minutes).
const BUILD_IDLE: Duration = Duration::from_secs(45 * 60);
const PIP_TIMEOUT: Duration = Duration::from_secs(3600);
const PIP_IDLE: Duration = Duration::from_secs(15 * 60);
const QUICK_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Steps of one project share its env, cwd and log file.
pub struct Steps<'a> {
    input: &'a RecipeInput<'a>,
    env: EnvDiff,
    log: PathBuf,
    steps: Vec<Step>,
    notes: Vec<String>,
}

impl<'a> Steps<'a> {
    /// Steps of `input`'s project, all with the environment `env`.
    pub fn new(input: &'a RecipeInput<'a>, env: EnvDiff) -> Self {
        let log = input
            .shared
            .logs_dir
            .join(format!("{}.log", input.project.name));
        Steps {
            input,
            env,
            log,
            steps: Vec::new(),
            notes: Vec::new(),
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
            venv: VenvUse::None,
            why: None,
        });
    }

    /// The usual clean-up: dist/ always (exactly one wheel must come out), build/ with --clean.
    pub fn clean(&mut self, build_root: &Path) {
        self.remove(build_root.join("dist"));
        if self.input.shared.clean {
            self.remove(build_root.join("build"));
        }
    }

    /// An installer step: it changes the venv, so its project takes a turn of its own there.
    pub fn installer(&mut self, label: &str, cmd: Cmd) {
        let cmd = self
            .cmd(label, cmd, self.input.dir)
            .timeout(PIP_TIMEOUT)
            .idle_timeout(PIP_IDLE)
            .retry(Retry {
                attempts: 3,
                backoff: Duration::from_secs(5),
                is_transient: crate::pip::is_transient,
            });
        self.steps.push(Step {
            label: label.to_string(),
            action: Action::Run(cmd),
            venv: VenvUse::Changes,
            why: None,
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

    /// `pip install -r <file>` when the file exists in the checkout (it must be among the
    /// recipe's `reads()`).
    pub fn install_requirements(&mut self, relative: &str) {
        if self.input.files.exists(relative) {
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

    /// The project's steps, with its environment.
    pub fn finish(self) -> ProjectSteps {
        ProjectSteps {
            env: self.env,
            steps: self.steps,
            notes: self.notes,
        }
    }

    /// Says why the step added last is there (shown by `plan`).
    pub fn because(&mut self, why: &'static str) {
        if let Some(step) = self.steps.last_mut() {
            step.why = Some(why);
        }
    }

    /// Something a reader of the plan should know about this project.
    pub fn note(&mut self, note: String) {
        self.notes.push(note);
    }

    /// The build machine's environment must hold `vars` (set up before rockbuild starts);
    /// `fix` says how to set them up.
    pub fn require_env(&mut self, label: &str, vars: &[&str], fix: &str, why: &'static str) {
        self.steps.push(Step {
            label: label.to_string(),
            action: Action::RequireEnv {
                vars: vars.iter().map(|v| v.to_string()).collect(),
                fix: fix.to_string(),
            },
            venv: VenvUse::None,
            why: Some(why),
        });
    }

    /// Windows: the build compiles and links with the MSVC environment vcvars64.bat set up,
    /// which must be in place before rockbuild starts (it is inherited by every process).
    pub fn require_msvc(&mut self) {
        self.require_env(
            "MSVC environment",
            &[env_vars::VCINSTALLDIR, env_vars::VC_TOOLS_REDIST_DIR],
            "set up MSVC before starting rockbuild: run it from an \"x64 Native Tools Command Prompt\" or after `vcvars64.bat`; in GitHub Actions after ilammy/msvc-dev-cmd (the generated workflows do)",
            "vcvars64.bat must run first: with DISTUTILS_USE_SDK=1 the build uses the MSVC tools and Windows SDK it set up instead of looking for them",
        );
    }

    /// Copies `file` from the directory `var` names on the build machine into `into`.
    pub fn copy_in(&mut self, var: &str, file: FileIn, into: PathBuf, why: &'static str) {
        let name = match &file {
            FileIn::At(path) => path.rsplit('/').next().unwrap_or(path).to_string(),
            FileIn::Find(name) => name.clone(),
        };
        self.steps.push(Step {
            label: format!("copy {name}"),
            action: Action::CopyIn(CopyIn {
                var: var.to_string(),
                file,
                into,
            }),
            venv: VenvUse::None,
            why: Some(why),
        });
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
            venv: VenvUse::Reads,
            why: None,
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
            venv: VenvUse::None,
            why: None,
        });
    }

    /// Find exactly one `<dist>-<version>-*.whl` in `dist_dir` and copy it to the output.
    pub fn collect(&mut self, dist_dir: &Path) {
        self.steps.push(Step {
            label: "collect wheel".into(),
            action: Action::Collect {
                dist_dir: dist_dir.to_path_buf(),
            },
            venv: VenvUse::None,
            why: None,
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
            venv: VenvUse::Changes,
            why: None,
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
            venv: VenvUse::Reads,
            why: None,
        });
    }
}
