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
    pin_torch(&mut env, shared.torch_version.as_deref());
    let dir = input.dir;
    let mut steps = Steps::new(input, &env);
    steps.clean(dir);
    steps.build("build wheel", &["setup.py", "bdist_wheel"], dir);
    steps.collect(&dir.join("dist"));
    let steps = steps.steps;
    Recipe { env, steps }
}

/// torchaudio and torchvision read PYTORCH_VERSION to require exactly the torch they were
/// built against (`torch==<v>`): a mismatched pair fails at import (pain point D20).
pub fn pin_torch(env: &mut EnvDiff, torch_version: Option<&str>) {
    if let Some(version) = torch_version {
        env.insert("PYTORCH_VERSION".into(), version.to_string());
    }
}
