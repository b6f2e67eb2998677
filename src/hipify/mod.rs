//! Hipify: run the repository's own translator (`tools/amd_build/build_amd.py`), prove what it
//! did with a stamp, and check that no CUDA-only include survived.
//!
//! Upstream build_amd.py is not idempotent (each run grows `hip/` in an include:
//! pytorch#160579), so hipify only ever runs on a pristine upstream tree. The stamp records the
//! upstream tree, the script's hash and the resulting tree; a checkout whose state matches its
//! stamp is up to date and is left alone.

pub mod leftover;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec::Runner;
use crate::git::Git;
use crate::lock::HipifyStamp;
use anyhow::Context as _;

/// Where a checkout keeps its stamp, next to git's own state.
pub fn stamp_path(repo_dir: &Path) -> PathBuf {
    repo_dir.join(".git/rockbuild/hipify-stamp.json")
}

pub fn read_stamp(repo_dir: &Path) -> Option<HipifyStamp> {
    let text = fs_err::read_to_string(stamp_path(repo_dir)).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn write_stamp(repo_dir: &Path, stamp: &HipifyStamp) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(stamp)?;
    Ok(crate::fsutil::write_atomic(
        &stamp_path(repo_dir),
        text.as_bytes(),
    )?)
}

pub fn remove_stamp(repo_dir: &Path) -> anyhow::Result<()> {
    match fs_err::remove_file(stamp_path(repo_dir)) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Runs the hipify script from the repository root (build_amd.py edits submodule files by
/// paths relative to the cwd, so the cwd matters).
pub fn run_script(
    runner: &Runner,
    git: &Git,
    python: &Path,
    script: &str,
    log: &Path,
    on_line: &mut dyn FnMut(&str),
) -> anyhow::Result<()> {
    let cmd = crate::exec::Cmd::new(python)
        .label(format!("hipify ({script})"))
        .arg(script)
        .cwd(git.dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .timeout(Duration::from_secs(3600))
        .idle_timeout(Duration::from_secs(900))
        .log_to(log);
    runner.run_streaming(&cmd, on_line)?;
    Ok(())
}

/// The tree of a repository's working state: tracked and untracked files (ignored ones
/// excluded), with submodule pointers left as HEAD records them — so the same hipify result
/// gives the same tree whether or not it was committed. Computed in a temporary index; the
/// repository's own index is not touched.
pub fn working_tree_id(
    runner: &Runner,
    git: &Git,
    gitlink_paths: &[String],
) -> anyhow::Result<String> {
    let temp = tempfile::Builder::new()
        .prefix("rockbuild-index-")
        .tempdir()
        .context("creating a temporary index directory")?;
    let index = temp.path().join("index");
    let with_index = |cmd: crate::exec::Cmd| cmd.env("GIT_INDEX_FILE", index.as_os_str());
    runner.run(&with_index(git.cmd(["read-tree", "HEAD"])))?;
    let mut add = git.cmd(["add", "-A", "--", "."]);
    for path in gitlink_paths {
        add = add.arg(format!(":(exclude){path}"));
    }
    runner.run(&with_index(add))?;
    let tree = runner.run(&with_index(git.cmd(["write-tree"])).capture_stdout())?;
    Ok(tree.stdout.trim().to_string())
}
