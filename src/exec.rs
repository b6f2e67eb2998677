//! THE subprocess runner. Every child process rockbuild starts (git, python, pip, uv, hipify,
//! setup.py, sccache) is described by a [`Cmd`] and started by a [`Runner`]:
//!
//! * argv only, never a shell string;
//! * an explicit environment: the start-up snapshot plus the command's own differences, so
//!   nothing leaks from one step into the next and the process environment is never mutated;
//! * a cwd, a log file per step (header with the repro line, every output line, footer with
//!   the exit status), secrets masked in all of it;
//! * a total timeout and a no-progress watchdog; the child runs in its own process group so
//!   that grandchildren (git-remote-http, compilers) are stopped with it;
//! * retries with backoff only for steps marked as network transfers, and only for failures
//!   that look transient;
//! * on failure: the last lines of output, the log path and a copy-paste repro line.
//!
//! `std::process::Command` is used directly (not duct): the watchdog needs to see both output
//! streams as they arrive and to signal the whole process group, which duct's API hides.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::env_vars::{self, Environment};
use crate::redact::{self, Secrets};

/// How many trailing output lines a failure report carries.
pub const TAIL_LINES: usize = 40;

/// When the direct child has exited but a grandchild still holds its output pipes, how long
/// to keep reading before stopping the group.
const ORPHAN_GRACE: Duration = Duration::from_secs(2);
/// Between SIGTERM and SIGKILL when a step is stopped.
const KILL_GRACE: Duration = Duration::from_secs(3);

/// Retry policy for network transfers.
#[derive(Clone, Debug)]
pub struct Retry {
    /// Total attempts, including the first.
    pub attempts: u32,
    /// Wait before the second attempt; doubled for each further one.
    pub backoff: Duration,
    /// Decides from the output tail whether a failure is worth another attempt.
    pub is_transient: fn(&str) -> bool,
}

/// One child process, fully described before it runs.
#[derive(Clone, Debug)]
pub struct Cmd {
    label: String,
    program: OsString,
    args: Vec<OsString>,
    env: BTreeMap<String, Option<OsString>>,
    cwd: Option<PathBuf>,
    timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    log: Option<PathBuf>,
    retry: Option<Retry>,
    capture_stdout: bool,
}

impl Cmd {
    pub fn new(program: impl Into<OsString>) -> Self {
        let program = program.into();
        Cmd {
            label: program.to_string_lossy().into_owned(),
            program,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            timeout: None,
            idle_timeout: None,
            log: None,
            retry: None,
            capture_stdout: false,
        }
    }

