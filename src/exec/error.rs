//! Why a step did not succeed, with what a user needs to act on it.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::time::Duration;

use crate::exit::{ExitStatus, HasExitStatus};

/// Why a step did not succeed. Every variant carries what a user needs to act on it.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("`{program}` not found in PATH ({path}); install it or pass its full path")]
    NotFound { program: String, path: String },
    #[error("could not start `{label}`: {source}\n  repro: {repro}")]
    Spawn {
        label: String,
        repro: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{label} failed ({status}){}\n  repro: {repro}{}",
        tail_block(tail),
        log_line(log)
    )]
    Failed {
        label: String,
        repro: String,
        status: String,
        code: Option<i32>,
        tail: Vec<String>,
        log: Option<PathBuf>,
    },
    #[error("{label} timed out after {}s and was stopped{}\n  repro: {repro}{}", after.as_secs(), tail_block(tail), log_line(log))]
    TimedOut {
        label: String,
        repro: String,
        after: Duration,
        tail: Vec<String>,
        log: Option<PathBuf>,
    },
    #[error("{label} made no progress for {}s and was stopped (watchdog){}{}\n  repro: {repro}{}", idle.as_secs(), attempts_note(*attempts), tail_block(tail), log_line(log))]
    Stalled {
        label: String,
        repro: String,
        idle: Duration,
        /// Attempts made, each stopped the same way (a retried transfer's are all counted).
        attempts: u32,
        tail: Vec<String>,
        log: Option<PathBuf>,
    },
    #[error("{label} was interrupted by signal {signal}")]
    Interrupted { label: String, signal: i32 },
    #[error("could not write the log {}: {source}", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ProcessError {
    /// The output tail, for callers that scan it for known failures.
    pub fn tail(&self) -> &[String] {
        match self {
            ProcessError::Failed { tail, .. }
            | ProcessError::TimedOut { tail, .. }
            | ProcessError::Stalled { tail, .. } => tail,
            _ => &[],
        }
    }
}

fn attempts_note(attempts: u32) -> String {
    match attempts {
        0 | 1 => String::new(),
        n => format!(", on each of {n} attempts"),
    }
}

fn tail_block(tail: &[String]) -> String {
    if tail.is_empty() {
        return String::new();
    }
    let mut block = format!("\n  last {} lines of output:", tail.len());
    for line in tail {
        block.push_str("\n    ");
        block.push_str(line);
    }
    block
}

fn log_line(log: &Option<PathBuf>) -> String {
    log.as_ref()
        .map(|p| format!("\n  full log: {}", p.display()))
        .unwrap_or_default()
}

/// Human form of an exit status, naming signals: `exit status: 1`, `signal 9 (SIGKILL)`.
pub fn describe_status(status: std::process::ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status: {code}");
    }
    match status.signal() {
        Some(signal) => format!("signal {signal} ({})", signal_name(signal)),
        None => "unknown status".to_string(),
    }
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

/// An interrupted step is the interruption (128+n); any other failure is a failed step.
impl HasExitStatus for ProcessError {
    fn exit_status(&self) -> ExitStatus {
        match self {
            ProcessError::Interrupted { signal, .. } => ExitStatus::Signal(*signal),
            _ => ExitStatus::Failure,
        }
    }

    fn output_tail(&self) -> &[String] {
        self.tail()
    }
}
