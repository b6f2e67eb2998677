//! Compiler caches (F30, F31): ccache or sccache as CMake compiler launchers, and for sccache
//! also `HIP_CLANG_LAUNCHER`, so hipcc routes its clang calls (device passes included) through
//! the cache instead of wrapping the clang binary (which broke hipcc's compiler probe and
//! produced CPU-only builds). Statistics are zeroed before the build and shown after it, so
//! the hit rate printed belongs to this build (pain point H38).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::error::Error;
use crate::env_vars::{self, Environment};
use crate::exec::Cmd;
use crate::platform::Platform;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompilerCache {
    None,
    Ccache { program: PathBuf },
    Sccache { program: PathBuf, wrap_hip: bool },
}

/// Environment variables that only route compiles through a cache: they do not change what
/// is built, so the build cache's fingerprint leaves them out.
pub const LAUNCHER_VARS: &[&str] = &[
    "CMAKE_C_COMPILER_LAUNCHER",
    "CMAKE_CXX_COMPILER_LAUNCHER",
    "HIP_CLANG_LAUNCHER",
];

impl CompilerCache {
    /// Finds the requested tool: ccache on PATH; sccache on PATH or where CI images put it.
    /// A plan for another platform names the tool, to be found on the build machine's PATH.
    pub fn locate(
        use_ccache: bool,
        use_sccache: bool,
        no_wrap: bool,
        env: &Environment,
        platform: Platform,
    ) -> Result<Self, Error> {
        if !platform.is_host() {
            let program = |tool| PathBuf::from(platform.executable(tool));
            return Ok(if use_ccache {
                CompilerCache::Ccache {
                    program: program("ccache"),
                }
            } else if use_sccache {
                CompilerCache::Sccache {
                    program: program("sccache"),
                    wrap_hip: !no_wrap,
                }
            } else {
                CompilerCache::None
            });
        }
        let path = env.get(env_vars::PATH).unwrap_or_default();
        let on_path = |name: &str| {
            std::env::split_paths(path)
                .map(|dir| dir.join(platform.executable(name)))
                .find(|p| is_executable(p))
        };
        if use_ccache {
            let program = on_path("ccache").ok_or_else(|| Error::NoCompilerCache {
                flag: "--use-ccache",
                tool: "ccache",
                looked: format!(" ({path})"),
                install: " (apt-get install ccache)",
            })?;
            return Ok(CompilerCache::Ccache { program });
        }
        if use_sccache {
            let mut fallbacks = vec![
                PathBuf::from("/usr/local/bin/sccache"),
                PathBuf::from("/opt/cache/bin/sccache"),
            ];
            if let Some(home) = env.non_empty(env_vars::HOME) {
                fallbacks.push(Path::new(home).join(".cargo/bin/sccache"));
            }
            let program = on_path("sccache")
                .or_else(|| fallbacks.into_iter().find(|p| is_executable(p)))
                .ok_or_else(|| Error::NoCompilerCache {
                    flag: "--use-sccache",
                    tool: "sccache",
                    looked: ", in /usr/local/bin, /opt/cache/bin or ~/.cargo/bin".into(),
                    install: "",
                })?;
            return Ok(CompilerCache::Sccache {
                program,
                wrap_hip: !no_wrap,
            });
        }
        Ok(CompilerCache::None)
    }

