//! Input from outside, read with bounds. Every file rockbuild reads as input (a config, a lock,
//! a test report, a sysfs property, a record another run wrote) goes through [`read_text`] or
//! [`read_bytes`]: regular files only (a FIFO or a device would be read forever), at most a
//! stated size, UTF-8 text with a byte order mark dropped. A file of a checked-out repository
//! is read as that repository's content through [`read_tree_file`]: no component of its path
//! may be a symbolic link, so a committed `version.txt -> /proc/self/environ` is refused and
//! never followed out of the tree. Parsed documents go through [`strict`]: no duplicate key
//! at any depth, and a bounded number of values once YAML aliases are expanded.

pub mod strict;

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::exit::{ExitStatus, HasExitStatus};
use crate::platform::host;

/// How large one kind of input may be, and what it is called in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    pub what: &'static str,
}

/// Config files (stack, families, presets, releases, skip lists, waivers).
pub const CONFIG: Limit = Limit {
    bytes: 16 << 20,
    what: "config file",
};
/// A lock or a TheRock manifest.
pub const LOCK: Limit = Limit {
    bytes: 16 << 20,
    what: "lock",
};
/// A test report (rockbuild's JSON, a JUnit XML file, pip's installation report).
pub const REPORT: Limit = Limit {
    bytes: 256 << 20,
    what: "test report",
};
/// A record rockbuild itself writes and reads back (a lease's holder, an SDK record, a stamp,
/// a snapshot): small, but written where another run or user can reach it.
pub const RECORD: Limit = Limit {
    bytes: 16 << 20,
    what: "record",
};
/// A checkout's stat snapshot (one entry per file of a torch-sized tree).
pub const SNAPSHOT: Limit = Limit {
    bytes: 1 << 30,
    what: "checkout snapshot",
};
/// A source file of a checked-out repository scanned for leftover CUDA includes.
pub const SOURCE_FILE: Limit = Limit {
    bytes: 64 << 20,
    what: "source file",
};
/// A project page of an index (PyPI's largest pages are a few MB; the nightly index's torch
/// page, tens of thousands of files, about 10 MB).
pub const INDEX_PAGE: Limit = Limit {
    bytes: 64 << 20,
    what: "index page",
};
/// One sysfs attribute file (a KFD node's `properties`): the kernel serves at most a page.
pub const SYSFS: Limit = Limit {
    bytes: 64 << 10,
    what: "sysfs attribute",
};
/// A file of a checked-out repository read as its content (version.txt, pin files).
pub const REPOSITORY_FILE: Limit = Limit {
    bytes: 1 << 20,
    what: "repository file",
};

/// Why an input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    // The I/O error is part of the message, not a cause of its own: printed as a chain, it
    // would be said twice.
    #[error("cannot read {}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error(
        "{} is {kind}, not a regular file: rockbuild reads a {what} from a regular file only (a FIFO or a device could be read forever); give the path of a file",
        path.display()
    )]
    NotRegular {
        path: PathBuf,
        kind: &'static str,
        what: &'static str,
    },
    #[error(
        "{} is larger than a {what} may be ({} at most); it is not the file you meant, or it was damaged",
        path.display(),
        crate::ui::human_bytes(*limit)
    )]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        limit: u64,
    },
    #[error("{} is not UTF-8 text (invalid byte at offset {offset}); a {what} is UTF-8 text", path.display())]
    NotUtf8 {
        path: PathBuf,
        what: &'static str,
        offset: usize,
    },
    #[error(
        "{} is a symbolic link{}: rockbuild reads a repository's files as its content and never follows a link out of the tree; commit the file itself",
        path.display(),
        target.as_ref().map(|t| format!(" (to `{t}`)")).unwrap_or_default()
    )]
    Link {
        path: PathBuf,
        target: Option<String>,
    },
    #[error(
        "`{relative}` is not a path inside {}: {reason}",
        root.display()
    )]
    OutsideRoot {
        root: PathBuf,
        relative: String,
        reason: &'static str,
    },
}

/// An input that is not what it should be is the user's to fix (exit 2); a read that failed
/// is a failure (exit 1).
impl HasExitStatus for InputError {
    fn exit_status(&self) -> ExitStatus {
        match self {
            InputError::Io { .. } => ExitStatus::Failure,
            _ => ExitStatus::Usage,
        }
    }
}

