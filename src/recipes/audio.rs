//! torchaudio (F23): `setup.py bdist_wheel` against the torch installed in the venv.

use super::EnvDiff;
use super::Error;
use super::{Hint, ProjectSteps, Recipe, RecipeInput, Steps};
use crate::platform::Platform;

/// torchaudio.
pub struct Audio;

impl Recipe for Audio {
    fn name(&self) -> &'static str {
        "audio"
    }

    fn reference_name(&self) -> Option<&'static str> {
        Some("pytorch-audio")
    }

    fn builds_against(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn pins(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn start_priority(&self) -> u8 {
        2
    }

    fn steps(&self, input: &RecipeInput<'_>, env: EnvDiff) -> Result<ProjectSteps, Error> {
        let options = [
            ("USE_ROCM", "1"),
            ("USE_CUDA", "0"),
            ("USE_FFMPEG", "1"),
            ("USE_OPENMP", "1"),
            ("BUILD_SOX", "0"),
        ];
        Ok(on_installed_torch(input, env, &options))
    }

    fn failure_hints(&self) -> &'static [Hint] {
        NEEDS_INSTALLED_TORCH
    }
}

/// The hint of every project that compiles against the installed torch.
pub const NEEDS_INSTALLED_TORCH: &[Hint] = &[(
    "No module named 'torch'",
    "this project builds against the installed torch, which is missing from the venv: build torch in the same run (its checkout must exist) or install a matching torch wheel first",
)];

/// The part torchaudio and torchvision share: their version and build number, their own
/// options, pinned to the torch just built, then `setup.py bdist_wheel` in the checkout (on
/// Windows with the MSVC environment already set up: `DISTUTILS_USE_SDK=1`).
pub fn on_installed_torch(
    input: &RecipeInput<'_>,
    mut env: EnvDiff,
    options: &[(&str, &str)],
) -> ProjectSteps {
    input.set_build_version(&mut env, "BUILD_VERSION");
    env.insert("BUILD_NUMBER".into(), input.shared.build_number.to_string());
    for (key, value) in options {
        env.insert(key.to_string(), value.to_string());
    }
    // PYTORCH_VERSION makes the wheel require exactly the torch it was built against
    // (`torch==<v>`): a mismatched pair fails at import (pain point D20).
    if let Some(torch) = input.pinned.get("torch") {
        env.insert("PYTORCH_VERSION".into(), torch.version.clone());
    }
    let windows = input.shared.platform == Platform::Windows;
    if windows {
        env.insert("DISTUTILS_USE_SDK".into(), "1".into());
    }
    let dir = input.dir;
    let mut steps = Steps::new(input, env);
    if windows {
        steps.require_msvc();
    }
    steps.clean(dir);
    steps.build("build wheel", &["setup.py", "bdist_wheel"], dir);
    steps.collect(&dir.join("dist"));
    steps.finish()
}
