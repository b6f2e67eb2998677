//! The mirror cache: one bare repository per origin under `<cache-dir>/git/`, holding every
//! object rockbuild fetched from that origin. `lock` and `checkout` fetch into the mirrors only;
//! working trees get their objects from them (hard links of the mirror's pack files, a local
//! copy across file systems), so a second checkout of the same or a nearby stack fetches only
//! new objects, and a commit already in the cache needs no network at all.
//!
//! Safety: every mirror has a lock file beside it (`<name>.git.lock`): fetches, pushes and
//! repacks hold it exclusively, readers (trees linking packs, submodule clones) shared. A mirror
//! that fails its check on open (no HEAD, unreadable, a pack whose trailer disagrees with its
//! index — what a truncated download or a full disk leaves) is moved aside and re-created, with
//! a warning. Mirrors are created in a temporary directory and renamed into place, so a killed
//! run never leaves half a mirror. Every fetched commit gets a ref (`refs/rockbuild/commits/`),
//! so nothing rockbuild fetched is ever unreachable.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::{Error, Git, Origin, RefName, TransferLimits, is_full_sha, local};
use crate::exec::Runner;

mod checkout_packs;
mod stored_pack;

/// Where the mirrors of a cache directory live.
pub fn mirrors_dir(cache_dir: &Path) -> PathBuf {
    cache_dir.join("git")
}

/// Ref namespace for commits fetched into a mirror.
const COMMIT_REFS: &str = "refs/rockbuild/commits";
/// Packs above this count are merged into one (under the exclusive lock).
const MAX_PACKS: usize = 50;
/// Hash length of SHA-1 repositories (pack and index trailers).
const HASH_LEN: u64 = 20;

/// A bare repository in the cache holding the objects of one origin.
#[derive(Clone, Debug)]
pub struct Mirror {
    pub dir: PathBuf,
    pub origin: Origin,
    lock_path: PathBuf,
}

/// Held while a mirror is in use; dropping it releases the file lock.
#[derive(Debug)]
pub struct Guard {
    _lock: fs_err::File,
}

/// What fetching a ref into a mirror did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fetched {
    pub commit: Oid,
    /// False when the commit was already in the mirror (no network).
    pub transferred: bool,
}

/// One fetch from a mirror's origin.
#[derive(Clone, Copy)]
struct OriginFetch<'a> {
    reference: &'a str,
    depth: Option<u32>,
    /// Every object, as into an empty repository (`--refetch`).
    refetch: bool,
}

/// How a working tree got its objects from a mirror.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    /// Pack files hard-linked (this many new ones).
    Linked(usize),
    /// Hard links failed (another file system): the caller copies with a local fetch.
    NeedsCopy,
}

impl Mirror {
    /// The mirror of `origin` in `cache_dir`, created when missing and re-created (with a
    /// warning through `warn`) when damaged.
    pub fn open(cache_dir: &Path, origin: &Origin, warn: &dyn Fn(String)) -> Result<Mirror, Error> {
        let root = mirrors_dir(cache_dir);
        let name = mirror_name(origin.as_str());
        let mirror = Mirror {
            dir: root.join(&name),
            origin: origin.clone(),
            lock_path: root.join(format!("{name}.lock")),
        };
        fs_err::create_dir_all(&root)
            .map_err(|e| Error::cache(&root, "creating the cache directory", e))?;
        let _guard = mirror.exclusive()?;
        if mirror.dir.exists() {
            match damage(&mirror.dir) {
                None => {
                    if let Some(reason) = mirror.discard_damaged_checkout_packs()? {
                        warn(format!(
                            "the checkout packs of {} are damaged ({reason}); removed them",
                            mirror.dir.display()
                        ));
                    }
                    return Ok(mirror);
                }
                Some(reason) => {
                    warn(format!(
                        "the git cache {} of {} is damaged ({reason}); re-cloning it",
                        mirror.dir.display(),
                        origin
                    ));
                    mirror.discard()?;
                }
            }
        }
        mirror.create()?;
        Ok(mirror)
    }

