//! A store in a local directory: what `python -m http.server`, nginx or a CI artifact upload
//! serves. Writes go to a temporary file in the target directory first; a conditional write
//! then hard-links it into place (which fails if the name exists: no clobbering, even
//! between two processes), a replacing write renames it over the old file.

use std::any::Any;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::{Body, ObjectInfo, PutOptions, PutResult, Storage, StoreError, check_key};

/// Temporary files of interrupted writes start with this and are never listed (nor is the
/// lease file, which shares the prefix). A served tree may still hold them until the next
/// run takes the lease and removes them; their names end in `.tmp`, which no installer takes
/// for a distribution.
const TEMP_PREFIX: &str = ".rockbuild-";
const TEMP_SUFFIX: &str = ".tmp";
/// Modes of what a store writes, whatever the umask: readable by a web server's user.
const PUBLISHED_FILE_MODE: u32 = 0o644;
const PUBLISHED_DIR_MODE: u32 = 0o755;

#[derive(Clone, Debug)]
pub struct LocalDir {
    root: PathBuf,
}

impl LocalDir {
    pub fn new(root: PathBuf) -> Self {
        LocalDir { root }
    }

    /// The directory the store writes into.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Creates the store's directory when it does not exist yet, world-readable whatever the
    /// umask (the lease inside it is taken before any object is written).
    pub fn create_root(&self) -> Result<(), StoreError> {
        crate::fsutil::create_dirs_below(&self.root, &self.root, Some(PUBLISHED_DIR_MODE))
            .map_err(|e| self.io("write", "", e))
    }

