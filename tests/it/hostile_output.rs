//! Hostile output: text from outside printed in a GitHub Actions job (log lines, annotations,
//! the step summary) never becomes a workflow command or raw Markdown and HTML; a failure is
//! never exit 0; errors say exactly what is wrong (docs/reliability.md lists the promises
//! these tests prove).

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::git::StackWorld;
use crate::common::s3::S3Server;
use crate::common::wheels::{WheelBuilder, cpu_library, hip_library};
use crate::common::{TestEnv, snapshot};
use crate::publish::gpu_world;

/// What an attacker writes where rockbuild may print it: a line of its own that the runner
/// would read as an error annotation, the older `##[` syntax, and HTML for the summary.
const PAYLOAD: &str = "\n::error title=pwned::PWNED ##[add-mask]PWNED <img src=x onerror=alert(1)>";

/// Fails when `text` holds a workflow command rockbuild did not write itself: a line that
/// starts (after spaces) with `::` and is not one of rockbuild's commands with a clean title,
/// or a `##[` anywhere.
#[track_caller]
fn no_command_injected(title: &str, text: &str) {
    for line in text.lines() {
        assert!(!line.contains("##["), "{title}: `##[` in a line: {line}");
        let Some(command) = line.trim_start().strip_prefix("::") else {
            continue;
        };
        let (name, _) = command.split_once("::").unwrap_or((command, ""));
        assert!(
            ["error title=", "warning", "notice", "group", "endgroup"]
                .iter()
                .any(|own| name.starts_with(own))
                && !name.contains("pwned"),
            "{title}: a workflow command from outside: {line}"
        );
    }
}

/// Runs a command in a GitHub Actions job; checks its output and returns it (stderr).
fn in_actions(env: &TestEnv, title: &str, command: &mut assert_cmd::Command) -> String {
    let output: Output = command
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", env.path("summary.md"))
        .output()
        .expect("run rockbuild");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    no_command_injected(title, &stdout);
    no_command_injected(title, &stderr);
    assert!(
        stderr.contains("PWNED") || stdout.contains("PWNED"),
        "{title}: the payload is shown (escaped): {stderr}"
    );
    stderr.into_owned()
}

/// The three-project set of a release, with the GPU code the stack's targets need.
fn release(dir: &Path) -> Vec<PathBuf> {
    vec![
        WheelBuilder::new("torch", "2.10.0+rocm7.13.0")
            .file_from(
                "torch/lib/libtorch_hip.so",
                &hip_library(&["gfx906", "gfx1030"]),
            )
            .requires("triton==3.5.0")
            .build(dir),
        WheelBuilder::new("triton", "3.5.0")
            .file_from("triton/_C/libtriton.so", &cpu_library(None))
            .build(dir),
        WheelBuilder::new("torchvision", "0.25.0+rocm7.13.0")
            .file_from("torchvision/_C.so", &hip_library(&["gfx906", "gfx1030"]))
            .requires("torch==2.10.0+rocm7.13.0")
            .build(dir),
    ]
}

