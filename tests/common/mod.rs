//! Shared test harness: a hermetic environment for running the rockbuild binary and the
//! tools around it. Nothing here mocks a component; it only isolates the real ones.

#![allow(dead_code)] // each test module uses a different part of the harness

pub mod git;
pub mod http;
pub mod json_lines;
pub mod pyindex;
pub mod s3;
pub mod sample;
pub mod sdk;
pub mod snapshot;
pub mod source;
pub mod sysfs;
pub mod wheels;
pub mod windows;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (for examples/, configs/ and .tools/).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Python tools installed by scripts/setup (uv, build, actionlint, ...).
pub fn tools_bin() -> PathBuf {
    repo_root().join(".tools/venv/bin")
}

/// Wheels of build dependencies downloaded by scripts/setup, for offline venvs.
pub fn wheelhouse() -> PathBuf {
    repo_root().join(".tools/wheelhouse")
}

/// A temp directory plus an explicit environment: HOME, caches and git config point inside
/// it, PIP_* and GIT_* from the developer's shell do not leak in.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    vars: BTreeMap<String, String>,
}

impl TestEnv {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("rockbuild-test-")
            .tempdir()
            .expect("create temp dir");
        let root = dir.path().to_path_buf();
        let home = root.join("home");
        std::fs::create_dir_all(&home).expect("create home");
        let mut vars = BTreeMap::new();
        let path = format!(
            "{}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            tools_bin().display()
        );
        for (key, value) in [
            ("PATH", path.as_str()),
            ("HOME", home.to_str().expect("utf-8 temp path")),
            ("XDG_CACHE_HOME", &format!("{}/cache", home.display())),
            (
                "ROCKBUILD_CACHE_DIR",
                &format!("{}/rockbuild-cache", root.display()),
            ),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            (
                "GIT_CONFIG_GLOBAL",
                &format!("{}/.gitconfig", home.display()),
            ),
            ("LANG", "C.UTF-8"),
            ("NO_COLOR", "1"),
            ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
            ("PIP_NO_INPUT", "1"),
            ("PYTHONDONTWRITEBYTECODE", "1"),
            // Wheels built on this machine are `linux_x86_64`, as any local build's are; the
            // tests of the release policy set it to 0.
            ("ROCKBUILD_ALLOW_LINUX_TAG", "true"),
        ] {
            vars.insert(key.to_string(), value.to_string());
        }
        TestEnv { dir, vars }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.vars.insert(key.to_string(), value.into());
    }

    pub fn unset(&mut self, key: &str) {
        self.vars.remove(key);
    }

    pub fn vars(&self) -> &BTreeMap<String, String> {
        &self.vars
    }

    /// The rockbuild binary with exactly this environment, run from the temp dir.
    pub fn rockbuild(&self) -> assert_cmd::Command {
        let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_rockbuild"));
        command
            .env_clear()
            .envs(&self.vars)
            .current_dir(self.root());
        command
    }

    /// Any program with this environment (git, python, pip), run from the temp dir.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .envs(&self.vars)
            .current_dir(self.root());
        command
    }
}

/// Runs a command and returns its stdout, failing the test with its output if it fails.
#[track_caller]
pub fn run_ok(command: &mut Command) -> String {
    let output = command.output().expect("spawn");
    assert!(
        output.status.success(),
        "{:?} failed ({}):\nstdout: {}\nstderr: {}",
        command,
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The names of the wheels a rockbuild test report (smoke's, a shard's, test-report's) gives
/// as evidence, in its order.
#[track_caller]
pub fn tested_wheel_names(report: &serde_json::Value) -> Vec<String> {
    report["wheels"]
        .as_array()
        .expect("the report lists its wheels")
        .iter()
        .map(|w| w["name"].as_str().expect("a wheel has a name").to_string())
        .collect()
}

/// Output with what differs between runs masked: the test's temp dir, the repository (on
/// PATH), commit ids (whole, and the `git<sha8>` of versions: commits of the test origins name
/// temp-dir paths) and fingerprints.
pub fn scrub(text: &str, env: &TestEnv) -> String {
    scrub_ids(text, env, false)
}

/// [`scrub`], and the 12-digit short commit ids checkout and lock plans print.
pub fn scrub_short_ids(text: &str, env: &TestEnv) -> String {
    scrub_ids(text, env, true)
}

fn scrub_ids(text: &str, env: &TestEnv, short: bool) -> String {
    let text = text
        .replace(&env.root().display().to_string(), "[TMP]")
        .replace(&repo_root().display().to_string(), "[REPO]");
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match word.len() {
            40 => out.push_str("[SHA]"),
            64 => out.push_str("[SHA256]"),
            12 if short => out.push_str("[SHA12]"),
            8 if out.ends_with("git") => out.push_str("[SHA8]"),
            _ => out.push_str(word),
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}
