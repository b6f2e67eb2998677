//! File helpers shared by every stage: atomic writes (a killed run never leaves a truncated
//! lock, report or index page) and streaming SHA-256.

use std::fmt;
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

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
    let mut temp = tempfile::Builder::new()
        .prefix(".rockbuild-")
        .suffix(".tmp")
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
    fn hashes_match_known_digest() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let (digest, size) = sha256_reader(&b"abc"[..]).expect("hash");
        assert_eq!((digest.as_str(), size), (sha256_hex(b"abc").as_str(), 3));
    }
}
