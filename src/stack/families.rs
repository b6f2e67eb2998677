//! GPU families and gfx targets, as typed values checked against one table
//! (configs/families.yaml). A family where a target is expected, a target where a family is
//! expected, or a misspelling such as `gfx94x` is an error that names the right value
//! (TheRock#1992, uccl#1027).

use std::fmt;

use indexmap::IndexMap;
use serde::Deserialize;

use super::source::{ConfigError, ConfigSource, did_you_mean};

/// The placeholder of the `index-url` template.
const FAMILY_PLACEHOLDER: &str = "{family}";

/// A gfx target (ISA) such as `gfx942` or `gfx90a`: what `--offload-arch` takes.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct Target(String);

impl Target {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// True for strings shaped like an ISA name: `gfx` followed by three or four lowercase hex
/// digits (`gfx90a`, `gfx1151`). Family names (`gfx94X-dcgpu`) are not.
pub fn is_target_shaped(name: &str) -> bool {
    name.strip_prefix("gfx").is_some_and(|rest| {
        (3..=4).contains(&rest.len())
            && rest
                .chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    })
}

/// Per-platform facts of a family.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PlatformEntry {
    pub build_runner: String,
    #[serde(default)]
    pub test_runner: String,
    #[serde(default)]
    pub multi_gpu_runner: String,
    /// PyTorch refs this family is not built for on this platform.
    #[serde(default)]
    pub excluded_refs: Vec<String>,
}

/// A GPU family: a named set of targets built and tested together.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Family {
    #[serde(skip_deserializing)]
    pub name: String,
    pub targets: Vec<Target>,
    /// Whether aotriton's flash-attention kernels support this family's targets.
    pub flash_attention: bool,
    pub tier: Tier,
    #[serde(default)]
    pub linux: Option<PlatformEntry>,
    #[serde(default)]
    pub windows: Option<PlatformEntry>,
}

/// The trigger set that includes a family; ordered, as each set contains the previous one
/// (presubmit ⊂ postsubmit ⊂ nightly).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    Presubmit,
    Postsubmit,
    Nightly,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct FamiliesFile {
    schema: u32,
    /// Where a family's packages are published: a URL with `{family}` in it.
    #[serde(default)]
    index_url: Option<String>,
    /// The one index of every family for multi-arch builds: a URL without `{family}`.
    #[serde(default)]
    multi_arch_index_url: Option<String>,
    /// Which of the two is the table's current layout (and so the default build mode).
    #[serde(default)]
    index_layout: IndexLayout,
    families: IndexMap<String, Family>,
}

/// Which of the table's indexes is current: the per-family `index-url` template (current or
/// legacy) or the `multi-arch-index-url`, so that wherever rockbuild shows one it can say what
/// it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IndexLayout {
    /// One index per family, current.
    #[default]
    PerFamily,
    /// TheRock's legacy per-family layout (`v2/<family>/`): replaced by multi-arch releases,
    /// no new ones published (TheRock docs/packaging/legacy_per_family_releases.md).
    LegacyPerFamily,
    /// One index for every family (`whl-multi-arch/`): host wheels, per-target device wheels
    /// installed as `torch[device-gfxNNN]`, and the SDK; builds are multi-arch.
    MultiArch,
}

impl IndexLayout {
    /// What a family's index is, before its URL: `index`, `legacy per-family index`.
    pub fn label(self) -> &'static str {
        match self {
            IndexLayout::PerFamily => "index",
            IndexLayout::LegacyPerFamily => "legacy per-family index",
            IndexLayout::MultiArch => "multi-arch index",
        }
    }

    /// What a reader of such an index should know, once.
    pub fn note(self) -> Option<&'static str> {
        match self {
            IndexLayout::PerFamily | IndexLayout::MultiArch => None,
            IndexLayout::LegacyPerFamily => Some(
                "the per-family indexes (`v2/<family>/`) are TheRock's legacy layout: TheRock publishes no new per-family releases there and may delete old ones (its docs/packaging/legacy_per_family_releases.md); its current releases are multi-arch, one index for every family (https://rocm.nightlies.amd.com/whl-multi-arch/)",
            ),
        }
    }
}

