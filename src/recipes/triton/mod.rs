//! triton (F22): `setup.py bdist_wheel` from `python/` or, since it moved (~torch 2.9), the
//! repository root; installed into the venv afterwards. Its version is computed up front by
//! the rule its own setup.py states ([`setup_py`]) as a hint for the plan; torch pins the
//! version of the wheel triton's build made, whatever rockbuild predicted or could not.
//!
//! build_env.json, written by triton's checkout, only ever carried
//! `TRITON_WHEEL_VERSION_SUFFIX` (W9). Its keys go to triton's environment alone, not to
//! every project as in the reference; the suffix key is composed with the stack's suffix.

mod setup_py;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::EnvDiff;
use super::Error;
use super::{
    CheckoutFiles, ProjectSteps, Recipe, RecipeInput, Steps, VersionInput, Versions, append_flags,
};
use crate::env_vars;
use crate::lock::PinOrigin;
use crate::platform::Platform;
use crate::version;

/// ROCm's triton.
pub struct Triton;

/// The build_env.json key that prefixes the version suffix.
const SUFFIX_KEY: &str = "TRITON_WHEEL_VERSION_SUFFIX";
const BUILD_ENV: &str = "build_env.json";
/// setup.py before and after it moved to the repository root.
const SETUP_IN_PYTHON: &str = "python/setup.py";
const SETUP_AT_ROOT: &str = "setup.py";
const REQUIREMENTS: &str = "python/requirements.txt";

impl Recipe for Triton {
    fn name(&self) -> &'static str {
        "triton"
    }

    fn reference_name(&self) -> Option<&'static str> {
        Some("triton")
    }

    fn compat_column(&self) -> Option<&'static str> {
        Some("Triton")
    }

    /// F7: build_env.json, with the suffix key only when the commit came from torch's CI pin.
    fn checkout_files(&self, pin: &PinOrigin) -> Vec<(&'static str, String)> {
        let content = match pin {
            PinOrigin::CommitFile { .. } => "{\"TRITON_WHEEL_VERSION_SUFFIX\": \"\"}\n",
            _ => "{}\n",
        };
        vec![(BUILD_ENV, content.to_string())]
    }

    fn reads(&self) -> &'static [&'static str] {
        &[SETUP_IN_PYTHON, SETUP_AT_ROOT, BUILD_ENV, REQUIREMENTS]
    }

    /// On Windows the reference builds another repository (triton-lang/triton-windows, at
    /// its own pin, against an LLVM build downloaded for its `cmake/llvm-hash.txt`), and only
    /// when a checkout of it is given: its Windows workflows check out torch, audio and
    /// vision alone, and torch then pins no triton.
    fn not_built_on(&self, platform: Platform) -> Option<&'static str> {
        (platform == Platform::Windows).then_some(
            "on Windows the reference builds triton-windows, another repository with its own LLVM download, and its Windows workflows do not build it",
        )
    }

    /// setup.py's own rule ([`setup_py`]) with `TRITON_WHEEL_VERSION_SUFFIX` =
    /// build_env.json's value + the stack's suffix, in the checkout's git state: a prediction
    /// (nothing hands triton its version). An expression rockbuild cannot read (a helper of
    /// another name, a computed base) is no refusal: the build decides, and torch pins the
    /// triton that was built.
    fn version(&self, input: &VersionInput<'_>) -> Result<Versions, Error> {
        let relative = setup_path(input.files);
        let Some(text) = input.files.text(relative) else {
            return Ok(Versions::decided(format!(
                "it has no {relative} (nor {SETUP_IN_PYTHON}) to read its version rule from"
            )));
        };
        let rule = match setup_py::parse(text) {
            Ok(rule) => rule,
            Err(unread) => {
                let at = unread.line.map(|l| format!(":{l}")).unwrap_or_default();
                return Ok(Versions::decided(format!(
                    "{relative}{at} {}",
                    unread.problem
                )));
            }
        };
        let build_env = build_env(input.files, input.dir)?;
        let env_suffix = env_suffix(&build_env, input.suffix);
        let git = setup_py::Git {
            head: input.source.head.as_deref(),
            branch: input.source.branch.as_deref(),
        };
        let from = format!(
            "{relative}:{} computes `{}` with TRITON_WHEEL_VERSION_SUFFIX `{env_suffix}`",
            rule.line,
            rule.describe()
        );
        let v = version::normalize(
            &format!("{}: {from}", input.project),
            &rule.evaluate(git, &env_suffix),
        )?;
        Ok(Versions::predicted(v, from))
    }

    fn start_priority(&self) -> u8 {
        0
    }

    fn steps(&self, input: &RecipeInput<'_>, mut env: EnvDiff) -> Result<ProjectSteps, Error> {
        let shared = input.shared;
        let build_env = build_env(input.files, input.dir)?;
        for (key, value) in &build_env {
            if key != SUFFIX_KEY {
                env.insert(key.clone(), value.clone());
            }
        }
        // The value triton's setup.py appends; the version computed from it is the one torch
        // pins.
        env.insert(SUFFIX_KEY.into(), env_suffix(&build_env, shared.suffix));
        // Keep triton's MLIR from finding ROCm's LLVM through the environment (TheRock#1999).
        env.insert(
            "TRITON_APPEND_CMAKE_ARGS".into(),
            append_flags(
                shared.base_env.get(env_vars::TRITON_APPEND_CMAKE_ARGS),
                "-DCMAKE_FIND_USE_CMAKE_ENVIRONMENT_PATH=FALSE",
            ),
        );
        let setup: PathBuf = input
            .path(setup_path(input.files))
            .parent()
            .map_or_else(|| input.dir.to_path_buf(), PathBuf::from);
        let mut steps = Steps::new(input, env);
        steps.clean(&setup);
        if let Some(wheel) = &input.project.wheel {
            steps.uninstall(wheel);
        }
        steps.install_requirements(REQUIREMENTS);
        steps.build("build wheel", &["setup.py", "bdist_wheel"], &setup);
        steps.collect(&setup.join("dist"));
        steps.install_wheel();
        Ok(steps.finish())
    }

    /// PyTorch publishes ROCm's triton as `pytorch-triton-rocm` (PyPI and its own index;
    /// its .github/scripts/build_triton_wheel.py names it by the device).
    fn upstream_wheels(&self) -> &'static [&'static str] {
        &["pytorch-triton-rocm"]
    }
}

