//! Every environment variable rockbuild reads, as a named constant, and the one place the
//! process environment is read (a snapshot taken at start-up). Nothing else calls
//! `std::env::var*` (enforced by clippy's `disallowed-methods`), so tests control all inputs
//! by setting the environment of the rockbuild process they start.
//!
//! Flags also read `ROCKBUILD_<FLAG>` variables through clap; those are listed in
//! docs/cli.md, generated from the CLI definition.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Set by GitHub Actions on every runner.
pub const GITHUB_ACTIONS: &str = "GITHUB_ACTIONS";
/// File whose `name=value` lines become the step's outputs in GitHub Actions.
pub const GITHUB_OUTPUT: &str = "GITHUB_OUTPUT";
/// File that GitHub Actions renders as the job summary (Markdown appended per step).
pub const GITHUB_STEP_SUMMARY: &str = "GITHUB_STEP_SUMMARY";
/// Target list for PyTorch builds, as the reference reads it (`gfxA;gfxB` or `gfxA,gfxB`).
pub const PYTORCH_ROCM_ARCH: &str = "PYTORCH_ROCM_ARCH";
/// The ROCm runtime reports (and loads code for) this ISA on every GPU instead of the
/// hardware's (`major.minor.stepping`, e.g. `10.3.0`); `rockbuild detect` follows it.
pub const HSA_OVERRIDE_GFX_VERSION: &str = "HSA_OVERRIDE_GFX_VERSION";
/// The GPUs HIP shows, by index (`0,2`); `rockbuild detect` builds for those only, `rockbuild
/// test` chooses among them.
pub const HIP_VISIBLE_DEVICES: &str = "HIP_VISIBLE_DEVICES";
/// Where a ROCm installation is (`/opt/rocm`); doctor looks for device libraries under it.
pub const ROCM_PATH: &str = "ROCM_PATH";
/// clang's device-library directory for HIP, when it is not under the ROCm root.
pub const HIP_DEVICE_LIB_PATH: &str = "HIP_DEVICE_LIB_PATH";
/// Where `auto` (`--amdgpu-family auto`, `--index-url auto`) reads the kernel's sys/ tree:
/// `/` unless set (`rockbuild detect --sysfs-root` takes the same variable).
pub const ROCKBUILD_SYSFS_ROOT: &str = "ROCKBUILD_SYSFS_ROOT";
/// The active virtual environment (install-rocm's default venv).
pub const VIRTUAL_ENV: &str = "VIRTUAL_ENV";
/// Standard switch to turn off colour.
pub const NO_COLOR: &str = "NO_COLOR";
/// Log filter for tracing (e.g. `rockbuild=debug`).
pub const ROCKBUILD_LOG: &str = "ROCKBUILD_LOG";
/// Test hook: stop or hold the process at a named point of a write (see `fault`).
pub const ROCKBUILD_FAULT: &str = "ROCKBUILD_FAULT";
/// Directory for rockbuild's own caches (the pip cache install-rocm owns); default
/// `$XDG_CACHE_HOME/rockbuild` or `~/.cache/rockbuild`.
pub const ROCKBUILD_CACHE_DIR: &str = "ROCKBUILD_CACHE_DIR";
pub const XDG_CACHE_HOME: &str = "XDG_CACHE_HOME";
pub const HOME: &str = "HOME";
pub const PATH: &str = "PATH";
/// Python's module path: a hipify script's is extended, not replaced (src/hipify/reach.rs).
pub const PYTHONPATH: &str = "PYTHONPATH";