/// What an index URL is, by the table's rules: a per-family index when its last path segment
/// names a family (`…/v2/gfx110X-all/`), the multi-arch index when its last path segment is the
/// multi-arch index's (`whl-multi-arch`, on any host: nightlies, prereleases, releases), else
/// neither (a local or mirrored index, which says nothing about the mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexKind {
    PerFamily { family: String },
    MultiArch,
    Unknown,
}

/// Why a target or family name was refused. The message always names a fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error(
        "'{given}' is a GPU family, not a gfx target: pass --amdgpu-family {given} (targets {targets})"
    )]
    FamilyNotTarget { given: String, targets: String },
    #[error(
        "'{given}' is a gfx target, not a GPU family: its family is '{family}' (pass --pytorch-rocm-arch {given} to build only that target)"
    )]
    TargetNotFamily { given: String, family: String },
    #[error("unknown gfx target '{given}': did you mean family '{family}' (targets {targets})?")]
    TargetLooksLikeFamily {
        given: String,
        family: String,
        targets: String,
    },
    #[error("unknown gfx target '{given}'{suggestion}; known targets: {known}")]
    UnknownTarget {
        given: String,
        suggestion: String,
        known: String,
    },
    #[error("unknown GPU family '{given}'{suggestion}; known families: {known}")]
    UnknownFamily {
        given: String,
        suggestion: String,
        known: String,
    },
    #[error("empty target list: pass --pytorch-rocm-arch or --amdgpu-family")]
    Empty,
}

/// The family table, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyTable {
    families: IndexMap<String, Family>,
    index_url: Option<String>,
    multi_arch_index_url: Option<String>,
    index_layout: IndexLayout,
}

impl FamilyTable {
    pub fn load(source: &ConfigSource) -> Result<Self, ConfigError> {
        let file: FamiliesFile = source.parse()?;
        source.check_schema(file.schema)?;
        if let Some(template) = &file.index_url
            && !template.contains(FAMILY_PLACEHOLDER)
        {
            return Err(source.error_at(
                &["index-url"],
                format!(
                    "index-url '{template}' has no {FAMILY_PLACEHOLDER} to put the family name in"
                ),
            ));
        }
        if let Some(url) = &file.multi_arch_index_url
            && url.contains(FAMILY_PLACEHOLDER)
        {
            return Err(source.error_at(
                &["multi-arch-index-url"],
                format!(
                    "multi-arch-index-url '{url}' has {FAMILY_PLACEHOLDER} in it: the multi-arch index is one URL for every family (the per-family template goes in index-url)"
                ),
            ));
        }
        if file.index_layout == IndexLayout::MultiArch && file.multi_arch_index_url.is_none() {
            return Err(source.error_at(
                &["index-layout"],
                "index-layout: multi-arch needs multi-arch-index-url (the one index of every family, e.g. https://rocm.nightlies.amd.com/whl-multi-arch/)".to_string(),
            ));
        }
        let mut seen: IndexMap<Target, String> = IndexMap::new();
        let mut families = IndexMap::new();
        for (name, mut family) in file.families {
            let at = |key: &'static str| vec!["families", name.as_str(), key];
            if is_target_shaped(&name)
                && (family.targets.len() != 1 || family.targets[0].as_str() != name)
            {
                return Err(source.error_at(
                    &at("targets"),
                    format!(
                        "family '{name}' is named like a target, so its only target must be {name}"
                    ),
                ));
            }
            if family.targets.is_empty() {
                return Err(
                    source.error_at(&at("targets"), format!("family '{name}' has no targets"))
                );
            }
            for target in &family.targets {
                if !is_target_shaped(target.as_str()) {
                    return Err(source.error_at(
                        &at("targets"),
                        format!("'{target}' in family '{name}' is not a gfx target name (gfx + 3-4 hex digits)"),
                    ));
                }
                if let Some(other) = seen.insert(target.clone(), name.clone()) {
                    return Err(source.error_at(
                        &at("targets"),
                        format!("target {target} is in both '{other}' and '{name}'"),
                    ));
                }
            }
            family.name = name.clone();
            families.insert(name, family);
        }
        Ok(FamilyTable {
            families,
            index_url: file.index_url,
            multi_arch_index_url: file.multi_arch_index_url,
            index_layout: file.index_layout,
        })
    }

