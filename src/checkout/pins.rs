//! Pin files handed from a pinning project (torch) to the projects it pins. Dependents start
//! as soon as the pinning project's commit is fetched — they read the files from its git
//! objects — instead of waiting for its whole checkout, submodules and hipify.

use std::path::PathBuf;
use std::sync::{Condvar, Mutex};

/// Where pin files are read from.
#[derive(Clone, Debug)]
pub enum PinFiles {
    /// A fetched commit of the pinning project's repository.
    Commit {
        repo_dir: PathBuf,
        commit: String,
        display_prefix: String,
    },
    /// An existing working tree (the pinning project is not part of this run).
    WorkTree {
        dir: PathBuf,
        display_prefix: String,
    },
    /// The pinning project's checkout does not exist: every pin falls back to its default.
    Absent { display_prefix: String },
}

impl PinFiles {
    /// (display name, content) of `path`; content is None when the file does not exist.
    pub fn read(&self, path: &str) -> anyhow::Result<(String, Option<String>)> {
        match self {
            PinFiles::Commit {
                repo_dir,
                commit,
                display_prefix,
            } => {
                let repo = crate::git::local::open(repo_dir)?;
                let oid = git2::Oid::from_str(commit)?;
                let bytes = crate::git::local::read_file_at(&repo, oid, path)?;
                Ok((
                    format!("{display_prefix}{path}"),
                    bytes.map(|b| String::from_utf8_lossy(&b).into_owned()),
                ))
            }
            PinFiles::WorkTree {
                dir,
                display_prefix,
            } => {
                // Read as the tree's content: a symbolic link is refused, never followed.
                let text = crate::input::read_tree_text(dir, path, crate::input::REPOSITORY_FILE)?;
                Ok((format!("{display_prefix}{path}"), text))
            }
            PinFiles::Absent { display_prefix } => Ok((format!("{display_prefix}{path}"), None)),
        }
    }
}

/// A one-shot hand-over point: the pinning project posts its pin files (or its failure),
/// dependents wait for it.
#[derive(Debug, Default)]
pub struct PinBoard {
    state: Mutex<Option<Result<PinFiles, String>>>,
    ready: Condvar,
}

impl PinBoard {
    pub fn ready(files: PinFiles) -> Self {
        PinBoard {
            state: Mutex::new(Some(Ok(files))),
            ready: Condvar::new(),
        }
    }

    /// Posts the result; only the first post counts.
    pub fn post(&self, result: Result<PinFiles, String>) {
        if let Ok(mut state) = self.state.lock()
            && state.is_none()
        {
            *state = Some(result);
            self.ready.notify_all();
        }
    }

    /// Blocks until the pinning project has posted.
    pub fn wait(&self) -> Result<PinFiles, String> {
        let mut state = match self.state.lock() {
            Ok(state) => state,
            Err(_) => return Err("internal error: pin board poisoned".into()),
        };
        loop {
            if let Some(result) = state.as_ref() {
                return result.clone();
            }
            state = match self.ready.wait(state) {
                Ok(state) => state,
                Err(_) => return Err("internal error: pin board poisoned".into()),
            };
        }
    }
}
