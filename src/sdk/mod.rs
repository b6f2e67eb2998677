//! The ROCm SDK as Python packages: installing `rocm[libraries,devel]` into a venv with pip or
//! uv after checking the index has what is asked for ([`preflight`], [`install`]), and asking
//! the installed SDK where it lives (`python -m rocm_sdk version|targets|path`). A failed or
//! empty answer is an error naming the command and its output, never an empty path (W19).

mod error;
pub mod install;
pub mod preflight;
pub mod venv;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::env_vars::{self, Environment};
use crate::exec::{Cmd, Runner};

pub use error::Error;
pub use venv::Venv;

/// The distribution that names the SDK version (the meta package).
pub const ROCM_DIST: &str = "rocm";

/// What the installed SDK reports about itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub struct SdkInfo {
    /// `python -m rocm_sdk version` (normalized PEP 440).
    pub version: String,
    /// `python -m rocm_sdk path --root`: ROCM_HOME / ROCM_PATH.
    pub root: PathBuf,
    /// `python -m rocm_sdk path --bin`: prepended to PATH.
    pub bin: PathBuf,
    /// `python -m rocm_sdk path --cmake`: CMAKE_PREFIX_PATH.
    pub cmake: PathBuf,
    /// `python -m rocm_sdk targets`: the targets the installed SDK ships code for.
    pub targets: Vec<String>,
    /// The venv's Python version (`3.11.7`), part of every build fingerprint.
    pub python: String,
}

/// The one way to start `python -m rocm_sdk <args>` in a venv.
fn rocm_sdk_cmd(venv: &Venv, args: &[&str]) -> Cmd {
    Cmd::new(venv.python())
        .args(["-m", "rocm_sdk"])
        .args(args.iter().copied())
        .label(format!("rocm_sdk {}", args.join(" ")))
        .env("PYTHONUTF8", "1")
        .timeout(std::time::Duration::from_secs(120))
        .capture_stdout()
}

