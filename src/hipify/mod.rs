//! Hipify: run the repository's own translator (`tools/amd_build/build_amd.py`), prove what it
//! did with a stamp, and check that no CUDA-only include survived.
//!
//! Upstream build_amd.py is not idempotent (each run grows `hip/` in an include:
//! pytorch#160579), so hipify only ever runs on a pristine upstream tree. The stamp records the
//! upstream tree, the script's hash and the resulting tree; a checkout whose state matches its
//! stamp is up to date and is left alone.

pub mod cache;
pub mod leftover;
pub mod reach;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec::{ProcessError, Runner};
use crate::exit::{ExitStatus, HasExitStatus};
use crate::git::Git;
use crate::lock::HipifyStamp;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("hipify of '{project}' failed; the tree is left as the script left it")]
    Script {
        project: String,
        #[source]
        source: ProcessError,
    },
    #[error(
        "hipify of '{project}' left {} CUDA-only include(s) that have HIP equivalents (TheRock#7266), refused by {refused_by}:\n    {}\n  the file(s) were skipped or mistranslated, or the include sits in a branch no ROCm build compiles; fix the hipify mapping, list deliberate ones under `hipify: allow:` in {config}, or check out without {refused_by} to have them reported instead — the tree is left for inspection",
        leftovers.len(),
        leftovers.iter().take(20).cloned().collect::<Vec<_>>().join("\n    ")
    )]
    Leftovers {
        project: String,
        leftovers: Vec<String>,
        config: String,
        /// What made them an error: `--strict`, or the project's `leftover-cuda: refuse`.
        refused_by: String,
    },
    #[error(
        "{project}: hipify produced tree {found} but {lock} records {expected}; the hipify script is not deterministic on this machine (check the python version, `--python`) — the tree is left for inspection"
    )]
    NotDeterministic {
        project: String,
        found: String,
        expected: String,
        lock: String,
    },
    #[error(
        "{repo} is {found}, the cache says {expected} ({})",
        path.display()
    )]
    CacheMismatch {
        project: String,
        key: String,
        repo: String,
        found: String,
        expected: String,
        path: PathBuf,
    },
    #[error("the hipify cache {}: {reason}", path.display())]
    Cache { path: PathBuf, reason: String },
    #[error(transparent)]
    Process(#[from] ProcessError),
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Script {
                source: ProcessError::Interrupted { signal, .. },
                ..
            }
            | Error::Process(ProcessError::Interrupted { signal, .. }) => {
                ExitStatus::Signal(*signal)
            }
            _ => ExitStatus::Failure,
        }
    }
}

/// Where a checkout keeps its stamp, next to git's own state.
pub fn stamp_path(repo_dir: &Path) -> PathBuf {
    repo_dir.join(".git/rockbuild/hipify-stamp.json")
}

pub fn read_stamp(repo_dir: &Path) -> Option<HipifyStamp> {
    let text = fs_err::read_to_string(stamp_path(repo_dir)).ok()?;
    serde_json::from_str(&text).ok()
}

pub fn write_stamp(repo_dir: &Path, stamp: &HipifyStamp) -> Result<(), Error> {
    let path = stamp_path(repo_dir);
    let text = serde_json::to_string_pretty(stamp).map_err(|e| Error::Cache {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    crate::fsutil::write_atomic(&path, text.as_bytes()).map_err(|e| Error::Cache {
        path: path.clone(),
        reason: format!("{e:#}"),
    })
}

pub fn remove_stamp(repo_dir: &Path) -> Result<(), Error> {
    let path = stamp_path(repo_dir);
    match fs_err::remove_file(&path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(Error::Cache {
            path,
            reason: error.to_string(),
        }),
    }
}

/// Runs the hipify script from the repository root (build_amd.py edits submodule files by
/// paths relative to the cwd, so the cwd matters).
/// `watch`: the environment of a [`reach::Watch`] on the script, when one is kept.
pub fn run_script(
    runner: &Runner,
    git: &Git,
    python: &Path,
    script: &str,
    log: &Path,
    watch: Option<&reach::Watch>,
    on_line: &mut dyn FnMut(&str),
) -> Result<(), ProcessError> {
    let mut cmd = crate::exec::Cmd::new(python)
        .label(format!("hipify ({script})"))
        .arg(script)
        .cwd(git.dir())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .timeout(Duration::from_secs(3600))
        .idle_timeout(Duration::from_secs(900))
        .log_to(log);
    if let Some(watch) = watch {
        let existing = runner.base_env().get(crate::env_vars::PYTHONPATH);
        for (name, value) in watch.env(existing) {
            cmd = cmd.env(name, value);
        }
    }
    runner.run_streaming(&cmd, on_line)?;
    Ok(())
}

/// `index` as a copy of the index `own`, with its mtime.
fn seed_index(own: &Path, index: &Path) -> std::io::Result<()> {
    let written = fs_err::metadata(own)?.modified()?;
    fs_err::copy(own, index)?;
    fs_err::File::open(index)?.file().set_modified(written)
}

/// The tree of a repository's working state: tracked and untracked files (ignored ones
/// excluded), with submodule pointers left as HEAD records them — so the same hipify result
/// gives the same tree whether or not it was committed. Computed in a temporary index; the
/// repository's own index is not touched.
pub fn working_tree_id(
    runner: &Runner,
    git: &Git,
    gitlink_paths: &[String],
) -> Result<String, Error> {
    let temp = tempfile::Builder::new()
        .prefix("rockbuild-index-")
        .tempdir()
        .map_err(|e| Error::Cache {
            path: std::env::temp_dir(),
            reason: format!("creating a temporary index: {e}"),
        })?;
    let index = temp.path().join("index");
    let with_index = |cmd: crate::exec::Cmd| cmd.env("GIT_INDEX_FILE", index.as_os_str());
    // Seeded with a copy of the repository's index, `read-tree -m` keeps the stat data of the
    // entries that match HEAD, so `add` hashes only the files that changed since the checkout
    // (torch: hipify's few hundred instead of all 15k). The copy keeps the index's mtime: git
    // re-reads an entry modified in the same instant the index was written ("racily clean")
    // by comparing the two. Without a copy, every file is hashed.
    let own_index = git2::Repository::open(git.dir())
        .ok()
        .map(|repo| repo.path().join("index"));
    let seeded = own_index.is_some_and(|own| seed_index(&own, &index).is_ok());
    let read_tree: &[&str] = if seeded {
        &["read-tree", "-m", "HEAD"]
    } else {
        &["read-tree", "HEAD"]
    };
    runner.run(&with_index(git.cmd(read_tree)))?;
    let mut add = git.cmd(["add", "-A", "--", "."]);
    for path in gitlink_paths {
        add = add.arg(format!(":(exclude){path}"));
    }
    runner.run(&with_index(add))?;
    let tree = runner.run(&with_index(git.cmd(["write-tree"])).capture_stdout())?;
    Ok(tree.stdout.trim().to_string())
}
