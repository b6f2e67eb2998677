//! The executor: walks the plan as a DAG. A project starts once every project it waits for
//! has finished (its dependencies and the venv turns the plan states); at most `--jobs`
//! projects run at once, the ready ones in the reference's order. A project whose needed
//! wheel failed is skipped, independent projects finish. Every project logs to
//! `<output>/logs/<project>.log` and shows its phase on its own progress line.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::plan::{Action, CopyIn, FileIn, Plan, ProjectPlan, Step};
use super::report::{BuildReport, Status};
use crate::context::Context;
use crate::exec::ProcessError;
use crate::recipes::{WheelVersion, built_version};
use crate::ui::Task;
use crate::version;
use crate::wheel::filename::{WheelFilename, escape_name};

/// A wheel the build produced (or reused), in the output directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelFile {
    pub name: String,
    pub path: PathBuf,
    pub sha256: String,
    pub size: u64,
}

/// How one project ended.
#[derive(Debug)]
pub struct ProjectOutcome {
    pub name: String,
    pub status: Status,
    pub wheel: Option<WheelFile>,
    /// The version the wheel carries (its file name's): what pins the project pin.
    pub version: Option<String>,
    /// Offset of the project's start from the start of the build.
    pub started: Duration,
    pub duration: Duration,
    pub error: Option<anyhow::Error>,
}

/// Why a built wheel was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error("{project}: the build left no {dist}-*.whl in {} (found: {}); check the log {}", dir.display(), list(found), log.display())]
    NoWheel {
        project: String,
        dist: String,
        dir: PathBuf,
        found: Vec<String>,
        log: PathBuf,
    },
    #[error("{project}: the build left {} wheels in {}, exactly one is expected: {}", found.len(), dir.display(), found.join(", "))]
    ManyWheels {
        project: String,
        dir: PathBuf,
        found: Vec<String>,
    },
    #[error(
        "{project}: the build produced version {found} ({wheel}) but the plan computed {expected}; {hint}"
    )]
    VersionMismatch {
        project: String,
        wheel: String,
        found: String,
        expected: String,
        hint: &'static str,
    },
}

fn list(found: &[String]) -> String {
    if found.is_empty() {
        "nothing".into()
    } else {
        found.join(", ")
    }
}

/// A smoke step that printed nothing.
#[derive(Debug, thiserror::Error)]
#[error("{project}: `{command}` printed nothing, so the wheel does not import; see the log {}", log.display())]
pub struct SmokeError {
    pub project: String,
    pub command: String,
    pub log: PathBuf,
}

/// A step that needs the build machine's environment found it lacking.
#[derive(Debug, thiserror::Error)]
pub enum MachineError {
    #[error("{project}: {} not set in the environment rockbuild was started with; {fix}", missing.join(", "))]
    Unset {
        project: String,
        missing: Vec<String>,
        fix: String,
    },
    #[error("{project}: {var} is {dir}, and {what} is not there; check {var}", dir = dir.display())]
    NotFound {
        project: String,
        var: String,
        dir: PathBuf,
        what: String,
    },
}

enum Event {
    Finished(ProjectOutcome),
}

