//! The release table (configs/releases.yaml): per release type, the Python versions and
//! PyTorch refs built, the families, the test configurations that gate promotion and whether
//! anything is published. Validated against the family table at load, every error located at
//! `file:line`.

use std::fmt;
use std::str::FromStr;

use indexmap::IndexMap;
use serde::Deserialize;

use crate::stack::families::Tier;
use crate::stack::source::did_you_mean;
use crate::stack::{ConfigError, ConfigSource, FamilyTable, NameError};
use crate::version::ReleaseType;

/// The shipped release table, compiled in like the family table.
pub const DEFAULT_RELEASES: &str = include_str!("../../configs/releases.yaml");

/// A CPython version as the build image names it: `3.12`, or `3.13t` for a free-threaded build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Python {
    pub minor: u32,
    pub free_threaded: bool,
}

impl Python {
    /// The interpreter's directory name in a manylinux image (`/opt/python/<tag>`), which is
    /// also the wheel's `python-abi` tag pair: `cp312-cp312`, `cp313-cp313t`.
    pub fn cpython_tag(self) -> String {
        let t = if self.free_threaded { "t" } else { "" };
        format!("cp3{0}-cp3{0}{t}", self.minor)
    }
}

impl FromStr for Python {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("'{text}' is not a CPython version such as 3.12 or 3.13t");
        let rest = text.strip_prefix("3.").ok_or_else(bad)?;
        let (digits, free_threaded) = match rest.strip_suffix('t') {
            Some(digits) => (digits, true),
            None => (rest, false),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 2 {
            return Err(bad());
        }
        let minor = digits.parse().map_err(|_| bad())?;
        Ok(Python {
            minor,
            free_threaded,
        })
    }
}

impl fmt::Display for Python {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = if self.free_threaded { "t" } else { "" };
        write!(f, "3.{}{t}", self.minor)
    }
}

impl serde::Serialize for Python {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Which runner label of a family a test configuration runs on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RunnerKind {
    /// The family's `test-runner` (one GPU).
    #[default]
    Test,
    /// The family's `multi-gpu-runner`.
    MultiGpu,
}

/// A test configuration and its shards (F42).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestConfig {
    pub name: String,
    pub shards: u32,
    pub runner: RunnerKind,
}

/// One test configuration as a release type runs it: on which Pythons and families
/// (`None`: all of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestRule {
    pub config: TestConfig,
    pub python: Option<Vec<Python>>,
    pub families: Option<Vec<String>>,
}

impl TestRule {
    pub fn covers(&self, python: Python, family: &str) -> bool {
        self.python
            .as_ref()
            .is_none_or(|list| list.contains(&python))
            && self
                .families
                .as_ref()
                .is_none_or(|list| list.iter().any(|f| f == family))
    }
}

/// What one release type builds and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    pub release_type: ReleaseType,
    pub python: Vec<Python>,
    pub pytorch_refs: Vec<String>,
    /// Family names, in family-table order.
    pub families: Vec<String>,
    pub tests: Vec<TestRule>,
    pub publish: bool,
    /// The sccache key prefix's first segment (F32: one cache per kind of build).
    pub cache: String,
    /// Also built on Windows (the `windows:` column): the same Pythons and tests, for the
    /// families with a windows entry in the family table, on its runners.
    pub windows: bool,
    /// The refs built on Windows (`windows-pytorch-refs`, as the reference's generator keeps
    /// one ref list per platform); `None`: the same as `pytorch_refs`.
    pub windows_refs: Option<Vec<String>>,
}

impl Release {
    /// The refs the table builds on Windows.
    pub fn windows_refs(&self) -> &[String] {
        self.windows_refs.as_deref().unwrap_or(&self.pytorch_refs)
    }
}

/// The whole table, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReleaseTable {
    /// Where it was read from, for messages.
    pub source_name: String,
    releases: Vec<Release>,
    test_configs: IndexMap<String, TestConfig>,
    full_tests: Vec<TestRule>,
}

