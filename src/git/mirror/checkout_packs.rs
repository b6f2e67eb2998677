//! Checkout packs: the objects of one checked-out commit (the commit, its trees and blobs)
//! stored without compression or deltas, beside the mirror in
//! `rockbuild-checkout/objects/pack/pack-<commit>.{pack,idx}` (with `.used`, the time it
//! was last written or linked, and for a hipify commit `.base`, the upstream commit whose pack
//! holds the objects it shares with it).
//!
//! Why: a warm checkout spends half of its CPU time in git inflating blobs and resolving
//! deltas (zlib, at torch scale about 0.3 s of CPU per 15k files); from a pack whose entries
//! are stored as-is, git copies bytes instead. A new working tree links these packs with the
//! mirror's own, and [`Mirror::link_into`] makes the one of the commit it checks out the newest
//! pack of that repository,
//! because git looks for an object in the newest pack first. The cost is disk: about the size
//! of the commit's working tree each, so a mirror keeps the packs of its [`KEEP`] most recently
//! used packs. The mirror's own packs are untouched (its repacks never see these).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

use super::stored_pack::{self, StoredPack};
use super::{Error, Mirror, damage_in_packs, pack_files};

/// Checkout packs kept per mirror: the ones of the most recently used commits.
const KEEP: usize = 4;

impl Mirror {
    /// The directory holding the checkout packs (laid out as a git object store).
    pub(super) fn checkout_packs(&self) -> PathBuf {
        self.dir.join("rockbuild-checkout")
    }

    /// Whether `commit` has a checkout pack.
    pub fn has_checkout_pack(&self, commit: Oid) -> bool {
        self.checkout_packs()
            .join(format!("objects/pack/pack-{commit}.idx"))
            .is_file()
    }

    /// Writes the checkout pack of `commit` (which must be in the mirror), then removes the
    /// least recently used ones beyond [`KEEP`]. With a `base` that has a checkout pack (the
    /// upstream commit of a hipify commit), the pack holds only the objects `base`'s tree
    /// lacks, and links bring the base's along: the big part is written while hipify runs, the
    /// rest after it in a fraction of the time. `worktree` is a working tree of `commit` (or
    /// one being hipified from it): its files are read instead of inflating their blobs when
    /// they hash to them (`stored_pack.rs`). Runs on a thread at the lowest CPU priority
    /// (other steps wait for their own work, not for this) under the shared lock, so that the
    /// trees reading the mirror meanwhile do not wait for it; the exclusive lock only to put
    /// the pack in place.
    pub fn write_checkout_pack(
        &self,
        commit: Oid,
        base: Option<Oid>,
        worktree: &Path,
    ) -> Result<(), Error> {
        if self.has_checkout_pack(commit) {
            return Ok(());
        }
        let shared = self.shared()?;
        let pack_dir = self.checkout_packs().join("objects/pack");
        fs_err::create_dir_all(&pack_dir)
            .map_err(|e| Error::cache(&pack_dir, "creating the checkout packs", e))?;
        // Written here, then renamed to the commit's name (the index last: git sees a pack
        // once its index exists).
        let staging = tempfile::Builder::new()
            .prefix(".new-")
            .tempdir_in(&pack_dir)
            .map_err(|e| Error::cache(&pack_dir, "writing a checkout pack", e))?;
        let base = base.filter(|b| self.has_checkout_pack(*b));
        let (pack, idx) = (staging.path().join("pack"), staging.path().join("idx"));
        crate::exec::priority::at_lowest(|| {
            let repo = self.repo()?;
            let objects = objects_of(&repo, commit, base)?;
            write_objects(&repo, &objects, worktree, &pack, &idx)
                .map_err(|e| Error::cache(&pack, "writing a checkout pack", e))
                .map(|_| ())
        })
        .unwrap_or_else(|_| {
            let panicked = std::io::Error::other("its thread panicked");
            Err(Error::cache(&pack, "writing a checkout pack", panicked))
        })?;
        drop(shared);
        let _guard = self.exclusive()?;
        if self.has_checkout_pack(commit) {
            // Another checkout wrote it meanwhile.
            return Ok(());
        }
        if let Some(base) = base {
            let to = pack_dir.join(format!("pack-{commit}.base"));
            crate::fsutil::write(&to, format!("{base}\n").as_bytes())
                .map_err(|e| Error::cache(&to, "writing", e))?;
        }
        for (from, extension) in [(&pack, "pack"), (&idx, "idx")] {
            let to = pack_dir.join(format!("pack-{commit}.{extension}"));
            // Read-only, as git leaves its packs: trees hard-link these.
            crate::platform::host::make_read_only(from)
                .and_then(|()| fs_err::rename(from, &to))
                .map_err(|e| Error::cache(&to, "writing", e))?;
        }
        mark_used(&pack_dir.join(format!("pack-{commit}.pack")))?;
        self.prune_checkout_packs(&pack_dir)
    }