    /// The package index of a family in the table's current layout: the multi-arch index when
    /// the layout is multi-arch, else the family's from the `index-url` template.
    pub fn index_url(&self, family: &Family) -> Option<String> {
        match self.index_layout {
            IndexLayout::MultiArch => self.multi_arch_index_url.clone(),
            IndexLayout::PerFamily | IndexLayout::LegacyPerFamily => {
                self.per_family_index_url(family)
            }
        }
    }

    /// The family's own index, from the `index-url` template.
    pub fn per_family_index_url(&self, family: &Family) -> Option<String> {
        self.index_url
            .as_ref()
            .map(|template| template.replace(FAMILY_PLACEHOLDER, &family.name))
    }

    /// The one index of every family (`multi-arch-index-url`).
    pub fn multi_arch_index_url(&self) -> Option<&str> {
        self.multi_arch_index_url.as_deref()
    }

    /// What `url` is by the table's rules ([`IndexKind`]).
    pub fn index_kind(&self, url: &str) -> IndexKind {
        let segment = last_segment(url);
        if segment.is_empty() {
            return IndexKind::Unknown;
        }
        if let Ok(family) = self.family_named(segment) {
            return IndexKind::PerFamily {
                family: family.name.clone(),
            };
        }
        match self.multi_arch_index_url() {
            Some(multi) if last_segment(multi) == segment => IndexKind::MultiArch,
            _ => IndexKind::Unknown,
        }
    }

    /// What kind of index [`FamilyTable::index_url`] names.
    pub fn index_layout(&self) -> IndexLayout {
        self.index_layout
    }

    pub fn families(&self) -> impl Iterator<Item = &Family> {
        self.families.values()
    }

    /// The family a target belongs to.
    pub fn family_of(&self, target: &Target) -> Option<&Family> {
        self.families().find(|f| f.targets.contains(target))
    }

    fn all_targets(&self) -> impl Iterator<Item = &Target> {
        self.families().flat_map(|f| f.targets.iter())
    }

    /// Parses one target name against the table.
    pub fn target(&self, given: &str) -> Result<Target, NameError> {
        let given = given.trim();
        if let Some(target) = self.all_targets().find(|t| t.as_str() == given) {
            return Ok(target.clone());
        }
        if let Some(family) = self.family_ignoring_case(given) {
            return Err(NameError::FamilyNotTarget {
                given: given.to_string(),
                targets: join(&family.targets),
            });
        }
        if let Some(family) = self.family_by_stem(given) {
            return Err(NameError::TargetLooksLikeFamily {
                given: given.to_string(),
                family: family.name.clone(),
                targets: join(&family.targets),
            });
        }
        let names: Vec<&str> = self.all_targets().map(Target::as_str).collect();
        Err(NameError::UnknownTarget {
            given: given.to_string(),
            suggestion: suggestion(given, names.iter().copied(), "target"),
            known: names.join(", "),
        })
    }

    /// Parses a target list (`gfxA,gfxB` or `gfxA;gfxB`), keeping order and dropping repeats.
    pub fn targets(&self, list: &str) -> Result<Vec<Target>, NameError> {
        let mut out: Vec<Target> = Vec::new();
        for name in split_list(list) {
            let target = self.target(name)?;
            if !out.contains(&target) {
                out.push(target);
            }
        }
        if out.is_empty() {
            return Err(NameError::Empty);
        }
        Ok(out)
    }

