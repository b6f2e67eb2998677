//! The GitHub Actions matrix of a release: a pure function of the release table's entry, the
//! family table and what the run selected (refs, families, Python versions).
//!
//! Its shape follows the workflows' per-family chains: one row per PyTorch ref (the lock is
//! resolved once per ref), each holding one row per family (the chain: build for every Python,
//! stage, test, promote), each holding its build matrix (Pythons) and its test matrix
//! (Python × test configuration × shard, on the family's runner). A family is never given a
//! runner it does not have: without a test runner it has no test rows and is not promoted, and
//! the matrix says so in `notes`.
//!
//! A release type with a `windows:` column has Windows chains beside the Linux ones, of the
//! same shape, for the families with a windows entry, on their windows runners (`windows`).

use serde::Serialize;

use super::Error;
use super::releases::{Python, Release, RunnerKind};
use crate::platform::Platform;
use crate::stack::families::{Family, PlatformEntry};
use crate::stack::{FamilyTable, families};
use crate::version::ReleaseType;

/// GitHub refuses a matrix of more than 256 jobs.
pub const GITHUB_MATRIX_LIMIT: usize = 256;

/// What a run builds, after flags and the table were reconciled (see `settings::matrix`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub refs: Vec<String>,
    /// The refs built on Windows: the table's own list for that platform, or the refs given
    /// (`--pytorch-ref` names the refs of every platform).
    pub windows_refs: Vec<String>,
    /// Family names known to the family table, each with a linux entry.
    pub families: Vec<String>,
    pub python: Vec<Python>,
}

impl Selection {
    /// The refs built on `platform`.
    pub fn refs_on(&self, platform: Platform) -> &[String] {
        match platform {
            Platform::Linux => &self.refs,
            Platform::Windows => &self.windows_refs,
        }
    }
}

/// A GitHub matrix: `strategy.matrix: ${{ fromJSON(...) }}` takes it as it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Include<T> {
    pub include: Vec<T>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Matrix {
    pub release_type: ReleaseType,
    /// Whether chains stage and promote (false: build and verify only).
    pub publish: bool,
    /// Key prefix of the compiler cache in the sccache bucket (per release type, F32).
    pub sccache_prefix: String,
    pub refs: Include<RefRow>,
    /// The Windows chains: empty unless the release type has a `windows:` column.
    pub windows: Include<RefRow>,
    /// The Windows chains' key prefix in the sccache bucket (MSVC objects never hit Linux's).
    pub windows_sccache_prefix: String,
    /// Why something the tables mention is not in the matrix.
    pub notes: Vec<String>,
}

/// One PyTorch ref: one lock, then one chain per family.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RefRow {
    pub pytorch_ref: String,
    /// The ref as it may appear in artifact names (no `/`).
    pub ref_slug: String,
    pub families: Include<ChainRow>,
}

/// One family's chain: build (per Python) → stage → test (per row) → promote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChainRow {
    pub family: String,
    pub targets: String,
    pub build_runs_on: String,
    pub build: Include<BuildRow>,
    /// Empty when the family has no test runner (then `tested` is false).
    pub test: Include<TestRow>,
    /// One combined test report per tested Python: what `rockbuild test-report` expects.
    pub reports: Include<ReportRow>,
    pub tested: bool,
    /// Promotion needs passing evidence: only tested families of a publishing release.
    pub promote: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuildRow {
    pub python: Python,
    /// `/opt/python/<cpython>/bin/python` in the build image.
    pub cpython: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TestRow {
    /// Multi-arch: the family this row tests on its runner (its device extras are installed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    pub python: Python,
    pub cpython: String,
    pub test_config: String,
    /// `rockbuild test --test-config` of this row (the release table's `smoke` is the GPU
    /// smoke suite, `gpu-smoke`).
    pub suite: String,
    /// Whether the suite needs the locked torch's test sources (everything but `gpu-smoke`).
    pub sources: bool,
    pub shard: u32,
    pub num_shards: u32,
    pub runs_on: String,
}

/// One tested Python: `rockbuild smoke` (the whole set installs and imports, on the family's
/// test runner) and the combined report of every test row of that Python.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReportRow {
    /// Multi-arch: the family whose runner smokes the set with its device extras, and whose
    /// test rows the report combines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    pub python: Python,
    pub cpython: String,
    pub runs_on: String,
    /// `CONFIG=SHARDS,...` in `rockbuild test` config names.
    pub expect: String,
}

/// One chain with its ref: the rows the caller workflows call the chain workflow with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FlatChain {
    pub pytorch_ref: String,
    pub ref_slug: String,
    #[serde(flatten)]
    pub chain: ChainRow,
}

