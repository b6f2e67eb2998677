//! The workflows `rockbuild ci generate` writes: a pure function of the family and release
//! tables. One reusable workflow runs one family's chain for one ref; three callers compute the
//! matrix with `rockbuild matrix` and call it once per chain (nightly on a schedule, a release
//! on manual dispatch, a pull request for the `ci` release type's one small family). Where a
//! release type a caller runs has a `windows:` column, a second reusable workflow runs the
//! Windows chains, and the caller calls it once per Windows row of the matrix.
//!
//! Every step is one `rockbuild` call or one action pinned by commit SHA. Values from the
//! workflow reach commands through the step's env, never through expressions in the command
//! line. Credentials come from OIDC (`id-token: write` and a role to assume); there are no
//! static keys.

use serde::Serialize;

use super::Error;
use super::chain;
use super::parts::{
    LIGHT_RUNNER, Runs, checkout_tables, header, job, lit, pairs, rockbuild, steps, var,
};
use super::releases::ReleaseTable;
use super::workflow::{Arg, Concurrency, Job, JobBody, Step, Workflow, Yaml};
use crate::lock::mode::BuildMode;
use crate::platform::Platform;
use crate::stack::FamilyTable;
use crate::version::ReleaseType;

pub use super::chain::{CHAIN_FILE, WINDOWS_CHAIN_FILE};

/// When the nightly run starts (UTC), after TheRock's nightly SDK is published.
const NIGHTLY_CRON: &str = "0 6 * * *";

