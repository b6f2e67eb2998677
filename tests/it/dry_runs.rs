//! Dry runs read no package index: each verb's `--dry-run` succeeds with an index URL that
//! nothing listens on, prints its plan and leaves nothing behind. (`smoke --dry-run` reads
//! the index by design: the set it prints is the one the index lists.)

use crate::common::{TestEnv, snapshot};

/// Port 1 on the loopback: nothing listens there, so any request fails at once.
const CLOSED: &str = "http://127.0.0.1:1/simple/";

fn stdout(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

#[test]
fn dry_runs_with_a_closed_index_succeed() {
    let mut env = TestEnv::new();
    let out = env.path("out");
    // The runner `test` checks, as `detect` reads it: no AMD GPU, whatever this host has.
    let runner = env.path("runner");
    crate::common::sysfs::no_gpu(&runner);
    env.set("ROCKBUILD_SYSFS_ROOT", runner.to_str().expect("utf-8"));

    // install-rocm: no preflight; the version is the newest match when the install runs.
    let newest = env
        .rockbuild()
        .args(["install-rocm", "--dry-run", "--index-url", CLOSED])
        .arg("--output-dir")
        .arg(&out)
        .assert()
        .success();
    // ... or the one an exact --rocm-sdk-version pins.
    let pinned = env
        .rockbuild()
        .args(["install-rocm", "--dry-run", "--index-url", CLOSED])
        .args([
            "--rocm-sdk-version",
            "==7.10.0a20251124",
            "--installer",
            "uv",
        ])
        .arg("--output-dir")
        .arg(&out)
        .assert()
        .success();

    // test: without a lock, the torch version is the index's newest when the run starts.
    let test = env
        .rockbuild()
        .args(["test", "--dry-run", "--index-url", CLOSED])
        .args(["--test-config", "gpu-smoke", "--pytorch-version", "2.9"])
        .arg("--output-dir")
        .arg(&out)
        .assert()
        .success();
    // Without a version to choose skip lists by, it says what to pass instead of reading.
    let unknown = env
        .rockbuild()
        .args(["test", "--dry-run", "--index-url", CLOSED])
        .args(["--test-config", "gpu-smoke"])
        .assert()
        .code(2);

    assert!(!out.exists(), "a dry run writes nothing");
    let text = format!(
        "$ rockbuild install-rocm --dry-run\n{}\n$ rockbuild install-rocm --dry-run --rocm-sdk-version ==7.10.0a20251124 --installer uv\n{}\n$ rockbuild test --dry-run --test-config gpu-smoke --pytorch-version 2.9\n{}\n$ rockbuild test --dry-run --test-config gpu-smoke\n{}",
        stdout(&newest),
        stdout(&pinned),
        stdout(&test),
        String::from_utf8_lossy(&unknown.get_output().stderr)
    )
    .replace(env!("CARGO_MANIFEST_DIR"), "[REPO]");
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("dry_runs_closed_index", text));
}

/// The test plan holds the setup's commands (venv, install, device query) as the run walks
/// them: printed, an index URL's credentials are masked (text and JSON); a `--venv` holding
/// files that are not a venv is refused by the plan, before anything runs.
#[test]
fn the_test_plan_shows_its_setup_masks_credentials_and_refuses_a_foreign_venv() {
    let env = TestEnv::new();
    let secret = "http://user:s3cret@127.0.0.1:1/simple/";
    let args = [
        "test",
        "--dry-run",
        "--index-url",
        secret,
        "--test-config",
        "gpu-smoke",
        "--pytorch-version",
        "2.9",
    ];
    let text = stdout(&env.rockbuild().args(args).assert().success());
    let json = stdout(&env.rockbuild().args(args).arg("--json").assert().success());
    for printed in [&text, &json] {
        assert!(
            !printed.contains("s3cret"),
            "credentials printed:\n{printed}"
        );
    }
    assert!(
        text.contains("-m pip install --report") && text.contains("-c \"$DEVICE_QUERY\""),
        "{text}"
    );
    let plan: serde_json::Value = serde_json::from_str(&json).expect("json");
    let install = &plan["setup"]["install"];
    assert_eq!(install["installer"], true, "{install}");
    assert!(
        install["args"]
            .as_array()
            .expect("args")
            .iter()
            .any(|arg| arg.as_str().is_some_and(|a| a.contains("//****@127.0.0.1"))),
        "{install}"
    );

    let foreign = env.path("not-a-venv");
    fs_err::create_dir_all(&foreign).expect("mkdir");
    fs_err::write(foreign.join("notes.txt"), "keep me").expect("write");
    let refused = env
        .rockbuild()
        .args(args)
        .arg("--venv")
        .arg(&foreign)
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(
        stderr.contains("is not empty and is not a venv"),
        "{stderr}"
    );
    assert!(foreign.join("notes.txt").is_file(), "nothing removed");
}
