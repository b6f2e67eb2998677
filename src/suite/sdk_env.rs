//! The ROCm SDK's own test environment, prepared from the installed `rocm[devel]` before any
//! test compiles something (inductor's generated kernels, `torch.utils.cpp_extension`), as the
//! reference's full-suite job does it (TheRock `.github/workflows/test_pytorch_wheels_full.yml`,
//! step "Initialize ROCm SDK and configure environment"): `rocm-sdk init`, the three paths
//! `rocm-sdk path` prints, and the variables derived from them — ROCM_HOME and its aliases, the
//! SDK's clang as CC/CXX, the sysdeps include, pkg-config and library paths.
//!
//! The reference's per-family quick job (`test_pytorch_wheels.yml`) and the GPU smoke suite
//! compile nothing and install no `rocm[devel]`: the rule is the config, see [`applies`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::catalog::TestConfig;
use crate::platform::Platform;

/// What `rocm[devel]` adds to the install: the development tree `rocm-sdk init` expands. Its
/// version is the one torch pins (`rocm[libraries]==V`), so it is left to the resolver.
pub const DEVEL_REQUIREMENT: &str = "rocm[devel]";

/// Variables whose value the job may already have: the SDK's entries go first, the job's after.
pub const PREPENDED: [&str; 6] = [
    "CMAKE_PREFIX_PATH",
    "CPLUS_INCLUDE_PATH",
    "C_INCLUDE_PATH",
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
];

/// Whether a config prepares the SDK's environment: the configs of the reference's full-suite
/// job (default, distributed, inductor), which build C++ extensions and inductor kernels.
pub fn applies(config: TestConfig) -> bool {
    match config {
        TestConfig::Default | TestConfig::Distributed | TestConfig::Inductor => true,
        TestConfig::Quick | TestConfig::GpuSmoke => false,
    }
}

/// What the installed `rocm-sdk` answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkPaths {
    /// `rocm-sdk path --root`.
    pub root: String,
    /// `rocm-sdk path --bin`.
    pub bin: String,
    /// `rocm-sdk path --cmake`.
    pub cmake: String,
}

/// The SDK's queries, in the order the run makes them, with the path each answers.
pub const QUERIES: [(&str, &[&str], Option<Which>); 4] = [
    ("rocm-sdk init", &["init"], None),
    (
        "rocm-sdk path --root",
        &["path", "--root"],
        Some(Which::Root),
    ),
    ("rocm-sdk path --bin", &["path", "--bin"], Some(Which::Bin)),
    (
        "rocm-sdk path --cmake",
        &["path", "--cmake"],
        Some(Which::Cmake),
    ),
];

/// One of the paths `rocm-sdk path` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    Root,
    Bin,
    Cmake,
}

impl Which {
    /// How a dry run shows the value it does not know yet.
    fn placeholder(self) -> &'static str {
        match self {
            Which::Root => "<root>",
            Which::Bin => "<bin>",
            Which::Cmake => "<cmake>",
        }
    }
}

/// The `rocm-sdk` console script of the venv.
pub fn program(platform: Platform, venv: &Path) -> PathBuf {
    venv.join(platform.venv_scripts())
        .join(platform.executable("rocm-sdk"))
}

/// One value: the SDK's path (`which`) followed by `suffix`.
struct Part {
    which: Which,
    suffix: &'static str,
}

const fn part(which: Which, suffix: &'static str) -> Part {
    Part { which, suffix }
}

const SYSDEPS_INCLUDE: Part = part(Which::Root, "/lib/rocm_sysdeps/include");
const BITCODE: Part = part(Which::Root, "/lib/llvm/amdgcn/bitcode");

/// The reference's variables, in its order: each a list of paths (joined with the platform's
/// separator, the job's own value after them for [`PREPENDED`]), or a literal.
const VARIABLES: &[(&str, &[Part])] = &[
    ("ROCM_PATH", &[part(Which::Root, "")]),
    ("ROCM_HOME", &[part(Which::Root, "")]),
    ("ROCM_SOURCE_DIR", &[part(Which::Root, "")]),
    ("ROCM_BIN", &[part(Which::Bin, "")]),
    ("ROCM_CMAKE", &[part(Which::Cmake, "")]),
    ("CMAKE_PREFIX_PATH", &[part(Which::Cmake, "")]),
    ("HIP_DEVICE_LIB_PATH", &[BITCODE]),
    ("ROCM_DEVICE_LIB_PATH", &[BITCODE]),
    ("ROCM_SYSDEPS_INCLUDE", &[SYSDEPS_INCLUDE]),
    ("CPLUS_INCLUDE_PATH", &[SYSDEPS_INCLUDE]),
    ("C_INCLUDE_PATH", &[SYSDEPS_INCLUDE]),
    (
        "PKG_CONFIG_PATH",
        &[part(Which::Root, "/lib/rocm_sysdeps/lib/pkgconfig")],
    ),
    (
        "LD_LIBRARY_PATH",
        &[
            part(Which::Root, "/lib/host-math/lib"),
            part(Which::Root, "/lib/rocm_sysdeps/lib"),
        ],
    ),
    (
        "LIBRARY_PATH",
        &[
            part(Which::Root, "/lib/host-math/lib"),
            part(Which::Root, "/lib/rocm_sysdeps/lib"),
        ],
    ),
    // torch.utils.cpp_extension compiles with the SDK's clang, not the runner's compiler.
    ("CC", &[part(Which::Root, "/lib/llvm/bin/clang")]),
    ("CXX", &[part(Which::Root, "/lib/llvm/bin/clang++")]),
];

