//! The command line as a user meets it: the help of rockbuild and of each verb, whole.

use crate::common::TestEnv;
use crate::common::snapshot;

#[track_caller]
fn help(args: &[&str]) -> String {
    let env = TestEnv::new();
    // Help shows the variables that are set; the harness sets this one for its test wheels.
    let output = env
        .rockbuild()
        .env_remove("ROCKBUILD_ALLOW_LINUX_TAG")
        .args(args)
        .output()
        .expect("runs");
    assert!(output.status.success(), "{args:?}: {output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

#[test]
fn help_lists_every_verb_and_the_exit_codes() {
    let text = help(&["--help"]);
    snapshot::plain().bind(|| insta::assert_snapshot!("help", text));
}

#[test]
fn help_of_each_publishing_verb() {
    for verb in [
        "install-rocm",
        "verify",
        "stage",
        "index",
        "smoke",
        "promote",
        "test",
        "test-report",
    ] {
        let text = help(&[verb, "--help"]);
        snapshot::plain().bind(|| insta::assert_snapshot!(format!("help_{verb}"), text));
    }
}

#[test]
fn unknown_flags_are_usage_errors() {
    let env = TestEnv::new();
    env.rockbuild()
        .args(["checkout", "--no-such-flag"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "unexpected argument '--no-such-flag'",
        ));
}

#[test]
fn json_plans_need_a_dry_run() {
    let env = TestEnv::new();
    let output = env
        .rockbuild()
        .args(["index", "out/staging", "--json"])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    snapshot::plain().bind(|| insta::assert_snapshot!("json_without_dry_run", text));
}