    /// Removes the temporary files of writes a killed run never finished. Called by the
    /// holder of the store's lease only, so no live write's file is among them.
    pub fn remove_stale_temporaries(&self) -> Result<usize, StoreError> {
        if !self.root.exists() {
            return Ok(0);
        }
        let mut removed = 0;
        for entry in walkdir::WalkDir::new(&self.root) {
            let entry = entry.map_err(|e| self.io("clean", "", e))?;
            let name = entry.file_name().to_string_lossy();
            if entry.file_type().is_file()
                && name.starts_with(TEMP_PREFIX)
                && name.ends_with(TEMP_SUFFIX)
            {
                fs_err::remove_file(entry.path()).map_err(|e| self.io("clean", "", e))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    fn path_of(&self, key: &str) -> Result<PathBuf, StoreError> {
        check_key(key).map_err(|reason| StoreError::BadKey {
            store: self.url(),
            key: key.to_string(),
            reason,
        })?;
        if key.is_empty() {
            return Err(StoreError::BadKey {
                store: self.url(),
                key: String::new(),
                reason: "empty key",
            });
        }
        let path = self.root.join(key);
        // No read or write in the store goes through a link below its root (a planted
        // `torch -> /elsewhere` would take the objects out of the store).
        crate::fsutil::check_below(&self.root, &path).map_err(|e| self.io("open", key, e))?;
        Ok(path)
    }

    fn io(&self, op: &'static str, key: &str, error: impl std::fmt::Display) -> StoreError {
        StoreError::Backend {
            store: self.url(),
            op,
            key: key.to_string(),
            message: error.to_string(),
            transient: false,
        }
    }

    /// A temporary file beside `path`, filled with the body and flushed to disk.
    fn stage_temp(
        &self,
        key: &str,
        path: &Path,
        body: Body<'_>,
        expected: Option<&String>,
    ) -> Result<tempfile::NamedTempFile, StoreError> {
        let parent = path.parent().unwrap_or(&self.root);
        // Published trees are world-readable whatever the umask of the job: a web server
        // running as another user serves them.
        crate::fsutil::create_dirs_below(&self.root, parent, Some(PUBLISHED_DIR_MODE))
            .map_err(|e| self.io("write", key, e))?;
        let mut temp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .suffix(TEMP_SUFFIX)
            .tempfile_in(parent)
            .map_err(|e| {
                self.io(
                    "write",
                    key,
                    format!("creating a temporary file in {}: {e}", parent.display()),
                )
            })?;
        // What is copied is hashed: the object becomes visible only if it has the SHA-256 it
        // was announced with (the checked bytes).
        let written = match body {
            Body::Bytes(bytes) => {
                temp.write_all(bytes)
                    .map_err(|e| self.io("write", key, e))?;
                crate::fsutil::sha256_hex(bytes)
            }
            Body::File(source) => {
                let file = fs_err::File::open(source).map_err(|e| self.io("write", key, e))?;
                let mut hashing = crate::fsutil::HashingWriter::new(temp.as_file_mut());
                std::io::copy(&mut file.file(), &mut hashing)
                    .map_err(|e| self.io("write", key, e))?;
                hashing.finish()
            }
        };
        if let Some(expected) = expected
            && *expected != written
        {
            return Err(StoreError::Changed {
                path: match body {
                    Body::File(source) => source.to_path_buf(),
                    Body::Bytes(_) => PathBuf::from(key),
                },
                key: key.to_string(),
                expected: expected.clone(),
                actual: written,
            });
        }
        crate::platform::host::set_file_mode(temp.as_file(), PUBLISHED_FILE_MODE)
            .and_then(|()| temp.as_file().sync_all())
            .map_err(|e| self.io("write", key, e))?;
        Ok(temp)
    }

    /// Moves a staged temporary file into place, without replacing an existing object when
    /// `if_absent` is set.
    fn commit(
        &self,
        key: &str,
        temp: tempfile::NamedTempFile,
        path: &Path,
        if_absent: bool,
    ) -> Result<PutResult, StoreError> {
        if if_absent {
            // link(2) fails when the name exists: an atomic put-if-absent. The temporary
            // name is removed when `temp` drops.
            return match fs_err::hard_link(temp.path(), path) {
                Ok(()) => Ok(PutResult::Written {
                    verified_sha256: None,
                }),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    Ok(PutResult::Exists)
                }
                Err(error) => Err(self.io("write", key, error)),
            };
        }
        temp.persist(path)
            .map_err(|e| self.io("write", key, e.error))?;
        Ok(PutResult::Written {
            verified_sha256: None,
        })
    }
}

impl Storage for LocalDir {
    fn url(&self) -> String {
        self.root.display().to_string()
    }

    fn list(&self) -> Result<Vec<ObjectInfo>, StoreError> {
        if !self.root.exists() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for entry in walkdir::WalkDir::new(&self.root).sort_by_file_name() {
            let entry = entry.map_err(|e| self.io("list", "", e))?;
            if !entry.file_type().is_file()
                || entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
            {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&self.root) else {
                continue;
            };
            let Some(key) = relative.to_str() else {
                tracing::warn!(
                    "{}: skipping a file name that is not UTF-8",
                    entry.path().display()
                );
                continue;
            };
            let size = entry.metadata().map_err(|e| self.io("list", key, e))?.len();
            out.push(ObjectInfo {
                key: key.replace(std::path::MAIN_SEPARATOR, "/"),
                size,
                sha256: None,
            });
        }
        Ok(out)
    }

    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError> {
        let path = self.path_of(key)?;
        match fs_err::metadata(&path) {
            Ok(metadata) if metadata.is_file() => Ok(Some(ObjectInfo {
                key: key.to_string(),
                size: metadata.len(),
                sha256: None,
            })),
            Ok(_) => Err(self.io("read", key, "exists but is not a regular file")),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(self.io("read", key, error)),
        }
    }

    fn content_sha256(&self, key: &str) -> Result<String, StoreError> {
        let path = self.path_of(key)?;
        crate::fsutil::sha256_file(&path)
            .map(|(sha, _)| sha)
            .map_err(|e| self.io("read", key, format!("{e:#}")))
    }

    fn get(&self, key: &str) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(key)?;
        let mut bytes = Vec::new();
        match fs_err::File::open(&path) {
            Ok(mut file) => file
                .read_to_end(&mut bytes)
                .map_err(|e| self.io("read", key, e))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::NotFound {
                    store: self.url(),
                    key: key.to_string(),
                });
            }
            Err(error) => return Err(self.io("read", key, error)),
        };
        Ok(bytes)
    }

    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        let path = self.path_of(key)?;
        let mut file = fs_err::File::open(&path).map_err(|e| self.io("read", key, e))?;
        file.seek(SeekFrom::Start(start))
            .map_err(|e| self.io("read", key, e))?;
        let mut bytes = Vec::new();
        file.take(len)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io("read", key, e))?;
        Ok(bytes)
    }

    fn download(&self, key: &str, to: &Path) -> Result<(), StoreError> {
        let path = self.path_of(key)?;
        crate::fsutil::copy(&path, to)
            .map(|_| ())
            .map_err(|e| self.io("read", key, e))
    }

    fn put(
        &self,
        key: &str,
        body: Body<'_>,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        let path = self.path_of(key)?;
        let temp = self.stage_temp(key, &path, body, options.sha256.as_ref())?;
        crate::fault::point("upload");
        self.commit(key, temp, &path, options.if_absent)
    }

    fn copy_from(
        &self,
        source: &dyn Storage,
        from_key: &str,
        to_key: &str,
        _size: u64,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError> {
        let path = self.path_of(to_key)?;
        let temp = match source.local_path(from_key) {
            // A source whose bytes are not the expected ones is a copy that does not verify.
            Some(source_path) => self
                .stage_temp(
                    to_key,
                    &path,
                    Body::File(&source_path),
                    options.sha256.as_ref(),
                )
                .map_err(|error| match error {
                    StoreError::Changed {
                        expected, actual, ..
                    } => StoreError::CopyMismatch {
                        store: self.url(),
                        key: to_key.to_string(),
                        expected,
                        actual,
                    },
                    other => other,
                })?,
            None => {
                // Download straight into the temporary file beside the target, so a large
                // wheel is never staged on another (maybe smaller) file system.
                let temp = self.stage_temp(to_key, &path, Body::Bytes(&[]), None)?;
                source.download(from_key, temp.path())?;
                temp.as_file()
                    .sync_all()
                    .map_err(|e| self.io("write", to_key, e))?;
                temp
            }
        };
        self.commit(to_key, temp, &path, options.if_absent)
    }

    fn delete(&self, key: &str) -> Result<(), StoreError> {
        let path = self.path_of(key)?;
        match fs_err::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(self.io("delete", key, error)),
        }
    }

    fn local_path(&self, key: &str) -> Option<PathBuf> {
        self.path_of(key).ok()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OCTET: &str = "application/octet-stream";
    use crate::store::{Outcome, copy_immutable, put_immutable};

    #[test]
    fn writes_lists_and_never_overwrites() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalDir::new(dir.path().join("stage"));
        assert!(store.list().expect("empty list").is_empty());
        let key = "torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl";
        let sha = crate::fsutil::sha256_hex(b"wheel");
        assert_eq!(
            put_immutable(&store, key, Body::Bytes(b"wheel"), &sha, OCTET).expect("put"),
            Outcome::Created
        );
        assert_eq!(
            put_immutable(&store, key, Body::Bytes(b"wheel"), &sha, OCTET).expect("again"),
            Outcome::Unchanged
        );
        let other = crate::fsutil::sha256_hex(b"other");
        let error =
            put_immutable(&store, key, Body::Bytes(b"other"), &other, OCTET).expect_err("conflict");
        assert!(matches!(error, StoreError::Conflict { .. }), "{error}");
        assert!(error.to_string().contains("never replaced"), "{error}");
        assert_eq!(
            fs_err::read(dir.path().join("stage").join(key)).expect("read"),
            b"wheel"
        );

        // The backend's own conditional write refuses too (the race backstop).
        let options = PutOptions {
            if_absent: true,
            ..PutOptions::default()
        };
        assert_eq!(
            store
                .put(key, Body::Bytes(b"other"), &options)
                .expect("put"),
            PutResult::Exists
        );

        let listed = store.list().expect("list");
        assert_eq!(
            listed,
            vec![ObjectInfo {
                key: key.into(),
                size: 5,
                sha256: None
            }]
        );
        assert_eq!(store.content_sha256(key).expect("hash"), sha);
        assert!(store.head("torch/absent.whl").expect("head").is_none());
        assert!(matches!(
            store.get("torch/absent.whl"),
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            store.head("../escape"),
            Err(StoreError::BadKey { .. })
        ));
    }

    #[test]
    fn replacing_writes_and_copies() {
        let dir = tempfile::tempdir().expect("tempdir");
        let staging = LocalDir::new(dir.path().join("staging"));
        let release = LocalDir::new(dir.path().join("release"));
        staging
            .put("index.html", Body::Bytes(b"one"), &PutOptions::default())
            .expect("put");
        staging
            .put("index.html", Body::Bytes(b"two"), &PutOptions::default())
            .expect("replace");
        assert_eq!(staging.get("index.html").expect("get"), b"two");

        let key = "a/a-1.0-py3-none-any.whl";
        let sha = crate::fsutil::sha256_hex(b"bytes");
        put_immutable(&staging, key, Body::Bytes(b"bytes"), &sha, OCTET).expect("stage");
        let info = staging.head(key).expect("head").expect("exists");
        assert_eq!(
            copy_immutable(&release, &staging, key, key, &info, &sha, OCTET).expect("copy"),
            Outcome::Created
        );
        assert_eq!(
            copy_immutable(&release, &staging, key, key, &info, &sha, OCTET).expect("again"),
            Outcome::Unchanged
        );
        assert_eq!(release.get(key).expect("get"), b"bytes");

        // A copy whose bytes do not match what the caller expects is refused and removed.
        let wrong = crate::fsutil::sha256_hex(b"something else");
        let error = copy_immutable(&release, &staging, key, "a/copy.whl", &info, &wrong, OCTET)
            .expect_err("mismatch");
        assert!(matches!(error, StoreError::CopyMismatch { .. }), "{error}");
        assert!(release.head("a/copy.whl").expect("head").is_none());
        let names: Vec<String> = release
            .list()
            .expect("list")
            .into_iter()
            .map(|o| o.key)
            .collect();
        assert_eq!(
            names,
            vec![key.to_string()],
            "no temporary files are left or listed"
        );
    }
}
