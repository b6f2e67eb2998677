//! Checkout packs: the objects of one checked-out commit (the commit, its trees and blobs)
//! stored without compression or deltas, beside the mirror in
//! `rockbuild-checkout/objects/pack/pack-<commit>.{pack,rev,idx}` (with `.used`, the time it
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
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use git2::{ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};

use super::{Error, Mirror, damage_in_packs, pack_files};
use crate::exec::Runner;
use crate::git::Git;

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
    /// rest after it in a fraction of the time. Runs at low CPU priority (other steps wait for
    /// their own work, not for this); takes the exclusive lock.
    pub fn write_checkout_pack(
        &self,
        runner: &Runner,
        commit: Oid,
        base: Option<Oid>,
    ) -> Result<(), Error> {
        if self.has_checkout_pack(commit) {
            return Ok(());
        }
        let _guard = self.exclusive()?;
        if self.has_checkout_pack(commit) {
            return Ok(());
        }
        let pack_dir = self.checkout_packs().join("objects/pack");
        fs_err::create_dir_all(&pack_dir)
            .map_err(|e| Error::cache(&pack_dir, "creating the checkout packs", e))?;
        // pack-objects names its files by content; they are written here, then renamed to
        // the commit's name (the index last: git sees a pack once its index exists).
        let staging = tempfile::Builder::new()
            .prefix(".new-")
            .tempdir_in(&pack_dir)
            .map_err(|e| Error::cache(&pack_dir, "writing a checkout pack", e))?;
        let base = base.filter(|b| self.has_checkout_pack(*b));
        let list = staging.path().join("objects");
        fs_err::write(&list, object_list(&self.repo()?, commit, base)?)
            .map_err(|e| Error::cache(&list, "writing", e))?;
        let git = Git::new(&self.dir, "cache").log_to(self.dir.join("rockbuild-fetch.log"));
        let output = runner.run(
            &git.cmd([
                "pack-objects".to_string(),
                "-q".into(),
                "--window=0".into(),
                "--depth=0".into(),
                "--no-reuse-object".into(),
                "--compression=0".into(),
                staging.path().join("pack").display().to_string(),
            ])
            .stdin_from(&list)
            .capture_stdout()
            .lower_priority(),
        )?;
        let written = output.stdout.trim();
        if let Some(base) = base {
            let to = pack_dir.join(format!("pack-{commit}.base"));
            fs_err::write(&to, format!("{base}\n")).map_err(|e| Error::cache(&to, "writing", e))?;
        }
        for extension in ["pack", "rev", "idx"] {
            let from = staging.path().join(format!("pack-{written}.{extension}"));
            if extension == "rev" && !from.exists() {
                continue;
            }
            let to = pack_dir.join(format!("pack-{commit}.{extension}"));
            fs_err::rename(&from, &to).map_err(|e| Error::cache(&to, "writing", e))?;
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

/// The commit, its trees and blobs, one object id per line, less those of `base`'s tree
/// (gitlinks are other repositories' commits and are left out).
fn object_list(repo: &Repository, commit: Oid, base: Option<Oid>) -> Result<String, Error> {
    let at =
        |e: git2::Error| Error::local(repo.path(), format!("listing the objects of {commit}"), e);
    let tree_objects = |commit: Oid| -> Result<Vec<Oid>, git2::Error> {
        let tree = repo.find_commit(commit)?.tree()?;
        let mut objects = vec![tree.id()];
        tree.walk(TreeWalkMode::PreOrder, |_, entry| {
            if matches!(entry.kind(), Some(ObjectType::Blob | ObjectType::Tree)) {
                objects.push(entry.id());
            }
            TreeWalkResult::Ok
        })?;
        Ok(objects)
    };
    let skip: HashSet<Oid> = match base {
        Some(base) => tree_objects(base).map_err(at)?.into_iter().collect(),
        None => HashSet::new(),
    };
    let mut list = format!("{commit}\n");
    for object in tree_objects(commit).map_err(at)? {
        if !skip.contains(&object) {
            let _ = writeln!(list, "{object}");
        }
    }
    Ok(list)
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
    fs_err::write(&used, b"").map_err(|e| Error::cache(&used, "writing", e))
}

fn touch(path: &Path, at: SystemTime) -> Result<(), Error> {
    let file = fs_err::File::open(path).map_err(|e| Error::cache(path, "opening", e))?;
    file.file()
        .set_modified(at)
        .map_err(|e| Error::cache(path, "setting the modification time of", e))
}