impl ReleaseTable {
    pub fn release(&self, release_type: ReleaseType) -> Option<&Release> {
        self.releases
            .iter()
            .find(|r| r.release_type == release_type)
    }

    /// A test configuration of `test-configs` (its shard count is the one `rockbuild
    /// test-report` expects).
    pub fn test_config(&self, name: &str) -> Option<&TestConfig> {
        self.test_configs.get(name)
    }

    /// `full-tests`: what `--full-tests` adds to any publishing release type (TheRock #5780,
    /// #6846: the full suite dispatched per ref when opted in).
    pub fn full_tests(&self) -> &[TestRule] {
        &self.full_tests
    }

    pub fn load(source: &ConfigSource, families: &FamilyTable) -> Result<Self, ConfigError> {
        let file: ReleasesFile = source.parse()?;
        source.check_schema(file.schema)?;
        let mut configs = IndexMap::new();
        for (name, entry) in file.test_configs {
            if !(1..=MAX_SHARDS).contains(&entry.shards) {
                return Err(source.error_at(
                    &["test-configs", &name, "shards"],
                    format!(
                        "test config '{name}' has {} shards; give 1 to {MAX_SHARDS}",
                        entry.shards
                    ),
                ));
            }
            configs.insert(
                name.clone(),
                TestConfig {
                    name,
                    shards: entry.shards,
                    runner: entry.runner,
                },
            );
        }
        let full = Checker {
            source,
            families,
            configs: &configs,
            key: "",
            root: &["full-tests"],
        };
        let mut full_tests = Vec::new();
        for (name, entry) in file.full_tests {
            full_tests.push(full.test_rule(&name, &name, entry, None)?);
        }
        let mut releases = Vec::new();
        for (key, entry) in file.release_types {
            let checker = Checker {
                source,
                families,
                configs: &configs,
                key: &key,
                root: &["release-types", &key],
            };
            releases.push(checker.release(entry)?);
        }
        Ok(ReleaseTable {
            source_name: source.name.clone(),
            releases,
            test_configs: configs,
            full_tests,
        })
    }
}

/// GitHub runs at most 256 jobs per matrix; a shard count near that is a typo.
const MAX_SHARDS: u32 = 64;