#[test]
fn text_from_outside_never_becomes_a_workflow_command() {
    let world = gpu_world();
    let env = &world.env;

    // A wheel's file name (the input of verify) and its METADATA (a version that is not one).
    let dist = env.path("dist");
    let wheels = release(&dist);
    let renamed = dist.join(format!("torch{PAYLOAD}-1.0-py3-none-any.whl"));
    std::fs::copy(&wheels[0], &renamed).expect("copy");
    let mut verify = env.rockbuild();
    verify
        .args(["verify", "--targets", "gfx906,gfx1030"])
        .arg(&dist);
    in_actions(env, "verify: a wheel's file name", &mut verify);
    // METADATA's Version folded onto a line of its own (a header continuation).
    WheelBuilder::new("triton", "3.5.0\n ::error title=pwned::PWNED")
        .file_name_version("3.5.0")
        .build(&env.path("metadata"));
    let mut verify = env.rockbuild();
    verify.arg("verify").arg(env.path("metadata"));
    in_actions(env, "verify: a wheel's METADATA", &mut verify);

    // A JUnit test name (the evidence) and a waiver's reason, shown by promote's gate.
    let staged = env.path("dist-ok");
    release(&staged);
    env.rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "dist-ok",
            "--to",
            "staged",
        ])
        .args(["--targets", "gfx906,gfx1030"])
        .assert()
        .success();
    let junit = format!(
        "<?xml version=\"1.0\"?>\n<testsuite name=\"t\" tests=\"1\" failures=\"1\">\n  \
         <testcase classname=\"test_ops\" name=\"test_x{}\">\n    \
         <failure message=\"boom\">boom</failure>\n  </testcase>\n</testsuite>\n",
        escape_xml(PAYLOAD)
    );
    std::fs::write(env.path("junit.xml"), junit).expect("junit");
    std::fs::write(
        env.path("waivers.yaml"),
        format!(
            "waivers:\n  - wheel: \"*\"\n    owner: ci@example.com\n    reason: {}\n    \
             expires: 2099-12-31\n",
            serde_json::to_string(&format!("flaky{PAYLOAD}")).expect("json")
        ),
    )
    .expect("waivers");
    let mut promote = env.rockbuild();
    promote.args([
        "promote",
        "--from",
        "staged",
        "--to",
        "release",
        "--test-report",
        "junit.xml",
        "--waiver",
        "waivers.yaml",
        "--dry-run",
    ]);
    in_actions(
        env,
        "promote: a test name and a waiver's reason",
        &mut promote,
    );

    // A lease's holder, read from the store.
    let s3 = S3Server::start(&env.path("s3"));
    let holder = serde_json::json!({
        "verb": "stage",
        "host": format!("build-7{PAYLOAD}"),
        "pid": 4242,
        "started": "2026-01-01T00:00:00Z",
        "expires": 4_102_444_800i64,
        "token": "someone-else",
    });
    s3.plant(
        "staging/.rockbuild-lease",
        serde_json::to_string(&holder).expect("json").as_bytes(),
    );
    let mut stage = env.rockbuild();
    stage
        .envs(s3.env())
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "dist-ok",
            "--to",
        ])
        .arg(s3.url("staging"))
        .args(s3.store_args())
        .args(["--targets", "gfx906,gfx1030"]);
    in_actions(env, "stage: a lease's host", &mut stage);

    // A repository's file: torch's triton_version.txt, read for --release.
    let stack = StackWorld::new(env);
    stack.torch.write(
        ".ci/docker/triton_version.txt",
        &format!("3.4.0{PAYLOAD}\n"),
    );
    stack.torch.commit("a hostile triton version");
    stack.torch.publish();
    let mut lock = env.rockbuild();
    lock.args(["lock", "--lock", "ws/l.json", "--release", "--config"])
        .arg(&stack.config)
        .args(["--project", "torch", "--project", "triton"]);
    in_actions(env, "lock: triton_version.txt", &mut lock);

    // Everything in the step summary is text: no HTML, no command, the payload escaped.
    let summary = std::fs::read_to_string(env.path("summary.md")).expect("summary");
    assert!(summary.contains("PWNED"), "{summary}");
    assert!(
        !summary.contains("<img"),
        "raw HTML in the summary:\n{summary}"
    );
    snapshot::settings(env).bind(|| {
        insta::assert_snapshot!("hostile_step_summary", summary);
    });
}

fn escape_xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\n', "&#10;")
}

/// The exit code and the error lines of a run (progress lines of parallel projects left out).
#[track_caller]
fn exit_and_error(env: &TestEnv, title: &str, output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{title}: exit 0\n{stderr}");
    let error: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("error") || l.starts_with("  caused by") || l.starts_with('['))
        .collect();
    format!(
        "## {title}\nexit {}\n{}\n",
        output
            .status
            .code()
            .map_or("signal".into(), |c| c.to_string()),
        crate::common::scrub(&error.join("\n"), env)
    )
}

