//! One writer at a time on a local directory: a lock file held with `flock(2)` for as long
//! as the run lasts, holding a record of who holds it (host, pid, start time, verb).
//!
//! The kernel drops a `flock` when its holder dies, however it dies (`kill -9` included), so
//! a local lock never goes stale on its own: a dead run's lock is simply taken by the next
//! one. Breaking a lock (`--break-lease`) unlinks the file and creates a new one; the run
//! that held the old file finds out at its next [`LockFile::confirm`] (the path no longer
//! names its file) and stops before writing anything a reader sees.
//!
//! Taking a lock checks, after the `flock`, that the path still names the locked file: a
//! release or a break unlinks it, and a lock on an unlinked file protects nothing.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Who holds a lock or lease: written when it is taken, shown to whoever is refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The rockbuild verb (`stage`, `promote`, `index`, `checkout`).
    pub verb: String,
    pub host: String,
    pub pid: u32,
    /// RFC 3339, UTC.
    pub started: String,
    /// Unix seconds after which the lease may be taken over (S3 leases; a local lock lives
    /// exactly as long as its process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<i64>,
    /// Tells this run's lease apart from another's (S3 leases).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
}

impl Holder {
    /// This process, starting `verb` now.
    pub fn this_run(verb: &str) -> Holder {
        let now = jiff::Timestamp::now();
        Holder {
            verb: verb.to_string(),
            host: hostname(),
            pid: std::process::id(),
            started: now.round(jiff::Unit::Second).unwrap_or(now).to_string(),
            expires: None,
            token: format!(
                "{}-{}-{}",
                hostname(),
                std::process::id(),
                now.as_nanosecond()
            ),
        }
    }

    /// True when this holder ran on `host` (this machine) and its process is gone.
    pub fn is_gone_from(&self, host: &str) -> bool {
        self.host == host && crate::platform::host::process_is_gone(self.pid)
    }

    /// `rockbuild stage (pid 4242 on build-7, since 2026-11-24T15:00:00Z)`.
    pub fn describe(&self) -> String {
        format!(
            "rockbuild {} (pid {} on {}, since {})",
            self.verb, self.pid, self.host, self.started
        )
    }
}

/// The host name, for holder records (`unknown-host` when the system will not say).
fn hostname() -> String {
    crate::platform::host::host_name().unwrap_or_else(|| "unknown-host".into())
}

/// Why a lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else holds it; `holder` is `None` when their record is not written yet or
    /// unreadable.
    #[error("{path} is held by {}", holder.as_ref().map_or_else(|| "another run (its record is not written yet)".to_string(), Holder::describe))]
    Held {
        path: PathBuf,
        holder: Option<Holder>,
    },
    /// Our lock was broken by another run (the path names a different file now).
    #[error("{path}: this run's lock was broken by another run{}", holder.as_ref().map(|h| format!(" ({})", h.describe())).unwrap_or_default())]
    Lost {
        path: PathBuf,
        holder: Option<Holder>,
    },
    #[error("{}", io_message(path, error))]
    Io {
        path: PathBuf,
        // Shown in the message itself, so not a source (the chain would repeat it).
        error: std::io::Error,
    },
}

/// Another run holds the lock (or took ours): busy, retry later.
impl crate::exit::HasExitStatus for LockError {
    fn exit_status(&self) -> crate::exit::ExitStatus {
        match self {
            LockError::Held { .. } | LockError::Lost { .. } => crate::exit::ExitStatus::Busy,
            LockError::Io { .. } => crate::exit::ExitStatus::Failure,
        }
    }
}

/// `<path>: <error>`, without the path twice when the error names it already.
fn io_message(path: &Path, error: &std::io::Error) -> String {
    let text = error.to_string();
    if text.starts_with(&path.display().to_string()) {
        text
    } else {
        format!("{}: {text}", path.display())
    }
}

/// A held lock file; released (unlinked, then unlocked) on drop.
#[derive(Debug)]
pub struct LockFile {
    path: PathBuf,
    file: File,
}

