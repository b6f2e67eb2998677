//! What the machine rockbuild runs on does differently: process trees and signals, file stat
//! data and identity, positional reads, free disk space, thread priority. Each function has
//! one implementation per host family (`unix.rs`, `windows.rs`) with the same signature; the
//! rest of the crate calls them through this module and never names a host API itself.
//!
//! The Windows side is kept to a few lines by leaning on what others already test there:
//! process-wrap's Job Objects for process trees, same-file for file identity. It is compiled
//! by the Windows CI job; nothing here is reached when rockbuild runs on Linux.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

use std::fs::File;
use std::io;

pub use imp::{
    Child, TreeId, disk_space, exit_signal, file_stat, host_name, is_executable, is_link_refused,
    kill_this_process, lower_this_thread_priority, make_read_only, names_file,
    new_file_permissions, no_wait, no_wait_no_follow, on_interrupt, open_file_path,
    path_from_bytes, process_is_gone, read_without_waiting, set_file_mode, set_mode, signal_name,
    signal_tree, spawn, special_kind, with_mode,
};
#[cfg(test)]
pub use imp::{make_fifo, mode_of, set_executable, symlink, umask};

/// How to stop a process tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Ask it to end (SIGTERM); on a host without that, end it.
    Terminate,
    /// End it now (SIGKILL, or terminating the job).
    Kill,
}

/// A file's stat data as the host reports it, at full width: what git's index and the
/// checkout's stat snapshot compare. A host that lacks a field reports 0 for it (always
/// equal, so only the other fields tell changes apart there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub device: u64,
    pub inode: u64,
    pub size: u64,
    /// Last modification: seconds and nanoseconds since the epoch.
    pub modified: (i64, i64),
    /// Last change of the file or its metadata (Unix ctime).
    pub changed: (i64, i64),
}

/// The file system a path is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskSpace {
    pub device: u64,
    /// Bytes an unprivileged writer can still use.
    pub available: u64,
    /// The longest file name it allows.
    pub name_max: u64,
}

/// Reads at an offset without moving a shared cursor, so parallel readers can share a file.
pub trait ReadAt {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

impl ReadAt for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        imp::read_at(self, buf, offset)
    }

    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match imp::read_at(self, buf, offset) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "failed to fill whole buffer",
                    ));
                }
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