#[test]
fn a_failure_is_never_exit_0() {
    let world = gpu_world();
    let env = &world.env;
    let mut out = String::new();

    // Data that cannot be written: a full disk, a closed standard output.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let output = env
        .command(env!("CARGO_BIN_EXE_rockbuild"))
        .arg("presets")
        .stdout(full)
        .output()
        .expect("run");
    out.push_str(&exit_and_error(env, "presets > /dev/full", &output));
    // A reader that went away (`rockbuild matrix | head -c0`): the write fails with EPIPE.
    let mut child = env
        .command(env!("CARGO_BIN_EXE_rockbuild"))
        .args(["matrix", "--release-type", "nightly"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    out.push_str(&exit_and_error(env, "matrix whose reader is gone", &output));

    // retag into a name another, different wheel holds.
    let dist = env.path("retag");
    let built = WheelBuilder::new("triton", "3.5.0")
        .file_from("triton/_C/libtriton.so", &cpu_library(None))
        .build(&dist);
    let taken = dist.join("triton-3.5.0-cp311-cp311-manylinux_2_28_x86_64.whl");
    let other = WheelBuilder::new("triton", "3.5.0")
        .tag("cp311-cp311-manylinux_2_28_x86_64")
        .file("triton/other.py", "other = True\n")
        .build(&env.path("other"));
    std::fs::copy(&other, &taken).expect("copy");
    let before = crate::common::pyindex::sha256_file(&taken);
    let output = env
        .rockbuild()
        .args(["retag", "--platform", "manylinux_2_28_x86_64"])
        .arg(&dist)
        .output()
        .expect("run");
    out.push_str(&exit_and_error(
        env,
        "retag onto another wheel's name",
        &output,
    ));
    assert_eq!(
        crate::common::pyindex::sha256_file(&taken),
        before,
        "left as it was"
    );
    assert!(built.exists(), "the input is kept");

    // promote --lock with a lock whose versions and file-name stems disagree.
    let staged_from = env.path("dist-ok");
    release(&staged_from);
    env.rockbuild()
        .args([
            "stage",
            "--config",
            "stack.yaml",
            "--input",
            "dist-ok",
            "--to",
            "staged",
        ])
        .args(["--targets", "gfx906,gfx1030"])
        .assert()
        .success();
    let lock = serde_json::json!({
        "schema": 1,
        "generated_by": "rockbuild",
        "stack": "stack.yaml",
        "projects": {},
        "build": {
            "sdk_version": "7.13.0",
            "targets": ["gfx906", "gfx1030"],
            "versions": {"torch": "2.10.0+rocm7.13.0"},
            "stems": {"torch": "torch-2.9.0+rocm7.13.0"},
        }
    });
    std::fs::write(
        env.path("edited.lock.json"),
        serde_json::to_string_pretty(&lock).expect("json"),
    )
    .expect("write");
    std::fs::write(
        env.path("passed.json"),
        serde_json::json!({
            "schema": 1, "kind": "smoke", "generated_by": "rockbuild",
            "index_url": "http://127.0.0.1:9/", "started": "2026-01-01T00:00:00Z",
            "finished": "2026-01-01T00:01:00Z", "result": "passed", "wheels": [], "checks": []
        })
        .to_string(),
    )
    .expect("report");
    let output = env
        .rockbuild()
        .args(["promote", "--from", "staged", "--to", "release"])
        .args(["--test-report", "passed.json", "--lock", "edited.lock.json"])
        .output()
        .expect("run");
    out.push_str(&exit_and_error(
        env,
        "promote --lock with stems that disagree",
        &output,
    ));
    assert!(!env.path("release").exists());

    snapshot::settings(env).bind(|| insta::assert_snapshot!("hostile_never_exit_0", out));
}

#[test]
fn a_lock_is_checked_never_corrected() {
    let env = TestEnv::new();
    let world = StackWorld::new(&env);
    let checkout = |root: &str, from_lock: Option<&str>| {
        let mut command = env.rockbuild();
        command
            .args([
                "checkout",
                "--root-checkout-dir",
                root,
                "--project",
                "torch",
                "--config",
            ])
            .arg(&world.config);
        if let Some(lock) = from_lock {
            command.args(["--from-lock", lock]);
        }
        command.output().expect("run")
    };
    let first = checkout("ws", None);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let good: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.path("ws/rockbuild.lock.json")).expect("lock"),
    )
    .expect("json");
    assert!(good["projects"]["torch"]["hipify"]["result_tree"].is_string());
    let mut out = String::new();
    for (title, pointer) in [
        ("tree", "/projects/torch/tree"),
        (
            "a submodule's commit",
            "/projects/torch/submodules/0/commit",
        ),
        ("hipify result_tree", "/projects/torch/hipify/result_tree"),
    ] {
        let mut edited = good.clone();
        *edited.pointer_mut(pointer).expect(pointer) = serde_json::json!("1".repeat(40));
        std::fs::write(
            env.path("edited.lock.json"),
            serde_json::to_string_pretty(&edited).expect("json"),
        )
        .expect("write");
        let root = format!("again-{}", title.replace(' ', "-").replace('\'', ""));
        let output = checkout(&root, Some("edited.lock.json"));
        out.push_str(&exit_and_error(&env, title, &output));
        assert!(
            !env.path(&format!("{root}/rockbuild.lock.json")).exists(),
            "{title}: no corrected lock was written"
        );
    }
    snapshot::settings(&env).bind(|| insta::assert_snapshot!("hostile_lock_checked", out));
}

