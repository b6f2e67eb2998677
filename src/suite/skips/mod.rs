//! Skip lists as data (configs/skip-tests/*.yaml): which PyTorch tests a run skips, and which
//! test modules it must not start (the hang list), by PyTorch version, GPU target or family and
//! platform.
//!
//! Selection is a pure function of the lists and the facts of one run ([`RunFacts`]). Unlike
//! TheRock's `create_skip_tests.py` (F36, W12), a section applies only on an exact match of its
//! key — a target, an explicit `prefix*`, a family of configs/families.yaml, a platform — and
//! the `-k` expression is deterministic: names sorted, each once, and no `-k` at all when
//! nothing is skipped (the reference would emit `-k "not "`).

use std::fmt;
use std::fmt::Write as _;
use std::path::Path;

use indexmap::IndexMap;
use serde::Serialize;

use crate::stack::{ConfigError, ConfigSource, FamilyTable};

mod load;

/// The shipped skip lists, compiled in. A unit test keeps this list equal to the directory.
const BUILTIN: &[(&str, &str)] = &[
    (
        "configs/skip-tests/generic.yaml",
        include_str!("../../../configs/skip-tests/generic.yaml"),
    ),
    (
        "configs/skip-tests/pytorch-2.12.yaml",
        include_str!("../../../configs/skip-tests/pytorch-2.12.yaml"),
    ),
    (
        "configs/skip-tests/pytorch-2.13.yaml",
        include_str!("../../../configs/skip-tests/pytorch-2.13.yaml"),
    ),
];

/// A PyTorch release line: skip lists and the source/wheel check compare only these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MajorMinor {
    pub major: u64,
    pub minor: u64,
}

impl MajorMinor {
    /// From a PEP 440 version (`2.10.0a0+git1234567`) or a bare `2.10`.
    pub fn of_version(text: &str) -> Option<Self> {
        let version: pep440_rs::Version = text.trim().parse().ok()?;
        let release = version.release();
        Some(MajorMinor {
            major: *release.first()?,
            minor: release.get(1).copied().unwrap_or(0),
        })
    }

    /// Exactly `X.Y`, as the skip lists and `--pytorch-version` write it.
    pub fn parse(text: &str) -> Option<Self> {
        let (major, minor) = text.trim().split_once('.')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) {
            return None;
        }
        Some(MajorMinor {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }
}

impl fmt::Display for MajorMinor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for MajorMinor {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The operating system a test run is on.
pub use crate::platform::Platform;

/// When a section of a skip list applies: the key of the section, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum When {
    Common,
    Platform(Platform),
    Target(String),
    /// Every target starting with this (the key without its `*`).
    Prefix(String),
    Family {
        name: String,
        targets: Vec<String>,
    },
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            When::Common => f.write_str("common"),
            When::Platform(platform) => write!(f, "{platform}"),
            When::Target(target) => f.write_str(target),
            When::Prefix(prefix) => write!(f, "{prefix}*"),
            When::Family { name, .. } => f.write_str(name),
        }
    }
}

/// Which PyTorch versions a file is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Versions {
    All,
    Only(Vec<MajorMinor>),
}

/// One section of a file's `skip:` (test names by module) or `hang:` (test modules).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub when: When,
    /// `skip:` sections: module -> test names, in file order.
    pub tests: IndexMap<String, Vec<String>>,
    /// `hang:` sections: test modules (`nn/test_convolution`).
    pub modules: Vec<String>,
}

/// One skip-list file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipFile {
    pub name: String,
    pub versions: Versions,
    pub skip: Vec<Section>,
    pub hang: Vec<Section>,
}

/// Every skip-list file of a run, in name order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipLists {
    pub files: Vec<SkipFile>,
}

impl SkipLists {
    /// The shipped lists.
    pub fn builtin(families: &FamilyTable) -> Result<Self, ConfigError> {
        let sources: Vec<ConfigSource> = BUILTIN
            .iter()
            .map(|(name, text)| ConfigSource::embedded(name, text))
            .collect();
        Self::load(&sources, families)
    }

