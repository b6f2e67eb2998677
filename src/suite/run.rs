//! Running a shard: inspect the sources and the index, create the venv, install with pip's
//! report (the evidence), query the GPUs in a child process and choose them, plan again with
//! that choice, run each command, collect the JUnit files, write shard.json. Every process goes
//! through the runner; a signal stops the shard and the report records it as cancelled.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;

use super::Error;
use super::catalog::TestConfig;
use super::gpu::{self, DeviceQuery, GpuError};
use super::plan::{self, GPU_SMOKE_FILE, GpuState, TestPlan, World};
use super::report::{
    GpuRecord, JunitFile, SHARD_FILE, SHARD_KIND, SHARD_SCHEMA, ShardReport, SkipRecord,
    SourceRecord,
};
use crate::context::Context;
use crate::exec::{Cmd, ProcessError};
use crate::index::client::IndexClient;
use crate::platform::Platform;
use crate::promote::evidence::{Check, Outcome, TestedWheel};
use crate::settings::test::TestSettings;

/// The built-in GPU smoke suite (F41), written into the work directory and run with pytest.
const GPU_SMOKE_SUITE: &str = include_str!("gpu_smoke.py");
const QUERY_TIMEOUT: Duration = Duration::from_secs(300);

/// A finished shard.
pub struct ShardRun {
    pub report: ShardReport,
    pub junit: Vec<JunitFile>,
    /// Set when a signal stopped the run.
    pub interrupted: Option<i32>,
}

/// The steps of a run so far.
struct Steps<'a> {
    ctx: &'a Context,
    task: crate::ui::Task,
    list: Vec<Check>,
    interrupted: Option<i32>,
}

impl Steps<'_> {
    fn record(
        &mut self,
        name: &str,
        kind: &str,
        result: Outcome,
        detail: String,
        started: jiff::Timestamp,
    ) {
        self.list.push(Check {
            name: name.to_string(),
            kind: kind.to_string(),
            project: None,
            result,
            started,
            finished: jiff::Timestamp::now(),
            detail: tail(&detail, 30),
        });
    }

    /// A step that does not run: cancelled after a signal, skipped after a failure.
    fn not_run(&mut self, name: &str, kind: &str) {
        let (result, why) = match self.interrupted {
            Some(signal) => (
                Outcome::Cancelled,
                format!("interrupted by signal {signal}"),
            ),
            None => (Outcome::Skipped, "an earlier step failed".to_string()),
        };
        self.record(name, kind, result, why, jiff::Timestamp::now());
    }

    /// Runs one command; its output (stdout when captured) on success.
    fn run(&mut self, name: &str, kind: &str, cmd: &Cmd) -> Option<String> {
        if self.interrupted.is_some() {
            self.not_run(name, kind);
            return None;
        }
        let started = jiff::Timestamp::now();
        self.task.phase(name.to_string());
        let task = &self.task;
        let result = self.ctx.runner.run_streaming(cmd, &mut |line| {
            let line = line.trim();
            if !line.is_empty() {
                task.progress(line.chars().take(120).collect::<String>());
            }
        });
        match result {
            Ok(output) => {
                let detail = if output.stdout.is_empty() {
                    output.tail.join("\n")
                } else {
                    output.stdout.clone()
                };
                self.record(name, kind, Outcome::Passed, detail, started);
                Some(output.stdout)
            }
            Err(ProcessError::Interrupted { signal, .. }) => {
                self.interrupted = Some(signal);
                self.record(
                    name,
                    kind,
                    Outcome::Cancelled,
                    format!("interrupted by signal {signal}"),
                    started,
                );
                None
            }
            Err(error) => {
                self.record(name, kind, Outcome::Failed, error.to_string(), started);
                None
            }
        }
    }
}

/// The first line (what failed) and the last lines (why) of a long text.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    if all.len() <= lines {
        return all.join("\n");
    }
    let mut kept = vec![all[0], "…"];
    kept.extend(&all[all.len() - (lines - 2)..]);
    kept.join("\n")
}

/// A Python or pip command of the run, with the plan's environment (the venv first, PYTHONPATH
/// at the test directory, GPU_DEVICE_ORDINAL gone) and nothing from the job's pip or uv
/// configuration.
fn command(ctx: &Context, plan: &TestPlan, program: &Path) -> Cmd {
    let mut cmd = crate::pip::without_installer_env(ctx.env(), Cmd::new(program));
    for line in &plan.env {
        cmd = match &line.value {
            Some(value) => cmd.env(line.name.clone(), value),
            None => cmd.env_remove(line.name.clone()),
        };
    }
    cmd
}

