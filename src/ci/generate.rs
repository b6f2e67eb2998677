//! The workflows `rockbuild ci generate` writes: a pure function of the family and release
//! tables. One reusable workflow runs one family's chain for one ref; three callers compute the
//! matrix with `rockbuild matrix` and call it once per chain (nightly on a schedule, a release
//! on manual dispatch, a pull request for the `ci` release type's one small family).
//!
//! Every step is one `rockbuild` call or one action pinned by commit SHA. Values from the
//! workflow reach commands through the step's env, never through expressions in the command
//! line. Credentials come from OIDC (`id-token: write` and a role to assume); there are no
//! static keys.

use serde::Serialize;

use super::Error;
use super::releases::ReleaseTable;
use super::workflow::{
    Action, Arg, Concurrency, Container, Job, JobBody, Step, StepRun, Workflow, Yaml, is_shell_safe,
};
use crate::stack::FamilyTable;
use crate::version::ReleaseType;

/// Actions the workflows use, pinned by full commit SHA (the release tag named beside it).
pub const UPLOAD_ARTIFACT: Action = Action {
    repo: "actions/upload-artifact",
    sha: "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f",
    version: "v7.0.0",
};
pub const DOWNLOAD_ARTIFACT: Action = Action {
    repo: "actions/download-artifact",
    sha: "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c",
    version: "v8.0.1",
};
pub const CACHE: Action = Action {
    repo: "actions/cache",
    sha: "27d5ce7f107fe9357f9df03efb73ab90386fccae",
    version: "v5.0.5",
};
pub const CONFIGURE_AWS_CREDENTIALS: Action = Action {
    repo: "aws-actions/configure-aws-credentials",
    sha: "e6de054238d6b7531b4efff3b6587d9aade6a06c",
    version: "v6.2.3",
};

/// The chain workflow's file name; callers use `./.github/workflows/<it>`.
pub const CHAIN_FILE: &str = "rockbuild-chain.yml";

/// The platform tag wheels built in the build image get (its glibc is 2.28).
pub const PLATFORM: &str = "manylinux_2_28_x86_64";

/// Where the build image keeps its CPythons (`/opt/python/<cpython>/bin/python`).
pub const PYTHON_ROOT: &str = "/opt/python";

/// The hosted runner of the light jobs (matrix, lock, stage, reports, promote): they run in
/// the build image and need no GPU and little disk.
const LIGHT_RUNNER: &str = "ubuntu-24.04";

/// When the nightly run starts (UTC), after TheRock's nightly SDK is published.
const NIGHTLY_CRON: &str = "0 6 * * *";

/// Repository variables a fork sets (docs/ci.md): the chain input each becomes, its name,
/// what it holds.
pub const VARIABLES: [(&str, &str, &str); 12] = [
    (
        "build-image",
        "ROCKBUILD_BUILD_IMAGE",
        "build image (dockerfiles/build.Dockerfile), by digest",
    ),
    (
        "test-image",
        "ROCKBUILD_TEST_IMAGE",
        "test image (dockerfiles/test.Dockerfile), by digest",
    ),
    (
        "rocm-index-url",
        "ROCKBUILD_ROCM_INDEX_URL",
        "package index of the ROCm SDK wheels",
    ),
    (
        "python-index-url",
        "ROCKBUILD_PYTHON_INDEX_URL",
        "package index of the set's dependencies outside the stack and the SDK, and of the \
         test requirements (PyPI or a mirror of it)",
    ),
    (
        "staging-url",
        "ROCKBUILD_STAGING_URL",
        "store staged wheels go to (`s3://bucket/prefix`)",
    ),
    (
        "staging-index-url",
        "ROCKBUILD_STAGING_INDEX_URL",
        "HTTPS URL serving ROCKBUILD_STAGING_URL (what pip installs from)",
    ),
    (
        "release-url",
        "ROCKBUILD_RELEASE_URL",
        "store promoted wheels go to (`s3://bucket/prefix`); the family is appended",
    ),
    (
        "aws-role",
        "ROCKBUILD_AWS_ROLE",
        "ARN of the IAM role the jobs assume through OIDC",
    ),
    (
        "aws-region",
        "ROCKBUILD_AWS_REGION",
        "region of the role and the buckets",
    ),
    (
        "s3-endpoint",
        "ROCKBUILD_S3_ENDPOINT",
        "S3-compatible endpoint of the stores (empty: AWS)",
    ),
    (
        "sccache-bucket",
        "ROCKBUILD_SCCACHE_BUCKET",
        "bucket of the compiler cache",
    ),
    (
        "sccache-endpoint",
        "ROCKBUILD_SCCACHE_ENDPOINT",
        "endpoint of the compiler cache bucket (empty: AWS)",
    ),
];

/// Everything `ci generate` writes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CiPlan {
    pub workflows: Vec<Workflow>,
}

