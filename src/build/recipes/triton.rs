//! triton (F22): `setup.py bdist_wheel` from `python/` or, since it moved (~torch 2.9), the
//! repository root; installed into the venv afterwards. Its version is computed up front
//! (`crate::version::triton_version`) so torch can pin it while both build at once.
//!
//! build_env.json, written by triton's checkout, only ever carried
//! `TRITON_WHEEL_VERSION_SUFFIX` (W9). Its keys go to triton's environment alone, not to
//! every project as in the reference; the suffix key is composed with the stack's suffix.

use std::path::{Path, PathBuf};

use super::{EnvDiff, Recipe, RecipeInput, Steps, append_flags};
use crate::env_vars;

/// The build_env.json key that prefixes the version suffix.
pub const SUFFIX_KEY: &str = "TRITON_WHEEL_VERSION_SUFFIX";

/// Where triton's setup.py lives.
pub fn setup_dir(dir: &Path) -> PathBuf {
    let python = dir.join("python");
    if python.join("setup.py").is_file() {
        python
    } else {
        dir.to_path_buf()
    }
}

pub fn recipe(input: &RecipeInput<'_>, mut env: EnvDiff) -> Recipe {
    let shared = input.shared;
    for (key, value) in input.triton_build_env {
        if key != SUFFIX_KEY {
            env.insert(key.clone(), value.clone());
        }
    }
    // The value triton's setup.py appends; the version computed from it is the one torch pins.
    let suffix = input
        .triton_build_env
        .get(SUFFIX_KEY)
        .cloned()
        .unwrap_or_default();
    env.insert(
        SUFFIX_KEY.into(),
        crate::version::triton_env_suffix(Some(&suffix), &shared.suffix),
    );
    // Keep triton's MLIR from finding ROCm's LLVM through the environment (TheRock#1999).
    env.insert(
        "TRITON_APPEND_CMAKE_ARGS".into(),
        append_flags(
            shared.base_env.get(env_vars::TRITON_APPEND_CMAKE_ARGS),
            "-DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=FALSE",
        ),
    );
    let dir = input.dir;
    let setup = setup_dir(dir);
    let mut steps = Steps::new(input, &env);
    steps.clean(&setup);
    steps.uninstall(&input.project.wheel);
    steps.install_requirements("python/requirements.txt");
    steps.build("build wheel", &["setup.py", "bdist_wheel"], &setup);
    steps.collect(&setup.join("dist"));
    steps.install_wheel();
    let steps = steps.steps;
    Recipe { env, steps }
}
