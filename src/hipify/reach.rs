//! What a hipify script reaches: which submodules its Python code looks into or writes, and
//! which other programs it starts. The checkout's fast path (`hipify: edits-submodules`) runs
//! the script while the submodules it is not listed for are still being checked out; this is
//! how it notices that the list was wrong, whatever the script did there — even a look that
//! found nothing yet (`if os.path.exists(…)`, as build_amd.py guards every edit), which leaves
//! no trace in the tree.
//!
//! The Python that runs the script loads `reach.py` as its `sitecustomize` (a directory of
//! its own first on `PYTHONPATH`; it then runs the next `sitecustomize`, so the script sees
//! its usual interpreter). It appends one line per finding to a log: `started`, `reached
//! <dir>`, `spawned <program>` (a program other than Python, whose reach cannot be seen),
//! `untraceable <event>`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Error;

/// The `sitecustomize` the script's Python loads.
const SITECUSTOMIZE: &str = include_str!("reach.py");
/// Environment variables `reach.py` reads.
const WATCH_VAR: &str = "ROCKBUILD_REACH_WATCH";
const LOG_VAR: &str = "ROCKBUILD_REACH_LOG";

/// A watch prepared for one run of a script: the files `reach.py` reads and writes.
#[derive(Debug)]
pub struct Watch {
    dir: PathBuf,
    root: PathBuf,
}

/// What the script reached, as the log says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    /// The watch was loaded (else nothing below can be trusted).
    pub started: bool,
    /// Watched directories the script looked into or wrote, relative to the project root.
    pub reached: Vec<String>,
    /// Programs other than Python it started, and events the watch could not read.
    pub unseen: Vec<String>,
}

impl Watch {
    /// Prepares a watch of `watched` (paths relative to `root`, the directory the script runs
    /// in) in `dir` (emptied first).
    pub fn prepare(dir: &Path, root: &Path, watched: &[String]) -> Result<Watch, Error> {
        let failed = |reason: String| Error::Cache {
            path: dir.to_path_buf(),
            reason,
        };
        if dir.exists() {
            fs_err::remove_dir_all(dir).map_err(|e| failed(e.to_string()))?;
        }
        fs_err::create_dir_all(dir).map_err(|e| failed(e.to_string()))?;
        let list: String = watched
            .iter()
            .map(|rel| format!("{}\n", root.join(rel).display()))
            .collect();
        for (name, text) in [
            ("sitecustomize.py", SITECUSTOMIZE),
            ("watch", list.as_str()),
        ] {
            fs_err::write(dir.join(name), text).map_err(|e| failed(e.to_string()))?;
        }
        Ok(Watch {
            dir: dir.to_path_buf(),
            root: root.to_path_buf(),
        })
    }

    /// What the script's environment gets: `PYTHONPATH` with the watch first (before
    /// `existing`, the value the script would have had), and where the watch reads and writes.
    pub fn env(&self, existing: Option<&str>) -> Vec<(&'static str, OsString)> {
        let mut path = self.dir.clone().into_os_string();
        if let Some(existing) = existing.filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(existing);
        }
        vec![
            (crate::env_vars::PYTHONPATH, path),
            (WATCH_VAR, self.dir.join("watch").into_os_string()),
            (LOG_VAR, self.dir.join("log").into_os_string()),
        ]
    }

    /// What the log says the script reached.
    pub fn read(&self) -> Reach {
        let text = fs_err::read_to_string(self.dir.join("log")).unwrap_or_default();
        let mut reach = Reach::default();
        for line in text.lines() {
            match line.split_once(' ') {
                None if line == "started" => reach.started = true,
                Some(("reached", dir)) => {
                    let rel = Path::new(dir)
                        .strip_prefix(&self.root)
                        .map_or_else(|_| dir.to_string(), |r| r.display().to_string());
                    if !reach.reached.contains(&rel) {
                        reach.reached.push(rel);
                    }
                }
                Some(("spawned" | "untraceable", _)) => reach.unseen.push(line.to_string()),
                _ => {}
            }
        }
        reach.reached.sort();
        reach
    }
}

impl Reach {
    /// Why the script may have depended on a watched directory, if it may have: it reached
    /// one, or it did something the watch cannot see into, or the watch never started.
    pub fn doubt(&self) -> Option<String> {
        if !self.started {
            return Some(
                "its Python did not load the watch that sees what it reaches (run with -S, -I \
                 or -E?)"
                    .into(),
            );
        }
        if !self.reached.is_empty() {
            return Some(format!("it reached {}", self.reached.join(", ")));
        }
        if !self.unseen.is_empty() {
            return Some(format!(
                "it did what the watch cannot see into ({})",
                self.unseen.join(", ")
            ));
        }
        None
    }
}
