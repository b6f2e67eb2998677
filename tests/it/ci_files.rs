//! The shipped GitHub Actions workflows and Dockerfiles pass the linters CI relies on:
//! actionlint, the workflow JSON schema, zizmor's security audit and hadolint.

use std::path::PathBuf;

use crate::common::{TestEnv, repo_root, run_ok, tools_bin};

fn files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(repo_root().join(dir))
        .expect("list")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    found.sort();
    assert!(!found.is_empty(), "no {suffix} files in {dir}/");
    found
}

#[test]
fn workflows_pass_actionlint_schema_and_zizmor() {
    let env = TestEnv::new();
    for workflow in files("workflows", ".yml") {
        run_ok(env.command(tools_bin().join("actionlint")).arg(&workflow));
        run_ok(
            env.command(tools_bin().join("check-jsonschema"))
                .args(["--builtin-schema", "vendor.github-workflows"])
                .arg(&workflow),
        );
        let audit = run_ok(
            env.command(tools_bin().join("zizmor"))
                .args(["--offline", "--no-progress"])
                .arg(&workflow),
        );
        assert!(
            audit.contains("No findings"),
            "{}: {audit}",
            workflow.display()
        );
    }
}

#[test]
fn dockerfiles_pass_hadolint() {
    let env = TestEnv::new();
    for dockerfile in files("dockerfiles", ".Dockerfile") {
        run_ok(
            env.command(tools_bin().join("hadolint"))
                .arg("--config")
                .arg(repo_root().join(".hadolint.yaml"))
                .arg(&dockerfile),
        );
    }
}
