//! Object stores rockbuild publishes to: a local directory (the default, also `file://`) and
//! S3 (`s3://bucket/prefix`, any S3-compatible server through `--s3-endpoint`).
//!
//! Backends implement the small [`Storage`] trait (list, head, get, put, copy). The rules
//! every publish follows sit on top, once, for every backend:
//!
//! * an object that exists is never replaced by different bytes ([`put_immutable`],
//!   [`copy_immutable`]): HEAD first, then a conditional write (`If-None-Match: *`, a no-clobber
//!   link) as a backstop for races — some servers ignore the condition (garage), so the HEAD is
//!   the real guard; the same bytes again is an idempotent skip;
//! * a copy is verified against the expected SHA-256 before it counts;
//! * index pages are replaced atomically ([`Storage::put`] without `if_absent`).

pub mod lease;
pub mod local;
pub mod s3;
pub mod transfer;

use std::any::Any;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::exit::{ExitStatus, HasExitStatus};

pub use local::LocalDir;
pub use s3::{S3ChecksumMode, S3Settings, S3Store};

/// What a listing or HEAD knows about an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Key relative to the store's root (its prefix), `/`-separated.
    pub key: String,
    pub size: u64,
    /// SHA-256 recorded with the object (S3 metadata or checksum), when the backend has one
    /// without reading the bytes.
    pub sha256: Option<String>,
}

/// The bytes of a write.
#[derive(Clone, Copy, Debug)]
pub enum Body<'a> {
    File(&'a Path),
    Bytes(&'a [u8]),
}

impl Body<'_> {
    pub fn len(&self) -> std::io::Result<u64> {
        match self {
            Body::File(path) => Ok(fs_err::metadata(path)?.len()),
            Body::Bytes(bytes) => Ok(bytes.len() as u64),
        }
    }
}

/// How an object is written.
#[derive(Clone, Debug, Default)]
pub struct PutOptions {
    pub content_type: Option<&'static str>,
    /// `Cache-Control` (index pages must not be cached by CDNs while they change).
    pub cache_control: Option<&'static str>,
    /// Lowercase hex SHA-256 of the body, recorded with the object and checked by servers
    /// that verify checksums.
    pub sha256: Option<String>,
    /// Write only if the key does not exist yet (the no-overwrite backstop).
    pub if_absent: bool,
}

/// Result of a write or copy at the backend level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PutResult {
    /// The object was written. For copies, the SHA-256 the server computed over the copied
    /// bytes, when it reports one.
    Written { verified_sha256: Option<String> },
    /// `if_absent` was set and the key already existed.
    Exists,
}

/// What a publish did with one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Written now.
    Created,
    /// Already there with the same bytes: nothing to do.
    Unchanged,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "{store}: '{key}' already exists with different content (stored sha256 {existing}, new {new}); \
         published objects are never replaced: publish under a new version or remove the old object deliberately"
    )]
    Conflict {
        store: String,
        key: String,
        existing: String,
        new: String,
    },
    #[error("{store}: '{key}' does not exist")]
    NotFound { store: String, key: String },
    #[error(
        "{store}: copy of '{key}' has sha256 {actual}, expected {expected}; the copy was removed"
    )]
    CopyMismatch {
        store: String,
        key: String,
        expected: String,
        actual: String,
    },
    /// A file's bytes are not the ones checked: it changed (or was replaced) since.
    #[error(
        "{}: its bytes have sha256 {actual}, not the {expected} that was checked: the file changed since it was verified; nothing was stored under '{key}' (publish again from a build output nobody writes to)",
        path.display()
    )]
    Changed {
        path: PathBuf,
        key: String,
        expected: String,
        actual: String,
    },
    #[error("{store}: cannot {op} '{key}': {message}")]
    Backend {
        store: String,
        op: &'static str,
        key: String,
        message: String,
        /// Worth another attempt (timeouts, connection resets, 5xx, throttling).
        transient: bool,
    },
    #[error("{store}: '{key}' is not a valid object key: {reason}")]
    BadKey {
        store: String,
        key: String,
        reason: &'static str,
    },
    #[error("store '{url}': {reason}")]
    BadUrl { url: String, reason: String },
    #[error(
        "{store}: no AWS credentials: give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, a profile (AWS_PROFILE), a web identity (in GitHub Actions: an OIDC role) or an instance role; the AWS credentials chain says: {cause}"
    )]
    NoCredentials { store: String, cause: String },
    #[error("starting the S3 client runtime")]
    Runtime(#[source] std::io::Error),
}