    /// A short name for messages, e.g. `torch: git fetch`.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets a variable for this child only.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<OsString>) -> Self {
        self.env.insert(key.into(), Some(value.into()));
        self
    }

    /// Sets several variables for this child only.
    pub fn envs<K, V>(mut self, vars: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<String>,
        V: Into<OsString>,
    {
        for (key, value) in vars {
            self.env.insert(key.into(), Some(value.into()));
        }
        self
    }

    /// Removes a variable from this child's environment.
    pub fn env_remove(mut self, key: impl Into<String>) -> Self {
        self.env.insert(key.into(), None);
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Total wall-clock budget for one attempt.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// The no-progress watchdog: stop the child when it prints nothing for this long.
    pub fn idle_timeout(mut self, limit: Duration) -> Self {
        self.idle_timeout = Some(limit);
        self
    }

    /// Appends this step's output to `path` (created with its parent directories).
    pub fn log_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    /// Marks the step as a network transfer that may be retried.
    pub fn retry(mut self, retry: Retry) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Collects stdout as data (returned in [`Output::stdout`]); stderr is still logged.
    pub fn capture_stdout(mut self) -> Self {
        self.capture_stdout = true;
        self
    }

    #[cfg(test)]
    pub fn get_label(&self) -> &str {
        &self.label
    }

    pub fn get_cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    /// The environment differences of this step: `Some` = set, `None` = removed.
    #[cfg(test)]
    pub fn env_diff(&self) -> &BTreeMap<String, Option<OsString>> {
        &self.env
    }

    /// The argv as displayable strings, credentials masked.
    pub fn argv_display(&self) -> Vec<String> {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| redact::redact_url(&a.to_string_lossy()))
            .collect()
    }

    /// The environment differences as displayable `KEY=value` pairs, secrets masked.
    pub fn env_display(&self) -> Vec<(String, Option<String>)> {
        self.env
            .iter()
            .map(|(key, value)| {
                let shown = value.as_ref().map(|v| {
                    if redact::is_secret_env_name(key) {
                        "****".to_string()
                    } else {
                        redact::redact_url(&v.to_string_lossy())
                    }
                });
                (key.clone(), shown)
            })
            .collect()
    }

    /// A shell line that reproduces this step: `cd DIR && env -u X KEY=val prog args`.
    /// Secrets are masked, so the line is safe to print.
    pub fn repro(&self) -> String {
        let mut line = String::new();
        if let Some(cwd) = &self.cwd {
            let _ = write!(line, "cd {} && ", quote(&cwd.to_string_lossy()));
        }
        let env = self.env_display();
        if !env.is_empty() {
            line.push_str("env");
            for (key, value) in &env {
                match value {
                    None => {
                        let _ = write!(line, " -u {key}");
                    }
                    Some(value) => {
                        let _ = write!(line, " {key}={}", quote(value));
                    }
                }
            }
            line.push(' ');
        }
        let argv: Vec<String> = self.argv_display().iter().map(|a| quote(a)).collect();
        line.push_str(&argv.join(" "));
        line
    }

    /// The full child environment: `base` with this step's differences applied.
    pub fn effective_env(&self, base: &Environment) -> BTreeMap<OsString, OsString> {
        let mut vars: BTreeMap<OsString, OsString> = base
            .iter()
            .map(|(k, v)| (k.to_os_string(), v.to_os_string()))
            .collect();
        for (key, value) in &self.env {
            match value {
                Some(value) => {
                    vars.insert(key.into(), value.clone());
                }
                None => {
                    vars.remove(OsStr::new(key));
                }
            }
        }
        vars
    }

    /// Secret values this child can see, to be masked in everything it prints.
    fn secrets(&self, env: &BTreeMap<OsString, OsString>) -> Secrets {
        let mut secrets = Secrets::default();
        for (key, value) in env {
            if redact::is_secret_env_name(&key.to_string_lossy()) {
                secrets.add(value.to_string_lossy());
            }
        }
        secrets
    }
}

fn quote(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| format!("'{word}'"), |q| q.into_owned())
}

