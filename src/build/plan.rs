//! The build plan: for every project its version, wheel name, dependencies, environment and
//! steps, computed before anything runs. `plan` and `build --dry-run` print it (text or
//! JSON); the executor walks it; the build cache fingerprints it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::Serialize;

use super::compilers::{CompilerCache, LAUNCHER_VARS};
use super::recipes::{self, RecipeInput, SdkFacts, Shared};
use super::source::{self, SourceState};
use super::targets::TargetChoice;
use crate::env_vars::Environment;
use crate::exec::Cmd;
use crate::lock::LockedProject;
use crate::sdk::Venv;
use crate::sdk::install::Installer;
use crate::stack::{FamilyTable, Project, RecipeKind};
use crate::version::{self, ReleaseType};

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
}

#[derive(Clone, Debug)]
pub struct Step {
    pub label: String,
    pub action: Action,
    /// Changes the venv (installs, uninstalls): such steps of different projects never overlap.
    pub mutates_venv: bool,
}

/// One project's part of the plan.
#[derive(Clone, Debug)]
pub struct ProjectPlan {
    pub name: String,
    /// Distribution name of the wheel (`torch`, `torchaudio`, ...).
    pub dist: String,
    pub recipe: RecipeKind,
    pub dir: PathBuf,
    /// The version the wheel carries (normalized PEP 440).
    pub version: String,
    /// `torch-2.10.0a0+rocm7.10.0-*.whl`.
    pub wheel_glob: String,
    /// Projects whose wheel must be built and installed first.
    pub after: Vec<String>,
    pub env: EnvDiff,
    pub steps: Vec<Step>,
    pub log: PathBuf,
    pub source: SourceState,
    /// Cache key over every input; `None` when the sources cannot be fingerprinted (no git).
    pub fingerprint: Option<String>,
}

/// The whole build.
#[derive(Clone, Debug)]
pub struct Plan {
    pub output_dir: PathBuf,
    pub logs_dir: PathBuf,
    pub venv: Venv,
    pub installer: Installer,
    pub sdk: SdkFacts,
    /// The SDK install commands (`--install-rocm`), shown by `plan`.
    pub sdk_install: Vec<Cmd>,
    pub targets: TargetChoice,
    pub release_type: ReleaseType,
    pub suffix: String,
    pub build_number: u32,
    pub flash_attention: bool,
    pub compiler_cache: CompilerCache,
    pub jobs: usize,
    pub clean: bool,
    pub projects: Vec<ProjectPlan>,
    /// Things a reader of the plan should know (placeholders, ignored inputs).
    pub notes: Vec<String>,
}

/// A project selected for the build, with its checkout and lock entry.
#[derive(Clone, Debug)]
pub struct Selected<'a> {
    pub project: &'a Project,
    pub dir: PathBuf,
    pub locked: Option<&'a LockedProject>,
}

/// Everything the plan is computed from.
#[derive(Clone, Debug)]
pub struct PlanInputs<'a> {
    pub projects: Vec<Selected<'a>>,
    pub families: &'a FamilyTable,
    pub sdk: SdkFacts,
    pub sdk_install: Vec<Cmd>,
    pub venv: Venv,
    pub installer: Installer,
    pub cache_dir: PathBuf,
    pub output_dir: PathBuf,
    pub targets: TargetChoice,
    pub release_type: ReleaseType,
    /// `--version-suffix` (empty = derive from the SDK version, as the reference).
    pub version_suffix: Option<String>,
    pub build_number: u32,
    /// `--[no-]enable-pytorch-flash-attention`.
    pub flash_attention: Option<bool>,
    pub compiler_cache: CompilerCache,
    pub clean: bool,
    pub jobs: usize,
    pub base_env: &'a Environment,
    pub notes: Vec<String>,
}

/// Projects that compile against the torch installed in the venv.
pub fn needs_installed_torch(kind: RecipeKind) -> bool {
    matches!(
        kind,
        RecipeKind::Audio | RecipeKind::Vision | RecipeKind::Apex
    )
}

