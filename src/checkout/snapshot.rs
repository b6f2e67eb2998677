//! A stat snapshot of a checked-out project, so that an up-to-date re-run does not walk 43k
//! files with a status per repository.
//!
//! Per repository it digests what git's own change detection looks at: the lstat data (size,
//! inode, mtime, ctime) of every path in the index (right after a checkout, as git recorded it
//! there: see `Source`), of every directory holding one (a file added or removed anywhere
//! changes its directory's mtime, which is how git's untracked cache sees new files without
//! reading directories), of the index and of `HEAD`.
//! The snapshot stores, per repository, that digest with the repository's state as inspected.
//! A re-run recomputes the digests (repositories in parallel) and reuses the stored state of
//! every repository whose digest is unchanged; any other goes through the full status.
//!
//! Racy entries are never trusted: a path whose mtime or ctime is not older than the snapshot
//! file itself could change again within the file system's timestamp granularity unseen, so
//! its repository counts as changed (git's "racy git" rule, with the snapshot in the index's
//! place).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::plan::NodeState;
use crate::git::local::{self, StatData};
use crate::platform::host::FileStat;

/// Where the snapshot of the project at `dir` lives.
fn path(dir: &Path) -> PathBuf {
    dir.join(".git/rockbuild/snapshot.json")
}

#[derive(Debug, Serialize, Deserialize)]
struct Snapshot {
    /// Whether the submodules were looked into (a run without them sees only the root).
    recurse: bool,
    nodes: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    digest: String,
    #[serde(flatten)]
    state: NodeState,
}

/// The stored state of every repository of the project at `dir`, when the snapshot exists, was
/// taken with the same `recurse` and every digest still matches; `None` sends the caller to
/// the full status walk.
pub fn unchanged(dir: &Path, recurse: bool) -> Option<Vec<NodeState>> {
    let file = path(dir);
    let taken = fs_err::metadata(&file).ok()?;
    let snapshot: Snapshot = crate::input::strict::json_slice(
        &crate::input::read_bytes(&file, crate::input::SNAPSHOT).ok()?,
    )
    .ok()?;
    let bound = Stamp::modified(&crate::platform::host::file_stat(&taken));
    let all_match = snapshot.nodes.par_iter().all(|entry| {
        digest(&node_dir(dir, &entry.state.rel), Some(bound), Source::Disk).as_ref()
            == Some(&entry.digest)
    });
    if !all_match || snapshot.nodes.is_empty() || snapshot.recurse != recurse {
        return None;
    }
    Some(snapshot.nodes.into_iter().map(|e| e.state).collect())
}

/// Where a digest's lines for the files in the index come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// lstat of every file: what the tree holds now.
    Disk,
    /// The stat data git recorded in the index as it wrote each file: no system call per file
    /// (torch's 43k lstat were 0.09 s of a 1.2 s warm checkout). Right after a checkout that
    /// nothing else wrote into, the same lines as `Disk`; where a file differs from its entry,
    /// the next run's digest (from disk) differs and that run walks. Directories, gitlinks,
    /// the index and `HEAD` are read from disk either way.
    Index,
}

/// The digest of every repository (by its path from `dir`), taken before their status is read,
/// in parallel. `None` for a repository that cannot be digested.
pub fn digests(dir: &Path, rels: &[String], source: Source) -> Vec<Option<String>> {
    rels.par_iter()
        .map(|rel| digest(&node_dir(dir, rel), None, source))
        .collect()
}

/// Records the states with the digests taken before they were read; a repository without a
/// digest leaves no snapshot at all (the next run walks).
pub fn record(
    dir: &Path,
    recurse: bool,
    nodes: &[NodeState],
    digests: &[Option<String>],
) -> anyhow::Result<()> {
    forget(dir)?;
    if nodes.is_empty() || nodes.len() != digests.len() {
        return Ok(());
    }
    let mut entries = Vec::new();
    for (node, digest) in nodes.iter().zip(digests) {
        let Some(digest) = digest else {
            return Ok(());
        };
        entries.push(Entry {
            digest: digest.clone(),
            state: node.clone(),
        });
    }
    let json = serde_json::to_vec(&Snapshot {
        recurse,
        nodes: entries,
    })?;
    crate::fsutil::write_atomic(&path(dir), &json)?;
    Ok(())
}

/// Drops the snapshot (a checkout is about to change the tree).
pub fn forget(dir: &Path) -> anyhow::Result<()> {
    match fs_err::remove_file(path(dir)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error.into()),
        _ => Ok(()),
    }
}

fn node_dir(dir: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        dir.to_path_buf()
    } else {
        dir.join(rel)
    }
}

/// A timestamp as the file system stores it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Stamp(i64, i64);

impl Stamp {
    fn modified(stat: &FileStat) -> Stamp {
        Stamp(stat.modified.0, stat.modified.1)
    }

    fn changed(stat: &FileStat) -> Stamp {
        Stamp(stat.changed.0, stat.changed.1)
    }
}