impl InputError {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
        move |error| InputError::Io {
            path: path.to_path_buf(),
            error,
        }
    }

    /// What went wrong, for a caller whose own message already names the file: the I/O error
    /// alone, or the whole message of a file that is not what it should be.
    pub fn reason(&self) -> String {
        match self {
            InputError::Io { error, .. } => error.to_string(),
            other => other.to_string(),
        }
    }

    /// True when the file does not exist (callers that treat a missing file as absent).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputError::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
    }
}

/// The bytes of the regular file at `path` (a link the user gave is followed: the user chose
/// it), at most `limit.bytes` of them.
pub fn read_bytes(path: &Path, limit: Limit) -> Result<Vec<u8>, InputError> {
    // Without waiting: opening a FIFO for reading would otherwise wait for a writer.
    let file = host::no_wait(File::options().read(true))
        .open(path)
        .map_err(InputError::io(path))?;
    read_open(path, file, limit)
}

/// The text of the regular file at `path`: [`read_bytes`], UTF-8, a leading byte order mark
/// dropped (editors on Windows write one; JSON and YAML parsers refuse it with a message about
/// line 1 column 1).
pub fn read_text(path: &Path, limit: Limit) -> Result<String, InputError> {
    into_text(path, read_bytes(path, limit)?, limit)
}

/// Bytes as text: UTF-8, a leading byte order mark dropped.
pub fn into_text(path: &Path, mut bytes: Vec<u8>, limit: Limit) -> Result<String, InputError> {
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    String::from_utf8(bytes).map_err(|error| InputError::NotUtf8 {
        path: path.to_path_buf(),
        what: limit.what,
        offset: error.utf8_error().valid_up_to(),
    })
}

/// The file `relative` (`/`-separated) of the tree at `root`, read as the tree's content:
/// `None` when it does not exist; refused when it or any directory on its way below `root`
/// is a symbolic link, when it is not a regular file, or when it is larger than `limit`.
pub fn read_tree_file(
    root: &Path,
    relative: &str,
    limit: Limit,
) -> Result<Option<Vec<u8>>, InputError> {
    let components = tree_components(root, relative)?;
    let mut path = root.to_path_buf();
    for (index, component) in components.iter().enumerate() {
        path.push(component);
        let metadata = match fs_err::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            // A regular file where a directory was expected: the path does not exist.
            Err(error) if error.kind() == std::io::ErrorKind::NotADirectory => return Ok(None),
            Err(error) => return Err(InputError::io(&path)(error)),
        };
        if metadata.file_type().is_symlink() {
            return Err(link(&path));
        }
        if index + 1 < components.len() && !metadata.is_dir() {
            return Ok(None);
        }
    }
    // No link followed: the last component cannot have become a link since it was looked at.
    let file = match host::no_wait_no_follow(File::options().read(true)).open(&path) {
        Ok(file) => file,
        Err(error) if host::is_link_refused(&error) => return Err(link(&path)),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(InputError::io(&path)(error)),
    };
    read_open(&path, file, limit).map(Some)
}

/// [`read_tree_file`] as text.
pub fn read_tree_text(
    root: &Path,
    relative: &str,
    limit: Limit,
) -> Result<Option<String>, InputError> {
    let path = root.join(relative);
    read_tree_file(root, relative, limit)?
        .map(|bytes| into_text(&path, bytes, limit))
        .transpose()
}

/// The components of a path inside a tree: relative, no `..`, no root, not empty.
pub fn tree_components<'a>(root: &Path, relative: &'a str) -> Result<Vec<&'a str>, InputError> {
    relative_components(relative).map_err(|reason| InputError::OutsideRoot {
        root: root.to_path_buf(),
        relative: relative.to_string(),
        reason,
    })
}

/// Why `relative` is not a path that stays inside whatever root it is joined to (a config's
/// `check-paths`, a report's file names): absolute, going up with `..`, empty.
pub fn check_relative(relative: &str) -> Result<(), &'static str> {
    relative_components(relative).map(drop)
}

fn relative_components(relative: &str) -> Result<Vec<&str>, &'static str> {
    if relative.contains('\0') {
        return Err("it holds a NUL byte");
    }
    let mut components = Vec::new();
    for component in Path::new(relative).components() {
        match component {
            Component::Normal(name) => components.push(name.to_str().ok_or("not UTF-8")?),
            Component::CurDir => {}
            Component::ParentDir => return Err("it goes up with `..`"),
            Component::RootDir | Component::Prefix(_) => return Err("it is absolute"),
        }
    }
    if components.is_empty() {
        return Err("it is empty");
    }
    Ok(components)
}

fn link(path: &Path) -> InputError {
    InputError::Link {
        path: path.to_path_buf(),
        target: fs_err::read_link(path)
            .ok()
            .map(|target| target.display().to_string()),
    }
}