/// Runs the plan. Returns one outcome per project, in plan order.
pub fn execute(
    ctx: &Context,
    plan: &Plan,
    previous: Option<&BuildReport>,
) -> anyhow::Result<Vec<ProjectOutcome>> {
    crate::fsutil::create_dirs_below(&plan.output_dir, &plan.logs_dir, None)?;
    let build_start = Instant::now();
    let jobs = plan.jobs.max(1);
    let names: Vec<&str> = plan.projects.iter().map(|p| p.name.as_str()).collect();
    let mut tasks: BTreeMap<&str, Task> = BTreeMap::new();
    for project in &plan.projects {
        let task = ctx.ui.task(&project.name);
        task.phase(if project.after.is_empty() {
            "queued".to_string()
        } else {
            format!(
                "waiting for {}",
                project
                    .after
                    .iter()
                    .map(|d| d.project.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        });
        tasks.insert(&project.name, task);
    }

    // Ready projects start in their recipes' order (the reference's: triton, torch, audio,
    // vision, apex), so `--jobs 1` runs exactly the reference's serial sequence.
    let mut order: Vec<&ProjectPlan> = plan.projects.iter().collect();
    order.sort_by_key(|p| p.priority);

    let mut outcomes: BTreeMap<String, ProjectOutcome> = BTreeMap::new();
    let (sender, receiver) = mpsc::channel::<Event>();
    std::thread::scope(|scope| {
        let mut running = 0usize;
        let mut started: Vec<&str> = Vec::new();
        loop {
            // Skip what can no longer build; start what is ready.
            for project in order.iter().copied() {
                if started.contains(&project.name.as_str()) || outcomes.contains_key(&project.name)
                {
                    continue;
                }
                // A project whose needed wheel did not come is skipped; a venv turn only
                // orders the two.
                let blocked: Vec<&str> = project
                    .after
                    .iter()
                    .filter(|d| d.needs_wheel())
                    .filter(|d| {
                        outcomes
                            .get(&d.project)
                            .is_some_and(|o| matches!(o.status, Status::Failed | Status::Skipped))
                    })
                    .map(|d| d.project.as_str())
                    .collect();
                if !blocked.is_empty() || ctx.runner.interrupted().is_some() {
                    let reason = if blocked.is_empty() {
                        "interrupted".to_string()
                    } else {
                        format!("skipped: {} did not build", blocked.join(", "))
                    };
                    if let Some(task) = tasks.remove(project.name.as_str()) {
                        task.finish(reason);
                    }
                    outcomes.insert(
                        project.name.clone(),
                        ProjectOutcome {
                            name: project.name.clone(),
                            status: Status::Skipped,
                            wheel: None,
                            version: None,
                            started: build_start.elapsed(),
                            duration: Duration::ZERO,
                            error: None,
                        },
                    );
                    continue;
                }
                let ready = project.after.iter().all(|d| {
                    outcomes.contains_key(&d.project) || !names.contains(&d.project.as_str())
                });
                if ready && running < jobs {
                    let Some(task) = tasks.remove(project.name.as_str()) else {
                        continue;
                    };
                    started.push(&project.name);
                    running += 1;
                    let sender = sender.clone();
                    // What the finished projects' wheels carry fills in the pins on them.
                    let built: Vec<(String, String)> = outcomes
                        .values()
                        .filter_map(|o| Some((built_version(&o.name), o.version.clone()?)))
                        .collect();
                    scope.spawn(move || {
                        let outcome =
                            run_project(ctx, plan, project, previous, &built, task, build_start);
                        let _ = sender.send(Event::Finished(outcome));
                    });
                }
            }
            if running == 0 {
                break;
            }
            match receiver.recv() {
                Ok(Event::Finished(outcome)) => {
                    running -= 1;
                    outcomes.insert(outcome.name.clone(), outcome);
                }
                Err(_) => break,
            }
        }
    });
    Ok(plan
        .projects
        .iter()
        .filter_map(|p| outcomes.remove(&p.name))
        .collect())
}

fn run_project(
    ctx: &Context,
    plan: &Plan,
    project: &ProjectPlan,
    previous: Option<&BuildReport>,
    built: &[(String, String)],
    task: Task,
    build_start: Instant,
) -> ProjectOutcome {
    let started = build_start.elapsed();
    let clock = Instant::now();
    let result = build_or_reuse(ctx, plan, project, previous, built, &task);
    let duration = clock.elapsed();
    match result {
        Ok((status, wheel)) => {
            // A source component names itself: it has no wheel.
            let what = wheel
                .as_ref()
                .map_or(project.name.as_str(), |w| w.name.as_str());
            task.finish(match status {
                Status::Cached => format!("cached {what} (inputs unchanged)"),
                Status::Reused => format!(
                    "reused {what} (left out: {})",
                    project.reuse.as_ref().map_or("", |r| r.flag.as_str())
                ),
                _ => format!("built {what} in {:.0}s", duration.as_secs_f64()),
            });
            ProjectOutcome {
                name: project.name.clone(),
                status,
                version: wheel.as_ref().and_then(|w| wheel_version(&w.name)),
                wheel,
                started,
                duration,
                error: None,
            }
        }
        Err(error) => {
            task.finish(format!(
                "FAILED after {:.0}s (log: {})",
                duration.as_secs_f64(),
                project.log.display()
            ));
            ProjectOutcome {
                name: project.name.clone(),
                status: Status::Failed,
                wheel: None,
                version: None,
                started,
                duration,
                error: Some(error),
            }
        }
    }
}

fn build_or_reuse(
    ctx: &Context,
    plan: &Plan,
    project: &ProjectPlan,
    previous: Option<&BuildReport>,
    built: &[(String, String)],
    task: &Task,
) -> anyhow::Result<(Status, Option<WheelFile>)> {
    if let Some(reused) = &project.reuse {
        task.phase("using the wheel of an earlier build");
        let path = plan.output_dir.join(&reused.wheel);
        // The plan was made from these bytes; a wheel removed or rewritten since is an error,
        // never a quiet switch to another wheel.
        if fs_err::metadata(&path).ok().map(|m| m.len()) != Some(reused.size) {
            anyhow::bail!(
                "{}: left out ({}), so its wheel {} of an earlier build is used, but it changed or went away after the plan was made; run the build again, or build it too",
                project.name,
                reused.flag,
                path.display()
            );
        }
        let wheel = WheelFile {
            path,
            name: reused.wheel.clone(),
            sha256: reused.sha256.clone(),
            size: reused.size,
        };
        install_if_missing(ctx, plan, project, task, &wheel)?;
        return Ok((Status::Reused, Some(wheel)));
    }
    if !plan.clean
        && let (Some(previous), Some(fingerprint)) = (previous, project.fingerprint.as_deref())
    {
        task.phase("checking the build cache");
        if let Some((name, sha256, size)) =
            previous.cached_wheel(&plan.output_dir, &project.name, fingerprint)
        {
            let wheel = WheelFile {
                path: plan.output_dir.join(&name),
                name,
                sha256,
                size,
            };
            install_if_missing(ctx, plan, project, task, &wheel)?;
            return Ok((Status::Cached, Some(wheel)));
        }
    }
    // A fresh log per run: the previous run's output would only mislead.
    if project.log.exists() {
        fs_err::remove_file(&project.log)?;
    }
    let mut wheel = None;
    for step in &project.steps {
        run_step(ctx, plan, project, &step.filled(built), task, &mut wheel)?;
    }
    // A source component's build (its steps, often none) leaves no wheel.
    if wheel.is_none() && project.dist.is_some() {
        anyhow::bail!("{}: the plan has no collect step", project.name);
    }
    Ok((Status::Built, wheel))
}

/// Dependants build against the installed wheel: a wheel taken from an earlier build is
/// installed when the venv has another version of it.
fn install_if_missing(
    ctx: &Context,
    plan: &Plan,
    project: &ProjectPlan,
    task: &Task,
    wheel: &WheelFile,
) -> anyhow::Result<()> {
    if let Some(step) = project
        .steps
        .iter()
        .find(|s| matches!(s.action, Action::InstallWheel(_)))
        && let Some(dist) = &project.dist
        && plan
            .venv
            .installed_version(dist)
            .and_then(|v| version::normalize("installed", &v).ok())
            != wheel_version(&wheel.name)
    {
        run_step(ctx, plan, project, step, task, &mut Some(wheel.clone()))?;
    }
    Ok(())
}

fn run_step(
    ctx: &Context,
    plan: &Plan,
    project: &ProjectPlan,
    step: &Step,
    task: &Task,
    wheel: &mut Option<WheelFile>,
) -> anyhow::Result<()> {
    task.phase(step.label.clone());
    match &step.action {
        Action::Run(cmd) => {
            ctx.runner.run(cmd)?;
        }
        Action::Remove { path } => {
            log_line(&project.log, &format!("==> remove {}", path.display()))?;
            if path.exists() {
                fs_err::remove_dir_all(path)?;
            }
        }
        Action::Write { path, content } => {
            let changed = crate::fsutil::write_if_changed(path, content.as_bytes())?;
            log_line(
                &project.log,
                &format!(
                    "==> write {} ({})",
                    path.display(),
                    if changed { "changed" } else { "unchanged" }
                ),
            )?;
        }
        Action::Collect { dist_dir } => {
            let collected = collect(project, dist_dir, &plan.output_dir)?;
            log_line(
                &project.log,
                &format!(
                    "==> collected {} (sha256 {}, {} bytes)",
                    collected.path.display(),
                    collected.sha256,
                    collected.size
                ),
            )?;
            *wheel = Some(collected);
        }
        Action::InstallWheel(cmd) => {
            let path = wheel.as_ref().map(|w| w.path.clone()).ok_or_else(|| {
                anyhow::anyhow!(
                    "{}: install step before the wheel was collected",
                    project.name
                )
            })?;
            ctx.runner.run(&cmd.clone().arg(path))?;
        }
        Action::Smoke(cmd) => {
            let output = ctx.runner.run(cmd)?;
            if output.stdout.trim().is_empty() {
                return Err(SmokeError {
                    project: project.name.clone(),
                    command: cmd.argv_display().join(" "),
                    log: project.log.clone(),
                }
                .into());
            }
            log_line(
                &project.log,
                &format!("==> smoke test printed: {}", output.stdout.trim()),
            )?;
        }
        Action::RequireEnv { vars, fix } => {
            require_env(&project.name, ctx.runner.base_env(), vars, fix)?;
            log_line(&project.log, &format!("==> set: {}", vars.join(", ")))?;
        }
        Action::CopyIn(copy) => {
            let (from, to) = copy_in(&project.name, ctx.runner.base_env(), copy)?;
            log_line(
                &project.log,
                &format!("==> copied {} to {}", from.display(), to.display()),
            )?;
        }
    }
    Ok(())
}

/// Every one of `vars` is set (and not empty) in `env`.
fn require_env(
    project: &str,
    env: &crate::env_vars::Environment,
    vars: &[String],
    fix: &str,
) -> Result<(), MachineError> {
    let missing: Vec<String> = vars
        .iter()
        .filter(|v| env.non_empty(v).is_none())
        .cloned()
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(MachineError::Unset {
            project: project.to_string(),
            missing,
            fix: fix.to_string(),
        })
    }
}

/// Copies the file `copy` names into its directory; returns (from, to).
fn copy_in(
    project: &str,
    env: &crate::env_vars::Environment,
    copy: &CopyIn,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    let dir = PathBuf::from(
        env.non_empty(&copy.var)
            .ok_or_else(|| MachineError::Unset {
                project: project.to_string(),
                missing: vec![copy.var.clone()],
                fix: format!(
                    "set it to the directory {} is taken from",
                    describe(&copy.file)
                ),
            })?,
    );
    let not_found = || MachineError::NotFound {
        project: project.to_string(),
        var: copy.var.clone(),
        dir: dir.clone(),
        what: describe(&copy.file),
    };
    let from = match &copy.file {
        FileIn::At(relative) => Some(dir.join(relative)).filter(|p| p.is_file()),
        // The first in path order, as a sorted recursive search gives it.
        FileIn::Find(name) => walkdir::WalkDir::new(&dir)
            .sort_by_file_name()
            .into_iter()
            .filter_map(Result::ok)
            .find(|e| e.file_type().is_file() && e.file_name() == name.as_str())
            .map(walkdir::DirEntry::into_path),
    }
    .ok_or_else(not_found)?;
    let name = from.file_name().ok_or_else(not_found)?;
    let to = copy.into.join(name);
    fs_err::create_dir_all(&copy.into)?;
    crate::fsutil::copy(&from, &to)?;
    Ok((from, to))
}

fn describe(file: &FileIn) -> String {
    match file {
        FileIn::At(path) => path.clone(),
        FileIn::Find(name) => format!("a {name} (anywhere below)"),
    }
}

fn log_line(log: &Path, line: &str) -> anyhow::Result<()> {
    let mut file = crate::fsutil::append(log)?;
    writeln!(file, "{line}").with_context(|| format!("writing {}", log.display()))?;
    Ok(())
}

/// Finds the project's single wheel in `dist_dir`, checks its version against the plan and
/// copies it into `output_dir` (atomically), replacing wheels of earlier versions there.
pub fn collect(
    project: &ProjectPlan,
    dist_dir: &Path,
    output_dir: &Path,
) -> anyhow::Result<WheelFile> {
    let dist = escape_name(project.dist.as_deref().ok_or_else(|| {
        anyhow::anyhow!(
            "{}: its recipe makes no wheel, but its plan collects one",
            project.name
        )
    })?);
    let mut all: Vec<String> = match fs_err::read_dir(dist_dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect(),
        Err(_) => Vec::new(),
    };
    all.sort();
    let is_ours = |name: &str| {
        name.ends_with(".whl")
            && name
                .split('-')
                .next()
                .is_some_and(|n| escape_name(n) == dist)
    };
    let ours: Vec<String> = all.iter().filter(|n| is_ours(n)).cloned().collect();
    let name = match ours.as_slice() {
        [] => {
            return Err(CollectError::NoWheel {
                project: project.name.clone(),
                dist,
                dir: dist_dir.to_path_buf(),
                found: all,
                log: project.log.clone(),
            }
            .into());
        }
        [one] => one.clone(),
        _ => {
            return Err(CollectError::ManyWheels {
                project: project.name.clone(),
                dir: dist_dir.to_path_buf(),
                found: ours,
            }
            .into());
        }
    };
    let found = WheelFilename::parse(&name)
        .map_err(|error| anyhow::anyhow!("{}: the build produced {error}", project.name))?
        .version
        .to_string();
    // A version handed to the build is an instruction: a wheel without it is refused. A
    // prediction is a hint and a decided version is the build's: the wheel says.
    if let WheelVersion::Given { version } = &project.version
        && found != *version
    {
        return Err(CollectError::VersionMismatch {
            project: project.name.clone(),
            wheel: name,
            found,
            expected: version.clone(),
            hint: project.version_hint,
        }
        .into());
    }
    fs_err::create_dir_all(output_dir)?;
    let target = output_dir.join(&name);
    let mut temp = tempfile::Builder::new()
        .prefix(".rockbuild-")
        .suffix(".whl.tmp")
        .tempfile_in(output_dir)
        .with_context(|| format!("creating a temporary file in {}", output_dir.display()))?;
    let mut source = fs_err::File::open(dist_dir.join(&name))?;
    std::io::copy(&mut source, temp.as_file_mut())
        .with_context(|| format!("copying {name} to {}", output_dir.display()))?;
    temp.as_file().sync_all()?;
    temp.persist(&target)
        .map_err(|e| e.error)
        .with_context(|| format!("writing {}", target.display()))?;
    // One wheel per project in the output: drop this project's wheels of other versions.
    for stale in fs_err::read_dir(output_dir)?.filter_map(Result::ok) {
        let stale_name = stale.file_name().to_string_lossy().into_owned();
        if stale_name != name && is_ours(&stale_name) {
            fs_err::remove_file(stale.path())?;
        }
    }
    let (sha256, size) = crate::fsutil::sha256_file(&target)?;
    Ok(WheelFile {
        name,
        path: target,
        sha256,
        size,
    })
}

/// The version a wheel's file name carries (normalized PEP 440).
pub fn wheel_version(name: &str) -> Option<String> {
    WheelFilename::parse(name)
        .ok()
        .map(|wheel| wheel.version.to_string())
}

/// True when an error (or its chain) is an interruption by a signal.
pub fn interrupted(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        matches!(
            cause.downcast_ref::<ProcessError>(),
            Some(ProcessError::Interrupted { .. })
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::source::SourceState;

    fn plan(dir: &Path) -> ProjectPlan {
        ProjectPlan {
            name: "vision".into(),
            dist: Some("torchvision".into()),
            recipe: "vision",
            priority: 3,
            dir: dir.to_path_buf(),
            version: WheelVersion::Given {
                version: "0.25.0a0+rocm7.10.0".into(),
            },
            wheel_glob: None,
            after: vec![],
            venv: Default::default(),
            env: Default::default(),
            steps: vec![],
            log: dir.join("logs/vision.log"),
            source: SourceState {
                head: None,
                branch: None,
                upstream: None,
                digest: None,
                epoch: None,
            },
            fingerprint: None,
            reuse: None,
            hints: &[],
            version_hint: "the build ignored BUILD_VERSION",
        }
    }

    #[test]
    fn machine_steps_read_the_environment_rockbuild_started_with() {
        use crate::env_vars::Environment;
        let dir = tempfile::tempdir().expect("tempdir");
        let redist = dir.path().join("redist");
        for sub in ["x64/Microsoft.VC143.OpenMP", "b/x64", "a/onecore/x64"] {
            fs_err::create_dir_all(redist.join(sub)).expect("mkdir");
            fs_err::write(redist.join(sub).join("libomp140.x86_64.dll"), sub).expect("dll");
        }
        let libuv = dir.path().join("libuv");
        fs_err::create_dir_all(libuv.join("bin")).expect("mkdir");
        fs_err::write(libuv.join("bin/uv.dll"), "uv").expect("dll");
        let lib = dir.path().join("pytorch/torch/lib");
        let env = Environment::from_pairs([
            ("VCToolsRedistDir", redist.display().to_string()),
            ("libuv_ROOT", libuv.display().to_string()),
            ("EMPTY", String::new()),
        ]);

        let vars = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        require_env("torch", &env, &vars(&["VCToolsRedistDir"]), "fix").expect("set");
        let error = require_env(
            "torch",
            &env,
            &vars(&["VCToolsRedistDir", "EMPTY", "VCINSTALLDIR"]),
            "run vcvars64.bat first",
        )
        .expect_err("unset");
        assert_eq!(
            error.to_string(),
            "torch: EMPTY, VCINSTALLDIR not set in the environment rockbuild was started with; run vcvars64.bat first"
        );

        let find = CopyIn {
            var: "VCToolsRedistDir".into(),
            file: FileIn::Find("libomp140.x86_64.dll".into()),
            into: lib.clone(),
        };
        let (from, to) = copy_in("torch", &env, &find).expect("copied");
        assert_eq!(from, redist.join("a/onecore/x64/libomp140.x86_64.dll"));
        assert_eq!(fs_err::read_to_string(&to).expect("read"), "a/onecore/x64");
        let at = CopyIn {
            var: "libuv_ROOT".into(),
            file: FileIn::At("bin/uv.dll".into()),
            into: lib.clone(),
        };
        copy_in("torch", &env, &at).expect("copied");
        assert_eq!(
            fs_err::read_to_string(lib.join("uv.dll")).expect("read"),
            "uv"
        );

        let missing = CopyIn {
            file: FileIn::At("bin/uv_a.dll".into()),
            ..at
        };
        let error = copy_in("torch", &env, &missing).expect_err("absent");
        assert_eq!(
            error.to_string(),
            format!(
                "torch: libuv_ROOT is {}, and bin/uv_a.dll is not there; check libuv_ROOT",
                libuv.display()
            )
        );
        let unset = CopyIn {
            var: "NOPE".into(),
            ..find
        };
        assert_eq!(
            copy_in("torch", &env, &unset)
                .expect_err("unset")
                .to_string(),
            "torch: NOPE not set in the environment rockbuild was started with; set it to the directory a libomp140.x86_64.dll (anywhere below) is taken from"
        );
    }

    #[test]
    fn collect_takes_exactly_one_wheel_of_the_planned_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dist = dir.path().join("dist");
        let out = dir.path().join("out");
        fs_err::create_dir_all(&dist).expect("mkdir");
        let project = plan(dir.path());

        let error = collect(&project, &dist, &out).expect_err("empty");
        assert!(
            error
                .to_string()
                .starts_with("vision: the build left no torchvision-*.whl in"),
            "{error}"
        );

        fs_err::write(
            dist.join("torchvision-0.25.0a0-cp311-cp311-linux_x86_64.whl"),
            "w",
        )
        .expect("write");
        let error = collect(&project, &dist, &out).expect_err("wrong version");
        assert!(error.to_string().contains("produced version 0.25.0a0 (torchvision-0.25.0a0-cp311-cp311-linux_x86_64.whl) but the plan computed 0.25.0a0+rocm7.10.0; the build ignored BUILD_VERSION"), "{error}");

        fs_err::write(
            dist.join("torchvision-0.25.0a0+rocm7.10.0-cp311-cp311-linux_x86_64.whl"),
            "w",
        )
        .expect("write");
        let error = collect(&project, &dist, &out).expect_err("two");
        assert!(error.to_string().contains("left 2 wheels"), "{error}");

        fs_err::remove_file(dist.join("torchvision-0.25.0a0-cp311-cp311-linux_x86_64.whl"))
            .expect("rm");
        fs_err::write(dist.join("other-1.0-py3-none-any.whl"), "o").expect("write");
        fs_err::create_dir_all(&out).expect("mkdir");
        fs_err::write(
            out.join("torchvision-0.24.0-cp311-cp311-linux_x86_64.whl"),
            "old",
        )
        .expect("stale");
        fs_err::write(
            out.join("torch-2.10.0-cp311-cp311-linux_x86_64.whl"),
            "keep",
        )
        .expect("other project");
        let wheel = collect(&project, &dist, &out).expect("one wheel");
        assert_eq!(
            wheel.name,
            "torchvision-0.25.0a0+rocm7.10.0-cp311-cp311-linux_x86_64.whl"
        );
        assert_eq!(
            (wheel.size, wheel.sha256.as_str()),
            (1, crate::fsutil::sha256_hex(b"w").as_str())
        );
        let mut names: Vec<String> = fs_err::read_dir(&out)
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "torch-2.10.0-cp311-cp311-linux_x86_64.whl",
                "torchvision-0.25.0a0+rocm7.10.0-cp311-cp311-linux_x86_64.whl"
            ]
        );
    }
}
