//! Which gfx targets a build compiles for, and where that list came from. Precedence:
//! `--pytorch-rocm-arch` > `PYTORCH_ROCM_ARCH` > `--amdgpu-family` > the lock's record.
//! `rocm-sdk targets` is used only when asked with `--arch-from-sdk`: as a silent fallback it
//! once turned one-family builds into 25-target builds (TheRock#4687, #3442). Every name is
//! checked against the family table, and a list longer than `--max-targets` is refused.
//!
//! With no target flags, an `--index-url` whose last path segment is a family (TheRock's
//! per-family indexes, `https://…/v2/gfx110X-all/`) stands for `--amdgpu-family` of that
//! family (settings infer it); the targets are then checked against the SDK installed from it.

use std::fmt;

use super::error::Error;
use crate::recipes::SdkFacts;
use crate::sourced::{Source, Sourced};
use crate::stack::{FamilyTable, NameError, Target};

/// Where the effective target list came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind", content = "value")]
pub enum TargetSource {
    /// `--pytorch-rocm-arch`
    Flag,
    /// The `PYTORCH_ROCM_ARCH` environment variable.
    Env,
    /// `--amdgpu-family` (or a family inferred from `--index-url`), expanded through the
    /// family table.
    Family { families: String, from: Source },
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
            TargetSource::Family {
                families,
                from: Source::Inferred(why),
            } => write!(f, "family {families}, inferred from {why}"),
            TargetSource::Family { families, from } => write!(f, "{from} {families}"),
            TargetSource::Sdk => f.write_str("`rocm-sdk targets` (--arch-from-sdk)"),
            TargetSource::Lock => f.write_str("the lock"),
        }
    }
}

/// The inputs, as given.
#[derive(Clone, Debug, Default)]
pub struct TargetRequest {
    /// `--pytorch-rocm-arch`.
    pub flag: Option<String>,
    /// `PYTORCH_ROCM_ARCH`.
    pub env: Option<String>,
    /// `--amdgpu-family`, or the family `--index-url` names.
    pub family: Option<Sourced<String>>,
    /// `--arch-from-sdk`.
    pub from_sdk: bool,
    /// The targets of the lock's build record.
    pub lock: Option<Vec<Target>>,
    pub max: usize,
    pub allow_many: bool,
    /// `--index-url`, when nothing gave targets and its last path segment is not a family.
    pub unnamed_index: Option<UnnamedIndex>,
}

/// An `--index-url` whose last path segment names no family.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnnamedIndex {
    /// The URL, credentials masked.
    pub url: String,
    pub segment: String,
    /// A family the segment resembles.
    pub suggestion: Option<String>,
}

/// What the last path segment of an index URL says: a family of the table, or not.
pub fn family_of_index(url: &str, table: &FamilyTable) -> Result<String, UnnamedIndex> {
    let segment = crate::stack::families::last_segment(url).to_string();
    match table.family_named(&segment) {
        Ok(family) => Ok(family.name.clone()),
        Err(error) => Err(UnnamedIndex {
            url: crate::redact::redact_url(url),
            suggestion: match error {
                NameError::TargetNotFamily { family, .. } => Some(family),
                _ => crate::stack::source::did_you_mean(
                    &segment,
                    table.families().map(|f| f.name.as_str()),
                )
                .map(str::to_string),
            },
            segment,
        }),
    }
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

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    // The name error is part of the message, not a cause printed again below it.
    #[error("{source_name}: {error}")]
    Name {
        source_name: String,
        error: NameError,
    },
    #[error(
        "no gfx targets given: pass --pytorch-rocm-arch gfxA,gfxB or --amdgpu-family FAMILY (or set PYTORCH_ROCM_ARCH); rockbuild does not fall back to `rocm-sdk targets`, which builds every target the SDK ships (TheRock#4687) — pass --arch-from-sdk to ask for that"
    )]
    Missing,
    #[error("{}", missing_with_index(.0))]
    MissingWithIndex(UnnamedIndex),
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