/// The digest of one repository's stat data, or `None` when it cannot be read or an entry is
/// racy (not older than `bound`).
fn digest(work_tree: &Path, bound: Option<Stamp>, source: Source) -> Option<String> {
    let repo = git2::Repository::open(work_tree).ok()?;
    let git_dir = repo.path().to_path_buf();
    let index = repo.index().ok()?;
    let mut files: Vec<(String, Option<StatData>)> = Vec::with_capacity(index.len());
    let mut dirs: BTreeSet<String> = BTreeSet::from([String::new()]);
    for entry in index.iter() {
        let recorded = (source == Source::Index && entry.mode != local::GITLINK_MODE)
            .then(|| StatData::of_entry(&entry));
        let path = String::from_utf8(entry.path).ok()?;
        let mut parent = path.as_str();
        while let Some((up, _)) = parent.rsplit_once('/') {
            if !dirs.insert(up.to_string()) {
                break;
            }
            parent = up;
        }
        files.push((path, recorded));
    }
    let lines: Vec<Option<String>> = files
        .par_iter()
        .map(|(p, recorded)| match recorded {
            Some(stat) => Some(line("f", p, stat)),
            None => stat_line("f", p, &work_tree.join(p), bound),
        })
        .chain(
            dirs.par_iter()
                .map(|d| stat_line("d", d, &node_dir(work_tree, d), bound)),
        )
        .collect();
    let mut hasher = Sha256::new();
    for (kind, file) in [("i", git_dir.join("index")), ("h", git_dir.join("HEAD"))] {
        hasher.update(stat_line(kind, "", &file, bound)?.as_bytes());
    }
    for line in lines {
        hasher.update(line?.as_bytes());
    }
    Some(hex::encode(hasher.finalize()))
}

/// A line of a digest: no mode (a chmod moves the ctime), the rest at the index's widths.
fn line(kind: &str, name: &str, stat: &StatData) -> String {
    format!(
        "{kind} {name} {} {} {}.{} {}.{}\n",
        stat.size, stat.ino, stat.modified.0, stat.modified.1, stat.changed.0, stat.changed.1
    )
}

/// One path's stat data as a line; `None` when it is racy. A missing path is a line too (its
/// later appearance changes the digest).
fn stat_line(kind: &str, name: &str, path: &Path, bound: Option<Stamp>) -> Option<String> {
    let Ok(meta) = fs_err::symlink_metadata(path) else {
        return Some(format!("{kind} {name} missing\n"));
    };
    let stat = crate::platform::host::file_stat(&meta);
    if bound.is_some_and(|b| Stamp::modified(&stat) >= b || Stamp::changed(&stat) >= b) {
        return None;
    }
    Some(line(kind, name, &StatData::of_file(&meta)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with one committed file, its index written.
    fn repo() -> (tempfile::TempDir, NodeState) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        fs_err::create_dir_all(dir.path().join("src")).expect("mkdir");
        fs_err::write(dir.path().join("src/a.c"), "int a;\n").expect("write");
        let mut index = repo.index().expect("index");
        index.add_path(Path::new("src/a.c")).expect("add");
        index.write().expect("write index");
        let state = NodeState {
            rel: String::new(),
            head: "h".into(),
            hipify_parent: None,
            recorded: "h".into(),
            changes: Vec::new(),
            state_tree: "t".into(),
            upstream_tree: None,
        };
        (dir, state)
    }

    #[test]
    fn an_unchanged_tree_is_trusted_and_a_changed_one_is_not() {
        let (dir, state) = repo();
        let digests = digests(dir.path(), &[String::new()], Source::Disk);
        record(dir.path(), false, std::slice::from_ref(&state), &digests).expect("record");
        assert_eq!(unchanged(dir.path(), false), Some(vec![state.clone()]));
        assert_eq!(
            unchanged(dir.path(), true),
            None,
            "taken without submodules"
        );
        // A new file in a directory that holds tracked ones: its mtime moved.
        fs_err::write(dir.path().join("src/b.c"), "int b;\n").expect("add");
        assert_eq!(unchanged(dir.path(), false), None);
        fs_err::remove_file(dir.path().join("src/b.c")).expect("remove");
        assert_eq!(
            unchanged(dir.path(), false),
            None,
            "the directory's mtime moved"
        );
        // A snapshot that does not name every repository's digest is not written.
        record(dir.path(), false, &[state], &[None]).expect("record");
        assert!(!path(dir.path()).exists());
    }

    #[test]
    fn the_index_gives_the_disk_digest_until_a_file_changes() {
        let (dir, _) = repo();
        let root = [String::new()];
        let from_disk = digests(dir.path(), &root, Source::Disk);
        assert!(from_disk[0].is_some());
        assert_eq!(digests(dir.path(), &root, Source::Index), from_disk);
        // Rewritten at the same size: the index still says what git wrote, the disk does not.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs_err::write(dir.path().join("src/a.c"), "int b;\n").expect("rewrite");
        let from_disk = digests(dir.path(), &root, Source::Disk);
        assert_ne!(digests(dir.path(), &root, Source::Index), from_disk);
    }

    #[test]
    fn entries_not_older_than_the_snapshot_are_racy() {
        let (dir, state) = repo();
        let digests = digests(dir.path(), &[String::new()], Source::Disk);
        record(dir.path(), false, std::slice::from_ref(&state), &digests).expect("record");
        // Give the snapshot the file's own timestamp: a change within that tick could be
        // invisible, so the repository is walked instead.
        let file = fs_err::File::open(dir.path().join("src/a.c")).expect("open");
        let modified = file.metadata().and_then(|m| m.modified()).expect("mtime");
        crate::fsutil::append(&path(dir.path()))
            .and_then(|f| f.set_modified(modified))
            .expect("set mtime");
        assert_eq!(unchanged(dir.path(), false), None);
    }
}
