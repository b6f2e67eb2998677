//! The chain workflow as tables: its inputs, and each job — where it runs, what it needs and
//! holds, and its steps — written out as data. Nothing here builds anything: `resolve` turns
//! the rows into jobs and steps.

use crate::ci::parts::{LIGHT_RUNNER, Runs};

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
}

use Word::{Lit, MultiArch, PerFamily, Var};

// Texts of the tables may hold these placeholders, which `resolve` fills per mode:
// - `{chain}`: what the chain is named by in job and artifact names: the family
//   (`${{ inputs.family }}`), or `multi-arch` (its input is every family of the set);
// - `{family}`: the family a smoke, test or report row is for: the chain's, or the row's
//   (`${{ matrix.family }}`) in a multi-arch chain, whose tests fan out per family;
// - `{family-part}`: `-<row's family>` in a multi-arch chain's per-family artifact and report
//   names (nothing in a per-family chain, whose names have the family already);
// - `{family-dir}`: `/<family>` where a per-family chain's store paths name the family (the
//   multi-arch set has one index for every family).

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
    /// The role of the stores, through OIDC.
    Credentials,
    /// `rockbuild test` on one test row ([`TEST_ENV`], [`test_args`]).
    Test { name: &'static str, sources: bool },
    /// A step that runs only when the condition holds.
    When(&'static str, &'static StepRow),
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
        StepRow::Run {
            name: "Check out the locked sources",
            env: &[],
            args: &[
                Lit("checkout"),
                Lit("--from-lock"),
                Lit(LOCK),
                Lit("--root-checkout-dir"),
                Lit("src"),
            ],
        },
        StepRow::When("inputs.sccache", &StepRow::Credentials),
        StepRow::Run {
            name: "Install the locked SDK and build every wheel for this Python",
            env: &[
                ("PYTHON", PYTHON),
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
                Lit("src"),
                Lit("--lock"),
                Lit(RECORD),
                Lit("--output-dir"),
                Lit("out"),
                // Once for every target of the lock, then the split into host and device
                // wheels.
                MultiArch(&[Lit("--multi-arch"), Lit("--allow-many-targets")]),
            ],
        },
        StepRow::Run {
            name: "Give the wheels their manylinux tag",
            env: &[],
            args: &[Lit("retag"), Lit("--platform"), Lit(PLATFORM), Lit("out")],
        },
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
            "run-${{ github.run_id }}-${{ github.run_attempt }}/${{ inputs.ref-slug }}",
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
                ("PYTHON", PYTHON),
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
    ("PYTHON", PYTHON),
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