/// A store URL the user typed wrong is a usage error; an object that would replace a
/// published one is a publish conflict; everything else is a failed step.
impl HasExitStatus for StoreError {
    fn exit_status(&self) -> ExitStatus {
        match self {
            StoreError::BadUrl { .. } | StoreError::NoCredentials { .. } => ExitStatus::Usage,
            StoreError::Conflict { .. } => ExitStatus::PublishConflict,
            StoreError::Changed { .. } => ExitStatus::VerificationFailed,
            StoreError::NotFound { .. }
            | StoreError::CopyMismatch { .. }
            | StoreError::Backend { .. }
            | StoreError::BadKey { .. }
            | StoreError::Runtime(_) => ExitStatus::Failure,
        }
    }
}

impl StoreError {
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Backend {
                transient: true,
                ..
            }
        )
    }
}

/// An object store rooted at a prefix. Keys are relative to that prefix.
pub trait Storage: Send + Sync + fmt::Debug {
    /// The store's URL for messages (credentials masked).
    fn url(&self) -> String;
    /// Every object under the prefix.
    fn list(&self) -> Result<Vec<ObjectInfo>, StoreError>;
    /// Size and recorded SHA-256 of an object; `None` when it does not exist.
    fn head(&self, key: &str) -> Result<Option<ObjectInfo>, StoreError>;
    /// SHA-256 of the object's bytes, read in full (never a recorded value).
    fn content_sha256(&self, key: &str) -> Result<String, StoreError>;
    /// A small object's bytes (index pages, metadata sidecars).
    fn get(&self, key: &str) -> Result<Vec<u8>, StoreError>;
    /// `len` bytes of an object from `start` (fewer when it ends before).
    fn get_range(&self, key: &str, start: u64, len: u64) -> Result<Vec<u8>, StoreError>;
    /// The last `len` bytes of an object of `size` bytes (or all of it, when smaller).
    fn get_tail(&self, key: &str, size: u64, len: u64) -> Result<Vec<u8>, StoreError> {
        self.get_range(key, size.saturating_sub(len), len.min(size))
    }
    /// Streams an object into a local file.
    fn download(&self, key: &str, to: &Path) -> Result<(), StoreError>;
    /// Writes an object (atomically: readers see the old bytes or the new, never a mix).
    fn put(&self, key: &str, body: Body<'_>, options: &PutOptions)
    -> Result<PutResult, StoreError>;
    /// Copies `from_key` of `source` (which may be another store) to `to_key` here.
    fn copy_from(
        &self,
        source: &dyn Storage,
        from_key: &str,
        to_key: &str,
        size: u64,
        options: &PutOptions,
    ) -> Result<PutResult, StoreError>;
    /// Removes an object (only used to take back a copy that failed verification).
    fn delete(&self, key: &str) -> Result<(), StoreError>;
    /// The object's path when the store is a local directory.
    fn local_path(&self, _key: &str) -> Option<PathBuf> {
        None
    }
    fn as_any(&self) -> &dyn Any;
}

/// Where a store lives, parsed from what the user typed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StoreUrl {
    Local(PathBuf),
    S3 { bucket: String, prefix: String },
}