impl LockFile {
    /// Takes the lock at `path` for `holder`, without waiting. With `break_existing`, a lock
    /// someone else holds is broken (its file unlinked) and taken; the record of the run it
    /// was taken from is returned so the caller can say whose it was.
    pub fn acquire(
        path: &Path,
        holder: &Holder,
        break_existing: bool,
    ) -> Result<(LockFile, Option<Holder>), LockError> {
        let io = |error| LockError::Io {
            path: path.to_path_buf(),
            error,
        };
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(io)?;
        }
        let mut broken = None;
        // A few rounds: each lost round means another run released or broke the lock
        // between our open and our flock.
        for _ in 0..8 {
            // Never through a link: a `.rockbuild-lease` planted as a link to another file would
            // have that file's content replaced by the holder record.
            let mut file = crate::fsutil::open_lock(path).map_err(io)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    let current = read_holder(&mut file);
                    if !break_existing {
                        return Err(LockError::Held {
                            path: path.to_path_buf(),
                            holder: current,
                        });
                    }
                    // The holder keeps a lock on a file nobody can open any more.
                    match fs_err::remove_file(path) {
                        Ok(()) => {}
                        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                        Err(error) => return Err(io(error)),
                    }
                    broken = broken.or(current);
                    continue;
                }
                Err(TryLockError::Error(error)) => return Err(io(error)),
            }
            if !names_file(path, &file) {
                continue;
            }
            let mut lock = LockFile {
                path: path.to_path_buf(),
                file,
            };
            lock.write_holder(holder).map_err(io)?;
            return Ok((lock, broken));
        }
        Err(LockError::Held {
            path: path.to_path_buf(),
            holder: None,
        })
    }

    /// Still ours: the path names the file this run locked (a break replaces it).
    pub fn confirm(&self) -> Result<(), LockError> {
        if names_file(&self.path, &self.file) {
            return Ok(());
        }
        let holder = crate::input::read_bytes(&self.path, crate::input::RECORD)
            .ok()
            .and_then(|bytes| crate::input::strict::json_slice(&bytes).ok());
        Err(LockError::Lost {
            path: self.path.clone(),
            holder,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_holder(&mut self, holder: &Holder) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(holder).map_err(std::io::Error::other)?;
        self.file.set_len(0)?;
        self.file.rewind()?;
        self.file.write_all(text.as_bytes())?;
        self.file.write_all(b"\n")?;
        self.file.sync_all()
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        // Unlink while still locked (a run waiting on this file re-checks the path), and
        // only when the path is still ours: a broken lock's path belongs to its new holder.
        if names_file(&self.path, &self.file) {
            let _ = fs_err::remove_file(&self.path);
        }
        let _ = self.file.unlock();
    }
}

/// True when `path` names the open `file` (the same file, not just the same name).
fn names_file(path: &Path, file: &File) -> bool {
    crate::platform::host::names_file(path, file)
}

/// The holder record in a lock file, if it is one (read with a bound: the file is anyone's).
fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.take(crate::input::RECORD.bytes)
        .read_to_string(&mut text)
        .ok()?;
    crate::input::strict::json(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_a_break_is_noticed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/.rockbuild-lease");
        let first = Holder::this_run("stage");
        let (lock, broken) = LockFile::acquire(&path, &first, false).expect("first");
        assert!(broken.is_none());
        lock.confirm().expect("ours");

        let second = Holder::this_run("promote");
        match LockFile::acquire(&path, &second, false) {
            Err(LockError::Held { holder, .. }) => assert_eq!(holder, Some(first.clone())),
            other => panic!("expected a refusal, got {other:?}"),
        }

        let (taken, broken) = LockFile::acquire(&path, &second, true).expect("break");
        assert_eq!(broken, Some(first));
        assert!(matches!(lock.confirm(), Err(LockError::Lost { .. })));
        // The broken run's release leaves the new holder's file alone.
        drop(lock);
        assert!(path.exists());
        taken.confirm().expect("the new holder's");
        drop(taken);
        assert!(!path.exists(), "a released lock leaves no file");
        let (_again, broken) = LockFile::acquire(&path, &second, false).expect("free again");
        assert!(broken.is_none());
    }
}