/// The release table's `smoke` configuration: the GPU smoke suite.
pub const SMOKE: &str = "smoke";

/// The `rockbuild test --test-config` a release-table configuration runs.
fn suite_of(config: &str) -> &str {
    if config == SMOKE { "gpu-smoke" } else { config }
}

/// Computes the matrix. Errors only when nothing at all would be built on Linux or a matrix
/// exceeds what GitHub runs.
pub fn plan(
    release: &Release,
    table: &FamilyTable,
    selection: &Selection,
) -> Result<Matrix, Error> {
    let mut notes = Notes::default();
    if !release.publish {
        notes.push(format!(
            "release type '{}' does not publish: wheels are built and verified, nothing is \
             staged, tested or promoted",
            release.release_type.as_str()
        ));
    }
    let refs = platform_refs(release, table, selection, Platform::Linux, &mut notes)?;
    if refs.is_empty() {
        return Err(Error::NothingToBuild {
            release_type: release.release_type.as_str().to_string(),
            families: selection.families.join(", "),
            refs: selection.refs.join(", "),
        });
    }
    let windows = if release.windows {
        platform_refs(release, table, selection, Platform::Windows, &mut notes)?
    } else {
        Vec::new()
    };
    check_size("refs", refs.len())?;
    check_size("chains", count_chains(&refs))?;
    check_size("windows chains", count_chains(&windows))?;
    Ok(Matrix {
        release_type: release.release_type,
        publish: release.publish,
        sccache_prefix: format!("{}/linux/", release.cache),
        refs: Include { include: refs },
        windows: Include { include: windows },
        windows_sccache_prefix: format!("{}/windows/", release.cache),
        notes: notes.0,
    })
}

fn count_chains(refs: &[RefRow]) -> usize {
    refs.iter().map(|r| r.families.include.len()).sum()
}

/// How notes name a family or a ref on a platform: as it is on Linux (the default platform of
/// the matrix), `<it> on windows` otherwise.
fn on(platform: Platform, what: &str) -> String {
    match platform {
        Platform::Linux => what.to_string(),
        Platform::Windows => format!("{what} on {}", platform.name()),
    }
}

/// The refs and chains of one platform: the selected families with an entry for it, each ref
/// without the families that exclude it there.
fn platform_refs(
    release: &Release,
    table: &FamilyTable,
    selection: &Selection,
    platform: Platform,
    notes: &mut Notes,
) -> Result<Vec<RefRow>, Error> {
    let entry = |f: &'_ Family| match platform {
        Platform::Linux => f.linux.clone(),
        Platform::Windows => f.windows.clone(),
    };
    let selected: Vec<&Family> = table
        .families()
        .filter(|f| selection.families.contains(&f.name))
        .collect();
    let absent: Vec<&str> = selected
        .iter()
        .filter(|f| entry(f).is_none())
        .map(|f| f.name.as_str())
        .collect();
    if platform != Platform::Linux && !absent.is_empty() {
        notes.push(format!(
            "{}: no {} entry in the family table: not built there",
            absent.join(", "),
            platform.name()
        ));
    }
    let chosen: Vec<(&Family, PlatformEntry)> = selected
        .into_iter()
        .filter_map(|f| entry(f).map(|e| (f, e)))
        .collect();
    for (family, runners) in &chosen {
        let excluded: Vec<&str> = selection
            .refs_on(platform)
            .iter()
            .filter(|r| runners.excluded_refs.contains(r))
            .map(String::as_str)
            .collect();
        if !excluded.is_empty() {
            notes.push(format!(
                "{}: not built for {} (excluded-refs in the family table)",
                on(platform, &family.name),
                excluded.join(", ")
            ));
        }
        let built = excluded.len() < selection.refs_on(platform).len();
        if built && release.publish && runners.test_runner.is_empty() {
            notes.push(format!(
                "{}: no {} test-runner in the family table: built and staged, never tested, \
                 so never promoted",
                family.name,
                platform.name()
            ));
        }
    }
    let mut refs = Vec::new();
    for pytorch_ref in selection.refs_on(platform) {
        let mut chains = Vec::new();
        for (family, runners) in &chosen {
            if runners.excluded_refs.contains(pytorch_ref) {
                continue;
            }
            chains.push(chain(
                release,
                selection,
                (family, runners),
                platform,
                notes,
            )?);
        }
        if chains.is_empty() {
            if !chosen.is_empty() {
                notes.push(format!(
                    "{}: every selected family is excluded from this ref; nothing to build",
                    on(platform, pytorch_ref)
                ));
            }
            continue;
        }
        refs.push(RefRow {
            pytorch_ref: pytorch_ref.clone(),
            ref_slug: pytorch_ref.replace('/', "-"),
            families: Include { include: chains },
        });
    }
    Ok(refs)
}