    fn exclusive(&self) -> Result<Guard, Error> {
        self.lock(false)
    }

    /// A shared lock: objects stay where they are while it is held.
    pub fn shared(&self) -> Result<Guard, Error> {
        self.lock(true)
    }

    fn lock(&self, shared: bool) -> Result<Guard, Error> {
        let file = fs_err::File::create(&self.lock_path)
            .map_err(|e| Error::cache(&self.lock_path, "opening the lock file", e))?;
        let locked = if shared {
            file.file().lock_shared()
        } else {
            file.file().lock()
        };
        locked.map_err(|e| Error::cache(&self.lock_path, "locking", e))?;
        Ok(Guard { _lock: file })
    }

    /// Creates the bare repository beside its final place and renames it in.
    fn create(&self) -> Result<(), Error> {
        let parent = self.dir.parent().unwrap_or(Path::new("."));
        let staging = tempfile::Builder::new()
            .prefix(".new-")
            .tempdir_in(parent)
            .map_err(|e| Error::cache(parent, "creating a mirror", e))?;
        let repo = Repository::init_bare(staging.path())
            .map_err(|e| Error::local(staging.path(), "creating a mirror", e))?;
        for (key, value) in [
            // Readers link pack files: git must never delete one behind their back (rockbuild
            // repacks under the exclusive lock), and every transfer must arrive as a pack.
            ("gc.auto", "0"),
            ("transfer.unpackLimit", "1"),
            ("fetch.unpackLimit", "1"),
            ("receive.unpackLimit", "1"),
            // Trees fetch pinned commits from here by SHA (a copy across file systems, a
            // submodule update).
            ("uploadpack.allowAnySHA1InWant", "true"),
            ("core.logAllRefUpdates", "false"),
        ] {
            local::set_config(&repo, key, value)?;
        }
        fs_err::write(
            staging.path().join("rockbuild-origin"),
            self.origin.as_str(),
        )
        .map_err(|e| Error::cache(staging.path(), "writing the origin", e))?;
        let staged = staging.keep();
        fs_err::rename(&staged, &self.dir).map_err(|e| Error::cache(&self.dir, "creating", e))
    }

    /// Moves a damaged mirror out of the way and deletes it.
    fn discard(&self) -> Result<(), Error> {
        let parent = self.dir.parent().unwrap_or(Path::new("."));
        let trash = tempfile::Builder::new()
            .prefix(".damaged-")
            .tempdir_in(parent)
            .map_err(|e| Error::cache(parent, "moving a damaged mirror aside", e))?;
        fs_err::rename(&self.dir, trash.path().join("mirror"))
            .map_err(|e| Error::cache(&self.dir, "moving a damaged mirror aside", e))?;
        drop(trash);
        Ok(())
    }

    pub fn repo(&self) -> Result<Repository, Error> {
        Repository::open_bare(&self.dir)
            .map_err(|e| Error::local(&self.dir, "opening the mirror", e))
    }

    /// The commit `sha` names, if it is in the mirror.
    pub fn commit(&self, sha: &str) -> Option<Oid> {
        let oid = Oid::from_str(sha).ok().filter(|_| is_full_sha(sha))?;
        let repo = self.repo().ok()?;
        repo.find_commit(oid).ok().map(|c| c.id())
    }

