//! Which gfx targets a build compiles for, and where that list came from. Precedence:
//! `--pytorch-rocm-arch` > `PYTORCH_ROCM_ARCH` > `--amdgpu-family` > the lock's record.
//! `rocm-sdk targets` is used only when asked with `--arch-from-sdk`: as a silent fallback it
//! once turned one-family builds into 25-target builds (TheRock#4687, #3442). Every name is
//! checked against the family table, and a list longer than `--max-targets` is refused.

use std::fmt;

use crate::stack::{FamilyTable, NameError, Target};

/// Where the effective target list came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum TargetSource {
    /// `--pytorch-rocm-arch`
    Flag,
    /// The `PYTORCH_ROCM_ARCH` environment variable.
    Env,
    /// `--amdgpu-family`, expanded through the family table.
    Family(String),
    /// `python -m rocm_sdk targets`, with `--arch-from-sdk`.
    Sdk,
    /// The targets a lock recorded for an earlier build.
    Lock,
}

impl fmt::Display for TargetSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetSource::Flag => f.write_str("--pytorch-rocm-arch"),
            TargetSource::Env => f.write_str("PYTORCH_ROCM_ARCH"),
            TargetSource::Family(list) => write!(f, "--amdgpu-family {list}"),
            TargetSource::Sdk => f.write_str("`rocm-sdk targets` (--arch-from-sdk)"),
            TargetSource::Lock => f.write_str("the lock"),
        }
    }
}

/// The inputs, as given.
#[derive(Clone, Debug, Default)]
pub struct TargetInputs<'a> {
    pub flag: Option<&'a str>,
    pub env: Option<&'a str>,
    pub family: Option<&'a str>,
    /// `Some` with the SDK's list when `--arch-from-sdk` was given.
    pub from_sdk: Option<&'a [String]>,
    pub lock: Option<&'a [Target]>,
    pub max: usize,
    pub allow_many: bool,
}

/// The effective list.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TargetChoice {
    pub targets: Vec<Target>,
    pub source: TargetSource,
    /// Lower-precedence inputs that were also given (shown, so nothing is silently dropped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub overridden: Vec<String>,
}

impl TargetChoice {
    /// `gfxA;gfxB`: what CMake (and so PYTORCH_ROCM_ARCH) takes.
    pub fn cmake_list(&self) -> String {
        cmake_list(&self.targets)
    }

    /// `gfx906,gfx1030 (2 targets, from --pytorch-rocm-arch)`.
    pub fn describe(&self) -> String {
        let count = self.targets.len();
        let mut text = format!(
            "{} ({count} target{}, from {})",
            crate::stack::families::join(&self.targets),
            if count == 1 { "" } else { "s" },
            self.source
        );
        if !self.overridden.is_empty() {
            text.push_str(&format!("; not used: {}", self.overridden.join(", ")));
        }
        text
    }
}

pub fn cmake_list(targets: &[Target]) -> String {
    targets
        .iter()
        .map(Target::as_str)
        .collect::<Vec<_>>()
        .join(";")
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    #[error("{source_name}: {error}")]
    Name {
        source_name: String,
        #[source]
        error: NameError,
    },
    #[error(
        "no gfx targets given: pass --pytorch-rocm-arch gfxA,gfxB or --amdgpu-family FAMILY (or set PYTORCH_ROCM_ARCH); rockbuild does not fall back to `rocm-sdk targets`, which builds every target the SDK ships (TheRock#4687) — pass --arch-from-sdk to ask for that"
    )]
    Missing,
    #[error("--arch-from-sdk cannot be combined with {other}: choose one source of targets")]
    Conflict { other: String },
    #[error(
        "{count} targets from {source_name} ({list}) is more than --max-targets {max}: every target adds build time (TheRock#3442); narrow the list, or pass --allow-many-targets (or a larger --max-targets) if you mean it"
    )]
    TooMany {
        count: usize,
        max: usize,
        source_name: String,
        list: String,
    },
}

