//! configs/pytorch-tests.yaml: `BUILD_ENVIRONMENT` per family, the quick config's modules, the
//! inductor config's two test lists, and the test venv's requirements. (Shard counts are the
//! release table's.)

use std::collections::BTreeMap;
use std::fmt;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

use crate::stack::{ConfigError, ConfigSource, FamilyTable};

const BUILTIN: &str = include_str!("../../configs/pytorch-tests.yaml");

/// A test config: which part of the suite a shard runs (run_test.py's `TEST_CONFIG`), or the
/// built-in GPU smoke suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum TestConfig {
    /// Everything but distributed, JIT-executor and quantization tests.
    Default,
    /// The default config limited to a few core modules (pytorch-tests.yaml `quick`): the
    /// subset every tested family runs (TheRock #6536).
    Quick,
    /// The distributed tests, on every GPU of the node.
    Distributed,
    /// Generic tests under TorchInductor, then the inductor unit tests.
    Inductor,
    /// rockbuild's GPU smoke suite (matmul, MIOpen, BLAS/LAPACK, ROCm preload); needs no
    /// torch checkout.
    GpuSmoke,
}

impl TestConfig {
    pub fn name(self) -> &'static str {
        match self {
            TestConfig::Default => "default",
            TestConfig::Quick => "quick",
            TestConfig::Distributed => "distributed",
            TestConfig::Inductor => "inductor",
            TestConfig::GpuSmoke => "gpu-smoke",
        }
    }

    pub fn all() -> [TestConfig; 5] {
        [
            TestConfig::Default,
            TestConfig::Quick,
            TestConfig::Distributed,
            TestConfig::Inductor,
            TestConfig::GpuSmoke,
        ]
    }

    pub fn parse(text: &str) -> Option<TestConfig> {
        TestConfig::all().into_iter().find(|c| c.name() == text)
    }

    /// run_test.py's `TEST_CONFIG`: the quick subset is the default config's modules, so it
    /// selects and shards as `default` does (TheRock passes `--test-config default`).
    pub fn run_test_config(self) -> &'static str {
        match self {
            TestConfig::Quick => TestConfig::Default.name(),
            other => other.name(),
        }
    }
}

impl fmt::Display for TestConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
struct RawCatalog {
    schema: u32,
    build_environment: RawBuildEnvironment,
    quick: Quick,
    inductor: Inductor,
    requirements: Vec<String>,
    #[serde(default)]
    requirements_ci_overrides: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBuildEnvironment {
    default: String,
    families: IndexMap<String, String>,
}

/// The quick config's run_test.py modules.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Quick {
    pub include: Vec<String>,
}

/// The inductor config's two run_test.py invocations.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Inductor {
    pub generic_tests: Vec<String>,
    pub unit_tests: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Catalog {
    default_build_environment: String,
    build_environments: IndexMap<String, String>,
    pub quick: Quick,
    pub inductor: Inductor,
    pub requirements: Vec<String>,
    /// By Python (`3.14`): requirement lines that replace the pins of the same projects in
    /// the torch checkout's requirements-ci.txt on that Python ([`super::requirements_ci`]).
    pub requirements_ci_overrides: BTreeMap<String, Vec<String>>,
}

impl Catalog {
    pub fn builtin(families: &FamilyTable) -> Result<Self, ConfigError> {
        Self::parse(
            &ConfigSource::embedded("configs/pytorch-tests.yaml", BUILTIN),
            families,
        )
    }