/// Repository variables a fork sets (docs/ci.md): the chain input each becomes, its name,
/// what it holds. A chain is passed those of its inputs (the Windows chain has no test image,
/// the Linux chain no rockbuild to install).
pub const VARIABLES: [(&str, &str, &str); 14] = [
    (
        "build-image",
        "ROCKBUILD_BUILD_IMAGE",
        "build image (dockerfiles/build.Dockerfile), by digest",
    ),
    (
        "test-image",
        "ROCKBUILD_TEST_IMAGE",
        "test image (dockerfiles/test.Dockerfile), by digest (Linux chains)",
    ),
    (
        "rockbuild-repository",
        "ROCKBUILD_REPOSITORY",
        "git URL of rockbuild, which the Windows jobs build with `cargo install` (Windows \
         chains)",
    ),
    (
        "rockbuild-rev",
        "ROCKBUILD_REV",
        "commit of rockbuild the Windows jobs build, as the images pin the Linux jobs' \
         (Windows chains)",
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

/// The workflows of `mode`, from the tables: per-family chains, or one multi-arch set per ref
/// (the callers' `rockbuild matrix --multi-arch`, the multi-arch chain). Fails when a release
/// type the callers run is missing from the release table, or the pull-request type would
/// publish.
pub fn plan(
    families: &FamilyTable,
    releases: &ReleaseTable,
    mode: BuildMode,
) -> Result<CiPlan, Error> {
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
    let nightly_windows = need(ReleaseType::Nightly)?.windows;
    let any_windows = <ReleaseType as clap::ValueEnum>::value_variants()
        .iter()
        .filter_map(|t| releases.release(*t))
        .any(|r| r.windows);
    let mut workflows = vec![chain::workflow(mode, Platform::Linux)];
    if any_windows {
        workflows.push(chain::workflow(mode, Platform::Windows));
    }
    workflows.extend([
        nightly_workflow(mode, nightly_windows),
        release_workflow(mode, &release_types, &family_names, any_windows),
        pull_request_workflow(mode, ci.families.join(", "), ci.windows),
    ]);
    Ok(CiPlan { workflows })
}

/// The `with:` of a caller's chain job: the matrix row's values and the repository variables
/// the chain of `platform` takes.
fn chain_with(sccache: bool, platform: Platform) -> Vec<(String, String)> {
    let sccache_prefix = match platform {
        Platform::Linux => "${{ needs.matrix.outputs.sccache-prefix }}",
        Platform::Windows => "${{ needs.matrix.outputs.windows-sccache-prefix }}",
    };
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
        ("sccache-prefix", sccache_prefix.into()),
    ];
    let inputs = chain::inputs(platform);
    for (input, variable, _) in VARIABLES {
        if inputs.contains(&input) {
            with.push((input, format!("${{{{ vars.{variable} }}}}")));
        }
    }
    with.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

/// The repository's tables, which the matrix job checks out and `rockbuild matrix` reads.
pub const TABLES: [(&str, &str); 2] = [
    ("--families", "configs/families.yaml"),
    ("--releases", "configs/releases.yaml"),
];

/// `rockbuild matrix` with a caller's arguments, on the repository's tables, and
/// `--multi-arch` for multi-arch chains.
fn matrix_step(mode: BuildMode, env: &[(&str, &str)], mut args: Vec<Arg>) -> Step {
    for (flag, path) in TABLES {
        args.extend([lit(flag), lit(path)]);
    }
    if mode == BuildMode::MultiArch {
        args.push(lit("--multi-arch"));
    }
    rockbuild(
        "Compute the matrix",
        env,
        [vec![lit("matrix")], args].concat(),
    )
}

/// What a caller's header says each row of its matrix runs.
fn chains_of(mode: BuildMode) -> &'static str {
    match mode {
        BuildMode::PerFamily => "each family's chain on its own",
        BuildMode::MultiArch => "one multi-arch set per ref, tested per family",
    }
}

/// The matrix job and the chain calls, for any caller; with `windows`, the calls of the
/// Windows chain too.
fn caller_jobs(mode: BuildMode, matrix_step: Step, sccache: bool, windows: bool) -> Vec<Job> {
    let mut outputs = vec![
        ("chains", "${{ steps.matrix.outputs.chains }}"),
        ("release-type", "${{ steps.matrix.outputs.release_type }}"),
        ("publish", "${{ steps.matrix.outputs.publish }}"),
        (
            "sccache-prefix",
            "${{ steps.matrix.outputs.sccache_prefix }}",
        ),
    ];
    if windows {
        outputs.extend([
            (
                "windows-chains",
                "${{ steps.matrix.outputs.windows_chains }}",
            ),
            ("windows", "${{ steps.matrix.outputs.windows }}"),
            (
                "windows-sccache-prefix",
                "${{ steps.matrix.outputs.windows_sccache_prefix }}",
            ),
        ]);
    }
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
            &outputs,
            &[],
            vec![
                checkout_tables(),
                Step {
                    id: Some("matrix".into()),
                    ..matrix_step
                },
            ],
        ),
    );
    // A multi-arch row's family is every family of the set: too long for a job name.
    let name = match mode {
        BuildMode::PerFamily => "${{ matrix.pytorch_ref }} ${{ matrix.family }}",
        BuildMode::MultiArch => "${{ matrix.pytorch_ref }} multi-arch",
    };
    let mut chain = job(
        "chain",
        name,
        &["matrix"],
        JobBody::Call {
            uses: format!("./.github/workflows/{CHAIN_FILE}"),
            with: chain_with(sccache, Platform::Linux),
        },
    );
    chain.matrix = Some("${{ fromJSON(needs.matrix.outputs.chains) }}".into());
    // A called workflow's jobs get at most what the calling job grants. The pull-request
    // caller grants it too (the build job asks for it, for sccache), but passes
    // `sccache: false`, so no job there asks for a token; GitHub gives forks none anyway.
    chain.permissions = pairs(&[("id-token", "write")]);
    let mut jobs = vec![matrix, chain];
    if windows {
        let mut call = job(
            "windows",
            &format!("{name} on Windows"),
            &["matrix"],
            JobBody::Call {
                uses: format!("./.github/workflows/{WINDOWS_CHAIN_FILE}"),
                with: chain_with(sccache, Platform::Windows),
            },
        );
        // GitHub refuses a matrix with no rows: a run that selects no family with a windows
        // entry has no Windows chains, and skips the call.
        call.condition = Some("needs.matrix.outputs.windows == 'true'".into());
        call.matrix = Some("${{ fromJSON(needs.matrix.outputs.windows-chains) }}".into());
        call.permissions = pairs(&[("id-token", "write")]);
        jobs.push(call);
    }
    jobs
}

