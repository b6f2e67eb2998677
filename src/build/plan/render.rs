//! The plan as people read it (`plan`, `build --dry-run`) and as machines do (`--json`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use super::{Action, CopyIn, Dependency, EnvDiff, FileIn, Plan, ProjectPlan, Step, VenvUse};
use crate::build::mode::{BuildMode, ModeChoice, SplitPlan};
use crate::build::targets::TargetChoice;
use crate::exec::Cmd;
use crate::platform::Platform;
use crate::recipes::{WheelVersion, built_version};
use crate::sdk::install::Installer;
use crate::sourced::Sourced;
use crate::version::ReleaseType;

/// A step as shown by `plan` and recorded in fingerprints.
#[derive(Clone, Debug, Serialize)]
pub struct StepView {
    pub label: String,
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub argv: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The full environment difference of the step (`null` = removed).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_sha256: Option<String>,
    /// Variables the build machine's environment must hold (`require-env`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vars: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy: Option<CopyIn>,
    pub venv: VenvUse,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<&'static str>,
}

/// `text` with each placeholder of `values` replaced.
fn fill(text: &str, values: &[(String, String)]) -> String {
    values
        .iter()
        .fold(text.to_string(), |text, (from, to)| text.replace(from, to))
}

impl StepView {
    /// The view as shown: placeholders of predicted pins read as the predictions.
    fn shown(mut self, values: &[(String, String)]) -> Self {
        self.argv = self.argv.iter().map(|a| fill(a, values)).collect();
        for value in self.env.values_mut().flatten() {
            *value = fill(value, values);
        }
        self
    }

    pub fn of(step: &Step) -> Self {
        let mut view = StepView {
            label: step.label.clone(),
            kind: "",
            argv: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
            path: None,
            content_sha256: None,
            vars: Vec::new(),
            copy: None,
            venv: step.venv,
            why: step.why,
        };
        let from_cmd = |cmd: &Cmd, view: &mut StepView| {
            view.argv = cmd.argv_display();
            view.cwd = cmd.get_cwd().map(|p| p.display().to_string());
            view.env = cmd.env_display().into_iter().collect();
        };
        match &step.action {
            Action::Run(cmd) => {
                view.kind = "run";
                from_cmd(cmd, &mut view);
            }
            Action::InstallWheel(cmd) => {
                view.kind = "install-wheel";
                from_cmd(cmd, &mut view);
                view.argv.push("<collected wheel>".into());
            }
            Action::Smoke(cmd) => {
                view.kind = "smoke";
                from_cmd(cmd, &mut view);
            }
            Action::Remove { path } => {
                view.kind = "remove";
                view.path = Some(path.display().to_string());
            }
            Action::Write { path, content } => {
                view.kind = "write";
                view.path = Some(path.display().to_string());
                view.content_sha256 = Some(crate::fsutil::sha256_hex(content.as_bytes()));
            }
            Action::Collect { dist_dir } => {
                view.kind = "collect";
                view.path = Some(dist_dir.display().to_string());
            }
            Action::RequireEnv { vars, .. } => {
                view.kind = "require-env";
                view.vars = vars.clone();
            }
            Action::CopyIn(copy) => {
                view.kind = "copy";
                view.path = Some(copy.into.display().to_string());
                view.copy = Some(copy.clone());
            }
        }
        view
    }
}

#[derive(Serialize)]
struct PlanView<'a> {
    platform: Platform,
    root: &'a Sourced<PathBuf>,
    output_dir: String,
    venv: String,
    installer: Installer,
    sdk: SdkView<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sdk_install: Vec<Vec<String>>,
    targets: &'a TargetChoice,
    #[serde(skip_serializing_if = "per_family")]
    mode: &'a ModeChoice,
    #[serde(skip_serializing_if = "<[SplitPlan]>::is_empty")]
    splits: &'a [SplitPlan],
    release_type: ReleaseType,
    version_suffix: &'a str,
    build_number: u32,
    compiler_cache: Option<&'static str>,
    jobs: usize,
    clean: bool,
    projects: Vec<ProjectView<'a>>,
    venv_turns: &'a [Vec<String>],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
}

