//! `rockbuild test` and `rockbuild test-report` on real parts: the sample torch checked out
//! from its git origin without hipify or submodules (its test/run_test.py follows the real
//! run_test.py's command line), a CPU build of the sample torch and the stand-in ROCm SDK staged
//! to one index served over HTTP, real pip and pytest (with pytest-timeout) in real venvs.
//! There is no GPU here: GPU selection is driven end to end by a torch whose `torch.cuda`
//! reports the devices of a four-GPU node (a fake device query through the real child process).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::http::{self, HttpServer};
use crate::common::json_lines::assert_json_lines;
use crate::common::sample::sample_origins;
use crate::common::wheels::WheelBuilder;
use crate::common::{TestEnv, repo_root, run_ok, wheelhouse};

const SDK: &str = "7.10.0a20251124";
const TORCH: &str = "2.9.0+rocm7.10.0a20251124";

/// A test-times.json as test-infra's generated stats have it (build environment, then test
/// config, then seconds per test file), for the sample's modules.
const SAMPLE_TIMES: &str = r#"{
  "linux-noble-rocm-py3.12-mi300": {
    "default": {"test_nn": 1150.5, "test_torch": 420.25, "test_ops": 380.0, "test_cuda": 95.5,
                "test_modules": 60.0, "inductor/test_torchinductor": 300.0},
    "inductor": {"inductor/test_torchinductor": 900.0}
  },
  "default": {"default": {"test_nn": 10.0}}
}"#;

/// The sample torch's test sources, its wheel and the SDK's on one staging index.
struct World {
    env: TestEnv,
    sources: PathBuf,
    lock: PathBuf,
    server: HttpServer,
    requirements: PathBuf,
}

impl World {
    /// Sources from `branch` of the sample torch origin; the staged torch is a CPU build of
    /// release/2.9 (2.9.0) that pins the SDK, like TheRock's torch wheels.
    fn new(branch: &str) -> World {
        let mut env = TestEnv::new();
        // The runner as `detect` reads it: this machine's kind, a VM with no AMD GPU, whatever
        // the host running the tests has.
        let runner = env.path("runner");
        crate::common::sysfs::no_gpu(&runner);
        env.set("ROCKBUILD_SYSFS_ROOT", runner.to_str().expect("utf-8"));
        // test-infra's stats out of reach wherever the tests run (a proxy nothing listens on):
        // the sample's export_test_times.py behaves as upstream's does offline.
        env.set("https_proxy", "http://127.0.0.1:9");
        let origins = sample_origins(&env);
        let lock = env.path("src/rockbuild.lock.json");
        // The tested sources, checked out as the reference does for tests.
        env.rockbuild()
            .args(["checkout", "--config"])
            .arg(&origins.stack_yaml)
            .args([
                "--project",
                "torch",
                "--repo-hashtag",
                branch,
                "--no-hipify",
                "--no-submodules",
                "--checkout-dir",
                "src/pytorch",
                "--lock",
            ])
            .arg(&lock)
            .assert()
            .success();
        let staging = env.path("index/staging");
        let build = env.path("build/pytorch");
        crate::common::sample::clone_recursive(
            &env,
            &origins.repo("torch").url,
            "release/2.9",
            &build,
        );
        let wheels = env.path("build/dist");
        run_ok(
            env.command("python3")
                .current_dir(&build)
                .args([
                    "-c",
                    "import sys; sys.path.insert(0, 'tools/build_backend'); import torch_build_backend as b; b.build_wheel(sys.argv[1])",
                ])
                .arg(&wheels)
                .env("USE_ROCM", "OFF")
                .env("PYTORCH_BUILD_VERSION", TORCH)
                .env("PYTORCH_BUILD_NUMBER", "1")
                .env(
                    "PYTORCH_EXTRA_INSTALL_REQUIREMENTS",
                    format!("rocm[libraries]=={SDK}"),
                ),
        );
        let sdk = crate::common::sdk::sdk_index(SDK, &["gfx906"]);
        stage(&env, &staging, &[wheels, sdk.join("wheels")]);
        let server = http::serve(&env.path("index"));
        let requirements = env.path("requirements-test.txt");
        std::fs::write(&requirements, "pytest==9.0.3\npytest-timeout==2.4.0\n").expect("write");
        World {
            sources: env.path("src/pytorch"),
            env,
            lock,
            server,
            requirements,
        }
    }

    fn index(&self) -> String {
        format!("{}staging/", self.server.url())
    }

    /// The arguments of `rockbuild test` against the staging index, offline (pytest from the
    /// wheelhouse).
    fn test_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = ["test", "--index-url", &self.index(), "--pytorch-dir"]
            .iter()
            .map(OsString::from)
            .collect();
        args.push(self.sources.clone().into());
        args.push("--find-links".into());
        args.push(wheelhouse().into());
        args.push("--test-requirements".into());
        args.push(self.requirements.clone().into());
        args
    }

    /// `rockbuild test` with [`Self::test_args`] and `extra`.
    fn test(&self, extra: &[&str]) -> assert_cmd::Command {
        let mut command = self.env.rockbuild();
        command.args(self.test_args()).args(extra);
        command
    }

    /// `rockbuild test-report ARGS`.
    fn test_report(&self, args: &[&str]) -> assert_cmd::assert::Assert {
        self.env.rockbuild().arg("test-report").args(args).assert()
    }

    fn shard(&self, dir: &str) -> Value {
        read_json(&self.env.path(dir).join("shard.json"))
    }
}