/// Asks the SDK installed in `venv` for its version, targets and paths (five short
/// `python -m rocm_sdk` calls). Each answer is checked: non-empty, paths exist.
pub fn query(runner: &Runner, venv: &Venv) -> Result<SdkInfo, Error> {
    if !venv.exists() {
        return Err(Error::NoVenv {
            venv: venv.dir.clone(),
        });
    }
    let ask = |args: &[&str]| -> Result<String, Error> {
        let cmd = rocm_sdk_cmd(venv, args);
        let command = format!("python -m rocm_sdk {}", args.join(" "));
        let output = runner.run(&cmd).map_err(|source| Error::Query {
            command: command.clone(),
            venv: venv.dir.clone(),
            source: Box::new(source),
        })?;
        let answer = output.stdout.trim().to_string();
        if answer.is_empty() {
            return Err(Error::Empty {
                command,
                venv: venv.dir.clone(),
                stderr: output.tail,
            });
        }
        Ok(answer)
    };
    let path = |flag: &str| -> Result<PathBuf, Error> {
        let answer = PathBuf::from(ask(&["path", flag])?);
        if !answer.is_absolute() || !answer.exists() {
            return Err(Error::MissingPath {
                command: format!("python -m rocm_sdk path {flag}"),
                path: answer,
                venv: venv.dir.clone(),
            });
        }
        Ok(answer)
    };
    let raw_version = ask(&["version"])?;
    let version = crate::version::normalize("`python -m rocm_sdk version`", &raw_version).map_err(
        |error| Error::Empty {
            command: "python -m rocm_sdk version".into(),
            venv: venv.dir.clone(),
            stderr: vec![error.to_string()],
        },
    )?;
    let targets = ask(&["targets"])?
        .split([' ', ';', ',', '\n'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    Ok(SdkInfo {
        version,
        root: path("--root")?,
        bin: path("--bin")?,
        cmake: path("--cmake")?,
        targets,
        python: venv.python_version().unwrap_or_else(|| "unknown".into()),
    })
}

impl SdkInfo {
    /// Records what the SDK reported next to it, so `plan` can show real paths without
    /// running Python. Only a cache: `build` always asks the SDK again.
    pub fn write_record(&self, venv: &Venv) -> Result<(), Error> {
        let mut text = serde_json::to_string_pretty(self).map_err(Error::RecordJson)?;
        text.push('\n');
        Ok(crate::fsutil::write_atomic(
            &venv.sdk_record(),
            text.as_bytes(),
        )?)
    }

    /// The recorded answers, if the record exists and still describes the installed `rocm`.
    pub fn read_record(venv: &Venv) -> Option<SdkInfo> {
        let text = crate::input::read_text(&venv.sdk_record(), crate::input::RECORD).ok()?;
        let info: SdkInfo = crate::input::strict::json(&text).ok()?;
        let installed = venv.installed_version(ROCM_DIST)?;
        let installed = crate::version::normalize("installed rocm", &installed).ok()?;
        (installed == info.version).then_some(info)
    }
}

/// rockbuild's own cache directory: `$ROCKBUILD_CACHE_DIR`, else `$XDG_CACHE_HOME/rockbuild`,
/// else `~/.cache/rockbuild`.
pub fn cache_root(env: &Environment) -> PathBuf {
    if let Some(dir) = env.non_empty(env_vars::ROCKBUILD_CACHE_DIR) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = env.non_empty(env_vars::XDG_CACHE_HOME) {
        return Path::new(dir).join("rockbuild");
    }
    match env.non_empty(env_vars::HOME) {
        Some(home) => Path::new(home).join(".cache/rockbuild"),
        None => PathBuf::from(".rockbuild-cache"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_sdk(dir: &Path, script: &str) -> Venv {
        let venv = Venv::new(dir.join("venv"));
        fs_err::create_dir_all(venv.bin()).expect("bin");
        fs_err::write(venv.dir.join("pyvenv.cfg"), "version = 3.11.7\n").expect("cfg");
        let python = venv.python();
        fs_err::write(
            &python,
            format!("#!/bin/sh\n# stands in for `python -m rocm_sdk ...`\nshift 2\n{script}\n"),
        )
        .expect("python");
        crate::platform::host::set_executable(&python).expect("chmod");
        venv
    }

    fn runner() -> Runner {
        Runner::new(Environment::from_pairs([("PATH", "/usr/bin:/bin")]))
    }

    #[test]
    fn query_reads_every_answer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("root");
        fs_err::create_dir_all(root.join("bin")).expect("root");
        fs_err::create_dir_all(root.join("lib/cmake")).expect("cmake");
        let script = format!(
            "case \"$1 $2\" in\n 'version ') echo 7.10.0-rc.1;;\n 'targets ') echo 'gfx906 gfx1030';;\n 'path --root') echo {0};;\n 'path --bin') echo {0}/bin;;\n 'path --cmake') echo {0}/lib/cmake;;\nesac",
            root.display()
        );
        let venv = fake_sdk(dir.path(), &script);
        let info = query(&runner(), &venv).expect("query");
        assert_eq!(info.version, "7.10.0rc1");
        assert_eq!(info.targets, ["gfx906", "gfx1030"]);
        assert_eq!(info.root, root);
        assert_eq!(info.cmake, root.join("lib/cmake"));
        assert_eq!(info.python, "3.11.7");
    }

    #[test]
    fn failures_name_the_command_and_its_output() {
        let dir = tempfile::tempdir().expect("tempdir");
        let venv = fake_sdk(
            dir.path(),
            "echo 'ModuleNotFoundError: No module named rocm_sdk' >&2; exit 1",
        );
        let error = query(&runner(), &venv).expect_err("fails");
        // The message names the command; its cause is the failed step with its output.
        let text = format!(
            "{error}\n{}",
            std::error::Error::source(&error).map_or(String::new(), ToString::to_string)
        );
        assert!(
            text.contains("`python -m rocm_sdk version` failed"),
            "{text}"
        );
        assert!(text.contains("No module named rocm_sdk"), "{text}");

        let venv = fake_sdk(
            dir.path(),
            "case \"$1\" in version) echo 7.10.0;; targets) echo gfx906;; *) echo /nonexistent/root;; esac",
        );
        let error = query(&runner(), &venv).expect_err("missing path");
        assert!(
            error.to_string().contains(
                "`python -m rocm_sdk path --root` printed `/nonexistent/root`, which does not exist"
            ),
            "{error}"
        );

        let venv = fake_sdk(dir.path(), "echo 'warning: nothing' >&2");
        let error = query(&runner(), &venv).expect_err("empty");
        assert!(
            error.to_string().contains(
                "`python -m rocm_sdk version` printed nothing (stderr: warning: nothing)"
            ),
            "{error}"
        );

        let error = query(&runner(), &Venv::new(dir.path().join("absent"))).expect_err("no venv");
        assert!(
            error.to_string().starts_with("no Python venv at"),
            "{error}"
        );
    }

    #[test]
    fn cache_root_precedence() {
        let env = Environment::from_pairs([("HOME", "/h"), ("XDG_CACHE_HOME", "/x")]);
        assert_eq!(cache_root(&env), PathBuf::from("/x/rockbuild"));
        let env = Environment::from_pairs([("HOME", "/h"), ("ROCKBUILD_CACHE_DIR", "/c")]);
        assert_eq!(cache_root(&env), PathBuf::from("/c"));
        let env = Environment::from_pairs([("HOME", "/h")]);
        assert_eq!(cache_root(&env), PathBuf::from("/h/.cache/rockbuild"));
    }
}
