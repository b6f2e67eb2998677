//! Local repository reads through git2: no process spawn, no network. Objects, gitlinks,
//! `.gitmodules`, tags, config and status.

use std::path::Path;
use std::time::UNIX_EPOCH;

use git2::{
    IndexEntry, IndexEntryExtendedFlag, IndexEntryFlag, ObjectType, Oid, Repository, StatusOptions,
};
use rayon::prelude::*;

use super::Error;

/// Wraps a git2 error with the repository and what was being done.
fn at(repo: &Repository, what: impl Into<String>) -> impl FnOnce(git2::Error) -> Error {
    let dir = repo.workdir().unwrap_or_else(|| repo.path()).to_path_buf();
    let what = what.into();
    move |source| Error::local(dir, what, source)
}

/// Opens the repository at exactly `dir` (no search upwards: a missing `.git` must not find
/// an enclosing repository).
pub fn open(dir: &Path) -> Result<Repository, Error> {
    Repository::open(dir).map_err(|e| Error::local(dir, "opening the git repository", e))
}

/// HEAD's commit, if HEAD points at one.
pub fn head_commit(repo: &Repository) -> Option<Oid> {
    repo.head().ok()?.peel_to_commit().ok().map(|c| c.id())
}

/// Peels a tag or commit object to its commit.
pub fn peel_to_commit(repo: &Repository, oid: Oid) -> Result<Oid, Error> {
    let object = repo
        .find_object(oid, None)
        .map_err(at(repo, format!("object {oid} is not in the repository")))?;
    Ok(object
        .peel(ObjectType::Commit)
        .map_err(at(repo, format!("{oid} does not point at a commit")))?
        .id())
}

/// The tree of a commit.
pub fn tree_of(repo: &Repository, commit: Oid) -> Result<Oid, Error> {
    Ok(repo
        .find_commit(commit)
        .map_err(at(repo, format!("reading commit {commit}")))?
        .tree_id())
}

/// The committer date of a commit as git accepts it in GIT_*_DATE (`<seconds> <+hhmm>`).
pub fn commit_date(repo: &Repository, commit: Oid) -> Result<String, Error> {
    let time = repo
        .find_commit(commit)
        .map_err(at(repo, format!("reading commit {commit}")))?
        .committer()
        .when();
    let offset = time.offset_minutes();
    let sign = if offset < 0 { '-' } else { '+' };
    let offset = offset.unsigned_abs();
    Ok(format!(
        "{} {sign}{:02}{:02}",
        time.seconds(),
        offset / 60,
        offset % 60
    ))
}

/// Mode of a symbolic link in a git tree.
const SYMLINK_MODE: i32 = 0o120000;

/// The bytes of `path` in `commit`'s tree, read as the repository's content: `None` when it
/// does not exist (or is not a file). A symbolic link at `path` or on its way is refused, never
/// read as the file it names (checked out, it would lead out of the tree), and so is a blob
/// larger than [`crate::input::REPOSITORY_FILE`].
pub fn read_file_at(repo: &Repository, commit: Oid, path: &str) -> Result<Option<Vec<u8>>, Error> {
    let what = || format!("reading {path} at {commit}");
    let mut tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(at(repo, what()))?;
    let components: Vec<&str> = path
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    for (index, component) in components.iter().enumerate() {
        let Some(entry) = tree.get_name(component).map(|e| e.to_owned()) else {
            return Ok(None);
        };
        let so_far = components[..=index].join("/");
        if entry.filemode() == SYMLINK_MODE {
            let target = entry
                .to_object(repo)
                .ok()
                .and_then(|o| o.into_blob().ok())
                .map(|blob| String::from_utf8_lossy(blob.content()).into_owned());
            return Err(Error::LinkInTree {
                path: so_far,
                commit: commit.to_string(),
                target,
            });
        }
        let object = entry.to_object(repo).map_err(at(repo, what()))?;
        if index + 1 < components.len() {
            match object.into_tree() {
                Ok(next) => tree = next,
                Err(_) => return Ok(None),
            }
            continue;
        }
        let Ok(blob) = object.into_blob() else {
            return Ok(None);
        };
        let limit = crate::input::REPOSITORY_FILE.bytes;
        if blob.size() as u64 > limit {
            return Err(Error::TooLargeInTree {
                path: so_far,
                commit: commit.to_string(),
                limit,
            });
        }
        return Ok(Some(blob.content().to_vec()));
    }
    Ok(None)
}

/// A submodule as recorded in a commit: the gitlink's path and commit, and its `.gitmodules`
/// entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gitlink {
    pub name: String,
    pub path: String,
    pub commit: String,
    pub url: String,
}