    /// Fetches `reference` (branch, tag or full SHA) from the origin unless it is a commit the
    /// mirror already has. `depth` applies to a new or shallow mirror only: a mirror never
    /// loses history it has.
    pub fn fetch(
        &self,
        runner: &Runner,
        reference: &RefName,
        depth: Option<u32>,
        limits: TransferLimits,
        project: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Fetched, Error> {
        let reference = reference.as_str();
        if let Some(commit) = self.commit(reference) {
            return Ok(Fetched {
                commit,
                transferred: false,
            });
        }
        let _guard = self.exclusive()?;
        // Another process may have fetched it while this one waited for the lock.
        if let Some(commit) = self.commit(reference) {
            return Ok(Fetched {
                commit,
                transferred: false,
            });
        }
        let request = OriginFetch {
            reference,
            depth,
            refetch: false,
        };
        self.fetch_from_origin(runner, &request, limits, project, progress)
    }

    /// Heals a mirror in which a checkout found a damaged object where the check at open does
    /// not look (inside a pack whose trailer is intact): every pack, checkout packs included,
    /// is verified (`git verify-pack`: each object inflated and hashed), the damaged ones are
    /// removed, and `commit` is fetched again from the origin as a new clone would fetch it
    /// (`--refetch`: every object, whatever the mirror already has). Returns the file names of
    /// the packs removed, for the trees that linked them.
    pub fn heal(
        &self,
        runner: &Runner,
        commit: &RefName,
        limits: TransferLimits,
        project: &str,
    ) -> Result<Vec<String>, Error> {
        let _guard = self.exclusive()?;
        let git = Git::new(&self.dir, project).log_to(self.dir.join("rockbuild-fetch.log"));
        let mut removed = Vec::new();
        for dir in [self.dir.clone(), self.checkout_packs()] {
            for idx in pack_files(&dir, "idx") {
                let verify = git.cmd(["verify-pack".into(), idx.as_os_str().to_owned()]);
                if runner.run(&verify).is_ok() {
                    continue;
                }
                for extension in ["pack", "idx", "rev", "used", "base"] {
                    let file = idx.with_extension(extension);
                    if file.exists() {
                        fs_err::remove_file(&file)
                            .map_err(|e| Error::cache(&file, "removing a damaged pack", e))?;
                    }
                }
                if let Some(name) = idx.file_stem() {
                    removed.push(name.to_string_lossy().into_owned());
                }
            }
        }
        let request = OriginFetch {
            reference: commit.as_str(),
            depth: None,
            refetch: true,
        };
        self.fetch_from_origin(runner, &request, limits, project, &mut |_| {})?;
        Ok(removed)
    }

    /// `git fetch` from the origin into the mirror (hold the exclusive lock).
    fn fetch_from_origin(
        &self,
        runner: &Runner,
        request: &OriginFetch<'_>,
        limits: TransferLimits,
        project: &str,
        progress: &mut dyn FnMut(&str),
    ) -> Result<Fetched, Error> {
        let OriginFetch {
            reference,
            depth,
            refetch,
        } = *request;
        let repo = self.repo()?;
        let fresh = repo
            .references_glob(&format!("{COMMIT_REFS}/*"))
            .map(|mut refs| refs.next().is_none())
            .unwrap_or(true);
        let depth = depth.filter(|_| fresh || repo.is_shallow());
        let git = Git::new(&self.dir, project)
            .log_to(self.dir.join("rockbuild-fetch.log"))
            .allow_file_protocol(super::is_local_origin(self.origin.as_str()));
        let mut args = vec![
            "fetch".to_string(),
            "--progress".into(),
            "--no-tags".into(),
            "--no-recurse-submodules".into(),
            // A cold checkout fetches 33 mirrors: no `git maintenance` process after each
            // (gc.auto=0 makes it a no-op here anyway; rockbuild repacks in `maintain`).
            "--no-auto-maintenance".into(),
        ];
        if let Some(depth) = depth {
            args.push(format!("--depth={depth}"));
        }
        if refetch {
            args.push("--refetch".into());
        }
        // Options end here: origin and ref are validated, and still never read as options.
        args.push("--".into());
        args.push(self.origin.as_str().to_string());
        args.push(reference.to_string());
        runner
            .run_streaming(&git.transfer(args, limits), progress)
            .map_err(|error| {
                super::fetch_failure(error, reference, project, self.origin.as_str())
            })?;
        let fetch_head = fs_err::read_to_string(self.dir.join("FETCH_HEAD"))
            .map_err(|e| Error::cache(&self.dir, "reading FETCH_HEAD", e))?;
        let object = super::parse_fetch_head(&fetch_head)
            .and_then(|(object, _)| Oid::from_str(&object).ok())
            .ok_or_else(|| {
                Error::cache(
                    &self.dir,
                    "reading FETCH_HEAD",
                    std::io::Error::other(format!("no object after fetching '{reference}'")),
                )
            })?;
        let commit = local::peel_to_commit(&repo, object)?;
        self.keep(&repo, commit, "commits")?;
        self.maintain(runner)?;
        Ok(Fetched {
            commit,
            transferred: true,
        })
    }

    /// A ref for `commit` so it stays reachable (and fetchable by name).
    fn keep(&self, repo: &Repository, commit: Oid, kind: &str) -> Result<(), Error> {
        repo.reference(
            &format!("refs/rockbuild/{kind}/{commit}"),
            commit,
            true,
            "rockbuild",
        )
        .map(|_| ())
        .map_err(|e| Error::local(&self.dir, format!("keeping {commit}"), e))
    }

    /// Stores `commit` of the repository `from` (e.g. a hipify commit) in the mirror.
    pub fn store(
        &self,
        runner: &Runner,
        from: &Path,
        commit: Oid,
        kind: &str,
    ) -> Result<(), Error> {
        if self.commit(&commit.to_string()).is_some() {
            return Ok(());
        }
        let _guard = self.exclusive()?;
        // A hipify commit's few hundred new objects, sent as they are: finding deltas and
        // compressing them cost more than the push itself (torch: 0.39 -> 0.14 s of CPU), and
        // the mirror's copy is read only when the commit's checkout pack is gone.
        let git = Git::new(from, "cache")
            .allow_file_protocol(true)
            .config("pack.window", "0")
            .config("pack.compression", "0");
        runner.run(&git.cmd([
            "push".to_string(),
            "--quiet".into(),
            "--no-verify".into(),
            self.dir.display().to_string(),
            format!("{commit}:refs/rockbuild/{kind}/{commit}"),
        ]))?;
        Ok(())
    }

    /// Merges the mirror's packs into one when they pile up (every fetch adds one).
    fn maintain(&self, runner: &Runner) -> Result<(), Error> {
        if pack_files(&self.dir, "pack").len() <= MAX_PACKS {
            return Ok(());
        }
        let git = Git::new(&self.dir, "cache").log_to(self.dir.join("rockbuild-fetch.log"));
        runner.run(&git.cmd(["repack", "-a", "-d", "-q", "--no-write-bitmap-index"]))?;
        Ok(())
    }

    /// Gives the repository at `git_dir` (a `.git` directory) every object of the mirror by
    /// hard-linking its pack files, the checkout pack of `commit` (the one it will check out)
    /// when there is one, and its shallow boundary. Hold [`Mirror::shared`] meanwhile.
    pub fn link_into(&self, git_dir: &Path, commit: &str) -> Result<Transfer, Error> {
        let pack_dir = git_dir.join("objects/pack");
        fs_err::create_dir_all(&pack_dir)
            .map_err(|e| Error::cache(&pack_dir, "creating the pack directory", e))?;
        let mut linked = 0;
        // The index last: git only sees a pack once its .idx exists.
        for extension in ["pack", "rev", "idx"] {
            for source in pack_files(&self.dir, extension) {
                let Some(name) = source.file_name() else {
                    continue;
                };
                let target = pack_dir.join(name);
                if target.exists() {
                    continue;
                }
                match fs_err::hard_link(&source, &target) {
                    Ok(()) => linked += usize::from(extension == "pack"),
                    Err(error)
                        if matches!(
                            error.kind(),
                            std::io::ErrorKind::CrossesDevices
                                | std::io::ErrorKind::PermissionDenied
                                | std::io::ErrorKind::Unsupported
                        ) =>
                    {
                        return Ok(Transfer::NeedsCopy);
                    }
                    Err(error) => return Err(Error::cache(&target, "linking a pack", error)),
                }
            }
        }
        match self.link_checkout_pack(git_dir, commit)? {
            Some(checkout_packs) => linked += checkout_packs,
            None => return Ok(Transfer::NeedsCopy),
        }
        let shallow = self.dir.join("shallow");
        if shallow.exists() {
            let mine = git_dir.join("shallow");
            let mut lines: Vec<String> = fs_err::read_to_string(&mine)
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect();
            let theirs = fs_err::read_to_string(&shallow)
                .map_err(|e| Error::cache(&shallow, "reading", e))?;
            for line in theirs.lines() {
                if !lines.iter().any(|l| l == line) {
                    lines.push(line.to_string());
                }
            }
            lines.sort();
            crate::fsutil::write_atomic(&mine, format!("{}\n", lines.join("\n")).as_bytes())
                .map_err(|e| {
                    Error::cache(&mine, "writing", std::io::Error::other(e.to_string()))
                })?;
        }
        Ok(Transfer::Linked(linked))
    }
}

/// `<last path segment>-<12 hex of the normalized URL's SHA-256>.git`. `…/audio` and
/// `…/audio.git` (a related_commits row and the stack config) share one mirror.
pub fn mirror_name(origin: &str) -> String {
    let normalized = origin.trim_end_matches('/').trim_end_matches(".git");
    let digest = crate::fsutil::sha256_hex(normalized.as_bytes());
    let slug: String = normalized
        .rsplit('/')
        .next()
        .unwrap_or("repo")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{slug}-{}.git", &digest[..12])
}

fn pack_files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs_err::read_dir(dir.join("objects/pack")) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == extension)
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("pack-"))
        })
        .collect();
    files.sort();
    files
}

