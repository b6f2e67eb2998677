//! Linux (and other Unix) hosts: process groups and signals, `stat(2)` fields, `pread(2)`,
//! `statvfs(3)`, nice values.

use std::fs::{File, FileType, Metadata, OpenOptions, Permissions};
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{
    FileExt as _, FileTypeExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{ChildStderr, ChildStdout, Command, ExitStatus};
use std::time::{Duration, Instant};

use super::{DiskSpace, FileStat, Stop};

/// A child's process tree: its process group.
pub type TreeId = i32;

/// A child started in a process group of its own, so that stopping it reaches what it
/// started too (git-remote-http, compiler drivers).
#[derive(Debug)]
pub struct Child {
    child: std::process::Child,
    pgid: i32,
}

/// Starts `command` as the leader of a new process group.
pub fn spawn(mut command: Command) -> io::Result<Child> {
    command.process_group(0);
    let child = command.spawn()?;
    let pgid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    Ok(Child { child, pgid })
}

impl Child {
    pub fn tree(&self) -> TreeId {
        self.pgid
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// The direct child's status, if it has exited (the rest of its group is not waited for).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait()
    }

    /// SIGKILL the whole group (the child is gone, something it started holds its pipes).
    pub fn kill_tree(&mut self) {
        signal_tree(self.pgid, Stop::Kill);
    }

    /// SIGTERM the group, then SIGKILL it if it is still there after `grace`; reaps the child.
    pub fn stop(&mut self, grace: Duration) {
        signal_tree(self.pgid, Stop::Terminate);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        signal_tree(self.pgid, Stop::Kill);
        let _ = self.child.wait();
    }
}

#[expect(unsafe_code, reason = "kill(2) has no safe wrapper in std")]
pub fn signal_tree(pgid: TreeId, stop: Stop) {
    let signal = match stop {
        Stop::Terminate => libc::SIGTERM,
        Stop::Kill => libc::SIGKILL,
    };
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is shared.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// Calls `handler` with the signal number whenever SIGINT, SIGTERM or SIGHUP arrives (on a
/// thread of its own).
pub fn on_interrupt(mut handler: impl FnMut(i32) + Send + 'static) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                handler(signal);
            }
        })?;
    Ok(())
}

/// The signal that ended a process, if one did.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    status.signal()
}

pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL, killed: out of memory or stopped",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// Lowers the calling thread to nice 19, for good: on Linux each thread has its own nice
/// value, and the threads and processes it starts inherit it.
#[expect(unsafe_code, reason = "setpriority(2) has no safe wrapper in std")]
pub fn lower_this_thread_priority() {
    // SAFETY: setpriority only reads its integer arguments; a failure leaves the priority as
    // it was, which costs speed only.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, 19);
    }
}

/// Ends this process at once, as `kill -9` would: no destructor, no cleanup, no flush.
#[expect(unsafe_code, reason = "kill(2) has no safe wrapper in std")]
pub fn kill_this_process() {
    // SAFETY: kill(2) on our own pid has no memory-safety preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
}

pub(super) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.read_at(buf, offset)
}

pub fn file_stat(meta: &Metadata) -> FileStat {
    FileStat {
        device: meta.dev(),
        inode: meta.ino(),
        size: meta.len(),
        modified: (meta.mtime(), meta.mtime_nsec()),
        changed: (meta.ctime(), meta.ctime_nsec()),
    }
}

/// A regular file someone may execute.
pub fn is_executable(meta: &Metadata) -> bool {
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// `chmod 755`.
#[cfg(test)]
pub fn set_executable(path: &Path) -> io::Result<()> {
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755))
}

/// `chmod 444`, as git leaves its packs.
pub fn make_read_only(path: &Path) -> io::Result<()> {
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o444))
}

/// A path git stores as bytes (any bytes but NUL are a Unix file name).
pub fn path_from_bytes(bytes: &[u8]) -> Option<PathBuf> {
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes)))
}

/// The contents of the file at `path`, if it can be read without waiting: opened
/// non-blocking, so that a FIFO where a file was expected reads as empty instead of hanging.
pub fn read_without_waiting(path: &Path) -> Option<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut data = Vec::new();
    file.read_to_end(&mut data).ok()?;
    Some(data)
}

/// True when `path` names the open `file` (same device and inode).
pub fn names_file(path: &Path, file: &File) -> bool {
    match (fs_err::metadata(path), file.metadata()) {
        (Ok(on_disk), Ok(open)) => on_disk.dev() == open.dev() && on_disk.ino() == open.ino(),
        _ => false,
    }
}