    /// Every `*.yaml` file of a directory, instead of the shipped lists.
    pub fn read_dir(dir: &Path, families: &FamilyTable) -> anyhow::Result<Self> {
        let mut paths: Vec<_> = fs_err::read_dir(dir)
            .map_err(|e| crate::suite::Error::Flag {
                flag: "--skip-lists",
                message: e.to_string(),
            })?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(crate::suite::Error::Flag {
                flag: "--skip-lists",
                message: format!("{}: no .yaml files in the directory", dir.display()),
            }
            .into());
        }
        let sources = paths
            .iter()
            .map(|path| ConfigSource::read(path))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self::load(&sources, families).map_err(crate::exit::Classified::from)?)
    }

    pub fn load(sources: &[ConfigSource], families: &FamilyTable) -> Result<Self, ConfigError> {
        let mut files = sources
            .iter()
            .map(|source| load::parse_file(source, families))
            .collect::<Result<Vec<_>, _>>()?;
        files.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(SkipLists { files })
    }
}

/// The facts of a run that decide which sections apply.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RunFacts {
    pub pytorch: MajorMinor,
    pub platform: Platform,
    /// The gfx targets under test; `None` when not known (no GPU query, no --amdgpu-family).
    pub targets: Option<Vec<String>>,
    /// The GPU family named for the run (`--amdgpu-family`), if any.
    pub family: Option<String>,
}

/// Whether a file or section applies, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "applies", content = "reason")]
pub enum Match {
    Yes(String),
    No(String),
    /// Depends on the targets under test, which are not known.
    Undecided(String),
}

impl Match {
    pub fn applies(&self) -> bool {
        matches!(self, Match::Yes(_))
    }

    fn word(&self) -> &'static str {
        match self {
            Match::Yes(_) => "applies",
            Match::No(_) => "does not apply",
            Match::Undecided(_) => "undecided",
        }
    }

    fn reason(&self) -> &str {
        match self {
            Match::Yes(reason) | Match::No(reason) | Match::Undecided(reason) => reason,
        }
    }
}

/// What one section contributes to a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SectionMatch {
    /// `skip` or `hang`.
    pub list: &'static str,
    pub when: String,
    #[serde(flatten)]
    pub decision: Match,
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub tests: IndexMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileMatch {
    pub file: String,
    #[serde(flatten)]
    pub decision: Match,
    pub sections: Vec<SectionMatch>,
}

/// The skip lists applied to one run: every file and section with its decision, the test
/// names to skip and the modules to exclude.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkipSelection {
    pub facts: RunFacts,
    pub files: Vec<FileMatch>,
    /// Test names from every applying `skip:` section, sorted, each once.
    pub names: Vec<String>,
    /// Test modules from every applying `hang:` section, sorted, each once.
    pub hangs: Vec<String>,
}

/// Decides every file and section for a run.
pub fn select(lists: &SkipLists, facts: &RunFacts) -> SkipSelection {
    let mut names = Vec::new();
    let mut hangs = Vec::new();
    let files = lists
        .files
        .iter()
        .map(|file| {
            let file_match = match &file.versions {
                Versions::All => Match::Yes("every PyTorch version".into()),
                Versions::Only(versions) if versions.contains(&facts.pytorch) => {
                    Match::Yes(format!("PyTorch {}", facts.pytorch))
                }
                Versions::Only(versions) => Match::No(format!(
                    "for PyTorch {}; this run is {}",
                    versions
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    facts.pytorch
                )),
            };
            let mut sections = Vec::new();
            for (list, group) in [("skip", &file.skip), ("hang", &file.hang)] {
                for section in group {
                    let decision = match &file_match {
                        Match::Yes(_) => decide(&section.when, facts),
                        _ => Match::No("the file does not apply".into()),
                    };
                    if decision.applies() {
                        names.extend(section.tests.values().flatten().cloned());
                        hangs.extend(section.modules.iter().cloned());
                    }
                    sections.push(SectionMatch {
                        list,
                        when: section.when.to_string(),
                        decision,
                        tests: section.tests.clone(),
                        modules: section.modules.clone(),
                    });
                }
            }
            FileMatch {
                file: file.name.clone(),
                decision: file_match,
                sections,
            }
        })
        .collect();
    names.sort();
    names.dedup();
    hangs.sort();
    hangs.dedup();
    SkipSelection {
        facts: facts.clone(),
        files,
        names,
        hangs,
    }
}