    /// Removes checkout packs beyond the [`KEEP`] most recently used (written or linked: the
    /// mtime of their `.used` file; a base counts as used whenever a pack based on it is, so
    /// it goes no earlier). Hold the exclusive lock.
    fn prune_checkout_packs(&self, pack_dir: &Path) -> Result<(), Error> {
        let packs = pack_files(&self.checkout_packs(), "pack");
        // (last used, is a base): a base sorts before a pack based on it used at the same
        // time (file times are coarse: packs linked together tie).
        let mut ranked: Vec<((SystemTime, bool), PathBuf)> = packs
            .iter()
            .map(|p| ((modified(&p.with_extension("used")), false), p.clone()))
            .collect();
        for pack in &packs {
            let Ok(base) = fs_err::read_to_string(pack.with_extension("base")) else {
                continue;
            };
            let base = pack_dir.join(format!("pack-{}.pack", base.trim()));
            let when = modified(&pack.with_extension("used"));
            for ((time, is_base), path) in &mut ranked {
                if *path == base {
                    *time = (*time).max(when);
                    *is_base = true;
                }
            }
        }
        ranked.sort_by_key(|(rank, _)| std::cmp::Reverse(*rank));
        let packs = ranked;
        for (_, pack) in packs.into_iter().skip(KEEP) {
            for extension in ["idx", "rev", "pack", "used", "base"] {
                let file = pack.with_extension(extension);
                if file.exists() {
                    fs_err::remove_file(&file)
                        .map_err(|e| Error::cache(pack_dir, "removing an old checkout pack", e))?;
                }
            }
        }
        Ok(())
    }

    /// Removes the checkout packs when one is damaged (the mirror itself is fine). Returns
    /// why, for a warning. Hold the exclusive lock.
    pub(super) fn discard_damaged_checkout_packs(&self) -> Result<Option<String>, Error> {
        let dir = self.checkout_packs();
        let Some(reason) = damage_in_packs(&dir) else {
            return Ok(None);
        };
        fs_err::remove_dir_all(&dir)
            .map_err(|e| Error::cache(&dir, "removing damaged checkout packs", e))?;
        Ok(Some(reason))
    }

    /// Links the checkout pack of `commit`, if there is one, and its base's into the
    /// repository at `git_dir` (the mirror's packs are already linked there) as its newest
    /// packs. Returns how many packs it linked, or `None` when hard links fail.
    pub(super) fn link_checkout_pack(
        &self,
        git_dir: &Path,
        commit: &str,
    ) -> Result<Option<usize>, Error> {
        let pack_dir = self.checkout_packs().join("objects/pack");
        let mut names = Vec::new();
        let mut next = Some(commit.to_string());
        // A base has no base of its own (see write_checkout_pack); the bound only guards
        // against a hand-edited cache.
        while let Some(commit) = next.take().filter(|_| names.len() < 2) {
            let source = pack_dir.join(format!("pack-{commit}"));
            if !source.with_extension("idx").is_file() {
                break;
            }
            next = fs_err::read_to_string(source.with_extension("base"))
                .ok()
                .map(|text| text.trim().to_string());
            names.push(source);
        }
        if names.is_empty() {
            return Ok(Some(0));
        }
        let newest_other = pack_files(git_dir, "pack")
            .iter()
            .filter(|p| !names.iter().any(|n| p.file_stem() == n.file_name()))
            .map(|p| modified(p))
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH);
        // Git orders packs by mtime in whole seconds, newest first: one second past every
        // other pack of the repository, whatever the clock says.
        let at = SystemTime::now().max(newest_other + Duration::from_secs(1));
        let target_dir = git_dir.join("objects/pack");
        for source in &names {
            let Some(name) = source.file_name() else {
                continue;
            };
            // The index last: git only sees a pack once its index exists.
            for extension in ["pack", "rev", "idx"] {
                let from = source.with_extension(extension);
                let to = target_dir.join(name).with_extension(extension);
                if from.exists() && !to.exists() && fs_err::hard_link(&from, &to).is_err() {
                    return Ok(None);
                }
            }
            touch(&source.with_extension("pack"), at)?;
            mark_used(&source.with_extension("pack"))?;
        }
        Ok(Some(names.len()))
    }
}