/// Every gitlink in `commit`'s tree (not recursive into submodules), with `.gitmodules` names
/// and URLs. A gitlink without a `.gitmodules` entry is reported with an empty URL.
pub fn gitlinks_at(repo: &Repository, commit: Oid) -> Result<Vec<Gitlink>, Error> {
    let what = || format!("listing the submodules of {commit}");
    let tree = repo
        .find_commit(commit)
        .and_then(|c| c.tree())
        .map_err(at(repo, what()))?;
    let modules = read_file_at(repo, commit, ".gitmodules")?
        .map(|bytes| parse_gitmodules(&String::from_utf8_lossy(&bytes)))
        .unwrap_or_default();
    let mut links = Vec::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |root, entry| {
        if entry.filemode() == GITLINK_MODE as i32
            && let Ok(name) = entry.name()
        {
            let path = format!("{root}{name}");
            let module = modules.iter().find(|m| m.path == path);
            links.push(Gitlink {
                name: module.map_or_else(|| path.clone(), |m| m.name.clone()),
                url: module.map(|m| m.url.clone()).unwrap_or_default(),
                commit: entry.id().to_string(),
                path,
            });
        }
        git2::TreeWalkResult::Ok
    })
    .map_err(at(repo, what()))?;
    Ok(links)
}

/// One `[submodule "name"]` section of a `.gitmodules` file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleEntry {
    pub name: String,
    pub path: String,
    pub url: String,
}

/// Parses the subset of git-config syntax `.gitmodules` files use. An empty or
/// comment-only file has no entries (audio ships an empty one: W19).
pub fn parse_gitmodules(text: &str) -> Vec<ModuleEntry> {
    let mut entries: Vec<ModuleEntry> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("[submodule") {
            let name = rest.trim().trim_end_matches(']').trim().trim_matches('"');
            entries.push(ModuleEntry {
                name: name.to_string(),
                ..ModuleEntry::default()
            });
            continue;
        }
        if line.starts_with('[') {
            continue;
        }
        let Some(entry) = entries.last_mut() else {
            continue;
        };
        if let Some((key, value)) = line.split_once('=') {
            let value = value.trim().trim_matches('"').to_string();
            match key.trim() {
                "path" => entry.path = value,
                "url" => entry.url = value,
                _ => {}
            }
        }
    }
    entries.retain(|e| !e.path.is_empty());
    entries
}

/// Points the lightweight tag `name` at `oid`, replacing it if it exists (`git tag -f`).
/// Lightweight tags are never signed, whatever `tag.gpgSign` says.
pub fn force_tag(repo: &Repository, name: &str, oid: Oid) -> Result<(), Error> {
    let what = || format!("tagging {oid} as {name}");
    let object = repo.find_object(oid, None).map_err(at(repo, what()))?;
    repo.tag_lightweight(name, &object, true)
        .map_err(at(repo, what()))?;
    Ok(())
}

/// The commit a tag points at, if the tag exists.
pub fn tag_target(repo: &Repository, name: &str) -> Option<Oid> {
    let reference = repo.find_reference(&format!("refs/tags/{name}")).ok()?;
    reference.peel_to_commit().ok().map(|c| c.id())
}

pub fn set_config(repo: &Repository, key: &str, value: &str) -> Result<(), Error> {
    repo.config()
        .and_then(|mut config| config.set_str(key, value))
        .map_err(at(repo, format!("setting {key}")))
}

/// A submodule's entry in its parent's index (git records no stat data for it).
pub const GITLINK_MODE: u32 = 0o160000;

/// A file's stat data at the widths git's index stores it (32 bits, truncated as git
/// truncates): from an index entry, or from disk. Equal when the file is as git recorded it;
/// on a file system whose inode numbers or sizes do not fit, possibly unequal when it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatData {
    pub size: u32,
    pub ino: u32,
    pub modified: (u32, u32),
    pub changed: (u32, u32),
}

impl StatData {
    pub fn of_file(meta: &std::fs::Metadata) -> StatData {
        let stat = crate::platform::host::file_stat(meta);
        StatData {
            size: stat.size as u32,
            ino: stat.inode as u32,
            modified: (stat.modified.0 as u32, stat.modified.1 as u32),
            changed: (stat.changed.0 as u32, stat.changed.1 as u32),
        }
    }

    pub fn of_entry(entry: &IndexEntry) -> StatData {
        StatData {
            size: entry.file_size,
            ino: entry.ino,
            modified: (entry.mtime.seconds() as u32, entry.mtime.nanoseconds()),
            changed: (entry.ctime.seconds() as u32, entry.ctime.nanoseconds()),
        }
    }
}