fn decide(when: &When, facts: &RunFacts) -> Match {
    let unknown = || {
        Match::Undecided(
            "the targets under test are not known (no GPU query; pass --amdgpu-family)".into(),
        )
    };
    match when {
        When::Common => Match::Yes("always".into()),
        When::Platform(platform) if *platform == facts.platform => {
            Match::Yes(format!("the platform is {platform}"))
        }
        When::Platform(_) => Match::No(format!("the platform is {}", facts.platform)),
        When::Target(target) => match &facts.targets {
            None => unknown(),
            Some(targets) if targets.contains(target) => {
                Match::Yes(format!("{target} is under test"))
            }
            Some(targets) => Match::No(format!("targets under test: {}", targets.join(", "))),
        },
        When::Prefix(prefix) => match &facts.targets {
            None => unknown(),
            Some(targets) => match targets.iter().find(|t| t.starts_with(prefix.as_str())) {
                Some(target) => Match::Yes(format!("{target} starts with {prefix}")),
                None => Match::No(format!("targets under test: {}", targets.join(", "))),
            },
        },
        When::Family { name, targets: own } => {
            if facts.family.as_deref() == Some(name.as_str()) {
                return Match::Yes(format!("--amdgpu-family {name}"));
            }
            match &facts.targets {
                None => unknown(),
                Some(targets) => match targets.iter().find(|t| own.contains(t)) {
                    Some(target) => Match::Yes(format!("{target} is in family {name}")),
                    None => Match::No(format!("targets under test: {}", targets.join(", "))),
                },
            }
        }
    }
}

/// How the selected names filter a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KMode {
    /// Run everything except the listed tests (the release gate).
    Skip,
    /// Run only the listed tests (to see whether skipped tests pass again; TheRock's --debug).
    Only,
}

/// The pytest `-k` expression for `names` (already sorted and unique), or `None` when there
/// is nothing to filter: an empty expression would be invalid (`-k "not "`, W12).
pub fn k_expression(names: &[String], mode: KMode) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    Some(match mode {
        KMode::Skip => names
            .iter()
            .map(|name| format!("not {name}"))
            .collect::<Vec<_>>()
            .join(" and "),
        KMode::Only => names.join(" or "),
    })
}

