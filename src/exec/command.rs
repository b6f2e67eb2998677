//! A step, fully described before it runs: program, arguments, environment differences, cwd,
//! limits, log file, retry policy; and how it is shown (argv, environment, repro line) with
//! secrets masked.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::ProcessError;
use crate::env_vars::{self, Environment};
use crate::redact::{self, Secrets};

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
    pub(super) label: String,
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    pub(super) env: BTreeMap<String, Option<OsString>>,
    pub(super) cwd: Option<PathBuf>,
    pub(super) timeout: Option<Duration>,
    pub(super) idle_timeout: Option<Duration>,
    pub(super) log: Option<PathBuf>,
    pub(super) retry: Option<Retry>,
    pub(super) capture_stdout: bool,
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

    /// The command with every `from` in its arguments and environment values replaced by
    /// `to` (a placeholder filled in once what it stands for exists).
    pub fn replace_text(mut self, from: &str, to: &str) -> Self {
        let replace = |text: &mut OsString| {
            if let Some(replaced) = text.to_str().filter(|t| t.contains(from)) {
                *text = replaced.replace(from, to).into();
            }
        };
        self.args.iter_mut().for_each(replace);
        self.env.values_mut().flatten().for_each(replace);
        self
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
    pub(super) fn secrets(&self, env: &BTreeMap<OsString, OsString>) -> Secrets {
        Secrets::of_env(env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())))
    }
}

fn quote(word: &str) -> String {
    shlex::try_quote(word).map_or_else(|_| format!("'{word}'"), |q| q.into_owned())
}

/// Finds the program the way the child would: a path is used as given (relative to the
/// child's cwd), a bare name is looked up in the child's PATH.
pub(super) fn resolve_program(
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
        // Where programs are files with a suffix (`git.exe`), a bare name means that file.
        if !std::env::consts::EXE_SUFFIX.is_empty() {
            let mut with_suffix = candidate.into_os_string();
            with_suffix.push(std::env::consts::EXE_SUFFIX);
            if is_executable(Path::new(&with_suffix)) {
                return Ok(with_suffix.into());
            }
        }
    }
    Err(ProcessError::NotFound {
        program: program.to_string_lossy().into_owned(),
        path: path_var.to_string_lossy().into_owned(),
    })
}

fn is_executable(path: &Path) -> bool {
    fs_err::metadata(path).is_ok_and(|m| crate::platform::host::is_executable(&m))
}