fn chain(
    release: &Release,
    selection: &Selection,
    (family, runners): (&Family, &PlatformEntry),
    platform: Platform,
    notes: &mut Notes,
) -> Result<ChainRow, Error> {
    let build: Vec<BuildRow> = selection
        .python
        .iter()
        .map(|python| BuildRow {
            python: *python,
            cpython: python.cpython_tag(),
        })
        .collect();
    let mut test = Vec::new();
    if release.publish && !runners.test_runner.is_empty() {
        for rule in &release.tests {
            let runs_on = match rule.config.runner {
                RunnerKind::Test => &runners.test_runner,
                RunnerKind::MultiGpu => &runners.multi_gpu_runner,
            };
            let pythons: Vec<Python> = selection
                .python
                .iter()
                .copied()
                .filter(|p| rule.covers(*p, &family.name))
                .collect();
            if pythons.is_empty() {
                continue;
            }
            if runs_on.is_empty() {
                notes.push(format!(
                    "{}: no multi-gpu-runner in the family table: test config '{}' skipped",
                    on(platform, &family.name),
                    rule.config.name
                ));
                continue;
            }
            for python in pythons {
                for shard in 1..=rule.config.shards {
                    let suite = suite_of(&rule.config.name);
                    test.push(TestRow {
                        family: None,
                        python,
                        cpython: python.cpython_tag(),
                        test_config: rule.config.name.clone(),
                        suite: suite.to_string(),
                        sources: suite != "gpu-smoke",
                        shard,
                        num_shards: rule.config.shards,
                        runs_on: runs_on.clone(),
                    });
                }
            }
        }
    }
    check_size("build", build.len())?;
    check_size("test", test.len())?;
    let tested = !test.is_empty();
    let reports = report_rows(&selection.python, &test, &runners.test_runner);
    Ok(ChainRow {
        family: family.name.clone(),
        targets: families::join(&family.targets),
        build_runs_on: runners.build_runner.clone(),
        build: Include { include: build },
        test: Include { include: test },
        reports: Include { include: reports },
        tested,
        promote: release.publish && tested,
    })
}

/// Per Python with test rows: its configurations with their shard counts, in row order.
fn report_rows(pythons: &[Python], test: &[TestRow], runs_on: &str) -> Vec<ReportRow> {
    pythons
        .iter()
        .filter_map(|python| {
            let mut expect: Vec<String> = Vec::new();
            for row in test.iter().filter(|t| t.python == *python) {
                let item = format!("{}={}", row.suite, row.num_shards);
                if !expect.contains(&item) {
                    expect.push(item);
                }
            }
            (!expect.is_empty()).then(|| ReportRow {
                family: None,
                python: *python,
                cpython: python.cpython_tag(),
                runs_on: runs_on.to_string(),
                expect: expect.join(","),
            })
        })
        .collect()
}

fn check_size(matrix: &'static str, jobs: usize) -> Result<(), Error> {
    if jobs > GITHUB_MATRIX_LIMIT {
        return Err(Error::MatrixTooLarge { matrix, jobs });
    }
    Ok(())
}

/// Notes in the order they arose, each once (a family's note is not repeated per ref).
#[derive(Default)]
struct Notes(Vec<String>);

impl Notes {
    fn push(&mut self, note: String) {
        if !self.0.contains(&note) {
            self.0.push(note);
        }
    }
}

impl Matrix {
    /// How many Linux build jobs the matrix runs: one per chain and Python.
    pub fn builds(&self) -> usize {
        count_builds(&self.refs.include)
    }

    /// How many Windows build jobs the matrix runs.
    pub fn windows_builds(&self) -> usize {
        count_builds(&self.windows.include)
    }

    /// The same release in multi-arch mode, as the reference's release matrix makes it
    /// (`configure_pytorch_release_matrix.py`, on each platform): per ref, one chain for every
    /// family the ref builds (the per-family chains' families, so `excluded-refs` still apply),
    /// built once per Python for the union of their targets; the tests and the smoke reports
    /// still fan out per family, each on its own runner and naming its family (whose device
    /// extras it installs). Promotion takes the whole set or nothing (host and device wheels
    /// promoted apart broke installs, TheRock#5107), so a set with a family nothing tests is
    /// not promoted: its device wheels would have no evidence, and the matrix says so.
    pub fn multi_arch(mut self) -> Matrix {
        let mut notes = Notes(std::mem::take(&mut self.notes));
        merge_sets(
            &mut self.refs.include,
            self.publish,
            Platform::Linux,
            &mut notes,
        );
        merge_sets(
            &mut self.windows.include,
            self.publish,
            Platform::Windows,
            &mut notes,
        );
        self.notes = notes.0;
        self
    }