/// Runs a shard. `world` is what [`inspect`] found; the plan is made again once the GPUs
/// are chosen.
pub fn run(ctx: &Context, settings: &TestSettings, world: &World) -> anyhow::Result<ShardRun> {
    let started = jiff::Timestamp::now();
    let mut plan = plan::plan(settings, world, &GpuState::Pending)?;
    let output = &settings.output_dir;
    let log_dir = output.join("logs");
    let junit_dir = output.join("junit");
    // A re-run into the same directory replaces the earlier results, never mixes with them.
    for stale in [&log_dir, &junit_dir] {
        if stale.exists() {
            fs_err::remove_dir_all(stale)?;
        }
    }
    fs_err::create_dir_all(&log_dir)?;
    fs_err::create_dir_all(&junit_dir)?;
    let mut steps = Steps {
        ctx,
        task: ctx.ui.task("test"),
        list: Vec::new(),
        interrupted: None,
    };

    // The venv, always fresh.
    let venv = &plan.install.venv;
    let clear = venv.join("pyvenv.cfg").is_file();
    if !clear
        && venv.is_dir()
        && fs_err::read_dir(venv)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    {
        return Err(Error::Flag {
            flag: "--venv",
            message: format!(
                "{} is not empty and is not a venv; rockbuild only empties a directory that holds a venv",
                venv.display()
            ),
        }
        .into());
    }
    let create = command(ctx, &plan, &settings.python)
        .label("test: venv")
        .args(["-m", "venv"])
        .args(clear.then_some("--clear"))
        .arg(venv)
        .log_to(log_dir.join("venv.log"))
        .timeout(Duration::from_secs(300));
    let venv_ok = steps.run("create venv", "install", &create).is_some();

    let python = Platform::host().venv_python(venv);
    let pip_report = world.work_dir.join("pip-report.json");
    let index_url = settings.index_url.clone().unwrap_or_default();
    let mut installed = Vec::new();
    let mut python_version = None;
    let install_ok = if venv_ok {
        let mut cmd = crate::pip::pip(
            command(ctx, &plan, &python).cwd(&world.work_dir),
            "test: install",
        )
        .args(["install", "--report"])
        .arg(&pip_report)
        .args(["--index-url", &index_url]);
        for url in &settings.extra_index_urls {
            cmd = cmd.args(["--extra-index-url", url]);
        }
        for links in &settings.find_links {
            cmd = cmd.args(["--find-links", links]);
        }
        let cmd = cmd
            .args(&plan.install.requirements)
            .log_to(log_dir.join("install.log"));
        steps
            .run("install torch and the test requirements", "install", &cmd)
            .is_some()
    } else {
        steps.not_run("install torch and the test requirements", "install");
        false
    };
    if install_ok {
        let evidence_started = jiff::Timestamp::now();
        let found = fs_err::read_to_string(&pip_report)
            .map_err(|e| e.to_string())
            .and_then(|text| crate::pip::report::parse(&text))
            .and_then(|report| {
                python_version = report.python.clone();
                let client = IndexClient::new(&index_url).map_err(|e| e.to_string())?;
                crate::pip::report::from_index(&report.installed, &client)
                    .map_err(|e| e.to_string())
            });
        match found {
            Ok(found) if found.iter().any(|i| i.name == "torch") => {
                let names: Vec<String> = found.iter().map(|i| i.filename.clone()).collect();
                steps.record(
                    "record the installed wheels",
                    "install",
                    Outcome::Passed,
                    format!("from the index under test: {}", names.join(", ")),
                    evidence_started,
                );
                installed = found;
            }
            Ok(found) => steps.record(
                "record the installed wheels",
                "install",
                Outcome::Failed,
                format!(
                    "torch was not installed from the index under test ({}); installed from it: {}",
                    crate::redact::redact_url(&index_url),
                    if found.is_empty() {
                        "nothing".to_string()
                    } else {
                        found
                            .iter()
                            .map(|i| i.filename.clone())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
                evidence_started,
            ),
            Err(message) => steps.record(
                "record the installed wheels",
                "install",
                Outcome::Failed,
                format!("pip's install report: {message}"),
                evidence_started,
            ),
        }
    } else {
        steps.not_run("record the installed wheels", "install");
    }
    let ready = install_ok && !installed.is_empty();

    // GPU selection, in a child process before any test imports torch.
    let mut gpu_state = GpuState::Pending;
    let mut gpu_notes = Vec::new();
    if let Some(ordinal) = &settings.gpu_device_ordinal {
        gpu_notes.push(format!(
            "GPU_DEVICE_ORDINAL={ordinal} removed (HIP_VISIBLE_DEVICES takes precedence)"
        ));
        ctx.ui.warn(&gpu_notes[0]);
    }
    if ready {
        let query = command(ctx, &plan, &python)
            .label("test: device query")
            .args(["-c", gpu::QUERY_SCRIPT])
            .cwd(&world.work_dir)
            .capture_stdout()
            .log_to(log_dir.join("device-query.log"))
            .timeout(QUERY_TIMEOUT);
        let query_started = jiff::Timestamp::now();
        if let Some(stdout) = steps.run("query the GPUs", "gpu", &query) {
            // The query step passed; what it found decides the selection step.
            match DeviceQuery::parse(&stdout) {
                None => steps.record(
                    "select the GPUs",
                    "gpu",
                    Outcome::Failed,
                    format!("the device query printed no result:\n{stdout}"),
                    query_started,
                ),
                Some(found) => match gpu::select(
                    &found,
                    settings.preset_visible_devices.as_deref(),
                    settings.family.as_deref(),
                    settings.device_query.value,
                    settings.gpu_policy.value,
                    0,
                ) {
                    Ok(selection) => {
                        steps.record(
                            "select the GPUs",
                            "gpu",
                            Outcome::Passed,
                            selection.to_string(),
                            query_started,
                        );
                        gpu_state = GpuState::Selected(selection);
                    }
                    Err(GpuError::Unavailable { reason }) if settings.allow_no_gpu => {
                        let note = format!("no GPU: {reason}");
                        ctx.ui.warn(format!(
                            "{note}; --allow-no-gpu: GPU checks will be reported as skipped"
                        ));
                        steps.record(
                            "select the GPUs",
                            "gpu",
                            Outcome::Skipped,
                            format!("{note} (--allow-no-gpu)"),
                            query_started,
                        );
                        gpu_notes.push(note);
                        gpu_state = GpuState::None { reason };
                    }
                    Err(error) => {
                        let error = match error {
                            GpuError::Unavailable { .. } => Error::NoGpu(error),
                            other => Error::Gpu(other),
                        };
                        steps.record(
                            "select the GPUs",
                            "gpu",
                            Outcome::Failed,
                            error.to_string(),
                            query_started,
                        );
                    }
                },
            }
        } else {
            steps.not_run("select the GPUs", "gpu");
        }
    } else {
        steps.not_run("query the GPUs", "gpu");
        steps.not_run("select the GPUs", "gpu");
    }

    let selected = !matches!(gpu_state, GpuState::Pending);
    if selected {
        plan = plan::plan(settings, world, &gpu_state)?;
    }
    if settings.config == TestConfig::GpuSmoke {
        crate::fsutil::write_atomic(
            &world.work_dir.join(GPU_SMOKE_FILE),
            GPU_SMOKE_SUITE.as_bytes(),
        )?;
    } else if plan.junit_from.exists() {
        // run_test.py writes its reports into the checkout; earlier runs' must not count.
        fs_err::remove_dir_all(&plan.junit_from)?;
    }
    let mut previous_ok = selected;
    for step in &plan.steps {
        if !previous_ok {
            steps.not_run(&step.label, "run");
            continue;
        }
        let mut cmd = command(ctx, &plan, &step.program)
            .label(format!("test: {}", step.label))
            .args(&step.args)
            .cwd(&step.cwd)
            .log_to(log_dir.join(&step.log))
            .timeout(settings.run_timeout);
        for (name, value) in &step.env {
            cmd = match value {
                Some(value) => cmd.env(name.clone(), value),
                None => cmd.env_remove(name.clone()),
            };
        }
        let passed = steps.run(&step.label, "run", &cmd).is_some();
        // verify_dynamo.py gates the inductor runs, as upstream; test runs do not gate each other.
        if step.log == "verify-dynamo.log" && !passed {
            previous_ok = false;
        }
        if steps.interrupted.is_some() {
            previous_ok = false;
        }
    }

    // The JUnit files, copied next to shard.json.
    let collect_started = jiff::Timestamp::now();
    let mut junit_paths = Vec::new();
    let mut junit = Vec::new();
    if plan.junit_from.is_dir() {
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(&plan.junit_from)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .filter(|p| p.extension().is_some_and(|e| e == "xml"))
            .collect();
        found.sort();
        for path in found {
            let relative = path
                .strip_prefix(&plan.junit_from)
                .unwrap_or(&path)
                .to_path_buf();
            let destination = junit_dir.join(&relative);
            if destination != path {
                if let Some(parent) = destination.parent() {
                    fs_err::create_dir_all(parent)?;
                }
                fs_err::copy(&path, &destination)?;
            }
            let shown = Path::new("junit").join(&relative).display().to_string();
            let report = fs_err::read_to_string(&destination)
                .map_err(|e| e.to_string())
                .and_then(|text| crate::junit::parse(&text).map_err(|e| e.to_string()));
            junit_paths.push(shown.clone());
            junit.push(JunitFile {
                path: shown,
                report,
            });
        }
    }
    let ran_tests = steps
        .list
        .iter()
        .any(|c| c.kind == "run" && matches!(c.result, Outcome::Passed | Outcome::Failed));
    if ran_tests {
        let (result, detail) = if junit.is_empty() {
            (
                Outcome::Failed,
                format!(
                    "no JUnit files under {}: the tests wrote no results",
                    plan.junit_from.display()
                ),
            )
        } else {
            (
                Outcome::Passed,
                format!("{} file{}", junit.len(), crate::ui::plural(junit.len())),
            )
        };
        steps.record("collect JUnit", "junit", result, detail, collect_started);
    }

    let Steps {
        task,
        list,
        interrupted,
        ..
    } = steps;
    let result = if interrupted.is_some() {
        Outcome::Cancelled
    } else if list.iter().any(|c| c.result == Outcome::Failed) {
        Outcome::Failed
    } else if list
        .iter()
        .any(|c| c.kind == "run" && c.result == Outcome::Passed)
    {
        Outcome::Passed
    } else {
        Outcome::Empty
    };
    task.finish(match result {
        Outcome::Passed => "done".to_string(),
        Outcome::Cancelled => "interrupted".to_string(),
        Outcome::Failed => "failed".to_string(),
        _ => "ran nothing".to_string(),
    });
    let (hip_visible_devices, archs) = match &gpu_state {
        GpuState::Selected(selection) => (
            Some(selection.hip_visible_devices.clone()),
            selection.archs.clone(),
        ),
        _ => (None, Vec::new()),
    };
    let torch = installed
        .iter()
        .find(|i| i.name == "torch")
        .map(|i| i.version.clone());
    let report = ShardReport {
        schema: SHARD_SCHEMA,
        kind: SHARD_KIND.into(),
        generated_by: format!("rockbuild {}", env!("CARGO_PKG_VERSION")),
        config: settings.config,
        shard: settings.shard.number,
        num_shards: settings.shard.total,
        index_url: crate::redact::redact_url(&index_url),
        python: python_version,
        torch,
        source: world.source.as_ref().map(|s| SourceRecord {
            version: s.version.clone(),
            commit: s.commit.clone(),
        }),
        platform: settings.platform.value,
        amdgpu_family: settings.family.clone(),
        gpus: GpuRecord {
            hip_visible_devices,
            archs,
            notes: gpu_notes,
        },
        skips: SkipRecord {
            files: plan.skips.files.clone(),
            names: plan.skips.names,
            k: plan.skips.k.clone(),
            excluded_modules: plan.skips.excluded_modules.clone(),
        },
        started,
        finished: jiff::Timestamp::now(),
        result,
        wheels: installed
            .into_iter()
            .filter_map(|i| {
                Some(TestedWheel {
                    sha256: i.sha256?,
                    name: i.name,
                    version: i.version,
                    filename: i.filename,
                })
            })
            .collect(),
        steps: list,
        junit: junit_paths,
    };
    let mut text = serde_json::to_string_pretty(&report).context("serializing the shard report")?;
    text.push('\n');
    let path = output.join(SHARD_FILE);
    crate::fsutil::write_atomic(&path, text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(ShardRun {
        report,
        junit,
        interrupted,
    })
}