/// The second (since the epoch) the repository's index was last written in: git's unit for
/// racily clean entries.
pub fn index_written(repo: &Repository) -> Result<u64, Error> {
    let modified = fs_err::metadata(repo.path().join("index"))
        .and_then(|meta| meta.modified())
        .map_err(|e| git2::Error::from_str(&e.to_string()))
        .map_err(at(repo, "reading the index"))?;
    Ok(modified
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs())
}

/// Writes the index again, with skip-worktree set on `skip_worktree` (paths it holds), as
/// `git update-index --skip-worktree` would, without re-hashing files. git, writing an index,
/// re-hashes every file whose mtime falls in the second the index it read was written in
/// ("racily clean": at git's one-second resolution, a file rewritten in that second at the
/// same size looks unchanged), and zeroes the recorded size of those that changed, so that
/// every later status re-reads them. After a checkout that is most of the files. This applies
/// the same rule by their stat data instead: an entry of that second whose file's size,
/// inode, mtime or ctime differs from the recorded ones has its size zeroed. What it cannot
/// see is a rewrite at the same size within the very timestamp tick git wrote the file in,
/// which git's hash would: a few milliseconds on Linux's ext4 and tmpfs, a whole second on a
/// file system without sub-second times. Hence only for trees nobody writes into while git
/// checks them out. libgit2 keeps the index extensions it knows (cached trees, resolve undo)
/// and drops the others (the untracked cache: a cost for git's next status, not an error).
pub fn rewrite_index(repo: &Repository, skip_worktree: &[String]) -> Result<(), Error> {
    let written = index_written(repo)?;
    let mut index = repo.index().map_err(at(repo, "reading the index"))?;
    let changed: Vec<IndexEntry> = match repo.workdir() {
        // A stat per entry of the index's second (after a checkout, up to all of them).
        Some(workdir) => index
            .iter()
            .collect::<Vec<_>>()
            .into_par_iter()
            .filter(|entry| {
                entry.mode != GITLINK_MODE
                    && entry.flags_extended & IndexEntryExtendedFlag::SKIP_WORKTREE.bits() == 0
                    && u64::from(entry.mtime.seconds() as u32) >= written
            })
            .filter(|entry| {
                let Some(path) = crate::platform::host::path_from_bytes(&entry.path) else {
                    return true;
                };
                fs_err::symlink_metadata(workdir.join(path)).map_or(true, |meta| {
                    StatData::of_file(&meta) != StatData::of_entry(entry)
                })
            })
            .collect(),
        None => Vec::new(),
    };
    for mut entry in changed {
        let what = format!(
            "marking {} changed in the index",
            String::from_utf8_lossy(&entry.path)
        );
        entry.file_size = 0;
        index.add(&entry).map_err(at(repo, what))?;
    }
    for path in skip_worktree {
        let what = || format!("marking {path} skip-worktree in the index");
        let mut entry = index
            .get_path(Path::new(path), 0)
            .ok_or_else(|| git2::Error::from_str("no such entry"))
            .map_err(at(repo, what()))?;
        entry.flags_extended |= IndexEntryExtendedFlag::SKIP_WORKTREE.bits();
        // libgit2 (1.9, `write_index`) derives this bit from the extended flags only when it
        // writes version 2 or 3; a version 4 index (`feature.manyFiles`) is written with the
        // bits as read, which would drop the skip-worktree of an entry that had none.
        entry.flags |= IndexEntryFlag::EXTENDED.bits();
        index.add(&entry).map_err(at(repo, what()))?;
    }
    index.write().map_err(at(repo, "writing the index"))
}

