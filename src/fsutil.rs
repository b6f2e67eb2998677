//! File helpers shared by every stage: atomic writes (a killed run never leaves a truncated
//! lock, report or index page), writes that never follow a symbolic link, and streaming
//! SHA-256.
//!
//! No write follows a link: every file rockbuild creates or appends to is opened through
//! [`create`], [`append`] or [`open_lock`] (`O_NOFOLLOW`: a link planted at the name is
//! refused, never written through), or made by [`write_atomic`] (a new temporary file renamed
//! over the name, which replaces a link instead of following it). Below the root of a store,
//! an output directory or a cache, [`create_dirs_below`] and [`check_below`] refuse a directory
//! on the way that is a link. clippy.toml bans the std and fs_err calls that would follow one.

use std::fmt;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::platform::host;

/// A file operation that failed: what was being done (naming the path), and the I/O error.
#[derive(Debug)]
pub enum FsError {
    /// An `fs_err` error, which names its path itself.
    Io(std::io::Error),
    Context {
        action: String,
        source: std::io::Error,
    },
}

impl FsError {
    fn context(action: String) -> impl FnOnce(std::io::Error) -> FsError {
        move |source| FsError::Context { action, source }
    }
}

/// `{}` is the action (the I/O error follows as the cause); `{:#}` is both on one line, as
/// anyhow prints a chain.
impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsError::Io(error) => error.fmt(f),
            FsError::Context { action, source } if f.alternate() => {
                write!(f, "{action}: {source}")
            }
            FsError::Context { action, .. } => f.write_str(action),
        }
    }
}

impl std::error::Error for FsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FsError::Io(error) => error.source(),
            FsError::Context { source, .. } => Some(source),
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to
/// disk, then renamed over the target. Readers see the old content or the new, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs_err::create_dir_all(parent).map_err(FsError::Io)?;
    // 0644 before the umask, as any new file: tempfile's own default is 0600.
    let mut builder = tempfile::Builder::new();
    builder.prefix(".rockbuild-").suffix(".tmp");
    if let Some(permissions) = host::new_file_permissions(0o644) {
        builder.permissions(permissions);
    }
    let mut temp = builder
        .tempfile_in(parent)
        .map_err(FsError::context(format!(
            "creating a temporary file in {}",
            parent.display()
        )))?;
    temp.write_all(bytes)
        .and_then(|()| temp.as_file().sync_all())
        .map_err(FsError::context(format!("writing {}", path.display())))?;
    temp.persist(path)
        .map_err(|error| error.error)
        .map_err(FsError::context(format!("replacing {}", path.display())))?;
    Ok(())
}

/// Like [`write_atomic`], but leaves the file (and its mtime) alone when the content is
/// already what we would write. Returns whether the file changed.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool, FsError> {
    if let Ok(existing) = fs_err::read(path)
        && existing == bytes
    {
        return Ok(false);
    }
    write_atomic(path, bytes)?;
    Ok(true)
}

/// A write refused because its path is, or passes through, a symbolic link.
#[derive(Debug)]
pub struct LinkRefused {
    pub path: PathBuf,
}

impl fmt::Display for LinkRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is a symbolic link: rockbuild never writes through a link (remove it, or give the \
             real path)",
            self.path.display()
        )
    }
}

impl std::error::Error for LinkRefused {}

fn link_refused(path: &Path) -> std::io::Error {
    std::io::Error::other(LinkRefused {
        path: path.to_path_buf(),
    })
}

/// Opens `path` with `options`, never following a link at the name and never waiting on a
/// FIFO, naming the path in errors and turning a link refused into [`LinkRefused`].
fn open_no_follow(path: &Path, options: &mut std::fs::OpenOptions) -> std::io::Result<File> {
    match host::no_wait_no_follow(options).open(path) {
        Ok(file) => Ok(file),
        Err(error) if host::is_link_refused(&error) => Err(link_refused(path)),
        Err(error) => Err(std::io::Error::new(
            error.kind(),
            format!("{}: {error}", path.display()),
        )),
    }
}

/// Creates (0644 before the umask) or truncates `path` for writing; a link at `path` is
/// refused.
pub fn create(path: &Path) -> std::io::Result<File> {
    open_no_follow(
        path,
        host::with_mode(
            File::options().write(true).create(true).truncate(true),
            0o644,
        ),
    )
}

/// [`create`], then writes `bytes`: the replacement of `fs_err::write`.
pub fn write(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create(path)?
        .write_all(bytes)
        .map_err(|e| std::io::Error::new(e.kind(), format!("writing {}: {e}", path.display())))
}

/// Copies the file at `from` to a new or truncated `to` ([`create`]: a link at `to` is
/// refused); the replacement of `fs_err::copy`.
pub fn copy(from: &Path, to: &Path) -> std::io::Result<u64> {
    let mut source = fs_err::File::open(from)?;
    let mut target = create(to)?;
    std::io::copy(&mut source, &mut target)
        .map_err(|e| std::io::Error::new(e.kind(), format!("copying to {}: {e}", to.display())))
}

/// Opens `path` for appending, creating it; a link at `path` is refused.
pub fn append(path: &Path) -> std::io::Result<File> {
    open_no_follow(
        path,
        host::with_mode(File::options().append(true).create(true), 0o644),
    )
}

/// Opens `path` for reading and writing without truncating it, creating it: a lock file. A
/// link at `path`, or anything but a regular file, is refused.
pub fn open_lock(path: &Path) -> std::io::Result<File> {
    let file = open_no_follow(
        path,
        host::with_mode(
            File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
            0o644,
        ),
    )?;
    let file_type = file.metadata()?.file_type();
    if !file_type.is_file() {
        return Err(std::io::Error::other(format!(
            "{} is {}, not a regular file: remove it",
            path.display(),
            kind_of(&file_type)
        )));
    }
    Ok(file)
}