/// Set as a literal: the reference turns MSLK off for the tests.
const LITERALS: &[(&str, &str)] = &[("USE_MSLK", "0")];

/// The variables the tests get, from the SDK's paths (placeholders while they are not known)
/// and the job's values of [`PREPENDED`] (an empty one adds nothing: a trailing separator in
/// LD_LIBRARY_PATH would mean the working directory).
pub fn variables(
    paths: Option<&SdkPaths>,
    inherited: &[(String, String)],
    platform: Platform,
) -> Vec<(String, String)> {
    let value_of = |which: Which| match (paths, which) {
        (None, _) => which.placeholder().to_string(),
        (Some(p), Which::Root) => p.root.clone(),
        (Some(p), Which::Bin) => p.bin.clone(),
        (Some(p), Which::Cmake) => p.cmake.clone(),
    };
    let mut out: Vec<(String, String)> = VARIABLES
        .iter()
        .map(|(name, parts)| {
            let mut list: Vec<String> = parts
                .iter()
                .map(|p| format!("{}{}", value_of(p.which), p.suffix))
                .collect();
            if PREPENDED.contains(name)
                && let Some((_, value)) = inherited.iter().find(|(n, _)| n == name)
                && !value.is_empty()
            {
                list.push(value.clone());
            }
            (name.to_string(), platform.join_path_list(list))
        })
        .collect();
    out.extend(
        LITERALS
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string())),
    );
    out
}

/// What the SDK must have for the tests that compile: its clang and the sysdeps include
/// directory. A tree without them would compile with the runner's compiler or fail later,
/// inside a test, for a reason that is not torch's.
pub fn check(paths: &SdkPaths) -> Result<(), String> {
    let root = Path::new(&paths.root);
    let mut missing = Vec::new();
    for relative in [
        "lib/llvm/bin/clang",
        "lib/llvm/bin/clang++",
        "lib/rocm_sysdeps/include",
    ] {
        if !root.join(relative).exists() {
            missing.push(relative);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the ROCm SDK's development tree {} has no {}: the tests that compile need the SDK's clang and sysdeps (is rocm-sdk-devel the SDK release torch pins?)",
            paths.root,
            missing.join(", ")
        ))
    }
}

/// The answer of `rocm-sdk path --…`: one line, an absolute path.
pub fn parse_path(stdout: &str) -> Option<String> {
    let line = stdout.trim();
    (!line.is_empty() && !line.contains('\n') && Path::new(line).is_absolute())
        .then(|| line.to_string())
}

/// What the shard report records: the paths the SDK answered and the variables set from them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkEnvRecord {
    pub paths: SdkPaths,
    pub variables: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_follow_the_reference_and_keep_the_jobs_values_after_the_sdks() {
        let paths = SdkPaths {
            root: "/v/_rocm_sdk_devel".into(),
            bin: "/v/_rocm_sdk_devel/bin".into(),
            cmake: "/v/_rocm_sdk_devel/lib/cmake".into(),
        };
        let inherited = vec![
            ("LD_LIBRARY_PATH".to_string(), "/opt/lib".to_string()),
            ("CPLUS_INCLUDE_PATH".to_string(), String::new()),
        ];
        let vars = variables(Some(&paths), &inherited, Platform::Linux);
        let get = |name: &str| {
            vars.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("ROCM_HOME"), Some("/v/_rocm_sdk_devel"));
        assert_eq!(get("CC"), Some("/v/_rocm_sdk_devel/lib/llvm/bin/clang"));
        assert_eq!(
            get("LD_LIBRARY_PATH"),
            Some(
                "/v/_rocm_sdk_devel/lib/host-math/lib:/v/_rocm_sdk_devel/lib/rocm_sysdeps/lib:/opt/lib"
            )
        );
        assert_eq!(
            get("CPLUS_INCLUDE_PATH"),
            Some("/v/_rocm_sdk_devel/lib/rocm_sysdeps/include"),
            "an empty inherited value adds no empty entry"
        );
        assert_eq!(get("USE_MSLK"), Some("0"));
        let planned = variables(None, &[], Platform::Linux);
        assert!(planned.contains(&("CXX".into(), "<root>/lib/llvm/bin/clang++".into())));
    }

    #[test]
    fn only_an_absolute_path_on_one_line_is_an_answer() {
        assert_eq!(parse_path("/a/b\n"), Some("/a/b".into()));
        assert_eq!(parse_path(""), None);
        assert_eq!(parse_path("relative\n"), None);
        assert_eq!(parse_path("/a\n/b\n"), None);
    }
}