/// Where triton's setup.py is: `python/` when it has one there, else the root.
fn setup_path(files: &CheckoutFiles) -> &'static str {
    if files.exists(SETUP_IN_PYTHON) {
        SETUP_IN_PYTHON
    } else {
        SETUP_AT_ROOT
    }
}

/// The value triton's build reads from `TRITON_WHEEL_VERSION_SUFFIX`: what build_env.json
/// (or nothing) set, followed by the stack's suffix, as the reference composes it.
fn env_suffix(build_env: &BTreeMap<String, String>, suffix: &str) -> String {
    format!(
        "{}{suffix}",
        build_env.get(SUFFIX_KEY).map_or("", String::as_str)
    )
}

/// build_env.json (written by triton's checkout), as string pairs; absent: none.
fn build_env(files: &CheckoutFiles, dir: &Path) -> Result<BTreeMap<String, String>, Error> {
    let Some(text) = files.text(BUILD_ENV) else {
        return Ok(BTreeMap::new());
    };
    let invalid = |line: Option<usize>, problem: String| Error::VersionSource {
        project: "triton".into(),
        path: dir.join(BUILD_ENV),
        line,
        problem,
    };
    let map: BTreeMap<String, serde_json::Value> = serde_json::from_str(text)
        .map_err(|e| invalid(Some(e.line()), format!("not a JSON object of strings: {e}")))?;
    map.into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s)),
            other => Err(invalid(
                None,
                format!("`{k}` must be a string, not {other}"),
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_suffix_is_build_env_s_then_the_stack_s() {
        // F22: the value build_env.json gave (empty for CI-pinned commits), then the suffix.
        let given = |value: Option<&str>| {
            value
                .map(|v| BTreeMap::from([(SUFFIX_KEY.to_string(), v.to_string())]))
                .unwrap_or_default()
        };
        assert_eq!(env_suffix(&given(Some("")), "+rocm7.14.0"), "+rocm7.14.0");
        assert_eq!(env_suffix(&given(None), "+rocm7.14.0"), "+rocm7.14.0");
        assert_eq!(env_suffix(&given(Some(".post1")), "+rocm7"), ".post1+rocm7");
    }
}