/// What a file that is not a regular file is, in words.
pub fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a directory"
    } else if let Some(kind) = host::special_kind(file_type) {
        kind
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Creates every directory from `root` down to `dir` (`root` itself may be a link the user
/// chose; it is created as `create_dir_all` would). Below `root`, a component that exists as a
/// link or as anything but a directory is refused; a new directory gets `mode` when given
/// (published trees are 0755 whatever the umask, so a web server running as another user can
/// serve them).
pub fn create_dirs_below(root: &Path, dir: &Path, mode: Option<u32>) -> std::io::Result<()> {
    if let (Some(mode), false) = (mode, root.exists()) {
        fs_err::create_dir_all(root)?;
        host::set_mode(root, mode)?;
    }
    fs_err::create_dir_all(root)?;
    let mut path = root.to_path_buf();
    for component in below(root, dir)? {
        path.push(component);
        match fs_err::symlink_metadata(&path) {
            Ok(metadata) if metadata.file_type().is_symlink() => return Err(link_refused(&path)),
            Ok(metadata) if metadata.is_dir() => continue,
            Ok(_) => {
                return Err(std::io::Error::other(format!(
                    "{} is not a directory",
                    path.display()
                )));
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        match fs_err::create_dir(&path) {
            Ok(()) => {
                if let Some(mode) = mode {
                    host::set_mode(&path, mode)?;
                }
            }
            // Another writer made it meanwhile: look again.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                if fs_err::symlink_metadata(&path)?.file_type().is_symlink() {
                    return Err(link_refused(&path));
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// Fails when a component of `path` below `root` (the last one included) is a link. Missing
/// components are fine: nothing to follow.
pub fn check_below(root: &Path, path: &Path) -> std::io::Result<()> {
    let mut current = root.to_path_buf();
    for component in below(root, path)? {
        current.push(component);
        match fs_err::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(link_refused(&current));
            }
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => return Ok(()),
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

/// The components of `path` below `root`; `path` must be `root` or inside it, without `..`.
fn below<'a>(root: &Path, path: &'a Path) -> std::io::Result<Vec<&'a std::ffi::OsStr>> {
    let outside = || {
        std::io::Error::other(format!(
            "{} is not inside {}",
            path.display(),
            root.display()
        ))
    };
    let relative = path.strip_prefix(root).map_err(|_| outside())?;
    relative
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(outside()),
        })
        .collect()
}

/// A writer that hashes what goes through it (SHA-256).
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Sha256::new(),
        }
    }

    /// The SHA-256 of everything written, as lowercase hex.
    pub fn finish(self) -> String {
        hex::encode(self.hasher.finalize())
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// SHA-256 of a reader, as lowercase hex, streamed in 1 MiB blocks.
pub fn sha256_reader(mut reader: impl Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        total += n as u64;
    }
    Ok((hex::encode(hasher.finalize()), total))
}

/// SHA-256 of a file, as lowercase hex, with its size.
pub fn sha256_file(path: &Path) -> Result<(String, u64), FsError> {
    let file = fs_err::File::open(path).map_err(FsError::Io)?;
    sha256_reader(file).map_err(FsError::context(format!("reading {}", path.display())))
}

/// SHA-256 of bytes, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("nested/lock.json");
        write_atomic(&path, b"one").expect("first write");
        write_atomic(&path, b"two").expect("second write");
        assert_eq!(fs_err::read_to_string(&path).expect("read"), "two");
        let names: Vec<_> = fs_err::read_dir(dir.path().join("nested"))
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("lock.json")]);
    }

    #[test]
    fn write_if_changed_keeps_identical_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        assert!(write_if_changed(&path, b"x").expect("write"));
        assert!(!write_if_changed(&path, b"x").expect("same"));
        assert!(write_if_changed(&path, b"y").expect("changed"));
    }

    #[test]
    fn no_write_follows_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("store");
        let outside = dir.path().join("outside");
        fs_err::create_dir_all(&outside).expect("mkdir");
        fs_err::create_dir_all(&root).expect("mkdir");
        fs_err::write(outside.join("victim"), b"precious").expect("write");
        host::symlink(&outside.join("victim"), &root.join("lease")).expect("link");
        host::symlink(&outside, &root.join("torch")).expect("link");
        for result in [
            create(&root.join("lease")).map(drop),
            append(&root.join("lease")).map(drop),
            open_lock(&root.join("lease")).map(drop),
            write(&root.join("lease"), b"x"),
            create_dirs_below(&root, &root.join("torch/sub"), None),
            check_below(&root, &root.join("torch/victim")),
        ] {
            let error = result.expect_err("refused");
            assert!(
                error.get_ref().is_some_and(|e| e.is::<LinkRefused>()),
                "{error}"
            );
        }
        assert_eq!(
            fs_err::read(outside.join("victim")).expect("read"),
            b"precious"
        );
        create_dirs_below(&root, &root.join("a/b"), Some(0o755)).expect("dirs");
        let mode = host::mode_of(&fs_err::metadata(root.join("a/b")).expect("meta"));
        assert_eq!(mode & 0o777, 0o755);
        check_below(&root, &root.join("a/b/c")).expect("no link");
        write_atomic(&root.join("a/page"), b"x").expect("atomic");
        assert_eq!(
            host::mode_of(&fs_err::metadata(root.join("a/page")).expect("meta")) & 0o044,
            0o044 & !host::umask(),
            "readable by others unless the umask says otherwise"
        );
    }

    #[test]
    fn hashes_match_known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let (digest, size) = sha256_reader(&b"abc"[..]).expect("hash");
        assert_eq!((digest.as_str(), size), (sha256_hex(b"abc").as_str(), 3));
    }
}