/// The dispatch input that adds the release table's full suite (`matrix --full-tests`), as
/// TheRock's `run_full_pytorch_tests` (#5780, any release type since #6846).
fn full_tests_input() -> (&'static str, Yaml) {
    (
        "full-tests",
        Yaml::map(vec![
            (
                "description",
                Yaml::str("also run the full test suite (configs/releases.yaml full-tests)"),
            ),
            ("type", Yaml::str("boolean")),
            ("required", Yaml::Bool(false)),
            ("default", Yaml::Bool(false)),
        ]),
    )
}

/// The matrix step reads the input through `ROCKBUILD_FULL_TESTS` (`--full-tests`): `true` or
/// `false` from a dispatch, empty (unset) on a schedule.
const FULL_TESTS_ENV: (&str, &str) = ("ROCKBUILD_FULL_TESTS", "${{ inputs.full-tests }}");

fn nightly_workflow(mode: BuildMode, windows: bool) -> Workflow {
    let step = matrix_step(
        mode,
        &[FULL_TESTS_ENV],
        vec![lit("--release-type"), lit("nightly")],
    );
    let what = format!("{}.", chains_of(mode));
    Workflow {
        file: "rockbuild-nightly.yml".into(),
        name: "rockbuild nightly".into(),
        header: header(&[
            "Every night: the nightly release type's refs, families and Pythons,",
            &what,
            "Dispatched by hand, the same, and with `full-tests` the full suite too.",
        ]),
        on: Yaml::map(vec![
            (
                "schedule",
                Yaml::Seq(vec![Yaml::map(vec![("cron", Yaml::str(NIGHTLY_CRON))])]),
            ),
            (
                "workflow_dispatch",
                Yaml::map(vec![("inputs", Yaml::map(vec![full_tests_input()]))]),
            ),
        ]),
        permissions: Vec::new(),
        concurrency: Some(Concurrency {
            group: "rockbuild-nightly".into(),
            cancel_in_progress: false,
        }),
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: caller_jobs(mode, step, true, windows),
    }
}

fn release_workflow(
    mode: BuildMode,
    release_types: &[&str],
    families: &[&str],
    windows: bool,
) -> Workflow {
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
                full_tests_input(),
            ]),
        )]),
    )]);
    let step = matrix_step(
        mode,
        &[
            ("RELEASE_TYPE", "${{ inputs.release-type }}"),
            ("PYTORCH_REF", "${{ inputs.pytorch-ref }}"),
            ("FAMILIES", "${{ inputs.families }}"),
            FULL_TESTS_ENV,
        ],
        vec![
            lit("--release-type"),
            var("RELEASE_TYPE"),
            lit("--pytorch-ref"),
            var("PYTORCH_REF"),
            lit("--amdgpu-family"),
            var("FAMILIES"),
        ],
    );
    Workflow {
        file: "rockbuild-release.yml".into(),
        name: "rockbuild release".into(),
        header: header(&[
            "On demand: a release type's refs and families (narrowed by the inputs),",
            &format!("{}.", chains_of(mode)),
        ]),
        on,
        permissions: Vec::new(),
        concurrency: Some(Concurrency {
            group: "rockbuild-release-${{ inputs.release-type }}".into(),
            cancel_in_progress: false,
        }),
        env: pairs(&[("NO_COLOR", "1")]),
        jobs: caller_jobs(mode, step, true, windows),
    }
}

