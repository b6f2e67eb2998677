//! The environment every project gets (F18), and the two ways rockbuild extends a variable
//! the user already set: paths in front, flags behind.

use std::path::Path;

use super::EnvDiff;
use super::Shared;
use crate::env_vars;
use crate::platform::Platform;
use crate::stack::Target;

/// The environment every project gets (F18). build_env.json is not merged here: its keys
/// only concern triton and go to triton's recipe (W9).
pub fn common_env(shared: &Shared<'_>) -> EnvDiff {
    let sdk = shared.sdk;
    let base = shared.base_env;
    let mut env = EnvDiff::new();
    let mut set = |key: &str, value: String| {
        env.insert(key.to_string(), value);
    };
    set("PYTHONUTF8", "1".into());
    // The venv acts as if activated: build scripts that run `python` or `pip` get the venv's.
    set("VIRTUAL_ENV", shared.venv.dir.display().to_string());
    set(
        env_vars::PATH,
        build_path(shared.platform, sdk, shared.venv, base),
    );
    set("CMAKE_PREFIX_PATH", sdk.info.cmake.display().to_string());
    set("ROCM_HOME", sdk.info.root.display().to_string());
    set("ROCM_PATH", sdk.info.root.display().to_string());
    set("PYTORCH_ROCM_ARCH", cmake_list(shared.targets));
    // The profiler is the user's choice; by default on Linux, off on Windows, where kineto's
    // ROCm tracer does not build.
    if base.get(env_vars::USE_KINETO).is_none() {
        let kineto = match shared.platform {
            Platform::Linux => "ON",
            Platform::Windows => "OFF",
        };
        set("USE_KINETO", kineto.into());
    }
    set("USE_GLOO", "ON".into());
    // clang's device-library search breaks when ROCM_PATH points at the SDK root.
    if sdk.has_dir(DEVICE_LIBS) {
        set("HIP_DEVICE_LIB_PATH", sdk.path(DEVICE_LIBS));
    }
    if sdk.has_dir(HOST_MATH) {
        set("BLAS", "OpenBLAS".into());
        set("OpenBLAS_HOME", sdk.path(HOST_MATH));
        set("OpenBLAS_LIB_NAME", "rocm-openblas".into());
    }
    match shared.platform {
        Platform::Linux => {
            // GCC 12+ false positives that -Werror turns into failures in PyTorch's tree.
            const WARNINGS: &str =
                "-Wno-error=maybe-uninitialized -Wno-error=uninitialized -Wno-error=restrict";
            set(
                "CXXFLAGS",
                append_flags(base.get(env_vars::CXXFLAGS), WARNINGS),
            );
            set(
                "CPPFLAGS",
                append_flags(base.get(env_vars::CPPFLAGS), WARNINGS),
            );
        }
        Platform::Windows => {
            // The SDK's clang-cl compiles host and device code; HIP finds its clang there.
            let llvm_bin = sdk.info.root.join(LLVM_BIN);
            set("HIP_CLANG_PATH", forward_slashes(&llvm_bin));
            let clang_cl = llvm_bin.join(shared.platform.executable("clang-cl"));
            set("CC", clang_cl.display().to_string());
            set("CXX", clang_cl.display().to_string());
        }
    }
    for (key, value) in shared.compiler_env {
        set(key, value.clone());
    }
    env
}

/// The SDK's LLVM programs (clang-cl on Windows).
const LLVM_BIN: &str = "lib/llvm/bin";

/// A path with `/` between its parts, as CMake and clang read paths on every platform.
fn forward_slashes(path: &Path) -> String {
    path.display().to_string().replace('\\', "/")
}

/// The SDK's device libraries (`HIP_DEVICE_LIB_PATH`).
const DEVICE_LIBS: &str = "lib/llvm/amdgcn/bitcode";
/// The SDK's host math libraries (OpenBLAS).
const HOST_MATH: &str = "lib/host-math";

/// The optional SDK directories the common environment looks for.
pub const COMMON_SDK_DIRS: &[&str] = &[DEVICE_LIBS, HOST_MATH];

/// The PATH every step gets: the SDK's and the venv's programs before the inherited PATH.
pub fn build_path(
    platform: Platform,
    sdk: &super::SdkFacts,
    venv: &crate::sdk::Venv,
    base: &crate::env_vars::Environment,
) -> String {
    prepend_path(
        platform,
        &[&sdk.info.bin, &venv.bin()],
        base.get(env_vars::PATH),
    )
}

/// `a:b:<inherited>` (`;` on Windows).
pub fn prepend_path(platform: Platform, dirs: &[&Path], inherited: Option<&str>) -> String {
    let mut parts: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if let Some(rest) = inherited.filter(|r| !r.is_empty()) {
        parts.push(rest.to_string());
    }
    platform.join_path_list(parts)
}

/// `<inherited> <ours>`: the user's flags stay, ours come last.
pub fn append_flags(inherited: Option<&str>, ours: &str) -> String {
    match inherited.map(str::trim).filter(|s| !s.is_empty()) {
        Some(inherited) => format!("{inherited} {ours}"),
        None => ours.to_string(),
    }
}

/// `gfxA;gfxB`: what CMake (and so PYTORCH_ROCM_ARCH) takes.
pub fn cmake_list(targets: &[Target]) -> String {
    targets
        .iter()
        .map(Target::as_str)
        .collect::<Vec<_>>()
        .join(";")
}