impl StoreUrl {
    /// A directory path, a `file://` URL or `s3://bucket[/prefix]`. Relative paths are
    /// resolved against `cwd`.
    pub fn parse(text: &str, cwd: &Path) -> Result<StoreUrl, StoreError> {
        let usage = |reason: &str| StoreError::BadUrl {
            url: crate::redact::redact_url(text),
            reason: reason.to_string(),
        };
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(usage("the bucket name is missing (s3://BUCKET/PREFIX)"));
            }
            check_bucket(bucket).map_err(|reason| StoreError::BadUrl {
                url: crate::redact::redact_url(text),
                reason: format!("`{bucket}` is not an S3 bucket name: {reason}"),
            })?;
            let prefix = prefix.trim_matches('/').to_string();
            check_key(&prefix).map_err(usage)?;
            return Ok(StoreUrl::S3 {
                bucket: bucket.to_string(),
                prefix,
            });
        }
        if text.starts_with("file:") {
            let url = reqwest::Url::parse(text).map_err(|e| usage(&e.to_string()))?;
            let path = url
                .to_file_path()
                .map_err(|()| usage("a file:// URL must name a local absolute path"))?;
            return Ok(StoreUrl::Local(path));
        }
        if let Some((scheme, _)) = text.split_once("://") {
            return Err(usage(&format!(
                "`{scheme}://` is not a store rockbuild can write to; use a directory, file:// or s3://BUCKET/PREFIX \
                 (HTTP indexes are read-only: serve the directory or bucket instead)"
            )));
        }
        if text.is_empty() {
            return Err(usage("empty path"));
        }
        let path = Path::new(text);
        Ok(StoreUrl::Local(if path.is_absolute() {
            path.to_path_buf()
        } else {
            cwd.join(path)
        }))
    }
}

impl StoreUrl {
    /// The store one directory (or key prefix) further down: `<url>/<segment>`, where a
    /// family's own index lives. `segment` is one valid key segment.
    pub fn join(&self, segment: &str) -> Result<StoreUrl, &'static str> {
        check_key(segment)?;
        if segment.is_empty() || segment.contains('/') {
            return Err("a single, non-empty path segment is needed");
        }
        Ok(match self {
            StoreUrl::Local(path) => StoreUrl::Local(path.join(segment)),
            StoreUrl::S3 { bucket, prefix } => StoreUrl::S3 {
                bucket: bucket.clone(),
                prefix: if prefix.is_empty() {
                    segment.to_string()
                } else {
                    format!("{prefix}/{segment}")
                },
            },
        })
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Local(path) => write!(f, "{}", path.display()),
            StoreUrl::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            StoreUrl::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

/// Everything needed to open stores: S3 client settings and transfer parallelism.
#[derive(Clone, Debug)]
pub struct StoreSettings {
    pub s3: S3Settings,
    /// Parallel transfers.
    pub jobs: usize,
    /// Attempts per transfer for transient failures (on top of the S3 client's own retries).
    pub attempts: u32,
    /// How the prefix's lease is taken.
    pub lease: lease::LeaseSettings,
}

/// Opens a store.
pub fn open(url: &StoreUrl, settings: &StoreSettings) -> Result<Box<dyn Storage>, StoreError> {
    Ok(match url {
        StoreUrl::Local(path) => Box::new(LocalDir::new(path.clone())),
        StoreUrl::S3 { bucket, prefix } => {
            let store = S3Store::open(bucket, prefix, &settings.s3)?;
            store.check_credentials()?;
            Box::new(store)
        }
    })
}

/// Keys are relative, `/`-separated and stay inside the prefix.
pub fn check_key(key: &str) -> Result<(), &'static str> {
    if key.starts_with('/') {
        return Err("keys are relative to the store's prefix");
    }
    if key
        .split('/')
        .any(|segment| segment == ".." || segment == ".")
    {
        return Err("`.` and `..` segments are not allowed");
    }
    if key.contains('\\') || key.contains('\0') {
        return Err("backslashes and NUL are not allowed");
    }
    if !key.is_empty() && key.split('/').any(str::is_empty) {
        return Err("empty path segments are not allowed");
    }
    Ok(())
}

