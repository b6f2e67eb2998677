//! Windows hosts: Job Objects (through process-wrap) for process trees; the rest is the
//! standard library's Windows half and same-file. Where Windows has no counterpart (signals,
//! an inode-change time, nice values) the function says what stands in for it.

use std::fs::{File, FileType, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::windows::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdout, Command, ExitStatus};
use std::time::{Duration, UNIX_EPOCH};

use process_wrap::std::{ChildWrapper, CommandWrap, JobObject};

use super::{DiskSpace, FileStat, Stop};

/// A child's process tree, named by the child's process id.
pub type TreeId = u32;

/// A child started in a Job Object of its own (started suspended, assigned, then resumed by
/// process-wrap), so that stopping it reaches what it started too.
#[derive(Debug)]
pub struct Child {
    job: Box<dyn ChildWrapper>,
}

pub fn spawn(command: Command) -> io::Result<Child> {
    let mut command = CommandWrap::from(command);
    command.wrap(JobObject);
    Ok(Child {
        job: command.spawn()?,
    })
}

impl Child {
    pub fn tree(&self) -> TreeId {
        self.job.id()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.job.stdout().take()
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.job.stderr().take()
    }

    /// The direct child's status, if it has exited (the rest of its job is not waited for, as
    /// the rest of a process group is not on Linux).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.job.inner_mut().try_wait()
    }

    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.job.inner_mut().wait()
    }

    /// Terminates every process of the job.
    pub fn kill_tree(&mut self) {
        let _ = self.job.start_kill();
    }

    /// Windows has no polite stop for a tree of console processes: the job is terminated at
    /// once, then the child reaped.
    pub fn stop(&mut self, _grace: Duration) {
        self.kill_tree();
        let _ = self.wait();
    }
}

/// Nothing to do: [`on_interrupt`] installs no handler on Windows, so no tree is signalled by
/// id (Ctrl-C and Ctrl-Break reach every process of the console, rockbuild's children too).
pub fn signal_tree(_tree: TreeId, _stop: Stop) {}

/// No handler: the console delivers Ctrl-C and Ctrl-Break to rockbuild and its children
/// alike, and each ends by its own default.
pub fn on_interrupt(_handler: impl FnMut(i32) + Send + 'static) -> io::Result<()> {
    Ok(())
}

/// Windows processes end with a code, never a signal.
pub fn exit_signal(_status: &ExitStatus) -> Option<i32> {
    None
}

pub fn signal_name(_signal: i32) -> &'static str {
    "signal"
}

/// Leaves the priority as it is: lowering it only saves time for later runs.
pub fn lower_this_thread_priority() {}

/// Ends this process at once: no destructor, no cleanup, no flush.
pub fn kill_this_process() {
    std::process::abort();
}

pub(super) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek_read(buf, offset)
}

/// Stable std has no file index or volume serial number here, and NTFS no inode-change time:
/// those fields are 0 and the last write stands for both times.
pub fn file_stat(meta: &Metadata) -> FileStat {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or((0, 0), |d| {
            (
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                i64::from(d.subsec_nanos()),
            )
        });
    FileStat {
        device: 0,
        inode: 0,
        size: meta.len(),
        modified,
        changed: modified,
    }
}

/// Windows has no execute bit: every regular file counts.
pub fn is_executable(meta: &Metadata) -> bool {
    meta.is_file()
}

#[cfg(test)]
pub fn set_executable(_path: &Path) -> io::Result<()> {
    Ok(())
}

pub fn make_read_only(path: &Path) -> io::Result<()> {
    let mut permissions = fs_err::metadata(path)?.permissions();
    permissions.set_readonly(true);
    fs_err::set_permissions(path, permissions)
}

/// Git stores Windows paths as UTF-8.
pub fn path_from_bytes(bytes: &[u8]) -> Option<PathBuf> {
    std::str::from_utf8(bytes).ok().map(PathBuf::from)
}

/// A work tree on Windows holds no FIFOs: a plain read.
pub fn read_without_waiting(path: &Path) -> Option<Vec<u8>> {
    fs_err::read(path).ok()
}

pub fn names_file(path: &Path, file: &File) -> bool {
    match (same_file::Handle::from_path(path), file.try_clone()) {
        (Ok(on_disk), Ok(open)) => same_file::Handle::from_file(open).is_ok_and(|h| h == on_disk),
        _ => false,
    }
}

/// Not read on Windows yet: `doctor` reports the disk check as unknown.
pub fn disk_space(_existing: &Path) -> io::Result<DiskSpace> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "free disk space is not read on Windows",
    ))
}

/// Windows opens files without waiting on a writer: nothing to add.
pub fn no_wait(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

/// The link itself is opened, not its target (`FILE_FLAG_OPEN_REPARSE_POINT`); callers look
/// at the name with `symlink_metadata` first and refuse a link there.
pub fn no_wait_no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
}

/// An open with [`no_wait_no_follow`] does not fail on a link.
pub fn is_link_refused(_error: &io::Error) -> bool {
    false
}

/// Windows file types are files, directories and links only.
pub fn special_kind(_file_type: &FileType) -> Option<&'static str> {
    None
}

/// Windows has no path that names an open file apart from its name: callers use the name,
/// and what they read is checked again where it lands (the store verifies its SHA-256).
pub fn open_file_path(_file: &File) -> Option<PathBuf> {
    None
}

/// Not read without a Windows API: holder records say `unknown-host`.
pub fn host_name() -> Option<String> {
    None
}

/// Cannot be told here without a Windows API, so a process is never taken for gone: a lease
/// it holds is taken over only once it expires (or with `--break-lease`).
pub fn process_is_gone(_pid: u32) -> bool {
    false
}

/// Windows has no mode bits: access is the directory's ACL.
pub fn with_mode(options: &mut OpenOptions, _mode: u32) -> &mut OpenOptions {
    options
}

pub fn new_file_permissions(_mode: u32) -> Option<Permissions> {
    None
}

pub fn set_mode(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}

pub fn set_file_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

/// What Unix would call a read-write file's mode.
#[cfg(test)]
pub fn mode_of(meta: &Metadata) -> u32 {
    if meta.permissions().readonly() {
        0o444
    } else {
        0o644
    }
}

#[cfg(test)]
pub fn umask() -> u32 {
    0
}

#[cfg(test)]
pub fn make_fifo(_path: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no FIFOs on Windows",
    ))
}

#[cfg(test)]
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::windows::fs::symlink_file(target, link)
}