    /// `name=value` lines for `$GITHUB_OUTPUT`: the whole matrix, the refs matrix, the Linux
    /// and the Windows chains, and the scalars, each on one line (compact JSON never contains
    /// a newline).
    pub fn github_outputs(&self) -> Result<String, serde_json::Error> {
        Ok(format!(
            "matrix={}\nrefs={}\nchains={}\nwindows_chains={}\nwindows={}\nrelease_type={}\npublish={}\nsccache_prefix={}\nwindows_sccache_prefix={}\n",
            serde_json::to_string(self)?,
            serde_json::to_string(&self.refs)?,
            serde_json::to_string(&self.chains())?,
            serde_json::to_string(&self.windows_chains())?,
            !self.windows.include.is_empty(),
            self.release_type.as_str(),
            self.publish,
            self.sccache_prefix,
            self.windows_sccache_prefix
        ))
    }

    /// Every Linux chain of every ref, each with its ref: the caller workflows' matrix (one
    /// call of the chain workflow per row, so no chain waits for another).
    pub fn chains(&self) -> Include<FlatChain> {
        flatten(&self.refs.include)
    }

    /// Every Windows chain of every ref, each with its ref: the matrix of the callers' calls
    /// of the Windows chain workflow.
    pub fn windows_chains(&self) -> Include<FlatChain> {
        flatten(&self.windows.include)
    }

    /// A table for people (stderr, the step summary, docs/ci.md): one line per chain, the
    /// Linux chains first.
    pub fn rows(&self) -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        let platforms = [
            (Platform::Linux, &self.refs.include),
            (Platform::Windows, &self.windows.include),
        ];
        for (platform, refs) in platforms {
            for row in refs {
                for chain in &row.families.include {
                    let pythons: Vec<String> = chain
                        .build
                        .include
                        .iter()
                        .map(|b| b.python.to_string())
                        .collect();
                    let tests = if chain.tested {
                        summarize_tests(&chain.test.include)
                    } else {
                        "-".to_string()
                    };
                    rows.push(vec![
                        row.pytorch_ref.clone(),
                        platform.name().to_string(),
                        chain.family.clone(),
                        chain.targets.clone(),
                        pythons.join(" "),
                        chain.build_runs_on.clone(),
                        tests,
                        if chain.promote { "yes" } else { "no" }.to_string(),
                    ]);
                }
            }
        }
        rows
    }

    pub const HEADERS: [&'static str; 8] = [
        "ref",
        "platform",
        "family",
        "targets",
        "python",
        "build runner",
        "test jobs (config×shards on runner)",
        "promote",
    ];
}

fn count_builds(refs: &[RefRow]) -> usize {
    refs.iter()
        .flat_map(|r| &r.families.include)
        .map(|c| c.build.include.len())
        .sum()
}

fn flatten(refs: &[RefRow]) -> Include<FlatChain> {
    let include = refs
        .iter()
        .flat_map(|row| {
            row.families.include.iter().map(|chain| FlatChain {
                pytorch_ref: row.pytorch_ref.clone(),
                ref_slug: row.ref_slug.clone(),
                chain: chain.clone(),
            })
        })
        .collect();
    Include { include }
}

/// Each ref's chains of one platform merged into one multi-arch set (see
/// [`Matrix::multi_arch`]).
fn merge_sets(refs: &mut [RefRow], publish: bool, platform: Platform, notes: &mut Notes) {
    for row in refs {
        let chains = std::mem::take(&mut row.families.include);
        let Some(first) = chains.first() else {
            continue;
        };
        let mut targets: Vec<String> = Vec::new();
        for target in chains.iter().flat_map(|c| c.targets.split(',')) {
            if !targets.iter().any(|t| t == target) {
                targets.push(target.to_string());
            }
        }
        let mut test = Vec::new();
        let mut reports = Vec::new();
        for chain in &chains {
            let family = Some(chain.family.clone());
            test.extend(chain.test.include.iter().cloned().map(|mut t| {
                t.family = family.clone();
                t
            }));
            reports.extend(chain.reports.include.iter().cloned().map(|mut r| {
                r.family = family.clone();
                r
            }));
        }
        let tested = chains.iter().any(|c| c.tested);
        let untested: Vec<&str> = chains
            .iter()
            .filter(|c| !c.tested)
            .map(|c| c.family.as_str())
            .collect();
        if publish && !untested.is_empty() {
            notes.push(format!(
                "{}: multi-arch set not promoted: its device wheels for {} are never tested \
                 (no test runner), and promotion takes the whole set or nothing; select \
                 tested families (--amdgpu-family) or promote with a waiver",
                on(platform, &row.pytorch_ref),
                untested.join(", ")
            ));
        }
        row.families.include = vec![ChainRow {
            family: chains
                .iter()
                .map(|c| c.family.as_str())
                .collect::<Vec<_>>()
                .join(";"),
            targets: targets.join(","),
            build_runs_on: first.build_runs_on.clone(),
            build: first.build.clone(),
            test: Include { include: test },
            reports: Include { include: reports },
            tested,
            promote: publish && tested && untested.is_empty(),
        }];
    }
}