/// Why `bucket` is not an S3 bucket name, by S3's naming rules (which S3-compatible servers
/// follow): 3 to 63 characters, lowercase letters, digits, `.` and `-`, starting and ending
/// with a letter or digit, no `..`, `.-` or `-.`, not an IP address, none of S3's reserved
/// prefixes and suffixes. Said here, before the SDK sends a request whose failure it would
/// describe only in a debug dump.
pub fn check_bucket(bucket: &str) -> Result<(), &'static str> {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if !(3..=63).contains(&bucket.len()) {
        return Err("a bucket name is 3 to 63 characters long");
    }
    if !bucket
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
    {
        return Err("a bucket name holds lowercase letters, digits, `.` and `-` only");
    }
    if !alnum(bucket.chars().next()) || !alnum(bucket.chars().last()) {
        return Err("a bucket name starts and ends with a letter or digit");
    }
    if bucket.contains("..") || bucket.contains(".-") || bucket.contains("-.") {
        return Err("a bucket name has no `..`, `.-` or `-.`");
    }
    if bucket.parse::<std::net::Ipv4Addr>().is_ok() {
        return Err("a bucket name is not an IP address");
    }
    let reserved_prefix = ["xn--", "sthree-", "amzn-s3-demo-"]
        .iter()
        .any(|p| bucket.starts_with(p));
    let reserved_suffix = ["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
        .iter()
        .any(|s| bucket.ends_with(s));
    if reserved_prefix || reserved_suffix {
        return Err("S3 reserves that prefix or suffix");
    }
    Ok(())
}

/// Percent-encodes one path segment (a file name) for an href or a request path: everything
/// but RFC 3986 unreserved characters. `+` becomes `%2B`, which S3 and CDNs would otherwise
/// read as a space (TheRock#777).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Percent-encodes a `/`-separated key, segment by segment.
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// Writes an object that must never change once published: a skip when the same bytes are
/// there, [`StoreError::Conflict`] when different bytes are.
pub fn put_immutable(
    store: &dyn Storage,
    key: &str,
    body: Body<'_>,
    sha256: &str,
    content_type: &'static str,
) -> Result<Outcome, StoreError> {
    if let Some(existing) = store.head(key)? {
        return same_or_conflict(store, existing, sha256);
    }
    let options = PutOptions {
        content_type: Some(content_type),
        cache_control: None,
        sha256: Some(sha256.to_string()),
        if_absent: true,
    };
    // The bytes uploaded are the bytes checked: a file is opened once, what is read from it
    // is hashed and must be what verification hashed, and the store reads the very file
    // that was opened (its /proc/self/fd path on Linux), whatever now sits at its name. A local store
    // also hashes what it copies, before the object becomes visible; S3 checks the SHA-256
    // it is sent with (`--s3-checksums`).
    let opened;
    let pinned;
    let body = match body {
        Body::File(path) => {
            opened = fs_err::File::open(path).map_err(|e| StoreError::Backend {
                store: store.url(),
                op: "read",
                key: key.to_string(),
                message: e.to_string(),
                transient: false,
            })?;
            let (actual, _) =
                crate::fsutil::sha256_reader(opened.file()).map_err(|e| StoreError::Backend {
                    store: store.url(),
                    op: "read",
                    key: key.to_string(),
                    message: format!("{}: {e}", path.display()),
                    transient: false,
                })?;
            if actual != sha256 {
                return Err(StoreError::Changed {
                    path: path.to_path_buf(),
                    key: key.to_string(),
                    expected: sha256.to_string(),
                    actual,
                });
            }
            pinned = crate::platform::host::open_file_path(opened.file());
            Body::File(pinned.as_deref().unwrap_or(path))
        }
        bytes => bytes,
    };
    match store.put(key, body, &options)? {
        PutResult::Written { .. } => Ok(Outcome::Created),
        PutResult::Exists => lost_race(store, key, sha256),
    }
}