impl CiPlan {
    /// `file: N jobs` per workflow.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for workflow in &self.workflows {
            let jobs: Vec<&str> = workflow.jobs.iter().map(|j| j.id.as_str()).collect();
            out.push_str(&format!(
                "{}: {} (jobs: {})\n",
                workflow.file,
                workflow.name,
                jobs.join(", ")
            ));
        }
        out
    }
}

/// The workflows, from the tables. Fails when a release type the callers run is missing from
/// the release table, or the pull-request type would publish.
pub fn plan(families: &FamilyTable, releases: &ReleaseTable) -> Result<CiPlan, Error> {
    let need = |release_type: ReleaseType| {
        releases
            .release(release_type)
            .ok_or_else(|| Error::NoRelease {
                table: releases.source_name.clone(),
                release_type: release_type.as_str().to_string(),
            })
    };
    need(ReleaseType::Nightly)?;
    let ci = need(ReleaseType::Ci)?;
    if ci.publish {
        return Err(Error::PullRequestsPublish {
            table: releases.source_name.clone(),
        });
    }
    let release_types: Vec<&str> = <ReleaseType as clap::ValueEnum>::value_variants()
        .iter()
        .filter(|t| releases.release(**t).is_some())
        .map(|t| t.as_str())
        .collect();
    let family_names: Vec<&str> = families
        .families()
        .filter(|f| f.linux.is_some())
        .map(|f| f.name.as_str())
        .collect();
    Ok(CiPlan {
        workflows: vec![
            chain_workflow(),
            nightly_workflow(),
            release_workflow(&release_types, &family_names),
            pull_request_workflow(ci.families.join(", ")),
        ],
    })
}

fn lit(word: &str) -> Arg {
    debug_assert!(is_shell_safe(word), "{word}");
    Arg::Literal(word.to_string())
}

fn var(name: &str) -> Arg {
    Arg::Var(name.to_string())
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn rockbuild(name: &str, env: &[(&str, &str)], args: Vec<Arg>) -> Step {
    Step {
        id: None,
        name: name.to_string(),
        condition: None,
        env: pairs(env),
        run: StepRun::Rockbuild { args },
    }
}

fn action(name: &str, action: Action, with: &[(&str, &str)]) -> Step {
    Step {
        id: None,
        name: name.to_string(),
        condition: None,
        env: Vec::new(),
        run: StepRun::Action {
            action,
            with: pairs(with),
        },
    }
}

fn when(step: Step, condition: &str) -> Step {
    Step {
        condition: Some(condition.to_string()),
        ..step
    }
}

fn upload(name: &str, artifact: &str, paths: &str) -> Step {
    action(
        name,
        UPLOAD_ARTIFACT,
        &[
            ("name", artifact),
            ("path", paths),
            ("if-no-files-found", "error"),
        ],
    )
}

/// Downloads one artifact into `path` (`.`: the workspace), or every artifact a pattern
/// matches, merged. An artifact's root is the common directory of what was uploaded (a single
/// `lock/rockbuild.lock.json` is stored as `rockbuild.lock.json`), so the path puts it back.
fn download(name: &str, artifact: &str, path: &str) -> Step {
    let key = if artifact.contains('*') {
        "pattern"
    } else {
        "name"
    };
    let mut with = vec![(key, artifact), ("path", path)];
    if key == "pattern" {
        with.push(("merge-multiple", "true"));
    }
    action(name, DOWNLOAD_ARTIFACT, &with)
}

fn aws_credentials() -> Step {
    action(
        "Credentials for the stores (OIDC, no static keys)",
        CONFIGURE_AWS_CREDENTIALS,
        &[
            ("role-to-assume", "${{ inputs.aws-role }}"),
            ("aws-region", "${{ inputs.aws-region }}"),
        ],
    )
}

fn job(id: &str, name: &str, needs: &[&str], body: JobBody) -> Job {
    Job {
        id: id.to_string(),
        name: name.to_string(),
        needs: needs.iter().map(|n| n.to_string()).collect(),
        condition: None,
        matrix: None,
        permissions: Vec::new(),
        body,
    }
}

struct Runs<'a> {
    on: &'a str,
    image: &'a str,
    gpu: bool,
    timeout: u32,
}

fn steps(
    runs: Runs<'_>,
    outputs: &[(&str, &str)],
    env: &[(&str, &str)],
    steps: Vec<Step>,
) -> JobBody {
    JobBody::Steps {
        runs_on: runs.on.to_string(),
        container: Some(Container {
            image: runs.image.to_string(),
            // The GPU runners' devices, as ROCm containers need them.
            options: runs
                .gpu
                .then(|| "--device=/dev/kfd --device=/dev/dri --group-add video".to_string()),
        }),
        timeout_minutes: runs.timeout,
        outputs: pairs(outputs),
        env: pairs(env),
        steps,
    }
}

