//! Git. Transfers and working-tree operations run the git CLI through the one runner, with a
//! hardened environment; fast local reads (objects, refs, config, status) use git2.
//!
//! The CLI environment: variables a parent git may leak (GIT_DIR, GIT_WORK_TREE, ...) are
//! removed, prompts are off (a credential prompt hidden behind a progress line looks like a
//! hang), messages are in English so failures can be recognised, and credentials are left to
//! git's own helpers — rockbuild never puts them in URLs or prints them.

mod error;
pub mod local;
pub mod mirror;
mod names;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::env_vars;
use crate::exec::{Cmd, Retry};
use crate::platform::Platform;
pub use error::{Error, fetch_failure};
pub use names::{Commit, Invalid, Origin, RefName, check_submodule_path};

/// Tag on the upstream commit of every checked-out repository and submodule.
pub const UPSTREAM_TAG: &str = "THEROCK_UPSTREAM_DIFFBASE";
/// Tag on the hipified state (the hipify commit, or the upstream commit when nothing changed).
pub const HIPIFY_TAG: &str = "THEROCK_HIPIFY_DIFFBASE";
/// Subject of the commit that records hipify's changes.
pub const HIPIFY_COMMIT_MESSAGE: &str = "DO NOT SUBMIT: HIPIFY";
/// Identity of rockbuild's own commits. With the upstream commit's date this makes the hipify
/// commit's SHA reproducible: same upstream + same hipify result = same commit everywhere.
pub const COMMIT_NAME: &str = "rockbuild";
pub const COMMIT_EMAIL: &str = "rockbuild@localhost";

/// Limits for network transfers.
#[derive(Clone, Copy, Debug)]
pub struct TransferLimits {
    pub timeout: Duration,
    pub stall: Duration,
    pub attempts: u32,
}

/// Builds git command lines for one repository.
#[derive(Clone, Debug)]
pub struct Git {
    dir: PathBuf,
    log: Option<PathBuf>,
    label: String,
    /// Allow `file://` submodules: only for local origins (CVE-2022-39253 made it opt-in).
    allow_file_protocol: bool,
    /// `-c key=value` for every command (and the git processes it starts).
    config: Vec<(String, String)>,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>, label: impl Into<String>) -> Self {
        Git {
            dir: dir.into(),
            log: None,
            label: label.into(),
            allow_file_protocol: false,
            config: Vec::new(),
        }
    }

    pub fn log_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.log = Some(path.into());
        self
    }

    pub fn allow_file_protocol(mut self, allow: bool) -> Self {
        self.allow_file_protocol = allow;
        self
    }

    /// Sets `key` for this command and the git processes it starts (`git -c key=value`).
    pub fn config(mut self, key: &str, value: &str) -> Self {
        self.config.push((key.to_string(), value.to_string()));
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A local git command (no network): runs in the repository with the hardened env.
    pub fn cmd<I, S>(&self, args: I) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString>,
    {
        let args: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
        let subcommand = args
            .iter()
            .find(|a| !a.to_string_lossy().starts_with('-'))
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut cmd = Cmd::new("git")
            .label(format!("{}: git {subcommand}", self.label))
            .cwd(&self.dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GCM_INTERACTIVE", "never")
            .env("LC_ALL", "C")
            .arg("-c")
            .arg("advice.detachedHead=false")
            .arg("-c")
            .arg("core.hooksPath=/dev/null")
            // rockbuild reads every index it has git write through libgit2, which refuses the
            // split and sparse index formats ("unsupported mandatory extension"): a user's
            // `core.splitIndex` or `index.sparse` must not reach the trees rockbuild owns.
            .arg("-c")
            .arg("core.splitIndex=false")
            .arg("-c")
            .arg("index.sparse=false");
        // Git for Windows stops at 260-character paths unless told otherwise (`core.longpaths`,
        // a setting of Git for Windows alone), and PyTorch's third_party trees go deeper.
        if Platform::host() == Platform::Windows {
            cmd = cmd.arg("-c").arg("core.longpaths=true");
        }
        if self.allow_file_protocol {
            cmd = cmd.arg("-c").arg("protocol.file.allow=always");
        }
        for (key, value) in &self.config {
            cmd = cmd.arg("-c").arg(format!("{key}={value}"));
        }
        for leak in env_vars::GIT_LEAKS {
            cmd = cmd.env_remove(*leak);
        }
        if let Some(log) = &self.log {
            cmd = cmd.log_to(log);
        }
        cmd.args(args)
    }

    /// A network transfer: `--progress` feeds the watchdog, transient failures are retried.
    pub fn transfer<I, S>(&self, args: I, limits: TransferLimits) -> Cmd
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString>,
    {
        self.cmd(args)
            .timeout(limits.timeout)
            .idle_timeout(limits.stall)
            .retry(Retry {
                attempts: limits.attempts,
                backoff: Duration::from_secs(2),
                is_transient: is_transient_failure,
            })
    }

    /// `git checkout --force --detach <commit>`, options ended before the commit.
    pub fn checkout_detached(&self, commit: &str) -> Cmd {
        self.cmd([
            "checkout",
            "-q",
            "--force",
            "--detach",
            "--end-of-options",
            commit,
        ])
    }

    /// `git commit-tree` with rockbuild's identity at a fixed date (the upstream commit's):
    /// the same tree on the same parent gives the same commit SHA on every machine.
    pub fn commit_tree_as_rockbuild(&self, tree: &str, parent: &str, date: &str) -> Cmd {
        self.cmd([
            "-c",
            "commit.gpgSign=false",
            "commit-tree",
            "--no-gpg-sign",
            tree,
            "-p",
            parent,
            "-m",
            HIPIFY_COMMIT_MESSAGE,
        ])
        .env("GIT_AUTHOR_NAME", COMMIT_NAME)
        .env("GIT_AUTHOR_EMAIL", COMMIT_EMAIL)
        .env("GIT_COMMITTER_NAME", COMMIT_NAME)
        .env("GIT_COMMITTER_EMAIL", COMMIT_EMAIL)
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .capture_stdout()
    }
}

/// Failures worth another attempt: the network, not the request.
pub fn is_transient_failure(tail: &str) -> bool {
    const TRANSIENT: &[&str] = &[
        "Could not resolve host",
        "Failed to connect",
        "Connection timed out",
        "Connection reset",
        "Connection refused",
        "early EOF",
        "RPC failed",
        "remote end hung up unexpectedly",
        "The requested URL returned error: 5",
        "The requested URL returned error: 429",
        "gnutls_handshake",
        "SSL_ERROR",
        "Operation timed out",
        "unexpected disconnect",
    ];
    TRANSIENT.iter().any(|pattern| tail.contains(pattern))
}

/// What a ref named on the command line or in a pin turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RefKind {
    Branch,
    Tag,
    Commit,
}