/// Resolves the effective target list; `sdk_targets` is what `rocm-sdk targets` lists (used
/// only with `--arch-from-sdk`).
pub fn resolve(
    table: &FamilyTable,
    request: &TargetRequest,
    sdk_targets: &[String],
) -> Result<TargetChoice, TargetError> {
    fn given(value: Option<&String>) -> Option<&str> {
        value.map(|v| v.trim()).filter(|v| !v.is_empty())
    }
    let flag = given(request.flag.as_ref());
    let env = given(request.env.as_ref());
    let family = request
        .family
        .as_ref()
        .filter(|f| !f.value.trim().is_empty());
    if request.from_sdk {
        if flag.is_some() {
            return Err(TargetError::Conflict {
                other: "--pytorch-rocm-arch".into(),
            });
        }
        if let Some(family) = family {
            return Err(TargetError::Conflict {
                other: family.source.to_string(),
            });
        }
    }
    let name_error = |source: &TargetSource| {
        let source_name = source.to_string();
        move |error| TargetError::Name { source_name, error }
    };
    let mut overridden = Vec::new();
    let family_note = |f: &Sourced<String>| format!("{} {}", f.source, f.value);
    let (targets, source) = if let Some(list) = flag {
        if let Some(env) = env {
            overridden.push(format!("PYTORCH_ROCM_ARCH={env}"));
        }
        if let Some(family) = family {
            overridden.push(family_note(family));
        }
        let source = TargetSource::Flag;
        (table.targets(list).map_err(name_error(&source))?, source)
    } else if request.from_sdk {
        if let Some(env) = env {
            overridden.push(format!("PYTORCH_ROCM_ARCH={env}"));
        }
        let source = TargetSource::Sdk;
        (
            table
                .targets(&sdk_targets.join(";"))
                .map_err(name_error(&source))?,
            source,
        )
    } else if let Some(list) = env {
        if let Some(family) = family {
            overridden.push(family_note(family));
        }
        let source = TargetSource::Env;
        (table.targets(list).map_err(name_error(&source))?, source)
    } else if let Some(family) = family {
        let source = TargetSource::Family {
            families: family.value.trim().to_string(),
            from: family.source.clone(),
        };
        (
            table
                .expand_families(&family.value)
                .map_err(name_error(&source))?,
            source,
        )
    } else if let Some(locked) = request.lock.as_ref().filter(|l| !l.is_empty()) {
        let source = TargetSource::Lock;
        let list = crate::stack::families::join(locked);
        (table.targets(&list).map_err(name_error(&source))?, source)
    } else if let Some(index) = &request.unnamed_index {
        return Err(TargetError::MissingWithIndex(index.clone()));
    } else {
        return Err(TargetError::Missing);
    };
    if targets.len() > request.max && !request.allow_many {
        return Err(TargetError::TooMany {
            count: targets.len(),
            max: request.max,
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

/// The targets of a build: resolved, then checked against the SDK's own list when the SDK is
/// installed (a target it lacks would fail late, or give wheels without its kernels: E22).
pub fn choose(
    table: &FamilyTable,
    request: &TargetRequest,
    sdk: &SdkFacts,
) -> Result<TargetChoice, Error> {
    if request.from_sdk && !sdk.known {
        return Err(Error::ArchFromSdkWithoutSdk);
    }
    let choice = resolve(table, request, &sdk.info.targets)?;
    let missing = missing_from_sdk(&choice.targets, &sdk.info.targets);
    if sdk.known && !missing.is_empty() {
        return Err(Error::SdkLacksTargets {
            missing,
            sdk_targets: sdk.info.targets.clone(),
            inferred_from: match &choice.source {
                TargetSource::Family {
                    families,
                    from: Source::Inferred(why),
                } => Some(format!("family {families} (inferred from {why})")),
                _ => None,
            },
        });
    }
    Ok(choice)
}

fn missing_with_index(index: &UnnamedIndex) -> String {
    let add = match &index.suggestion {
        Some(family) => {
            format!("is not a GPU family (did you mean '{family}'?): add --amdgpu-family {family}")
        }
        None => "is not a GPU family of the family table: add --amdgpu-family FAMILY".into(),
    };
    format!(
        "no gfx targets given, and the last path segment of --index-url {} (`{}`) {add}, or --pytorch-rocm-arch gfxA,gfxB",
        index.url, index.segment
    )
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

    fn request() -> TargetRequest {
        TargetRequest {
            max: 8,
            ..TargetRequest::default()
        }
    }

    fn some(value: &str) -> Option<String> {
        Some(value.to_string())
    }

    fn family(value: &str) -> Option<Sourced<String>> {
        Some(Sourced {
            value: value.to_string(),
            source: Source::Flag("--amdgpu-family".into()),
        })
    }

    fn resolve_ok(request: &TargetRequest) -> (String, String) {
        let choice = resolve(&table(), request, &[]).expect("resolves");
        (
            crate::recipes::cmake_list(&choice.targets),
            choice.source.to_string(),
        )
    }

    #[test]
    fn precedence_flag_env_family_lock() {
        let all = TargetRequest {
            flag: some("gfx906,gfx1030"),
            env: some("gfx90a"),
            family: family("gfx94X-dcgpu"),
            lock: Some(vec![t("gfx908")]),
            ..request()
        };
        assert_eq!(
            resolve_ok(&all),
            ("gfx906;gfx1030".into(), "--pytorch-rocm-arch".into())
        );
        let choice = resolve(&table(), &all, &[]).expect("resolves");
        assert_eq!(
            choice.overridden,
            ["PYTORCH_ROCM_ARCH=gfx90a", "--amdgpu-family gfx94X-dcgpu"]
        );
        assert_eq!(
            choice.describe(),
            "gfx906,gfx1030 (2 targets, from --pytorch-rocm-arch); not used: PYTORCH_ROCM_ARCH=gfx90a, --amdgpu-family gfx94X-dcgpu"
        );
        let no_flag = TargetRequest {
            flag: None,
            ..all.clone()
        };
        assert_eq!(
            resolve_ok(&no_flag),
            ("gfx90a".into(), "PYTORCH_ROCM_ARCH".into())
        );
        let family = TargetRequest {
            env: some("  "),
            ..no_flag.clone()
        };
        assert_eq!(
            resolve_ok(&family),
            ("gfx942".into(), "--amdgpu-family gfx94X-dcgpu".into())
        );
        let lock = TargetRequest {
            family: None,
            ..family
        };
        assert_eq!(resolve_ok(&lock), ("gfx908".into(), "the lock".into()));
        assert_eq!(
            resolve(&table(), &request(), &[]),
            Err(TargetError::Missing)
        );
    }

    #[test]
    fn sdk_targets_only_when_asked() {
        let sdk = ["gfx906".to_string(), "gfx1030".to_string()];
        let asked = TargetRequest {
            from_sdk: true,
            env: some("gfx90a"),
            ..request()
        };
        let choice = resolve(&table(), &asked, &sdk).expect("resolves");
        assert_eq!(
            (
                crate::recipes::cmake_list(&choice.targets),
                choice.source.to_string()
            ),
            (
                "gfx906;gfx1030".into(),
                "`rocm-sdk targets` (--arch-from-sdk)".into()
            )
        );
        let both = TargetRequest {
            flag: some("gfx906"),
            ..asked
        };
        assert_eq!(
            resolve(&table(), &both, &sdk)
                .expect_err("conflict")
                .to_string(),
            "--arch-from-sdk cannot be combined with --pytorch-rocm-arch: choose one source of targets"
        );
    }

    #[test]
    fn wrong_names_suggest_the_fix() {
        let cases = [
            (
                TargetRequest {
                    flag: some("gfx906,gfx94x"),
                    ..request()
                },
                "--pytorch-rocm-arch: unknown gfx target 'gfx94x': did you mean family 'gfx94X-dcgpu' (targets gfx942)?",
            ),
            (
                TargetRequest {
                    env: some("gfx110X-all"),
                    ..request()
                },
                "PYTORCH_ROCM_ARCH: 'gfx110X-all' is a GPU family, not a gfx target: pass --amdgpu-family gfx110X-all (targets gfx1100,gfx1101,gfx1102,gfx1103)",
            ),
            (
                TargetRequest {
                    family: family("gfx942"),
                    ..request()
                },
                "--amdgpu-family gfx942: 'gfx942' is a gfx target, not a GPU family: its family is 'gfx94X-dcgpu' (pass --pytorch-rocm-arch gfx942 to build only that target)",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(
                resolve(&table(), &given, &[])
                    .expect_err("refused")
                    .to_string(),
                want
            );
        }
    }

    #[test]
    fn too_many_targets_are_refused_unless_allowed() {
        let many = "gfx1030,gfx1031,gfx1032,gfx1033,gfx1034,gfx1035,gfx1036,gfx906,gfx908";
        let error = resolve(
            &table(),
            &TargetRequest {
                env: some(many),
                ..request()
            },
            &[],
        )
        .expect_err("too many");
        assert_eq!(
            error.to_string(),
            format!(
                "9 targets from PYTORCH_ROCM_ARCH ({many}) is more than --max-targets 8: every target adds build time (TheRock#3442); narrow the list, or pass --allow-many-targets (or a larger --max-targets) if you mean it"
            )
        );
        let allowed = TargetRequest {
            env: some(many),
            allow_many: true,
            ..request()
        };
        assert_eq!(
            resolve(&table(), &allowed, &[])
                .expect("allowed")
                .targets
                .len(),
            9
        );
    }

    #[test]
    fn index_urls_name_families_by_their_last_segment() {
        let table = table();
        for url in [
            "https://rocm.nightlies.amd.com/v2/gfx110X-all/",
            "https://rocm.nightlies.amd.com/v2/gfx110X-all",
            "http://127.0.0.1:8000/v2/gfx110X-all/?x=1",
        ] {
            assert_eq!(
                family_of_index(url, &table).as_deref(),
                Ok("gfx110X-all"),
                "{url}"
            );
        }
        assert_eq!(
            family_of_index("https://rocm.nightlies.amd.com/v2/gfx1151/", &table).as_deref(),
            Ok("gfx1151")
        );
        let unnamed = |url| family_of_index(url, &table).expect_err("no family");
        assert_eq!(
            unnamed("https://user:secret@pypi.example/simple/"),
            UnnamedIndex {
                url: "https://****@pypi.example/simple/".into(),
                segment: "simple".into(),
                suggestion: None
            }
        );
        assert_eq!(
            unnamed("https://x/v2/gfx110x-all/").suggestion.as_deref(),
            Some("gfx110X-all")
        );
        assert_eq!(
            unnamed("https://x/v2/gfx942/").suggestion.as_deref(),
            Some("gfx94X-dcgpu")
        );
        assert_eq!(unnamed("https://x").segment, "");

        // An inferred family is a family with its source; with the count guard as ever.
        let inferred = TargetRequest {
            family: Some(Sourced {
                value: "gfx110X-all".into(),
                source: Source::Inferred(
                    "the last path segment of --index-url https://x/v2/gfx110X-all/".into(),
                ),
            }),
            ..request()
        };
        assert_eq!(
            resolve(&table, &inferred, &[])
                .expect("resolves")
                .describe(),
            "gfx1100,gfx1101,gfx1102,gfx1103 (4 targets, from family gfx110X-all, inferred from the last path segment of --index-url https://x/v2/gfx110X-all/)"
        );
        let small = TargetRequest { max: 2, ..inferred };
        assert!(matches!(
            resolve(&table, &small, &[]),
            Err(TargetError::TooMany { count: 4, .. })
        ));
        let nothing = TargetRequest {
            unnamed_index: Some(unnamed("https://x/v2/gfx110x-all/")),
            ..request()
        };
        assert_eq!(
            resolve(&table, &nothing, &[])
                .expect_err("missing")
                .to_string(),
            "no gfx targets given, and the last path segment of --index-url https://x/v2/gfx110x-all/ (`gfx110x-all`) is not a GPU family (did you mean 'gfx110X-all'?): add --amdgpu-family gfx110X-all, or --pytorch-rocm-arch gfxA,gfxB"
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