/// Computes the plan. Reads the checkouts (git2, version files) but runs nothing.
pub fn assemble(inputs: PlanInputs<'_>) -> anyhow::Result<Plan> {
    let sdk_version = &inputs.sdk.info.version;
    let suffix = match inputs
        .version_suffix
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        Some(given) => given.to_string(),
        None => version::rocm_suffix(sdk_version)?,
    };
    let logs_dir = inputs.output_dir.join("logs");

    // Sources and versions first: torch pins triton's version, audio/vision pin torch's.
    let mut states = Vec::new();
    for selected in &inputs.projects {
        let skip: &[&str] = if selected.project.recipe == RecipeKind::Torch {
            &[recipes::ROCM_INIT]
        } else {
            &[]
        };
        let state = source::inspect(&selected.project.name, &selected.dir, selected.locked, skip)?;
        states.push(state);
    }
    let mut versions: Vec<(String, String)> = Vec::new(); // (build version, wheel version)
    let mut triton_build_envs = Vec::new();
    for (selected, state) in inputs.projects.iter().zip(&states) {
        let name = &selected.project.name;
        let build_env = if selected.project.recipe == RecipeKind::Triton {
            read_build_env(&selected.dir)?
        } else {
            BTreeMap::new()
        };
        let pair = match selected.project.recipe {
            RecipeKind::Triton => {
                let base = triton_base_version(&selected.dir)?;
                // setup.py's rule: `+git<sha8>` unless on a release* branch or not in git.
                let on_release = state
                    .branch
                    .as_deref()
                    .is_some_and(|b| b.starts_with("release"));
                let git = state.head.as_deref().filter(|_| !on_release);
                let env_suffix = version::triton_env_suffix(
                    build_env
                        .get(recipes::TRITON_SUFFIX_KEY)
                        .map(String::as_str),
                    &suffix,
                );
                let v = version::triton_version(&base, git, &env_suffix)?;
                (v.clone(), v)
            }
            kind => {
                let base = read_version_txt(name, &selected.dir)?;
                let commit = if inputs.release_type.tags_commit() && kind != RecipeKind::Apex {
                    state.upstream.as_deref()
                } else {
                    None
                };
                let build = version::project_version(name, &base, &suffix, commit)?;
                // PyTorch appends `.post<N>` to PYTORCH_BUILD_VERSION for build numbers > 1.
                let wheel = if kind == RecipeKind::Torch && inputs.build_number > 1 {
                    version::normalize(
                        &format!("{name}: version with build number"),
                        &format!("{build}.post{}", inputs.build_number),
                    )?
                } else {
                    build.clone()
                };
                (build, wheel)
            }
        };
        versions.push(pair);
        triton_build_envs.push(build_env);
    }
    let version_of = |kind: RecipeKind| {
        inputs
            .projects
            .iter()
            .zip(&versions)
            .find(|(s, _)| s.project.recipe == kind)
            .map(|(_, v)| v.1.clone())
    };
    let triton_version = version_of(RecipeKind::Triton);
    let torch_version = version_of(RecipeKind::Torch);
    let triton_dist = inputs
        .projects
        .iter()
        .find(|s| s.project.recipe == RecipeKind::Triton)
        .map(|s| s.project.wheel.clone());

    // F21: an explicit flag wins; without a triton build, off; else on when a target has it.
    let flash_attention = match inputs.flash_attention {
        Some(explicit) => explicit,
        None => {
            triton_version.is_some() && inputs.families.any_flash_attention(&inputs.targets.targets)
        }
    };

    let shared = Shared {
        sdk: &inputs.sdk,
        venv: &inputs.venv,
        installer: inputs.installer,
        cache_dir: &inputs.cache_dir,
        output_dir: &inputs.output_dir,
        logs_dir: &logs_dir,
        targets: &inputs.targets,
        suffix: suffix.clone(),
        build_number: inputs.build_number,
        clean: inputs.clean,
        flash_attention,
        compiler_cache: &inputs.compiler_cache,
        triton_requirement: triton_version
            .as_ref()
            .zip(triton_dist.as_ref())
            .map(|(v, d)| format!("{d}=={v}")),
        torch_version: torch_version.clone(),
        base_env: inputs.base_env,
    };
    let torch_name = inputs
        .projects
        .iter()
        .find(|s| s.project.recipe == RecipeKind::Torch)
        .map(|s| s.project.name.clone());

    let mut projects: Vec<ProjectPlan> = Vec::new();
    for ((selected, state), ((build_version, wheel_version), build_env)) in inputs
        .projects
        .iter()
        .zip(states)
        .zip(versions.iter().zip(&triton_build_envs))
    {
        let project = selected.project;
        let recipe = recipes::recipe(&RecipeInput {
            project,
            dir: &selected.dir,
            build_version,
            triton_build_env: build_env,
            shared: &shared,
        })
        .with_context(|| format!("planning {}", project.name))?;
        let after = match &torch_name {
            Some(torch) if needs_installed_torch(project.recipe) => vec![torch.clone()],
            _ => Vec::new(),
        };
        let mut plan = ProjectPlan {
            name: project.name.clone(),
            dist: project.wheel.clone(),
            recipe: project.recipe,
            dir: selected.dir.clone(),
            version: wheel_version.clone(),
            wheel_glob: format!(
                "{}-{}-*.whl",
                crate::wheel::filename::escape_name(&project.wheel),
                wheel_version
            ),
            after,
            env: recipe.env,
            steps: recipe.steps,
            log: logs_dir.join(format!("{}.log", project.name)),
            source: state,
            fingerprint: None,
        };
        let deps: Vec<Option<String>> = plan
            .after
            .iter()
            .map(|d| {
                projects
                    .iter()
                    .find(|p| &p.name == d)
                    .and_then(|p| p.fingerprint.clone())
            })
            .collect();
        plan.fingerprint = fingerprint(&plan, selected.locked, &inputs.sdk, &inputs.targets, &deps);
        projects.push(plan);
    }

    Ok(Plan {
        output_dir: inputs.output_dir,
        logs_dir,
        venv: inputs.venv,
        installer: inputs.installer,
        sdk: inputs.sdk,
        sdk_install: inputs.sdk_install,
        targets: inputs.targets,
        release_type: inputs.release_type,
        suffix,
        build_number: inputs.build_number,
        flash_attention,
        compiler_cache: inputs.compiler_cache,
        jobs: inputs.jobs,
        clean: inputs.clean,
        projects,
        notes: inputs.notes,
    })
}

