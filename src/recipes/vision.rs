//! torchvision (F23): `setup.py bdist_wheel` against the torch installed in the venv.

use super::EnvDiff;
use super::Error;
use super::audio::{NEEDS_INSTALLED_TORCH, on_installed_torch};
use super::{Hint, ProjectSteps, Recipe, RecipeInput};

/// torchvision.
pub struct Vision;

impl Recipe for Vision {
    fn name(&self) -> &'static str {
        "vision"
    }

    fn reference_name(&self) -> Option<&'static str> {
        Some("pytorch-vision")
    }

    fn builds_against(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn pins(&self) -> &'static [&'static str] {
        &["torch"]
    }

    fn device_split(&self) -> Option<&'static str> {
        Some("torchvision")
    }

    fn start_priority(&self) -> u8 {
        3
    }

    fn steps(&self, input: &RecipeInput<'_>, mut env: EnvDiff) -> Result<ProjectSteps, Error> {
        input.set_build_version(&mut env, "VERSION_NAME");
        let options = [
            ("FORCE_CUDA", "1"),
            ("TORCHVISION_USE_NVJPEG", "0"),
            ("TORCHVISION_USE_VIDEO_CODEC", "0"),
        ];
        Ok(on_installed_torch(input, env, &options))
    }

    fn failure_hints(&self) -> &'static [Hint] {
        NEEDS_INSTALLED_TORCH
    }
}
