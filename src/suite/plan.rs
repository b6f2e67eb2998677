//! The plan of one test shard: what is installed from where, how the GPUs are chosen, which
//! skip lists apply, the environment, and every command (the setup's venv, install and device
//! query, then the tests) — a pure function of the settings, the inspected world and (once the
//! device query ran) the GPU selection. `--dry-run` prints it; the run walks it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::Error;
use super::catalog::TestConfig;
use super::gpu::{self, DeviceQueryMode, GpuPolicy, GpuSelection};
use super::input::{Requirements, TestSettings};
use super::runtest::{self, RunTestInputs, Shard};
use super::sdk_env::{self, SdkPaths};
use super::skips::{self, KMode, MajorMinor, RunFacts, SkipSelection};
use super::times::{self, TimesFacts, TimesPlan};
use crate::env_vars::{self, Environment};
use crate::exec::Cmd;
use crate::platform::Platform;
use crate::sourced::{Source, Sourced};

/// The file name of the GPU smoke suite in the work directory.
pub const GPU_SMOKE_FILE: &str = "test_gpu_smoke.py";
/// The environment variable that tells the GPU smoke suite whether GPUs were selected.
pub const GPU_EXPECTED: &str = "ROCKBUILD_GPU_EXPECTED";
/// Why there is no GPU, for the smoke suite's skip messages.
pub const NO_GPU_REASON: &str = "ROCKBUILD_NO_GPU_REASON";

/// The test sources, as found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFacts {
    pub dir: PathBuf,
    /// version.txt's content.
    pub version: Option<String>,
    pub commit: Option<String>,
    pub has_run_test: bool,
    pub has_verify_dynamo: bool,
    /// `.ci/docker/requirements-ci.txt`'s text, when the checkout has one.
    pub requirements_ci: Option<String>,
    /// The hang-listed modules (of any list) whose file the checkout has.
    pub present_modules: Vec<String>,
}

/// The torch the run installs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelFacts {
    pub version: String,
    pub source: Source,
    /// `version` is a placeholder: a dry run does not read the index, the run takes the
    /// newest torch it offers then.
    pub at_run_time: bool,
}

/// What the command found before planning.
#[derive(Clone, Debug, PartialEq)]
pub struct World {
    pub source: Option<SourceFacts>,
    /// `None` when not known (--print-skips without an index).
    pub wheel: Option<WheelFacts>,
    /// The directory for the venv (unless --venv), the suite file and caches.
    pub work_dir: PathBuf,
    /// PATH of the environment rockbuild started in (the venv's bin goes in front).
    pub path: String,
    /// What the venv directory holds now.
    pub venv: VenvState,
    /// The job's values of the path lists the SDK's environment puts its own entries before.
    pub sdk_inherited: Vec<(String, String)>,
    /// What the installed `rocm-sdk` answered (known once the run asked it).
    pub sdk: Option<SdkPaths>,
    /// The test times run_test.py balances shards with, and the checkout's test modules.
    pub times: TimesFacts,
}

/// What the venv directory holds before the run: the venv is always made fresh, and only a
/// directory that holds a venv is emptied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VenvState {
    /// Missing or empty.
    Absent,
    /// An earlier venv (`pyvenv.cfg`): emptied with `--clear`.
    Venv,
    /// Files that are not a venv: refused.
    Occupied,
}

impl VenvState {
    /// Reads what `dir` holds.
    pub fn of(dir: &Path) -> VenvState {
        if dir.join("pyvenv.cfg").is_file() {
            VenvState::Venv
        } else if fs_err::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some()) {
            VenvState::Occupied
        } else {
            VenvState::Absent
        }
    }
}

/// The venv the shard installs into: `--venv`, else one in the work directory.
pub fn venv_dir(settings: &TestSettings, work_dir: &Path) -> PathBuf {
    settings
        .venv
        .clone()
        .unwrap_or_else(|| work_dir.join("venv"))
}

/// Where GPU selection stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuState {
    /// The device query has not run (a dry run, or planning before the install).
    Pending,
    Selected(GpuSelection),
    /// No usable GPU, and --allow-no-gpu was given.
    None {
        reason: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvLine {
    pub name: String,
    /// `None`: removed.
    pub value: Option<String>,
    pub source: Source,
}

/// What a step is, as the shard report groups its checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    Install,
    Preflight,
    Sdk,
    Gpu,
    Times,
    Run,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Install => "install",
            StepKind::Preflight => "preflight",
            StepKind::Sdk => "sdk",
            StepKind::Gpu => "gpu",
            StepKind::Times => "times",
            StepKind::Run => "run",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    pub label: String,
    pub kind: StepKind,
    pub program: PathBuf,
    /// Credentials in an index URL are masked when the plan is printed, never when it runs.
    #[serde(serialize_with = "redacted")]
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Variables of this step on top of the plan's environment.
    pub env: Vec<(String, Option<String>)>,
    /// Log file name in the shard's logs/.
    pub log: String,
    /// None: the installer's own limits (pip's, with retries of network failures).
    pub timeout_secs: Option<u64>,
    /// Runs pip: with pip's limits, retries of network failures and no pip configuration.
    pub installer: bool,
    /// Its stdout is the step's result (the device query's JSON).
    pub capture_stdout: bool,
}