/// What a finished step produced.
#[derive(Clone, Debug, Default)]
pub struct Output {
    /// stdout, when the command was built with [`Cmd::capture_stdout`].
    pub stdout: String,
    /// The last output lines (stderr only when stdout is captured as data).
    pub tail: Vec<String>,
    pub attempts: u32,
}

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
    #[error("{label} made no progress for {}s and was stopped (watchdog){}\n  repro: {repro}{}", idle.as_secs(), tail_block(tail), log_line(log))]
    Stalled {
        label: String,
        repro: String,
        idle: Duration,
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

/// Process groups of running children, so a signal to rockbuild stops them all.
#[derive(Debug, Default)]
struct ChildRegistry {
    groups: Mutex<HashSet<i32>>,
    /// The signal that interrupted rockbuild, 0 while running normally.
    interrupted_by: AtomicI32,
}

impl ChildRegistry {
    fn insert(&self, pgid: i32) {
        if let Ok(mut groups) = self.groups.lock() {
            groups.insert(pgid);
        }
    }

    fn remove(&self, pgid: i32) {
        if let Ok(mut groups) = self.groups.lock() {
            groups.remove(&pgid);
        }
    }

    fn signal_all(&self, signal: i32) {
        if let Ok(groups) = self.groups.lock() {
            for pgid in groups.iter() {
                signal_group(*pgid, signal);
            }
        }
    }
}

#[expect(unsafe_code, reason = "kill(2) has no safe wrapper in std")]
fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is shared.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

/// Starts [`Cmd`]s. Cheap to clone; every clone shares the child registry.
#[derive(Clone, Debug)]
pub struct Runner {
    base: Arc<Environment>,
    children: Arc<ChildRegistry>,
}

enum Chunk {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
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

/// Everything one attempt observed.
struct Attempt {
    stdout: Vec<u8>,
    tail: VecDeque<String>,
    outcome: AttemptOutcome,
}

enum AttemptOutcome {
    Exited(std::process::ExitStatus),
    TimedOut,
    Stalled,
}

impl Runner {
    pub fn new(base: Environment) -> Self {
        Runner {
            base: Arc::new(base),
            children: Arc::new(ChildRegistry::default()),
        }
    }

    /// The start-up environment every child starts from.
    pub fn base_env(&self) -> &Environment {
        &self.base
    }

    /// Installs handlers so that SIGINT, SIGTERM and SIGHUP stop every running child group.
    /// The interrupted steps return [`ProcessError::Interrupted`]; no new step starts.
    pub fn install_signal_handlers(&self) -> std::io::Result<()> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        let children = Arc::clone(&self.children);
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    let first = children.interrupted_by.swap(signal, Ordering::SeqCst) == 0;
                    children.signal_all(libc::SIGTERM);
                    if !first {
                        // A second signal: the user means it. Stop everything now.
                        children.signal_all(libc::SIGKILL);
                        std::process::exit(128 + signal);
                    }
                }
            })?;
        Ok(())
    }

    /// The signal that interrupted this run, if any.
    pub fn interrupted(&self) -> Option<i32> {
        match self.children.interrupted_by.load(Ordering::SeqCst) {
            0 => None,
            signal => Some(signal),
        }
    }

    /// Runs a step to completion. Output lines go to the log; nothing is printed.
    pub fn run(&self, cmd: &Cmd) -> Result<Output, ProcessError> {
        self.run_streaming(cmd, &mut |_| {})
    }

    /// Runs a step, handing every output line (masked) to `on_line` as it arrives.
    pub fn run_streaming(
        &self,
        cmd: &Cmd,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<Output, ProcessError> {
        let attempts = cmd.retry.as_ref().map_or(1, |r| r.attempts.max(1));
        let mut backoff = cmd.retry.as_ref().map_or(Duration::ZERO, |r| r.backoff);
        let mut attempt_number = 1;
        loop {
            let result = self.run_once(cmd, on_line, attempt_number);
            let retry_allowed = match (&result, &cmd.retry) {
                (Err(ProcessError::Failed { tail, .. }), Some(retry)) => {
                    attempt_number < attempts && (retry.is_transient)(&tail.join("\n"))
                }
                _ => false,
            };
            if !retry_allowed {
                return result.map(|mut output| {
                    output.attempts = attempt_number;
                    output
                });
            }
            tracing::warn!(
                "{} failed with what looks like a transient error; retrying in {}s (attempt {}/{})",
                cmd.label,
                backoff.as_secs(),
                attempt_number + 1,
                attempts
            );
            std::thread::sleep(backoff);
            backoff *= 2;
            attempt_number += 1;
        }
    }

    fn run_once(
        &self,
        cmd: &Cmd,
        on_line: &mut dyn FnMut(&str),
        attempt_number: u32,
    ) -> Result<Output, ProcessError> {
        if let Some(signal) = self.interrupted() {
            return Err(ProcessError::Interrupted {
                label: cmd.label.clone(),
                signal,
            });
        }
        let env = cmd.effective_env(&self.base);
        let secrets = cmd.secrets(&env);
        let repro = cmd.repro();
        let program = resolve_program(&cmd.program, &env, cmd.cwd.as_deref())?;
        let mut log = open_log(cmd.log.as_deref())?;
        let started_at = jiff::Timestamp::now();
        if let Some(file) = log.as_mut() {
            let header = format!(
                "==> {started_at} {} (attempt {attempt_number})\n$ {repro}\n",
                cmd.label
            );
            write_log(file, cmd.log.as_deref(), header.as_bytes())?;
        }

        #[expect(
            clippy::disallowed_methods,
            reason = "the one place that starts processes"
        )]
        let mut command = std::process::Command::new(&program);
        command
            .args(&cmd.args)
            .env_clear()
            .envs(&env)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Own process group: timeouts and signals reach grandchildren too.
            .process_group(0);
        if let Some(cwd) = &cmd.cwd {
            command.current_dir(cwd);
        }
        let start = Instant::now();
        let mut child = command.spawn().map_err(|source| ProcessError::Spawn {
            label: cmd.label.clone(),
            repro: repro.clone(),
            source,
        })?;
        let pgid = i32::try_from(child.id()).unwrap_or(i32::MAX);
        self.children.insert(pgid);

        let (sender, receiver) = mpsc::channel::<Chunk>();
        let readers: Vec<_> = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .enumerate()
        .filter_map(|(index, stream)| stream.map(|s| (index, s)))
        .map(|(index, mut stream)| {
            let sender = sender.clone();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 16 * 1024];
                loop {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let bytes = buffer[..n].to_vec();
                            let chunk = if index == 0 {
                                Chunk::Stdout(bytes)
                            } else {
                                Chunk::Stderr(bytes)
                            };
                            if sender.send(chunk).is_err() {
                                break;
                            }
                        }
                    }
                }
            })
        })
        .collect();
        drop(sender);

        let mut attempt = Attempt {
            stdout: Vec::new(),
            tail: VecDeque::new(),
            outcome: AttemptOutcome::TimedOut,
        };
        let mut stdout_lines = LineAssembler::default();
        let mut stderr_lines = LineAssembler::default();
        let mut last_progress = Instant::now();
        let mut exited_at: Option<Instant> = None;
        let mut exit_status = None;
        let mut log_error = None;

        let mut handle_line = |line: String, attempt: &mut Attempt, to_tail: bool| {
            let line = secrets.mask(&line);
            if let Some(file) = log.as_mut()
                && let Err(error) =
                    write_log(file, cmd.log.as_deref(), format!("{line}\n").as_bytes())
            {
                log_error.get_or_insert(error);
            }
            on_line(&line);
            if to_tail {
                attempt.tail.push_back(line);
                if attempt.tail.len() > TAIL_LINES {
                    attempt.tail.pop_front();
                }
            }
        };

        let outcome = loop {
            let now = Instant::now();
            if let Some(limit) = cmd.timeout
                && now.duration_since(start) >= limit
            {
                break AttemptOutcome::TimedOut;
            }
            if let Some(limit) = cmd.idle_timeout
                && exit_status.is_none()
                && now.duration_since(last_progress) >= limit
            {
                break AttemptOutcome::Stalled;
            }
            if let Some(at) = exited_at
                && now.duration_since(at) >= ORPHAN_GRACE
            {
                // The child is gone but something it started still holds the pipes.
                signal_group(pgid, libc::SIGKILL);
                break AttemptOutcome::Exited(exit_status.unwrap_or_default());
            }
            match receiver.recv_timeout(Duration::from_millis(100)) {
                Ok(chunk) => {
                    last_progress = Instant::now();
                    match chunk {
                        Chunk::Stdout(bytes) => {
                            if cmd.capture_stdout {
                                attempt.stdout.extend_from_slice(&bytes);
                            }
                            let to_tail = !cmd.capture_stdout;
                            stdout_lines
                                .push(&bytes, |line| handle_line(line, &mut attempt, to_tail));
                        }
                        Chunk::Stderr(bytes) => {
                            stderr_lines.push(&bytes, |line| handle_line(line, &mut attempt, true));
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    if exit_status.is_none()
                        && let Ok(Some(status)) = child.try_wait()
                    {
                        exit_status = Some(status);
                        exited_at = Some(Instant::now());
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = match exit_status {
                        Some(status) => status,
                        None => child.wait().map_err(|source| ProcessError::Spawn {
                            label: cmd.label.clone(),
                            repro: repro.clone(),
                            source,
                        })?,
                    };
                    break AttemptOutcome::Exited(status);
                }
            }
        };
        let to_tail = !cmd.capture_stdout;
        stdout_lines.finish(|line| handle_line(line, &mut attempt, to_tail));
        stderr_lines.finish(|line| handle_line(line, &mut attempt, true));

        if !matches!(outcome, AttemptOutcome::Exited(_)) {
            stop_group(pgid, &mut child);
        }
        self.children.remove(pgid);
        for reader in readers {
            let _ = reader.join();
        }
        attempt.outcome = outcome;
        let duration = start.elapsed();

        let footer = match &attempt.outcome {
            AttemptOutcome::Exited(status) => describe_status(*status),
            AttemptOutcome::TimedOut => "stopped: timeout".to_string(),
            AttemptOutcome::Stalled => "stopped: no progress (watchdog)".to_string(),
        };
        if let Some(file) = log.as_mut() {
            let line = format!("==> {footer} after {:.1}s\n", duration.as_secs_f64());
            write_log(file, cmd.log.as_deref(), line.as_bytes())?;
        }
        if let Some(error) = log_error {
            return Err(error);
        }
        if let Some(signal) = self.interrupted() {
            return Err(ProcessError::Interrupted {
                label: cmd.label.clone(),
                signal,
            });
        }

        let tail: Vec<String> = attempt.tail.into_iter().collect();
        match attempt.outcome {
            AttemptOutcome::Exited(status) if status.success() => Ok(Output {
                stdout: String::from_utf8_lossy(&attempt.stdout).into_owned(),
                tail,
                attempts: attempt_number,
            }),
            AttemptOutcome::Exited(status) => Err(ProcessError::Failed {
                label: cmd.label.clone(),
                repro,
                status: describe_status(status),
                code: status.code(),
                tail,
                log: cmd.log.clone(),
            }),
            AttemptOutcome::TimedOut => Err(ProcessError::TimedOut {
                label: cmd.label.clone(),
                repro,
                after: cmd.timeout.unwrap_or(duration),
                tail,
                log: cmd.log.clone(),
            }),
            AttemptOutcome::Stalled => Err(ProcessError::Stalled {
                label: cmd.label.clone(),
                repro,
                idle: cmd.idle_timeout.unwrap_or(duration),
                tail,
                log: cmd.log.clone(),
            }),
        }
    }
}

/// SIGTERM the group, then SIGKILL it if it is still there after a grace period.
fn stop_group(pgid: i32, child: &mut std::process::Child) {
    signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + KILL_GRACE;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_group(pgid, libc::SIGKILL);
    let _ = child.wait();
}

/// Finds the program the way the child would: a path is used as given (relative to the
/// child's cwd), a bare name is looked up in the child's PATH.
fn resolve_program(
    program: &OsStr,
    env: &BTreeMap<OsString, OsString>,
    cwd: Option<&Path>,
) -> Result<PathBuf, ProcessError> {
    let as_path = Path::new(program);
    if as_path.components().count() > 1 {
        return Ok(match cwd {
            Some(cwd) if as_path.is_relative() => cwd.join(as_path),
            _ => as_path.to_path_buf(),
        });
    }
    let path_var = env
        .get(OsStr::new(env_vars::PATH))
        .cloned()
        .unwrap_or_default();
    for dir in std::env::split_paths(&path_var) {
        let candidate = dir.join(program);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(ProcessError::NotFound {
        program: program.to_string_lossy().into_owned(),
        path: path_var.to_string_lossy().into_owned(),
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs_err::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn open_log(path: Option<&Path>) -> Result<Option<std::fs::File>, ProcessError> {
    let Some(path) = path else { return Ok(None) };
    let open = || -> std::io::Result<std::fs::File> {
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map(fs_err::File::into_parts)
            .map(|(file, _)| file)
    };
    open().map(Some).map_err(|source| ProcessError::Log {
        path: path.to_path_buf(),
        source,
    })
}

fn write_log(
    file: &mut std::fs::File,
    path: Option<&Path>,
    bytes: &[u8],
) -> Result<(), ProcessError> {
    file.write_all(bytes).map_err(|source| ProcessError::Log {
        path: path.map(Path::to_path_buf).unwrap_or_default(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runner() -> Runner {
        Runner::new(Environment::from_pairs([(
            "PATH",
            "/usr/local/bin:/usr/bin:/bin",
        )]))
    }

    #[test]
    fn captures_stdout_and_logs_both_streams() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("logs/step.log");
        let cmd = Cmd::new("sh")
            .args(["-c", "echo data; echo noise >&2"])
            .capture_stdout()
            .log_to(&log);
        let output = runner().run(&cmd).expect("runs");
        assert_eq!(output.stdout, "data\n");
        assert_eq!(output.tail, vec!["noise"]);
        let text = fs_err::read_to_string(&log).expect("log");
        assert!(
            text.contains("$ sh -c 'echo data; echo noise >&2'"),
            "{text}"
        );
        assert!(
            text.contains("data\nnoise\n") || text.contains("noise\ndata\n"),
            "{text}"
        );
        assert!(text.contains("==> exit status: 0"), "{text}");
    }

    #[test]
    fn failure_carries_status_tail_and_repro() {
        let cmd = Cmd::new("sh")
            .args(["-c", "echo one; echo two; exit 3"])
            .env("FOO", "bar")
            .env_remove("GIT_DIR")
            .cwd("/tmp")
            .label("demo step");
        let error = runner().run(&cmd).expect_err("fails");
        match &error {
            ProcessError::Failed {
                status,
                code,
                tail,
                repro,
                ..
            } => {
                assert_eq!(status, "exit status: 3");
                assert_eq!(*code, Some(3));
                assert_eq!(tail, &vec!["one".to_string(), "two".to_string()]);
                assert_eq!(
                    repro,
                    "cd /tmp && env FOO=bar -u GIT_DIR sh -c 'echo one; echo two; exit 3'"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        let message = error.to_string();
        assert!(
            message.starts_with("demo step failed (exit status: 3)"),
            "{message}"
        );
    }

    #[test]
    fn environment_is_explicit() {
        let base = Environment::from_pairs([("PATH", "/usr/bin:/bin"), ("LEAK", "yes")]);
        let cmd = Cmd::new("sh")
            .args(["-c", "echo ${LEAK:-unset} $ADDED"])
            .env_remove("LEAK")
            .env("ADDED", "here")
            .capture_stdout();
        let output = Runner::new(base).run(&cmd).expect("runs");
        assert_eq!(output.stdout, "unset here\n");
    }

    #[test]
    fn watchdog_stops_a_silent_child_and_its_grandchildren() {
        let cmd = Cmd::new("sh")
            .args(["-c", "echo started; sleep 60 & wait"])
            .idle_timeout(Duration::from_millis(500));
        let error = runner().run(&cmd).expect_err("stalls");
        assert!(matches!(error, ProcessError::Stalled { .. }), "{error}");
        assert_eq!(error.tail(), ["started"]);
    }

    #[test]
    fn total_timeout_applies_even_with_output() {
        let cmd = Cmd::new("sh")
            .args(["-c", "while true; do echo tick; sleep 0.1; done"])
            .timeout(Duration::from_millis(600))
            .idle_timeout(Duration::from_secs(30));
        let error = runner().run(&cmd).expect_err("times out");
        assert!(matches!(error, ProcessError::TimedOut { .. }), "{error}");
    }

    #[test]
    fn transient_failures_are_retried_and_permanent_ones_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let counter = dir.path().join("count");
        let script = format!(
            "echo x >> {0}; [ $(wc -l < {0}) -ge 3 ] || {{ echo 'fatal: early EOF' >&2; exit 128; }}",
            counter.display()
        );
        let retry = Retry {
            attempts: 3,
            backoff: Duration::from_millis(10),
            is_transient: |tail| tail.contains("early EOF"),
        };
        let output = runner()
            .run(&Cmd::new("sh").args(["-c", &script]).retry(retry.clone()))
            .expect("third attempt succeeds");
        assert_eq!(output.attempts, 3);

        let permanent = Cmd::new("sh")
            .args(["-c", "echo 'fatal: not a repo' >&2; exit 128"])
            .retry(retry);
        let error = runner().run(&permanent).expect_err("fails");
        assert!(matches!(error, ProcessError::Failed { .. }));
    }

    #[test]
    fn missing_program_names_the_path_searched() {
        let error = runner()
            .run(&Cmd::new("definitely-not-a-program"))
            .expect_err("missing");
        let message = error.to_string();
        assert!(
            message.contains(
                "`definitely-not-a-program` not found in PATH (/usr/local/bin:/usr/bin:/bin)"
            ),
            "{message}"
        );
    }

    #[test]
    fn secrets_are_masked_in_repro_and_output() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("step.log");
        let cmd = Cmd::new("sh")
            .args([
                "-c",
                "echo token is $MY_TOKEN; exit 1",
                "https://u:pw@host/x",
            ])
            .env("MY_TOKEN", "s3cr3t-value")
            .log_to(&log);
        let error = runner().run(&cmd).expect_err("fails");
        let message = error.to_string();
        assert!(!message.contains("s3cr3t-value"), "{message}");
        assert!(!message.contains(":pw@"), "{message}");
        assert!(message.contains("token is ****"), "{message}");
        let text = fs_err::read_to_string(&log).expect("log");
        assert!(!text.contains("s3cr3t-value"), "{text}");
    }

    #[test]
    fn progress_lines_split_on_carriage_returns() {
        let mut lines = Vec::new();
        let cmd = Cmd::new("sh").args(["-c", "printf 'a 10%%\\ra 50%%\\ra done\\n'"]);
        runner()
            .run_streaming(&cmd, &mut |line| lines.push(line.to_string()))
            .expect("runs");
        assert_eq!(lines, ["a 10%", "a 50%", "a done"]);
    }
}
