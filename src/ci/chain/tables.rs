//! The chain workflow as tables: its inputs, and each job — where it runs, what it needs and
//! holds, and its steps — written out as data. Nothing here builds anything: `resolve` turns
//! the rows into jobs and steps.

use crate::ci::parts::{LIGHT_RUNNER, MSVC_DEV_CMD, Runs, SETUP_PYTHON};
use crate::ci::workflow::Action;
use crate::platform::Platform;

/// One argument of a `rockbuild` call: a word written as it is, or a `$VAR` of the step's env,
/// or words that only one mode of the chain passes.
#[derive(Clone, Copy, Debug)]
pub enum Word {
    Lit(&'static str),
    Var(&'static str),
    /// Only in the per-family chain.
    PerFamily(&'static [Word]),
    /// Only in the multi-arch chain.
    MultiArch(&'static [Word]),
    /// Only in the Linux chain.
    Linux(&'static [Word]),
    /// Only in the Windows chain.
    Windows(&'static [Word]),
}

use Word::{Lit, MultiArch, PerFamily, Var, Windows};

// Texts of the tables may hold these placeholders, which `resolve` fills per mode:
// - `{chain}`: what the chain is named by in job and artifact names: the family
//   (`${{ inputs.family }}`), or `multi-arch` (its input is every family of the set);
// - `{family}`: the family a smoke, test or report row is for: the chain's, or the row's
//   (`${{ matrix.family }}`) in a multi-arch chain, whose tests fan out per family;
// - `{family-part}`: `-<row's family>` in a multi-arch chain's per-family artifact and report
//   names (nothing in a per-family chain, whose names have the family already);
// - `{family-dir}`: `/<family>` where a per-family chain's store paths name the family (the
//   multi-arch set has one index for every family);
// - `{python}`: the matrix row's CPython: in the build or test image on Linux, the one
//   actions/setup-python put on the runner on Windows;
// - `{platform-part}`: `-windows` in the Windows chain's staging prefix (nothing on Linux), so
//   the Linux and the Windows chains of one ref and family never stage into one prefix.

/// `<kind>-<ref slug>-<chain><rest>`: the name of an artifact of the chain.
#[derive(Clone, Copy, Debug)]
pub struct Artifact {
    pub kind: &'static str,
    pub rest: &'static str,
}

const fn artifact(kind: &'static str, rest: &'static str) -> Artifact {
    Artifact { kind, rest }
}

type Pairs = &'static [(&'static str, &'static str)];

/// One step of a job.
#[derive(Clone, Copy, Debug)]
pub enum StepRow {
    /// `rockbuild ARGS...` with its env.
    Run {
        name: &'static str,
        env: Pairs,
        args: &'static [Word],
    },
    Upload {
        name: &'static str,
        artifact: Artifact,
        paths: &'static str,
    },
    Download {
        name: &'static str,
        artifact: Artifact,
        path: &'static str,
    },
    /// The checkout cache (actions/cache), keyed by the lock.
    Cache { name: &'static str, with: Pairs },
    /// A program other than rockbuild, with its env.
    Command {
        name: &'static str,
        env: Pairs,
        program: &'static str,
        args: &'static [Word],
    },
    /// A pinned action; `id` when later steps read its outputs.
    Action {
        name: &'static str,
        id: Option<&'static str>,
        action: Action,
        with: Pairs,
    },
    /// The directory `$var` of `env` put on the PATH of the later steps.
    AddToPath {
        name: &'static str,
        env: Pairs,
        var: &'static str,
    },
    /// The role of the stores, through OIDC.
    Credentials,
    /// `rockbuild test` on one test row ([`TEST_ENV`], [`test_args`]).
    Test { name: &'static str, sources: bool },
    /// A step that runs only when the condition holds.
    When(&'static str, &'static StepRow),
    /// A step only the chain of this platform has.
    Only(Platform, &'static StepRow),
}

/// Where a job of the Windows chain runs.
#[derive(Clone, Copy, Debug)]
pub enum OnWindows {
    /// On the light Linux runner in the build image, as in the Linux chain: what it does
    /// (lock, stage, report, promote) reads and writes indexes and stores, the same from any
    /// host.
    Linux,
    /// On the Windows runner named by the job's `runs.on`, with no container: `setup` first
    /// (the CPython and rockbuild itself), and `env` added to the job's.
    Runner {
        setup: &'static [StepRow],
        env: Pairs,
    },
}

/// One job of the chain.
#[derive(Clone, Copy, Debug)]
pub struct JobRow {
    pub id: &'static str,
    pub name: &'static str,
    pub needs: &'static [&'static str],
    pub runs: Runs,
    /// The job's condition; `None`: every job it needs succeeded.
    pub condition: Option<&'static str>,
    /// The `strategy.matrix` expression.
    pub matrix: Option<&'static str>,
    /// Asks for an OIDC token (`id-token: write`): the jobs that reach the stores or the
    /// compiler cache.
    pub oidc: bool,
    pub outputs: Pairs,
    pub env: Pairs,
    pub steps: &'static [StepRow],
    /// Where the job runs in the Windows chain.
    pub windows: OnWindows,
}

/// The chain's inputs: (name, type, description). Types are GitHub's (`string`, `boolean`).
pub const CHAIN_INPUTS: [(&str, &str, &str); 25] = [
    (
        "pytorch-ref",
        "string",
        "PyTorch ref to lock (branch, tag or commit)",
    ),
    (
        "ref-slug",
        "string",
        "the ref as it appears in artifact names",
    ),
    (
        "family",
        "string",
        "GPU family of configs/families.yaml (multi-arch: every family of the set, ; separated)",
    ),
    (
        "release-type",
        "string",
        "release type of configs/releases.yaml",
    ),
    (
        "build-runs-on",
        "string",
        "runner label of the family's builds",
    ),
    (
        "build-matrix",
        "string",
        "JSON: one row per Python (rockbuild matrix)",
    ),
    (
        "test-matrix",
        "string",
        "JSON: one row per Python, test configuration and shard",
    ),
    (
        "report-matrix",
        "string",
        "JSON: one combined test report per tested Python",
    ),
    (
        "publish",
        "boolean",
        "stage the wheels (false: build and verify only)",
    ),
    (
        "tested",
        "boolean",
        "the family has a test runner and tests to run",
    ),
    ("promote", "boolean", "promote the tested set"),
    (
        "sccache",
        "boolean",
        "compile through sccache on S3 (needs the role and a bucket)",
    ),
    (
        "sccache-prefix",
        "string",
        "key prefix in the sccache bucket (per release type)",
    ),
    ("build-image", "string", "build image (by digest)"),
    ("test-image", "string", "test image (by digest)"),
    ("rocm-index-url", "string", "package index of the ROCm SDK"),
    (
        "python-index-url",
        "string",
        "package index of the dependencies outside the stack and the SDK, and of pytest",
    ),
    (
        "staging-url",
        "string",
        "store for staged wheels; the run's prefix is appended",
    ),
    (
        "staging-index-url",
        "string",
        "HTTPS URL serving staging-url",
    ),
    (
        "release-url",
        "string",
        "store for promoted wheels; the family is appended",
    ),
    ("aws-role", "string", "IAM role to assume through OIDC"),
    ("aws-region", "string", "region of the role and buckets"),
    (
        "s3-endpoint",
        "string",
        "S3-compatible endpoint of the stores (empty: AWS)",
    ),
    ("sccache-bucket", "string", "bucket of the compiler cache"),
    (
        "sccache-endpoint",
        "string",
        "endpoint of the compiler cache bucket (empty: AWS)",
    ),
];

/// The Windows chain's inputs beside the Linux chain's (whose `test-image` it has no use
/// for): the rockbuild the Windows runners install, as the images carry it on Linux.
pub const WINDOWS_INPUTS: [(&str, &str, &str); 2] = [
    (
        "rockbuild-repository",
        "string",
        "git URL of rockbuild, which the Windows jobs install with cargo",
    ),
    (
        "rockbuild-rev",
        "string",
        "commit of rockbuild the Windows jobs install (the image's rockbuild on Linux)",
    ),
];

/// What the file's header says the per-family chain is.
pub const HEADER: [&str; 6] = [
    "One family's chain for one PyTorch ref, called once per row of `rockbuild matrix`:",
    "lock -> build (per Python, build image, the family's build runner) -> stage (this",
    "attempt's prefix) -> smoke (per Python) and test (per row), on the family's GPU",
    "runner in the test image -> test report (per Python) -> promote. No job needs",
    "another chain's, so one family's failure never blocks another's promotion; the",
    "chains of one family take turns on its release index's lease (--lease-wait).",
];

/// What the file's header says the multi-arch chain is.
pub const MULTI_ARCH_HEADER: [&str; 7] = [
    "One multi-arch set for one PyTorch ref, called once per row of `rockbuild matrix",
    "--multi-arch`: lock (every family's targets) -> build (per Python, once for all",
    "targets, split into host and per-target device wheels) -> stage (one index) -> smoke",
    "(per family and Python, with that family's device extras) and test (per row), each on",
    "its family's GPU runner in the test image -> test report (per family and Python) ->",
    "promote (the whole set, host and device wheels together). The refs' sets take turns",
    "on the release index's lease (--lease-wait).",
];

/// What the file's header says the per-family Windows chain is.
pub const WINDOWS_HEADER: [&str; 7] = [
    "One family's Windows chain for one PyTorch ref, called once per row of the Windows",
    "chains of `rockbuild matrix`: lock (Linux) -> build (per Python, on the family's",
    "Windows build runner: CPython, rockbuild, libuv, ninja, sccache, then MSVC) -> stage",
    "(Linux, this attempt's prefix) -> smoke (per Python) and test (per row) on the family's",
    "Windows GPU runner -> test report (Linux, per Python) -> promote (Linux, into the same",
    "release index as the Linux chain, taking turns on its lease). No job needs a Linux",
    "chain's, so a failure on one platform never blocks the other's promotion.",
];

/// What the file's header says the multi-arch Windows chain is.
pub const MULTI_ARCH_WINDOWS_HEADER: [&str; 6] = [
    "One multi-arch set for one PyTorch ref on Windows, called once per row of the Windows",
    "chains of `rockbuild matrix --multi-arch`: lock (Linux) -> build (per Python, once for",
    "every target, split into host and per-target device wheels, on the Windows build runner)",
    "-> stage (Linux) -> smoke (per family and Python) and test (per row), each on its",
    "family's Windows GPU runner -> test report (Linux) -> promote (Linux, the whole set).",
    "Set-up on the Windows runners as in the per-family Windows chain.",
];

/// The platform tag wheels built in the build image get (its glibc is 2.28).
const PLATFORM: &str = "manylinux_2_28_x86_64";
const BUILD_IMAGE: &str = "${{ inputs.build-image }}";
const TEST_IMAGE: &str = "${{ inputs.test-image }}";
pub const LOCK: &str = "lock/rockbuild.lock.json";
/// The lock after checkout and build: hipify stamps and the build record.
pub const RECORD: &str = "src/rockbuild.lock.json";
/// The matrix row's CPython, where the build image keeps its CPythons
/// (`/opt/python/<cpython>/bin/python`, as manylinux images do).
pub const PYTHON: &str = "/opt/python/${{ matrix.cpython }}/bin/python";
/// The matrix row's CPython on a Windows runner: what [`SETUP_PYTHON_STEP`] installed.
pub const WINDOWS_PYTHON: &str = "${{ steps.python.outputs.python-path }}";
/// Where the Windows build checks out: short, as the reference's `B:/src` (its Windows
/// runners' short drive), since compile commands under a long root overrun Windows' command
/// line limit (`rockbuild plan` notes a root longer than 12 characters).
const WINDOWS_ROOT: &str = "B:/src";
/// The toolchain the Windows jobs build rockbuild with: Cargo.toml's `rust-version`.
const RUST_TOOLCHAIN: &str = env!("CARGO_PKG_RUST_VERSION");
/// libuv for gloo, built from source as the reference does (v1.47.0, PyTorch's own Windows
/// source build), into the workspace; `libuv_ROOT` is how torch's CMake finds it.
const LIBUV_ROOT: &str = "${{ github.workspace }}\\libuv-install";
/// ninja from Chocolatey at the reference's version: 1.13.1 (PyPI's 1.11.1 hangs and its
/// 1.13.0 breaks link.exe's response files; the torch recipe uninstalls PyPI's).
const NINJA: &str = "1.13.1";

/// The CPython of the matrix row, on a Windows runner.
const SETUP_PYTHON_STEP: StepRow = StepRow::Action {
    name: "Install CPython ${{ matrix.python }}",
    id: Some("python"),
    action: SETUP_PYTHON,
    with: &[("python-version", "${{ matrix.python }}")],
};

/// What every Windows job does first: the row's CPython, and rockbuild at the chain's
/// commit, built once per commit (cached; `cargo install --locked` builds it from its
/// Cargo.lock) and put on PATH.
const WINDOWS_SETUP: &[StepRow] = &[
    SETUP_PYTHON_STEP,
    StepRow::Action {
        name: "Restore rockbuild (built once per commit)",
        id: Some("rockbuild"),
        action: crate::ci::parts::CACHE,
        with: &[
            ("path", ".rockbuild-tool"),
            ("key", "rockbuild-windows-${{ inputs.rockbuild-rev }}"),
        ],
    },
    StepRow::When(
        "steps.rockbuild.outputs.cache-hit != 'true'",
        &StepRow::Command {
            name: "Install the Rust toolchain rockbuild is built with",
            env: &[],
            program: "rustup",
            args: &[
                Lit("toolchain"),
                Lit("install"),
                Lit(RUST_TOOLCHAIN),
                Lit("--profile"),
                Lit("minimal"),
            ],
        },
    ),
    StepRow::When(
        "steps.rockbuild.outputs.cache-hit != 'true'",
        &StepRow::Command {
            name: "Build rockbuild at the chain's commit",
            env: &[
                ("ROCKBUILD_REPOSITORY", "${{ inputs.rockbuild-repository }}"),
                ("ROCKBUILD_REV", "${{ inputs.rockbuild-rev }}"),
            ],
            program: "rustup",
            args: &[
                Lit("run"),
                Lit(RUST_TOOLCHAIN),
                Lit("cargo"),
                Lit("install"),
                Lit("--locked"),
                Lit("--root"),
                Lit(".rockbuild-tool"),
                Lit("--git"),
                Var("ROCKBUILD_REPOSITORY"),
                Lit("--rev"),
                Var("ROCKBUILD_REV"),
                Lit("rockbuild"),
            ],
        },
    ),
    StepRow::AddToPath {
        name: "Put rockbuild on PATH",
        env: &[("TOOL_BIN", "${{ github.workspace }}\\.rockbuild-tool\\bin")],
        var: "TOOL_BIN",
    },
];

/// libuv is built when the cache does not hold its install.
const LIBUV_MISSING: &str = "steps.libuv.outputs.cache-hit != 'true'";
const LIBUV_CLONE: StepRow = StepRow::Command {
    name: "Fetch libuv 1.47.0",
    env: &[],
    program: "git",
    args: &[
        Lit("clone"),
        Lit("--depth"),
        Lit("1"),
        Lit("--branch"),
        Lit("v1.47.0"),
        Lit("https://github.com/libuv/libuv.git"),
        Lit("libuv-src"),
    ],
};
const LIBUV_CONFIGURE: StepRow = StepRow::Command {
    name: "Configure libuv",
    env: &[],
    program: "cmake",
    args: &[
        Lit("-S"),
        Lit("libuv-src"),
        Lit("-B"),
        Lit("libuv-src/build"),
        Lit("-DBUILD_TESTING=OFF"),
    ],
};
const LIBUV_BUILD: StepRow = StepRow::Command {
    name: "Build libuv",
    env: &[],
    program: "cmake",
    args: &[
        Lit("--build"),
        Lit("libuv-src/build"),
        Lit("--config"),
        Lit("Release"),
    ],
};
const LIBUV_INSTALL: StepRow = StepRow::Command {
    name: "Install libuv into libuv_ROOT",
    env: &[("libuv_ROOT", LIBUV_ROOT)],
    program: "cmake",
    args: &[
        Lit("--install"),
        Lit("libuv-src/build"),
        Lit("--config"),
        Lit("Release"),
        Lit("--prefix"),
        Var("libuv_ROOT"),
    ],
};

const STAGING: &str = "${{ inputs.staging-url }}/${{ needs.stage.outputs.prefix }}";
const STAGING_INDEX: &str = "${{ inputs.staging-index-url }}/${{ needs.stage.outputs.prefix }}/";
const RECORD_DOWNLOAD: StepRow = StepRow::Download {
    name: "Fetch the lock with its build record",
    artifact: artifact("record", ""),
    path: "src",
};
/// The store's endpoint and region, for the jobs that write to it.
const STORE_ENV: Pairs = &[
    ("ROCKBUILD_S3_ENDPOINT", "${{ inputs.s3-endpoint }}"),
    ("ROCKBUILD_S3_REGION", "${{ inputs.aws-region }}"),
];

const LOCK_JOB: JobRow = JobRow {
    id: "lock",
    name: "Lock {chain} at ${{ inputs.pytorch-ref }}",
    needs: &[],
    runs: Runs {
        on: LIGHT_RUNNER,
        image: BUILD_IMAGE,
        gpu: false,
        timeout: 30,
    },
    condition: None,
    matrix: None,
    oidc: false,
    outputs: &[],
    env: &[],
    steps: &[
        StepRow::Run {
            name: "Resolve the sources, the SDK, the targets and the wheel names",
            env: &[
                ("PYTORCH_REF", "${{ inputs.pytorch-ref }}"),
                ("FAMILY", "${{ inputs.family }}"),
                ("RELEASE_TYPE", "${{ inputs.release-type }}"),
                ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
            ],
            args: &[
                Lit("lock"),
                Lit("--repo-hashtag"),
                Var("PYTORCH_REF"),
                Lit("--amdgpu-family"),
                Var("FAMILY"),
                // The union of every family's targets is longer than a per-family list.
                MultiArch(&[Lit("--allow-many-targets")]),
                Lit("--release-type"),
                Var("RELEASE_TYPE"),
                Lit("--index-url"),
                Var("ROCM_INDEX_URL"),
                Lit("--lock"),
                Lit(LOCK),
            ],
        },
        StepRow::Upload {
            name: "Keep the lock",
            artifact: artifact("lock", ""),
            paths: LOCK,
        },
    ],
    windows: OnWindows::Linux,
};

const BUILD_JOB: JobRow = JobRow {
    id: "build",
    name: "Build {chain} for Python ${{ matrix.python }}",
    needs: &["lock"],
    runs: Runs {
        on: "${{ inputs.build-runs-on }}",
        image: BUILD_IMAGE,
        gpu: false,
        timeout: 360,
    },
    condition: None,
    matrix: Some("${{ fromJSON(inputs.build-matrix) }}"),
    oidc: true,
    outputs: &[],
    env: &[
        // Git mirrors and hipify results: restored by the lock's hash.
        ("ROCKBUILD_CACHE_DIR", ".rockbuild-cache"),
        ("ROCKBUILD_USE_SCCACHE", "${{ inputs.sccache }}"),
        ("SCCACHE_BUCKET", "${{ inputs.sccache-bucket }}"),
        ("SCCACHE_ENDPOINT", "${{ inputs.sccache-endpoint }}"),
        ("SCCACHE_REGION", "${{ inputs.aws-region }}"),
        ("SCCACHE_S3_KEY_PREFIX", "${{ inputs.sccache-prefix }}"),
    ],
    steps: &[
        StepRow::Download {
            name: "Fetch the lock",
            artifact: artifact("lock", ""),
            path: "lock",
        },
        StepRow::Cache {
            name: "Restore the checkout cache",
            with: &[
                ("path", ".rockbuild-cache"),
                (
                    "key",
                    "rockbuild-checkout-${{ hashFiles('lock/rockbuild.lock.json') }}",
                ),
                ("restore-keys", "rockbuild-checkout-"),
            ],
        },
        StepRow::Only(
            Platform::Windows,
            &StepRow::Action {
                name: "Restore libuv",
                id: Some("libuv"),
                action: crate::ci::parts::CACHE,
                with: &[("path", "libuv-install"), ("key", "libuv-1.47.0-windows")],
            },
        ),
        StepRow::Only(
            Platform::Windows,
            &StepRow::When(LIBUV_MISSING, &LIBUV_CLONE),
        ),
        StepRow::Only(
            Platform::Windows,
            &StepRow::When(LIBUV_MISSING, &LIBUV_CONFIGURE),
        ),
        StepRow::Only(
            Platform::Windows,
            &StepRow::When(LIBUV_MISSING, &LIBUV_BUILD),
        ),
        StepRow::Only(
            Platform::Windows,
            &StepRow::When(LIBUV_MISSING, &LIBUV_INSTALL),
        ),
        StepRow::Only(
            Platform::Windows,
            &StepRow::Command {
                name: "Install ninja 1.13.1",
                env: &[],
                program: "choco",
                args: &[
                    Lit("install"),
                    Lit("--no-progress"),
                    Lit("-y"),
                    Lit("ninja"),
                    Lit("--version"),
                    Lit(NINJA),
                ],
            },
        ),
        StepRow::Only(
            Platform::Windows,
            &StepRow::When(
                "inputs.sccache",
                &StepRow::Command {
                    name: "Install sccache",
                    env: &[],
                    program: "choco",
                    args: &[
                        Lit("install"),
                        Lit("--no-progress"),
                        Lit("-y"),
                        Lit("sccache"),
                    ],
                },
            ),
        ),
        // After the installs, so MSVC's tools come first on PATH (the reference's order).
        StepRow::Only(
            Platform::Windows,
            &StepRow::Action {
                name: "Set up MSVC (vcvars64)",
                id: None,
                action: MSVC_DEV_CMD,
                with: &[],
            },
        ),
        StepRow::Run {
            name: "Check out the locked sources",
            env: &[],
            args: &[
                Lit("checkout"),
                Lit("--from-lock"),
                Lit(LOCK),
                Lit("--root-checkout-dir"),
                Word::Linux(&[Lit("src")]),
                // A short root on Windows; the lock stays in the workspace with the wheels.
                Windows(&[Lit(WINDOWS_ROOT), Lit("--lock"), Lit(RECORD)]),
            ],
        },
        StepRow::When("inputs.sccache", &StepRow::Credentials),
        StepRow::Run {
            name: "Install the locked SDK and build every wheel for this Python",
            env: &[
                ("PYTHON", "{python}"),
                ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
            ],
            args: &[
                Lit("build"),
                Lit("--install-rocm"),
                Lit("--python"),
                Var("PYTHON"),
                Lit("--index-url"),
                Var("ROCM_INDEX_URL"),
                Lit("--root-checkout-dir"),
                Word::Linux(&[Lit("src")]),
                Windows(&[Lit(WINDOWS_ROOT)]),
                Lit("--lock"),
                Lit(RECORD),
                Lit("--output-dir"),
                Lit("out"),
                // Once for every target of the lock, then the split into host and device
                // wheels.
                MultiArch(&[Lit("--multi-arch"), Lit("--allow-many-targets")]),
            ],
        },
        // Windows wheels are win_amd64 as built.
        StepRow::Only(
            Platform::Linux,
            &StepRow::Run {
                name: "Give the wheels their manylinux tag",
                env: &[],
                args: &[Lit("retag"), Lit("--platform"), Lit(PLATFORM), Lit("out")],
            },
        ),
        StepRow::Run {
            name: "Verify the wheels against the lock",
            env: &[],
            args: &[Lit("verify"), Lit("out"), Lit("--lock"), Lit(RECORD)],
        },
        StepRow::Upload {
            name: "Keep the wheels and the lock with its build record",
            artifact: artifact("wheels", "-${{ matrix.python }}"),
            paths: "out/*.whl\nsrc/rockbuild.lock.json",
        },
    ],
    windows: OnWindows::Runner {
        setup: WINDOWS_SETUP,
        env: &[("libuv_ROOT", LIBUV_ROOT)],
    },
};

const STAGE_JOB: JobRow = JobRow {
    id: "stage",
    name: "Stage {chain}",
    needs: &["build"],
    runs: Runs {
        on: LIGHT_RUNNER,
        image: BUILD_IMAGE,
        gpu: false,
        timeout: 60,
    },
    condition: Some("inputs.publish"),
    matrix: None,
    oidc: true,
    // Computed once, when this job runs: a re-run of a later job reads the prefix of the
    // attempt that staged; a re-run of this job stages to a fresh one. `stage --family` puts
    // a family's wheels under `<to>/<family>/`; a multi-arch set is one index.
    outputs: &[("prefix", "${{ env.STAGING_PREFIX }}{family-dir}")],
    env: &[
        (
            "STAGING_PREFIX",
            "run-${{ github.run_id }}-${{ github.run_attempt }}/${{ inputs.ref-slug }}{platform-part}",
        ),
        ("ROCKBUILD_S3_ENDPOINT", "${{ inputs.s3-endpoint }}"),
        ("ROCKBUILD_S3_REGION", "${{ inputs.aws-region }}"),
    ],
    steps: &[
        StepRow::Download {
            name: "Fetch every Python's wheels",
            artifact: artifact("wheels", "-*"),
            path: ".",
        },
        StepRow::Credentials,
        // Stage brings the ROCm SDK wheels the set pins from the SDK's index: the prefix
        // installs with no other index.
        StepRow::Run {
            name: "Stage to this attempt's prefix, with the ROCm SDK it pins",
            env: &[
                (
                    "STAGING",
                    "${{ inputs.staging-url }}/${{ env.STAGING_PREFIX }}",
                ),
                ("FAMILY", "${{ inputs.family }}"),
                ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
            ],
            args: &[
                Lit("stage"),
                Lit("--input"),
                Lit("out"),
                Lit("--to"),
                Var("STAGING"),
                PerFamily(&[Lit("--family"), Var("FAMILY")]),
                Lit("--lock"),
                Lit(RECORD),
                Lit("--index-url"),
                Var("ROCM_INDEX_URL"),
            ],
        },
        StepRow::Upload {
            name: "Keep the lock with its build record",
            artifact: artifact("record", ""),
            paths: RECORD,
        },
    ],
    windows: OnWindows::Linux,
};

const SMOKE_JOB: JobRow = JobRow {
    id: "smoke",
    name: "Smoke {family} ${{ matrix.python }}",
    needs: &["stage"],
    runs: Runs {
        on: "${{ matrix.runs_on }}",
        image: TEST_IMAGE,
        gpu: true,
        timeout: 60,
    },
    condition: Some("inputs.tested"),
    matrix: Some("${{ fromJSON(inputs.report-matrix) }}"),
    oidc: false,
    outputs: &[],
    env: &[],
    steps: &[
        RECORD_DOWNLOAD,
        // The ROCm SDK comes from the staging prefix, as it will from the release.
        StepRow::Run {
            name: "Install the staged set and import it",
            env: &[
                ("STAGING_INDEX", STAGING_INDEX),
                ("PYTHON_INDEX_URL", "${{ inputs.python-index-url }}"),
                ("PYTHON", "{python}"),
                ("FAMILY", "{family}"),
                (
                    "REPORT",
                    "reports/smoke{family-part}-${{ matrix.python }}.json",
                ),
            ],
            args: &[
                Lit("smoke"),
                Lit("--index-url"),
                Var("STAGING_INDEX"),
                Lit("--extra-index-url"),
                Var("PYTHON_INDEX_URL"),
                Lit("--lock"),
                Lit(RECORD),
                Lit("--python"),
                Var("PYTHON"),
                Lit("--report"),
                Var("REPORT"),
                // This family's device wheels go in with the host wheels
                // (`torch[device-gfxNNN]`), from the one index.
                MultiArch(&[Lit("--targets"), Var("FAMILY")]),
            ],
        },
        StepRow::When(
            "always()",
            &StepRow::Upload {
                name: "Keep the smoke report",
                artifact: artifact("smoke", "{family-part}-${{ matrix.python }}"),
                paths: "reports/",
            },
        ),
    ],
    windows: OnWindows::Runner {
        setup: WINDOWS_SETUP,
        env: &[],
    },
};

const TEST_JOB: JobRow = JobRow {
    id: "test",
    name: "Test {family} ${{ matrix.python }} ${{ matrix.test_config }} ${{ matrix.shard }}/${{ matrix.num_shards }}",
    needs: &["stage"],
    runs: Runs {
        on: "${{ matrix.runs_on }}",
        image: TEST_IMAGE,
        gpu: true,
        timeout: 360,
    },
    condition: Some("inputs.tested"),
    matrix: Some("${{ fromJSON(inputs.test-matrix) }}"),
    oidc: false,
    outputs: &[],
    env: &[],
    steps: &[
        RECORD_DOWNLOAD,
        StepRow::When(
            "matrix.sources",
            &StepRow::Run {
                name: "Check out the test sources (torch at the locked commit, no hipify)",
                env: &[],
                args: &[
                    Lit("checkout"),
                    Lit("--from-lock"),
                    Lit(RECORD),
                    Lit("--project"),
                    Lit("torch"),
                    Lit("--no-hipify"),
                    Lit("--no-submodules"),
                    Lit("--checkout-dir"),
                    Lit("test-src/pytorch"),
                    Lit("--lock"),
                    Lit("test-src/rockbuild.lock.json"),
                ],
            },
        ),
        StepRow::When(
            "matrix.sources",
            &StepRow::Test {
                name: "Run the shard on the GPU",
                sources: true,
            },
        ),
        StepRow::When(
            "matrix.sources == false",
            &StepRow::Test {
                name: "Run the GPU smoke suite",
                sources: false,
            },
        ),
        StepRow::When(
            "always()",
            &StepRow::Upload {
                name: "Keep the results",
                artifact: artifact(
                    "test",
                    "{family-part}-${{ matrix.python }}-${{ matrix.suite }}-${{ matrix.shard }}",
                ),
                paths: "test-results/",
            },
        ),
    ],
    windows: OnWindows::Runner {
        setup: WINDOWS_SETUP,
        env: &[],
    },
};

const REPORT_JOB: JobRow = JobRow {
    id: "report",
    name: "Test report {family} ${{ matrix.python }}",
    needs: &["smoke", "test"],
    runs: Runs {
        on: LIGHT_RUNNER,
        image: BUILD_IMAGE,
        gpu: false,
        timeout: 15,
    },
    condition: Some("inputs.tested"),
    matrix: Some("${{ fromJSON(inputs.report-matrix) }}"),
    oidc: false,
    outputs: &[],
    env: &[],
    steps: &[
        StepRow::Download {
            name: "Fetch the smoke report of this Python",
            artifact: artifact("smoke", "{family-part}-${{ matrix.python }}"),
            path: "reports",
        },
        StepRow::Download {
            name: "Fetch the shards of this Python",
            artifact: artifact("test", "{family-part}-${{ matrix.python }}-*"),
            path: "test-results",
        },
        StepRow::Run {
            name: "Combine the shards (a missing or cancelled shard fails the report)",
            env: &[
                ("EXPECT", "${{ matrix.expect }}"),
                (
                    "REPORT",
                    "reports/test{family-part}-${{ matrix.python }}.json",
                ),
            ],
            args: &[
                Lit("test-report"),
                Lit("test-results"),
                Lit("--expect"),
                Var("EXPECT"),
                Lit("--report"),
                Var("REPORT"),
            ],
        },
        StepRow::Upload {
            name: "Keep the reports",
            artifact: artifact("reports", "{family-part}-${{ matrix.python }}"),
            paths: "reports/",
        },
    ],
    windows: OnWindows::Linux,
};

const PROMOTE_JOB: JobRow = JobRow {
    id: "promote",
    name: "Promote {chain}",
    needs: &["stage", "report"],
    runs: Runs {
        on: LIGHT_RUNNER,
        image: BUILD_IMAGE,
        gpu: false,
        timeout: 60,
    },
    condition: Some("inputs.promote"),
    matrix: None,
    oidc: true,
    outputs: &[],
    env: STORE_ENV,
    steps: &[
        RECORD_DOWNLOAD,
        StepRow::Download {
            name: "Fetch every Python's reports",
            artifact: artifact("reports", "-*"),
            path: "reports",
        },
        StepRow::Credentials,
        StepRow::Run {
            name: "Promote the tested set (default deny)",
            env: &[
                ("STAGING", STAGING),
                ("RELEASE", "${{ inputs.release-url }}{family-dir}"),
                ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
            ],
            args: &[
                Lit("promote"),
                Lit("--from"),
                Var("STAGING"),
                Lit("--to"),
                Var("RELEASE"),
                Lit("--lock"),
                Lit(RECORD),
                // The ROCm SDK's wheels are promoted as their index publishes them.
                Lit("--index-url"),
                Var("ROCM_INDEX_URL"),
                Lit("--test-report"),
                Lit("reports"),
                // Every ref of a release type promotes into the same family index: the
                // chains take turns on its lease instead of failing with exit 7 (within the
                // job's 60-minute timeout).
                Lit("--lease-wait"),
                Lit("2700"),
            ],
        },
    ],
    windows: OnWindows::Linux,
};

/// The chain's jobs, in the order they are written.
pub const JOBS: [JobRow; 7] = [
    LOCK_JOB,
    BUILD_JOB,
    STAGE_JOB,
    SMOKE_JOB,
    TEST_JOB,
    REPORT_JOB,
    PROMOTE_JOB,
];

/// The env of a test step: the staged set, the row's suite and shard, where results go.
pub const TEST_ENV: Pairs = &[
    ("STAGING_INDEX", STAGING_INDEX),
    ("PYTHON_INDEX_URL", "${{ inputs.python-index-url }}"),
    ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
    ("PYTHON", "{python}"),
    ("FAMILY", "{family}"),
    ("SUITE", "${{ matrix.suite }}"),
    ("SHARD", "${{ matrix.shard }}"),
    ("NUM_SHARDS", "${{ matrix.num_shards }}"),
    (
        "RESULTS",
        "test-results/${{ matrix.python }}-${{ matrix.suite }}-${{ matrix.shard }}",
    ),
];

/// `rockbuild test` for one test row: PyTorch's suite on the checked-out test sources
/// (`sources`), or the built-in GPU smoke suite, which needs none. The SDK's index is an extra
/// index: the configs that compile install `rocm[devel]`, which the staged set does not carry.
pub fn test_args(sources: bool) -> Vec<Word> {
    const BEFORE: [Word; 9] = [
        Lit("test"),
        Lit("--index-url"),
        Var("STAGING_INDEX"),
        Lit("--extra-index-url"),
        Var("PYTHON_INDEX_URL"),
        Lit("--extra-index-url"),
        Var("ROCM_INDEX_URL"),
        Lit("--lock"),
        Lit(RECORD),
    ];
    const SOURCES: [Word; 2] = [Lit("--pytorch-dir"), Lit("test-src/pytorch")];
    const AFTER: [Word; 11] = [
        Lit("--python"),
        Var("PYTHON"),
        Lit("--amdgpu-family"),
        Var("FAMILY"),
        Lit("--test-config"),
        Var("SUITE"),
        Lit("--shard"),
        Var("SHARD"),
        Var("NUM_SHARDS"),
        Lit("--output-dir"),
        Var("RESULTS"),
    ];
    let sources: &[Word] = if sources { &SOURCES } else { &[] };
    [&BEFORE[..], sources, &AFTER[..]].concat()
}
