//! The shipped GitHub Actions workflows, rockbuild's own CI workflow and the Dockerfiles pass
//! the linters CI relies on: actionlint, the workflow JSON schema, zizmor's security audit and
//! hadolint.

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

/// The shipped workflows and the multi-arch ones (`ci generate --multi-arch`), linted where
/// they run (in `.github/workflows/` of a repository, as docs/ci.md says, so actionlint
/// follows their calls of each other), and rockbuild's own CI (this repository's
/// .github/workflows/).
#[test]
fn workflows_pass_actionlint_schema_and_zizmor() {
    let env = TestEnv::new();
    let deployed = env.path("deployed/.github/workflows");
    std::fs::create_dir_all(&deployed).expect("mkdir");
    let mut workflows = Vec::new();
    for shipped in files("workflows", ".yml") {
        let copy = deployed.join(shipped.file_name().expect("a file name"));
        std::fs::copy(&shipped, &copy).expect("copy");
        workflows.push(copy);
    }
    let multi_arch = env.path("multi-arch/.github/workflows");
    env.rockbuild()
        .args(["ci", "generate", "--multi-arch", "--output-dir"])
        .arg(&multi_arch)
        .assert()
        .success();
    let mut generated: Vec<PathBuf> = std::fs::read_dir(&multi_arch)
        .expect("list")
        .map(|e| e.expect("entry").path())
        .collect();
    generated.sort();
    assert_eq!(generated.len(), 5, "{generated:?}");
    workflows.extend(generated);
    workflows.extend(files(".github/workflows", ".yml"));
    for workflow in workflows {
        run_ok(env.command(tools_bin().join("actionlint")).arg(&workflow));
        run_ok(
            env.command(tools_bin().join("check-jsonschema"))
                .args(["--builtin-schema", "vendor.github-workflows"])
                .arg(&workflow),
        );
        let audit = run_ok(
            env.command(tools_bin().join("zizmor"))
                .args(["--offline", "--no-progress", "--persona", "pedantic"])
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

#[test]
fn scripts_pass_shellcheck() {
    let env = TestEnv::new();
    let scripts: Vec<PathBuf> = ["image-setup", "setup", "test", "quickstart"]
        .iter()
        .map(|name| repo_root().join("scripts").join(name))
        .collect();
    run_ok(env.command(tools_bin().join("shellcheck")).args(&scripts));
}

/// A manylinux-style interpreter root holding only this machine's Python (3.11), as
/// `/opt/python/cp311-cp311/bin/python` is laid out in the image.
fn python_root(env: &TestEnv) -> PathBuf {
    let root = env.path("opt-python");
    let bin = root.join("cp311-cp311/bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::os::unix::fs::symlink("/usr/bin/python3.11", bin.join("python")).expect("symlink");
    root
}

fn image_setup(env: &TestEnv, profile: &str, pythons: &str) -> std::process::Command {
    let mut command = env.command(repo_root().join("scripts/image-setup"));
    command
        .arg(profile)
        .arg("--root")
        .arg(env.path("image"))
        .arg("--python-root")
        .arg(env.path("opt-python"))
        .args(["--pythons", pythons])
        // The pinned, hash-checked tools come from the wheelhouse scripts/setup filled.
        .env("PIP_NO_INDEX", "1")
        .env("PIP_FIND_LINKS", crate::common::wheelhouse());
    command
}

/// The build image's set-up, run for real into a throwaway root: the pinned tools install from
/// their hashes, run, and a second run changes nothing that breaks them.
#[test]
fn image_setup_installs_the_build_tools() {
    let env = TestEnv::new();
    python_root(&env);
    let first = run_ok(&mut image_setup(&env, "build", "3.11"));
    let again = run_ok(&mut image_setup(&env, "build", "3.11"));
    assert_eq!(first, again, "a second run reports the same");
    let root = env.root().to_str().expect("utf-8");
    insta::assert_snapshot!(first.replace(root, "[TMP]"), @r"
    image-setup: CPython 3.11 present under [TMP]/opt-python
    image-setup: system packages skipped under --root [TMP]/image: git ccache
    image-setup: cmake: cmake version 3.31.10
    image-setup: ninja: 1.13.0.git.kitware.jobserver-pipe-1
    image-setup: patchelf: patchelf 0.17.2
    image-setup: sccache: sccache 0.14.0
    image-setup: build image set up under [TMP]/image
    ");
    // The linked tools work from the image's PATH directory.
    let bin = env.path("image/usr/local/bin");
    let version = run_ok(env.command(bin.join("sccache")).arg("--version"));
    assert_eq!(version.trim(), "sccache 0.14.0");
    let safe = run_ok(
        env.command("git")
            .args(["config", "--file"])
            .arg(env.path("image/etc/gitconfig"))
            .args(["--get-all", "safe.directory"]),
    );
    assert_eq!(safe, "*\n", "set once, not once per run");
}

#[test]
fn image_setup_refuses_what_the_image_lacks() {
    let env = TestEnv::new();
    python_root(&env);
    let mut errors = Vec::new();
    for (profile, pythons) in [
        ("test", "3.11 3.12 3.13t"),
        ("test", "3.11 3,12"),
        ("gpu", "3.11"),
    ] {
        let output = image_setup(&env, profile, pythons).output().expect("run");
        assert_eq!(output.status.code(), Some(1), "{profile} {pythons}");
        errors.push(format!(
            "$ image-setup {profile} --pythons '{pythons}'\n{}",
            String::from_utf8_lossy(&output.stderr).trim_end()
        ));
    }
    let root = env.root().to_str().expect("utf-8");
    insta::assert_snapshot!(errors.join("\n\n").replace(root, "[TMP]"), @r"
    $ image-setup test --pythons '3.11 3.12 3.13t'
    image-setup: missing CPython: 3.12 ([TMP]/opt-python/cp312-cp312/bin/python),3.13t ([TMP]/opt-python/cp313-cp313t/bin/python); the base image must provide every version the release table builds

    $ image-setup test --pythons '3.11 3,12'
    image-setup: '3,12' is not a CPython version such as 3.12 or 3.13t

    $ image-setup gpu --pythons '3.11'
    image-setup: unknown profile 'gpu' (build or test)
    ");
}

/// Both images start from the manylinux_2_28 base pinned by digest, run the one set-up script
/// once, and require exactly the CPython versions the release table builds.
#[test]
fn images_pin_their_base_and_cover_the_release_pythons() {
    let releases: yaml_serde::Value = yaml_serde::from_str(
        &std::fs::read_to_string(repo_root().join("configs/releases.yaml")).expect("read"),
    )
    .expect("yaml");
    let mut pythons: Vec<String> = Vec::new();
    for (_, release) in releases["release-types"].as_mapping().expect("map") {
        for python in release["python"].as_sequence().expect("list") {
            let python = python.as_str().expect("string").to_string();
            if !pythons.contains(&python) {
                pythons.push(python);
            }
        }
    }
    let want_arg = format!("ARG PYTHONS=\"{}\"", pythons.join(" "));
    for (file, profile) in [("build.Dockerfile", "build"), ("test.Dockerfile", "test")] {
        let text =
            std::fs::read_to_string(repo_root().join("dockerfiles").join(file)).expect("read");
        let bases: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("FROM quay.io/pypa/manylinux_2_28_x86_64"))
            .collect();
        assert_eq!(bases.len(), 1, "{file}: one manylinux_2_28 stage");
        let digest = bases[0]
            .split_once("@sha256:")
            .map(|(_, d)| d)
            .unwrap_or_else(|| panic!("{file}: base not pinned by digest"));
        assert!(
            digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
            "{file}: {digest}"
        );
        assert!(
            text.lines().any(|l| l == want_arg),
            "{file}: want {want_arg}"
        );
        let setups: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("RUN ") && l.contains("image-setup"))
            .collect();
        assert_eq!(
            setups,
            [format!(
                "RUN /opt/rockbuild-setup/scripts/image-setup {profile} --pythons \"$PYTHONS\""
            )],
            "{file}"
        );
    }
}
