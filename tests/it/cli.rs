//! The command line as a user meets it.

use crate::common::TestEnv;

#[test]
fn help_lists_every_verb() {
    let env = TestEnv::new();
    let output = env.rockbuild().arg("--help").output().expect("runs");
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for verb in [
        "checkout",
        "lock",
        "install-rocm",
        "build",
        "plan",
        "verify",
        "stage",
        "index",
        "smoke",
        "promote",
        "detect",
        "doctor",
        "compat",
    ] {
        assert!(text.contains(verb), "--help lacks {verb}:\n{text}");
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