/// `<dir>/version.txt`, the base version of torch, audio, vision and apex.
pub fn read_version_txt(project: &str, dir: &Path) -> anyhow::Result<String> {
    let path = dir.join("version.txt");
    let text = fs_err::read_to_string(&path)
        .map_err(|e| crate::exit::usage(format!("{project}: cannot read its base version: {e}")))?;
    let version = text.lines().next().unwrap_or_default().trim().to_string();
    if version.is_empty() {
        return Err(crate::exit::usage(format!(
            "{project}: {} is empty; it must hold the base version (e.g. 2.10.0a0)",
            path.display()
        )));
    }
    Ok(version)
}

/// triton's base version: `TRITON_VERSION = "X"` (or older `version="X" + ...`) in its setup.py.
pub fn triton_base_version(dir: &Path) -> anyhow::Result<String> {
    let setup = recipes::triton_setup_dir(dir).join("setup.py");
    let text = fs_err::read_to_string(&setup)
        .map_err(|e| crate::exit::usage(format!("triton: cannot read its version: {e}")))?;
    version::triton_base_version(&text)
        .ok_or_else(|| {
            crate::exit::usage(format!(
                "triton: no `TRITON_VERSION = \"X.Y.Z\"` line in {}; rockbuild computes triton's version up front so torch can pin it",
                setup.display()
            ))
        })
}

/// Triton's build_env.json (written by its checkout), as string pairs.
pub fn read_build_env(dir: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let path = dir.join("build_env.json");
    let Ok(text) = fs_err::read_to_string(&path) else {
        return Ok(BTreeMap::new());
    };
    let map: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text).map_err(|e| {
        crate::exit::usage(format!(
            "{}:{}: not a JSON object of strings: {e}",
            path.display(),
            e.line()
        ))
    })?;
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s)),
            other => Err(crate::exit::usage(format!(
                "{}: `{k}` must be a string, not {other}",
                path.display()
            ))),
        })
        .collect()
}