/// statvfs(3) of `existing`, which must exist.
#[expect(unsafe_code, reason = "statvfs(3) has no safe wrapper in std")]
pub fn disk_space(existing: &Path) -> io::Result<DiskSpace> {
    let device = fs_err::metadata(existing)?.dev();
    let c_path = std::ffi::CString::new(existing.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a NUL-terminated path and `stat` points to writable memory of the
    // right type; statvfs initialises it fully when it returns 0.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: statvfs returned 0, so the struct is initialised.
    let stat = unsafe { stat.assume_init() };
    Ok(DiskSpace {
        device,
        available: stat.f_bavail.saturating_mul(stat.f_frsize),
        name_max: stat.f_namemax,
    })
}

/// Opening never waits: `O_NONBLOCK`, so that a FIFO where a file was expected is refused
/// instead of waiting for a writer (a no-op on regular files).
pub fn no_wait(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NONBLOCK)
}

/// [`no_wait`], and a link at the name is an error (`O_NOFOLLOW`) rather than followed: the
/// last component cannot have become a link since it was looked at.
pub fn no_wait_no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
}

/// The error of an open that met a link where [`no_wait_no_follow`] refuses one (`ELOOP`).
pub fn is_link_refused(error: &io::Error) -> bool {
    error.raw_os_error() == Some(libc::ELOOP)
}

/// What a file that is neither a regular file, a directory nor a link is, in words.
pub fn special_kind(file_type: &FileType) -> Option<&'static str> {
    if file_type.is_fifo() {
        Some("a FIFO")
    } else if file_type.is_char_device() {
        Some("a character device")
    } else if file_type.is_block_device() {
        Some("a block device")
    } else if file_type.is_socket() {
        Some("a socket")
    } else {
        None
    }
}

/// A new file's mode before the umask (`open(2)`'s mode argument).
pub fn with_mode(options: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    options.mode(mode)
}

/// Permissions a new file is created with before the umask, for APIs that take them.
pub fn new_file_permissions(mode: u32) -> Option<Permissions> {
    Some(Permissions::from_mode(mode))
}

/// `chmod`: the mode whatever the umask (published files and directories).
pub fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    fs_err::set_permissions(path, Permissions::from_mode(mode))
}

/// `fchmod` on an open file.
pub fn set_file_mode(file: &File, mode: u32) -> io::Result<()> {
    file.set_permissions(Permissions::from_mode(mode))
}

/// The permission bits of a file.
#[cfg(test)]
pub fn mode_of(meta: &Metadata) -> u32 {
    meta.permissions().mode() & 0o7777
}

/// The process umask (set and restored).
#[cfg(test)]
#[expect(unsafe_code, reason = "umask(2) has no safe wrapper in std")]
pub fn umask() -> u32 {
    // SAFETY: umask only swaps the process's file mode mask; the old one is put back.
    unsafe {
        let mask = libc::umask(0o022);
        libc::umask(mask);
        mask
    }
}

/// A FIFO at `path` (`mkfifo(3)`, mode 0600).
#[cfg(test)]
#[expect(unsafe_code, reason = "mkfifo(3) has no safe wrapper in std")]
pub fn make_fifo(path: &Path) -> io::Result<()> {
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A symbolic link at `link` to the file `target`.
#[cfg(test)]
pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// A path naming the open `file` itself, whatever sits at its name now (Linux's
/// /proc/self/fd).
pub fn open_file_path(file: &File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    Some(PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd())))
}

/// This machine's name, as the kernel reports it.
pub fn host_name() -> Option<String> {
    fs_err::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
}

/// Whether the process `pid` of this machine has ended.
pub fn process_is_gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[cfg(test)]
mod tests {
    /// The thread's nice value, from /proc (its `stat` line's 19th field).
    fn nice_of_this_thread() -> i64 {
        let stat = fs_err::read_to_string("/proc/thread-self/stat").expect("stat");
        let after_name = stat.rsplit(')').next().expect("fields");
        after_name
            .split_whitespace()
            .nth(16)
            .expect("nice")
            .parse()
            .expect("number")
    }

    #[test]
    fn work_runs_at_nice_19_and_the_caller_keeps_its_priority() {
        let before = nice_of_this_thread();
        assert_eq!(
            crate::exec::priority::at_lowest(nice_of_this_thread).expect("joined"),
            19
        );
        assert_eq!(nice_of_this_thread(), before);
    }
}