/// `smoke×5, default×6 on linux-gfx942-…`: test jobs per configuration and their runners.
fn summarize_tests(rows: &[TestRow]) -> String {
    let mut parts: Vec<(String, usize, String)> = Vec::new();
    for row in rows {
        match parts
            .iter_mut()
            .find(|(config, _, runner)| *config == row.test_config && *runner == row.runs_on)
        {
            Some(part) => part.1 += 1,
            None => parts.push((row.test_config.clone(), 1, row.runs_on.clone())),
        }
    }
    parts
        .into_iter()
        .map(|(config, jobs, runner)| format!("{config}×{jobs} on {runner}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ci::releases::{DEFAULT_RELEASES, ReleaseTable};
    use crate::stack::ConfigSource;
    use std::collections::BTreeSet;

    fn tables() -> (FamilyTable, ReleaseTable) {
        let families = FamilyTable::load(&ConfigSource::embedded(
            "configs/families.yaml",
            crate::stack::DEFAULT_FAMILIES,
        ))
        .expect("families");
        let releases = ReleaseTable::load(
            &ConfigSource::embedded("configs/releases.yaml", DEFAULT_RELEASES),
            &families,
        )
        .expect("releases");
        (families, releases)
    }

    fn default_selection(release: &Release) -> Selection {
        Selection {
            refs: release.pytorch_refs.clone(),
            windows_refs: release.windows_refs().to_vec(),
            families: release.families.clone(),
            python: release.python.clone(),
        }
    }

    /// One golden file per release type: the whole JSON the workflows consume.
    #[test]
    fn golden_matrix_per_release_type() {
        let (families, releases) = tables();
        for release_type in <ReleaseType as clap::ValueEnum>::value_variants() {
            let release = releases.release(*release_type).expect("entry");
            let matrix = plan(release, &families, &default_selection(release)).expect("plans");
            insta::assert_snapshot!(
                format!("matrix-{}", release_type.as_str()),
                serde_json::to_string_pretty(&matrix).expect("json")
            );
        }
    }

    /// Counts that follow from the reference's tables (F45, F46, §2), one row per case.
    #[test]
    fn matrix_counts() {
        let (families, releases) = tables();
        struct Case {
            release_type: ReleaseType,
            refs: usize,
            chains: usize,
            build_jobs: usize,
            test_jobs: usize,
            promoted_chains: usize,
            /// Windows: chains, build jobs, test jobs, promoted chains.
            windows: [usize; 4],
        }
        let cases = [
            // 4 refs × 16 families, gfx90c excluded from 2.13 and 2.14; 9 tested families,
            // each running the smoke suite and the quick subset (#6536) per Python.
            Case {
                release_type: ReleaseType::Nightly,
                refs: 4,
                chains: 62,
                build_jobs: 310,
                test_jobs: 4 * 9 * 5 * 2,
                promoted_chains: 36,
                // 13 families with a windows entry, gfx90c excluded from the three release
                // branches (as the reference's UNSUPPORTED_AMDGPU_FAMILIES["windows"]); 4 of
                // them have a windows test runner.
                windows: [13 * 4 - 3, (13 * 4 - 3) * 5, 4 * 4 * 5 * 2, 4 * 4],
            },
            // No nightly ref; gfx94X-dcgpu adds default 6 + distributed 3 + inductor 2 on 3.12.
            Case {
                release_type: ReleaseType::Prerelease,
                refs: 3,
                chains: 46,
                build_jobs: 230,
                test_jobs: 3 * (9 * 5 * 2 + 11),
                promoted_chains: 27,
                // The datacenter family's full suite has no windows entry to run on.
                windows: [12 * 3, 12 * 3 * 5, 3 * 4 * 5 * 2, 3 * 4],
            },
            // The presubmit families on release/2.12 and release/2.13; on Windows those with
            // a windows entry, on release/2.12 alone; nothing tested or promoted.
            Case {
                release_type: ReleaseType::Ci,
                refs: 2,
                chains: 8,
                build_jobs: 8,
                test_jobs: 0,
                promoted_chains: 0,
                windows: [3, 3, 0, 0],
            },
        ];
        for case in cases {
            let release = releases.release(case.release_type).expect("entry");
            let matrix = plan(release, &families, &default_selection(release)).expect("plans");
            let chains: Vec<&ChainRow> = matrix
                .refs
                .include
                .iter()
                .flat_map(|r| &r.families.include)
                .collect();
            let name = case.release_type.as_str();
            assert_eq!(matrix.refs.include.len(), case.refs, "{name} refs");
            assert_eq!(chains.len(), case.chains, "{name} chains");
            let builds: usize = chains.iter().map(|c| c.build.include.len()).sum();
            assert_eq!(builds, case.build_jobs, "{name} build jobs");
            let tests: usize = chains.iter().map(|c| c.test.include.len()).sum();
            assert_eq!(tests, case.test_jobs, "{name} test jobs");
            let promoted = chains.iter().filter(|c| c.promote).count();
            assert_eq!(promoted, case.promoted_chains, "{name} promoted");
            let windows: Vec<&ChainRow> = matrix
                .windows
                .include
                .iter()
                .flat_map(|r| &r.families.include)
                .collect();
            assert_eq!(
                [
                    windows.len(),
                    matrix.windows_builds(),
                    windows.iter().map(|c| c.test.include.len()).sum(),
                    windows.iter().filter(|c| c.promote).count(),
                ],
                case.windows,
                "{name} on windows"
            );
        }
    }

    /// Multi-arch as the reference's release matrix (`configure_pytorch_release_matrix.py`):
    /// one build per (ref, Python) for every family's targets, 4 refs × 5 Pythons = 20 for
    /// nightly where the per-family matrix runs 310; the tests keep their per-family rows,
    /// each naming its family; a ref's excluded families drop out of its union.
    #[test]
    fn multi_arch_builds_once_per_ref_and_python() {
        let (families, releases) = tables();
        let release = releases.release(ReleaseType::Nightly).expect("entry");
        let per_family = plan(release, &families, &default_selection(release)).expect("plans");
        let multi = per_family.clone().multi_arch();
        assert_eq!((per_family.builds(), multi.builds()), (310, 20));
        // Windows as the reference's Windows release matrix: one build per ref and Python,
        // gfx90c in the nightly ref's set only.
        assert_eq!(
            (per_family.windows_builds(), multi.windows_builds()),
            (245, 20)
        );
        let sets: Vec<(&str, bool)> = multi
            .windows
            .include
            .iter()
            .map(|r| {
                let set = &r.families.include[0];
                (
                    r.pytorch_ref.as_str(),
                    set.family.split(';').any(|f| f == "gfx90c"),
                )
            })
            .collect();
        assert_eq!(
            sets,
            [
                ("release/2.12", false),
                ("release/2.13", false),
                ("release/2.14", false),
                ("nightly", true)
            ]
        );
        for row in &multi.refs.include {
            assert_eq!(row.families.include.len(), 1, "{}", row.pytorch_ref);
            let chain = &row.families.include[0];
            let per_family_tests: usize = per_family
                .refs
                .include
                .iter()
                .find(|r| r.pytorch_ref == row.pytorch_ref)
                .map(|r| {
                    r.families
                        .include
                        .iter()
                        .map(|c| c.test.include.len())
                        .sum()
                })
                .unwrap_or_default();
            assert_eq!(chain.test.include.len(), per_family_tests);
            assert!(chain.test.include.iter().all(|t| t.family.is_some()));
            // One smoke report per tested family and Python, on that family's runner.
            assert_eq!(chain.reports.include.len(), 9 * 5, "{}", row.pytorch_ref);
            assert!(chain.reports.include.iter().all(|r| r.family.is_some()));
            // gfx900 and the other families without a test runner are built into the set, so
            // their device wheels would reach the release untested: no promotion.
            assert!(chain.tested && !chain.promote);
            let gfx90c = chain.family.split(';').any(|f| f == "gfx90c");
            assert_eq!(
                gfx90c,
                !["release/2.13", "release/2.14"].contains(&row.pytorch_ref.as_str()),
                "{}: {}",
                row.pytorch_ref,
                chain.family
            );
        }
        assert!(
            multi.notes.iter().any(|n| n.starts_with(
                "nightly: multi-arch set not promoted: its device wheels for gfx900, gfx90c, gfx906"
            )),
            "{:?}",
            multi.notes
        );
        // Tested families only: the whole set is promoted.
        let tested = Selection {
            families: vec!["gfx94X-dcgpu".into(), "gfx110X-all".into()],
            ..default_selection(release)
        };
        let multi = plan(release, &families, &tested)
            .expect("plans")
            .multi_arch();
        assert!(
            multi
                .refs
                .include
                .iter()
                .all(|r| r.families.include[0].promote)
        );
        let prerelease = releases.release(ReleaseType::Prerelease).expect("entry");
        let matrix = plan(prerelease, &families, &default_selection(prerelease)).expect("plans");
        assert_eq!((matrix.builds(), matrix.multi_arch().builds()), (230, 15));
    }

    #[test]
    fn families_without_runners_are_left_out_with_a_note() {
        let (families, releases) = tables();
        let release = releases.release(ReleaseType::Prerelease).expect("entry");
        let selection = Selection {
            refs: vec!["release/2.13".into()],
            windows_refs: vec!["release/2.13".into()],
            families: vec!["gfx900".into(), "gfx90c".into(), "gfx110X-all".into()],
            python: release.python.clone(),
        };
        let matrix = plan(release, &families, &selection).expect("plans");
        let chains = &matrix.refs.include[0].families.include;
        let names: Vec<&str> = chains.iter().map(|c| c.family.as_str()).collect();
        assert_eq!(names, ["gfx110X-all", "gfx900"]);
        let gfx900 = &chains[1];
        assert!(gfx900.test.include.is_empty() && !gfx900.tested && !gfx900.promote);
        assert_eq!(
            matrix.notes,
            [
                "gfx900: no linux test-runner in the family table: built and staged, never tested, so never promoted",
                "gfx90c: not built for release/2.13 (excluded-refs in the family table)",
                // The release type's `windows:` column: the same families on their windows
                // entries, which exclude gfx90c from every release branch.
                "gfx900: no windows test-runner in the family table: built and staged, never tested, so never promoted",
                "gfx90c on windows: not built for release/2.13 (excluded-refs in the family table)",
            ]
        );
        let windows = &matrix.windows.include[0].families.include;
        let names: Vec<(&str, &str)> = windows
            .iter()
            .map(|c| (c.family.as_str(), c.build_runs_on.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("gfx110X-all", "azure-windows-scale-rocm"),
                ("gfx900", "azure-windows-scale-rocm")
            ]
        );
        assert!(
            windows[0]
                .test
                .include
                .iter()
                .all(|t| t.runs_on == "windows-gfx110X-gpu-rocm")
        );
        // No `null` anywhere a runner label is expected.
        let json = serde_json::to_string(&matrix).expect("json");
        assert!(!json.contains("null"), "{json}");
    }

    #[test]
    fn multi_gpu_configs_need_a_multi_gpu_runner() {
        let (families, _) = tables();
        let table = ReleaseTable::load(
            &ConfigSource {
                name: "r.yaml".into(),
                text: "schema: 1\ntest-configs:\n  smoke: {shards: 1}\n  distributed: {shards: 3, runner: multi-gpu}\nrelease-types:\n  nightly:\n    python: [\"3.12\"]\n    pytorch-refs: [nightly]\n    families: {only: [gfx94X-dcgpu, gfx1151]}\n    tests:\n      smoke: {}\n      distributed: {}\n    publish: true\n    cache: nightly\n    windows: true\n".into(),
            },
            &families,
        )
        .expect("loads");
        let release = table.release(ReleaseType::Nightly).expect("entry");
        let matrix = plan(release, &families, &default_selection(release)).expect("plans");
        let chains = &matrix.refs.include[0].families.include;
        let distributed: Vec<(&str, u32, &str)> = chains
            .iter()
            .flat_map(|c| c.test.include.iter().map(move |t| (c.family.as_str(), t)))
            .filter(|(_, t)| t.test_config == "distributed")
            .map(|(f, t)| (f, t.shard, t.runs_on.as_str()))
            .collect();
        assert_eq!(
            distributed,
            [
                ("gfx94X-dcgpu", 1, "linux-gfx942-8gpu-ossci-rocm"),
                ("gfx94X-dcgpu", 2, "linux-gfx942-8gpu-ossci-rocm"),
                ("gfx94X-dcgpu", 3, "linux-gfx942-8gpu-ossci-rocm"),
            ]
        );
        // On Windows too, and the note says which platform's entry lacks the runner.
        assert_eq!(
            matrix.notes,
            [
                "gfx1151: no multi-gpu-runner in the family table: test config 'distributed' skipped",
                "gfx94X-dcgpu: no windows entry in the family table: not built there",
                "gfx1151 on windows: no multi-gpu-runner in the family table: test config 'distributed' skipped",
            ]
        );
    }

    #[test]
    fn nothing_to_build_is_an_error() {
        let (families, releases) = tables();
        let release = releases.release(ReleaseType::Nightly).expect("entry");
        let selection = Selection {
            refs: vec!["release/2.14".into()],
            windows_refs: vec!["release/2.14".into()],
            families: vec!["gfx90c".into()],
            python: release.python.clone(),
        };
        assert_eq!(
            plan(release, &families, &selection)
                .expect_err("excluded")
                .to_string(),
            "release type 'nightly' builds nothing: every family (gfx90c) is excluded from every ref (release/2.14) in the family table"
        );
    }

    /// Replaces what follows `<!-- generated: {command} -->` up to the end marker.
    fn fill(doc: &str, command: &str, content: &str) -> String {
        let start = format!("<!-- generated: {command} -->\n");
        let end = "<!-- end of generated matrix -->";
        let at = doc.find(&start).expect("start marker") + start.len();
        let stop = at + doc[at..].find(end).expect("end marker");
        format!("{}{content}{}", &doc[..at], &doc[stop..])
    }

    /// docs/ci.md shows the matrix as `rockbuild matrix` computes it.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the bless switch is for developers running tests"
    )]
    fn docs_show_the_generated_matrix() {
        let (families, releases) = tables();
        let nightly = releases.release(ReleaseType::Nightly).expect("nightly");
        let one_ref = Selection {
            refs: vec!["release/2.13".into()],
            windows_refs: vec!["release/2.13".into()],
            ..default_selection(nightly)
        };
        let matrix = plan(nightly, &families, &one_ref).expect("plans");
        let mut table = crate::ui::markdown_table(&Matrix::HEADERS, &matrix.rows())
            .as_str()
            .to_string();
        table.push('\n');
        for note in &matrix.notes {
            table.push_str(&format!("- note: {note}\n"));
        }
        let ci = releases.release(ReleaseType::Ci).expect("ci");
        let ci_json = serde_json::to_string_pretty(
            &plan(ci, &families, &default_selection(ci)).expect("plans"),
        )
        .expect("json");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md");
        let current = fs_err::read_to_string(&path).expect("docs/ci.md");
        let want = fill(
            &current,
            "rockbuild matrix --release-type nightly --pytorch-ref release/2.13",
            &format!("\n{table}\n"),
        );
        let want = fill(
            &want,
            "rockbuild matrix --release-type ci",
            &format!("\n```json\n{ci_json}\n```\n\n"),
        );
        if std::env::var_os("ROCKBUILD_BLESS").is_some() {
            fs_err::write(&path, &want).expect("write docs/ci.md");
        } else {
            assert!(
                current == want,
                "docs/ci.md's generated matrix is out of date; run `ROCKBUILD_BLESS=1 cargo test docs_show` and commit it"
            );
        }
    }

    /// Pull requests build what the reference's generator gives the `ci` release type
    /// (TheRock build_tools/github_actions/configure_pytorch_release_matrix.py,
    /// `CI_PYTORCH_REFS` and `CI_PYTHON_VERSIONS`): the same refs on each platform, Python
    /// 3.12 alone, per-family and multi-arch alike.
    #[test]
    fn the_ci_matrix_is_the_reference_s() {
        let reference: BTreeSet<(&str, &str, &str)> = [
            ("linux", "release/2.12", "3.12"),
            ("linux", "release/2.13", "3.12"),
            ("windows", "release/2.12", "3.12"),
        ]
        .into();
        let (families, releases) = tables();
        let ci = releases.release(ReleaseType::Ci).expect("ci");
        let per_family = plan(ci, &families, &default_selection(ci)).expect("plans");
        for matrix in [per_family.clone(), per_family.multi_arch()] {
            let mut built = BTreeSet::new();
            for (platform, rows) in [("linux", &matrix.refs), ("windows", &matrix.windows)] {
                for row in &rows.include {
                    for chain in &row.families.include {
                        for build in &chain.build.include {
                            built.insert((platform, row.pytorch_ref.as_str(), build.python));
                        }
                    }
                }
            }
            let built: BTreeSet<(&str, &str, String)> = built
                .into_iter()
                .map(|(p, r, python)| (p, r, python.to_string()))
                .collect();
            let want: BTreeSet<(&str, &str, String)> = reference
                .iter()
                .map(|(p, r, python)| (*p, *r, python.to_string()))
                .collect();
            assert_eq!(built, want);
        }
    }

    #[test]
    fn github_outputs_are_one_line_each() {
        let (families, releases) = tables();
        let release = releases.release(ReleaseType::Ci).expect("entry");
        let matrix = plan(release, &families, &default_selection(release)).expect("plans");
        insta::assert_snapshot!(matrix.github_outputs().expect("outputs"));
    }
}
