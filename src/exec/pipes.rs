//! The child's output: both pipes read on their own threads into one channel, split into
//! lines, and watched against the step's limits (total time, silence, a child that exited
//! while a grandchild holds its pipes).

use std::io::Read;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::platform::host::Child;

/// When the direct child has exited but a grandchild still holds its output pipes, how long
/// to keep reading before stopping the tree.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);
/// How often the watch wakes up without output to check the limits and the child.
const POLL: Duration = Duration::from_millis(100);

/// Which pipe a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stream {
    Stdout,
    Stderr,
}

/// The step's limits, as the watch applies them.
pub(super) struct Limits {
    /// Total wall-clock budget.
    pub timeout: Option<Duration>,
    /// The no-progress watchdog.
    pub idle: Option<Duration>,
    /// After this long without output, and again every time as long again passes in
    /// silence, the watch reports the silence (a heartbeat for the user).
    pub heartbeat: Option<Duration>,
}

/// How a watched child ended.
pub(super) enum Ending {
    Exited(std::process::ExitStatus),
    TimedOut,
    Stalled,
}

/// Both pipes of a running child, read on their own threads.
pub(super) struct Pipes {
    receiver: Receiver<(Stream, Vec<u8>)>,
    readers: Vec<JoinHandle<()>>,
}

impl Pipes {
    /// Takes the child's stdout and stderr and starts reading them.
    pub(super) fn take(child: &mut Child) -> Pipes {
        let (sender, receiver) = mpsc::channel();
        let streams: [(Stream, Option<Box<dyn Read + Send>>); 2] = [
            (
                Stream::Stdout,
                child
                    .take_stdout()
                    .map(|s| Box::new(s) as Box<dyn Read + Send>),
            ),
            (
                Stream::Stderr,
                child
                    .take_stderr()
                    .map(|s| Box::new(s) as Box<dyn Read + Send>),
            ),
        ];
        let readers = streams
            .into_iter()
            .filter_map(|(stream, pipe)| pipe.map(|p| (stream, p)))
            .map(|(stream, mut pipe)| {
                let sender = sender.clone();
                std::thread::spawn(move || {
                    let mut buffer = [0u8; 16 * 1024];
                    loop {
                        match pipe.read(&mut buffer) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                if sender.send((stream, buffer[..n].to_vec())).is_err() {
                                    break;
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        Pipes { receiver, readers }
    }

    /// Reads until both pipes close or a limit stops the child; every line goes to
    /// `on_line`, raw stdout bytes to `on_stdout`, each [`Limits::heartbeat`] of silence to
    /// `on_silence` (how long the child has run, how long it has been silent). The caller stops the tree when the
    /// ending is not an exit.
    pub(super) fn watch(
        &self,
        child: &mut Child,
        limits: &Limits,
        on_stdout: &mut dyn FnMut(&[u8]),
        on_line: &mut dyn FnMut(Stream, String),
        on_silence: &mut dyn FnMut(Duration, Duration),
    ) -> std::io::Result<Ending> {
        let start = Instant::now();
        let mut stdout_lines = LineAssembler::default();
        let mut stderr_lines = LineAssembler::default();
        let mut last_progress = Instant::now();
        let mut last_beat = last_progress;
        let mut exited: Option<(Instant, std::process::ExitStatus)> = None;
        let ending = loop {
            let now = Instant::now();
            if let Some(limit) = limits.timeout
                && now.duration_since(start) >= limit
            {
                break Ending::TimedOut;
            }
            if let Some(limit) = limits.idle
                && exited.is_none()
                && now.duration_since(last_progress) >= limit
            {
                break Ending::Stalled;
            }
            if let Some(every) = limits.heartbeat
                && exited.is_none()
                && now.duration_since(last_progress.max(last_beat)) >= every
            {
                on_silence(now.duration_since(start), now.duration_since(last_progress));
                last_beat = now;
            }
            if let Some((at, status)) = exited
                && now.duration_since(at) >= ORPHAN_GRACE
            {
                // The child is gone but something it started still holds the pipes.
                child.kill_tree();
                break Ending::Exited(status);
            }
            match self.receiver.recv_timeout(POLL) {
                Ok((stream, bytes)) => {
                    last_progress = Instant::now();
                    match stream {
                        Stream::Stdout => {
                            on_stdout(&bytes);
                            stdout_lines.push(&bytes, |line| on_line(Stream::Stdout, line));
                        }
                        Stream::Stderr => {
                            stderr_lines.push(&bytes, |line| on_line(Stream::Stderr, line));
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if exited.is_none()
                        && let Ok(Some(status)) = child.try_wait()
                    {
                        exited = Some((Instant::now(), status));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = match exited {
                        Some((_, status)) => status,
                        None => child.wait()?,
                    };
                    break Ending::Exited(status);
                }
            }
        };
        stdout_lines.finish(|line| on_line(Stream::Stdout, line));
        stderr_lines.finish(|line| on_line(Stream::Stderr, line));
        Ok(ending)
    }

    /// Waits for the reader threads (after the child and its tree are gone).
    pub(super) fn join(self) {
        for reader in self.readers {
            let _ = reader.join();
        }
    }
}

/// Splits a byte stream into lines at `\n` and `\r` (progress meters redraw with `\r`).
#[derive(Default)]
struct LineAssembler {
    partial: Vec<u8>,
}

impl LineAssembler {
    fn push(&mut self, bytes: &[u8], mut emit: impl FnMut(String)) {
        for &byte in bytes {
            if byte == b'\n' || byte == b'\r' {
                if !self.partial.is_empty() {
                    emit(String::from_utf8_lossy(&self.partial).into_owned());
                    self.partial.clear();
                }
            } else {
                self.partial.push(byte);
            }
        }
    }

    fn finish(&mut self, emit: impl FnMut(String)) {
        if !self.partial.is_empty() {
            self.push(b"\n", emit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LineAssembler;

    #[test]
    fn lines_end_at_newlines_and_carriage_returns() {
        let mut lines = Vec::new();
        let mut assembler = LineAssembler::default();
        assembler.push(b"a 10%\ra 5", |l| lines.push(l));
        assembler.push(b"0%\r\na done\nrest", |l| lines.push(l));
        assembler.finish(|l| lines.push(l));
        assert_eq!(lines, ["a 10%", "a 50%", "a done", "rest"]);
    }
}