/// One object of a checkout pack: its id, its kind, and for a file its path in the tree.
struct Object {
    id: Oid,
    kind: ObjectType,
    file: Option<PathBuf>,
}

/// The commit, its trees and blobs, each once, less those of `base`'s tree (gitlinks are
/// other repositories' commits and are left out).
fn objects_of(repo: &Repository, commit: Oid, base: Option<Oid>) -> Result<Vec<Object>, Error> {
    let at =
        |e: git2::Error| Error::local(repo.path(), format!("listing the objects of {commit}"), e);
    let tree_of = |commit: Oid| repo.find_commit(commit).and_then(|c| c.tree());
    let mut seen: HashSet<Oid> = HashSet::new();
    if let Some(base) = base {
        let tree = tree_of(base).map_err(at)?;
        seen.insert(tree.id());
        tree.walk(TreeWalkMode::PreOrder, |_, entry| {
            seen.insert(entry.id());
            TreeWalkResult::Ok
        })
        .map_err(at)?;
    }
    let tree = tree_of(commit).map_err(at)?;
    let mut objects = vec![Object {
        id: commit,
        kind: ObjectType::Commit,
        file: None,
    }];
    if seen.insert(tree.id()) {
        objects.push(Object {
            id: tree.id(),
            kind: ObjectType::Tree,
            file: None,
        });
    }
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        let kind = entry.kind();
        if matches!(kind, Some(ObjectType::Blob | ObjectType::Tree)) && seen.insert(entry.id()) {
            // Regular files only: a symlink's blob is its target, not the file it points to.
            let regular = matches!(entry.filemode(), 0o100644 | 0o100755);
            objects.push(Object {
                id: entry.id(),
                kind: kind.unwrap_or(ObjectType::Blob),
                file: regular
                    .then(|| {
                        let dir = crate::platform::host::path_from_bytes(dir.as_bytes())?;
                        Some(dir.join(crate::platform::host::path_from_bytes(entry.name_bytes())?))
                    })
                    .flatten(),
            });
        }
        TreeWalkResult::Ok
    })
    .map_err(at)?;
    Ok(objects)
}

/// Writes `objects` as a pack of whole objects stored as-is, each file's from `worktree` when
/// the file there is that blob, else from the object database. Returns how many were read
/// from `worktree`.
fn write_objects(
    repo: &Repository,
    objects: &[Object],
    worktree: &Path,
    pack: &Path,
    idx: &Path,
) -> std::io::Result<usize> {
    let odb = repo.odb().map_err(std::io::Error::other)?;
    let count = u32::try_from(objects.len()).map_err(std::io::Error::other)?;
    let mut out = StoredPack::create(pack, count)?;
    let mut from_files = 0;
    for object in objects {
        let file = object
            .file
            .as_ref()
            .and_then(|file| crate::platform::host::read_without_waiting(&worktree.join(file)))
            .filter(|data| stored_pack::is_object(object.id, ObjectType::Blob, data));
        match file {
            Some(data) => {
                from_files += 1;
                out.add(object.id, object.kind, &data)?;
            }
            None => {
                let stored = odb.read(object.id).map_err(std::io::Error::other)?;
                if stored.kind() != object.kind {
                    return Err(std::io::Error::other(format!(
                        "{} is a {}, its tree says {}",
                        object.id,
                        stored.kind(),
                        object.kind
                    )));
                }
                out.add(object.id, object.kind, stored.data())?;
            }
        }
    }
    out.finish(idx)?;
    tracing::debug!(
        "checkout pack {}: {count} objects, {from_files} read from {}",
        pack.display(),
        worktree.display()
    );
    Ok(from_files)
}

