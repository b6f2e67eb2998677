//! Running a shard walks its plan: the setup's steps (venv, install with pip's report — the
//! evidence —, the device query), the GPU choice from what the query saw, then the tests of the
//! plan made with that choice (a pure function of it: the skip lists and HIP_VISIBLE_DEVICES
//! follow the chosen GPUs), the JUnit files collected, shard.json written. Every process goes
//! through the runner; a signal stops the shard and the report records it as cancelled.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::Error;
use super::gpu::{self, DeviceQuery, GpuError};
use super::input::TestSettings;
use super::plan::{self, GpuState, SdkEnvPlan, Step, TestPlan, VERIFY_DYNAMO_LOG, World};
use super::report::{
    GpuRecord, JunitFile, SHARD_FILE, SHARD_KIND, SHARD_SCHEMA, ShardReport, SkipRecord,
    SourceRecord,
};
use super::sdk_env::{self, SdkEnvRecord, SdkPaths};
use super::shards::{TEST_CLASS_TIMES_FILE, TEST_TIMES_FILE};
use super::times::{self, TimesFacts, TimesPlan};
use crate::context::Context;
use crate::exec::{Cmd, ProcessError};
use crate::index::client::IndexClient;
use crate::pip::report::Installed;
use crate::promote::evidence::{Check, Outcome, TestedWheel};
use crate::wheel::companion::SDK_META_PACKAGE;

