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