fn redacted<S: serde::Serializer>(args: &[String], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_seq(args.iter().map(|arg| crate::redact::redact_url(arg)))
}

/// Before the tests, each after the one before: a fresh venv, torch and the test requirements
/// installed with pip's report (the evidence), the GPUs seen in a child process before any
/// test imports torch.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Setup {
    pub venv: Step,
    pub install: Step,
    /// PyTorch's own test requirements (the checkout's requirements-ci.txt), installed after
    /// the others when the run runs run_test.py and the checkout has the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirements_ci: Option<Step>,
    /// pip's installation report the install writes.
    pub pip_report: PathBuf,
    /// `rocm-sdk test`: the installed SDK's self-check (the reference's sanity tests).
    pub sdk_test: Step,
    pub device_query: Step,
}

/// How long creating the venv or the device query may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InstallPlan {
    pub venv: PathBuf,
    pub python: PathBuf,
    pub index_url: String,
    pub extra_index_urls: Vec<String>,
    pub find_links: Vec<String>,
    /// pip's requirement arguments: `torch==V`, then the test requirements (lines, or
    /// `-r FILE`).
    pub requirements: Vec<String>,
    pub torch_source: Source,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuPlan {
    pub device_query: Sourced<DeviceQueryMode>,
    pub gpu_policy: Sourced<GpuPolicy>,
    pub family: Option<String>,
    pub preset: Option<String>,
    /// No usable GPU is a note, not a failure (`--allow-no-gpu`).
    pub allow_no_gpu: bool,
    /// What was or will be decided.
    pub state: String,
    pub hip_visible_devices: Option<String>,
    pub archs: Vec<String>,
}