#[derive(Serialize)]
struct SdkView<'a> {
    version: &'a str,
    root: String,
    known: bool,
    targets: &'a [String],
    python: &'a str,
}

#[derive(Serialize)]
struct ProjectView<'a> {
    name: &'a str,
    dist: Option<&'a str>,
    recipe: &'a str,
    dir: String,
    commit: Option<&'a str>,
    /// `null`: decided by the build.
    version: Option<&'a str>,
    /// Given to the build, predicted (from where), or decided by the build (why).
    version_rule: &'a WheelVersion,
    wheel: Option<&'a str>,
    targets: Vec<&'a str>,
    after: &'a [Dependency],
    venv: VenvUse,
    log: String,
    fingerprint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reuse: Option<ReuseView<'a>>,
    env: EnvDiff,
    steps: Vec<StepView>,
}

/// A project left out of the build: the earlier build's wheel it uses.
#[derive(Serialize)]
struct ReuseView<'a> {
    left_out_by: &'a str,
    wheel: &'a str,
    sha256: &'a str,
}

impl Plan {
    /// The pins on predicted versions, as shown: the placeholder the executor fills in with
    /// the built wheel's version reads as the prediction (a decided one stays a placeholder).
    fn predicted_pins(&self) -> Vec<(String, String)> {
        self.projects
            .iter()
            .filter_map(|p| match &p.version {
                WheelVersion::Predicted { version, .. } => {
                    Some((built_version(&p.name), version.clone()))
                }
                _ => None,
            })
            .collect()
    }

    fn shown_env(&self, env: &EnvDiff) -> EnvDiff {
        let pins = self.predicted_pins();
        env.iter()
            .map(|(k, v)| (k.clone(), fill(v, &pins)))
            .collect()
    }

    pub fn to_json(&self) -> serde_json::Result<String> {
        let view = PlanView {
            platform: self.platform,
            root: &self.root,
            output_dir: self.output_dir.display().to_string(),
            venv: self.venv.dir.display().to_string(),
            installer: self.installer,
            sdk: SdkView {
                version: &self.sdk.info.version,
                root: self.sdk.info.root.display().to_string(),
                known: self.sdk.known,
                targets: &self.sdk.info.targets,
                python: &self.sdk.info.python,
            },
            sdk_install: self.sdk_install.iter().map(Cmd::argv_display).collect(),
            targets: &self.targets,
            mode: &self.mode,
            splits: &self.splits,
            release_type: self.release_type,
            version_suffix: &self.suffix,
            build_number: self.build_number,
            compiler_cache: self.compiler_cache.name(),
            jobs: self.jobs,
            clean: self.clean,
            projects: self
                .projects
                .iter()
                .map(|p| ProjectView {
                    name: &p.name,
                    dist: p.dist.as_deref(),
                    recipe: p.recipe,
                    dir: p.dir.display().to_string(),
                    commit: p.source.head.as_deref(),
                    version: p.version.known(),
                    version_rule: &p.version,
                    wheel: p.wheel_glob.as_deref(),
                    targets: self.targets.targets.iter().map(|t| t.as_str()).collect(),
                    after: &p.after,
                    venv: p.venv,
                    log: p.log.display().to_string(),
                    fingerprint: p.fingerprint.as_deref(),
                    reuse: p.reuse.as_ref().map(|r| ReuseView {
                        left_out_by: &r.flag,
                        wheel: &r.wheel,
                        sha256: &r.sha256,
                    }),
                    env: self.shown_env(&p.env),
                    steps: p
                        .steps
                        .iter()
                        .map(|s| StepView::of(s).shown(&self.predicted_pins()))
                        .collect(),
                })
                .collect(),
            venv_turns: &self.venv_turns,
            notes: &self.notes,
        };
        let mut text = serde_json::to_string_pretty(&view)?;
        text.push('\n');
        Ok(text)
    }