// Inherited by builds and extended rather than replaced (src/recipes): a user's own
// flags and library paths stay in front of what rockbuild adds.
pub const CXXFLAGS: &str = "CXXFLAGS";
/// The C and C++ compilers a build machine names (setuptools and CMake use them): resolved
/// for the build cache's key.
pub const CC: &str = "CC";
pub const CXX: &str = "CXX";
pub const CPPFLAGS: &str = "CPPFLAGS";
pub const LDFLAGS: &str = "LDFLAGS";
pub const LD_LIBRARY_PATH: &str = "LD_LIBRARY_PATH";
pub const PKG_CONFIG_PATH: &str = "PKG_CONFIG_PATH";
pub const TRITON_APPEND_CMAKE_ARGS: &str = "TRITON_APPEND_CMAKE_ARGS";
/// Where libuv is installed on a Windows build machine: PyTorch's CMake finds it there for
/// gloo, and torch's recipe copies its `bin/uv.dll` into `torch/lib`.
pub const LIBUV_ROOT: &str = "libuv_ROOT";
/// MSVC's redistributables (set by vcvars64.bat): torch's recipe copies MSVC's OpenMP runtime
/// from there into `torch/lib` on Windows.
pub const VC_TOOLS_REDIST_DIR: &str = "VCToolsRedistDir";
/// The MSVC installation vcvars64.bat set up (the check that it ran).
pub const VCINSTALLDIR: &str = "VCINSTALLDIR";
/// PyTorch's profiler switch: kept when set, else ON on Linux and OFF on Windows (the reference's defaults).
pub const USE_KINETO: &str = "USE_KINETO";
/// The time a reproducible build embeds instead of the clock's (reproducible-builds.org's
/// specification; wheel's and setuptools' archive writers take their entries' times from it):
/// kept when set, else the project's commit time.
pub const SOURCE_DATE_EPOCH: &str = "SOURCE_DATE_EPOCH";

// GPU visibility and PyTorch's test environment (`rockbuild test`; TheRock's
// run_pytorch_tests_full.py). A preset HIP_VISIBLE_DEVICES (above) is respected;
// GPU_DEVICE_ORDINAL is removed because HIP aborts when it conflicts with HIP_VISIBLE_DEVICES.
// The others keep a value the job already set (the reference's `os.environ.setdefault`).
pub const GPU_DEVICE_ORDINAL: &str = "GPU_DEVICE_ORDINAL";
pub const CI: &str = "CI";
pub const BUILD_ENVIRONMENT: &str = "BUILD_ENVIRONMENT";
pub const PYTORCH_TEST_WITH_ROCM: &str = "PYTORCH_TEST_WITH_ROCM";
pub const PYTORCH_TESTING_DEVICE_ONLY_FOR: &str = "PYTORCH_TESTING_DEVICE_ONLY_FOR";
pub const PYTORCH_PRINT_REPRO_ON_FAILURE: &str = "PYTORCH_PRINT_REPRO_ON_FAILURE";
pub const OPENBLAS_NUM_THREADS: &str = "OPENBLAS_NUM_THREADS";

/// Variables a parent git process may leak into ours; they would redirect every git command
/// to another repository, so the git runner removes them (uv and cargo do the same).
pub const GIT_LEAKS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

/// A snapshot of the process environment, taken once in `main`. Child processes get this
/// map plus their own explicit differences; the process environment itself is never mutated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<OsString, OsString>,
}

impl Environment {
    /// Reads the real process environment. Called once, by `main`.
    #[expect(
        clippy::disallowed_methods,
        reason = "the one sanctioned read of the environment"
    )]
    pub fn capture() -> Self {
        Environment {
            vars: std::env::vars_os().collect(),
        }
    }

    /// An environment with exactly these variables.
    pub fn from_pairs<K: Into<OsString>, V: Into<OsString>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The value of `name` if it is set and valid UTF-8.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(OsStr::new(name)).and_then(|v| v.to_str())
    }

    /// The value of `name` if it is set and not empty.
    pub fn non_empty(&self, name: &str) -> Option<&str> {
        self.get(name).filter(|v| !v.is_empty())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }

    /// True when running inside GitHub Actions.
    pub fn in_github_actions(&self) -> bool {
        self.get(GITHUB_ACTIONS) == Some("true")
    }
}
