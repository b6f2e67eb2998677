//! torchaudio (F23): `setup.py bdist_wheel` against the torch installed in the venv.

use super::{EnvDiff, Recipe, RecipeInput, Steps};

pub fn recipe(input: &RecipeInput<'_>, mut env: EnvDiff) -> Recipe {
    let shared = input.shared;
    env.insert("BUILD_VERSION".into(), input.build_version.to_string());
    env.insert("BUILD_NUMBER".into(), shared.build_number.to_string());
    for (key, value) in [
        ("USE_ROCM", "1"),
        ("USE_CUDA", "0"),
        ("USE_FFMPEG", "1"),
        ("USE_OPENMP", "1"),
        ("BUILD_SOX", "0"),
    ] {
        env.insert(key.into(), value.into());
    }
    on_installed_torch(input, env)
}

/// The part torchaudio and torchvision share: pinned to the torch just built, then
/// `setup.py bdist_wheel` in the checkout.
pub fn on_installed_torch(input: &RecipeInput<'_>, mut env: EnvDiff) -> Recipe {
    // PYTORCH_VERSION makes the wheel require exactly the torch it was built against
    // (`torch==<v>`): a mismatched pair fails at import (pain point D20).
    if let Some(version) = input.shared.torch_version.as_deref() {
        env.insert("PYTORCH_VERSION".into(), version.to_string());
    }
    let dir = input.dir;
    let mut steps = Steps::new(input, &env);
    steps.clean(dir);
    steps.build("build wheel", &["setup.py", "bdist_wheel"], dir);
    steps.collect(&dir.join("dist"));
    let steps = steps.steps;
    Recipe { env, steps }
}