    /// The plan for people: a header, then per project its version, wheel, order, env and
    /// steps (each step shows only what it adds to the project's env).
    pub fn to_text(&self) -> String {
        let mut out = self.header();
        for project in &self.projects {
            out.push('\n');
            out.push_str(&self.project_text(project));
        }
        out
    }

    fn header(&self) -> String {
        let mut out = String::new();
        let sdk = &self.sdk.info;
        let _ = writeln!(out, "build plan");
        let _ = writeln!(out, "  platform   {}", self.platform);
        let _ = writeln!(
            out,
            "  sdk        rocm {} ({}), root {}",
            sdk.version,
            if self.sdk.known {
                "installed"
            } else {
                "not installed: paths are placeholders"
            },
            sdk.root.display()
        );
        let _ = writeln!(
            out,
            "  checkouts  {} (from {})",
            self.root.value.display(),
            self.root.source
        );
        let _ = writeln!(
            out,
            "  venv       {} ({}, python {})",
            self.venv.dir.display(),
            self.installer.as_str(),
            sdk.python
        );
        for cmd in &self.sdk_install {
            let _ = writeln!(out, "  install    {}", cmd.repro());
        }
        let _ = writeln!(out, "  targets    {}", self.targets.describe());
        if self.mode.mode == BuildMode::MultiArch {
            let _ = writeln!(
                out,
                "  mode       multi-arch (from {}): one build for every target; fat wheels split into a host wheel and one device wheel per target, kept in {}",
                self.mode.source,
                self.fat_dir.display()
            );
            for split in &self.splits {
                let _ = writeln!(
                    out,
                    "  split      {}: {} -> host wheel + {}-<target> for {}, each requiring {} ({} kernel packs under {})",
                    split.project,
                    split.wheel_glob,
                    split.spec.device_prefix,
                    crate::stack::families::join(&self.targets.targets),
                    split.spec.device_requires.join(", "),
                    split.spec.compression.scheme(),
                    split.spec.overlay_root,
                );
            }
        }
        let _ = writeln!(
            out,
            "  release    {}, suffix {}, build number {}",
            self.release_type.as_str(),
            self.suffix,
            self.build_number
        );
        let _ = writeln!(
            out,
            "  cache      {}",
            self.compiler_cache.name().unwrap_or("no compiler cache")
        );
        let _ = writeln!(
            out,
            "  jobs       {} project(s) at a time{}",
            self.jobs,
            if self.clean { ", --clean" } else { "" }
        );
        let turns: Vec<String> = self.venv_turns.iter().map(|t| t.join(" + ")).collect();
        let _ = writeln!(
            out,
            "  venv use   {} (one that changes the venv has it to itself; readers share it)",
            if turns.is_empty() {
                "nothing".to_string()
            } else {
                turns.join(", then ")
            }
        );
        let _ = writeln!(
            out,
            "  output     {} (logs in {})",
            self.output_dir.display(),
            self.logs_dir.display()
        );
        for note in &self.notes {
            let _ = writeln!(out, "  note       {note}");
        }
        out
    }