    pub fn name(&self) -> Option<&'static str> {
        match self {
            CompilerCache::None => None,
            CompilerCache::Ccache { .. } => Some("ccache"),
            CompilerCache::Sccache { .. } => Some("sccache"),
        }
    }

    /// Variables every project's build for `platform` gets. On Windows ccache needs debug
    /// information embedded in the objects (MSVC's /Z7: ccache cannot cache /Zi's shared PDB),
    /// and HIP_CLANG_LAUNCHER is never set: the build drives clang-cl through the CMake
    /// launchers, not through hipcc (TheRock's setup_sccache_rocm.py).
    pub fn env(&self, platform: Platform) -> Vec<(String, String)> {
        let launcher = |program: &Path| {
            vec![
                (
                    "CMAKE_C_COMPILER_LAUNCHER".to_string(),
                    program.display().to_string(),
                ),
                (
                    "CMAKE_CXX_COMPILER_LAUNCHER".to_string(),
                    program.display().to_string(),
                ),
            ]
        };
        match self {
            CompilerCache::None => Vec::new(),
            CompilerCache::Ccache { program } => {
                let mut vars = launcher(program);
                if platform == Platform::Windows {
                    vars.push((
                        "CMAKE_MSVC_DEBUG_INFORMATION_FORMAT".into(),
                        "Embedded".into(),
                    ));
                }
                vars
            }
            CompilerCache::Sccache { program, wrap_hip } => {
                let mut vars = launcher(program);
                if *wrap_hip && platform == Platform::Linux {
                    vars.push(("HIP_CLANG_LAUNCHER".into(), program.display().to_string()));
                }
                vars
            }
        }
    }

    fn cmd(&self, args: &[&str], log: &Path) -> Option<Cmd> {
        let program = match self {
            CompilerCache::None => return None,
            CompilerCache::Ccache { program } | CompilerCache::Sccache { program, .. } => program,
        };
        Some(
            Cmd::new(program)
                .args(args.iter().copied())
                .label(format!(
                    "{} {}",
                    self.name().unwrap_or_default(),
                    args.join(" ")
                ))
                .timeout(Duration::from_secs(120))
                .log_to(log),
        )
    }

    /// Before the build: (start the server and) zero the statistics. A failure to start an
    /// already running sccache server is expected; the caller tolerates it.
    pub fn before(&self, log: &Path) -> Vec<(Cmd, bool)> {
        match self {
            CompilerCache::None => Vec::new(),
            CompilerCache::Ccache { .. } => self
                .cmd(&["--zero-stats"], log)
                .map(|c| (c, false))
                .into_iter()
                .collect(),
            CompilerCache::Sccache { .. } => [
                self.cmd(&["--start-server"], log).map(|c| (c, true)),
                self.cmd(&["--zero-stats"], log).map(|c| (c, false)),
            ]
            .into_iter()
            .flatten()
            .collect(),
        }
    }

    /// After the build: the statistics, as data.
    pub fn stats(&self, log: &Path) -> Option<Cmd> {
        self.cmd(&["--show-stats"], log).map(Cmd::capture_stdout)
    }
}

fn is_executable(path: &Path) -> bool {
    fs_err::metadata(path).is_ok_and(|m| crate::platform::host::is_executable(&m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launchers_per_tool() {
        let sccache = CompilerCache::Sccache {
            program: "/opt/cache/bin/sccache".into(),
            wrap_hip: true,
        };
        let names: Vec<String> = sccache
            .env(Platform::Linux)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            names,
            [
                "CMAKE_C_COMPILER_LAUNCHER=/opt/cache/bin/sccache",
                "CMAKE_CXX_COMPILER_LAUNCHER=/opt/cache/bin/sccache",
                "HIP_CLANG_LAUNCHER=/opt/cache/bin/sccache"
            ]
        );
        let no_wrap = CompilerCache::Sccache {
            program: "/s".into(),
            wrap_hip: false,
        };
        assert!(
            !no_wrap
                .env(Platform::Linux)
                .iter()
                .any(|(k, _)| k == "HIP_CLANG_LAUNCHER")
        );
        // Windows: the CMake launchers only, whatever --sccache-no-wrap says.
        assert!(
            !sccache
                .env(Platform::Windows)
                .iter()
                .any(|(k, _)| k == "HIP_CLANG_LAUNCHER")
        );
        let ccache = CompilerCache::Ccache {
            program: "/usr/bin/ccache".into(),
        };
        assert_eq!(ccache.env(Platform::Linux).len(), 2);
        assert_eq!(
            ccache.env(Platform::Windows).last(),
            Some(&(
                "CMAKE_MSVC_DEBUG_INFORMATION_FORMAT".to_string(),
                "Embedded".to_string()
            ))
        );
        assert!(CompilerCache::None.env(Platform::Linux).is_empty());
        let before: Vec<String> = sccache
            .before(Path::new("/l"))
            .iter()
            .map(|(c, _)| c.argv_display().join(" "))
            .collect();
        assert_eq!(
            before,
            [
                "/opt/cache/bin/sccache --start-server",
                "/opt/cache/bin/sccache --zero-stats"
            ]
        );
    }

    #[test]
    fn missing_tools_are_usage_errors() {
        let env = Environment::from_pairs([("PATH", "/nonexistent")]);
        let host = Platform::host();
        let error = CompilerCache::locate(true, false, false, &env, host).expect_err("no ccache");
        assert!(
            error
                .to_string()
                .starts_with("--use-ccache: `ccache` is not on PATH (/nonexistent)"),
            "{error}"
        );
        assert_eq!(
            CompilerCache::locate(false, false, false, &env, host).expect("none"),
            CompilerCache::None
        );
        // A plan for another platform names the tool its build machine finds on its PATH.
        let other = match host {
            Platform::Linux => Platform::Windows,
            Platform::Windows => Platform::Linux,
        };
        assert_eq!(
            CompilerCache::locate(false, true, false, &env, other).expect("named"),
            CompilerCache::Sccache {
                program: other.executable("sccache").into(),
                wrap_hip: true
            }
        );
    }
}