impl SkipSelection {
    /// `rockbuild test --print-skips`: every file and section, whether it applies and why,
    /// what the applying ones contribute, and the resulting filter.
    pub fn to_text(&self, mode: KMode, present_hangs: Option<&[String]>) -> String {
        let facts = &self.facts;
        let mut out = format!(
            "skip lists for PyTorch {} on {}, targets {}{}\n",
            facts.pytorch,
            facts.platform,
            facts
                .targets
                .as_ref()
                .map_or_else(|| "unknown".to_string(), |t| t.join(", ")),
            facts
                .family
                .as_ref()
                .map(|f| format!(" (family {f})"))
                .unwrap_or_default()
        );
        for file in &self.files {
            let _ = writeln!(
                out,
                "\n{}: {} ({})",
                file.file,
                file.decision.word(),
                file.decision.reason()
            );
            for section in &file.sections {
                let count = if section.list == "skip" {
                    section.tests.values().map(Vec::len).sum::<usize>()
                } else {
                    section.modules.len()
                };
                let what = if section.list == "skip" {
                    "test"
                } else {
                    "module"
                };
                let _ = writeln!(
                    out,
                    "  {} {}: {} ({}); {count} {what}{}",
                    section.list,
                    section.when,
                    section.decision.word(),
                    section.decision.reason(),
                    crate::ui::plural(count)
                );
                if !section.decision.applies() {
                    continue;
                }
                for (module, names) in &section.tests {
                    let _ = writeln!(out, "    {module}:");
                    for name in names {
                        let _ = writeln!(out, "      {name}");
                    }
                }
                for module in &section.modules {
                    let _ = writeln!(out, "    {module}");
                }
            }
        }
        let verb = match mode {
            KMode::Skip => "skipped",
            KMode::Only => "run (only these; --only-skipped)",
        };
        let _ = writeln!(out, "\n{} test names {verb}", self.names.len());
        match k_expression(&self.names, mode) {
            Some(k) => {
                let _ = writeln!(out, "  -k {k}");
            }
            None => out.push_str("  no -k filter\n"),
        }
        match present_hangs {
            Some(present) => {
                let _ = writeln!(
                    out,
                    "{} of {} hang-listed modules are in the checkout and excluded: {}",
                    present.len(),
                    self.hangs.len(),
                    if present.is_empty() {
                        "none".to_string()
                    } else {
                        present.join(", ")
                    }
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "{} hang-listed modules, excluded where the checkout has them: {}",
                    self.hangs.len(),
                    if self.hangs.is_empty() {
                        "none".to_string()
                    } else {
                        self.hangs.join(", ")
                    }
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> FamilyTable {
        crate::stack::load_families(None).expect("families")
    }

    #[test]
    fn a_skip_list_directory_without_lists_is_a_usage_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let error = SkipLists::read_dir(dir.path(), &families()).expect_err("empty directory");
        assert_eq!(
            error.to_string(),
            format!(
                "--skip-lists: {}: no .yaml files in the directory",
                dir.path().display()
            )
        );
        let typed = error
            .downcast_ref::<crate::suite::Error>()
            .expect("a suite error");
        assert_eq!(
            crate::exit::HasExitStatus::exit_status(typed),
            crate::exit::ExitStatus::Usage
        );
    }

    fn source(text: &str) -> ConfigSource {
        ConfigSource {
            name: "skips.yaml".into(),
            text: text.into(),
        }
    }

    fn load(text: &str) -> Result<SkipLists, ConfigError> {
        SkipLists::load(&[source(text)], &families())
    }

    fn facts(version: &str, targets: Option<&[&str]>, family: Option<&str>) -> RunFacts {
        RunFacts {
            pytorch: MajorMinor::parse(version).expect("version"),
            platform: Platform::Linux,
            targets: targets.map(|t| t.iter().map(ToString::to_string).collect()),
            family: family.map(String::from),
        }
    }

    const LIST: &str = "\
schema: 1
pytorch: [\"2.12\"]
skip:
  common:
    torch: [test_print]
  gfx950:
    cuda: [test_only_gfx950]
  gfx94*:
    cuda: [test_prefix_gfx94]
  gfx110X-all:
    nn: [test_family_navi3]
  windows:
    torch: [test_windows_only]
hang:
  gfx94X-dcgpu:
    - nn/test_convolution
";

    #[test]
    fn builtin_lists_match_the_directory_and_load() {
        let mut on_disk: Vec<String> =
            fs_err::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/skip-tests"))
                .expect("dir")
                .map(|e| {
                    format!(
                        "configs/skip-tests/{}",
                        e.expect("entry").file_name().to_string_lossy()
                    )
                })
                .collect();
        on_disk.sort();
        let builtin: Vec<&str> = BUILTIN.iter().map(|(name, _)| *name).collect();
        assert_eq!(builtin, on_disk, "BUILTIN must list every shipped file");
        let lists = SkipLists::builtin(&families()).expect("builtin lists load");
        let names = |file: usize| -> usize {
            lists.files[file]
                .skip
                .iter()
                .flat_map(|s| s.tests.values())
                .map(Vec::len)
                .sum()
        };
        // TheRock's counts (F36), with W3's concatenated name split into its two tests.
        assert_eq!((names(0), names(1), names(2)), (113, 172, 8));
        assert_eq!(lists.files[0].hang[0].modules.len(), 6);
    }

    #[test]
    fn w3_both_names_are_skipped_on_windows() {
        let lists = SkipLists::builtin(&families()).expect("lists");
        let mut windows = facts("2.12", Some(&["gfx1151"]), None);
        windows.platform = Platform::Windows;
        let selection = select(&lists, &windows);
        for name in [
            "test_memory_format_operators_cuda",
            "test_grad_scale_will_not_overflow_cuda",
        ] {
            assert!(selection.names.iter().any(|n| n == name), "{name}");
        }
        assert!(
            !select(&lists, &facts("2.12", Some(&["gfx1151"]), None))
                .names
                .iter()
                .any(|n| n == "test_memory_format_operators_cuda"),
            "the Windows section does not apply on Linux"
        );
    }

    /// Which test names each run gets: version, exact target, prefix, family, platform.
    #[test]
    fn selection_table() {
        let lists = load(LIST).expect("load");
        // (version, targets under test, --amdgpu-family, names skipped, modules excluded)
        type Case<'a> = (
            &'a str,
            Option<&'a [&'a str]>,
            Option<&'a str>,
            &'a [&'a str],
            &'a [&'a str],
        );
        let cases: &[Case] = &[
            // Another version: the file does not apply at all.
            ("2.13", Some(&["gfx942"]), None, &[], &[]),
            // No targets known: only common (and the platform).
            ("2.12", None, None, &["test_print"], &[]),
            (
                "2.12",
                Some(&["gfx942"]),
                None,
                &["test_prefix_gfx94", "test_print"],
                &["nn/test_convolution"],
            ),
            // gfx950 is exact: it does not hit gfx95x prefixes nor the gfx94 prefix.
            (
                "2.12",
                Some(&["gfx950"]),
                None,
                &["test_only_gfx950", "test_print"],
                &[],
            ),
            // A family section applies through one of its targets, or through --amdgpu-family.
            (
                "2.12",
                Some(&["gfx1101"]),
                None,
                &["test_family_navi3", "test_print"],
                &[],
            ),
            (
                "2.12",
                None,
                Some("gfx110X-all"),
                &["test_family_navi3", "test_print"],
                &[],
            ),
            (
                "2.12",
                Some(&["gfx942", "gfx1100"]),
                None,
                &["test_family_navi3", "test_prefix_gfx94", "test_print"],
                &["nn/test_convolution"],
            ),
            // Substrings do not match: gfx1 is not gfx1100's section, gfx90a is not gfx9*.
            ("2.12", Some(&["gfx90a"]), None, &["test_print"], &[]),
        ];
        for (version, targets, family, names, hangs) in cases {
            let selection = select(&lists, &facts(version, *targets, *family));
            assert_eq!(
                (selection.names.as_slice(), selection.hangs.as_slice()),
                (
                    &names.iter().map(ToString::to_string).collect::<Vec<_>>()[..],
                    &hangs.iter().map(ToString::to_string).collect::<Vec<_>>()[..]
                ),
                "version {version}, targets {targets:?}, family {family:?}"
            );
        }
    }