/// Resolves the effective target list.
pub fn resolve(
    table: &FamilyTable,
    inputs: &TargetInputs<'_>,
) -> Result<TargetChoice, TargetError> {
    fn given(value: Option<&str>) -> Option<&str> {
        value.map(str::trim).filter(|v| !v.is_empty())
    }
    let flag = given(inputs.flag);
    let env = given(inputs.env);
    let family = given(inputs.family);
    if inputs.from_sdk.is_some() {
        if flag.is_some() {
            return Err(TargetError::Conflict {
                other: "--pytorch-rocm-arch".into(),
            });
        }
        if family.is_some() {
            return Err(TargetError::Conflict {
                other: "--amdgpu-family".into(),
            });
        }
    }
    let name_error = |source: &TargetSource| {
        let source_name = source.to_string();
        move |error| TargetError::Name { source_name, error }
    };
    let mut overridden = Vec::new();
    let (targets, source) = if let Some(list) = flag {
        if let Some(env) = env {
            overridden.push(format!("PYTORCH_ROCM_ARCH={env}"));
        }
        if let Some(family) = family {
            overridden.push(format!("--amdgpu-family {family}"));
        }
        let source = TargetSource::Flag;
        (table.targets(list).map_err(name_error(&source))?, source)
    } else if let Some(sdk) = inputs.from_sdk {
        if let Some(env) = env {
            overridden.push(format!("PYTORCH_ROCM_ARCH={env}"));
        }
        let source = TargetSource::Sdk;
        (
            table.targets(&sdk.join(";")).map_err(name_error(&source))?,
            source,
        )
    } else if let Some(list) = env {
        if let Some(family) = family {
            overridden.push(format!("--amdgpu-family {family}"));
        }
        let source = TargetSource::Env;
        (table.targets(list).map_err(name_error(&source))?, source)
    } else if let Some(families) = family {
        let source = TargetSource::Family(families.to_string());
        (
            table
                .expand_families(families)
                .map_err(name_error(&source))?,
            source,
        )
    } else if let Some(locked) = inputs.lock.filter(|l| !l.is_empty()) {
        let source = TargetSource::Lock;
        let list = crate::stack::families::join(locked);
        (table.targets(&list).map_err(name_error(&source))?, source)
    } else {
        return Err(TargetError::Missing);
    };
    if targets.len() > inputs.max && !inputs.allow_many {
        return Err(TargetError::TooMany {
            count: targets.len(),
            max: inputs.max,
            source_name: source.to_string(),
            list: crate::stack::families::join(&targets),
        });
    }
    Ok(TargetChoice {
        targets,
        source,
        overridden,
    })
}

