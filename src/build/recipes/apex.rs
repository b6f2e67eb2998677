//! apex (F23): setuptools' PEP 517 backend with apex's own options, against the installed
//! torch. Its version is version.txt + suffix, never tagged with the commit (as the reference).

use super::{EnvDiff, Recipe, RecipeInput, Steps};

pub fn recipe(input: &RecipeInput<'_>, mut env: EnvDiff) -> Recipe {
    env.insert("BUILD_VERSION".into(), input.build_version.to_string());
    env.insert("BUILD_NUMBER".into(), input.shared.build_number.to_string());
    let dir = input.dir;
    let mut steps = Steps::new(input, &env);
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
    let steps = steps.steps;
    Recipe { env, steps }
}