    fn project_text(&self, project: &ProjectPlan) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} {} -> {}",
            project.name,
            project.version.shown(),
            project
                .wheel_glob
                .as_deref()
                .unwrap_or("its source tree (no wheel)")
        );
        let _ = writeln!(out, "  recipe {}", project.recipe);
        let _ = writeln!(out, "  dir    {}", project.dir.display());
        if let Some(head) = &project.source.head {
            let _ = writeln!(out, "  commit {head}");
        }
        if let Some(reused) = &project.reuse {
            let _ = writeln!(
                out,
                "  reuse  {} (left out: {}): the wheel of an earlier build, used as it is; only its install step runs, when the venv lacks it",
                reused.wheel, reused.flag
            );
        }
        if project.after.is_empty() {
            let _ = writeln!(out, "  after  (nothing: starts at once)");
        }
        for (index, dependency) in project.after.iter().enumerate() {
            let reasons: Vec<&str> = dependency.reasons.iter().map(|r| r.describe()).collect();
            let _ = writeln!(
                out,
                "  {}  {} ({})",
                if index == 0 { "after" } else { "     " },
                dependency.project,
                reasons.join("; ")
            );
        }
        let _ = writeln!(
            out,
            "  venv   {}",
            match project.venv {
                VenvUse::Changes => "changes it (steps marked [venv]): has it to itself",
                VenvUse::Reads => "reads it: shares it with the other readers, never with a change",
                VenvUse::None => "does not use it",
            }
        );
        let _ = writeln!(out, "  log    {}", project.log.display());
        let _ = writeln!(out, "  env");
        for (key, value) in &self.shown_env(&project.env) {
            let shown = if crate::redact::is_secret_env_name(key) {
                "****".to_string()
            } else {
                crate::redact::redact_url(value)
            };
            let _ = writeln!(out, "    {key}={shown}");
        }
        let _ = writeln!(out, "  steps");
        // Numbers right-aligned to the widest, so labels line up past step 9.
        let width = project.steps.len().to_string().len();
        for (index, step) in project.steps.iter().enumerate() {
            let _ = writeln!(
                out,
                "    {:>width$}. {:<26} {}{}",
                index + 1,
                step.label,
                self.step_line(project, step),
                if step.venv == VenvUse::Changes {
                    "  [venv]"
                } else {
                    ""
                }
            );
            if let Some(why) = step.why {
                let _ = writeln!(out, "    {:width$}  why: {why}", "");
            }
        }
        out
    }

    /// A step as a shell line: what it does, with only the env it adds to the project's.
    fn step_line(&self, project: &ProjectPlan, step: &Step) -> String {
        let view = StepView::of(step).shown(&self.predicted_pins());
        let project_env = self.shown_env(&project.env);
        match view.kind {
            "remove" => format!("rm -rf {}", view.path.unwrap_or_default()),
            "write" => format!(
                "write {} (sha256 {})",
                view.path.unwrap_or_default(),
                &view.content_sha256.unwrap_or_default()[..12]
            ),
            "collect" => format!(
                "collect exactly one {} from {} into {}",
                project.wheel_glob.as_deref().unwrap_or("wheel"),
                view.path.unwrap_or_default(),
                self.output_dir.display()
            ),
            "require-env" => {
                let vars: Vec<String> = view
                    .vars
                    .iter()
                    .map(|v| self.platform.inherited(v))
                    .collect();
                format!("check that {} are set", vars.join(", "))
            }
            "copy" => match &view.copy {
                Some(CopyIn { var, file, into }) => {
                    let var = self.platform.inherited(var);
                    match file {
                        FileIn::At(path) => format!("copy {var}/{path} into {}", into.display()),
                        FileIn::Find(name) => {
                            format!("copy the first {name} under {var} into {}", into.display())
                        }
                    }
                }
                None => String::new(),
            },
            _ => {
                let quote = |s: &str| {
                    shlex::try_quote(s)
                        .map(|q| q.into_owned())
                        .unwrap_or_else(|_| s.to_string())
                };
                let extra: Vec<String> = view
                    .env
                    .iter()
                    .filter(|(k, v)| project_env.get(*k).map(String::as_str) != v.as_deref())
                    .map(|(k, v)| match v {
                        Some(v) => format!("{k}={}", quote(v)),
                        None => format!("-u {k}"),
                    })
                    .collect();
                let env = if extra.is_empty() {
                    String::new()
                } else {
                    format!("env {} ", extra.join(" "))
                };
                let argv: Vec<String> = view.argv.iter().map(|a| quote(a)).collect();
                format!(
                    "(cd {} && {env}{})",
                    view.cwd.unwrap_or_default(),
                    argv.join(" ")
                )
            }
        }
    }
}

fn per_family(mode: &&ModeChoice) -> bool {
    mode.mode.is_per_family()
}