/// Why a mirror cannot be trusted, if it cannot: cheap checks that catch what interrupted
/// writes and full disks leave behind, without reading whole packs.
fn damage(dir: &Path) -> Option<String> {
    if !dir.join("HEAD").is_file() || !dir.join("objects").is_dir() {
        return Some("no HEAD or objects".into());
    }
    if let Err(error) = Repository::open_bare(dir) {
        return Some(error.message().to_string());
    }
    damage_in_packs(dir)
}

/// Why the packs of the object store at `dir` cannot be trusted, if they cannot: each pack
/// has an index recording the checksum it ends with, and each index a pack.
fn damage_in_packs(dir: &Path) -> Option<String> {
    for pack in pack_files(dir, "pack") {
        let name = pack
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let idx = pack.with_extension("idx");
        if !idx.exists() {
            return Some(format!("{name} has no index"));
        }
        match (pack_trailer(&pack), idx_pack_checksum(&idx)) {
            (Some(trailer), Some(expected)) if trailer == expected => {}
            (Some(_), Some(_)) => {
                return Some(format!("{name} does not match its index (truncated?)"));
            }
            _ => return Some(format!("{name} or its index is unreadable")),
        }
    }
    for idx in pack_files(dir, "idx") {
        if !idx.with_extension("pack").exists() {
            let name = idx
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Some(format!("{name} has no pack"));
        }
    }
    None
}