/// True for a full 40-character (SHA-1) or 64-character (SHA-256) hex object name.
pub fn is_full_sha(reference: &str) -> bool {
    (reference.len() == 40 || reference.len() == 64)
        && reference.chars().all(|c| c.is_ascii_hexdigit())
}

/// True for something that looks like an abbreviated SHA (which cannot be fetched).
pub fn is_abbreviated_sha(reference: &str) -> bool {
    (7..40).contains(&reference.len())
        && reference.chars().all(|c| c.is_ascii_hexdigit())
        && reference.chars().any(|c| c.is_ascii_digit())
}

/// Reads the kind and object of the first line of `.git/FETCH_HEAD`:
/// `<sha>\t\tbranch 'main' of <url>`, `<sha>\t\ttag 'v1' of <url>`, `<sha>\t\t'<sha>' of <url>`.
pub fn parse_fetch_head(text: &str) -> Option<(String, RefKind)> {
    let line = text.lines().next()?;
    let mut fields = line.splitn(3, '\t');
    let object = fields.next()?.trim().to_string();
    let _merge_marker = fields.next()?;
    let description = fields.next()?;
    let kind = if description.starts_with("branch '") {
        RefKind::Branch
    } else if description.starts_with("tag '") {
        RefKind::Tag
    } else {
        RefKind::Commit
    };
    is_full_sha(&object).then_some((object, kind))
}

/// True when an origin is on this machine (a path or `file://`), where file-protocol
/// submodules are expected and allowed.
pub fn is_local_origin(origin: &str) -> bool {
    origin.starts_with("file://") || origin.starts_with('/') || origin.starts_with("./")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_head_kinds() {
        let sha = "8058981f17813944648a718ceb4ca3a7863e76f0";
        assert_eq!(
            parse_fetch_head(&format!("{sha}\t\tbranch 'main' of file:///o\n")),
            Some((sha.to_string(), RefKind::Branch))
        );
        assert_eq!(
            parse_fetch_head(&format!("{sha}\t\ttag 'v1' of file:///o\n")),
            Some((sha.to_string(), RefKind::Tag))
        );
        assert_eq!(
            parse_fetch_head(&format!("{sha}\t\t'{sha}' of file:///o\n")),
            Some((sha.to_string(), RefKind::Commit))
        );
        assert_eq!(parse_fetch_head(""), None);
    }

    #[test]
    fn sha_shapes() {
        assert!(is_full_sha(&"a".repeat(40)));
        assert!(!is_full_sha("main"));
        assert!(is_abbreviated_sha("1a2b3c4d"));
        assert!(!is_abbreviated_sha("deadbeef")); // a word, not a sha
        assert!(!is_abbreviated_sha("release/2.9"));
    }

    #[test]
    fn transient_failures() {
        assert!(is_transient_failure(
            "fatal: unable to access 'https://x/': Failed to connect to x port 443"
        ));
        assert!(is_transient_failure("fatal: early EOF"));
        assert!(!is_transient_failure(
            "fatal: couldn't find remote ref nope"
        ));
        assert!(!is_transient_failure(
            "fatal: '/nope' does not appear to be a git repository"
        ));
    }

    #[test]
    fn git_commands_are_hardened() {
        let cmd = Git::new("/repo", "torch").cmd(["status"]);
        let env = cmd.env_diff();
        assert_eq!(env.get("GIT_TERMINAL_PROMPT"), Some(&Some("0".into())));
        assert_eq!(env.get("GIT_DIR"), Some(&None));
        assert_eq!(env.get("GIT_WORK_TREE"), Some(&None));
        assert_eq!(cmd.get_label(), "torch: git status");
        assert_eq!(cmd.get_cwd(), Some(Path::new("/repo")));
    }
}
