//! torchvision (F23): `setup.py bdist_wheel` against the torch installed in the venv.

use super::{EnvDiff, Recipe, RecipeInput};

pub fn recipe(input: &RecipeInput<'_>, mut env: EnvDiff) -> Recipe {
    let shared = input.shared;
    env.insert("BUILD_VERSION".into(), input.build_version.to_string());
    env.insert("VERSION_NAME".into(), input.build_version.to_string());
    env.insert("BUILD_NUMBER".into(), shared.build_number.to_string());
    for (key, value) in [
        ("FORCE_CUDA", "1"),
        ("TORCHVISION_USE_NVJPEG", "0"),
        ("TORCHVISION_USE_VIDEO_CODEC", "0"),
    ] {
        env.insert(key.into(), value.into());
    }
    super::audio::on_installed_torch(input, env)
}