    /// Parses one family name against the table.
    pub fn family_named(&self, given: &str) -> Result<&Family, NameError> {
        let given = given.trim();
        if let Some(family) = self.families.get(given) {
            return Ok(family);
        }
        if let Some(family) = self.family_ignoring_case(given) {
            return Err(NameError::UnknownFamily {
                given: given.to_string(),
                suggestion: format!(" (did you mean '{}'?)", family.name),
                known: self.families.keys().cloned().collect::<Vec<_>>().join(", "),
            });
        }
        if let Some(target) = self.all_targets().find(|t| t.as_str() == given)
            && let Some(family) = self.family_of(target)
        {
            return Err(NameError::TargetNotFamily {
                given: given.to_string(),
                family: family.name.clone(),
            });
        }
        let by_stem = self.family_by_stem(given);
        let names: Vec<&str> = self.families.keys().map(String::as_str).collect();
        Err(NameError::UnknownFamily {
            given: given.to_string(),
            suggestion: match by_stem {
                Some(family) => format!(" (did you mean '{}'?)", family.name),
                None => suggestion(given, names.iter().copied(), "family"),
            },
            known: names.join(", "),
        })
    }

    /// Expands a family list (`famA;famB` or `famA,famB`) to the union of its targets, in
    /// order, without repeats.
    pub fn expand_families(&self, list: &str) -> Result<Vec<Target>, NameError> {
        let mut out: Vec<Target> = Vec::new();
        for name in split_list(list) {
            for target in &self.family_named(name)?.targets {
                if !out.contains(target) {
                    out.push(target.clone());
                }
            }
        }
        if out.is_empty() {
            return Err(NameError::Empty);
        }
        Ok(out)
    }

    /// Whether flash-attention supports at least one of `targets` (the reference's F21 rule,
    /// expressed through the table's per-family flag).
    pub fn any_flash_attention(&self, targets: &[Target]) -> bool {
        targets
            .iter()
            .any(|t| self.family_of(t).is_some_and(|f| f.flash_attention))
    }

    /// The family whose name starts with `given`, in any case, with or without its `X`:
    /// `gfx94x`, `gfx94X` and `gfx94` all mean `gfx94X-dcgpu`.
    fn family_by_stem(&self, given: &str) -> Option<&Family> {
        let lowered = given.trim().to_ascii_lowercase();
        if lowered.is_empty() {
            return None;
        }
        self.families().find(|f| {
            let stem = f
                .name
                .split('-')
                .next()
                .unwrap_or(&f.name)
                .to_ascii_lowercase();
            stem == lowered || stem.strip_suffix('x') == Some(lowered.as_str())
        })
    }

    fn family_ignoring_case(&self, given: &str) -> Option<&Family> {
        self.families().find(|f| f.name.eq_ignore_ascii_case(given))
    }
}

/// The last non-empty path segment of a URL (query and fragment dropped): `gfx110X-all` of
/// `https://rocm.nightlies.amd.com/v2/gfx110X-all/`.
pub fn last_segment(url: &str) -> &str {
    let url = url.split(['?', '#']).next().unwrap_or_default();
    let path = url
        .split_once("://")
        .map_or(url, |(_, rest)| rest.split_once('/').map_or("", |(_, p)| p));
    path.split('/').rfind(|s| !s.is_empty()).unwrap_or_default()
}