/// The cache key of a project: its sources (HEAD + uncommitted changes, hipify stamp), every
/// step's argv, cwd and environment (clean-up steps and compiler launchers aside: they do not
/// change the output),
/// its version, the SDK version, the targets, the venv's Python and the keys of the projects
/// it builds against.
fn fingerprint(
    plan: &ProjectPlan,
    locked: Option<&LockedProject>,
    sdk: &SdkFacts,
    targets: &TargetChoice,
    deps: &[Option<String>],
) -> Option<String> {
    let digest = plan.source.digest.as_ref()?;
    let deps: Vec<&String> = deps.iter().map(Option::as_ref).collect::<Option<_>>()?;
    #[derive(Serialize)]
    struct Key<'a> {
        project: &'a str,
        source: &'a str,
        hipify: Option<&'a str>,
        version: &'a str,
        sdk: &'a str,
        python: &'a str,
        targets: Vec<&'a str>,
        steps: Vec<StepView>,
        deps: Vec<&'a String>,
    }
    let steps = plan
        .steps
        .iter()
        // Clean-up steps (`--clean` removes build/) do not change what is built.
        .filter(|s| !matches!(s.action, Action::Remove { .. }))
        .map(|s| {
            let mut view = StepView::of(s);
            view.env.retain(|k, _| !LAUNCHER_VARS.contains(&k.as_str()));
            view
        })
        .collect();
    let key = Key {
        project: &plan.name,
        source: digest,
        hipify: locked
            .and_then(|l| l.hipify.as_ref())
            .map(|h| h.result_tree.as_str()),
        version: &plan.version,
        sdk: &sdk.info.version,
        python: &sdk.info.python,
        targets: targets.targets.iter().map(|t| t.as_str()).collect(),
        steps,
        deps,
    };
    let bytes = serde_json::to_vec(&key).ok()?;
    Some(crate::fsutil::sha256_hex(&bytes))
}

// ---- rendering ----

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
    pub changes_venv: bool,
}

impl StepView {
    pub fn of(step: &Step) -> Self {
        let mut view = StepView {
            label: step.label.clone(),
            kind: "",
            argv: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
            path: None,
            content_sha256: None,
            changes_venv: step.mutates_venv,
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
        }
        view
    }
}

#[derive(Serialize)]
struct PlanView<'a> {
    output_dir: String,
    venv: String,
    installer: Installer,
    sdk: SdkView<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sdk_install: Vec<Vec<String>>,
    targets: &'a TargetChoice,
    release_type: ReleaseType,
    version_suffix: &'a str,
    build_number: u32,
    flash_attention: bool,
    compiler_cache: Option<&'static str>,
    jobs: usize,
    clean: bool,
    projects: Vec<ProjectView<'a>>,
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
    dist: &'a str,
    recipe: RecipeKind,
    dir: String,
    commit: Option<&'a str>,
    version: &'a str,
    wheel: &'a str,
    targets: Vec<&'a str>,
    after: &'a [String],
    log: String,
    fingerprint: Option<&'a str>,
    env: &'a EnvDiff,
    steps: Vec<StepView>,
}

impl Plan {
    pub fn to_json(&self) -> anyhow::Result<String> {
        let view = PlanView {
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
            release_type: self.release_type,
            version_suffix: &self.suffix,
            build_number: self.build_number,
            flash_attention: self.flash_attention,
            compiler_cache: self.compiler_cache.name(),
            jobs: self.jobs,
            clean: self.clean,
            projects: self
                .projects
                .iter()
                .map(|p| ProjectView {
                    name: &p.name,
                    dist: &p.dist,
                    recipe: p.recipe,
                    dir: p.dir.display().to_string(),
                    commit: p.source.head.as_deref(),
                    version: &p.version,
                    wheel: &p.wheel_glob,
                    targets: self.targets.targets.iter().map(|t| t.as_str()).collect(),
                    after: &p.after,
                    log: p.log.display().to_string(),
                    fingerprint: p.fingerprint.as_deref(),
                    env: &p.env,
                    steps: p.steps.iter().map(StepView::of).collect(),
                })
                .collect(),
            notes: &self.notes,
        };
        let mut text = serde_json::to_string_pretty(&view).context("serializing the plan")?;
        text.push('\n');
        Ok(text)
    }

