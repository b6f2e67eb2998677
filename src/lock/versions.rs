//! Every wheel's version and file-name stem, decided when the lock is written — before any
//! working tree or build exists — from the locked commits' version files and the SDK version.
//!
//! The rules are `build`'s (src/build/plan.rs `assemble`, through the same pure functions of
//! `crate::version`): `version.txt` + suffix (+ `git<sha8>` for dev builds, not for apex), torch
//! `.post<N>` for build numbers above 1, triton's setup.py rule with the `+git<sha8>` a
//! detached checkout gets. `build --lock` recomputes them from the trees and refuses a
//! difference, so the two can never silently disagree.

use indexmap::IndexMap;
use serde::Serialize;

use crate::stack::RecipeKind;
use crate::version::{self, ReleaseType, VersionError};

/// What a project's sources say about its version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionSource {
    pub project: String,
    pub dist: String,
    pub recipe: RecipeKind,
    /// The locked upstream commit.
    pub commit: String,
    /// First line of version.txt, or triton's base version from its setup.py.
    pub base: String,
}

/// The naming inputs that are not in the sources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    /// The local suffix (`+rocm7.10.0`): `--version-suffix`, else derived from the SDK version.
    pub suffix: String,
    pub release_type: ReleaseType,
    pub build_number: u32,
}

/// One project's wheel version and file-name stem.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WheelName {
    pub version: String,
    pub stem: String,
}

impl Naming {
    /// The suffix rule of `build`: a given suffix as is, else `+rocm<sdk>` (F27).
    pub fn new(
        sdk_version: &str,
        version_suffix: Option<&str>,
        release_type: ReleaseType,
        build_number: u32,
    ) -> Result<Naming, VersionError> {
        let suffix = match version_suffix.map(str::trim).filter(|s| !s.is_empty()) {
            Some(given) => given.to_string(),
            None => version::rocm_suffix(sdk_version)?,
        };
        Ok(Naming {
            suffix,
            release_type,
            build_number,
        })
    }
}

/// Versions and stems of every project, in the order given.
pub fn wheel_names(
    sources: &[VersionSource],
    naming: &Naming,
) -> Result<IndexMap<String, WheelName>, VersionError> {
    let mut out = IndexMap::new();
    for source in sources {
        let version = match source.recipe {
            // A rockbuild checkout is detached, so triton's setup.py adds `+git<sha8>`; torch's
            // pin (build_env.json) contributes an empty prefix to TRITON_WHEEL_VERSION_SUFFIX.
            RecipeKind::Triton => version::triton_version(
                &source.base,
                Some(&source.commit),
                &version::triton_env_suffix(None, &naming.suffix),
            )?,
            kind => {
                let commit = (naming.release_type.tags_commit() && kind != RecipeKind::Apex)
                    .then_some(source.commit.as_str());
                let build = version::project_version(
                    &source.project,
                    &source.base,
                    &naming.suffix,
                    commit,
                )?;
                if kind == RecipeKind::Torch && naming.build_number > 1 {
                    version::normalize(
                        &format!("{}: version with build number", source.project),
                        &format!("{build}.post{}", naming.build_number),
                    )?
                } else {
                    build
                }
            }
        };
        let stem = format!(
            "{}-{version}",
            crate::wheel::filename::escape_name(&source.dist)
        );
        out.insert(source.project.clone(), WheelName { version, stem });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Vec<VersionSource> {
        let source = |project: &str, dist: &str, recipe, base: &str| VersionSource {
            project: project.into(),
            dist: dist.into(),
            recipe,
            commit: "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d".into(),
            base: base.into(),
        };
        vec![
            source("torch", "torch", RecipeKind::Torch, "2.9.0"),
            source("audio", "torchaudio", RecipeKind::Audio, "2.9.0a0"),
            source("triton", "triton", RecipeKind::Triton, "3.4.0"),
            source("apex", "apex", RecipeKind::Apex, "1.9.0"),
        ]
    }

    #[test]
    fn names_follow_the_build_rules() {
        let nightly =
            Naming::new("7.10.0a20251124", None, ReleaseType::Nightly, 1).expect("naming");
        let dev = Naming::new("7.10.0", Some("+rocm7.10.0"), ReleaseType::Dev, 2).expect("naming");
        let table = |naming: &Naming| {
            wheel_names(&sources(), naming)
                .expect("names")
                .into_iter()
                .map(|(project, name)| format!("{project:<7} {:<40} {}", name.version, name.stem))
                .collect::<Vec<_>>()
                .join("\n")
        };
        insta::assert_snapshot!(format!("{}\n\n{}", table(&nightly), table(&dev)));
    }

    #[test]
    fn a_bad_base_version_names_the_project() {
        let mut bad = sources();
        bad[1].base = "two".into();
        let naming = Naming::new("7.10.0", None, ReleaseType::Nightly, 1).expect("naming");
        let error = wheel_names(&bad, &naming).expect_err("bad version");
        assert!(
            error
                .to_string()
                .starts_with("audio: version `two` + suffix"),
            "{error}"
        );
    }
}