// ---- the file format (kept apart from the validated model) ----

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ReleasesFile {
    schema: u32,
    #[serde(default)]
    test_configs: IndexMap<String, TestConfigEntry>,
    #[serde(default)]
    full_tests: IndexMap<String, TestEntry>,
    release_types: IndexMap<String, ReleaseEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct TestConfigEntry {
    shards: u32,
    #[serde(default)]
    runner: RunnerKind,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct ReleaseEntry {
    python: Vec<String>,
    pytorch_refs: Vec<String>,
    families: FamilySelection,
    #[serde(default)]
    tests: IndexMap<String, TestEntry>,
    publish: bool,
    cache: String,
    #[serde(default)]
    windows: bool,
    #[serde(default)]
    windows_pytorch_refs: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct FamilySelection {
    tier: Option<Tier>,
    only: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct TestEntry {
    python: Option<Vec<String>>,
    families: Option<Vec<String>>,
}

/// Validation of one release type's entry, with errors located under its key.
struct Checker<'a> {
    source: &'a ConfigSource,
    families: &'a FamilyTable,
    configs: &'a IndexMap<String, TestConfig>,
    key: &'a str,
    /// Where errors are located: `release-types.<key>`, or `full-tests`.
    root: &'a [&'a str],
}

impl Checker<'_> {
    fn error(&self, field: &str, message: String) -> ConfigError {
        let mut path = self.root.to_vec();
        if !field.is_empty() {
            path.push(field);
        }
        self.source.error_at(&path, message)
    }

    fn release(&self, entry: ReleaseEntry) -> Result<Release, ConfigError> {
        let key = self.key;
        let release_type =
            <ReleaseType as clap::ValueEnum>::from_str(key, false).map_err(|_| {
                let names: Vec<&str> = <ReleaseType as clap::ValueEnum>::value_variants()
                    .iter()
                    .map(|r| r.as_str())
                    .collect();
                let hint = did_you_mean(key, names.iter().copied())
                    .map(|best| format!(" (did you mean '{best}'?)"))
                    .unwrap_or_default();
                self.error(
                    "",
                    format!(
                        "unknown release type '{key}'{hint}; known: {}",
                        names.join(", ")
                    ),
                )
            })?;
        let python = self.pythons("python", &entry.python)?;
        let pytorch_refs = self.refs("pytorch-refs", entry.pytorch_refs)?;
        let windows_refs = match entry.windows_pytorch_refs {
            Some(_) if !entry.windows => {
                return Err(self.error(
                    "windows-pytorch-refs",
                    format!(
                        "release type '{key}' is not built on Windows: set `windows: true` or drop its Windows refs"
                    ),
                ));
            }
            Some(refs) => Some(self.refs("windows-pytorch-refs", refs)?),
            None => None,
        };
        let families = self.family_selection(&entry.families)?;
        let mut tests = Vec::new();
        for (name, test) in entry.tests {
            tests.push(self.test_rule("tests", &name, test, Some((&python, &families)))?);
        }
        if !entry.publish && !tests.is_empty() {
            return Err(self.error(
                "tests",
                format!(
                    "release type '{key}' does not publish, so nothing is staged for tests to \
                     install: drop its tests or set `publish: true`"
                ),
            ));
        }
        if entry.publish {
            self.check_coverage(&python, &families, &tests)?;
        }
        if entry.cache.is_empty()
            || !entry
                .cache
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(self.error(
                "cache",
                format!(
                    "cache '{}' must be lowercase letters, digits and '-' (it becomes an S3 key \
                     prefix)",
                    entry.cache
                ),
            ));
        }
        Ok(Release {
            release_type,
            python,
            pytorch_refs,
            families,
            tests,
            publish: entry.publish,
            cache: entry.cache,
            windows: entry.windows,
            windows_refs,
        })
    }

    fn pythons(&self, field: &str, given: &[String]) -> Result<Vec<Python>, ConfigError> {
        if given.is_empty() {
            return Err(self.error(field, "empty Python list".to_string()));
        }
        let mut out: Vec<Python> = Vec::new();
        for text in given {
            let python: Python = text.parse().map_err(|e| self.error(field, e))?;
            if out.contains(&python) {
                return Err(self.error(field, format!("Python {python} is listed twice")));
            }
            out.push(python);
        }
        Ok(out)
    }

    fn refs(&self, field: &str, given: Vec<String>) -> Result<Vec<String>, ConfigError> {
        if given.is_empty() {
            return Err(self.error(field, "empty ref list".to_string()));
        }
        let mut out: Vec<String> = Vec::new();
        for name in given {
            if let Err(problem) = check_ref(&name) {
                return Err(self.error(field, problem));
            }
            if out.contains(&name) {
                return Err(self.error(field, format!("ref '{name}' is listed twice")));
            }
            out.push(name);
        }
        Ok(out)
    }

    fn family_selection(&self, selection: &FamilySelection) -> Result<Vec<String>, ConfigError> {
        match (selection.tier, &selection.only) {
            (Some(tier), None) => Ok(self
                .families
                .families()
                .filter(|f| f.tier <= tier && f.linux.is_some())
                .map(|f| f.name.clone())
                .collect()),
            (None, Some(only)) => self.family_list("families", only),
            _ => Err(self.error(
                "families",
                "give either `tier: <presubmit|postsubmit|nightly>` or `only: [<families>]`"
                    .to_string(),
            )),
        }
    }

    /// Family names checked against the family table, each buildable on Linux, in table order.
    fn family_list(&self, field: &str, given: &[String]) -> Result<Vec<String>, ConfigError> {
        if given.is_empty() {
            return Err(self.error(field, "empty family list".to_string()));
        }
        let mut chosen = Vec::new();
        for name in given {
            let family = self
                .families
                .family_named(name)
                .map_err(|e| self.error(field, family_error(e)))?;
            if family.linux.is_none() {
                return Err(self.error(
                    field,
                    format!(
                        "family '{name}' has no linux entry in the family table, so it is not built"
                    ),
                ));
            }
            chosen.push(family.name.clone());
        }
        Ok(self
            .families
            .families()
            .filter(|f| chosen.contains(&f.name))
            .map(|f| f.name.clone())
            .collect())
    }

    /// One test configuration's rule, errors located under `field`. `built`: the release
    /// type's Pythons and families, which the rule may only narrow (`None` for `full-tests`,
    /// which applies to whatever a release type builds).
    fn test_rule(
        &self,
        field: &str,
        name: &str,
        entry: TestEntry,
        built: Option<(&[Python], &[String])>,
    ) -> Result<TestRule, ConfigError> {
        let key = self.key;
        let config = self.configs.get(name).ok_or_else(|| {
            let hint = did_you_mean(name, self.configs.keys().map(String::as_str))
                .map(|best| format!(" (did you mean '{best}'?)"))
                .unwrap_or_default();
            let known: Vec<&str> = self.configs.keys().map(String::as_str).collect();
            self.error(
                field,
                format!(
                    "unknown test config '{name}'{hint}; test-configs defines: {}",
                    known.join(", ")
                ),
            )
        })?;
        let rule_python = match &entry.python {
            Some(list) => {
                let list = self.pythons(field, list)?;
                if let Some(extra) =
                    built.and_then(|(python, _)| list.iter().find(|p| !python.contains(p)))
                {
                    return Err(self.error(
                        field,
                        format!(
                            "test config '{name}' runs on Python {extra}, which release type \
                             '{key}' does not build"
                        ),
                    ));
                }
                Some(list)
            }
            None => None,
        };
        let rule_families = match &entry.families {
            Some(list) => {
                let list = self.family_list(field, list)?;
                if let Some(extra) =
                    built.and_then(|(_, families)| list.iter().find(|f| !families.contains(f)))
                {
                    return Err(self.error(
                        field,
                        format!(
                            "test config '{name}' names family '{extra}', which release type \
                             '{key}' does not build"
                        ),
                    ));
                }
                Some(list)
            }
            None => None,
        };
        Ok(TestRule {
            config: config.clone(),
            python: rule_python,
            families: rule_families,
        })
    }

    /// A published release type must test every wheel it stages: promotion needs passing
    /// evidence for each one, so an untested Python would be staged and never promoted.
    fn check_coverage(
        &self,
        python: &[Python],
        families: &[String],
        tests: &[TestRule],
    ) -> Result<(), ConfigError> {
        let tested = families.iter().filter(|name| {
            self.families
                .family_named(name)
                .ok()
                .and_then(|f| f.linux.as_ref())
                .is_some_and(|linux| !linux.test_runner.is_empty())
        });
        for family in tested {
            if let Some(python) = python
                .iter()
                .find(|p| !tests.iter().any(|rule| rule.covers(**p, family)))
            {
                return Err(self.error(
                    "tests",
                    format!(
                        "release type '{}' publishes, but no test covers Python {python} on \
                         {family}: its wheels would be staged and never promoted",
                        self.key
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A family name's error, minus advice about build flags that do not apply to a family list.
pub fn family_error(error: NameError) -> String {
    match error {
        NameError::TargetNotFamily { given, family } => {
            format!("'{given}' is a gfx target, not a GPU family: its family is '{family}'")
        }
        other => other.to_string(),
    }
}

/// A ref as a matrix value: what git accepts as a branch, tag or SHA, and nothing that would
/// need quoting in a job name or an artifact name.
pub fn check_ref(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._/-+".contains(c);
    if name.is_empty() {
        return Err("empty ref".to_string());
    }
    if !name.chars().all(allowed) || name.starts_with(['-', '/']) || name.contains("..") {
        return Err(format!(
            "'{name}' is not a plain branch, tag or commit (letters, digits, '.', '_', '/', '-', '+')"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> FamilyTable {
        FamilyTable::load(&ConfigSource::embedded(
            "configs/families.yaml",
            crate::stack::DEFAULT_FAMILIES,
        ))
        .expect("the shipped family table loads")
    }

    fn load(text: &str) -> Result<ReleaseTable, ConfigError> {
        ReleaseTable::load(
            &ConfigSource {
                name: "releases.yaml".into(),
                text: text.into(),
            },
            &families(),
        )
    }

    #[test]
    fn shipped_table_loads_and_follows_the_reference() {
        let table = ReleaseTable::load(
            &ConfigSource::embedded("configs/releases.yaml", DEFAULT_RELEASES),
            &families(),
        )
        .expect("loads");
        let nightly = table.release(ReleaseType::Nightly).expect("nightly");
        let pythons: Vec<String> = nightly.python.iter().map(ToString::to_string).collect();
        assert_eq!(pythons, ["3.10", "3.11", "3.12", "3.13", "3.14"]);
        assert_eq!(
            nightly.pytorch_refs,
            ["release/2.12", "release/2.13", "release/2.14", "nightly"]
        );
        assert_eq!(nightly.families.len(), 16);
        // F45: prerelease drops the moving nightly ref.
        let prerelease = table.release(ReleaseType::Prerelease).expect("prerelease");
        assert!(!prerelease.pytorch_refs.iter().any(|r| r == "nightly"));
        // F32: bkc types share the cache of their base type.
        assert_eq!(
            table.release(ReleaseType::DevBkc).expect("dev-bkc").cache,
            "dev"
        );
        // Every release type has an entry.
        for release_type in <ReleaseType as clap::ValueEnum>::value_variants() {
            assert!(table.release(*release_type).is_some(), "{release_type:?}");
        }
    }

    #[test]
    fn python_versions() {
        let cases = [
            ("3.12", Ok("cp312-cp312")),
            ("3.13t", Ok("cp313-cp313t")),
            ("3.9", Ok("cp39-cp39")),
            ("2.7", Err(())),
            ("3.", Err(())),
            ("3.x", Err(())),
            ("3.123", Err(())),
            ("3.12tt", Err(())),
        ];
        for (text, want) in cases {
            let got = text.parse::<Python>().map(Python::cpython_tag);
            assert_eq!(got.as_deref().map_err(|_| ()), want, "{text}");
        }
        assert_eq!("3.13t".parse::<Python>().expect("ok").to_string(), "3.13t");
    }

    const HEAD: &str = "schema: 1\ntest-configs:\n  smoke:\n    shards: 1\n  default:\n    shards: 6\nrelease-types:\n";

    /// One bad entry per case, each refused with its line and what to do.
    #[test]
    fn bad_tables_are_located() {
        let cases = [
            (
                "  nightlyy:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    publish: false\n    cache: x\n",
                "releases.yaml:8: unknown release type 'nightlyy' (did you mean 'nightly'?); known: ci, dev, dev-bkc, nightly, nightly-bkc, prerelease",
            ),
            (
                "  ci:\n    python: [\"3.12\", \"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    publish: false\n    cache: x\n",
                "releases.yaml:9: Python 3.12 is listed twice",
            ),
            (
                "  ci:\n    python: [\"3,12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    publish: false\n    cache: x\n",
                "releases.yaml:9: '3,12' is not a CPython version such as 3.12 or 3.13t",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [\"main branch\"]\n    families: {tier: nightly}\n    publish: false\n    cache: x\n",
                "releases.yaml:10: 'main branch' is not a plain branch, tag or commit (letters, digits, '.', '_', '/', '-', '+')",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {only: [gfx94x]}\n    publish: false\n    cache: x\n",
                "releases.yaml:11: unknown GPU family 'gfx94x' (did you mean 'gfx94X-dcgpu'?); known families: gfx94X-dcgpu, gfx110X-all, gfx1151, gfx120X-all, gfx90a, gfx950-dcgpu, gfx900, gfx90c, gfx906, gfx908, gfx101X-dgpu, gfx103X-all, gfx1150, gfx1152, gfx1153, gfx125X-dcgpu",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly, only: [gfx90a]}\n    publish: false\n    cache: x\n",
                "releases.yaml:11: give either `tier: <presubmit|postsubmit|nightly>` or `only: [<families>]`",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    tests:\n      smoek: {}\n    publish: true\n    cache: x\n",
                "releases.yaml:12: unknown test config 'smoek' (did you mean 'smoke'?); test-configs defines: smoke, default",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    tests:\n      smoke: {python: [\"3.11\"]}\n    publish: true\n    cache: x\n",
                "releases.yaml:12: test config 'smoke' runs on Python 3.11, which release type 'ci' does not build",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {only: [gfx90a]}\n    tests:\n      smoke: {families: [gfx1151]}\n    publish: true\n    cache: x\n",
                "releases.yaml:12: test config 'smoke' names family 'gfx1151', which release type 'ci' does not build",
            ),
            (
                "  nightly:\n    python: [\"3.12\", \"3.13\"]\n    pytorch-refs: [main]\n    families: {tier: presubmit}\n    tests:\n      smoke: {python: [\"3.12\"]}\n    publish: true\n    cache: x\n",
                "releases.yaml:12: release type 'nightly' publishes, but no test covers Python 3.13 on gfx94X-dcgpu: its wheels would be staged and never promoted",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    tests:\n      smoke: {}\n    publish: false\n    cache: x\n",
                "releases.yaml:12: release type 'ci' does not publish, so nothing is staged for tests to install: drop its tests or set `publish: true`",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    publish: false\n    cache: Nightly/x\n",
                "releases.yaml:13: cache 'Nightly/x' must be lowercase letters, digits and '-' (it becomes an S3 key prefix)",
            ),
            (
                "  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {tier: nightly}\n    publish: false\n    cache: x\n    extra: 1\n",
                "releases.yaml:14:5: release-types.ci: unknown field `extra`, expected one of `python`, `pytorch-refs`, `families`, `tests`, `publish`, `cache`, `windows`, `windows-pytorch-refs`",
            ),
        ];
        for (entry, want) in cases {
            let got = load(&format!("{HEAD}{entry}"))
                .expect_err(entry)
                .to_string();
            assert_eq!(got, want, "{entry}");
        }
        // `full-tests` is located under its own key and checked against the families.
        let full = |rule: &str| {
            load(&format!(
                "schema: 1\ntest-configs:\n  default:\n    shards: 6\nfull-tests:\n  {rule}\nrelease-types: {{}}\n"
            ))
            .expect_err(rule)
            .to_string()
        };
        assert_eq!(
            full("defualt: {}"),
            "releases.yaml:6: unknown test config 'defualt' (did you mean 'default'?); test-configs defines: default"
        );
        assert!(
            full("default: {families: [gfx94x]}").starts_with(
                "releases.yaml:6: unknown GPU family 'gfx94x' (did you mean 'gfx94X-dcgpu'?)"
            ),
            "{}",
            full("default: {families: [gfx94x]}")
        );
        let shards = "schema: 1\ntest-configs:\n  smoke:\n    shards: 0\nrelease-types: {}\n";
        assert_eq!(
            load(shards).expect_err("zero shards").to_string(),
            "releases.yaml:4: test config 'smoke' has 0 shards; give 1 to 64"
        );
    }

    #[test]
    fn tier_selects_families_up_to_it() {
        let table = load(&format!(
            "{HEAD}  ci:\n    python: [\"3.12\"]\n    pytorch-refs: [main]\n    families: {{tier: postsubmit}}\n    publish: false\n    cache: ci\n"
        ))
        .expect("loads");
        assert_eq!(
            table.release(ReleaseType::Ci).expect("ci").families,
            [
                "gfx94X-dcgpu",
                "gfx110X-all",
                "gfx1151",
                "gfx120X-all",
                "gfx90a",
                "gfx950-dcgpu"
            ]
        );
    }
}