/// Copies an object that must never change once published, then verifies the copy's
/// SHA-256 (the server's checksum of the copied bytes where it computes one, otherwise by
/// reading the copy back). A copy that does not verify is removed again.
pub fn copy_immutable(
    dest: &dyn Storage,
    source: &dyn Storage,
    from_key: &str,
    to_key: &str,
    expected: &ObjectInfo,
    sha256: &str,
    content_type: &'static str,
) -> Result<Outcome, StoreError> {
    if let Some(existing) = dest.head(to_key)? {
        return same_or_conflict(dest, existing, sha256);
    }
    let options = PutOptions {
        content_type: Some(content_type),
        cache_control: None,
        sha256: Some(sha256.to_string()),
        if_absent: true,
    };
    let verified = match dest.copy_from(source, from_key, to_key, expected.size, &options)? {
        PutResult::Written { verified_sha256 } => verified_sha256,
        PutResult::Exists => return lost_race(dest, to_key, sha256),
    };
    let actual = match verified {
        Some(sha) => sha,
        None => dest.content_sha256(to_key)?,
    };
    if actual != sha256 {
        // Ours, written a moment ago, and wrong: take it back so a re-run can copy again.
        dest.delete(to_key)?;
        return Err(StoreError::CopyMismatch {
            store: dest.url(),
            key: to_key.to_string(),
            expected: sha256.to_string(),
            actual,
        });
    }
    Ok(Outcome::Created)
}

/// Downloads an object into a local file and checks its bytes against `sha256` (the
/// SHA-256 a decision was made on). A download that does not match is removed again.
pub fn download_verified(
    source: &dyn Storage,
    key: &str,
    to: &Path,
    sha256: &str,
) -> Result<(), StoreError> {
    source.download(key, to)?;
    let actual = match crate::fsutil::sha256_file(to) {
        Ok((actual, _)) => actual,
        Err(error) => {
            return Err(StoreError::Backend {
                store: source.url(),
                op: "read",
                key: key.to_string(),
                message: format!("checking the download {}: {error:#}", to.display()),
                transient: false,
            });
        }
    };
    if actual != sha256 {
        // Nothing may go on from bytes other than the judged ones; a failed removal only
        // leaves a file the caller's work directory holds anyway.
        let _ = fs_err::remove_file(to);
        return Err(StoreError::CopyMismatch {
            store: source.url(),
            key: key.to_string(),
            expected: sha256.to_string(),
            actual,
        });
    }
    Ok(())
}

/// The conditional write found the key taken: someone wrote it between our HEAD and PUT.
fn lost_race(store: &dyn Storage, key: &str, sha256: &str) -> Result<Outcome, StoreError> {
    let existing = store.head(key)?.ok_or_else(|| StoreError::Backend {
        store: store.url(),
        op: "write",
        key: key.to_string(),
        message: "the server refused a conditional write, but the object does not exist".into(),
        transient: true,
    })?;
    same_or_conflict(store, existing, sha256)
}

fn same_or_conflict(
    store: &dyn Storage,
    existing: ObjectInfo,
    sha256: &str,
) -> Result<Outcome, StoreError> {
    let existing_sha = match existing.sha256 {
        Some(sha) => sha,
        None => store.content_sha256(&existing.key)?,
    };
    if existing_sha == sha256 {
        Ok(Outcome::Unchanged)
    } else {
        Err(StoreError::Conflict {
            store: store.url(),
            key: existing.key,
            existing: existing_sha,
            new: sha256.to_string(),
        })
    }
}

