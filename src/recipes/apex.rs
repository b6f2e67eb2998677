//! apex (F23): setuptools' PEP 517 backend with apex's own options, against the installed
//! torch. Its version is version.txt + suffix, never tagged with the commit (as the reference).

use super::EnvDiff;
use super::Error;
use super::audio::NEEDS_INSTALLED_TORCH;
use super::{Hint, ProjectSteps, Recipe, RecipeInput, Steps, VersionInput, Versions, version_txt};
use crate::platform::Platform;

/// ROCm's apex.
pub struct Apex;

impl Recipe for Apex {
    fn name(&self) -> &'static str {
        "apex"
    }

    fn reference_name(&self) -> Option<&'static str> {
        Some("apex")
    }

    fn compat_column(&self) -> Option<&'static str> {
        Some("Apex")
    }

    fn version(&self, input: &VersionInput<'_>) -> Result<Versions, Error> {
        Ok(match version_txt(input, false)? {
            Ok(version) => Versions::given(version),
            Err(why) => Versions::decided(why),
        })
    }

    fn builds_against(&self) -> &'static [&'static str] {
        &["torch"]
    }

    /// The reference's Windows workflows check out torch, audio and vision alone, and the
    /// support table has no Windows apex.
    fn not_built_on(&self, platform: Platform) -> Option<&'static str> {
        (platform == Platform::Windows)
            .then_some("the reference's Windows workflows check out torch, audio and vision alone")
    }

    fn start_priority(&self) -> u8 {
        4
    }

    fn steps(&self, input: &RecipeInput<'_>, mut env: EnvDiff) -> Result<ProjectSteps, Error> {
        input.set_build_version(&mut env, "BUILD_VERSION");
        env.insert("BUILD_NUMBER".into(), input.shared.build_number.to_string());
        let dir = input.dir;
        let mut steps = Steps::new(input, env);
        steps.clean(dir);
        steps.build(
            "build wheel",
            &[
                "-m",
                "build",
                "--wheel",
                "--no-isolation",
                "-C--build-option=--cpp_ext",
                "-C--build-option=--cuda_ext",
            ],
            dir,
        );
        steps.collect(&dir.join("dist"));
        Ok(steps.finish())
    }

    fn failure_hints(&self) -> &'static [Hint] {
        NEEDS_INSTALLED_TORCH
    }
}
