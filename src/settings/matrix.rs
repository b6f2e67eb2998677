//! `rockbuild matrix`: the release table's entry for the release type, narrowed by the flags
//! (refs, families, Python versions), each value with where it came from.

use crate::build::mode::ModeChoice;
use crate::ci::Error;
use crate::ci::matrix::Selection;
use crate::ci::releases::{
    DEFAULT_RELEASES, Python, Release, ReleaseTable, check_ref, family_error,
};
use crate::cli::MatrixArgs;
use crate::context::Context;
use crate::settings::{Source, Sourced};
use crate::stack::families::split_list;
use crate::stack::{ConfigSource, FamilyTable, IndexLayout};

/// The family table (`--families`, else the built-in one) and the release table checked
/// against it (`--releases`, else the built-in one).
pub fn load_tables(
    ctx: &Context,
    families: Option<std::path::PathBuf>,
    releases: Option<std::path::PathBuf>,
) -> anyhow::Result<(FamilyTable, ReleaseTable)> {
    let families =
        crate::stack::load_families(families.as_deref().map(|p| ctx.absolute(p)).as_deref())?;
    let source = match releases {
        Some(path) => ConfigSource::read(&ctx.absolute(&path))?,
        None => ConfigSource::embedded("configs/releases.yaml", DEFAULT_RELEASES),
    };
    let table = ReleaseTable::load(&source, &families).map_err(Error::from)?;
    Ok((families, table))
}

#[derive(Clone, Debug)]
pub struct MatrixSettings {
    pub release: Release,
    pub families: FamilyTable,
    pub refs: Sourced<Vec<String>>,
    pub amdgpu_families: Sourced<Vec<String>>,
    pub python: Sourced<Vec<Python>>,
    /// Per-family chains, or one multi-arch chain per ref (`--multi-arch`, or a family table
    /// whose index layout is multi-arch).
    pub mode: ModeChoice,
    /// `--full-tests`: the release table's `full-tests` rules were added to `release.tests`.
    pub full_tests: bool,
    /// `--json`: the matrix on stdout, else the summary.
    pub json: bool,
}

impl MatrixSettings {
    pub fn resolve(args: MatrixArgs, ctx: &Context) -> anyhow::Result<Self> {
        let MatrixArgs {
            release_type,
            pytorch_ref,
            amdgpu_families,
            python_version,
            families,
            releases,
            multi_arch,
            full_tests,
            json,
        } = args;
        let (families, table) = load_tables(ctx, families, releases)?;
        let mut release = table
            .release(release_type)
            .ok_or_else(|| Error::NoRelease {
                table: table.source_name.clone(),
                release_type: release_type.as_str().to_string(),
            })?
            .clone();
        if full_tests {
            add_full_tests(&mut release, &table)?;
        }
        let from_table = |key: &str| {
            Source::Config(format!(
                "{}, release-types.{}.{key}",
                table.source_name,
                release_type.as_str()
            ))
        };
        // An empty list is "not given": a workflow passes an optional input through as "".
        let given = |value: Option<String>| value.filter(|v| !v.trim().is_empty());
        let refs = match given(pytorch_ref) {
            Some(list) => Sourced {
                value: parse_refs(&list)?,
                source: Source::Flag("--pytorch-ref".into()),
            },
            None => Sourced {
                value: release.pytorch_refs.clone(),
                source: from_table("pytorch-refs"),
            },
        };
        let amdgpu_families = match given(amdgpu_families) {
            Some(list) => Sourced {
                value: parse_families(&families, &list)?,
                source: Source::Flag("--amdgpu-family".into()),
            },
            None => Sourced {
                value: release.families.clone(),
                source: from_table("families"),
            },
        };
        let python = match given(python_version) {
            Some(list) => Sourced {
                value: parse_pythons(&release, &table.source_name, &list)?,
                source: Source::Flag("--python-version".into()),
            },
            None => Sourced {
                value: release.python.clone(),
                source: from_table("python"),
            },
        };
        let mode = ModeChoice::resolve(
            multi_arch,
            families.index_layout() == IndexLayout::MultiArch,
            None,
        );
        Ok(MatrixSettings {
            mode,
            release,
            families,
            refs,
            amdgpu_families,
            python,
            full_tests,
            json,
        })
    }

    pub fn selection(&self) -> Selection {
        // Refs given by flag are every platform's; the table's keep its list per platform.
        let windows_refs = match self.refs.source {
            Source::Flag(_) => self.refs.value.clone(),
            _ => self.release.windows_refs().to_vec(),
        };
        Selection {
            refs: self.refs.value.clone(),
            windows_refs,
            families: self.amdgpu_families.value.clone(),
            python: self.python.value.clone(),
        }
    }

    /// What was selected and from where, for the log.
    pub fn describe(&self) -> String {
        let pythons: Vec<String> = self.python.value.iter().map(ToString::to_string).collect();
        let full_tests = if self.full_tests {
            "\nfull tests: yes (from --full-tests)"
        } else {
            ""
        };
        format!(
            "release type: {}{full_tests}\nmode: {} (from {})\nrefs: {} (from {})\nfamilies: {} (from {})\npython: {} (from {})",
            self.release.release_type.as_str(),
            self.mode.mode,
            self.mode.source,
            self.refs.value.join(", "),
            self.refs.source,
            self.amdgpu_families.value.join(", "),
            self.amdgpu_families.source,
            pythons.join(", "),
            self.python.source,
        )
    }
}

