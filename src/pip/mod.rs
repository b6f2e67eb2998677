//! pip in a test venv: commands that read only the indexes on their command line (no pip.conf,
//! no `PIP_*`/`UV_*` from the job, no cache of other runs), with timeouts and retries of
//! network failures; and [`report`], what an install put into the venv, file by file (the
//! evidence `smoke` and `test` record).

pub mod report;

use std::time::Duration;

use crate::env_vars::Environment;
use crate::exec::{Cmd, Retry};

/// How long one install may take, and how long it may print nothing.
const INSTALL_TIMEOUT: Duration = Duration::from_secs(3600);
const INSTALL_IDLE: Duration = Duration::from_secs(600);

/// Removes the job's `PIP_*` and `UV_*` variables from `cmd`: an index, a find-links or a
/// config file from the environment would change what is installed and tested.
pub fn without_installer_env(env: &Environment, mut cmd: Cmd) -> Cmd {
    let names: Vec<String> = env
        .iter()
        .filter_map(|(key, _)| key.to_str().map(String::from))
        .filter(|key| key.starts_with("PIP_") || key.starts_with("UV_"))
        .collect();
    for name in names {
        cmd = cmd.env_remove(name);
    }
    cmd
}

/// `python -m pip` for a venv's `python` command (already scrubbed, with its cwd).
pub fn pip(python: Cmd, label: impl Into<String>) -> Cmd {
    limits(python.label(label).args(["-m", "pip"]))
}

/// What every pip command gets: no pip configuration file, no prompt, no cache, pip's time
/// limits and retries of network failures.
pub fn limits(pip: Cmd) -> Cmd {
    pip.env("PIP_CONFIG_FILE", "/dev/null")
        .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PIP_NO_INPUT", "1")
        .env("PIP_NO_CACHE_DIR", "1")
        .timeout(INSTALL_TIMEOUT)
        .idle_timeout(INSTALL_IDLE)
        .retry(Retry {
            attempts: 3,
            backoff: Duration::from_secs(2),
            is_transient,
        })
}

/// Installer (pip, uv) failures worth another attempt: the connection, not the request or
/// the resolver. The one classifier for every install rockbuild runs (SDK, build
/// requirements, test venvs).
pub fn is_transient(tail: &str) -> bool {
    [
        "Connection reset",
        "ConnectionResetError",
        "ConnectionError",
        "Connection aborted",
        "timed out",
        "ReadTimeoutError",
        "IncompleteRead",
        "Temporary failure in name resolution",
        "HTTP error 502",
        "HTTP error 503",
        "HTTP error 504",
        "status code 502",
        "status code 503",
        "status code 504",
    ]
    .iter()
    .any(|pattern| tail.contains(pattern))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_network_failures_are_retried() {
        assert!(is_transient(
            "ReadTimeoutError: Read timed out. (read timeout=15)"
        ));
        assert!(is_transient(
            "ERROR: HTTP error 503 while getting http://x/torch.whl"
        ));
        assert!(!is_transient(
            "ERROR: Could not find a version that satisfies the requirement torch==9.9"
        ));
        assert!(is_transient(
            "pip._vendor.urllib3.exceptions.ReadTimeoutError: HTTPSConnectionPool"
        ));
        assert!(!is_transient(
            "ERROR: No matching distribution found for rocm==9"
        ));
        let cmd = pip(Cmd::new("python"), "install");
        assert_eq!(
            cmd.argv_display(),
            ["python", "-m", "pip"],
            "the caller adds the subcommand"
        );
    }
}
