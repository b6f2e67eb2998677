//! What a checkout holds, read with git2 (no process, no network): the commit that names the
//! sources in versions, the branch triton's setup.py looks at, and a digest of the tree as it
//! will be compiled (HEAD plus every uncommitted change, untracked files included) for the
//! build cache. With a lock, the checkout must be at the locked commit (or at the hipify
//! commit on top of it): one lock, one truth.

use std::collections::BTreeSet;
use std::path::Path;

use git2::{DiffFormat, DiffOptions, Repository};
use sha2::{Digest, Sha256};

use crate::lock::LockedProject;

/// Subject of the commit `rockbuild checkout` makes for hipify's changes.
pub use crate::git::HIPIFY_COMMIT_MESSAGE as HIPIFY_COMMIT_SUBJECT;

pub use crate::recipes::SourceState;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{project}: the checkout {} is at {head}, but the lock pins {locked}: run `rockbuild checkout --from-lock <lock>` to reproduce it, or build with the lock that matches", dir.display())]
    LockMismatch {
        project: String,
        dir: std::path::PathBuf,
        head: String,
        locked: String,
    },
    #[error("{project}: {} is not a git checkout, so it cannot be checked against the lock; check it out with `rockbuild checkout`", dir.display())]
    NotGit {
        project: String,
        dir: std::path::PathBuf,
    },
    #[error("{project}: reading the git checkout {}: {source}", dir.display())]
    Git {
        project: String,
        dir: std::path::PathBuf,
        #[source]
        source: git2::Error,
    },
}

/// Reads the state of `dir`. `skip` lists paths (relative to `dir`) left out of the digest:
/// files rockbuild itself generates before the build.
pub fn inspect(
    project: &str,
    dir: &Path,
    locked: Option<&LockedProject>,
    skip: &[&str],
) -> Result<SourceState, SourceError> {
    let git_error = |source| SourceError::Git {
        project: project.to_string(),
        dir: dir.to_path_buf(),
        source,
    };
    let repo = match Repository::open(dir) {
        Ok(repo) if repo.workdir().is_some_and(|w| same_dir(w, dir)) => repo,
        _ => {
            if locked.is_some() {
                return Err(SourceError::NotGit {
                    project: project.to_string(),
                    dir: dir.to_path_buf(),
                });
            }
            return Ok(SourceState {
                head: None,
                branch: None,
                upstream: None,
                digest: None,
            });
        }
    };
    let head_ref = repo.head().map_err(git_error)?;
    let branch = if head_ref.is_branch() {
        head_ref.shorthand().ok().map(str::to_string)
    } else {
        None
    };
    let commit = head_ref.peel_to_commit().map_err(git_error)?;
    let head = commit.id().to_string();
    let parent = commit.parent_id(0).ok().map(|id| id.to_string());
    let is_hipify_commit = commit
        .summary()
        .ok()
        .flatten()
        .is_some_and(|s| s.starts_with(HIPIFY_COMMIT_SUBJECT));
    let upstream = match locked {
        Some(locked) => {
            let matches = head == locked.commit
                || (is_hipify_commit && parent.as_deref() == Some(&locked.commit));
            if !matches {
                return Err(SourceError::LockMismatch {
                    project: project.to_string(),
                    dir: dir.to_path_buf(),
                    head: crate::version::short_sha(&head).to_string(),
                    locked: crate::version::short_sha(&locked.commit).to_string(),
                });
            }
            locked.commit.clone()
        }
        None if is_hipify_commit => parent.unwrap_or_else(|| head.clone()),
        None => head.clone(),
    };
    let digest = worktree_digest(&repo, &commit, skip).map_err(git_error)?;
    Ok(SourceState {
        head: Some(head),
        branch,
        upstream: Some(upstream),
        digest: Some(digest),
    })
}