    /// The plan for people: a header, then per project its version, wheel, order, env and
    /// steps (each step shows only what it adds to the project's env).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let sdk = &self.sdk.info;
        let _ = writeln!(out, "build plan");
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
            "  venv       {} ({}, python {})",
            self.venv.dir.display(),
            self.installer.as_str(),
            sdk.python
        );
        for cmd in &self.sdk_install {
            let _ = writeln!(out, "  install    {}", cmd.repro());
        }
        let _ = writeln!(out, "  targets    {}", self.targets.describe());
        let _ = writeln!(
            out,
            "  release    {}, suffix {}, build number {}",
            self.release_type.as_str(),
            self.suffix,
            self.build_number
        );
        let _ = writeln!(
            out,
            "  attention  flash/mem-efficient attention {}",
            if self.flash_attention { "ON" } else { "OFF" }
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
        let _ = writeln!(
            out,
            "  output     {} (logs in {})",
            self.output_dir.display(),
            self.logs_dir.display()
        );
        for note in &self.notes {
            let _ = writeln!(out, "  note       {note}");
        }
        for project in &self.projects {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "{} {} -> {}",
                project.name, project.version, project.wheel_glob
            );
            let _ = writeln!(out, "  dir    {}", project.dir.display());
            if let Some(head) = &project.source.head {
                let _ = writeln!(out, "  commit {head}");
            }
            let _ = writeln!(
                out,
                "  after  {}",
                if project.after.is_empty() {
                    "(nothing: starts at once)".to_string()
                } else {
                    format!("{} (built and installed)", project.after.join(", "))
                }
            );
            let _ = writeln!(out, "  log    {}", project.log.display());
            let _ = writeln!(out, "  env");
            for (key, value) in &project.env {
                let shown = if crate::redact::is_secret_env_name(key) {
                    "****".to_string()
                } else {
                    crate::redact::redact_url(value)
                };
                let _ = writeln!(out, "    {key}={shown}");
            }
            let _ = writeln!(out, "  steps");
            for (index, step) in project.steps.iter().enumerate() {
                let view = StepView::of(step);
                let line = match view.kind {
                    "remove" => format!("rm -rf {}", view.path.unwrap_or_default()),
                    "write" => format!(
                        "write {} (sha256 {})",
                        view.path.unwrap_or_default(),
                        &view.content_sha256.unwrap_or_default()[..12]
                    ),
                    "collect" => format!(
                        "collect exactly one {} from {} into {}",
                        project.wheel_glob,
                        view.path.unwrap_or_default(),
                        self.output_dir.display()
                    ),
                    _ => {
                        let extra: Vec<String> = view
                            .env
                            .iter()
                            .filter(|(k, v)| {
                                project.env.get(*k).map(String::as_str) != v.as_deref()
                            })
                            .map(|(k, v)| match v {
                                Some(v) => format!(
                                    "{k}={}",
                                    shlex::try_quote(v)
                                        .map(|q| q.into_owned())
                                        .unwrap_or_default()
                                ),
                                None => format!("-u {k}"),
                            })
                            .collect();
                        let env = if extra.is_empty() {
                            String::new()
                        } else {
                            format!("env {} ", extra.join(" "))
                        };
                        let argv: Vec<String> = view
                            .argv
                            .iter()
                            .map(|a| {
                                shlex::try_quote(a)
                                    .map(|q| q.into_owned())
                                    .unwrap_or_else(|_| a.clone())
                            })
                            .collect();
                        format!(
                            "(cd {} && {env}{})",
                            view.cwd.unwrap_or_default(),
                            argv.join(" ")
                        )
                    }
                };
                let _ = writeln!(
                    out,
                    "    {}. {:<26} {line}{}",
                    index + 1,
                    step.label,
                    if step.mutates_venv { "  [venv]" } else { "" }
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::source::tests::git;
    use crate::build::targets::{self, TargetInputs};
    use crate::sdk::SdkInfo;
    use crate::stack::Stack;

    /// A checkout root with the five projects' version files, each a git repository.
    fn checkouts(root: &Path) {
        let files: &[(&str, &str, &str)] = &[
            ("pytorch", "version.txt", "2.10.0a0\n"),
            ("pytorch_audio", "version.txt", "2.10.0a0\n"),
            ("pytorch_vision", "version.txt", "0.25.0a0\n"),
            (
                "triton",
                "setup.py",
                "import os\nTRITON_VERSION = \"3.5.0\" + suffix()\n",
            ),
            ("apex", "version.txt", "1.10.0\n"),
        ];
        for (dir, file, text) in files {
            let dir = root.join(dir);
            fs_err::create_dir_all(&dir).expect("mkdir");
            fs_err::write(dir.join(file), text).expect("write");
            git(&dir, &["init", "-q", "-b", "main"]);
            git(&dir, &["add", "."]);
            git(&dir, &["commit", "-qm", "sources"]);
        }
        fs_err::write(
            root.join("triton/build_env.json"),
            r#"{"TRITON_WHEEL_VERSION_SUFFIX": "", "EXTRA": "x"}"#,
        )
        .expect("build_env");
    }

    fn sdk() -> SdkFacts {
        let root = PathBuf::from("/sdk");
        SdkFacts {
            info: SdkInfo {
                version: "7.10.0a20251124".into(),
                bin: root.join("bin"),
                cmake: root.join("lib/cmake"),
                root,
                targets: vec![],
                python: "3.11.7".into(),
            },
            known: false,
        }
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        stack: Stack,
        families: FamilyTable,
        env: Environment,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_path_buf();
        checkouts(&root);
        Fixture {
            _dir: dir,
            root,
            stack: Stack::load(None).expect("stack"),
            families: crate::stack::load_families(None).expect("families"),
            env: Environment::from_pairs([
                ("PATH", "/usr/bin:/bin"),
                ("LD_LIBRARY_PATH", "/opt/lib"),
            ]),
        }
    }

    fn inputs<'a>(f: &'a Fixture, targets: &str) -> PlanInputs<'a> {
        let choice = targets::resolve(
            &f.families,
            &TargetInputs {
                flag: Some(targets),
                max: 8,
                ..TargetInputs::default()
            },
        )
        .expect("targets");
        PlanInputs {
            projects: f
                .stack
                .projects
                .values()
                .map(|project| Selected {
                    project,
                    dir: f.root.join(&project.checkout_dir),
                    locked: None,
                })
                .collect(),
            families: &f.families,
            sdk: sdk(),
            sdk_install: vec![],
            venv: Venv::new("/out/venv"),
            installer: Installer::Pip,
            cache_dir: PathBuf::from("/cache/pip"),
            output_dir: PathBuf::from("/out"),
            targets: choice,
            release_type: ReleaseType::Nightly,
            version_suffix: None,
            build_number: 1,
            flash_attention: None,
            compiler_cache: CompilerCache::None,
            clean: false,
            jobs: 3,
            base_env: &f.env,
            notes: vec![],
        }
    }

    fn project<'a>(plan: &'a Plan, name: &str) -> &'a ProjectPlan {
        plan.projects
            .iter()
            .find(|p| p.name == name)
            .expect("project in plan")
    }

    #[test]
    fn versions_pins_and_order() {
        let f = fixture();
        let plan = assemble(inputs(&f, "gfx906,gfx1030")).expect("plan");
        let triton_head = project(&plan, "triton").source.head.clone().expect("git");
        let triton = format!("3.5.0+git{}.rocm7.10.0a20251124", &triton_head[..8]);
        let versions: Vec<(&str, &str)> = plan
            .projects
            .iter()
            .map(|p| (p.name.as_str(), p.version.as_str()))
            .collect();
        assert_eq!(
            versions,
            [
                ("torch", "2.10.0a0+rocm7.10.0a20251124"),
                ("audio", "2.10.0a0+rocm7.10.0a20251124"),
                ("vision", "0.25.0a0+rocm7.10.0a20251124"),
                ("triton", triton.as_str()),
                ("apex", "1.10.0+rocm7.10.0a20251124"),
            ]
        );
        let torch = project(&plan, "torch");
        assert_eq!(
            torch.env["PYTORCH_EXTRA_INSTALL_REQUIREMENTS"],
            format!("rocm[libraries]==7.10.0a20251124|triton=={triton}")
        );
        assert_eq!(
            torch.env["USE_FLASH_ATTENTION"], "OFF",
            "gfx906/gfx1030 have no aotriton kernels"
        );
        assert_eq!(torch.env["PYTORCH_ROCM_ARCH"], "gfx906;gfx1030");
        assert_eq!(torch.wheel_glob, "torch-2.10.0a0+rocm7.10.0a20251124-*.whl");
        assert!(torch.after.is_empty() && project(&plan, "triton").after.is_empty());
        for name in ["audio", "vision", "apex"] {
            assert_eq!(project(&plan, name).after, ["torch"], "{name}");
        }
        assert_eq!(
            project(&plan, "audio").env["PYTORCH_VERSION"],
            torch.version
        );
        // triton: build_env.json's keys go to triton only (W9), with the composed suffix.
        let triton_plan = project(&plan, "triton");
        assert_eq!(
            triton_plan.env["TRITON_WHEEL_VERSION_SUFFIX"],
            "+rocm7.10.0a20251124"
        );
        assert_eq!(triton_plan.env["EXTRA"], "x");
        assert!(
            !torch.env.contains_key("EXTRA")
                && !torch.env.contains_key("TRITON_WHEEL_VERSION_SUFFIX")
        );
        // torch's library paths stay in torch's env and keep the user's (W10).
        assert_eq!(
            torch.env["LD_LIBRARY_PATH"],
            "/sdk/lib/rocm_sysdeps/lib:/opt/lib"
        );
        for other in ["audio", "vision", "triton", "apex"] {
            assert!(
                !project(&plan, other).env.contains_key("LD_LIBRARY_PATH"),
                "{other}"
            );
        }
        // Every step of a project carries the project's env explicitly.
        for step in &torch.steps {
            if let Action::Run(cmd) = &step.action {
                let view = StepView::of(step);
                assert_eq!(
                    view.env.get("ROCM_HOME").cloned().flatten().as_deref(),
                    Some("/sdk"),
                    "{}",
                    cmd.get_label()
                );
            }
        }
        // Every version is valid PEP 440 and normalized.
        for p in &plan.projects {
            assert_eq!(
                version::normalize("v", &p.version).expect("valid"),
                p.version
            );
        }
    }

    #[test]
    fn dev_builds_tag_the_commit_and_build_numbers_post() {
        let f = fixture();
        let mut dev = inputs(&f, "gfx942");
        dev.release_type = ReleaseType::Dev;
        dev.build_number = 2;
        let plan = assemble(dev).expect("plan");
        let sha =
            |name: &str| project(&plan, name).source.head.clone().expect("git")[..8].to_string();
        let torch = project(&plan, "torch");
        assert_eq!(
            torch.version,
            format!("2.10.0a0+git{}.rocm7.10.0a20251124.post2", sha("torch"))
        );
        assert_eq!(
            torch.env["PYTORCH_BUILD_VERSION"],
            format!("2.10.0a0+git{}.rocm7.10.0a20251124", sha("torch"))
        );
        assert_eq!(
            project(&plan, "vision").version,
            format!("0.25.0a0+git{}.rocm7.10.0a20251124", sha("vision"))
        );
        assert_eq!(
            project(&plan, "apex").version,
            "1.10.0+rocm7.10.0a20251124",
            "apex is never tagged"
        );
        // gfx942 has flash-attention kernels and triton is built: on.
        assert_eq!(torch.env["USE_FLASH_ATTENTION"], "ON");
        assert_eq!(torch.env["USE_MEM_EFF_ATTENTION"], "ON");
    }

    #[test]
    fn fingerprints_follow_inputs() {
        let f = fixture();
        let first = assemble(inputs(&f, "gfx906")).expect("plan");
        let again = assemble(inputs(&f, "gfx906")).expect("plan");
        let key = |plan: &Plan, name: &str| {
            project(plan, name)
                .fingerprint
                .clone()
                .expect("fingerprint")
        };
        assert_eq!(key(&first, "torch"), key(&again, "torch"));
        let other_targets = assemble(inputs(&f, "gfx906,gfx1030")).expect("plan");
        assert_ne!(key(&first, "torch"), key(&other_targets, "torch"));
        // A source edit changes the project and what builds against it, not triton.
        fs_err::write(f.root.join("pytorch/new.cpp"), "int x;\n").expect("write");
        let edited = assemble(inputs(&f, "gfx906")).expect("plan");
        assert_ne!(key(&first, "torch"), key(&edited, "torch"));
        assert_ne!(key(&first, "audio"), key(&edited, "audio"));
        assert_eq!(key(&first, "triton"), key(&edited, "triton"));
        // Neither --clean nor a compiler cache changes what is built.
        let mut clean = inputs(&f, "gfx906");
        clean.clean = true;
        assert_eq!(
            key(&edited, "torch"),
            key(&assemble(clean).expect("plan"), "torch")
        );
        let mut cached = inputs(&f, "gfx906");
        cached.compiler_cache = CompilerCache::Ccache {
            program: "/usr/bin/ccache".into(),
        };
        assert_eq!(
            key(&edited, "triton"),
            key(&assemble(cached).expect("plan"), "triton")
        );
    }

    #[test]
    fn plan_renders_as_text_and_json() {
        let f = fixture();
        let plan = assemble(inputs(&f, "gfx906,gfx1030")).expect("plan");
        let text = plan.to_text();
        assert!(
            text.contains("  targets    gfx906,gfx1030 (2 targets, from --pytorch-rocm-arch)"),
            "{text}"
        );
        assert!(
            text.contains(
                "torch 2.10.0a0+rocm7.10.0a20251124 -> torch-2.10.0a0+rocm7.10.0a20251124-*.whl"
            ),
            "{text}"
        );
        assert!(
            text.contains("/out/venv/bin/python -m build --wheel --no-isolation"),
            "{text}"
        );
        assert!(
            text.contains("after  torch (built and installed)"),
            "{text}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&plan.to_json().expect("json")).expect("valid JSON");
        let torch = &json["projects"][0];
        assert_eq!(torch["name"], "torch");
        assert_eq!(torch["targets"], serde_json::json!(["gfx906", "gfx1030"]));
        let build = torch["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .find(|s| s["label"] == "build wheel")
            .expect("build step");
        assert_eq!(build["env"]["PYTORCH_ROCM_ARCH"], "gfx906;gfx1030");
        assert_eq!(build["cwd"], f.root.join("pytorch").display().to_string());
        assert_eq!(json["sdk"]["known"], false);
    }

    #[test]
    fn missing_version_files_are_usage_errors() {
        let f = fixture();
        fs_err::remove_file(f.root.join("pytorch_vision/version.txt")).expect("rm");
        let error = assemble(inputs(&f, "gfx906")).expect_err("no version.txt");
        assert!(
            error
                .to_string()
                .starts_with("vision: cannot read its base version"),
            "{error}"
        );
        fs_err::write(f.root.join("pytorch_vision/version.txt"), "0.25.0a0\n").expect("restore");
        fs_err::write(f.root.join("triton/setup.py"), "setup(version=get())\n").expect("write");
        let error = assemble(inputs(&f, "gfx906")).expect_err("no TRITON_VERSION");
        assert!(
            error
                .to_string()
                .contains("no `TRITON_VERSION = \"X.Y.Z\"` line"),
            "{error}"
        );
    }
}