const BUILD_IMAGE: &str = "${{ inputs.build-image }}";
const TEST_IMAGE: &str = "${{ inputs.test-image }}";
const LOCK: &str = "lock/rockbuild.lock.json";
/// The lock after checkout and build: hipify stamps and the build record.
const RECORD: &str = "src/rockbuild.lock.json";

/// `<kind>-<ref slug>-<family>`: artifact names are unique per run, and one chain's
/// artifacts never match another's pattern.
fn artifact(kind: &str, rest: &str) -> String {
    format!("{kind}-${{{{ inputs.ref-slug }}}}-${{{{ inputs.family }}}}{rest}")
}

/// The chain's inputs: (name, type, description). Types are GitHub's (`string`, `boolean`).
const CHAIN_INPUTS: [(&str, &str, &str); 25] = [
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
    ("family", "string", "GPU family of configs/families.yaml"),
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

fn chain_workflow() -> Workflow {
    let inputs: Vec<(String, Yaml)> = CHAIN_INPUTS
        .iter()
        .map(|(name, kind, description)| {
            (
                name.to_string(),
                Yaml::map(vec![
                    ("description", Yaml::str(*description)),
                    ("type", Yaml::str(*kind)),
                    ("required", Yaml::Bool(true)),
                ]),
            )
        })
        .collect();
    let on = Yaml::map(vec![(
        "workflow_call",
        Yaml::map(vec![("inputs", Yaml::Map(inputs))]),
    )]);
    let python = format!("{PYTHON_ROOT}/${{{{ matrix.cpython }}}}/bin/python");
    let staging = "${{ inputs.staging-url }}/${{ needs.stage.outputs.prefix }}";
    let staging_index = "${{ inputs.staging-index-url }}/${{ needs.stage.outputs.prefix }}/";
    let lock = job(
        "lock",
        "Lock ${{ inputs.family }} at ${{ inputs.pytorch-ref }}",
        &[],
        steps(
            Runs {
                on: LIGHT_RUNNER,
                image: BUILD_IMAGE,
                gpu: false,
                timeout: 30,
            },
            &[],
            &[],
            vec![
                rockbuild(
                    "Resolve the sources, the SDK, the targets and the wheel names",
                    &[
                        ("PYTORCH_REF", "${{ inputs.pytorch-ref }}"),
                        ("FAMILY", "${{ inputs.family }}"),
                        ("RELEASE_TYPE", "${{ inputs.release-type }}"),
                        ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
                    ],
                    vec![
                        lit("lock"),
                        lit("--repo-hashtag"),
                        var("PYTORCH_REF"),
                        lit("--amdgpu-family"),
                        var("FAMILY"),
                        lit("--release-type"),
                        var("RELEASE_TYPE"),
                        lit("--index-url"),
                        var("ROCM_INDEX_URL"),
                        lit("--lock"),
                        lit(LOCK),
                    ],
                ),
                upload("Keep the lock", &artifact("lock", ""), LOCK),
            ],
        ),
    );
    let mut build = job(
        "build",
        "Build ${{ inputs.family }} for Python ${{ matrix.python }}",
        &["lock"],
        steps(
            Runs {
                on: "${{ inputs.build-runs-on }}",
                image: BUILD_IMAGE,
                gpu: false,
                timeout: 360,
            },
            &[],
            &[
                // Git mirrors and hipify results: restored by the lock's hash.
                ("ROCKBUILD_CACHE_DIR", ".rockbuild-cache"),
                ("ROCKBUILD_USE_SCCACHE", "${{ inputs.sccache }}"),
                ("SCCACHE_BUCKET", "${{ inputs.sccache-bucket }}"),
                ("SCCACHE_ENDPOINT", "${{ inputs.sccache-endpoint }}"),
                ("SCCACHE_REGION", "${{ inputs.aws-region }}"),
                ("SCCACHE_S3_KEY_PREFIX", "${{ inputs.sccache-prefix }}"),
            ],
            vec![
                download("Fetch the lock", &artifact("lock", ""), "lock"),
                action(
                    "Restore the checkout cache",
                    CACHE,
                    &[
                        ("path", ".rockbuild-cache"),
                        (
                            "key",
                            "rockbuild-checkout-${{ hashFiles('lock/rockbuild.lock.json') }}",
                        ),
                        ("restore-keys", "rockbuild-checkout-"),
                    ],
                ),
                rockbuild(
                    "Check out the locked sources",
                    &[],
                    vec![
                        lit("checkout"),
                        lit("--from-lock"),
                        lit(LOCK),
                        lit("--root-checkout-dir"),
                        lit("src"),
                    ],
                ),
                when(aws_credentials(), "inputs.sccache"),
                rockbuild(
                    "Install the locked SDK and build every wheel for this Python",
                    &[
                        ("PYTHON", python.as_str()),
                        ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
                    ],
                    vec![
                        lit("build"),
                        lit("--install-rocm"),
                        lit("--python"),
                        var("PYTHON"),
                        lit("--index-url"),
                        var("ROCM_INDEX_URL"),
                        lit("--root-checkout-dir"),
                        lit("src"),
                        lit("--lock"),
                        lit(RECORD),
                        lit("--output-dir"),
                        lit("out"),
                    ],
                ),
                rockbuild(
                    "Give the wheels their manylinux tag",
                    &[],
                    vec![lit("retag"), lit("--platform"), lit(PLATFORM), lit("out")],
                ),
                rockbuild(
                    "Verify the wheels against the lock",
                    &[],
                    vec![lit("verify"), lit("out"), lit("--lock"), lit(RECORD)],
                ),
                upload(
                    "Keep the wheels and the lock with its build record",
                    &artifact("wheels", "-${{ matrix.python }}"),
                    "out/*.whl\nsrc/rockbuild.lock.json",
                ),
            ],
        ),
    );
    build.matrix = Some("${{ fromJSON(inputs.build-matrix) }}".into());
    let mut stage = job(
        "stage",
        "Stage ${{ inputs.family }}",
        &["build"],
        steps(
            Runs {
                on: LIGHT_RUNNER,
                image: BUILD_IMAGE,
                gpu: false,
                timeout: 60,
            },
            // Computed once, when this job runs: a re-run of a later job reads the prefix of
            // the attempt that staged; a re-run of this job stages to a fresh one.
            // `stage --family` puts the wheels under `<to>/<family>/`.
            &[("prefix", "${{ env.STAGING_PREFIX }}/${{ inputs.family }}")],
            &[
                (
                    "STAGING_PREFIX",
                    "run-${{ github.run_id }}-${{ github.run_attempt }}/${{ inputs.ref-slug }}",
                ),
                ("ROCKBUILD_S3_ENDPOINT", "${{ inputs.s3-endpoint }}"),
                ("ROCKBUILD_S3_REGION", "${{ inputs.aws-region }}"),
            ],
            vec![
                download(
                    "Fetch every Python's wheels",
                    &artifact("wheels", "-*"),
                    ".",
                ),
                aws_credentials(),
                // Stage brings the ROCm SDK wheels the set pins from the SDK's index: the
                // prefix installs with no other index.
                rockbuild(
                    "Stage to this attempt's prefix, with the ROCm SDK it pins",
                    &[
                        (
                            "STAGING",
                            "${{ inputs.staging-url }}/${{ env.STAGING_PREFIX }}",
                        ),
                        ("FAMILY", "${{ inputs.family }}"),
                        ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
                    ],
                    vec![
                        lit("stage"),
                        lit("--input"),
                        lit("out"),
                        lit("--to"),
                        var("STAGING"),
                        lit("--family"),
                        var("FAMILY"),
                        lit("--lock"),
                        lit(RECORD),
                        lit("--index-url"),
                        var("ROCM_INDEX_URL"),
                    ],
                ),
                upload(
                    "Keep the lock with its build record",
                    &artifact("record", ""),
                    RECORD,
                ),
            ],
        ),
    );
    stage.condition = Some("inputs.publish".into());
    let mut smoke = job(
        "smoke",
        "Smoke ${{ inputs.family }} ${{ matrix.python }}",
        &["stage"],
        steps(
            Runs {
                on: "${{ matrix.runs_on }}",
                image: TEST_IMAGE,
                gpu: true,
                timeout: 60,
            },
            &[],
            &[],
            vec![
                download(
                    "Fetch the lock with its build record",
                    &artifact("record", ""),
                    "src",
                ),
                // The ROCm SDK comes from the staging prefix, as it will from the release.
                rockbuild(
                    "Install the staged set and import it",
                    &[
                        ("STAGING_INDEX", staging_index),
                        ("PYTHON_INDEX_URL", "${{ inputs.python-index-url }}"),
                        ("PYTHON", python.as_str()),
                        ("REPORT", "reports/smoke-${{ matrix.python }}.json"),
                    ],
                    vec![
                        lit("smoke"),
                        lit("--index-url"),
                        var("STAGING_INDEX"),
                        lit("--extra-index-url"),
                        var("PYTHON_INDEX_URL"),
                        lit("--lock"),
                        lit(RECORD),
                        lit("--python"),
                        var("PYTHON"),
                        lit("--report"),
                        var("REPORT"),
                    ],
                ),
                when(
                    upload(
                        "Keep the smoke report",
                        &artifact("smoke", "-${{ matrix.python }}"),
                        "reports/",
                    ),
                    "always()",
                ),
            ],
        ),
    );
    smoke.condition = Some("inputs.tested".into());
    smoke.matrix = Some("${{ fromJSON(inputs.report-matrix) }}".into());
    let mut test = job(
        "test",
        "Test ${{ inputs.family }} ${{ matrix.python }} ${{ matrix.test_config }} ${{ matrix.shard }}/${{ matrix.num_shards }}",
        &["stage"],
        steps(
            Runs {
                on: "${{ matrix.runs_on }}",
                image: TEST_IMAGE,
                gpu: true,
                timeout: 360,
            },
            &[],
            &[],
            vec![
                download(
                    "Fetch the lock with its build record",
                    &artifact("record", ""),
                    "src",
                ),
                when(
                    rockbuild(
                        "Check out the test sources (torch at the locked commit, no hipify)",
                        &[],
                        vec![
                            lit("checkout"),
                            lit("--from-lock"),
                            lit(RECORD),
                            lit("--project"),
                            lit("torch"),
                            lit("--no-hipify"),
                            lit("--no-submodules"),
                            lit("--checkout-dir"),
                            lit("test-src/pytorch"),
                            lit("--lock"),
                            lit("test-src/rockbuild.lock.json"),
                        ],
                    ),
                    "matrix.sources",
                ),
                when(
                    test_step("Run the shard on the GPU", &python, staging_index, true),
                    "matrix.sources",
                ),
                when(
                    test_step("Run the GPU smoke suite", &python, staging_index, false),
                    "matrix.sources == false",
                ),
                when(
                    upload(
                        "Keep the results",
                        &artifact(
                            "test",
                            "-${{ matrix.python }}-${{ matrix.suite }}-${{ matrix.shard }}",
                        ),
                        "test-results/",
                    ),
                    "always()",
                ),
            ],
        ),
    );
    test.condition = Some("inputs.tested".into());
    test.matrix = Some("${{ fromJSON(inputs.test-matrix) }}".into());
    let mut report = job(
        "report",
        "Test report ${{ inputs.family }} ${{ matrix.python }}",
        &["smoke", "test"],
        steps(
            Runs {
                on: LIGHT_RUNNER,
                image: BUILD_IMAGE,
                gpu: false,
                timeout: 15,
            },
            &[],
            &[],
            vec![
                download(
                    "Fetch the smoke report of this Python",
                    &artifact("smoke", "-${{ matrix.python }}"),
                    "reports",
                ),
                download(
                    "Fetch the shards of this Python",
                    &artifact("test", "-${{ matrix.python }}-*"),
                    "test-results",
                ),
                rockbuild(
                    "Combine the shards (a missing or cancelled shard fails the report)",
                    &[
                        ("EXPECT", "${{ matrix.expect }}"),
                        ("REPORT", "reports/test-${{ matrix.python }}.json"),
                    ],
                    vec![
                        lit("test-report"),
                        lit("test-results"),
                        lit("--expect"),
                        var("EXPECT"),
                        lit("--report"),
                        var("REPORT"),
                    ],
                ),
                upload(
                    "Keep the reports",
                    &artifact("reports", "-${{ matrix.python }}"),
                    "reports/",
                ),
            ],
        ),
    );
    report.condition = Some("inputs.tested".into());
    report.matrix = Some("${{ fromJSON(inputs.report-matrix) }}".into());
    let mut promote = job(
        "promote",
        "Promote ${{ inputs.family }}",
        &["stage", "report"],
        steps(
            Runs {
                on: LIGHT_RUNNER,
                image: BUILD_IMAGE,
                gpu: false,
                timeout: 60,
            },
            &[],
            &[
                ("ROCKBUILD_S3_ENDPOINT", "${{ inputs.s3-endpoint }}"),
                ("ROCKBUILD_S3_REGION", "${{ inputs.aws-region }}"),
            ],
            vec![
                download(
                    "Fetch the lock with its build record",
                    &artifact("record", ""),
                    "src",
                ),
                download(
                    "Fetch every Python's reports",
                    &artifact("reports", "-*"),
                    "reports",
                ),
                aws_credentials(),
                rockbuild(
                    "Promote the tested set (default deny)",
                    &[
                        ("STAGING", staging),
                        ("RELEASE", "${{ inputs.release-url }}/${{ inputs.family }}"),
                        ("ROCM_INDEX_URL", "${{ inputs.rocm-index-url }}"),
                    ],
                    vec![
                        lit("promote"),
                        lit("--from"),
                        var("STAGING"),
                        lit("--to"),
                        var("RELEASE"),
                        lit("--lock"),
                        lit(RECORD),
                        // The ROCm SDK's wheels are promoted as their index publishes them.
                        lit("--index-url"),
                        var("ROCM_INDEX_URL"),
                        lit("--test-report"),
                        lit("reports"),
                        // Every ref of a release type promotes into the same family index:
                        // the chains take turns on its lease instead of failing with exit 7
                        // (within the job's 60-minute timeout).
                        lit("--lease-wait"),
                        lit("2700"),
                    ],
                ),
            ],
        ),
    );
    promote.condition = Some("inputs.promote".into());
    for job in [&mut build, &mut stage, &mut promote] {
        job.permissions = pairs(&[("id-token", "write")]);
    }
    Workflow {
        file: CHAIN_FILE.into(),
        name: "rockbuild chain".into(),
        header: header(&[
            "One family's chain for one PyTorch ref, called once per row of `rockbuild matrix`:",
            "lock -> build (per Python, build image, the family's build runner) -> stage (this",
            "attempt's prefix) -> smoke (per Python) and test (per row), on the family's GPU",
            "runner in the test image -> test report (per Python) -> promote. No job needs",
            "another chain's, so one family's failure never blocks another's promotion; the",
            "chains of one family take turns on its release index's lease (--lease-wait).",
        ]),
        on,
        permissions: Vec::new(),
        concurrency: None,
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: vec![lock, build, stage, smoke, test, report, promote],
    }
}

/// `rockbuild test` for one test row: PyTorch's suite on the checked-out test sources, or the
/// built-in GPU smoke suite, which needs none.
fn test_step(name: &str, python: &str, staging_index: &str, sources: bool) -> Step {
    let mut args = vec![
        lit("test"),
        lit("--index-url"),
        var("STAGING_INDEX"),
        lit("--extra-index-url"),
        var("PYTHON_INDEX_URL"),
        lit("--lock"),
        lit(RECORD),
    ];
    if sources {
        args.extend([lit("--pytorch-dir"), lit("test-src/pytorch")]);
    }
    args.extend([
        lit("--python"),
        var("PYTHON"),
        lit("--amdgpu-family"),
        var("FAMILY"),
        lit("--test-config"),
        var("SUITE"),
        lit("--shard"),
        var("SHARD"),
        var("NUM_SHARDS"),
        lit("--output-dir"),
        var("RESULTS"),
    ]);
    rockbuild(
        name,
        &[
            ("STAGING_INDEX", staging_index),
            ("PYTHON_INDEX_URL", "${{ inputs.python-index-url }}"),
            ("PYTHON", python),
            ("FAMILY", "${{ inputs.family }}"),
            ("SUITE", "${{ matrix.suite }}"),
            ("SHARD", "${{ matrix.shard }}"),
            ("NUM_SHARDS", "${{ matrix.num_shards }}"),
            (
                "RESULTS",
                "test-results/${{ matrix.python }}-${{ matrix.suite }}-${{ matrix.shard }}",
            ),
        ],
        args,
    )
}

fn header(what: &[&str]) -> Vec<String> {
    let mut lines = vec![
        "Generated by `rockbuild ci generate` from configs/families.yaml and".to_string(),
        "configs/releases.yaml; do not edit (a test fails when this file differs from what it"
            .to_string(),
        "generates). Copy workflows/ to .github/workflows/ of the repository that runs it"
            .to_string(),
        "(docs/ci.md).".to_string(),
        String::new(),
    ];
    lines.extend(what.iter().map(|l| l.to_string()));
    lines
}

/// The `with:` of a caller's chain job: the matrix row's values and the repository variables.
fn chain_with(sccache: bool) -> Vec<(String, String)> {
    let mut with: Vec<(&str, String)> = vec![
        ("pytorch-ref", "${{ matrix.pytorch_ref }}".into()),
        ("ref-slug", "${{ matrix.ref_slug }}".into()),
        ("family", "${{ matrix.family }}".into()),
        (
            "release-type",
            "${{ needs.matrix.outputs.release-type }}".into(),
        ),
        ("build-runs-on", "${{ matrix.build_runs_on }}".into()),
        ("build-matrix", "${{ toJSON(matrix.build) }}".into()),
        ("test-matrix", "${{ toJSON(matrix.test) }}".into()),
        ("report-matrix", "${{ toJSON(matrix.reports) }}".into()),
        (
            "publish",
            "${{ needs.matrix.outputs.publish == 'true' }}".into(),
        ),
        ("tested", "${{ matrix.tested }}".into()),
        ("promote", "${{ matrix.promote }}".into()),
        // The compiler cache is on where the repository names a bucket for it.
        (
            "sccache",
            if sccache {
                "${{ vars.ROCKBUILD_SCCACHE_BUCKET != '' }}".to_string()
            } else {
                "false".to_string()
            },
        ),
        (
            "sccache-prefix",
            "${{ needs.matrix.outputs.sccache-prefix }}".into(),
        ),
    ];
    for (input, variable, _) in VARIABLES {
        with.push((input, format!("${{{{ vars.{variable} }}}}")));
    }
    with.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The matrix job and the chain calls, for any caller.
fn caller_jobs(matrix_step: Step, sccache: bool) -> Vec<Job> {
    let matrix = job(
        "matrix",
        "Matrix",
        &[],
        steps(
            Runs {
                on: LIGHT_RUNNER,
                image: "${{ vars.ROCKBUILD_BUILD_IMAGE }}",
                gpu: false,
                timeout: 10,
            },
            &[
                ("chains", "${{ steps.matrix.outputs.chains }}"),
                ("release-type", "${{ steps.matrix.outputs.release_type }}"),
                ("publish", "${{ steps.matrix.outputs.publish }}"),
                (
                    "sccache-prefix",
                    "${{ steps.matrix.outputs.sccache_prefix }}",
                ),
            ],
            &[],
            vec![Step {
                id: Some("matrix".into()),
                ..matrix_step
            }],
        ),
    );
    let mut chain = job(
        "chain",
        "${{ matrix.pytorch_ref }} ${{ matrix.family }}",
        &["matrix"],
        JobBody::Call {
            uses: format!("./.github/workflows/{CHAIN_FILE}"),
            with: chain_with(sccache),
        },
    );
    chain.matrix = Some("${{ fromJSON(needs.matrix.outputs.chains) }}".into());
    // A called workflow's jobs get at most what the calling job grants. The pull-request
    // caller grants it too (the build job asks for it, for sccache), but passes
    // `sccache: false`, so no job there asks for a token; GitHub gives forks none anyway.
    chain.permissions = pairs(&[("id-token", "write")]);
    vec![matrix, chain]
}

fn nightly_workflow() -> Workflow {
    let step = rockbuild(
        "Compute the matrix",
        &[],
        vec![lit("matrix"), lit("--release-type"), lit("nightly")],
    );
    Workflow {
        file: "rockbuild-nightly.yml".into(),
        name: "rockbuild nightly".into(),
        header: header(&[
            "Every night: the nightly release type's refs, families and Pythons, each family's",
            "chain on its own.",
        ]),
        on: Yaml::map(vec![(
            "schedule",
            Yaml::Seq(vec![Yaml::map(vec![("cron", Yaml::str(NIGHTLY_CRON))])]),
        )]),
        permissions: Vec::new(),
        concurrency: Some(Concurrency {
            group: "rockbuild-nightly".into(),
            cancel_in_progress: false,
        }),
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: caller_jobs(step, true),
    }
}

fn release_workflow(release_types: &[&str], families: &[&str]) -> Workflow {
    let input = |description: &str, required: bool| {
        vec![
            ("description", Yaml::str(description)),
            ("type", Yaml::str("string")),
            ("required", Yaml::Bool(required)),
        ]
    };
    let mut release_type = vec![
        (
            "description",
            Yaml::str("release type (configs/releases.yaml)"),
        ),
        ("type", Yaml::str("choice")),
        ("required", Yaml::Bool(true)),
        ("default", Yaml::str("prerelease")),
    ];
    release_type.push((
        "options",
        Yaml::Seq(release_types.iter().map(|t| Yaml::str(*t)).collect()),
    ));
    let families_help = format!(
        "families, ; separated (empty: the release type's; known: {})",
        families.join(" ")
    );
    let on = Yaml::map(vec![(
        "workflow_dispatch",
        Yaml::map(vec![(
            "inputs",
            Yaml::map(vec![
                (
                    "pytorch-ref",
                    Yaml::map(input(
                        "PyTorch refs, comma separated (empty: the release type's)",
                        false,
                    )),
                ),
                ("release-type", Yaml::map(release_type)),
                ("families", Yaml::map(input(&families_help, false))),
            ]),
        )]),
    )]);
    let step = rockbuild(
        "Compute the matrix",
        &[
            ("RELEASE_TYPE", "${{ inputs.release-type }}"),
            ("PYTORCH_REF", "${{ inputs.pytorch-ref }}"),
            ("FAMILIES", "${{ inputs.families }}"),
        ],
        vec![
            lit("matrix"),
            lit("--release-type"),
            var("RELEASE_TYPE"),
            lit("--pytorch-ref"),
            var("PYTORCH_REF"),
            lit("--amdgpu-families"),
            var("FAMILIES"),
        ],
    );
    Workflow {
        file: "rockbuild-release.yml".into(),
        name: "rockbuild release".into(),
        header: header(&[
            "On demand: a release type's refs and families (narrowed by the inputs), each",
            "family's chain on its own.",
        ]),
        on,
        permissions: Vec::new(),
        concurrency: Some(Concurrency {
            group: "rockbuild-release-${{ inputs.release-type }}".into(),
            cancel_in_progress: false,
        }),
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: caller_jobs(step, true),
    }
}

fn pull_request_workflow(families: String) -> Workflow {
    let step = rockbuild(
        "Compute the matrix",
        &[],
        vec![lit("matrix"), lit("--release-type"), lit("ci")],
    );
    let what = format!(
        "Pull requests: the ci release type ({families}), built and verified in the build image;"
    );
    Workflow {
        file: "rockbuild-pr.yml".into(),
        name: "rockbuild pull request".into(),
        header: header(&[
            &what,
            "nothing is staged or published, and no credentials are asked for (pull requests",
            "from forks get none).",
        ]),
        on: Yaml::map(vec![("pull_request", Yaml::Map(Vec::new()))]),
        permissions: Vec::new(),
        concurrency: Some(Concurrency {
            group: "rockbuild-pr-${{ github.event.pull_request.number }}".into(),
            cancel_in_progress: true,
        }),
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: caller_jobs(step, false),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::ci::releases::DEFAULT_RELEASES;
    use crate::stack::ConfigSource;

    fn tables(releases: &str) -> (FamilyTable, ReleaseTable) {
        let families = FamilyTable::load(&ConfigSource::embedded(
            "configs/families.yaml",
            crate::stack::DEFAULT_FAMILIES,
        ))
        .expect("families");
        let releases = ReleaseTable::load(
            &ConfigSource::embedded("configs/releases.yaml", releases),
            &families,
        )
        .expect("releases");
        (families, releases)
    }

    fn shipped() -> CiPlan {
        let (families, releases) = tables(DEFAULT_RELEASES);
        plan(&families, &releases).expect("plans")
    }

    /// Every generated workflow, whole.
    #[test]
    fn generated_workflows() {
        for workflow in shipped().workflows {
            insta::assert_snapshot!(workflow.file.clone(), workflow.to_yaml());
        }
    }

    /// workflows/ holds exactly what `ci generate` writes (as docs/cli.md holds the CLI).
    #[test]
    fn committed_workflows_are_generated() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows");
        let stale = crate::ci::files::differences(
            &shipped(),
            &crate::ci::files::inspect(&dir).expect("read workflows/"),
        );
        assert!(
            stale.is_empty(),
            "workflows/ differs from `rockbuild ci generate` in {stale:?}; run `cargo run -- ci generate` and commit it"
        );
    }

    /// Every `rockbuild` step parses with this binary's CLI, each `$VAR` given a value of the
    /// kind the workflow passes: a renamed flag fails here, not in CI.
    #[test]
    fn every_step_is_a_valid_rockbuild_call() {
        let sample = |name: &str| match name {
            "RELEASE_TYPE" => "nightly",
            "SHARD" | "NUM_SHARDS" => "1",
            "SUITE" => "default",
            "EXPECT" => "default=6,gpu-smoke=1",
            "PYTHON" => "/opt/python/cp312-cp312/bin/python",
            _ => "x",
        };
        let mut count = 0;
        for workflow in shipped().workflows {
            for job in &workflow.jobs {
                let JobBody::Steps { steps, .. } = &job.body else {
                    continue;
                };
                for step in steps {
                    let StepRun::Rockbuild { args } = &step.run else {
                        continue;
                    };
                    let argv: Vec<String> = std::iter::once("rockbuild".to_string())
                        .chain(args.iter().map(|a| match a {
                            Arg::Literal(word) => {
                                assert!(is_shell_safe(word), "{word}");
                                word.clone()
                            }
                            Arg::Var(name) => {
                                assert!(
                                    step.env.iter().any(|(k, _)| k == name),
                                    "{}: ${name} is not in the step's env",
                                    step.name
                                );
                                sample(name).to_string()
                            }
                        }))
                        .collect();
                    if let Err(e) = crate::cli::Cli::try_parse_from(&argv) {
                        panic!(
                            "{}: `{}` does not parse: {e}",
                            workflow.file,
                            argv.join(" ")
                        );
                    }
                    count += 1;
                }
            }
        }
        assert!(count > 10, "{count} steps");
    }

    /// docs/ci.md's table of repository variables is [`VARIABLES`].
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the bless switch is for developers running tests"
    )]
    fn docs_list_the_variables() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
        let current = fs_err::read_to_string(&path).expect("docs/ci.md");
        let start = "<!-- generated: ci generate variables -->\n";
        let end = "<!-- end of generated variables -->";
        let at = current.find(start).expect("start marker") + start.len();
        let stop = at + current[at..].find(end).expect("end marker");
        let mut table =
            String::from("\n| variable | chain input | what it holds |\n|---|---|---|\n");
        for (input, variable, what) in VARIABLES {
            table.push_str(&format!("| `{variable}` | `{input}` | {what} |\n"));
        }
        table.push('\n');
        let want = format!("{}{table}{}", &current[..at], &current[stop..]);
        if std::env::var_os("ROCKBUILD_BLESS").is_some() {
            fs_err::write(&path, &want).expect("write docs/ci.md");
        } else {
            assert!(
                current == want,
                "docs/ci.md's variables are out of date; run `ROCKBUILD_BLESS=1 cargo test docs_list` and commit it"
            );
        }
    }

    #[test]
    fn pull_requests_never_publish() {
        let releases = DEFAULT_RELEASES.replace(
            "families: {only: [gfx94X-dcgpu]}\n    tests: {}\n    publish: false",
            "families: {only: [gfx94X-dcgpu]}\n    tests:\n      smoke: {}\n    publish: true",
        );
        assert_ne!(releases, DEFAULT_RELEASES);
        let (families, releases) = tables(&releases);
        assert_eq!(
            plan(&families, &releases).expect_err("refused").to_string(),
            "configs/releases.yaml (built in): release type 'ci' publishes, but it is what pull requests build: set `publish: false` (pull requests get no credentials)"
        );
    }
}