/// Which of `paths` (relative to the checkout `dir`) git ignores there; none without git.
pub fn ignored(dir: &Path, paths: &[&str]) -> BTreeSet<String> {
    let Ok(repo) = Repository::open(dir) else {
        return BTreeSet::new();
    };
    paths
        .iter()
        .filter(|path| repo.is_path_ignored(path).unwrap_or(false))
        .map(|path| path.to_string())
        .collect()
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// HEAD's id, then every changed line of the working tree against HEAD (index and untracked
/// files included, ignored files not), as a patch.
fn worktree_digest(
    repo: &Repository,
    head: &git2::Commit<'_>,
    skip: &[&str],
) -> Result<String, git2::Error> {
    let mut hasher = Sha256::new();
    hasher.update(head.id().as_bytes());
    let mut options = DiffOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true)
        .include_typechange(true)
        .force_text(true);
    let tree = head.tree()?;
    let diff = repo.diff_tree_to_workdir_with_index(Some(&tree), Some(&mut options))?;
    diff.print(DiffFormat::Patch, |delta, _hunk, line| {
        let path = delta.new_file().path().or_else(|| delta.old_file().path());
        if path.is_some_and(|p| skip.iter().any(|s| p == Path::new(s))) {
            return true;
        }
        hasher.update([line.origin() as u8]);
        hasher.update(line.content());
        true
    })?;
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs git in a test fixture repository (no signing, a fixed identity).
    pub(crate) fn git(dir: &Path, args: &[&str]) {
        #[expect(clippy::disallowed_methods, reason = "test fixture set-up")]
        let status = std::process::Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(dir)
            .env_remove("GIT_DIR")
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    }

    fn locked(commit: &str) -> LockedProject {
        LockedProject {
            checkout_dir: "p".into(),
            origin: "file:///o".into(),
            requested_ref: "main".into(),
            commit: commit.into(),
            tree: String::new(),
            pin: crate::lock::PinOrigin::Default,
            preset: None,
            origin_flag: None,
            submodules: vec![],
            hipify: None,
        }
    }

    #[test]
    fn digest_follows_uncommitted_changes_and_lock_is_enforced() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        git(root, &["init", "-q", "-b", "release/3.5.x"]);
        fs_err::write(root.join(".gitignore"), "build/\n").expect("write");
        fs_err::write(root.join("a.txt"), "one\n").expect("write");
        git(root, &["add", "."]);
        git(root, &["commit", "-qm", "first"]);
        let first = inspect("p", root, None, &[]).expect("inspect");
        assert_eq!(first.branch.as_deref(), Some("release/3.5.x"));
        assert_eq!(first.upstream, first.head);

        // Ignored output does not change the digest; an edit and an untracked file do.
        fs_err::create_dir_all(root.join("build")).expect("mkdir");
        fs_err::write(root.join("build/out.o"), "x").expect("write");
        assert_eq!(
            inspect("p", root, None, &[]).expect("inspect").digest,
            first.digest
        );
        fs_err::write(root.join("new.txt"), "n\n").expect("write");
        let untracked = inspect("p", root, None, &[]).expect("inspect");
        assert_ne!(untracked.digest, first.digest);
        assert_eq!(
            inspect("p", root, None, &["new.txt"]).expect("skip").digest,
            first.digest
        );
        fs_err::write(root.join("a.txt"), "two\n").expect("write");
        assert_ne!(
            inspect("p", root, None, &[]).expect("inspect").digest,
            untracked.digest
        );

        // A hipify commit on top of the locked commit is fine; anything else is refused.
        let upstream = first.head.clone().expect("head");
        git(root, &["checkout", "-q", "--detach"]);
        git(root, &["add", "."]);
        git(root, &["commit", "-qm", HIPIFY_COMMIT_SUBJECT]);
        let hipified = inspect("p", root, Some(&locked(&upstream)), &[]).expect("hipify commit");
        assert_eq!(hipified.branch, None);
        assert_eq!(hipified.upstream.as_deref(), Some(upstream.as_str()));
        assert_eq!(
            inspect("p", root, None, &[])
                .expect("no lock")
                .upstream
                .as_deref(),
            Some(upstream.as_str())
        );
        let error = inspect("p", root, Some(&locked(&"f".repeat(40))), &[]).expect_err("mismatch");
        assert!(
            error.to_string().contains("but the lock pins ffffffff"),
            "{error}"
        );

        let plain = tempfile::tempdir().expect("tempdir");
        assert_eq!(
            inspect("p", plain.path(), None, &[])
                .expect("no git")
                .digest,
            None
        );
        assert!(matches!(
            inspect("p", plain.path(), Some(&locked(&upstream)), &[]),
            Err(SourceError::NotGit { .. })
        ));
    }
}