/// Requested targets the installed SDK does not list (`rocm-sdk targets`): compiling for them
/// would fail late or produce wheels without kernels for them (pain point E22).
pub fn missing_from_sdk(targets: &[Target], sdk_targets: &[String]) -> Vec<Target> {
    if sdk_targets.is_empty() {
        return Vec::new();
    }
    targets
        .iter()
        .filter(|t| !sdk_targets.iter().any(|s| s == t.as_str()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> FamilyTable {
        crate::stack::load_families(None).expect("shipped table")
    }

    fn t(name: &str) -> Target {
        table().target(name).expect("known target")
    }

    fn inputs<'a>() -> TargetInputs<'a> {
        TargetInputs {
            max: 8,
            ..TargetInputs::default()
        }
    }

    fn resolve_ok(inputs: &TargetInputs<'_>) -> (String, String) {
        let choice = resolve(&table(), inputs).expect("resolves");
        (choice.cmake_list(), choice.source.to_string())
    }

    #[test]
    fn precedence_flag_env_family_lock() {
        let locked = [t("gfx908")];
        let all = TargetInputs {
            flag: Some("gfx906,gfx1030"),
            env: Some("gfx90a"),
            family: Some("gfx94X-dcgpu"),
            lock: Some(&locked),
            ..inputs()
        };
        assert_eq!(
            resolve_ok(&all),
            ("gfx906;gfx1030".into(), "--pytorch-rocm-arch".into())
        );
        let choice = resolve(&table(), &all).expect("resolves");
        assert_eq!(
            choice.overridden,
            ["PYTORCH_ROCM_ARCH=gfx90a", "--amdgpu-family gfx94X-dcgpu"]
        );
        assert_eq!(
            choice.describe(),
            "gfx906,gfx1030 (2 targets, from --pytorch-rocm-arch); not used: PYTORCH_ROCM_ARCH=gfx90a, --amdgpu-family gfx94X-dcgpu"
        );
        let no_flag = TargetInputs {
            flag: None,
            ..all.clone()
        };
        assert_eq!(
            resolve_ok(&no_flag),
            ("gfx90a".into(), "PYTORCH_ROCM_ARCH".into())
        );
        let family = TargetInputs {
            env: Some("  "),
            ..no_flag.clone()
        };
        assert_eq!(
            resolve_ok(&family),
            ("gfx942".into(), "--amdgpu-family gfx94X-dcgpu".into())
        );
        let lock = TargetInputs {
            family: None,
            ..family
        };
        assert_eq!(resolve_ok(&lock), ("gfx908".into(), "the lock".into()));
        assert_eq!(resolve(&table(), &inputs()), Err(TargetError::Missing));
    }

    #[test]
    fn sdk_targets_only_when_asked() {
        let sdk = ["gfx906".to_string(), "gfx1030".to_string()];
        let asked = TargetInputs {
            from_sdk: Some(&sdk),
            env: Some("gfx90a"),
            ..inputs()
        };
        assert_eq!(
            resolve_ok(&asked),
            (
                "gfx906;gfx1030".into(),
                "`rocm-sdk targets` (--arch-from-sdk)".into()
            )
        );
        let both = TargetInputs {
            flag: Some("gfx906"),
            ..asked
        };
        assert_eq!(
            resolve(&table(), &both).expect_err("conflict").to_string(),
            "--arch-from-sdk cannot be combined with --pytorch-rocm-arch: choose one source of targets"
        );
    }

    #[test]
    fn wrong_names_suggest_the_fix() {
        let cases = [
            (
                TargetInputs {
                    flag: Some("gfx906,gfx94x"),
                    ..inputs()
                },
                "--pytorch-rocm-arch: unknown gfx target 'gfx94x': did you mean family 'gfx94X-dcgpu' (targets gfx942)?",
            ),
            (
                TargetInputs {
                    env: Some("gfx110X-all"),
                    ..inputs()
                },
                "PYTORCH_ROCM_ARCH: 'gfx110X-all' is a GPU family, not a gfx target: pass --amdgpu-family gfx110X-all (targets gfx1100,gfx1101,gfx1102,gfx1103)",
            ),
            (
                TargetInputs {
                    family: Some("gfx942"),
                    ..inputs()
                },
                "--amdgpu-family gfx942: 'gfx942' is a gfx target, not a GPU family: its family is 'gfx94X-dcgpu' (pass --pytorch-rocm-arch gfx942 to build only that target)",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(
                resolve(&table(), &given).expect_err("refused").to_string(),
                want
            );
        }
    }

    #[test]
    fn too_many_targets_are_refused_unless_allowed() {
        let many = "gfx1030,gfx1031,gfx1032,gfx1033,gfx1034,gfx1035,gfx1036,gfx906,gfx908";
        let error = resolve(
            &table(),
            &TargetInputs {
                env: Some(many),
                ..inputs()
            },
        )
        .expect_err("too many");
        assert_eq!(
            error.to_string(),
            format!(
                "9 targets from PYTORCH_ROCM_ARCH ({many}) is more than --max-targets 8: every target adds build time (TheRock#3442); narrow the list, or pass --allow-many-targets (or a larger --max-targets) if you mean it"
            )
        );
        let allowed = TargetInputs {
            env: Some(many),
            allow_many: true,
            ..inputs()
        };
        assert_eq!(
            resolve(&table(), &allowed).expect("allowed").targets.len(),
            9
        );
    }

    #[test]
    fn sdk_cross_check() {
        let wanted = [t("gfx906"), t("gfx942")];
        assert_eq!(
            missing_from_sdk(&wanted, &["gfx906".into(), "gfx1030".into()]),
            [t("gfx942")]
        );
        assert!(missing_from_sdk(&wanted, &[]).is_empty());
    }
}