#[test]
fn a_venv_interrupted_while_being_created_is_made_again() {
    use std::os::unix::fs::PermissionsExt;
    let mut env = TestEnv::new();
    env.set("PIP_NO_INDEX", "1");
    env.set(
        "PIP_FIND_LINKS",
        crate::common::wheelhouse().display().to_string(),
    );
    let server = crate::common::http::serve(&crate::common::sdk::sdk_index(
        "7.10.0a20251124",
        &["gfx906", "gfx1030"],
    ));
    let index = format!("{}simple/", server.url());
    // An interpreter whose `-m venv` is killed (with rockbuild) after the interpreter is in
    // place and before pip is: what a cancelled job leaves.
    let python = env.path("python-killed");
    std::fs::write(
        &python,
        "#!/bin/sh\nif [ \"$1\" = -m ] && [ \"$2\" = venv ]; then\n  \
         python3 -m venv --without-pip \"$3\"\n  kill -9 $PPID\n  sleep 30\nfi\n\
         exec python3 \"$@\"\n",
    )
    .expect("script");
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let install = |python: Option<&Path>| {
        let mut command = env.rockbuild();
        command.args(["install-rocm", "--venv", "venv", "--index-url", &index]);
        if let Some(python) = python {
            command.arg("--python").arg(python);
        }
        command.output().expect("run")
    };
    let killed = install(Some(&python));
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&killed.status),
        Some(9),
        "{}",
        String::from_utf8_lossy(&killed.stderr)
    );
    assert!(env.path("venv/bin/python").exists(), "half a venv");
    let again = install(None);
    assert!(
        again.status.success(),
        "a later run makes the venv again:\n{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("interrupted while being created"));
    assert!(!env.path("venv/.rockbuild-creating").exists());
}

#[test]
fn errors_say_exactly_what_is_wrong() {
    let world = gpu_world();
    let env = &world.env;
    release(&env.path("dist-ok"));
    let mut out = String::new();
    let mut case = |title: &str, command: &mut assert_cmd::Command| {
        let output = command.output().expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.lines().count() < 30,
            "{title}: a short error, not a dump:\n{stderr}"
        );
        out.push_str(&exit_and_error(env, title, &output));
    };

    let s3 = S3Server::start(&env.path("s3"));
    case(
        "an invalid bucket name",
        env.rockbuild()
            .envs(s3.env())
            .args(["stage", "--config", "stack.yaml", "--input", "dist-ok"])
            .args([
                "--to",
                "s3://Wheels_Bucket/staging",
                "--targets",
                "gfx906,gfx1030",
            ])
            .args(s3.store_args()),
    );
    case(
        "--transfer-jobs 0",
        env.rockbuild()
            .args([
                "stage",
                "--config",
                "stack.yaml",
                "--input",
                "dist-ok",
                "--to",
                "staged",
            ])
            .args(["--targets", "gfx906,gfx1030", "--transfer-jobs", "0"]),
    );
    case(
        "retag --platform manylinux_99_0",
        env.rockbuild()
            .args(["retag", "--platform", "manylinux_99_0"])
            .arg(env.path("dist-ok")),
    );
    let lock = serde_json::json!({
        "schema": 1, "generated_by": "rockbuild", "stack": "stack.yaml", "projects": {},
        "build": {"sdk_version": "seven-ten", "targets": ["gfx906"]}
    });
    std::fs::write(env.path("bad-sdk.lock.json"), lock.to_string()).expect("write");
    case(
        "a lock whose sdk_version is not a version",
        env.rockbuild().args([
            "install-rocm",
            "--venv",
            "venv",
            "--index-url",
            "http://127.0.0.1:9/simple/",
            "--lock",
            "bad-sdk.lock.json",
        ]),
    );
    snapshot::settings(env).bind(|| insta::assert_snapshot!("hostile_exact_errors", out));
    assert!(!env.path("staged").exists() && !env.path("venv").exists());

    // A lock saved with a byte order mark (as Windows editors write it) is read as the lock.
    let stack = StackWorld::new(env);
    env.rockbuild()
        .args([
            "lock",
            "--lock",
            "plain.lock.json",
            "--project",
            "vision",
            "--config",
        ])
        .arg(&stack.config)
        .assert()
        .success();
    let mut with_bom = b"\xEF\xBB\xBF".to_vec();
    with_bom.extend(std::fs::read(env.path("plain.lock.json")).expect("lock"));
    std::fs::write(env.path("bom.lock.json"), with_bom).expect("write");
    env.rockbuild()
        .args([
            "checkout",
            "--root-checkout-dir",
            "ws",
            "--from-lock",
            "bom.lock.json",
        ])
        .arg("--config")
        .arg(&stack.config)
        .assert()
        .success();
}