/// The built-in GPU smoke suite (F41), written into the work directory and run with pytest.
const GPU_SMOKE_SUITE: &str = include_str!("gpu_smoke.py");

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
    log_dir: PathBuf,
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

    /// Runs one step of the plan; its stdout (when captured) on success.
    fn step(&mut self, plan: &TestPlan, step: &Step) -> Option<String> {
        let cmd = plan.command(self.ctx.env(), step, &self.log_dir);
        self.run(&step.label, step.kind.as_str(), &cmd)
    }

    /// A planned step that does not run.
    fn skip(&mut self, step: &Step) {
        self.not_run(&step.label, step.kind.as_str());
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

/// What the install brought from the index under test.
#[derive(Default)]
struct Install {
    /// The files installed from the index under test (the evidence); empty: not ready.
    wheels: Vec<Installed>,
    python: Option<String>,
    /// The install brought the ROCm SDK (`rocm`, which torch built on it pins).
    sdk: bool,
}

/// Runs a shard. `world` is what [`inspect`](super::inspect) found; the tests are those of
/// the plan made with the chosen GPUs.
pub fn run(ctx: &Context, settings: &TestSettings, world: &World) -> anyhow::Result<ShardRun> {
    let started = jiff::Timestamp::now();
    let plan = plan::plan(settings, world, &GpuState::Pending)?;
    let output = &settings.output_dir;
    let log_dir = output.join("logs");
    let junit_dir = output.join("junit");
    // A re-run into the same directory replaces the earlier results, never mixes with them.
    for stale in [&log_dir, &junit_dir] {
        if stale.exists() {
            fs_err::remove_dir_all(stale)?;
        }
    }
    for dir in [&log_dir, &junit_dir] {
        crate::fsutil::create_dirs_below(output, dir, None)?;
    }
    let mut steps = Steps {
        ctx,
        task: ctx.ui.task("test"),
        list: Vec::new(),
        interrupted: None,
        log_dir,
    };

    let index_url = settings.index_url.clone().unwrap_or_default();
    let fit = check_runner(&mut steps, &plan, settings);
    let install = install(&mut steps, &plan, &index_url, fit);
    let installed = !install.wheels.is_empty();
    let sdk_tested = match (installed, install.sdk) {
        (true, true) => steps.step(&plan, &plan.setup.sdk_test).is_some(),
        // A torch built on a system ROCm pins no SDK: nothing to self-test.
        (true, false) => {
            steps.record(
                &plan.setup.sdk_test.label,
                plan.setup.sdk_test.kind.as_str(),
                Outcome::Skipped,
                format!("the install brought no ROCm SDK (`{SDK_META_PACKAGE}`)"),
                jiff::Timestamp::now(),
            );
            true
        }
        (false, _) => {
            steps.skip(&plan.setup.sdk_test);
            false
        }
    };
    let sdk = plan
        .sdk_env
        .as_ref()
        .map(|sdk| prepare_sdk(&mut steps, &plan, sdk, sdk_tested));
    let world = World {
        sdk: sdk.clone().flatten(),
        ..world.clone()
    };
    let mut gpu_notes = Vec::new();
    if let Some(ordinal) = &settings.gpu_device_ordinal {
        let note =
            format!("GPU_DEVICE_ORDINAL={ordinal} removed (HIP_VISIBLE_DEVICES takes precedence)");
        ctx.ui.warn(&note);
        gpu_notes.push(note);
    }
    let gpu_state = choose_gpus(
        &mut steps,
        &plan,
        sdk_tested && !matches!(sdk, Some(None)),
        &mut gpu_notes,
    );
    let selected = !matches!(gpu_state, GpuState::Pending);
    let world = World {
        times: prepare_times(&mut steps, &plan, &world, selected)?,
        ..world
    };
    let plan = plan::plan(settings, &world, &gpu_state)?;
    if let Some(suite) = &plan.smoke_suite {
        crate::fsutil::write_atomic(suite, GPU_SMOKE_SUITE.as_bytes())?;
    } else if plan.junit_from.exists() {
        // run_test.py writes its reports into the checkout; earlier runs' must not count.
        fs_err::remove_dir_all(&plan.junit_from)?;
    }
    run_tests(&mut steps, &plan, selected);
    let (junit_paths, junit) = collect_junit(&mut steps, &plan, &junit_dir)?;

    let Steps {
        task,
        list,
        interrupted,
        ..
    } = steps;
    let result = outcome(&list, interrupted);
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
    let torch = install
        .wheels
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
        python: install.python,
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
        wheels: install
            .wheels
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
        sdk_env: plan.sdk_env.as_ref().and_then(|sdk| {
            Some(SdkEnvRecord {
                paths: sdk.paths.clone()?,
                variables: sdk.variables.clone(),
            })
        }),
        runner: Some(settings.runner.clone()),
        unfit: plan.unfit.clone(),
        times: plan.times.as_ref().map(TimesPlan::record),
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

/// Hands run_test.py this ref's test times where it reads them: the cache's, else what the
/// checkout's export writes (then cached for the next shard of the ref). The checkout's
/// earlier files are removed first, so run_test.py reads exactly these. Without usable times
/// run_test.py's default sharding applies: a note (in the plan, the report, the summary),
/// never a failure.
fn prepare_times(
    steps: &mut Steps<'_>,
    plan: &TestPlan,
    world: &World,
    ready: bool,
) -> anyhow::Result<TimesFacts> {
    let mut facts = world.times.clone();
    let Some(times) = &plan.times else {
        return Ok(facts);
    };
    const LABEL: &str = "test times";
    let files = [TEST_TIMES_FILE, TEST_CLASS_TIMES_FILE];
    for name in files {
        let stale = times.into.join(name);
        if stale.exists() {
            fs_err::remove_file(&stale)?;
        }
    }
    let started = jiff::Timestamp::now();
    if plan.shard.total <= 1 {
        return Ok(facts);
    }
    if let (Some(loaded), Some(cache)) = (&facts.file, &times.cache_dir) {
        fs_err::create_dir_all(&times.into)?;
        for name in files {
            if cache.join(name).is_file() {
                crate::fsutil::copy(&cache.join(name), &times.into.join(name))?;
            }
        }
        let detail = format!("{} ({})", loaded.from, cache.display());
        steps.record(LABEL, "times", Outcome::Passed, detail, started);
        return Ok(facts);
    }
    if !times.will_export {
        let detail = times.note.clone().unwrap_or_default();
        steps.record(LABEL, "times", Outcome::Skipped, detail, started);
        return Ok(facts);
    }
    if !ready || steps.interrupted.is_some() {
        steps.skip(&times.export);
        return Ok(facts);
    }
    let cmd = plan.command(steps.ctx.env(), &times.export, &steps.log_dir);
    steps.task.phase(LABEL.to_string());
    let why = match steps.ctx.runner.run(&cmd) {
        Err(ProcessError::Interrupted { signal, .. }) => {
            steps.interrupted = Some(signal);
            let detail = format!("interrupted by signal {signal}");
            steps.record(LABEL, "times", Outcome::Cancelled, detail, started);
            return Ok(facts);
        }
        Err(error) => format!("the export failed: {error}"),
        Ok(_) => match times::load(&times.into, &times.build_environment, &times.test_config) {
            Ok(Some(file)) => {
                if let Some(cache) = &times.cache_dir {
                    fs_err::create_dir_all(cache)?;
                    for name in files {
                        let exported = times.into.join(name);
                        if exported.is_file() {
                            crate::fsutil::write_atomic(
                                &cache.join(name),
                                &fs_err::read(&exported)?,
                            )?;
                        }
                    }
                }
                let from = match &times.cache_dir {
                    Some(cache) => format!(
                        "exported by {} (cached in {})",
                        times::EXPORT_SCRIPT,
                        cache.display()
                    ),
                    None => format!(
                        "exported by {} (not cached: the sources' commit is unknown)",
                        times::EXPORT_SCRIPT
                    ),
                };
                steps.record(LABEL, "times", Outcome::Passed, from.clone(), started);
                facts.file = Some(times::Loaded { times: file, from });
                return Ok(facts);
            }
            Ok(None) => format!(
                "{} wrote no {TEST_TIMES_FILE} (it could not download test-infra's stats)",
                times::EXPORT_SCRIPT
            ),
            Err(why) => {
                // Unusable for run_test.py (it would stop with a KeyError): not handed over.
                for name in files {
                    let bad = times.into.join(name);
                    if bad.exists() {
                        fs_err::remove_file(&bad)?;
                    }
                }
                format!("the exported times are unusable: {why}")
            }
        },
    };
    steps.ctx.ui.note(format!(
        "no test times: {why}; run_test.py's default sharding applies (round robin)"
    ));
    steps.record(LABEL, "times", Outcome::Skipped, why.clone(), started);
    facts.unavailable = Some(why);
    Ok(facts)
}

/// The runner's GPUs and driver against what the suite needs: an unfit runner stops the run
/// before anything is installed.
fn check_runner(steps: &mut Steps<'_>, plan: &TestPlan, settings: &TestSettings) -> bool {
    let started = jiff::Timestamp::now();
    let name = "check the runner";
    match &plan.unfit {
        Some(reason) => {
            steps.ctx.ui.warn(format!("runner unfit: {reason}"));
            steps.record(name, "preflight", Outcome::Failed, reason.clone(), started);
            false
        }
        None => {
            steps.record(
                name,
                "preflight",
                Outcome::Passed,
                settings.runner.to_line(),
                started,
            );
            true
        }
    }
}

/// The setup's venv and install, then the evidence: the files pip's report names that the
/// index under test lists with the same SHA-256. Torch must be among them.
fn install(steps: &mut Steps<'_>, plan: &TestPlan, index_url: &str, fit: bool) -> Install {
    let setup = &plan.setup;
    let record = "record the installed wheels";
    if !fit {
        steps.skip(&setup.venv);
        steps.skip(&setup.install);
        steps.not_run(record, "install");
        return Install::default();
    }
    if steps.step(plan, &setup.venv).is_none() {
        steps.skip(&setup.install);
        steps.not_run(record, "install");
        return Install::default();
    }
    if steps.step(plan, &setup.install).is_none() {
        steps.not_run(record, "install");
        return Install::default();
    }
    if let Some(requirements_ci) = &setup.requirements_ci
        && steps.step(plan, requirements_ci).is_none()
    {
        steps.not_run(record, "install");
        return Install::default();
    }
    let started = jiff::Timestamp::now();
    let mut python = None;
    let mut sdk = false;
    let found = crate::input::read_text(&setup.pip_report, crate::input::REPORT)
        .map_err(|e| e.to_string())
        .and_then(|text| crate::pip::report::parse(&text))
        .and_then(|report| {
            python = report.python.clone();
            sdk = report
                .installed
                .iter()
                .any(|i| crate::wheel::filename::normalize_name(&i.name) == SDK_META_PACKAGE);
            let client = IndexClient::new(index_url).map_err(|e| e.to_string())?;
            crate::pip::report::from_index(&report.installed, &client).map_err(|e| e.to_string())
        });
    let names = |found: &[Installed]| {
        found
            .iter()
            .map(|i| i.filename.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match found {
        Ok(wheels) if wheels.iter().any(|i| i.name == "torch") => {
            steps.record(
                record,
                "install",
                Outcome::Passed,
                format!("from the index under test: {}", names(&wheels)),
                started,
            );
            return Install {
                wheels,
                python,
                sdk,
            };
        }
        Ok(found) => steps.record(
            record,
            "install",
            Outcome::Failed,
            format!(
                "torch was not installed from the index under test ({}); installed from it: {}",
                crate::redact::redact_url(index_url),
                if found.is_empty() {
                    "nothing".to_string()
                } else {
                    names(&found)
                }
            ),
            started,
        ),
        Err(message) => steps.record(
            record,
            "install",
            Outcome::Failed,
            format!("pip's install report: {message}"),
            started,
        ),
    }
    Install {
        wheels: Vec::new(),
        python,
        sdk,
    }
}

/// The SDK's test environment: `rocm-sdk init`, then its three paths, each answer one absolute
/// path, and the tree they name holding what the tests compile with. The paths on success;
/// nothing runs after a failure (the tests would compile with the runner's tools).
fn prepare_sdk(
    steps: &mut Steps<'_>,
    plan: &TestPlan,
    sdk: &SdkEnvPlan,
    ready: bool,
) -> Option<SdkPaths> {
    let check = "the ROCm SDK's test environment";
    let mut answers: Vec<String> = Vec::new();
    let mut failed = !ready;
    for (step, (_, _, answers_which)) in sdk.steps.iter().zip(sdk_env::QUERIES) {
        if failed {
            steps.skip(step);
            continue;
        }
        let started = jiff::Timestamp::now();
        match steps.step(plan, step) {
            None => failed = true,
            Some(stdout) => {
                if answers_which.is_none() {
                    continue;
                }
                match sdk_env::parse_path(&stdout) {
                    Some(path) => answers.push(path),
                    None => {
                        steps.record(
                            check,
                            "sdk",
                            Outcome::Failed,
                            format!("`{}` printed no absolute path:\n{stdout}", step.label),
                            started,
                        );
                        return None;
                    }
                }
            }
        }
    }
    if failed {
        steps.not_run(check, "sdk");
        return None;
    }
    let started = jiff::Timestamp::now();
    let [root, bin, cmake] = <[String; 3]>::try_from(answers).ok()?;
    let paths = SdkPaths { root, bin, cmake };
    match sdk_env::check(&paths) {
        Ok(()) => {
            steps.record(
                check,
                "sdk",
                Outcome::Passed,
                format!(
                    "ROCM_HOME={}, CC={}/lib/llvm/bin/clang",
                    paths.root, paths.root
                ),
                started,
            );
            Some(paths)
        }
        Err(message) => {
            steps.record(check, "sdk", Outcome::Failed, message, started);
            None
        }
    }
}

/// The device query (in a child process, before any test imports torch), then the choice
/// among what it saw, by the plan's mode, policy, family and preset. Pending when the query
/// did not run or the choice failed.
fn choose_gpus(
    steps: &mut Steps<'_>,
    plan: &TestPlan,
    ready: bool,
    notes: &mut Vec<String>,
) -> GpuState {
    let choose = "select the GPUs";
    if !ready {
        steps.skip(&plan.setup.device_query);
        steps.not_run(choose, "gpu");
        return GpuState::Pending;
    }
    let started = jiff::Timestamp::now();
    let Some(stdout) = steps.step(plan, &plan.setup.device_query) else {
        steps.not_run(choose, "gpu");
        return GpuState::Pending;
    };
    // The query step passed; what it found decides the selection step.
    let Some(found) = DeviceQuery::parse(&stdout) else {
        steps.record(
            choose,
            "gpu",
            Outcome::Failed,
            format!("the device query printed no result:\n{stdout}"),
            started,
        );
        return GpuState::Pending;
    };
    let gpu = &plan.gpu;
    match gpu::select(
        &found,
        gpu.preset.as_deref(),
        gpu.family.as_deref(),
        gpu.device_query.value,
        gpu.gpu_policy.value,
        0,
    ) {
        Ok(selection) => {
            steps.record(
                choose,
                "gpu",
                Outcome::Passed,
                selection.to_string(),
                started,
            );
            GpuState::Selected(selection)
        }
        Err(GpuError::Unavailable { reason }) if gpu.allow_no_gpu => {
            let note = format!("no GPU: {reason}");
            steps.ctx.ui.warn(format!(
                "{note}; --allow-no-gpu: GPU checks will be reported as skipped"
            ));
            steps.record(
                choose,
                "gpu",
                Outcome::Skipped,
                format!("{note} (--allow-no-gpu)"),
                started,
            );
            notes.push(note);
            GpuState::None { reason }
        }
        Err(error) => {
            let error = match error {
                GpuError::Unavailable { .. } => Error::NoGpu(error),
                other => Error::Gpu(other),
            };
            steps.record(choose, "gpu", Outcome::Failed, error.to_string(), started);
            GpuState::Pending
        }
    }
}

/// The plan's tests in order, once the GPUs are chosen. verify_dynamo.py gates the inductor
/// runs, as upstream; test runs do not gate each other.
fn run_tests(steps: &mut Steps<'_>, plan: &TestPlan, selected: bool) {
    let mut previous_ok = selected;
    for step in &plan.steps {
        if !previous_ok {
            steps.skip(step);
            continue;
        }
        let passed = steps.step(plan, step).is_some();
        if step.log == VERIFY_DYNAMO_LOG && !passed {
            previous_ok = false;
        }
        if steps.interrupted.is_some() {
            previous_ok = false;
        }
    }
}

/// The JUnit files, copied next to shard.json (paths as the report names them, and each
/// file read); a run whose tests wrote none fails here.
fn collect_junit(
    steps: &mut Steps<'_>,
    plan: &TestPlan,
    junit_dir: &Path,
) -> anyhow::Result<(Vec<String>, Vec<JunitFile>)> {
    let started = jiff::Timestamp::now();
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
                crate::fsutil::copy(&path, &destination)?;
            }
            let shown = Path::new("junit").join(&relative).display().to_string();
            let report = crate::input::read_text(&destination, crate::input::REPORT)
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
        steps.record("collect JUnit", "junit", result, detail, started);
    }
    Ok((junit_paths, junit))
}

/// The shard's result: cancelled by a signal, failed by any failed check, passed when a test
/// step passed, else empty.
fn outcome(list: &[Check], interrupted: Option<i32>) -> Outcome {
    if interrupted.is_some() {
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
    }
}