/// The checksum a pack file ends with (after checking it starts like one).
fn pack_trailer(path: &Path) -> Option<Vec<u8>> {
    let mut file = fs_err::File::open(path).ok()?;
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic).ok()?;
    if &magic != b"PACK" {
        return None;
    }
    let len = file.metadata().ok()?.len();
    if len < 12 + HASH_LEN {
        return None;
    }
    file.seek(SeekFrom::End(-(HASH_LEN as i64))).ok()?;
    let mut trailer = vec![0u8; HASH_LEN as usize];
    file.read_exact(&mut trailer).ok()?;
    Some(trailer)
}

/// The pack checksum an index records: the first of the two hashes it ends with.
fn idx_pack_checksum(path: &Path) -> Option<Vec<u8>> {
    let mut file = fs_err::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    if len < 2 * HASH_LEN {
        return None;
    }
    file.seek(SeekFrom::End(-(2 * HASH_LEN as i64))).ok()?;
    let mut checksum = vec![0u8; HASH_LEN as usize];
    file.read_exact(&mut checksum).ok()?;
    Some(checksum)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nowhere() -> Origin {
        Origin::parse("file:///nowhere/x.git").expect("origin")
    }

    #[test]
    fn one_mirror_per_repository_whatever_the_spelling() {
        assert_eq!(
            mirror_name("https://github.com/pytorch/audio"),
            mirror_name("https://github.com/pytorch/audio.git")
        );
        assert_ne!(
            mirror_name("https://github.com/pytorch/audio"),
            mirror_name("https://github.com/ROCm/audio")
        );
        assert!(mirror_name("https://github.com/pytorch/audio.git").starts_with("audio-"));
    }

    #[test]
    fn a_fresh_mirror_is_healthy_and_a_broken_one_is_not() {
        let cache = tempfile::tempdir().expect("tempdir");
        let warnings = std::cell::RefCell::new(Vec::new());
        let warn = |w: String| warnings.borrow_mut().push(w);
        let mirror = Mirror::open(cache.path(), &nowhere(), &warn).expect("open");
        assert_eq!(damage(&mirror.dir), None);
        fs_err::remove_file(mirror.dir.join("HEAD")).expect("break it");
        assert_eq!(damage(&mirror.dir).as_deref(), Some("no HEAD or objects"));
        let again = Mirror::open(cache.path(), &nowhere(), &warn).expect("reopen");
        assert_eq!(damage(&again.dir), None);
        assert_eq!(warnings.borrow().len(), 1, "{:?}", warnings.borrow());
    }

    /// Every fetch adds a pack; past the limit they are merged into one, and every commit
    /// fetched so far stays (each has its ref).
    #[test]
    fn packs_are_merged_when_they_pile_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let origin = dir.path().join("origin.git");
        let repo = Repository::init_bare(&origin).expect("origin");
        let signature =
            git2::Signature::new("t", "t@example.com", &git2::Time::new(0, 0)).expect("signature");
        let mut parent: Option<Oid> = None;
        let mut commits = Vec::new();
        for n in 0..=MAX_PACKS + 1 {
            let blob = repo.blob(format!("{n}\n").as_bytes()).expect("blob");
            let mut tree = repo.treebuilder(None).expect("tree");
            tree.insert("n", blob, 0o100644).expect("insert");
            let tree = repo.find_tree(tree.write().expect("write")).expect("find");
            let parents: Vec<git2::Commit<'_>> = parent
                .iter()
                .map(|p| repo.find_commit(*p).expect("parent"))
                .collect();
            let refs: Vec<&git2::Commit<'_>> = parents.iter().collect();
            let commit = repo
                .commit(
                    Some(&format!("refs/heads/b{n}")),
                    &signature,
                    &signature,
                    "c",
                    &tree,
                    &refs,
                )
                .expect("commit");
            parent = Some(commit);
            commits.push(commit);
        }
        let cache = dir.path().join("cache");
        let url = Origin::parse(&format!("file://{}", origin.display())).expect("origin");
        let mirror = Mirror::open(&cache, &url, &|w| panic!("{w}")).expect("mirror");
        let runner = Runner::new(crate::env_vars::Environment::capture());
        let limits = TransferLimits {
            timeout: std::time::Duration::from_secs(60),
            stall: std::time::Duration::from_secs(60),
            attempts: 1,
        };
        for n in 0..=MAX_PACKS + 1 {
            let fetched = mirror
                .fetch(
                    &runner,
                    &RefName::parse(&format!("b{n}")).expect("ref"),
                    None,
                    limits,
                    "t",
                    &mut |_| {},
                )
                .expect("fetch");
            assert!(fetched.transferred);
        }
        let packs = pack_files(&mirror.dir, "pack").len();
        assert!((1..=MAX_PACKS).contains(&packs), "{packs} packs");
        for commit in commits {
            assert_eq!(mirror.commit(&commit.to_string()), Some(commit));
        }
        assert_eq!(damage(&mirror.dir), None);
    }
}
