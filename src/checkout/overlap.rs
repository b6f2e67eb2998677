//! Hipify beside the submodule checkouts: the fast path `hipify: edits-submodules` allows.
//!
//! The reference checks out every submodule, then runs the hipify script. With the list, the
//! script starts once the project and the submodules listed are out, while the others are
//! still being written. The assumption: the script reaches no submodule the list leaves out.
//! It is checked on every run, three ways: a watch on the script's Python (`hipify::reach`:
//! any look into or write to one of them, even a look that found nothing yet, and any other
//! program started), the script failing, and after the fact the status of every repository (a
//! change the watch could not see). When any says the assumption may not hold, the work is
//! done again the slow way, in the reference's order — every repository put back as it was
//! checked out, then the script on the complete tree — and a warning names the list to extend
//! to keep the fast path. The trees, commits and tags are then the reference's.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::apply::Job;
use super::repos::Node;
use crate::context::Context;
use crate::git::Git;
use crate::hipify::reach::{Reach, Watch};
use crate::stack::HipifyPolicy;

/// The submodules hipify waits for, and those it does not (watched while the script runs).
#[derive(Debug)]
pub struct Overlap {
    pub listed: Vec<String>,
    pub watched: Vec<String>,
}

/// Why a fast run cannot be trusted.
#[derive(Debug, PartialEq, Eq)]
pub struct Doubt {
    pub reason: String,
    /// Submodules to add to the list to keep the fast path (none when the list cannot help:
    /// the script starts programs the watch cannot see into).
    pub submodules: Vec<String>,
}

impl Overlap {
    /// The fast path of this checkout, when there is one: the project lists the submodules its
    /// script edits, and some of this tree's submodules are not listed.
    pub fn of(job: &Job<'_>) -> Option<Overlap> {
        let listed = super::apply::edited_submodules(job)?;
        let watched: Vec<String> = job
            .resolved
            .submodules
            .iter()
            .filter(|s| !listed.contains(&s.path))
            .map(|s| s.path.clone())
            .collect();
        (!watched.is_empty()).then_some(Overlap { listed, watched })
    }

    /// A watch on the submodules left out, prepared in the project's `.git/rockbuild/reach`.
    pub fn watch(&self, dir: &Path) -> anyhow::Result<Watch> {
        Ok(Watch::prepare(
            &dir.join(".git/rockbuild/reach"),
            dir,
            &self.watched,
        )?)
    }

    /// Why the run cannot be trusted, if it cannot: what the watch saw, or a change in a
    /// submodule left out (`changed`: per node of `nodes`, whether it has uncommitted changes).
    pub fn doubt(&self, reach: &Reach, nodes: &[Node], changed: &[bool]) -> Option<Doubt> {
        let mut changed_unlisted: Vec<String> = nodes
            .iter()
            .zip(changed)
            .filter(|(node, changed)| **changed && !node.rel.is_empty())
            .map(|(node, _)| node.rel.clone())
            .filter(|rel| !self.listed.contains(rel))
            .collect();
        changed_unlisted.sort();
        match reach.doubt() {
            // A script that starts programs (or runs unwatched) is doubted whatever the list
            // says: naming submodules would send the user after a fast path that cannot hold.
            Some(reason) if !reach.started || !reach.unseen.is_empty() => Some(Doubt {
                reason,
                submodules: Vec::new(),
            }),
            Some(reason) => {
                let mut submodules = reach.reached.clone();
                submodules.extend(changed_unlisted);
                submodules.sort();
                submodules.dedup();
                Some(Doubt { reason, submodules })
            }
            None if !changed_unlisted.is_empty() => Some(Doubt {
                reason: format!("it changed {}", changed_unlisted.join(", ")),
                submodules: changed_unlisted,
            }),
            None => None,
        }
    }
}