/// `--full-tests`: the table's full-suite rules join the release type's tests, the release
/// type's own rule winning for a configuration it already runs (a release candidate's).
fn add_full_tests(release: &mut Release, table: &ReleaseTable) -> Result<(), Error> {
    if !release.publish {
        return Err(Error::FullTestsUnpublished(
            release.release_type.as_str().to_string(),
        ));
    }
    for rule in table.full_tests() {
        if !release
            .tests
            .iter()
            .any(|t| t.config.name == rule.config.name)
        {
            release.tests.push(rule.clone());
        }
    }
    Ok(())
}

fn parse_refs(list: &str) -> Result<Vec<String>, Error> {
    let mut refs: Vec<String> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        check_ref(name).map_err(Error::Ref)?;
        if !refs.iter().any(|r| r == name) {
            refs.push(name.to_string());
        }
    }
    if refs.is_empty() {
        return Err(Error::Ref("empty ref list".into()));
    }
    Ok(refs)
}

fn parse_families(table: &FamilyTable, list: &str) -> Result<Vec<String>, Error> {
    let mut chosen: Vec<String> = Vec::new();
    for name in split_list(list) {
        let family = table
            .family_named(name)
            .map_err(|e| Error::Family(family_error(e)))?;
        if family.linux.is_none() {
            return Err(Error::NotBuiltOnLinux(family.name.clone()));
        }
        if !chosen.contains(&family.name) {
            chosen.push(family.name.clone());
        }
    }
    if chosen.is_empty() {
        return Err(Error::NoFamilies);
    }
    Ok(chosen)
}

/// Python versions must be ones the release type builds: its tests are written for those.
fn parse_pythons(release: &Release, table: &str, list: &str) -> Result<Vec<Python>, Error> {
    let mut chosen: Vec<Python> = Vec::new();
    for text in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let python: Python = text.parse().map_err(Error::Python)?;
        if !release.python.contains(&python) {
            return Err(Error::PythonNotInRelease {
                python: python.to_string(),
                release_type: release.release_type.as_str().to_string(),
                table: table.to_string(),
                known: release
                    .python
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        if !chosen.contains(&python) {
            chosen.push(python);
        }
    }
    if chosen.is_empty() {
        return Err(Error::Python("empty Python list".into()));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ci::matrix::plan;
    use crate::version::ReleaseType;

    fn tables() -> (FamilyTable, ReleaseTable) {
        let families = crate::stack::load_families(None).expect("families");
        let releases = ReleaseTable::load(
            &ConfigSource::embedded("configs/releases.yaml", DEFAULT_RELEASES),
            &families,
        )
        .expect("releases");
        (families, releases)
    }

    /// `--full-tests` on nightly: each ref's gfx94X-dcgpu chain gains the full suite on 3.12
    /// (default 6, distributed 3, inductor 2 shards) next to its smoke and quick jobs, and its
    /// report expects them all; the other families are untouched.
    #[test]
    fn full_tests_join_any_publishing_release_per_ref() {
        let (families, table) = tables();
        let mut release = table
            .release(ReleaseType::Nightly)
            .expect("nightly")
            .clone();
        add_full_tests(&mut release, &table).expect("publishes");
        let selection = Selection {
            refs: release.pytorch_refs.clone(),
            windows_refs: release.windows_refs().to_vec(),
            families: release.families.clone(),
            python: release.python.clone(),
        };
        let matrix = plan(&release, &families, &selection).expect("plans");
        assert_eq!(matrix.refs.include.len(), 4);
        for row in &matrix.refs.include {
            let chain = |name: &str| {
                row.families
                    .include
                    .iter()
                    .find(|c| c.family == name)
                    .expect("chain")
            };
            let dc = chain("gfx94X-dcgpu");
            assert_eq!(
                dc.test.include.len(),
                5 * 2 + 6 + 3 + 2,
                "{}",
                row.pytorch_ref
            );
            let report = dc
                .reports
                .include
                .iter()
                .find(|r| r.python.to_string() == "3.12")
                .expect("3.12 report");
            assert_eq!(
                report.expect,
                "gpu-smoke=1,quick=1,default=6,distributed=3,inductor=2"
            );
            assert_eq!(chain("gfx1151").test.include.len(), 5 * 2);
        }
    }

    /// A release candidate already runs the full suite: its own rules stand, nothing doubles.
    #[test]
    fn full_tests_keep_a_release_types_own_rules_and_need_publishing() {
        let (_, table) = tables();
        let mut release = table
            .release(ReleaseType::Prerelease)
            .expect("prerelease")
            .clone();
        let before = release.tests.clone();
        add_full_tests(&mut release, &table).expect("publishes");
        assert_eq!(release.tests, before);
        let mut ci = table.release(ReleaseType::Ci).expect("ci").clone();
        assert_eq!(
            add_full_tests(&mut ci, &table)
                .expect_err("nothing staged")
                .to_string(),
            "--full-tests: release type 'ci' does not publish, so nothing is staged for the full suite to install"
        );
    }
}