fn pull_request_workflow(mode: BuildMode, families: String, windows: bool) -> Workflow {
    let step = matrix_step(mode, &[], vec![lit("--release-type"), lit("ci")]);
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
        jobs: caller_jobs(mode, step, false, windows),
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;
    use crate::ci::releases::DEFAULT_RELEASES;
    use crate::ci::workflow::{Arg, Shell, StepRun, is_shell_safe};
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
        generated(BuildMode::PerFamily)
    }

    fn generated(mode: BuildMode) -> CiPlan {
        let (families, releases) = tables(DEFAULT_RELEASES);
        plan(&families, &releases, mode).expect("plans")
    }

    /// Every generated workflow, whole.
    #[test]
    fn generated_workflows() {
        for workflow in shipped().workflows {
            insta::assert_snapshot!(workflow.file.clone(), workflow.to_yaml());
        }
    }

    /// Every workflow `ci generate --multi-arch` writes, whole: the callers compute the
    /// multi-arch matrix, the chain builds the set once per Python and fans its tests out per
    /// family.
    #[test]
    fn generated_multi_arch_workflows() {
        for workflow in generated(BuildMode::MultiArch).workflows {
            insta::assert_snapshot!(format!("multi-arch-{}", workflow.file), workflow.to_yaml());
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
        let both = [BuildMode::PerFamily, BuildMode::MultiArch].map(generated);
        for workflow in both.iter().flat_map(|p| &p.workflows) {
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

    /// The Windows chain, in both modes: its build, smoke and test jobs run on the Windows
    /// runners the matrix names, with no container, in PowerShell, and put rockbuild on PATH
    /// before any step calls it; the row's CPython is setup-python's, never the image's. Its
    /// lock, stage, report and promote jobs run on Linux in the build image, as the Linux
    /// chain's do.
    #[test]
    fn windows_chains_run_rockbuild_where_they_installed_it() {
        for mode in [BuildMode::PerFamily, BuildMode::MultiArch] {
            let plan = generated(mode);
            let chain = plan
                .workflows
                .iter()
                .find(|w| w.file == WINDOWS_CHAIN_FILE)
                .expect("a Windows chain");
            let mut on_windows = Vec::new();
            for job in &chain.jobs {
                let JobBody::Steps {
                    runs_on,
                    container,
                    shell,
                    steps,
                    ..
                } = &job.body
                else {
                    panic!("{}: a chain job has steps", job.id);
                };
                if container.is_some() {
                    assert_eq!(runs_on, LIGHT_RUNNER, "{}", job.id);
                    assert_eq!(*shell, Shell::Posix, "{}", job.id);
                    continue;
                }
                on_windows.push(job.id.as_str());
                assert_eq!(*shell, Shell::Pwsh, "{}", job.id);
                let on_path = steps
                    .iter()
                    .position(|s| matches!(s.run, StepRun::AddToPath { .. }))
                    .expect("rockbuild put on PATH");
                let first_call = steps
                    .iter()
                    .position(|s| matches!(s.run, StepRun::Rockbuild { .. }))
                    .expect("a rockbuild step");
                assert!(on_path < first_call, "{}", job.id);
                for step in steps {
                    for (key, value) in &step.env {
                        assert!(!value.contains("/opt/python"), "{}: {key}", job.id);
                    }
                }
            }
            assert_eq!(on_windows, ["build", "smoke", "test"], "{mode}");
        }
        // Pull requests build on Windows too, as the reference's CI does (release/2.12).
        let pr = shipped();
        let pr = pr.workflows.iter().find(|w| w.file == "rockbuild-pr.yml");
        let jobs: Vec<&str> = pr
            .expect("the pull-request caller")
            .jobs
            .iter()
            .map(|j| j.id.as_str())
            .collect();
        assert_eq!(jobs, ["matrix", "chain", "windows"]);
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
            "families: {tier: presubmit}\n    tests: {}\n    publish: false",
            "families: {tier: presubmit}\n    tests:\n      smoke: {}\n    publish: true",
        );
        assert_ne!(releases, DEFAULT_RELEASES);
        let (families, releases) = tables(&releases);
        assert_eq!(
            plan(&families, &releases, BuildMode::PerFamily)
                .expect_err("refused")
                .to_string(),
            "configs/releases.yaml (built in): release type 'ci' publishes, but it is what pull requests build: set `publish: false` (pull requests get no credentials)"
        );
    }
}