fn modified(path: &Path) -> SystemTime {
    fs_err::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Records that the checkout pack `pack` was just written or linked (its `.used` file's
/// mtime; the pack's own mtime is pushed ahead for git's ordering).
fn mark_used(pack: &Path) -> Result<(), Error> {
    let used = pack.with_extension("used");
    crate::fsutil::write(&used, b"").map_err(|e| Error::cache(&used, "writing", e))
}

fn touch(path: &Path, at: SystemTime) -> Result<(), Error> {
    let file = fs_err::File::open(path).map_err(|e| Error::cache(path, "opening", e))?;
    file.file()
        .set_modified(at)
        .map_err(|e| Error::cache(path, "setting the modification time of", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit with every kind of entry a checkout pack meets: an empty file, a file of
    /// several stored blocks, the same content at two paths, an executable, a symlink, a
    /// nested directory. Fixed author and time, so the ids (and the snapshot) are stable.
    fn fixture(dir: &Path) -> (Repository, Oid) {
        let repo = Repository::init(dir).expect("init");
        let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let files: [(&str, &[u8]); 5] = [
            ("empty", b""),
            ("big.bin", &big),
            ("a/same.txt", b"same\n"),
            ("a/b/same-again.txt", b"same\n"),
            ("run.sh", b"#!/bin/sh\n"),
        ];
        let mut index = repo.index().expect("index");
        for (path, data) in files {
            let file = dir.join(path);
            fs_err::create_dir_all(file.parent().expect("parent")).expect("dirs");
            fs_err::write(&file, data).expect("write");
        }
        crate::platform::host::symlink(Path::new("big.bin"), &dir.join("link")).expect("symlink");
        crate::platform::host::set_executable(&dir.join("run.sh")).expect("chmod");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("add");
        let tree = repo
            .find_tree(index.write_tree().expect("tree"))
            .expect("find");
        let when = git2::Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0))
            .expect("signature");
        let commit = repo
            .commit(None, &when, &when, "fixture", &tree, &[])
            .expect("commit");
        drop(tree);
        (repo, commit)
    }

    /// `git verify-pack -v` of the pack `idx` indexes (which must pass), the pack's path
    /// replaced by `PACK`.
    fn verify_pack(idx: &Path) -> String {
        let runner = crate::exec::Runner::new(crate::env_vars::Environment::capture());
        let cmd = crate::exec::Cmd::new("git")
            .args(["verify-pack", "-v"])
            .arg(idx)
            .capture_stdout();
        let output = runner.run(&cmd).expect("git verify-pack");
        let pack = idx.with_extension("pack").display().to_string();
        output.stdout.replace(&pack, "PACK")
    }

    /// The pack git verifies, whole objects only; files that no longer are their blob (edited,
    /// removed) come from the object database, so the pack is the same whatever the tree holds.
    #[test]
    fn a_checkout_pack_is_whole_objects_git_verifies_from_any_working_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (repo, commit) = fixture(dir.path());
        let objects = objects_of(&repo, commit, None).expect("objects");
        let out = tempfile::tempdir().expect("tempdir");
        let write = |name: &str| {
            let (pack, idx) = (
                out.path().join(format!("{name}.pack")),
                out.path().join(format!("{name}.idx")),
            );
            let from_files =
                write_objects(&repo, &objects, dir.path(), &pack, &idx).expect("write");
            (
                from_files,
                fs_err::read(&pack).expect("pack"),
                verify_pack(&idx),
            )
        };
        // Four files are their blobs (the two same ones are one blob, read once); the
        // symlink's blob is its target, from the object database.
        let (from_files, clean, listing) = write("clean");
        assert_eq!(from_files, 4);
        fs_err::write(dir.path().join("big.bin"), b"edited").expect("edit");
        fs_err::remove_file(dir.path().join("a/b/same-again.txt")).expect("remove");
        let (from_files, edited, _) = write("edited");
        assert_eq!((from_files, clean), (2, edited));
        insta::assert_snapshot!(listing);
    }

    /// With a base, only what the base's tree lacks (and the commit).
    #[test]
    fn a_pack_on_a_base_holds_what_the_base_lacks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (repo, base) = fixture(dir.path());
        let parent = repo.find_commit(base).expect("commit");
        let mut tree = repo
            .treebuilder(Some(&parent.tree().expect("tree")))
            .expect("builder");
        let blob = repo.blob(b"hipified\n").expect("blob");
        tree.insert("empty", blob, 0o100644).expect("insert");
        let tree = repo.find_tree(tree.write().expect("write")).expect("tree");
        let sig = parent.author();
        let commit = repo
            .commit(None, &sig, &sig, "hipify", &tree, &[&parent])
            .expect("commit");
        let ids: Vec<Oid> = objects_of(&repo, commit, Some(base))
            .expect("objects")
            .iter()
            .map(|o| o.id)
            .collect();
        assert_eq!(ids, vec![commit, tree.id(), blob]);
    }
}