/// The SDK's queries after the install and the variables the tests get from their answers
/// (`<root>`, `<bin>`, `<cmake>` while not known).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SdkEnvPlan {
    /// `rocm-sdk init`, then `rocm-sdk path --root`, `--bin`, `--cmake`.
    pub steps: Vec<Step>,
    pub variables: Vec<(String, String)>,
    /// The SDK's answers the variables were made from; `None` before the run asked.
    pub paths: Option<SdkPaths>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkipPlan {
    pub source: Source,
    pub mode: KMode,
    pub files: Vec<String>,
    pub names: usize,
    pub k: Option<String>,
    pub excluded_modules: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TestPlan {
    pub config: TestConfig,
    pub shard: Shard,
    pub output_dir: PathBuf,
    /// The JUnit directory the commands write to (collected into the output directory).
    pub junit_from: PathBuf,
    pub source: Option<String>,
    pub version_check: String,
    /// The runner's GPUs and driver, as `detect` read them.
    pub runner: String,
    /// Why the runner cannot run the suite: the run stops before installing.
    pub unfit: Option<String>,
    pub install: InstallPlan,
    pub setup: Setup,
    /// The ROCm SDK's test environment, prepared after the install (configs that compile).
    pub sdk_env: Option<SdkEnvPlan>,
    /// The GPU smoke suite, written here before the steps run (GPU smoke only).
    pub smoke_suite: Option<PathBuf>,
    pub gpu: GpuPlan,
    pub skips: SkipPlan,
    pub env: Vec<EnvLine>,
    /// The test times and the shard's tests (run_test.py configs).
    pub times: Option<TimesPlan>,
    pub steps: Vec<Step>,
}

/// The facts the skip lists are chosen by.
pub fn run_facts(settings: &TestSettings, world: &World, gpu: &GpuState) -> Option<RunFacts> {
    let pytorch = settings.pytorch_version.or_else(|| {
        world
            .wheel
            .as_ref()
            .filter(|w| !w.at_run_time)
            .and_then(|w| MajorMinor::of_version(&w.version))
            .or_else(|| {
                world
                    .source
                    .as_ref()
                    .and_then(|s| s.version.as_deref())
                    .and_then(MajorMinor::of_version)
            })
    })?;
    let targets = match gpu {
        GpuState::Selected(selection) => Some(selection.archs.clone()),
        _ => settings.family_targets.clone(),
    };
    Some(RunFacts {
        pytorch,
        platform: settings.platform.value,
        targets,
        family: settings.family.clone(),
    })
}

/// The skip lists applied to this run, with the hang-listed modules the checkout has.
pub fn skip_selection(
    settings: &TestSettings,
    world: &World,
    gpu: &GpuState,
) -> Result<(SkipSelection, Vec<String>), Error> {
    let facts = run_facts(settings, world, gpu).ok_or_else(|| Error::Flag {
        flag: "--pytorch-version",
        message: if settings.dry_run {
            "the PyTorch version whose skip lists apply is not known, and a dry run reads no index: pass --pytorch-version, --pytorch-dir or --lock".into()
        } else {
            "the PyTorch version whose skip lists apply is not known: pass --pytorch-version, --pytorch-dir or --index-url".into()
        },
    })?;
    let selection = skips::select(&settings.skip_lists, &facts);
    let present: Vec<String> = match &world.source {
        Some(source) => selection
            .hangs
            .iter()
            .filter(|m| source.present_modules.contains(m))
            .cloned()
            .collect(),
        None => Vec::new(),
    };
    Ok((selection, present))
}

/// Plans a shard.
pub fn plan(settings: &TestSettings, world: &World, gpu: &GpuState) -> Result<TestPlan, Error> {
    let wheel = world.wheel.as_ref().ok_or_else(|| Error::Flag {
        flag: "--index-url",
        message: "the index under test is required".into(),
    })?;
    let runs_run_test = settings.config != TestConfig::GpuSmoke;
    let version_check = check_versions(settings, world, wheel, runs_run_test)?;
    let (selection, present_hangs) = skip_selection(settings, world, gpu)?;
    let k = skips::k_expression(&selection.names, settings.k_mode);
    if settings.k_mode == KMode::Only && k.is_none() {
        return Err(Error::Flag {
            flag: "--only-skipped",
            message: "no skip-list entry applies to this run, so there is nothing to run".into(),
        });
    }

    let venv = venv_dir(settings, &world.work_dir);
    let platform = Platform::host();
    let python = platform.venv_python(&venv);
    let mut requirements = vec![format!(
        "{}=={}",
        torch_requirement(settings)?,
        wheel.version
    )];
    let with_sdk_env = sdk_env::applies(settings.config);
    if with_sdk_env {
        requirements.push(sdk_env::DEVEL_REQUIREMENT.to_string());
    }
    match &settings.requirements {
        Requirements::Lines(lines) => requirements.extend(lines.iter().cloned()),
        Requirements::File(path) => {
            requirements.extend(["-r".to_string(), path.display().to_string()]);
        }
    }
    let install = InstallPlan {
        venv: venv.clone(),
        python: settings.python.clone(),
        index_url: crate::redact::redact_url(settings.index_url.as_deref().unwrap_or_default()),
        extra_index_urls: settings
            .extra_index_urls
            .iter()
            .map(|u| crate::redact::redact_url(u))
            .collect(),
        find_links: settings.find_links.clone(),
        requirements,
        torch_source: wheel.source.clone(),
    };
    let setup = setup(settings, world, &install, &python)?;
    let sdk_env = with_sdk_env.then(|| sdk_env_plan(world, &venv, platform));

    let (gpu_state, visible, archs) = gpu_decision(gpu);
    let env = environment(
        settings,
        world,
        &venv,
        platform,
        visible.as_ref(),
        sdk_env.as_ref(),
    );
    let (junit_from, steps, times) = if runs_run_test {
        let (junit_from, steps, invocations) =
            run_test_steps(settings, world, &python, k.as_deref(), &present_hangs)?;
        let times = world.source.as_ref().map(|source| {
            let build_environment = settings
                .test_env
                .iter()
                .find(|(name, _)| *name == env_vars::BUILD_ENVIRONMENT)
                .map(|(_, value)| value.value.as_str())
                .unwrap_or_default();
            times::plan(
                &world.times,
                &source.dir,
                &python,
                build_environment,
                settings.config,
                settings.shard,
                &invocations,
            )
        });
        (junit_from, steps, times)
    } else {
        let (junit_from, steps) = smoke_steps(settings, world, gpu, &python);
        (junit_from, steps, None)
    };

    Ok(TestPlan {
        config: settings.config,
        shard: settings.shard,
        output_dir: settings.output_dir.clone(),
        junit_from,
        source: world.source.as_ref().map(|s| {
            format!(
                "{} (PyTorch {}, commit {})",
                s.dir.display(),
                s.version.as_deref().unwrap_or("unknown"),
                s.commit.as_deref().map(short).unwrap_or("unknown")
            )
        }),
        version_check,
        runner: format!(
            "{} (sysfs at {})",
            settings.runner.to_line(),
            settings.runner.sysfs_root
        ),
        unfit: settings.runner.unfit(
            !settings.allow_no_gpu,
            settings
                .family
                .as_deref()
                .zip(settings.family_targets.as_deref()),
        ),
        install,
        setup,
        sdk_env,
        smoke_suite: (!runs_run_test).then(|| world.work_dir.join(GPU_SMOKE_FILE)),
        gpu: GpuPlan {
            device_query: settings.device_query.clone(),
            gpu_policy: settings.gpu_policy.clone(),
            family: settings.family.clone(),
            preset: settings.preset_visible_devices.clone(),
            allow_no_gpu: settings.allow_no_gpu,
            state: gpu_state,
            hip_visible_devices: visible,
            archs,
        },
        skips: SkipPlan {
            source: settings.skip_lists_source.clone(),
            mode: settings.k_mode,
            files: selection
                .files
                .iter()
                .filter(|f| f.decision.applies())
                .map(|f| f.file.clone())
                .collect(),
            names: selection.names.len(),
            k,
            excluded_modules: present_hangs,
        },
        env,
        times,
        steps,
    })
}

/// What was or will be decided about the GPUs: the state as printed, HIP_VISIBLE_DEVICES,
/// the chosen targets.
fn gpu_decision(gpu: &GpuState) -> (String, Option<String>, Vec<String>) {
    match gpu {
        GpuState::Pending => (
            "decided by the device query after the install".to_string(),
            None,
            Vec::new(),
        ),
        GpuState::Selected(selection) => (
            selection.to_string(),
            Some(selection.hip_visible_devices.clone()),
            selection.archs.clone(),
        ),
        GpuState::None { reason } => (
            format!("no GPU ({reason}); --allow-no-gpu: GPU checks are skipped"),
            None,
            Vec::new(),
        ),
    }
}

/// The tests' environment: the test env of the config, then what rockbuild sets or removes
/// for a run (the venv first, PYTHONPATH at the test directory, the GPUs chosen).
fn environment(
    settings: &TestSettings,
    world: &World,
    venv: &Path,
    platform: Platform,
    visible: Option<&String>,
    sdk_env: Option<&SdkEnvPlan>,
) -> Vec<EnvLine> {
    let mut env: Vec<EnvLine> = settings
        .test_env
        .iter()
        .map(|(name, sourced)| EnvLine {
            name: name.to_string(),
            value: Some(sourced.value.clone()),
            source: sourced.source.clone(),
        })
        .collect();
    let fixed = |name: &str, value: Option<String>, why: &str| EnvLine {
        name: name.to_string(),
        value,
        source: Source::Inferred(why.to_string()),
    };
    env.push(fixed(
        "TEST_CONFIG",
        Some(settings.config.run_test_config().to_string()),
        "--test-config",
    ));
    if settings.config != TestConfig::Distributed {
        // 1-GPU runners would otherwise start NUM_PROCS workers on one GPU (TheRock).
        env.push(fixed(
            "PYTORCH_TEST_RUN_EVERYTHING_IN_SERIAL",
            Some("1".into()),
            "one GPU per test process",
        ));
    }
    env.push(fixed(
        "PYTHONUNBUFFERED",
        Some("1".into()),
        "live logs: a stopped run shows the test it was in",
    ));
    env.push(fixed(
        "MIOPEN_CUSTOM_CACHE_DIR",
        Some(world.work_dir.join("miopen-cache").display().to_string()),
        "a fresh MIOpen cache per run",
    ));
    if let Some(sdk) = sdk_env {
        for (name, value) in &sdk.variables {
            env.push(fixed(
                name,
                Some(value.clone()),
                "the ROCm SDK, from `rocm-sdk path`",
            ));
        }
    }
    // The SDK's bin (hipcc, amdclang) after the venv: the venv's python and rocm-sdk win.
    let sdk_bin = sdk_env.and_then(|sdk| {
        sdk.variables
            .iter()
            .find(|(name, _)| name == "ROCM_BIN")
            .map(|(_, value)| value.clone())
    });
    env.push(fixed(
        env_vars::PATH,
        Some(
            platform.join_path_list(
                std::iter::once(venv.join(platform.venv_scripts()).display().to_string())
                    .chain(sdk_bin)
                    .chain(std::iter::once(world.path.clone())),
            ),
        ),
        if sdk_env.is_some() {
            "the test venv first, then the ROCm SDK's bin"
        } else {
            "the test venv first"
        },
    ));
    env.push(fixed(
        env_vars::VIRTUAL_ENV,
        Some(venv.display().to_string()),
        "the test venv",
    ));
    if let Some(source) = &world.source {
        env.push(fixed(
            "PYTHONPATH",
            Some(source.dir.join("test").display().to_string()),
            "run_test.py imports from the test directory",
        ));
    } else {
        env.push(fixed(
            "PYTHONPATH",
            None,
            "nothing from the job's Python path",
        ));
    }
    for name in ["PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE"] {
        env.push(fixed(name, None, "the venv's Python only"));
    }
    if settings.gpu_device_ordinal.is_some() {
        env.push(fixed(
            env_vars::GPU_DEVICE_ORDINAL,
            None,
            "HIP aborts when it conflicts with HIP_VISIBLE_DEVICES",
        ));
    }
    if let (Some(visible), false) = (visible, settings.config == TestConfig::GpuSmoke) {
        env.push(fixed(
            env_vars::HIP_VISIBLE_DEVICES,
            Some(visible.clone()),
            "GPU selection",
        ));
    }
    env
}

/// `rocm-sdk init` and the three path queries (each answer captured), in the venv's
/// `rocm-sdk`; the variables from the answers once the run has them.
fn sdk_env_plan(world: &World, venv: &Path, platform: Platform) -> SdkEnvPlan {
    let program = sdk_env::program(platform, venv);
    let steps = sdk_env::QUERIES
        .iter()
        .map(|(label, args, answers)| Step {
            label: label.to_string(),
            kind: StepKind::Sdk,
            program: program.clone(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: world.work_dir.clone(),
            env: Vec::new(),
            log: format!(
                "rocm-sdk-{}.log",
                args.iter()
                    .map(|a| a.trim_start_matches('-'))
                    .collect::<Vec<_>>()
                    .join("-")
            ),
            timeout_secs: Some(SETUP_TIMEOUT.as_secs()),
            installer: false,
            capture_stdout: answers.is_some(),
        })
        .collect();
    SdkEnvPlan {
        steps,
        variables: sdk_env::variables(world.sdk.as_ref(), &world.sdk_inherited, platform),
        paths: world.sdk.clone(),
    }
}

/// run_test.py's invocations for the config (verify_dynamo.py first for inductor, as
/// upstream's test_inductor_shard()), and where their JUnit files go.
fn run_test_steps(
    settings: &TestSettings,
    world: &World,
    python: &Path,
    k: Option<&str>,
    present_hangs: &[String],
) -> Result<(PathBuf, Vec<Step>, Vec<runtest::Invocation>), Error> {
    let mut steps = Vec::new();
    let source = world.source.as_ref().ok_or_else(|| Error::Flag {
        flag: "--pytorch-dir",
        message: "the test sources are required".into(),
    })?;
    let junit_from = source.dir.join("test/test-reports");
    let mut exclude = settings.exclude.clone();
    exclude.extend(present_hangs.iter().cloned());
    let inputs = RunTestInputs {
        config: settings.config,
        shard: settings.shard,
        include: &settings.include,
        exclude: &exclude,
        k,
        passthrough: &settings.passthrough,
        timeout_secs: settings.timeout_secs,
        keep_going: settings.keep_going,
        exclude_jit_executor: settings.exclude_jit_executor,
        exclude_distributed: settings.exclude_distributed,
        exclude_quantization: settings.exclude_quantization,
        quick: &settings.catalog.quick,
        inductor: &settings.catalog.inductor,
    };
    if settings.config == TestConfig::Inductor && source.has_verify_dynamo {
        // Upstream's test_inductor_shard() runs it first as a quick check.
        steps.push(run_step(
            "verify_dynamo.py".into(),
            python,
            vec![
                source
                    .dir
                    .join("tools/dynamo/verify_dynamo.py")
                    .display()
                    .to_string(),
            ],
            &source.dir,
            Vec::new(),
            VERIFY_DYNAMO_LOG.into(),
            settings,
        ));
    }
    let invocations = runtest::invocations(&inputs);
    if invocations.is_empty() {
        let catalog = &settings.catalog;
        let lists: Vec<&String> = if settings.config == TestConfig::Quick {
            catalog.quick.include.iter().collect()
        } else {
            catalog
                .inductor
                .generic_tests
                .iter()
                .chain(&catalog.inductor.unit_tests)
                .collect()
        };
        return Err(Error::Flag {
            flag: "--include",
            message: format!(
                "none of these modules is in the {} config's lists ({})",
                settings.config,
                lists
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    let count = invocations.len();
    for (index, invocation) in invocations.iter().enumerate() {
        let mut args = vec![source.dir.join("test/run_test.py").display().to_string()];
        args.extend(invocation.args.iter().cloned());
        let log = if count == 1 {
            "run_test.log".into()
        } else {
            format!("run_test-{}.log", index + 1)
        };
        steps.push(run_step(
            invocation.label.clone(),
            python,
            args,
            &source.dir,
            Vec::new(),
            log,
            settings,
        ));
    }
    Ok((junit_from, steps, invocations))
}

/// The GPU smoke suite under pytest: once per candidate device once they are known, and where
/// its JUnit files go.
fn smoke_steps(
    settings: &TestSettings,
    world: &World,
    gpu: &GpuState,
    python: &Path,
) -> (PathBuf, Vec<Step>) {
    let mut steps = Vec::new();
    let junit_from = settings.output_dir.join("junit");
    let suite = world.work_dir.join(GPU_SMOKE_FILE);
    // (name in file names, the step's own variables, label)
    type SmokeRun = (String, Vec<(String, Option<String>)>, String);
    let runs: Vec<SmokeRun> = match gpu {
        GpuState::Selected(selection) => selection
            .candidates
            .iter()
            .map(|device| {
                (
                    format!("{}-{}", device.arch, device.system),
                    vec![
                        (
                            env_vars::HIP_VISIBLE_DEVICES.to_string(),
                            Some(device.system.clone()),
                        ),
                        (GPU_EXPECTED.to_string(), Some("1".into())),
                    ],
                    format!("GPU smoke on {} ({})", device.system, device.arch),
                )
            })
            .collect(),
        GpuState::Pending => vec![(
            "DEVICE".into(),
            vec![(GPU_EXPECTED.to_string(), Some("1".into()))],
            "GPU smoke, once per candidate device".into(),
        )],
        GpuState::None { reason } => vec![(
            "no-gpu".into(),
            vec![
                (GPU_EXPECTED.to_string(), Some("0".into())),
                (NO_GPU_REASON.to_string(), Some(reason.clone())),
            ],
            "GPU smoke without a GPU (GPU checks skip)".into(),
        )],
    };
    for (name, step_env, label) in runs {
        let mut args = vec![
            "-m".to_string(),
            "pytest".into(),
            suite.display().to_string(),
            "-v".into(),
            "-rs".into(),
            "-p".into(),
            "no:cacheprovider".into(),
            format!(
                "--junit-xml={}",
                junit_from.join(format!("gpu-smoke-{name}.xml")).display()
            ),
        ];
        args.extend(settings.passthrough.iter().cloned());
        if settings.timeout_secs > 0 {
            args.extend(["--timeout".to_string(), settings.timeout_secs.to_string()]);
        }
        steps.push(run_step(
            label,
            python,
            args,
            &world.work_dir,
            step_env,
            format!("gpu-smoke-{name}.log"),
            settings,
        ));
    }
    (junit_from, steps)
}

/// The log of verify_dynamo.py, whose failure stops the inductor runs after it.
pub const VERIFY_DYNAMO_LOG: &str = "verify-dynamo.log";

/// A step of the tests: the venv's Python in the source or work directory, `--run-timeout`.
fn run_step(
    label: String,
    python: &Path,
    args: Vec<String>,
    cwd: &Path,
    env: Vec<(String, Option<String>)>,
    log: String,
    settings: &TestSettings,
) -> Step {
    Step {
        label,
        kind: StepKind::Run,
        program: python.to_path_buf(),
        args,
        cwd: cwd.to_path_buf(),
        env,
        log,
        timeout_secs: Some(settings.run_timeout.as_secs()),
        installer: false,
        capture_stdout: false,
    }
}

/// The venv (emptied when it holds an earlier one; a directory holding anything else is
/// refused), the install with pip's report, the device query.
fn setup(
    settings: &TestSettings,
    world: &World,
    install: &InstallPlan,
    python: &Path,
) -> Result<Setup, Error> {
    let clear = match world.venv {
        VenvState::Absent => false,
        VenvState::Venv => true,
        VenvState::Occupied => {
            return Err(Error::Flag {
                flag: "--venv",
                message: format!(
                    "{} is not empty and is not a venv; rockbuild only empties a directory that holds a venv",
                    install.venv.display()
                ),
            });
        }
    };
    let mut venv_args: Vec<String> = vec!["-m".into(), "venv".into()];
    venv_args.extend(clear.then(|| "--clear".to_string()));
    venv_args.push(install.venv.display().to_string());
    let pip_report = world.work_dir.join("pip-report.json");
    let mut pip_args: Vec<String> = vec![
        "-m".into(),
        "pip".into(),
        "install".into(),
        "--report".into(),
        pip_report.display().to_string(),
        "--index-url".into(),
        settings.index_url.clone().unwrap_or_default(),
    ];
    for url in &settings.extra_index_urls {
        pip_args.extend(["--extra-index-url".to_string(), url.clone()]);
    }
    for links in &settings.find_links {
        pip_args.extend(["--find-links".to_string(), links.clone()]);
    }
    // The same sources, without the report: the evidence is what the first install took from
    // the index under test.
    let ci_prefix: Vec<String> = ["-m", "pip", "install"]
        .map(String::from)
        .into_iter()
        .chain(pip_args[5..].iter().cloned())
        .collect();
    let ci_args = |lines: Vec<String>| [ci_prefix.clone(), lines].concat();
    let requirements_ci = match world.source.as_ref() {
        Some(source) if settings.config != TestConfig::GpuSmoke => source
            .requirements_ci
            .as_deref()
            .map(|text| {
                super::requirements_ci::requirements(
                    text,
                    &settings.catalog.requirements_ci_overrides,
                )
                .map_err(|bad| Error::RequirementsCi {
                    dir: source.dir.clone(),
                    bad,
                })
            })
            .transpose()?,
        _ => None,
    };
    pip_args.extend(install.requirements.iter().cloned());
    let step = |label: &str, kind, program: &Path, args, log: &str| Step {
        label: label.to_string(),
        kind,
        program: program.to_path_buf(),
        args,
        cwd: world.work_dir.clone(),
        env: Vec::new(),
        log: log.to_string(),
        timeout_secs: Some(SETUP_TIMEOUT.as_secs()),
        installer: false,
        capture_stdout: false,
    };
    Ok(Setup {
        venv: Step {
            // Created from the directory rockbuild started in, as `python3 -m venv` would be.
            cwd: PathBuf::new(),
            ..step(
                "create venv",
                StepKind::Install,
                &settings.python,
                venv_args,
                "venv.log",
            )
        },
        install: Step {
            timeout_secs: None,
            installer: true,
            ..step(
                "install torch and the test requirements",
                StepKind::Install,
                python,
                pip_args,
                "install.log",
            )
        },
        requirements_ci: requirements_ci.map(|lines| Step {
            timeout_secs: None,
            installer: true,
            ..step(
                "install PyTorch's requirements-ci.txt",
                StepKind::Install,
                python,
                ci_args(lines),
                "install-requirements-ci.log",
            )
        }),
        pip_report,
        sdk_test: step(
            "rocm-sdk test",
            StepKind::Preflight,
            &sdk_env::program(Platform::host(), &install.venv),
            vec!["test".into()],
            "rocm-sdk-test.log",
        ),
        device_query: Step {
            capture_stdout: true,
            ..step(
                "query the GPUs",
                StepKind::Gpu,
                python,
                vec!["-c".into(), gpu::QUERY_SCRIPT.into()],
                "device-query.log",
            )
        },
    })
}

impl TestPlan {
    /// The command of one of the plan's steps: the plan's environment (the venv first,
    /// PYTHONPATH at the test directory, GPU_DEVICE_ORDINAL gone), nothing from the job's pip
    /// or uv configuration, then the step's own variables.
    pub fn command(&self, env: &Environment, step: &Step, log_dir: &Path) -> Cmd {
        let mut cmd = crate::pip::without_installer_env(env, Cmd::new(&step.program))
            .label(format!("test: {}", step.label))
            .args(&step.args)
            .log_to(log_dir.join(&step.log));
        if step.cwd != Path::new("") {
            cmd = cmd.cwd(&step.cwd);
        }
        for (name, value) in self
            .env
            .iter()
            .map(|line| (&line.name, &line.value))
            .chain(step.env.iter().map(|(name, value)| (name, value)))
        {
            cmd = match value {
                Some(value) => cmd.env(name.clone(), value),
                None => cmd.env_remove(name.clone()),
            };
        }
        if let Some(secs) = step.timeout_secs {
            cmd = cmd.timeout(Duration::from_secs(secs));
        }
        if step.installer {
            cmd = crate::pip::limits(cmd);
        }
        if step.capture_stdout {
            cmd = cmd.capture_stdout();
        }
        cmd
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Source and wheel must be the same PyTorch release (and, with a lock, the same commit).
fn check_versions(
    settings: &TestSettings,
    world: &World,
    wheel: &WheelFacts,
    runs_run_test: bool,
) -> Result<String, Error> {
    let Some(source) = world.source.as_ref().filter(|_| runs_run_test) else {
        return Ok(format!(
            "torch {} (no test sources to compare)",
            wheel.version
        ));
    };
    if !source.has_run_test {
        return Err(Error::NoRunTest {
            dir: source.dir.display().to_string(),
        });
    }
    let mut notes = Vec::new();
    let wheel_mm = MajorMinor::of_version(&wheel.version);
    match (&source.version, wheel_mm) {
        _ if wheel.at_run_time => notes.push(
            "the sources' release is compared with the wheel's when the run reads the index"
                .to_string(),
        ),
        (Some(text), Some(wheel_mm)) => match MajorMinor::of_version(text) {
            Some(source_mm) if source_mm == wheel_mm => {
                notes.push(format!("PyTorch {source_mm} in sources and wheel"));
            }
            other => {
                let error = Error::VersionMismatch {
                    source_version: other.map_or_else(|| text.clone(), |v| v.to_string()),
                    file: source.dir.join("version.txt").display().to_string(),
                    wheel_version: wheel.version.clone(),
                };
                if !settings.allow_version_mismatch {
                    return Err(error);
                }
                notes.push(format!(
                    "MISMATCH allowed (--allow-version-mismatch): {error}"
                ));
            }
        },
        (None, _) => notes.push(format!(
            "{} has no version.txt; the release cannot be compared",
            source.dir.display()
        )),
        (_, None) => notes.push(format!("torch {} is not a PEP 440 version", wheel.version)),
    }
    if let Some(lock) = &settings.lock
        && let Some(locked) = &lock.torch_commit
    {
        match &source.commit {
            Some(head) if head == locked => notes.push(format!("commit {} as locked", short(head))),
            head => {
                let error = Error::CommitMismatch {
                    dir: source.dir.display().to_string(),
                    head: head
                        .clone()
                        .unwrap_or_else(|| "(not a git checkout)".into()),
                    lock: lock.path.display().to_string(),
                    locked: locked.clone(),
                };
                if !settings.allow_version_mismatch {
                    return Err(error);
                }
                notes.push(format!(
                    "MISMATCH allowed (--allow-version-mismatch): {error}"
                ));
            }
        }
    }
    Ok(notes.join("; "))
}

impl TestPlan {
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "test plan: {} shard {} -> {}\n",
            self.config,
            self.shard,
            self.output_dir.display()
        );
        if let Some(source) = &self.source {
            let _ = writeln!(out, "  sources:  {source}");
        }
        let _ = writeln!(out, "  versions: {}", self.version_check);
        let _ = writeln!(out, "  runner:   {}", self.runner);
        if let Some(reason) = &self.unfit {
            let _ = writeln!(
                out,
                "  RUNNER UNFIT: {reason}; the run stops here and exits 8 (nothing is tested)"
            );
        }
        let install = &self.install;
        let _ = writeln!(
            out,
            "\ninstall into {} (created with {}), pip --report names every file from the index under test",
            install.venv.display(),
            install.python.display()
        );
        let _ = writeln!(out, "  index under test: {}", install.index_url);
        for url in &install.extra_index_urls {
            let _ = writeln!(out, "  extra index:      {url}");
        }
        for links in &install.find_links {
            let _ = writeln!(out, "  find links:       {links}");
        }
        let _ = writeln!(
            out,
            "  requirements:     {} ({})",
            install.requirements.join(" "),
            install.torch_source
        );
        let gpu = &self.gpu;
        let _ = writeln!(
            out,
            "\nGPUs: device query {} ({}), policy {} ({}){}{}",
            gpu.device_query.value.name(),
            gpu.device_query.source,
            gpu.gpu_policy.value.name(),
            gpu.gpu_policy.source,
            gpu.family
                .as_ref()
                .map(|f| format!(", family {f}"))
                .unwrap_or_default(),
            gpu.preset
                .as_ref()
                .map(|p| format!(", preset HIP_VISIBLE_DEVICES={p}"))
                .unwrap_or_default()
        );
        let _ = writeln!(out, "  {}", gpu.state);
        let skips = &self.skips;
        let _ = writeln!(
            out,
            "\nskip lists ({}): {}",
            skips.source,
            if skips.files.is_empty() {
                "none apply".to_string()
            } else {
                skips.files.join(", ")
            }
        );
        let _ = writeln!(
            out,
            "  {} test name{} {}{}",
            skips.names,
            crate::ui::plural(skips.names),
            match skips.mode {
                KMode::Skip => "skipped",
                KMode::Only => "run, nothing else (--only-skipped)",
            },
            if skips.k.is_some() {
                " through -k (rockbuild test --print-skips lists them)"
            } else {
                "; no -k filter"
            }
        );
        let _ = writeln!(
            out,
            "  hang-listed modules excluded: {}",
            if skips.excluded_modules.is_empty() {
                "none".to_string()
            } else {
                skips.excluded_modules.join(", ")
            }
        );
        out.push_str("\nenvironment of the tests:\n");
        for line in &self.env {
            let _ = writeln!(
                out,
                "  {}  ({})",
                match &line.value {
                    Some(value) => format!("{}={value}", line.name),
                    None => format!("unset {}", line.name),
                },
                line.source
            );
        }
        out.push_str("\nsetup, each step after the one before:\n");
        let setup = &self.setup;
        let sdk_steps = self.sdk_env.iter().flat_map(|sdk| &sdk.steps);
        for (index, step) in [&setup.venv, &setup.install]
            .into_iter()
            .chain(setup.requirements_ci.as_ref())
            .chain([&setup.sdk_test])
            .chain(sdk_steps)
            .chain([&setup.device_query])
            .enumerate()
        {
            step_text(&mut out, index, step);
        }
        if let Some(sdk) = &self.sdk_env {
            let _ = writeln!(
                out,
                "
the ROCm SDK's test environment, from the installed rocm[devel] (as the reference's full-suite job prepares it before anything compiles): {}",
                match &sdk.paths {
                    Some(paths) => format!(
                        "root {}, bin {}, cmake {}",
                        paths.root, paths.bin, paths.cmake
                    ),
                    None => "<root>, <bin> and <cmake> are what `rocm-sdk path --root`, `--bin` and `--cmake` print after `rocm-sdk init`; the variables are in the environment of the tests above".to_string(),
                }
            );
        }
        if let Some(suite) = &self.smoke_suite {
            let _ = writeln!(
                out,
                "\nthe GPU smoke suite is written to {}",
                suite.display()
            );
        }
        if let Some(times) = &self.times {
            times.to_text(&mut out, self.shard);
            if times.will_export {
                let _ = writeln!(out, "  the export, after the setup:");
                step_text(&mut out, 0, &times.export);
            }
        }
        out.push_str("\nsteps:\n");
        for (index, step) in self.steps.iter().enumerate() {
            step_text(&mut out, index, step);
        }
        let _ = writeln!(
            out,
            "\nJUnit from {} is collected into {}",
            self.junit_from.display(),
            self.output_dir.join("junit").display()
        );
        let _ = write!(out, "\nwhere DEVICE_QUERY is:{}", gpu::QUERY_SCRIPT);
        out
    }
}

/// One step as `--dry-run` prints it: label, directory, its own variables, the command line
/// (credentials masked, the device query script by name).
fn step_text(out: &mut String, index: usize, step: &Step) {
    let _ = writeln!(out, "  {}. {}", index + 1, step.label);
    if step.cwd != Path::new("") {
        let _ = writeln!(out, "     cwd: {}", step.cwd.display());
    }
    for (name, value) in &step.env {
        let _ = writeln!(
            out,
            "     {}",
            match value {
                Some(value) => format!("{name}={value}"),
                None => format!("unset {name}"),
            }
        );
    }
    let argv: Vec<String> = std::iter::once(quote(&step.program.display().to_string()))
        .chain(step.args.iter().map(|arg| {
            if arg == gpu::QUERY_SCRIPT {
                "\"$DEVICE_QUERY\"".to_string()
            } else {
                quote(&crate::redact::redact_url(arg))
            }
        }))
        .collect();
    let _ = writeln!(out, "     {}", argv.join(" "));
}

fn quote(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| format!("'{word}'"), |q| q.into_owned())
}

/// The hang-listed modules of every list (what the checkout is inspected for).
pub fn hang_candidates(settings: &TestSettings) -> Vec<String> {
    let mut modules: Vec<String> = settings
        .skip_lists
        .files
        .iter()
        .flat_map(|f| f.hang.iter().flat_map(|s| s.modules.iter().cloned()))
        .collect();
    modules.sort();
    modules.dedup();
    modules
}

/// Whether `test/<module>.py` exists.
pub fn module_present(dir: &Path, module: &str) -> bool {
    dir.join("test").join(format!("{module}.py")).is_file()
}

/// `torch`, or for a multi-arch set (the lock's record) torch with the device extras of the
/// family under test (`torch[device-gfx1100,...]`, as TheRock's multi-arch install line),
/// `device-all` when no family is given: the host wheel alone has no kernels.
fn torch_requirement(settings: &TestSettings) -> Result<String, Error> {
    let Some(recorded) = settings
        .lock
        .as_ref()
        .map(|l| &l.device_targets)
        .filter(|t| !t.is_empty())
    else {
        return Ok("torch".into());
    };
    let extras: Vec<String> = match &settings.family_targets {
        None => vec![crate::multiarch::device::ALL_EXTRA.to_string()],
        Some(targets) => targets
            .iter()
            .filter(|t| recorded.contains(t))
            .map(|t| crate::multiarch::device::extra_name(t))
            .collect(),
    };
    if extras.is_empty() {
        return Err(Error::Flag {
            flag: "--amdgpu-family",
            message: format!(
                "the lock's multi-arch set has device wheels for {} only, none of this family's targets",
                recorded.join(",")
            ),
        });
    }
    Ok(format!("torch[{}]", extras.join(",")))
}