/// Splits `a,b;c` lists, as the reference accepts both separators.
pub fn split_list(list: &str) -> impl Iterator<Item = &str> {
    list.split([',', ';', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

pub fn join(targets: &[Target]) -> String {
    targets
        .iter()
        .map(Target::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

fn suggestion<'a>(
    given: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    kind: &str,
) -> String {
    did_you_mean(given, candidates)
        .map(|best| format!(" (did you mean {kind} '{best}'?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> FamilyTable {
        FamilyTable::load(&ConfigSource::embedded(
            "configs/families.yaml",
            include_str!("../../configs/families.yaml"),
        ))
        .expect("the shipped table loads")
    }

    #[test]
    fn shipped_table_matches_the_reference_counts() {
        let table = table();
        assert_eq!(table.families().count(), 16);
        assert_eq!(table.all_targets().count(), 28);
        assert_eq!(
            join(
                &table
                    .expand_families("gfx110X-all;gfx94X-dcgpu")
                    .expect("expands")
            ),
            "gfx1100,gfx1101,gfx1102,gfx1103,gfx942"
        );
        assert_eq!(
            table
                .families()
                .find(|f| f.name == "gfx90c")
                .expect("gfx90c")
                .linux
                .as_ref()
                .expect("linux")
                .excluded_refs,
            ["release/2.13", "release/2.14"]
        );
    }

    #[test]
    fn index_url_template_names_each_family() {
        let table = table();
        assert_eq!(table.index_layout(), IndexLayout::LegacyPerFamily);
        assert_eq!(table.index_layout().label(), "legacy per-family index");
        let error = FamilyTable::load(&ConfigSource {
            name: "families.yaml".into(),
            text: "schema: 1\nindex-layout: multi\nfamilies: {}\n".into(),
        })
        .expect_err("unknown layout");
        assert!(error.to_string().starts_with("families.yaml:2"), "{error}");
        let family = table.family_named("gfx1151").expect("family");
        assert_eq!(
            table.index_url(family).as_deref(),
            Some("https://rocm.nightlies.amd.com/v2/gfx1151/")
        );
        let error = FamilyTable::load(&ConfigSource {
            name: "families.yaml".into(),
            text: "schema: 1\nindex-url: https://example.com/v2/\nfamilies: {}\n".into(),
        })
        .expect_err("no placeholder");
        assert_eq!(
            error.to_string(),
            "families.yaml:2: index-url 'https://example.com/v2/' has no {family} to put the family name in"
        );
    }

    #[test]
    fn the_multi_arch_index_is_one_url_and_index_urls_say_their_kind() {
        let table = table();
        assert_eq!(
            table.multi_arch_index_url(),
            Some("https://rocm.nightlies.amd.com/whl-multi-arch/")
        );
        let cases = [
            (
                "https://rocm.nightlies.amd.com/v2/gfx110X-all/",
                IndexKind::PerFamily {
                    family: "gfx110X-all".into(),
                },
            ),
            (
                "https://rocm.nightlies.amd.com/whl-multi-arch/",
                IndexKind::MultiArch,
            ),
            // Another channel of the same layout, without its trailing slash.
            (
                "https://repo.amd.com/rocm/whl-multi-arch",
                IndexKind::MultiArch,
            ),
            ("http://127.0.0.1:8080/simple/", IndexKind::Unknown),
            ("https://pypi.org/", IndexKind::Unknown),
        ];
        for (url, kind) in cases {
            assert_eq!(table.index_kind(url), kind, "{url}");
        }
        let load = |text: &str| {
            FamilyTable::load(&ConfigSource {
                name: "families.yaml".into(),
                text: text.into(),
            })
        };
        assert_eq!(
            load("schema: 1\nmulti-arch-index-url: https://x/v2/{family}/\nfamilies: {}\n")
                .expect_err("a template")
                .to_string(),
            "families.yaml:2: multi-arch-index-url 'https://x/v2/{family}/' has {family} in it: the multi-arch index is one URL for every family (the per-family template goes in index-url)"
        );
        assert_eq!(
            load("schema: 1\nindex-url: https://x/v2/{family}/\nindex-layout: multi-arch\nfamilies: {}\n")
                .expect_err("no multi-arch URL")
                .to_string(),
            "families.yaml:3: index-layout: multi-arch needs multi-arch-index-url (the one index of every family, e.g. https://rocm.nightlies.amd.com/whl-multi-arch/)"
        );
        // A multi-arch table names its one index for every family.
        let multi = load(
            "schema: 1\nindex-url: https://x/v2/{family}/\nmulti-arch-index-url: https://x/whl-multi-arch/\nindex-layout: multi-arch\nfamilies:\n  gfx906:\n    targets: [gfx906]\n    flash-attention: false\n    tier: nightly\n",
        )
        .expect("loads");
        let family = multi.family_named("gfx906").expect("family");
        assert_eq!(
            multi.index_url(family).as_deref(),
            Some("https://x/whl-multi-arch/")
        );
        assert_eq!(
            multi.per_family_index_url(family).as_deref(),
            Some("https://x/v2/gfx906/")
        );
    }

    #[test]
    fn targets_parse_in_order_without_repeats() {
        let table = table();
        assert_eq!(
            join(&table.targets("gfx906,gfx1030;gfx906").expect("parses")),
            "gfx906,gfx1030"
        );
        assert_eq!(table.targets(" , "), Err(NameError::Empty));
    }

    #[test]
    fn wrong_names_suggest_the_right_one() {
        let table = table();
        let cases = [
            (
                table.target("gfx94x").expect_err("family stem").to_string(),
                "unknown gfx target 'gfx94x': did you mean family 'gfx94X-dcgpu' (targets gfx942)?",
            ),
            (
                table
                    .target("gfx94")
                    .expect_err("stem without X")
                    .to_string(),
                "unknown gfx target 'gfx94': did you mean family 'gfx94X-dcgpu' (targets gfx942)?",
            ),
            (
                table
                    .family_named("gfx94")
                    .expect_err("stem without X")
                    .to_string()
                    .split(';')
                    .next()
                    .expect("first part")
                    .to_string(),
                "unknown GPU family 'gfx94' (did you mean 'gfx94X-dcgpu'?)",
            ),
            (
                table.target("gfx110X-all").expect_err("family").to_string(),
                "'gfx110X-all' is a GPU family, not a gfx target: pass --amdgpu-family gfx110X-all (targets gfx1100,gfx1101,gfx1102,gfx1103)",
            ),
            (
                table
                    .family_named("gfx942")
                    .expect_err("target")
                    .to_string(),
                "'gfx942' is a gfx target, not a GPU family: its family is 'gfx94X-dcgpu' (pass --pytorch-rocm-arch gfx942 to build only that target)",
            ),
            (
                table
                    .family_named("gfx94x-dcgpu")
                    .expect_err("case")
                    .to_string()
                    .split(';')
                    .next()
                    .expect("first part")
                    .to_string(),
                "unknown GPU family 'gfx94x-dcgpu' (did you mean 'gfx94X-dcgpu'?)",
            ),
            (
                table
                    .family_named("gfx94X")
                    .expect_err("stem")
                    .to_string()
                    .split(';')
                    .next()
                    .expect("first part")
                    .to_string(),
                "unknown GPU family 'gfx94X' (did you mean 'gfx94X-dcgpu'?)",
            ),
            (
                table
                    .target("gfx1301")
                    .expect_err("typo")
                    .to_string()
                    .split(';')
                    .next()
                    .expect("first part")
                    .to_string(),
                "unknown gfx target 'gfx1301' (did you mean target 'gfx1031'?)",
            ),
        ];
        for (got, want) in cases {
            assert_eq!(got, want);
        }
        // gfx1151 is both a family and its only target.
        assert_eq!(table.target("gfx1151").expect("target").as_str(), "gfx1151");
        assert_eq!(
            table.family_named("gfx1151").expect("family").name,
            "gfx1151"
        );
    }

    #[test]
    fn flash_attention_follows_the_reference_prefix_rule() {
        let table = table();
        // F21: ON iff a target starts with gfx90a, gfx942, gfx950, gfx11 or gfx12.
        for target in table.all_targets() {
            let name = target.as_str();
            let prefix_rule = ["gfx90a", "gfx942", "gfx950", "gfx11", "gfx12"]
                .iter()
                .any(|p| name.starts_with(p));
            assert_eq!(
                table.any_flash_attention(std::slice::from_ref(target)),
                prefix_rule,
                "{name}"
            );
        }
    }

    #[test]
    fn table_errors_are_located() {
        let source = ConfigSource {
            name: "f.yaml".into(),
            text: "schema: 1\nfamilies:\n  a:\n    targets: [gfx942]\n    flash-attention: true\n    tier: nightly\n  b:\n    targets: [gfx942]\n    flash-attention: true\n    tier: nightly\n".into(),
        };
        assert_eq!(
            FamilyTable::load(&source)
                .expect_err("duplicate")
                .to_string(),
            "f.yaml:8: target gfx942 is in both 'a' and 'b'"
        );
    }

    #[test]
    fn target_shape() {
        for ok in ["gfx90a", "gfx942", "gfx1151", "gfx1250", "gfx90c"] {
            assert!(is_target_shaped(ok), "{ok}");
        }
        for bad in ["gfx94X", "gfx94x-dcgpu", "gfx94", "sm_80", "gfx11511"] {
            assert!(!is_target_shaped(bad), "{bad}");
        }
    }
}