    #[test]
    fn k_expressions_are_sorted_and_never_empty() {
        let lists = load(
            "schema: 1\npytorch: all\nskip:\n  common:\n    b: [test_z, test_a]\n    a: [test_m, test_a]\n",
        )
        .expect("load");
        let selection = select(&lists, &facts("2.9", None, None));
        assert_eq!(selection.names, ["test_a", "test_m", "test_z"]);
        assert_eq!(
            k_expression(&selection.names, KMode::Skip).as_deref(),
            Some("not test_a and not test_m and not test_z")
        );
        assert_eq!(
            k_expression(&selection.names, KMode::Only).as_deref(),
            Some("test_a or test_m or test_z")
        );
        assert_eq!(k_expression(&[], KMode::Skip), None);
        assert_eq!(k_expression(&[], KMode::Only), None);
    }

    #[test]
    fn bad_lists_are_errors_with_lines() {
        let cases: &[(&str, &str)] = &[
            (
                "schema: 1\npytorch: all\nskip:\n  gfx94:\n    cuda: [test_a]\n",
                "skips.yaml:4: section `gfx94` is not common, linux, windows, a gfx target (gfx950), a target prefix (gfx94*) or a GPU family (gfx94X-dcgpu); for every target starting with gfx94, write `gfx94*` (sections match exactly, not as substrings)",
            ),
            (
                "schema: 1\npytorch: all\nskip:\n  gfx94x-dcgpu:\n    cuda: [test_a]\n",
                "skips.yaml:4: section `gfx94x-dcgpu` is not common, linux, windows, a gfx target (gfx950), a target prefix (gfx94*) or a GPU family (gfx94X-dcgpu) (did you mean `gfx94X-dcgpu`?)",
            ),
            (
                "schema: 1\npytorch: all\nskip:\n  gfx99*:\n    cuda: [test_a]\n",
                "skips.yaml:4: section `gfx99*` matches no gfx target of the family table",
            ),
            (
                "schema: 1\npytorch: all\nskip:\n  common:\n    torch:\n      # a comment\n      - test_a\n      - \"test_memory_format_operators_cuda test_grad_scale\"\n",
                "skips.yaml:8: `test_memory_format_operators_cuda test_grad_scale` contains a space: two names on one line? Write each as its own `- name` item (TheRock lost two tests to a missing comma, W3)",
            ),
            (
                "schema: 1\npytorch: all\nskip:\n  common:\n    torch:\n      - test_a\n      - test_b\n      - test_a\n",
                "skips.yaml:8: `test_a` is listed twice under common/torch (first at line 6)",
            ),
            (
                "schema: 1\npytorch: [2.10]\nskip:\n  common:\n    torch: [test_a]\n",
                "skips.yaml:2: pytorch: write the version 2.1 in quotes (\"2.10\"): YAML reads 2.10 as the number 2.1",
            ),
            (
                "schema: 1\npytorch: all\nskip:\n  common:\n    torch: [not]\n",
                "skips.yaml:5: `not` is a pytest -k operator, not a test name",
            ),
            (
                "schema: 1\npytorch: all\nskipp:\n  common:\n    torch: [test_a]\n",
                "skips.yaml:3:1: unknown field `skipp` (did you mean `skip`?), expected one of `schema`, `pytorch`, `skip`, `hang`",
            ),
            (
                "schema: 1\npytorch: all\nhang:\n  common:\n    - nn/test convolution\n",
                "skips.yaml:5: `nn/test convolution` is not a test module path like `nn/test_convolution` (letters, digits, _ and /)",
            ),
            (
                "schema: 2\npytorch: all\nhang:\n  common: [a]\n",
                "skips.yaml:1: unsupported schema 2 (this rockbuild reads schema 1)",
            ),
        ];
        for (text, expected) in cases {
            let error = load(text).expect_err(text);
            assert_eq!(error.to_string(), *expected, "{text}");
        }
    }

    #[test]
    fn print_skips_explains_every_section() {
        let lists = load(LIST).expect("load");
        let selection = select(&lists, &facts("2.12", Some(&["gfx942"]), None));
        insta::assert_snapshot!(
            selection.to_text(KMode::Skip, Some(&["nn/test_convolution".to_string()]))
        );
        let unknown = select(&lists, &facts("2.13", None, None));
        insta::assert_snapshot!(
            "print_skips_other_version",
            unknown.to_text(KMode::Skip, None)
        );
    }

    #[test]
    fn versions_parse_from_wheels_and_sources() {
        assert_eq!(
            MajorMinor::of_version("2.10.0a0+git1234567").map(|v| v.to_string()),
            Some("2.10".into())
        );
        assert_eq!(
            MajorMinor::parse("2.12").map(|v| v.to_string()),
            Some("2.12".into())
        );
        assert_eq!(MajorMinor::parse("2.12.1"), None);
        assert_eq!(MajorMinor::parse("x.1"), None);
    }
}