/// Replaces an index page (atomically per page; CDNs are told not to cache it).
pub fn put_page(
    store: &dyn Storage,
    key: &str,
    body: &str,
    content_type: &'static str,
) -> Result<(), StoreError> {
    let options = PutOptions {
        content_type: Some(content_type),
        cache_control: Some("no-cache"),
        sha256: Some(crate::fsutil::sha256_hex(body.as_bytes())),
        if_absent: false,
    };
    store
        .put(key, Body::Bytes(body.as_bytes()), &options)
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OCTET: &str = "application/octet-stream";

    #[test]
    fn downloads_are_checked_against_the_judged_sha256() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = LocalDir::new(dir.path().join("stage"));
        let key = "torch/torch-1.0-py3-none-any.whl";
        let sha = crate::fsutil::sha256_hex(b"tested");
        put_immutable(&store, key, Body::Bytes(b"tested"), &sha, OCTET).expect("put");
        let to = dir.path().join("copy.whl");
        download_verified(&store, key, &to, &sha).expect("same bytes");
        assert_eq!(fs_err::read(&to).expect("copy"), b"tested");

        let other = crate::fsutil::sha256_hex(b"judged");
        let to = dir.path().join("other.whl");
        let error = download_verified(&store, key, &to, &other).expect_err("other bytes");
        assert!(
            matches!(&error, StoreError::CopyMismatch { key: k, expected, actual, .. }
                if k == key && *expected == other && *actual == sha),
            "{error}"
        );
        assert!(!to.exists(), "a download that does not match is removed");
        let missing = download_verified(&store, "torch/absent.whl", &to, &sha);
        assert!(missing.is_err());
    }

    #[test]
    fn store_urls() {
        let cwd = Path::new("/work");
        assert_eq!(
            StoreUrl::parse("out/stage", cwd).expect("path"),
            StoreUrl::Local("/work/out/stage".into())
        );
        assert_eq!(
            StoreUrl::parse("file:///srv/wheels%2Bx", cwd).expect("file"),
            StoreUrl::Local("/srv/wheels+x".into())
        );
        assert_eq!(
            StoreUrl::parse("s3://bucket/staging/v2/", cwd).expect("s3"),
            StoreUrl::S3 {
                bucket: "bucket".into(),
                prefix: "staging/v2".into()
            }
        );
        assert_eq!(
            StoreUrl::parse("s3://bucket", cwd).expect("s3"),
            StoreUrl::S3 {
                bucket: "bucket".into(),
                prefix: String::new()
            }
        );
        for (bad, message) in [
            ("s3:///x", "the bucket name is missing"),
            (
                "s3://My_Bucket/x",
                "is not an S3 bucket name: a bucket name holds lowercase",
            ),
            ("s3://ab/x", "3 to 63 characters"),
            ("s3://-ab/x", "starts and ends with a letter or digit"),
            ("s3://a..b/x", "no `..`"),
            ("s3://192.168.1.1/x", "not an IP address"),
            ("s3://bkt/a/../c", "`.` and `..` segments are not allowed"),
            ("https://h/simple", "is not a store rockbuild can write to"),
            ("", "empty path"),
        ] {
            let error = StoreUrl::parse(bad, cwd).expect_err(bad);
            assert!(error.to_string().contains(message), "{bad}: {error}");
        }
    }

    #[test]
    fn joining_a_family_segment() {
        let s3 = StoreUrl::parse("s3://bucket/v2-staging", Path::new("/")).expect("s3");
        assert_eq!(
            s3.join("gfx94X-dcgpu").expect("join").to_string(),
            "s3://bucket/v2-staging/gfx94X-dcgpu"
        );
        let root = StoreUrl::parse("s3://bucket", Path::new("/")).expect("s3");
        assert_eq!(
            root.join("gfx110X-all").expect("join").to_string(),
            "s3://bucket/gfx110X-all"
        );
        let local = StoreUrl::parse("out/staging", Path::new("/work")).expect("local");
        assert_eq!(
            local.join("gfx1030").expect("join"),
            StoreUrl::Local("/work/out/staging/gfx1030".into())
        );
        for bad in ["", "..", "a/b"] {
            assert!(local.join(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_stay_inside_the_prefix() {
        assert!(check_key("torch/torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl").is_ok());
        for bad in ["/abs", "a/../b", "./a", "a//b", "a\\b"] {
            assert!(check_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plus_and_other_reserved_characters_are_encoded() {
        assert_eq!(
            encode_segment("torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl"),
            "torch-2.9.0%2Brocm7.0.0-cp311-cp311-linux_x86_64.whl"
        );
        assert_eq!(encode_segment("a b#c?d%"), "a%20b%23c%3Fd%25");
        assert_eq!(encode_path("torch/a+b.whl"), "torch/a%2Bb.whl");
    }
}
