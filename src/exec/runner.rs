//! Running a [`Cmd`]: retries of transient failures, one attempt (spawn in its own process
//! tree, watch, stop what overruns), and the outcome as [`Output`] or [`ProcessError`].

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::command::{Cmd, resolve_program};
use super::error::{ProcessError, describe_status};
use super::log::StepLog;
use super::pipes::{Ending, Limits, Pipes, Stream};
use super::signals::{self, ChildRegistry};
use crate::env_vars::Environment;
use crate::platform::host;

/// How many trailing output lines a failure report carries.
const TAIL_LINES: usize = 40;

/// What a finished step produced.
#[derive(Clone, Debug, Default)]
pub struct Output {
    /// stdout, when the command was built with [`Cmd::capture_stdout`].
    pub stdout: String,
    /// The last output lines (stderr only when stdout is captured as data).
    pub tail: Vec<String>,
    pub attempts: u32,
}

/// Starts [`Cmd`]s. Cheap to clone; every clone shares the child registry.
#[derive(Clone, Debug)]
pub struct Runner {
    base: Arc<Environment>,
    children: Arc<ChildRegistry>,
    heartbeat: Option<Heartbeat>,
}

/// Where a step that has been silent for a while is reported, and how often: a compile that
/// runs for minutes without a line (pip builds a wheel quietly) otherwise looks hung.
#[derive(Clone)]
pub struct Heartbeat {
    /// Silence before the first line, and between the lines after it.
    pub every: Duration,
    /// Takes each line (the user interface's status line: it honours `--quiet` and
    /// `--log-format json`).
    pub sink: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heartbeat")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

/// `1m 05s`, `42s`: how long a step has run, for a heartbeat line.
fn running_for(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    match seconds / 60 {
        0 => format!("{seconds}s"),
        minutes => format!("{minutes}m {:02}s", seconds % 60),
    }
}

/// What one attempt saw: stdout as data, the last lines, how it ended, how long it took.
struct Attempt {
    stdout: Vec<u8>,
    tail: Vec<String>,
    ending: Ending,
    duration: Duration,
}

impl Runner {
    pub fn new(base: Environment) -> Self {
        Runner {
            base: Arc::new(base),
            children: Arc::new(ChildRegistry::default()),
            heartbeat: None,
        }
    }

    /// Reports every step that is silent for `heartbeat.every` (and again each time as long
    /// again passes without output): its label and how long it has run, never its command
    /// line or environment.
    pub fn with_heartbeat(mut self, heartbeat: Heartbeat) -> Self {
        self.heartbeat = Some(heartbeat);
        self
    }

    /// The start-up environment every child starts from.
    pub fn base_env(&self) -> &Environment {
        &self.base
    }

    /// Installs handlers so that SIGINT, SIGTERM and SIGHUP stop every running child tree.
    /// The interrupted steps return [`ProcessError::Interrupted`]; no new step starts.
    pub fn install_signal_handlers(&self) -> std::io::Result<()> {
        signals::install_handlers(&self.children)
    }