/// Uncommitted changes as `git status --porcelain` style lines (`M path`, `?? path`),
/// submodules excluded (they are checked as repositories of their own).
pub fn uncommitted_changes(repo: &Repository) -> Result<Vec<String>, Error> {
    let mut options = StatusOptions::new();
    options
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo
        .statuses(Some(&mut options))
        .map_err(at(repo, "reading the status"))?;
    let mut lines = Vec::new();
    for entry in statuses.iter() {
        let status = entry.status();
        let code = if status.is_wt_new() && !status.is_index_new() {
            "??"
        } else if status.is_wt_deleted() || status.is_index_deleted() {
            "D"
        } else if status.is_index_new() {
            "A"
        } else {
            "M"
        };
        let path = String::from_utf8_lossy(entry.path_bytes()).into_owned();
        lines.push(format!("{code} {path}"));
    }
    lines.sort();
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_gitmodules() {
        let text = "[submodule \"third_party/kineto\"]\n\tpath = third_party/kineto\n\turl = ../kineto.git\n\
                    [submodule \"fmt\"]\n  path = third_party/fmt\n  url = \"https://github.com/fmtlib/fmt\"\n  branch = main\n";
        assert_eq!(
            parse_gitmodules(text),
            vec![
                ModuleEntry {
                    name: "third_party/kineto".into(),
                    path: "third_party/kineto".into(),
                    url: "../kineto.git".into()
                },
                ModuleEntry {
                    name: "fmt".into(),
                    path: "third_party/fmt".into(),
                    url: "https://github.com/fmtlib/fmt".into()
                },
            ]
        );
        assert!(parse_gitmodules("").is_empty());
        assert!(parse_gitmodules("# nothing\n").is_empty());
    }

    /// git's own view of a test repository.
    fn git_output(dir: &Path, args: &[&str]) -> String {
        #[expect(clippy::disallowed_methods, reason = "reading a test repository")]
        let output = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env_remove("GIT_DIR")
            .output()
            .expect("git");
        assert!(output.status.success(), "git {args:?}");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Sleeps into the next second (and a little past its start).
    fn next_second() {
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after the epoch");
        let next = std::time::Duration::from_secs(now.as_secs() + 1);
        std::thread::sleep(next - now + std::time::Duration::from_millis(20));
    }

    fn mtime_seconds(path: &Path) -> u64 {
        fs_err::metadata(path)
            .and_then(|m| m.modified())
            .expect("mtime")
            .duration_since(UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs()
    }

    /// git's racy case: a file rewritten at the same size in the second its index was written
    /// in looks unchanged by its stat data once the index is written again in a later second;
    /// git re-hashes such files when it writes the index, `rewrite_index` compares their stat
    /// data at the file system's resolution. Either way git's next status must see the change.
    #[test]
    fn a_file_rewritten_in_its_index_second_stays_changed_for_git() {
        for _ in 0..3 {
            let dir = tempfile::tempdir().expect("tempdir");
            let git = |args: &[&str]| crate::build::source::tests::git(dir.path(), args);
            git(&["init", "-q"]);
            let file = dir.path().join("a.c");
            next_second();
            fs_err::write(&file, "int a;\n").expect("write");
            git(&["add", "a.c"]);
            fs_err::write(&file, "int b;\n").expect("rewrite at the same size");
            if mtime_seconds(&file) != mtime_seconds(&dir.path().join(".git/index")) {
                continue; // a second went by meanwhile: not the case under test
            }
            next_second();
            rewrite_index(&open(dir.path()).expect("open"), &[]).expect("rewrite");
            assert_eq!(
                git_output(dir.path(), &["status", "--porcelain"]),
                "AM a.c\n"
            );
            return;
        }
        panic!("three tries, each across a second boundary");
    }

    #[test]
    fn a_rewritten_index_marks_gitlinks_skip_worktree_and_keeps_every_stat() {
        // Versions 2 and 3 are git's default; 4 is what `feature.manyFiles` asks for.
        for version in ["2", "3", "4"] {
            rewrite_index_at_version(version);
        }
    }

    #[track_caller]
    fn rewrite_index_at_version(version: &str) {
        let dir = tempfile::tempdir().expect("tempdir");
        let git = |args: &[&str]| crate::build::source::tests::git(dir.path(), args);
        git(&["init", "-q"]);
        git(&["config", "index.version", version]);
        fs_err::create_dir_all(dir.path().join("src")).expect("mkdir");
        fs_err::write(dir.path().join("src/a.c"), "int a;\n").expect("write");
        git(&["add", "src/a.c"]);
        let sub = "1111111111111111111111111111111111111111";
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub},third_party/sub"),
        ]);
        git(&["commit", "-q", "-m", "fixture"]);
        let stat = |dir: &Path| git_output(dir, &["ls-files", "--debug", "src/a.c"]);
        let before = stat(dir.path());

        let repo = open(dir.path()).expect("open");
        rewrite_index(&repo, &["third_party/sub".to_string()]).expect("rewrite");
        assert_eq!(
            git_output(dir.path(), &["ls-files", "-v"]),
            "H src/a.c\nS third_party/sub\n",
            "index version {version}"
        );
        assert_eq!(stat(dir.path()), before, "the file's stat data is kept");
        assert_eq!(git_output(dir.path(), &["status", "--porcelain"]), "");

        let error = rewrite_index(&repo, &["third_party/none".to_string()])
            .expect_err("a path the index does not hold");
        assert_eq!(
            format!("{error:#}").replace(&dir.path().display().to_string(), "DIR"),
            "DIR/: marking third_party/none skip-worktree in the index: no such entry"
        );
    }
}