/// The warning of a fallback: what was seen, what was done, and the line that keeps the fast
/// path.
pub fn warning(job: &Job<'_>, doubt: &Doubt) -> String {
    let config = &job.selection.stack.source_name;
    let at = match &job.project.hipify {
        HipifyPolicy::Script {
            edits_submodules_line: Some(line),
            ..
        } => format!("{config}:{line}"),
        _ => config.clone(),
    };
    let keep = if doubt.submodules.is_empty() {
        "a script whose reach cannot be seen gains nothing from the list: remove it there to \
         wait for every submodule from the start"
            .to_string()
    } else {
        format!(
            "add {} to it to keep hipify beside the submodule checkouts",
            doubt.submodules.join(", ")
        )
    };
    format!(
        "{}: hipify ran while the submodules `hipify: edits-submodules` ({at}) does not list \
         were still being checked out, and {}; it ran again once every submodule was out (the \
         reference's order), so the trees are the reference's — {keep}",
        job.project.name, doubt.reason
    )
}

/// Puts every repository of the tree back as it was checked out, undoing a script run that
/// started at `started`, deepest first: tracked files hashed and reset, untracked files
/// removed, and the ignored files made since `started` removed (the script's; older ones, a
/// build directory, were there before it and stay).
pub fn undo_script(
    ctx: &Context,
    nodes: &[Node],
    log: &Path,
    started: SystemTime,
) -> anyhow::Result<()> {
    // File times come from a clock that lags by up to a tick: a second's margin (nothing
    // else makes ignored files in a checkout that close before its script starts).
    let since = started
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .saturating_sub(Duration::from_secs(1));
    let since = (
        i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        i64::from(since.subsec_nanos()),
    );
    for node in nodes.iter().rev() {
        let git = Git::new(&node.dir, node.label()).log_to(log);
        // Every file hashed, not trusted by its stat data: a rewrite at the same size in the
        // tick git wrote the file in (the script beside the checkout) looks unchanged to the
        // index, and `reset --hard` would keep it.
        ctx.runner
            .run(&git.cmd(["update-index", "-q", "--really-refresh"]))?;
        ctx.runner.run(&git.cmd(["reset", "-q", "--hard"]))?;
        ctx.runner.run(&git.cmd(["clean", "-ffdq"]))?;
        let ignored = ctx.runner.run(
            &git.cmd([
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
            ])
            .capture_stdout(),
        )?;
        for rel in ignored.stdout.split('\0').filter(|p| !p.is_empty()) {
            let path = node.dir.join(rel);
            let Ok(meta) = fs_err::symlink_metadata(&path) else {
                continue;
            };
            if (meta.ctime(), meta.ctime_nsec()) >= since {
                fs_err::remove_file(&path)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(rel: &str) -> Node {
        Node {
            rel: rel.into(),
            dir: rel.into(),
            recorded: String::new(),
            gitlinks: Vec::new(),
        }
    }

    #[test]
    fn the_hint_names_submodules_only_when_listing_them_would_keep_the_fast_path() {
        let overlap = Overlap {
            listed: Vec::new(),
            watched: vec!["third_party/kineto".into()],
        };
        let nodes = [node(""), node("third_party/kineto")];
        let reached = Reach {
            started: true,
            reached: vec!["third_party/kineto".into()],
            unseen: Vec::new(),
        };
        let doubt = overlap.doubt(&reached, &nodes, &[false, true]);
        assert_eq!(
            doubt.map(|d| d.submodules),
            Some(vec!["third_party/kineto".to_string()])
        );
        // A program the watch cannot see into changed the submodule: whether it ran before or
        // after the submodule was out is a race, and either way the list cannot help.
        let spawned = Reach {
            started: true,
            reached: Vec::new(),
            unseen: vec!["spawned sed".into()],
        };
        for changed in [[false, false], [false, true]] {
            let doubt = overlap.doubt(&spawned, &nodes, &changed);
            assert_eq!(doubt.map(|d| d.submodules), Some(Vec::new()), "{changed:?}");
        }
        let unwatched = Reach::default();
        let doubt = overlap.doubt(&unwatched, &nodes, &[false, true]);
        assert_eq!(doubt.map(|d| d.submodules), Some(Vec::new()));
        let quiet = Reach {
            started: true,
            ..Reach::default()
        };
        assert_eq!(overlap.doubt(&quiet, &nodes, &[false, false]), None);
    }
}