/// Reads an open file: regular files only, at most `limit` bytes (also when it grows while
/// being read).
fn read_open(path: &Path, file: File, limit: Limit) -> Result<Vec<u8>, InputError> {
    let metadata = file.metadata().map_err(InputError::io(path))?;
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        return Err(InputError::NotRegular {
            path: path.to_path_buf(),
            kind: crate::fsutil::kind_of(&file_type),
            what: limit.what,
        });
    }
    let too_large = || InputError::TooLarge {
        path: path.to_path_buf(),
        what: limit.what,
        limit: limit.bytes,
    };
    if metadata.len() > limit.bytes {
        return Err(too_large());
    }
    // /proc and sysfs files report a size of 0 or a page: read up to the limit, not the size.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    file.take(limit.bytes + 1)
        .read_to_end(&mut bytes)
        .map_err(InputError::io(path))?;
    if bytes.len() as u64 > limit.bytes {
        return Err(too_large());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: Limit = Limit {
        bytes: 8,
        what: "test file",
    };

    /// A missing file's error, printed with its context as a chain, says the OS's words once
    /// and still names the file for a caller that only keeps the reason.
    #[test]
    fn a_missing_file_is_said_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("missing.yaml");
        let error = read_text(&path, SMALL).expect_err("missing");
        assert!(error.is_not_found());
        let os = match &error {
            InputError::Io { error, .. } => error.to_string(),
            other => panic!("not an I/O error: {other}"),
        };
        assert_eq!(error.reason(), os);
        let chain = format!(
            "{:#}",
            anyhow::Error::from(error).context("reading config file")
        );
        assert_eq!(chain.matches(&os).count(), 1, "{chain}");
        assert!(chain.contains("missing.yaml"), "{chain}");
    }

    #[test]
    fn regular_files_within_the_limit_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f");
        fs_err::write(&path, b"\xEF\xBB\xBFabc").expect("write");
        assert_eq!(read_text(&path, SMALL).expect("read"), "abc");
        fs_err::write(&path, b"123456789").expect("write");
        assert!(matches!(
            read_bytes(&path, SMALL),
            Err(InputError::TooLarge { limit: 8, .. })
        ));
        fs_err::write(&path, b"\xff").expect("write");
        assert!(matches!(
            read_text(&path, SMALL),
            Err(InputError::NotUtf8 { offset: 0, .. })
        ));
        assert!(matches!(
            read_bytes(dir.path(), SMALL),
            Err(InputError::NotRegular {
                kind: "a directory",
                ..
            })
        ));
        assert!(matches!(
            read_bytes(Path::new("/dev/zero"), SMALL),
            Err(InputError::NotRegular {
                kind: "a character device",
                ..
            })
        ));
        // /proc files report a size of 0: the limit still holds.
        assert!(matches!(
            read_bytes(Path::new("/proc/self/maps"), SMALL),
            Err(InputError::TooLarge { .. })
        ));
    }

    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        host::make_fifo(&fifo).expect("mkfifo");
        assert!(matches!(
            read_bytes(&fifo, SMALL),
            Err(InputError::NotRegular { kind: "a FIFO", .. })
        ));
    }

    #[test]
    fn tree_files_never_follow_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo");
        fs_err::create_dir_all(root.join("sub")).expect("mkdir");
        fs_err::write(root.join("sub/version.txt"), "1.0\n").expect("write");
        fs_err::write(dir.path().join("outside"), "6.6.6\n").expect("write");
        host::symlink(&dir.path().join("outside"), &root.join("linked")).expect("link");
        host::symlink(dir.path(), &root.join("up")).expect("link");
        assert_eq!(
            read_tree_text(&root, "sub/version.txt", SMALL).expect("read"),
            Some("1.0\n".into())
        );
        assert_eq!(read_tree_text(&root, "missing", SMALL).expect("read"), None);
        assert_eq!(
            read_tree_text(&root, "sub/version.txt/x", SMALL).expect("read"),
            None
        );
        for relative in ["linked", "up/outside"] {
            match read_tree_file(&root, relative, SMALL) {
                Err(InputError::Link { target, .. }) => assert!(target.is_some(), "{relative}"),
                other => panic!("{relative}: {other:?}"),
            }
        }
        for relative in ["../outside", "/etc/hostname", ""] {
            assert!(
                matches!(
                    read_tree_file(&root, relative, SMALL),
                    Err(InputError::OutsideRoot { .. })
                ),
                "{relative}"
            );
        }
    }
}