/// Copies wheels into `<staging>/<project>/` and writes the index pages with rockbuild.
fn stage(env: &TestEnv, staging: &Path, from: &[PathBuf]) {
    for dir in from {
        for entry in std::fs::read_dir(dir).expect("read wheels") {
            let path = entry.expect("entry").path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !name.ends_with(".whl") {
                continue;
            }
            let project = name
                .split('-')
                .next()
                .expect("name")
                .replace('_', "-")
                .to_lowercase();
            let dest = staging.join(&project);
            std::fs::create_dir_all(&dest).expect("mkdir");
            std::fs::copy(&path, dest.join(name)).expect("copy wheel");
        }
    }
    env.rockbuild().arg("index").arg(staging).assert().success();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())),
    )
    .expect("json")
}

fn stderr(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

fn stdout(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

/// Output with the run's temp paths, port, durations and log noise made stable.
fn normalize(world: &World, text: &str) -> String {
    let mut text = text.to_string();
    // The sample's commits depend on the temp path its pins carry.
    let lock = read_json(&world.lock);
    if let Some(commit) = lock["projects"]["torch"]["commit"].as_str() {
        text = text
            .replace(commit, "[commit]")
            .replace(&commit[..12], "[commit]");
    }
    let mut text = text
        .replace(&world.env.root().display().to_string(), "[root]")
        .replace(&wheelhouse().display().to_string(), "[wheelhouse]")
        .replace(&repo_root().display().to_string(), "[repo]")
        .replace(&format!(":{}/", world.server.port()), ":[port]/");
    // Object addresses in the assertion messages pytest writes (`<function search at 0x7f…>`).
    let mut from = 0;
    while let Some(found) = text[from..].find(" at 0x") {
        let start = from + found + " at ".len();
        let end = text[start + 2..]
            .find(|c: char| !c.is_ascii_hexdigit())
            .map_or(text.len(), |i| start + 2 + i);
        text.replace_range(start..end, "[addr]");
        from = start;
    }
    // rockbuild's own work directory for the shard.
    while let Some(start) = text.find("/tmp/rockbuild-shard-") {
        let name = start + "/tmp/".len();
        let end = text[name..]
            .find(['/', ' ', '\n', '\'', '"'])
            .map_or(text.len(), |i| name + i);
        text.replace_range(start..end, "[work]");
    }
    // Durations (`0.4s`, `1m05s`) in the summary tables become `[T]`; their width moved the
    // columns after them, so runs of spaces after a word and runs of dashes count as one.
    let is_duration = |word: &str| {
        let Some(bare) = word.strip_suffix('s') else {
            return false;
        };
        let digits = |part: &str| !part.is_empty() && part.bytes().all(|c| c.is_ascii_digit());
        bare.split_once('.')
            .is_some_and(|(a, b)| digits(a) && b.len() == 1 && digits(b))
            || bare
                .split_once('m')
                .is_some_and(|(a, b)| digits(a) && b.len() == 2 && digits(b))
    };
    let text = text
        .lines()
        .map(|line| {
            let indent = &line[..line.len() - line.trim_start().len()];
            let words = line.trim_start().split(' ').map(|w| {
                if is_duration(w) {
                    "[T]"
                } else if w.len() > 1 && w.bytes().all(|c| c == b'-') {
                    "--"
                } else {
                    w
                }
            });
            let mut out = indent.to_string();
            let mut gap = 0;
            for word in words {
                if word.is_empty() {
                    gap += 1;
                    continue;
                }
                if out.len() > indent.len() {
                    out.push_str(if gap > 0 { "  " } else { " " });
                }
                gap = 0;
                out.push_str(word);
            }
            out
        })
        .collect::<Vec<_>>()
        .join("\n");
    // Progress lines are for people watching; the summary is what is checked.
    text.lines()
        .filter(|line| !line.starts_with("  test: ") && !line.starts_with("  index: "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The test modules the shard's plan listed (`inductor/test_torchinductor` as
/// `inductor.test_torchinductor`, as the JUnit directories name them), sorted.
fn planned_modules(shard: &Value) -> Vec<String> {
    let mut modules: Vec<String> = shard["times"]["shards"][0]["tests"]
        .as_array()
        .expect("planned tests")
        .iter()
        .filter_map(|t| t.as_str()?.split(' ').next().map(|m| m.replace('/', ".")))
        .collect();
    modules.sort();
    modules.dedup();
    modules
}

/// The test modules a shard's JUnit files cover (`test_torch`, `inductor.test_torchinductor`).
fn junit_modules(shard: &Value) -> Vec<String> {
    let mut modules: Vec<String> = shard["junit"]
        .as_array()
        .expect("junit list")
        .iter()
        .filter_map(|p| p.as_str()?.split('/').nth(2).map(String::from))
        .collect();
    modules.sort();
    modules
}

#[test]
fn run_test_shards_run_the_checkout_and_combine_into_the_report_promote_reads() {
    let world = World::new("release/2.9");
    // Shard 1's venv is kept where the test can look into it.
    let venv = world.env.path("venv-1");
    for (shard, keep) in [
        ("1", vec!["--venv", venv.to_str().expect("utf-8")]),
        ("2", vec![]),
    ] {
        world
            .test(
                &[
                    vec![
                        "--lock",
                        world.lock.to_str().expect("utf-8"),
                        "--shard",
                        shard,
                        "2",
                        "--allow-no-gpu",
                    ],
                    keep,
                ]
                .concat(),
            )
            .assert()
            .success();
    }
    let one = world.shard("test-results/default-1-2");
    let two = world.shard("test-results/default-2-2");
    // run_test.py split the modules between the shards; the hang-listed module never ran.
    let (a, b) = (junit_modules(&one), junit_modules(&two));
    assert!(!a.is_empty() && !b.is_empty(), "{a:?} {b:?}");
    assert!(a.iter().all(|m| !b.contains(m)), "{a:?} {b:?}");
    let mut all: Vec<String> = a.iter().chain(&b).cloned().collect();
    all.sort();
    assert_eq!(
        all,
        [
            "inductor.test_aot_inductor",
            "inductor.test_torchinductor",
            "inductor.test_torchinductor_opinfo",
            "test_autograd",
            "test_binary_ufuncs",
            "test_cuda",
            "test_modules",
            "test_nn",
            "test_ops",
            "test_ops_gradients",
            "test_torch",
            "test_unary_ufuncs"
        ],
        "everything but the distributed tests and the hang-listed nn/test_convolution"
    );
    assert_eq!(
        one["skips"]["excluded_modules"],
        serde_json::json!(["nn/test_convolution"])
    );
    assert_eq!(one["source"]["version"], "2.9.0");
    // PyTorch's own test requirements from the checkout (the sample's
    // .ci/docker/requirements-ci.txt, upstream's numpy lines) are in the test venv, after the
    // short list (TheRock#6384): numpy at the pin for this Python.
    let ci_step = one["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|step| step["name"] == "install PyTorch's requirements-ci.txt")
        .expect("the requirements-ci step");
    assert_eq!(ci_step["result"], "passed", "{ci_step}");
    let numpy = world
        .env
        .command(venv.join("bin/python"))
        .args([
            "-c",
            "import numpy, sys; print(numpy.__version__, sys.version_info[:2])",
        ])
        .output()
        .expect("run the venv's python");
    let numpy = String::from_utf8_lossy(&numpy.stdout).into_owned();
    if numpy.contains("(3, 11)") || numpy.contains("(3, 12)") {
        assert!(numpy.starts_with("1.26.2 "), "{numpy}");
    } else {
        assert!(!numpy.trim().is_empty(), "numpy is installed: {numpy}");
    }
    // No test times (the export could not download them): run_test.py's default sharding,
    // with a note, and the shards ran what the plan listed.
    for shard in [&one, &two] {
        let times = &shard["times"];
        assert!(
            times["note"]
                .as_str()
                .is_some_and(|n| n.contains("wrote no test-times.json")
                    && n.contains("run_test.py's default sharding applies")),
            "{times}"
        );
        assert_eq!(planned_modules(shard), junit_modules(shard), "{times}");
    }
    let export = one["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|step| step["kind"] == "times")
        .expect("the export step");
    assert_eq!(export["result"], "skipped", "{export}");

    // With this ref's times in the cache, the shard runs what run_test.py balances with them
    // (the sample's run_test.py follows upstream's rule), which the plan listed.
    let commit = read_json(&world.lock)["projects"]["torch"]["commit"]
        .as_str()
        .expect("torch commit")
        .to_string();
    let cache = world.env.path("rockbuild-cache/test-times").join(&commit);
    std::fs::create_dir_all(&cache).expect("cache");
    std::fs::write(cache.join("test-times.json"), SAMPLE_TIMES).expect("times");
    world
        .test(&[
            "--lock",
            world.lock.to_str().expect("utf-8"),
            "--shard",
            "1",
            "2",
            "--allow-no-gpu",
            "--output-dir",
            "timed/default-1-2",
        ])
        .assert()
        .success();
    let timed = world.shard("timed/default-1-2");
    assert!(timed["times"]["note"].is_null(), "{}", timed["times"]);
    assert_eq!(
        timed["times"]["source"],
        format!(
            "cached for commit {} (entry linux-noble-rocm-py3.12-mi300 / default)",
            &commit[..12]
        )
    );
    assert_eq!(planned_modules(&timed), junit_modules(&timed));
    assert_ne!(
        planned_modules(&timed),
        planned_modules(&one),
        "balanced by the times"
    );
    assert_eq!(
        std::fs::read_to_string(world.sources.join(".additional_ci_files/test-times.json"))
            .expect("handed to run_test.py"),
        SAMPLE_TIMES
    );
    // The evidence: every file installed from the index under test, SDK included.
    assert_eq!(
        crate::common::tested_wheel_names(&one),
        [
            "torch",
            "rocm-sdk-core",
            "rocm-sdk-libraries",
            "rocm-sdk-devel",
            "rocm"
        ]
    );
    // The SDK's test environment, from the installed rocm[devel] (TheRock's full-suite job):
    // the tests ran with ROCM_HOME at its development tree and its clang as CC/CXX.
    let sdk = &one["sdk_env"];
    let root = sdk["paths"]["root"].as_str().expect("the SDK's root");
    assert!(root.ends_with("/site-packages/_rocm_sdk_devel"), "{root}");
    let variable = |name: &str| {
        sdk["variables"]
            .as_array()
            .expect("variables")
            .iter()
            .find(|pair| pair[0] == name)
            .map(|pair| pair[1].clone())
    };
    assert_eq!(variable("ROCM_HOME"), Some(Value::from(root)));
    assert_eq!(
        variable("CXX"),
        Some(Value::from(format!("{root}/lib/llvm/bin/clang++")))
    );
    let steps: Vec<(&str, &str)> = one["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|step| step["kind"] == "sdk")
        .map(|step| {
            (
                step["name"].as_str().expect("name"),
                step["result"].as_str().expect("result"),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("rocm-sdk init", "passed"),
            ("rocm-sdk path --root", "passed"),
            ("rocm-sdk path --bin", "passed"),
            ("rocm-sdk path --cmake", "passed"),
            ("the ROCm SDK's test environment", "passed")
        ]
    );

    let combined = world
        .test_report(&[
            "test-results",
            "--expect",
            "default",
            "--markdown",
            "summary.md",
            "--json",
        ])
        .success();
    insta::assert_snapshot!(
        "test_report_passed_text",
        normalize(&world, &stderr(&combined))
    );
    insta::assert_snapshot!(
        "test_report_passed_markdown",
        normalize(
            &world,
            &std::fs::read_to_string(world.env.path("summary.md")).expect("markdown")
        )
    );
    let summary: Value = serde_json::from_str(&stdout(&combined)).expect("json summary");
    assert_eq!(summary["result"], "passed");
    // The same report with JSON logs: its tables and summary are JSON lines too.
    let logged = world
        .test_report(&[
            "test-results",
            "--expect",
            "default",
            "--log-format",
            "json",
        ])
        .success();
    assert_json_lines("test-report", &logged.get_output().stderr);
    assert_eq!(summary["shards"].as_array().map(Vec::len), Some(2));
    let report = read_json(&world.env.path("test-report.json"));
    assert_eq!(report["kind"], "test");
    assert_eq!(report["result"], "passed");
    assert_eq!(report["wheels"].as_array().map(Vec::len), Some(5));

    // Promotion on the test report. The staging prefix also holds the SDK's development and
    // device packages, which no test installed: the SDK's wheels are judged by their bytes
    // against the SDK's index, not by tests. Without that index, they are denied by name and
    // nothing is copied; with it, torch and every SDK wheel are promoted.
    let promote = |from: &str, to: &str, extra: &[&str]| {
        world
            .env
            .rockbuild()
            .args(["promote", "--from", from, "--to", to])
            .args(["--test-report", "test-report.json"])
            .args(extra)
            .assert()
    };
    let denied = promote("index/staging", "release", &[]).code(5);
    insta::assert_snapshot!(
        "promote_denied_after_test",
        normalize(&world, &stderr(&denied))
    );
    assert!(!world.env.path("release").exists());
    let sdk_index = format!(
        "file://{}/simple/",
        crate::common::sdk::sdk_index(SDK, &["gfx906"]).display()
    );
    let promoted = promote("index/staging", "release", &["--index-url", &sdk_index]).success();
    assert!(
        stderr(&promoted).contains("promoted 1 wheel and 6 ROCm SDK files"),
        "{}",
        stderr(&promoted)
    );

    // One shard's results missing: the combined report fails, whatever the other says.
    let missing = world
        .test_report(&["test-results/default-1-2", "--report", "partial.json"])
        .code(1);
    insta::assert_snapshot!(
        "test_report_missing_shard",
        normalize(&world, &stderr(&missing))
    );
    let partial = read_json(&world.env.path("partial.json"));
    assert_eq!(partial["result"], "failed");
    assert_eq!(partial["checks"][1]["name"], "default 2/2");
    assert_eq!(
        partial["checks"][1]["detail"],
        "missing: no results for this shard"
    );

    // A config expected but not run at all is missing in full.
    let absent = world
        .test_report(&[
            "test-results",
            "--expect",
            "default",
            "--expect",
            "inductor",
            "--report",
            "absent.json",
        ])
        .code(1);
    assert!(
        stderr(&absent).contains("tests failed: 2 of 4 shards passed, 2 missing"),
        "{}",
        stderr(&absent)
    );
}

#[test]
fn failing_hanging_and_skip_listed_tests_fail_the_shard_and_name_themselves() {
    let world = World::new("release/2.9");
    // A module with a real failure, a hang (stopped by --timeout through pytest-timeout) and
    // a test on the generic skip list (common/autograd) that would hang if it ran.
    std::fs::write(
        world.sources.join("test/test_autograd.py"),
        r#""""Failures for rockbuild's tests."""

import time


def test_grad_accumulates():
    assert 1 + 1 == 2


def test_backward_twice():
    assert [1.0, 2.0] == [1.0, 2.5], "gradients differ after the second backward"


def test_hangs_forever():
    time.sleep(3600)


def test_side_stream_backward_overlap():
    time.sleep(3600)
"#,
    )
    .expect("write");
    let failed = world
        .test(&[
            "--include",
            "test_autograd",
            "test_torch",
            "--timeout",
            "3",
            "--allow-no-gpu",
        ])
        .assert()
        .code(1);
    insta::assert_snapshot!("shard_with_failures", normalize(&world, &stderr(&failed)));
    let shard = world.shard("test-results/default-1-1");
    assert_eq!(shard["result"], "failed");

    // A shard stopped by a signal (a cancelled workflow) says so in its report, and the
    // combined report fails.
    let mut child = world
        .env
        .command(env!("CARGO_BIN_EXE_rockbuild"))
        .args(world.test_args())
        .args([
            "--include",
            "test_autograd",
            "--timeout",
            "0",
            "--allow-no-gpu",
            "--output-dir",
            "cancelled/default-1-1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start rockbuild test");
    let log = world.env.path("cancelled/default-1-1/logs/run_test.log");
    let started = std::time::Instant::now();
    // run_test.py names the module as it starts it (pytest's own output is buffered).
    while !std::fs::read_to_string(&log).is_ok_and(|text| text.contains("Running test_autograd")) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "run_test.py did not start the module"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    run_ok(
        world
            .env
            .command("kill")
            .args(["-TERM", &child.id().to_string()]),
    );
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(128 + 15), "exit 143 after SIGTERM");
    let cancelled = world.shard("cancelled/default-1-1");
    assert_eq!(cancelled["result"], "cancelled");
    world
        .test_report(&["cancelled", "--report", "cancelled.json"])
        .code(1);
    assert_eq!(
        read_json(&world.env.path("cancelled.json"))["result"],
        "failed"
    );

    // --only-skipped runs the skip-listed tests and nothing else: here they still fail.
    let only = world
        .test(&[
            "--include",
            "test_torch",
            "test_nn",
            "--only-skipped",
            "--allow-no-gpu",
            "--output-dir",
            "only-skipped",
        ])
        .assert()
        .code(1);
    let text = stderr(&only);
    assert!(
        text.contains(
            "tests failed: 0 of 1 shard passed, 1 failed; 0 passed, 0 skipped, 2 failed, 0 errors"
        ),
        "{text}"
    );
    assert!(
        text.contains("test_torch.test_print") && text.contains("test_nn.test_RNN_dropout_state"),
        "{text}"
    );
}

#[test]
fn distributed_and_inductor_configs_run_as_upstream_ci_does() {
    let world = World::new("release/2.9");
    world
        .test(&["--test-config", "distributed", "--allow-no-gpu"])
        .assert()
        .success();
    let distributed = world.shard("test-results/distributed-1-1");
    assert_eq!(
        junit_modules(&distributed),
        ["distributed.test_c10d_common"]
    );

    world
        .test(&["--test-config", "inductor", "--allow-no-gpu"])
        .assert()
        .success();
    let inductor = world.shard("test-results/inductor-1-1");
    let steps: Vec<&str> = inductor["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        steps,
        [
            "check the runner",
            "create venv",
            "install torch and the test requirements",
            "install PyTorch's requirements-ci.txt",
            "record the installed wheels",
            "rocm-sdk test",
            "rocm-sdk init",
            "rocm-sdk path --root",
            "rocm-sdk path --bin",
            "rocm-sdk path --cmake",
            "the ROCm SDK's test environment",
            "query the GPUs",
            "select the GPUs",
            "verify_dynamo.py",
            "run_test.py (inductor: generic tests with --inductor)",
            "run_test.py (inductor: unit tests)",
            "collect JUnit"
        ]
    );
    // The generic tests check they ran with --inductor, the unit tests that they did not.
    assert_eq!(
        junit_modules(&inductor),
        [
            "inductor.test_aot_inductor",
            "inductor.test_torchinductor",
            "inductor.test_torchinductor_opinfo",
            "test_modules",
            "test_ops",
            "test_ops_gradients",
            "test_torch"
        ]
    );
}

#[test]
fn the_gpu_smoke_suite_reports_gpu_checks_skipped_without_a_gpu_never_passed() {
    let mut world = World::new("release/2.9");
    let run = world
        .test(&["--test-config", "gpu-smoke", "--allow-no-gpu"])
        .assert()
        .code(1);
    let shard = world.shard("test-results/gpu-smoke-1-1");
    let junit_dir = world.env.path("test-results/gpu-smoke-1-1");
    let path = shard["junit"][0].as_str().expect("junit file");
    let text = std::fs::read_to_string(junit_dir.join(path)).expect("junit");
    // Every GPU check is skipped with the reason; the CPU and preload checks ran (and fail on
    // this CPU-only sample torch, built without the SDK: no OpenBLAS, no ROCm preload).
    let gpu_checks = [
        "TestROCmAvailability",
        "TestMatrixOperations",
        "TestConvolutions",
    ];
    let mut skipped = 0;
    for case in text.split("<testcase ").skip(1) {
        let gpu = gpu_checks
            .iter()
            .any(|c| case.contains(&format!("classname=\"test_gpu_smoke.{c}\"")));
        if gpu {
            assert!(
                case.contains("<skipped")
                    && case.contains("no GPU: this torch is not a ROCm build"),
                "a GPU check was not skipped with its reason: {case}"
            );
            skipped += 1;
        } else {
            assert!(
                !case.contains("<skipped"),
                "a CPU check was skipped: {case}"
            );
        }
    }
    assert_eq!(skipped, 11);
    insta::assert_snapshot!("gpu_smoke_without_gpu", normalize(&world, &stderr(&run)));

    // Without --allow-no-gpu, on a runner whose driver lists a GPU that this torch cannot use,
    // no GPU is a failure of the wheel before any test runs (not the runner's: exit 1, not 8).
    let navi = world.env.path("navi");
    crate::common::sysfs::rdna3(&navi);
    world
        .env
        .set("ROCKBUILD_SYSFS_ROOT", navi.to_str().expect("utf-8"));
    let refused = world
        .test(&["--test-config", "gpu-smoke", "--output-dir", "refused"])
        .assert()
        .code(1);
    let text = stderr(&refused);
    assert!(
        text.contains("no GPU to test on: this torch is not a ROCm build (torch.version.hip is None); run on a GPU runner, or pass --allow-no-gpu"),
        "{text}"
    );
    let shard = world.shard("refused");
    assert_eq!(shard["result"], "failed");
    assert_eq!(shard["junit"], serde_json::json!([]));
}

/// A torch as a four-GPU node reports itself: two MI300s, a Navi31, an MI200 this build has no
/// code for. Like HIP it shows only the devices HIP_VISIBLE_DEVICES names, renumbered from 0,
/// and fails when GPU_DEVICE_ORDINAL conflicts with it.
fn node_torch(dir: &Path) {
    WheelBuilder::new("torch", TORCH)
        .replace(
            "torch/__init__.py",
            "from . import cuda, version\n__version__ = version.__version__\n",
        )
        .file(
            "torch/version.py",
            format!("__version__ = '{TORCH}'\nhip = '7.10.0'\n"),
        )
        .file(
            "torch/cuda/__init__.py",
            r#"import os

_SYSTEM = ["gfx942:sramecc+:xnack-", "gfx942:sramecc+:xnack-", "gfx1100", "gfx90a:sramecc+:xnack-"]


class _Properties:
    def __init__(self, arch):
        self.gcnArchName = arch


def _visible():
    ids = os.environ.get("HIP_VISIBLE_DEVICES")
    if ids is not None and "GPU_DEVICE_ORDINAL" in os.environ:
        raise RuntimeError("HIP: GPU_DEVICE_ORDINAL conflicts with HIP_VISIBLE_DEVICES")
    if ids is None:
        return list(_SYSTEM)
    return [_SYSTEM[int(i)] for i in ids.split(",") if i.strip()]


def is_available():
    return bool(_visible())


def device_count():
    return len(_visible())


def get_arch_list():
    return ["gfx942", "gfx1100"]


def get_device_properties(index):
    return _Properties(_visible()[index])
"#,
        )
        .build(dir);
}

/// The node [`node_torch`] reports, as the kernel describes it: two MI300X (gfx942), a Navi 31
/// (gfx1100) and an MI250X (gfx90a), the driver loaded.
fn four_gpu_runner(world: &mut World) {
    use crate::common::sysfs::{FakeSysfs, KfdGpu};
    let root = world.env.path("node-runner");
    FakeSysfs::new(&root)
        .with_host_devices()
        .with_kfd()
        .cpu_node(0, 64)
        .gpu_node(1, &KfdGpu::new(90402, 0x74a1, 0x05), 0x120000)
        .gpu_node(2, &KfdGpu::new(90402, 0x74a1, 0x15), 0x120000)
        .gpu_node(3, &KfdGpu::new(110000, 0x744c, 0x25), 0x030000)
        .gpu_node(4, &KfdGpu::new(90010, 0x740c, 0x35), 0x038000);
    world
        .env
        .set("ROCKBUILD_SYSFS_ROOT", root.to_str().expect("utf-8"));
}

#[test]
fn gpus_are_chosen_from_the_device_query_before_the_tests_import_torch() {
    let mut world = World::new("release/2.9");
    four_gpu_runner(&mut world);
    let node = world.env.path("index/node");
    node_torch(&world.env.path("build/node"));
    // With the SDK, as a staged prefix holds it: the configs that compile install rocm[devel].
    stage(
        &world.env,
        &node,
        &[
            world.env.path("build/node"),
            crate::common::sdk::sdk_index(SDK, &["gfx906"]).join("wheels"),
        ],
    );
    let index = format!("{}node/", world.server.url());
    let run = |world: &World, dir: &str, extra: &[&str]| -> Value {
        // The smoke suite fails against this torch (it has no tensors); what matters here
        // is which devices each run saw.
        let _ = world
            .env
            .rockbuild()
            .args(["test", "--index-url", &index, "--output-dir", dir])
            .arg("--pytorch-dir")
            .arg(&world.sources)
            .arg("--find-links")
            .arg(wheelhouse())
            .arg("--test-requirements")
            .arg(&world.requirements)
            .args(extra)
            .assert();
        world.shard(dir)
    };
    let devices = |shard: &Value| -> (Value, Vec<String>) {
        let runs = shard["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .filter(|s| s["kind"] == "run")
            .map(|s| s["name"].as_str().expect("name").to_string())
            .collect();
        (shard["gpus"]["hip_visible_devices"].clone(), runs)
    };

    // The smoke suite runs once per target (unique), one device visible at a time.
    let shard = run(&world, "smoke", &["--test-config", "gpu-smoke"]);
    assert_eq!(
        devices(&shard),
        (
            serde_json::json!("0"),
            vec![
                "GPU smoke on 0 (gfx942)".to_string(),
                "GPU smoke on 2 (gfx1100)".to_string()
            ]
        )
    );
    // A family filter with TheRock's wildcard rule.
    let shard = run(
        &world,
        "navi",
        &[
            "--test-config",
            "gpu-smoke",
            "--amdgpu-family",
            "gfx110X-all",
        ],
    );
    assert_eq!(
        devices(&shard).1,
        ["GPU smoke on 2 (gfx1100)"],
        "only the Navi31"
    );
    assert_eq!(shard["gpus"]["archs"], serde_json::json!(["gfx1100"]));

    // Distributed: every supported device at once.
    let shard = run(&world, "everything", &["--test-config", "distributed"]);
    assert_eq!(devices(&shard).0, serde_json::json!("0,1,2"));
    assert_eq!(shard["result"], "passed", "{shard:#}");

    // The job was given devices 1-3 and a conflicting GPU_DEVICE_ORDINAL: torch numbers the
    // three from 0; the selection names the system devices, and the ordinal is dropped.
    world.env.set("HIP_VISIBLE_DEVICES", "1,2,3");
    world.env.set("GPU_DEVICE_ORDINAL", "1");
    let shard = run(&world, "preset", &["--test-config", "gpu-smoke"]);
    assert_eq!(
        devices(&shard).1,
        ["GPU smoke on 1 (gfx942)", "GPU smoke on 2 (gfx1100)"]
    );
    assert_eq!(
        shard["gpus"]["notes"],
        serde_json::json!(["GPU_DEVICE_ORDINAL=1 removed (HIP_VISIBLE_DEVICES takes precedence)"])
    );
    let shard = run(&world, "distributed", &["--test-config", "distributed"]);
    assert_eq!(devices(&shard).0, serde_json::json!("1,2"));
    assert_eq!(shard["result"], "passed", "{shard:#}");
}

#[test]
fn print_skips_and_dry_run_show_what_a_run_would_do() {
    let env = TestEnv::new();
    // No index, no checkout: which lists apply to PyTorch 2.13 on MI355 on Linux, and why.
    let skips = env
        .rockbuild()
        .args([
            "test",
            "--print-skips",
            "--pytorch-version",
            "2.13",
            "--amdgpu-family",
            "gfx950-dcgpu",
            "--platform",
            "linux",
        ])
        .assert()
        .success();
    insta::assert_snapshot!("print_skips_2_13_gfx950", stdout(&skips));
    let json = env
        .rockbuild()
        .args([
            "test",
            "--print-skips",
            "--json",
            "--pytorch-version",
            "2.12",
        ])
        .assert()
        .success();
    let value: Value = serde_json::from_str(&stdout(&json)).expect("json");
    let names: Vec<&str> = value["names"]
        .as_array()
        .expect("names")
        .iter()
        .map(|n| n.as_str().expect("name"))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "sorted, each once");
    assert!(
        names.len() > 172,
        "generic and 2.12 together: {}",
        names.len()
    );

    let world = World::new("release/2.9");
    let plan = world
        .test(&[
            "--dry-run",
            "--lock",
            world.lock.to_str().expect("utf-8"),
            "--shard",
            "2",
            "6",
            "--amdgpu-family",
            "gfx94X-dcgpu",
            "--",
            "-x",
        ])
        .assert()
        .success();
    insta::assert_snapshot!("dry_run_plan", normalize(&world, &stdout(&plan)));

    // With this ref's test times in the cache (what an earlier shard's export wrote), the plan
    // shows the shard's tests as run_test.py balances them: the MI300 times of the default
    // config, test_nn split into two pytest shards.
    let commit = read_json(&world.lock)["projects"]["torch"]["commit"]
        .as_str()
        .expect("torch commit")
        .to_string();
    let cache = world.env.path("rockbuild-cache/test-times").join(&commit);
    std::fs::create_dir_all(&cache).expect("cache");
    std::fs::write(cache.join("test-times.json"), SAMPLE_TIMES).expect("times");
    let with_times = world
        .test(&[
            "--dry-run",
            "--lock",
            world.lock.to_str().expect("utf-8"),
            "--shard",
            "2",
            "3",
            "--amdgpu-family",
            "gfx94X-dcgpu",
        ])
        .assert()
        .success();
    insta::assert_snapshot!(
        "dry_run_plan_with_test_times",
        normalize(&world, &stdout(&with_times))
    );
    // A cached file run_test.py could not use (no entry for the build environment and no
    // `default`: a KeyError in run_test.py) is not handed over; the run exports again.
    std::fs::write(
        cache.join("test-times.json"),
        r#"{"linux-jammy-rocm-py3.10-mi200": {}}"#,
    )
    .expect("times");
    let unusable = world
        .test(&[
            "--dry-run",
            "--lock",
            world.lock.to_str().expect("utf-8"),
            "--shard",
            "2",
            "3",
            "--amdgpu-family",
            "gfx94X-dcgpu",
        ])
        .assert()
        .success();
    assert!(
        stderr(&unusable).contains(&format!(
            "the cached test times are unusable ({}: no default times for \
             linux-noble-rocm-py3.12-mi300 and no `default` entry (run_test.py would stop with a \
             KeyError)); the run exports them again",
            cache.join("test-times.json").display()
        )),
        "{}",
        stderr(&unusable)
    );
    assert!(
        stdout(&unusable).contains("exported when the run starts"),
        "{}",
        stdout(&unusable)
    );

    // The quick subset (TheRock #6536): run_test.py's default config on its modules only.
    let quick = world
        .test(&["--dry-run", "--json", "--test-config", "quick"])
        .assert()
        .success();
    let quick: Value = serde_json::from_str(&stdout(&quick)).expect("json plan");
    let env_value = |name: &str| {
        quick["env"]
            .as_array()
            .expect("env")
            .iter()
            .find(|line| line["name"] == name)
            .map(|line| line["value"].clone())
    };
    assert_eq!(env_value("TEST_CONFIG"), Some(Value::from("default")));
    let runs: Vec<String> = quick["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|step| step["kind"] == "run")
        .map(|step| {
            let args: Vec<&str> = step["args"]
                .as_array()
                .expect("args")
                .iter()
                .map(|a| a.as_str().expect("arg"))
                .collect();
            args.join(" ")
        })
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        runs[0].contains(
            " --include test_nn test_torch test_cuda test_unary_ufuncs test_binary_ufuncs test_autograd "
        ),
        "{}",
        runs[0]
    );
    let outside = world
        .test(&[
            "--dry-run",
            "--test-config",
            "quick",
            "--include",
            "test_ops",
        ])
        .assert()
        .failure();
    assert!(
        stderr(&outside).contains(
            "--include: none of these modules is in the quick config's lists (test_nn, test_torch"
        ),
        "{}",
        stderr(&outside)
    );
    assert!(
        !world.env.path("test-results").exists(),
        "a dry run writes nothing"
    );
}

/// A multi-arch set (the lock's record says so) is tested with the device wheels of the
/// family under test: torch's host wheel alone has no kernels (TheRock RELEASES.md installs
/// `torch[device-gfxNNN]`); a family the set has no device wheels for is refused.
#[test]
fn a_multi_arch_set_is_tested_with_the_familys_device_extras() {
    let world = World::new("release/2.9");
    let mut lock = read_json(&world.lock);
    lock["build"] = serde_json::json!({
        "sdk_version": SDK,
        "targets": ["gfx906", "gfx1030"],
        "mode": "multi-arch",
        "versions": {"torch": TORCH},
    });
    let multi = world.env.path("multi-arch.lock.json");
    std::fs::write(&multi, serde_json::to_string(&lock).expect("json")).expect("write");
    let multi = multi.to_str().expect("utf-8");
    let requirement = |family: &[&str]| {
        let plan = world
            .test(&[&["--dry-run", "--json", "--lock", multi][..], family].concat())
            .assert()
            .success();
        let plan: Value = serde_json::from_str(&stdout(&plan)).expect("json plan");
        plan["install"]["requirements"][0].clone()
    };
    assert_eq!(
        requirement(&["--amdgpu-family", "gfx103X-all"]),
        Value::from(format!("torch[device-gfx1030]=={TORCH}"))
    );
    assert_eq!(
        requirement(&[]),
        Value::from(format!("torch[device-all]=={TORCH}"))
    );
    let other = world
        .test(&[
            "--dry-run",
            "--lock",
            multi,
            "--amdgpu-family",
            "gfx94X-dcgpu",
        ])
        .assert()
        .failure();
    assert!(
        stderr(&other).contains(
            "the lock's multi-arch set has device wheels for gfx906,gfx1030 only, none of this family's targets"
        ),
        "{}",
        stderr(&other)
    );
}

#[test]
fn bad_inputs_are_errors_that_say_what_to_do() {
    let world = World::new("main");
    let bad_lists = world.env.path("skips");
    std::fs::create_dir_all(&bad_lists).expect("mkdir");
    std::fs::write(
        bad_lists.join("mine.yaml"),
        "schema: 1\npytorch: [\"2.9\"]\nskip:\n  gfx94:\n    cuda: [test_a]\n",
    )
    .expect("write");
    let cases: Vec<(&str, Vec<String>)> = vec![
        // main is 2.10.0a0; the staged torch is 2.9.0.
        ("version mismatch", vec![]),
        (
            "allowed mismatch, dry run",
            vec![
                "--allow-version-mismatch".into(),
                "--dry-run".into(),
                "--json".into(),
            ],
        ),
        ("bad shard", vec!["--shard".into(), "3".into(), "2".into()]),
        (
            "unknown family",
            vec!["--amdgpu-family".into(), "navi31".into()],
        ),
        (
            "bad skip list",
            vec!["--skip-lists".into(), bad_lists.display().to_string()],
        ),
        (
            "include with gpu-smoke",
            vec![
                "--test-config".into(),
                "gpu-smoke".into(),
                "--include".into(),
                "test_nn".into(),
            ],
        ),
    ];
    let mut out = String::new();
    for (name, args) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let assert = world.test(&args).assert();
        let code = assert.get_output().status.code().unwrap_or(-1);
        let text = if *name == "allowed mismatch, dry run" {
            let plan: Value = serde_json::from_str(&stdout(&assert)).expect("json plan");
            plan["version_check"].as_str().expect("check").to_string()
        } else {
            stderr(&assert)
        };
        out.push_str(&format!(
            "## {name} (exit {code})\n{}\n",
            normalize(&world, &text)
        ));
    }
    // Sources that moved on from the locked commit.
    let moved = World::new("release/2.9");
    std::fs::write(moved.sources.join("version.txt"), "2.9.0\n").expect("write");
    run_ok(moved.env.command("git").current_dir(&moved.sources).args([
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "moved",
    ]));
    let assert = moved
        .test(&["--lock", moved.lock.to_str().expect("utf-8")])
        .assert()
        .code(2);
    out.push_str(&format!(
        "## commit mismatch (exit 2)\n{}\n",
        normalize(&moved, &stderr(&assert))
            .lines()
            .map(|line| {
                // Commit SHAs depend on the temp path baked into the sample origins.
                line.split(' ')
                    .map(|w| {
                        let bare = w.trim_end_matches([',', ':']);
                        if bare.len() == 40 && bare.bytes().all(|b| b.is_ascii_hexdigit()) {
                            w.replace(bare, "[sha]")
                        } else {
                            w.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect::<Vec<_>>()
            .join("\n")
    ));
    // test-report inputs.
    let empty = world.env.path("empty");
    std::fs::create_dir_all(&empty).expect("mkdir");
    for (name, args) in [
        ("no shards", vec!["test-report", "empty"]),
        (
            "bad expectation",
            vec!["test-report", "empty", "--expect", "defualt=6"],
        ),
    ] {
        let assert = world.env.rockbuild().args(&args).assert();
        out.push_str(&format!(
            "## {name} (exit {})\n{}\n",
            assert.get_output().status.code().unwrap_or(-1),
            normalize(&world, &stderr(&assert))
        ));
    }
    insta::assert_snapshot!("test_errors", out);
}

#[test]
fn a_runner_that_cannot_run_the_suite_is_unfit_not_a_test_failure() {
    let mut world = World::new("release/2.9");
    let mut out = String::new();
    // A desktop with a Navi 31 asked to test the MI300 family; then a VM with no GPU asked to
    // run the suite that needs one.
    let navi = world.env.path("navi");
    crate::common::sysfs::rdna3(&navi);
    world
        .env
        .set("ROCKBUILD_SYSFS_ROOT", navi.to_str().expect("utf-8"));
    let wrong_family = world
        .test(&[
            "--amdgpu-family",
            "gfx94X-dcgpu",
            "--allow-no-gpu",
            "--output-dir",
            "navi-results",
        ])
        .assert()
        .code(8);
    out.push_str(&format!(
        "## another family (exit 8)\n{}\n",
        normalize(&world, &stderr(&wrong_family))
    ));
    let shard = world.shard("navi-results");
    assert_eq!(shard["result"], "failed");
    assert!(
        shard["unfit"].as_str().is_some_and(
            |why| why.starts_with("none of the runner's GPUs is of family gfx94X-dcgpu")
        ),
        "{shard:#}"
    );
    assert_eq!(shard["runner"]["gpus"][0]["target"], "gfx1100");
    assert_eq!(
        shard["wheels"],
        serde_json::json!([]),
        "nothing installed, nothing tested"
    );
    let vm = world.env.path("vm");
    crate::common::sysfs::no_gpu(&vm);
    world
        .env
        .set("ROCKBUILD_SYSFS_ROOT", vm.to_str().expect("utf-8"));
    let no_gpu = world.test(&["--output-dir", "vm-results"]).assert().code(8);
    out.push_str(&format!(
        "## no GPU (exit 8)\n{}\n",
        normalize(&world, &stderr(&no_gpu))
    ));
    let plan = world.test(&["--dry-run"]).assert().success();
    out.push_str(&format!(
        "## the dry run says so\n{}\n",
        normalize(&world, &stdout(&plan))
            .lines()
            .filter(|line| line.starts_with("  runner:") || line.contains("UNFIT"))
            .collect::<Vec<_>>()
            .join("\n")
    ));
    // Combined, the shard is "runner unfit": the report fails (never evidence), and says why.
    let combined = world
        .test_report(&["vm-results", "--report", "unfit.json"])
        .code(1);
    out.push_str(&format!(
        "## test-report\n{}\n",
        normalize(&world, &stderr(&combined))
    ));
    insta::assert_snapshot!("runner_unfit", out);
}