    /// The signal that interrupted this run, if any.
    pub fn interrupted(&self) -> Option<i32> {
        self.children.interrupted()
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
            // A transfer that went silent is retried like one that failed transiently: a
            // stalled connection is the network's failure, not the request's. One that ran
            // into its total timeout is not: it was making progress, and would take as long
            // again.
            let why = match (&result, &cmd.retry) {
                (Err(ProcessError::Failed { tail, .. }), Some(retry))
                    if (retry.is_transient)(&tail.join("\n")) =>
                {
                    Some("failed with what looks like a transient error")
                }
                (Err(ProcessError::Stalled { .. }), Some(_)) => {
                    Some("made no progress and was stopped")
                }
                _ => None,
            };
            let Some(why) = why.filter(|_| attempt_number < attempts) else {
                return result.map(|mut output| {
                    output.attempts = attempt_number;
                    output
                });
            };
            tracing::warn!(
                "{} {why}; retrying in {}s (attempt {}/{})",
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

    /// One attempt: log header, spawn, watch, stop what overran, log footer, outcome.
    fn run_once(
        &self,
        cmd: &Cmd,
        on_line: &mut dyn FnMut(&str),
        attempt_number: u32,
    ) -> Result<Output, ProcessError> {
        self.not_interrupted(cmd)?;
        let repro = cmd.repro();
        let mut log = StepLog::open(cmd.log.as_deref())?;
        log.header(&cmd.label, attempt_number, &repro)?;
        let attempt = self.attempt(cmd, &repro, &mut log, on_line)?;
        let ending = match &attempt.ending {
            Ending::Exited(status) => describe_status(*status),
            Ending::TimedOut => "stopped: timeout".to_string(),
            Ending::Stalled => "stopped: no progress (watchdog)".to_string(),
        };
        log.footer(&ending, attempt.duration)?;
        self.not_interrupted(cmd)?;
        outcome(cmd, repro, attempt, attempt_number)
    }

    fn not_interrupted(&self, cmd: &Cmd) -> Result<(), ProcessError> {
        match self.interrupted() {
            Some(signal) => Err(ProcessError::Interrupted {
                label: cmd.label.clone(),
                signal,
            }),
            None => Ok(()),
        }
    }

    /// Starts the child in its own process tree and watches it to the end. Every line is
    /// masked, logged, handed to `on_line` and kept for the tail (stderr only when stdout is
    /// data).
    fn attempt(
        &self,
        cmd: &Cmd,
        repro: &str,
        log: &mut StepLog,
        on_line: &mut dyn FnMut(&str),
    ) -> Result<Attempt, ProcessError> {
        let env = cmd.effective_env(&self.base);
        let secrets = cmd.secrets(&env);
        let program = resolve_program(&cmd.program, &env, cmd.cwd.as_deref())?;
        let spawn_error = |source| ProcessError::Spawn {
            label: cmd.label.clone(),
            repro: repro.to_string(),
            source,
        };
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
            .stderr(Stdio::piped());
        if let Some(cwd) = &cmd.cwd {
            command.current_dir(cwd);
        }
        let start = Instant::now();
        // A tree of its own: timeouts and signals reach grandchildren too.
        let mut child = host::spawn(command).map_err(spawn_error)?;
        let tree = child.tree();
        self.children.insert(tree);
        let pipes = Pipes::take(&mut child);

        let mut stdout = Vec::new();
        let mut tail = VecDeque::new();
        let mut log_error = None;
        let limits = Limits {
            timeout: cmd.timeout,
            idle: cmd.idle_timeout,
            heartbeat: self.heartbeat.as_ref().map(|h| h.every),
        };
        // The label is the step's name; masked all the same, as every line is.
        let label = secrets.mask(&cmd.label);
        let watched = pipes.watch(
            &mut child,
            &limits,
            &mut |bytes| {
                if cmd.capture_stdout {
                    stdout.extend_from_slice(bytes);
                }
            },
            &mut |stream, line| {
                let line = secrets.mask(&line);
                if let Err(error) = log.line(&line) {
                    log_error.get_or_insert(error);
                }
                on_line(&line);
                if stream == Stream::Stderr || !cmd.capture_stdout {
                    tail.push_back(line);
                    if tail.len() > TAIL_LINES {
                        tail.pop_front();
                    }
                }
            },
            &mut |elapsed, silent| {
                if let Some(heartbeat) = &self.heartbeat {
                    (heartbeat.sink)(&format!(
                        "{label}: still running after {} (no output for {})",
                        running_for(elapsed),
                        running_for(silent)
                    ));
                }
            },
        );
        if !matches!(watched, Ok(Ending::Exited(_))) {
            signals::stop_tree(&mut child);
        }
        self.children.remove(tree);
        pipes.join();
        let ending = watched.map_err(spawn_error)?;
        if let Some(error) = log_error {
            return Err(error);
        }
        Ok(Attempt {
            stdout,
            tail: tail.into(),
            ending,
            duration: start.elapsed(),
        })
    }
}

/// The result of an attempt: its output when it exited successfully, else why not.
fn outcome(
    cmd: &Cmd,
    repro: String,
    attempt: Attempt,
    attempt_number: u32,
) -> Result<Output, ProcessError> {
    let Attempt {
        stdout,
        tail,
        ending,
        duration,
    } = attempt;
    match ending {
        Ending::Exited(status) if status.success() => Ok(Output {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            tail,
            attempts: attempt_number,
        }),
        Ending::Exited(status) => Err(ProcessError::Failed {
            label: cmd.label.clone(),
            repro,
            status: describe_status(status),
            code: status.code(),
            tail,
            log: cmd.log.clone(),
        }),
        Ending::TimedOut => Err(ProcessError::TimedOut {
            label: cmd.label.clone(),
            repro,
            after: cmd.timeout.unwrap_or(duration),
            tail,
            log: cmd.log.clone(),
        }),
        Ending::Stalled => Err(ProcessError::Stalled {
            label: cmd.label.clone(),
            repro,
            idle: cmd.idle_timeout.unwrap_or(duration),
            attempts: attempt_number,
            tail,
            log: cmd.log.clone(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ProcessError;
    use crate::exec::{Cmd, Retry};

    fn runner() -> Runner {
        Runner::new(Environment::from_pairs([(
            "PATH",
            "/usr/local/bin:/usr/bin:/bin",
        )]))
    }

    /// A real child that prints nothing for a while is reported by its label with how long it
    /// has run, through the runner's heartbeat option; a secret in the label is masked.
    #[test]
    fn a_silent_step_gets_a_heartbeat_line() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let seen = Arc::clone(&lines);
        let runner = Runner::new(Environment::from_pairs([
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("HF_TOKEN", "hunter2"),
        ]))
        .with_heartbeat(Heartbeat {
            every: Duration::from_millis(100),
            sink: Arc::new(move |line: &str| {
                if let Ok(mut lines) = seen.lock() {
                    lines.push(line.to_string());
                }
            }),
        });
        let cmd = Cmd::new("sh")
            .args(["-c", "sleep 1"])
            .label("compile with hunter2");
        runner.run(&cmd).expect("runs");
        let lines = lines.lock().expect("lines").clone();
        let first = lines.first().expect("a heartbeat line for a silent step");
        assert!(
            first.starts_with("compile with ****: still running after ")
                && first.contains(" (no output for "),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .all(|l| !l.contains("hunter2") && !l.contains("sleep")),
            "{lines:?}"
        );
    }

    #[test]
    fn running_time_reads_in_minutes_and_seconds() {
        assert_eq!(running_for(Duration::from_secs(42)), "42s");
        assert_eq!(running_for(Duration::from_secs(185)), "3m 05s");
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
    fn stalled_attempts_are_retried_and_timed_out_ones_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        let counter = dir.path().join("count");
        // Silent on its first two attempts, done on the third.
        let script = format!(
            "echo x >> {0}; [ $(wc -l < {0}) -ge 3 ] || sleep 60",
            counter.display()
        );
        let retry = Retry {
            attempts: 3,
            backoff: Duration::from_millis(10),
            is_transient: |_| false,
        };
        let stalling = |script: &str| {
            Cmd::new("sh")
                .args(["-c", script])
                .idle_timeout(Duration::from_millis(300))
                .retry(retry.clone())
        };
        let output = runner()
            .run(&stalling(&script))
            .expect("third attempt succeeds");
        assert_eq!(output.attempts, 3);
        // Silent every time: stopped after the last attempt, which the error counts.
        let error = runner()
            .run(&stalling("sleep 60"))
            .expect_err("stalls every time");
        assert!(
            matches!(error, ProcessError::Stalled { attempts: 3, .. }),
            "{error}"
        );
        // Making progress until its total timeout: one attempt.
        fs_err::remove_file(&counter).expect("reset");
        let ticking = format!(
            "echo x >> {0}; while true; do echo tick; sleep 0.05; done",
            counter.display()
        );
        let error = runner()
            .run(&stalling(&ticking).timeout(Duration::from_millis(400)))
            .expect_err("times out");
        assert!(matches!(error, ProcessError::TimedOut { .. }), "{error}");
        assert_eq!(
            fs_err::read_to_string(&counter)
                .expect("count")
                .lines()
                .count(),
            1
        );
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