    pub fn parse(source: &ConfigSource, families: &FamilyTable) -> Result<Self, ConfigError> {
        let raw: RawCatalog = source.parse()?;
        source.check_schema(raw.schema)?;
        for family in raw.build_environment.families.keys() {
            // A key no family has is how TheRock's gfx90X-dcgpu went unnoticed (W13).
            if let Err(error) = families.family_named(family) {
                return Err(source.error_at(
                    &["build-environment", "families", family],
                    format!("build-environment: {error}"),
                ));
            }
        }
        if raw.quick.include.is_empty() {
            // An empty --include would run the whole default config under the quick name.
            return Err(source.error_at(
                &["quick", "include"],
                "quick: `include` lists no module; name the run_test.py modules of the quick \
                 config"
                    .to_string(),
            ));
        }
        for (python, lines) in &raw.requirements_ci_overrides {
            let at =
                |message: String| source.error_at(&["requirements-ci-overrides", python], message);
            let is_python = python.split_once('.').is_some_and(|(major, minor)| {
                [major, minor]
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            });
            if !is_python {
                return Err(at(format!(
                    "requirements-ci-overrides: `{python}` is not a Python version (`3.14`)"
                )));
            }
            if let Err(bad) =
                super::requirements_ci::requirements(&lines.join("\n"), &BTreeMap::new())
            {
                return Err(at(format!(
                    "requirements-ci-overrides: `{}` is not a requirement line ({})",
                    bad.text, bad.why
                )));
            }
        }
        Ok(Catalog {
            default_build_environment: raw.build_environment.default,
            build_environments: raw.build_environment.families,
            quick: raw.quick,
            inductor: raw.inductor,
            requirements: raw.requirements,
            requirements_ci_overrides: raw.requirements_ci_overrides,
        })
    }

    /// `BUILD_ENVIRONMENT` for a family (run_test.py's key into test-times.json).
    pub fn build_environment(&self, family: Option<&str>) -> &str {
        family
            .and_then(|f| self.build_environments.get(f))
            .unwrap_or(&self.default_build_environment)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn families() -> FamilyTable {
        crate::stack::load_families(None).expect("families")
    }

    #[test]
    fn builtin_catalog_follows_upstream() {
        let catalog = Catalog::builtin(&families()).expect("catalog");
        assert_eq!(
            catalog.build_environment(Some("gfx90a")),
            "linux-jammy-rocm-py3.10-mi200",
            "W13: gfx90a shards balance on MI200 timings"
        );
        assert_eq!(
            catalog.build_environment(Some("gfx1151")),
            "linux-noble-rocm-py3.12-mi300"
        );
        assert_eq!(
            catalog.build_environment(None),
            "linux-noble-rocm-py3.12-mi300"
        );
        assert_eq!(
            catalog.quick.include,
            [
                "test_nn",
                "test_torch",
                "test_cuda",
                "test_unary_ufuncs",
                "test_binary_ufuncs",
                "test_autograd"
            ],
            "TheRock #6536's subset"
        );
        assert_eq!(TestConfig::Quick.run_test_config(), "default");
    }

    #[test]
    fn unknown_families_and_keys_are_errors() {
        let text = BUILTIN.replace("    gfx90a: linux", "    gfx90X-dcgpu: linux");
        let error = Catalog::parse(
            &ConfigSource {
                name: "tests.yaml".into(),
                text,
            },
            &families(),
        )
        .expect_err("W13");
        assert!(
            error
                .to_string()
                .starts_with("tests.yaml:19: build-environment: unknown GPU family 'gfx90X-dcgpu'"),
            "{error}"
        );
        let text = BUILTIN.replace(
            "  include: [test_nn, test_torch, test_cuda, test_unary_ufuncs, test_binary_ufuncs, test_autograd]",
            "  include: []",
        );
        let error = Catalog::parse(
            &ConfigSource {
                name: "tests.yaml".into(),
                text,
            },
            &families(),
        )
        .expect_err("an empty quick list");
        assert!(
            error
                .to_string()
                .contains("quick: `include` lists no module"),
            "{error}"
        );
        let text = BUILTIN.replace("requirements:", "requirement:");
        let error = Catalog::parse(
            &ConfigSource {
                name: "tests.yaml".into(),
                text,
            },
            &families(),
        )
        .expect_err("misspelled");
        assert!(
            error
                .to_string()
                .contains("unknown field `requirement` (did you mean `requirements`?)"),
            "{error}"
        );
    }
}
