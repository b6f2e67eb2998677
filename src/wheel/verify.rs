//! Verifying a set of wheels before it is staged or promoted: every problem of every wheel,
//! each one a typed [`Problem`].
//!
//! Per wheel: the zip container (strictly, see `archive`), entry paths, RECORD (every file
//! listed with a matching hash and size, nothing unlisted), name/version/tags of the file name
//! against METADATA, WHEEL and the `.dist-info` directory, the lock's expected version, and in
//! ELF files the GPU targets of each offload bundle, the HIP runtime link and RPATH/RUNPATH.
//! Per set: file names are unique, the lock's projects are all present, and every
//! `Requires-Dist` on a stack project resolves to a wheel of the set or of `--index-url`.
//!
//! Each entry is read once: it is inflated, hashed and (for ELF files) inspected in one
//! stream. Entries of a wheel and the wheels of a set are processed in parallel (rayon); the
//! wheel's own SHA-256 (for indexes and test reports) is computed alongside.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Condvar, Mutex};

use pep440_rs::Version;
use rayon::prelude::*;
use serde::Serialize;

use crate::index::client::IndexClient;
use crate::lock::Lock;
use crate::stack::{Stack, Target};
use crate::wheel::archive::{Archive, DataSpan, Entry, METHOD_DEFLATE, METHOD_STORED};
use crate::wheel::elf::{self, ELF_MAGIC, ElfInfo};
use crate::wheel::filename::{WheelFilename, dist_name_and_version, normalize_name};
use crate::wheel::metadata::{CoreMetadata, WheelInfo};
use crate::wheel::problem::Problem;
use crate::wheel::record::{self, HashAlgorithm, Hasher, RecordLine};

/// Entries above this size that inflate more than [`MAX_RATIO`] times are not read.
const RATIO_MIN_SIZE: u64 = 1 << 20;
/// Deflate cannot exceed ~1032:1; real files in wheels stay far below 200:1.
const MAX_RATIO: u64 = 200;
/// METADATA, WHEEL and RECORD are read into memory; anything larger is not a real one.
const MAX_DIST_INFO_FILE: u64 = 64 << 20;
/// Default bound on ELF bytes held in memory at once across all parallel readers.
pub const DEFAULT_MEMORY_BUDGET: u64 = 4 << 30;

/// What a set is checked against.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// gfx targets every GPU library must carry code for (empty: not checked).
    pub targets: Vec<Target>,
    /// Normalized names of the stack's wheels (`torch`, `torchvision`, `triton`, …).
    pub stack_wheels: BTreeSet<String>,
    /// What each stack project's recipe expects of its wheel, by normalized wheel name
    /// (`build::recipes::Recipes::wheel_expectations`).
    pub expectations: BTreeMap<String, WheelExpectation>,
    /// Versions the lock's build record expects, by normalized wheel name.
    pub expected: BTreeMap<String, ExpectedVersion>,
    /// Index that may provide pinned stack dependencies the set does not hold.
    pub index_url: Option<String>,
    /// Bound on ELF bytes held in memory at once (bigger files still pass, one at a time).
    pub memory_budget: u64,
    /// Whether a pin on a stack project the set holds no wheel of must resolve (on
    /// `index_url`). Off to re-check a set whose versions promotion rewrote: its pins
    /// outside the set are the verified original's, unchanged.
    pub check_pins_outside_set: bool,
    /// Whether a `linux_<arch>` platform tag passes (local builds); release staging refuses it.
    pub allow_linux_tag: bool,
}

/// What a project's build recipe promises of its wheel, beyond what every wheel must be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WheelExpectation {
    /// Some ELF file links the HIP runtime (libamdhip64): a GPU build, not a CPU-only one.
    pub links_hip_runtime: bool,
    /// Normalized names of stack wheels it is built against and must pin exactly (`==`) to
    /// the set's version when the set holds them: a mismatched pair fails at import.
    pub pins: BTreeSet<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedVersion {
    pub project: String,
    pub version: Version,
}

impl VerifyOptions {
    /// Options for a stack: its wheel names count as "inside the stack" for the closure
    /// check, and each wheel must meet its recipe's expectation.
    pub fn for_stack(
        stack: &Stack,
        expectations: BTreeMap<String, WheelExpectation>,
    ) -> VerifyOptions {
        VerifyOptions {
            targets: Vec::new(),
            stack_wheels: stack
                .projects
                .values()
                .map(|p| normalize_name(&p.wheel))
                .collect(),
            expectations,
            expected: BTreeMap::new(),
            index_url: None,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            check_pins_outside_set: true,
            allow_linux_tag: false,
        }
    }

    /// Takes the targets and per-project versions of the lock's build record as the
    /// expectation. A lock without a build record changes nothing.
    pub fn expect_lock(&mut self, lock: &Lock, stack: &Stack) -> Result<(), String> {
        let Some(build) = &lock.build else {
            return Ok(());
        };
        self.targets = build.targets.clone();
        for (project, version) in &build.versions {
            let wheel = stack
                .projects
                .get(project)
                .map(|p| normalize_name(&p.wheel))
                .ok_or_else(|| {
                    format!(
                        "the lock's build record has a version for project '{project}', which \
                         {} does not define",
                        stack.source_name
                    )
                })?;
            let version = Version::from_str(version).map_err(|e| {
                format!("the lock's build record gives '{project}' version '{version}', which is not PEP 440: {e}")
            })?;
            self.expected.insert(
                wheel,
                ExpectedVersion {
                    project: project.clone(),
                    version,
                },
            );
        }
        Ok(())
    }

    /// Whether a (normalized) project name belongs to the stack: its wheels plus the ROCm SDK
    /// packages (`rocm`, `rocm-sdk-*`), which must come from the same release.
    pub fn inside_stack(&self, name: &str) -> bool {
        self.stack_wheels.contains(name) || name == "rocm" || name.starts_with("rocm-sdk-")
    }
}

/// A set cannot be verified at all.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("no wheels to verify")]
    NoWheels,
    #[error("'{}' does not exist", .0.display())]
    NotFound(PathBuf),
    #[error("'{}' holds no wheels (*.whl): nothing to verify; did the build write its wheels elsewhere?", .0.display())]
    EmptyDirectory(PathBuf),
    #[error("cannot list '{}': {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("--index-url: {0}")]
    Index(String),
}

/// Expands the command line's wheels and directories (their `*.whl` files, not recursive)
/// into a sorted list of wheel paths. An empty directory is an error, never a pass (W5).
pub fn collect_wheels(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, VerifyError> {
    let mut out = Vec::new();
    for input in inputs {
        let metadata = fs_err::metadata(input).map_err(|_| VerifyError::NotFound(input.clone()))?;
        if !metadata.is_dir() {
            out.push(input.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = fs_err::read_dir(input)
            .map_err(|error| VerifyError::Io {
                path: input.clone(),
                error,
            })?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "whl") && path.is_file())
            .collect();
        if found.is_empty() {
            return Err(VerifyError::EmptyDirectory(input.clone()));
        }
        found.sort();
        out.append(&mut found);
    }
    if out.is_empty() {
        return Err(VerifyError::NoWheels);
    }
    Ok(out)
}

/// One ELF file of a wheel, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryReport {
    pub entry: String,
    /// gfx targets found in any of its offload bundles (sorted).
    pub targets: Vec<String>,
    pub bundles: usize,
    pub compressed_bundles: usize,
    pub needed: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rpath: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runpath: Vec<String>,
    /// The highest glibc it needs (`rockbuild retag` reads it; the report does not show it).
    #[serde(skip)]
    pub glibc: Option<crate::wheel::manylinux::Glibc>,
}

/// The verdict on one wheel.
#[derive(Debug, Clone, Serialize)]
pub struct WheelReport {
    pub path: PathBuf,
    pub file: String,
    pub size: u64,
    /// SHA-256 of the wheel file (hex), for index links and test reports.
    pub sha256: Option<String>,
    /// Normalized project name and version, from METADATA (or the file name).
    pub name: Option<String>,
    pub version: Option<String>,
    pub entries: usize,
    /// Whether the archive uses ZIP64 end records (wheels over 4 GiB or 65535 entries).
    pub zip64: bool,
    /// Core metadata; `raw` (the PEP 658 sidecar bytes) is not serialized.
    pub metadata: Option<CoreMetadata>,
    /// SHA-256 of METADATA (hex): the PEP 658 `data-core-metadata` hash.
    pub metadata_sha256: Option<String>,
    pub libraries: Vec<LibraryReport>,
    #[serde(serialize_with = "serialize_problems")]
    pub problems: Vec<Problem>,
}

impl WheelReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Versions as parsed, for closure checks (METADATA first, the file name otherwise).
    fn parsed_version(&self) -> Option<Version> {
        self.metadata
            .as_ref()
            .map(|m| m.version.clone())
            .or_else(|| {
                self.version
                    .as_deref()
                    .and_then(|v| Version::from_str(v).ok())
            })
    }
}

/// The verdict on a set.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    pub targets: Vec<String>,
    pub index_url: Option<String>,
    pub problem_count: usize,
    pub wheels: Vec<WheelReport>,
    /// Problems of the set as a whole (missing projects, duplicate files).
    #[serde(serialize_with = "serialize_problems")]
    pub set_problems: Vec<Problem>,
}

#[derive(Serialize)]
struct ProblemOut<'a> {
    #[serde(flatten)]
    problem: &'a Problem,
    message: String,
}

fn serialize_problems<S: serde::Serializer>(problems: &[Problem], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(problems.iter().map(|problem| ProblemOut {
        problem,
        message: problem.to_string(),
    }))
}

/// Verifies a set of wheels (paths to `.whl` files; see [`collect_wheels`] for directories).
/// Returns every problem found; `Err` only when nothing could be verified.
pub fn verify_set(
    wheels: &[PathBuf],
    options: &VerifyOptions,
) -> Result<VerifyReport, VerifyError> {
    if wheels.is_empty() {
        return Err(VerifyError::NoWheels);
    }
    let index = options
        .index_url
        .as_deref()
        .map(IndexClient::new)
        .transpose()
        .map_err(|e| VerifyError::Index(e.to_string()))?;
    let budget = MemoryBudget::new(options.memory_budget);
    let mut reports: Vec<WheelReport> = wheels
        .par_iter()
        .with_max_len(1)
        .map(|path| verify_wheel(path, options, &budget))
        .collect();
    let set_problems = check_set(&mut reports, options, index.as_ref());
    let problem_count =
        set_problems.len() + reports.iter().map(|r| r.problems.len()).sum::<usize>();
    Ok(VerifyReport {
        ok: problem_count == 0,
        targets: options.targets.iter().map(ToString::to_string).collect(),
        index_url: options.index_url.as_deref().map(crate::redact::redact_url),
        problem_count,
        wheels: reports,
        set_problems,
    })
}

/// Problems of the set; closure problems are added to the wheel whose requirement fails.
fn check_set(
    reports: &mut [WheelReport],
    options: &VerifyOptions,
    index: Option<&IndexClient>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for report in reports.iter() {
        by_file
            .entry(&report.file)
            .or_default()
            .push(report.path.display().to_string());
    }
    for (file, paths) in by_file {
        if paths.len() > 1 {
            problems.push(Problem::DuplicateWheel {
                file: file.to_string(),
                paths,
            });
        }
    }
    let present: BTreeSet<String> = reports.iter().filter_map(|r| r.name.clone()).collect();
    for (wheel, expected) in &options.expected {
        if !present.contains(wheel) {
            problems.push(Problem::MissingProject {
                project: expected.project.clone(),
                wheel: wheel.clone(),
                version: expected.version.to_string(),
            });
        }
    }

    // What the set provides: name -> [(version, extras, file)].
    let mut provided: HashMap<String, Vec<(Version, Vec<String>, String)>> = HashMap::new();
    for report in reports.iter() {
        if let (Some(name), Some(version)) = (&report.name, report.parsed_version()) {
            let extras = report
                .metadata
                .as_ref()
                .map(|m| m.provides_extra.clone())
                .unwrap_or_default();
            provided
                .entry(name.clone())
                .or_default()
                .push((version, extras, report.file.clone()));
        }
    }
    let mut index_cache: HashMap<String, Result<Vec<(Version, bool)>, String>> = HashMap::new();
    for report in reports.iter_mut() {
        let Some(metadata) = &report.metadata else {
            continue;
        };
        let own = normalize_name(&metadata.name);
        if let Some(expected) = options.expectations.get(&own) {
            let only_version = |name: &str| match provided.get(name).map(Vec::as_slice) {
                Some([(version, _, _)]) => Some(version),
                _ => None,
            };
            check_pins(&expected.pins, metadata, only_version, &mut report.problems);
        }
        for requirement in &metadata.requires_dist {
            let name = requirement.normalized_name();
            if name == own || !options.inside_stack(&name) {
                continue;
            }
            if requirement.url.is_some() {
                report.problems.push(Problem::Unresolved {
                    requirement: requirement.raw.clone(),
                    detail: "a direct URL reference to a stack project cannot be checked or \
                             published; pin a version"
                        .into(),
                });
                continue;
            }
            let candidates = provided.get(&name).map(Vec::as_slice).unwrap_or_default();
            let matching: Vec<&(Version, Vec<String>, String)> = candidates
                .iter()
                .filter(|(version, _, _)| requirement.specifiers.contains(version))
                .collect();
            if !matching.is_empty() {
                for extra in &requirement.extras {
                    if !matching.iter().any(|(_, extras, _)| extras.contains(extra)) {
                        report.problems.push(Problem::MissingExtra {
                            requirement: requirement.raw.clone(),
                            extra: extra.clone(),
                            provider: matching[0].2.clone(),
                        });
                    }
                }
                continue;
            }
            if candidates.is_empty() && !options.check_pins_outside_set {
                continue;
            }
            let in_set = if candidates.is_empty() {
                format!("the set has no {name} wheel")
            } else {
                let versions: Vec<String> =
                    candidates.iter().map(|(v, _, _)| v.to_string()).collect();
                format!("the set has {name} {}", versions.join(", "))
            };
            let Some(index) = index else {
                report.problems.push(Problem::Unresolved {
                    requirement: requirement.raw.clone(),
                    detail: format!("{in_set}, and no --index-url was given to look further"),
                });
                continue;
            };
            let versions = index_cache
                .entry(name.clone())
                .or_insert_with(|| index_versions(index, &name));
            // PEP 592: a yanked file only satisfies an exact pin.
            let exact = requirement.pinned_version().is_some();
            match versions {
                Ok(versions)
                    if versions.iter().any(|(v, yanked)| {
                        (exact || !yanked) && requirement.specifiers.contains(v)
                    }) => {}
                Ok(versions) => {
                    let listed = if versions.is_empty() {
                        "no files for it".to_string()
                    } else {
                        let mut shown: Vec<String> = versions
                            .iter()
                            .map(|(v, yanked)| {
                                if *yanked {
                                    format!("{v} (yanked)")
                                } else {
                                    v.to_string()
                                }
                            })
                            .collect();
                        shown.dedup();
                        format!("only {}", shown.join(", "))
                    };
                    report.problems.push(Problem::Unresolved {
                        requirement: requirement.raw.clone(),
                        detail: format!(
                            "{in_set}, and the index {}{}/ has {listed}",
                            index.display_url(),
                            normalize_name(&name)
                        ),
                    });
                }
                Err(error) => report.problems.push(Problem::Unresolved {
                    requirement: requirement.raw.clone(),
                    detail: format!("{in_set}, and the index could not be read: {error}"),
                }),
            }
        }
    }
    problems
}

/// Each wheel the recipe says this one pins, when the set holds exactly one version of it,
/// must be required as `==` that version.
fn check_pins<'a>(
    pins: &BTreeSet<String>,
    metadata: &CoreMetadata,
    only_version: impl Fn(&str) -> Option<&'a Version>,
    problems: &mut Vec<Problem>,
) {
    for dist in pins {
        let Some(version) = only_version(dist) else {
            continue;
        };
        let on_it: Vec<_> = metadata
            .requires_dist
            .iter()
            .filter(|r| r.normalized_name() == *dist)
            .collect();
        if !on_it
            .iter()
            .any(|r| r.pinned_version().is_some_and(|v| v == version))
        {
            problems.push(Problem::PinNotExact {
                dist: dist.clone(),
                version: version.to_string(),
                found: on_it.iter().map(|r| r.raw.clone()).collect(),
            });
        }
    }
}

/// Versions of a project's wheels and sdists on an index page, with their yanked flag.
fn index_versions(index: &IndexClient, name: &str) -> Result<Vec<(Version, bool)>, String> {
    let files = index
        .project(name)
        .map_err(|e| e.to_string())?
        .unwrap_or_default();
    let mut versions: Vec<(Version, bool)> = files
        .iter()
        .filter_map(|file| {
            dist_name_and_version(&file.filename).map(|(_, version)| (version, file.yanked))
        })
        .collect();
    versions.sort();
    versions.dedup();
    Ok(versions)
}

/// Bounds the ELF bytes held in memory by parallel readers.
struct MemoryBudget {
    total: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

struct BudgetGuard<'a> {
    budget: &'a MemoryBudget,
    amount: u64,
}

impl MemoryBudget {
    fn new(total: u64) -> Self {
        MemoryBudget {
            total: total.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Waits until `amount` bytes fit; a request above the whole budget waits for all of it.
    fn acquire(&self, amount: u64) -> BudgetGuard<'_> {
        let amount = amount.min(self.total);
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *used + amount > self.total {
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *used += amount;
        BudgetGuard {
            budget: self,
            amount,
        }
    }
}

impl Drop for BudgetGuard<'_> {
    fn drop(&mut self) {
        let mut used = self
            .budget
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *used -= self.amount;
        self.budget.freed.notify_all();
    }
}

/// What reading one entry found.
struct EntryOutcome {
    index: usize,
    span: Option<DataSpan>,
    /// Whether the data was read completely and as declared.
    read: bool,
    /// Digest in the RECORD algorithm, when RECORD has a hash for the entry.
    digest: Option<String>,
    size: u64,
    elf: Option<Result<ElfInfo, String>>,
    problems: Vec<Problem>,
}

/// Verifies one wheel on its own (no set-level checks).
fn verify_wheel(path: &Path, options: &VerifyOptions, budget: &MemoryBudget) -> WheelReport {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    let mut report = WheelReport {
        path: path.to_path_buf(),
        file: file.clone(),
        size: 0,
        sha256: None,
        name: None,
        version: None,
        entries: 0,
        zip64: false,
        metadata: None,
        metadata_sha256: None,
        libraries: Vec::new(),
        problems: Vec::new(),
    };
    let filename = match WheelFilename::parse(&file) {
        Ok(filename) => {
            report.name = Some(filename.normalized_name());
            report.version = Some(filename.version.to_string());
            Some(filename)
        }
        Err(error) => {
            report.problems.push(Problem::FileName {
                detail: error.to_string(),
            });
            None
        }
    };
    let opened = fs_err::File::open(path).map(fs_err::File::into_file);
    let archive = match opened {
        Ok(handle) => {
            report.size = handle.metadata().map(|m| m.len()).unwrap_or(0);
            Archive::open(handle, &mut report.problems)
        }
        Err(error) => {
            report.problems.push(Problem::Archive {
                detail: format!("cannot open the file: {error}"),
            });
            return report;
        }
    };
    let archive = match archive {
        Ok(archive) => archive,
        Err(error) => {
            report.problems.push(Problem::Archive {
                detail: error.to_string(),
            });
            return report;
        }
    };
    report.entries = archive.entries.iter().filter(|e| !e.is_dir()).count();
    report.zip64 = archive.zip64;
    check_wheel(&archive, filename.as_ref(), options, budget, &mut report);
    report
}

fn check_wheel(
    archive: &Archive,
    filename: Option<&WheelFilename>,
    options: &VerifyOptions,
    budget: &MemoryBudget,
    report: &mut WheelReport,
) {
    let problems = &mut report.problems;
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for entry in &archive.entries {
        *counts.entry(entry.name.as_str()).or_default() += 1;
    }
    let mut reported = BTreeSet::new();
    // Which entries are read in the parallel pass.
    let mut readable = vec![true; archive.entries.len()];
    for (index, entry) in archive.entries.iter().enumerate() {
        if let Some(reason) = unsafe_path(&entry.name) {
            problems.push(Problem::UnsafePath {
                entry: entry.name.clone(),
                reason: reason.to_string(),
            });
        }
        let count = counts.get(entry.name.as_str()).copied().unwrap_or(1);
        if count > 1 && reported.insert(entry.name.as_str()) {
            problems.push(Problem::DuplicateEntry {
                entry: entry.name.clone(),
                count,
            });
        }
        if entry.is_symlink() {
            problems.push(Problem::UnsafePath {
                entry: entry.name.clone(),
                reason: "a symbolic link entry (the wheel format has no links; installers \
                         write it as a file or refuse it)"
                    .into(),
            });
        }
        if entry.is_dir() {
            readable[index] = false;
            continue;
        }
        if entry.encrypted() {
            problems.push(Problem::EntryData {
                entry: entry.name.clone(),
                detail: "it is encrypted; installers cannot read it".into(),
            });
            readable[index] = false;
        } else if entry.method != METHOD_STORED && entry.method != METHOD_DEFLATE {
            problems.push(Problem::EntryData {
                entry: entry.name.clone(),
                detail: format!(
                    "compression method {}; installers only reliably read stored (0) and \
                     deflate (8)",
                    entry.method
                ),
            });
            readable[index] = false;
        } else if entry.size > RATIO_MIN_SIZE
            && entry.size / entry.compressed_size.max(1) > MAX_RATIO
        {
            problems.push(Problem::CompressionRatio {
                entry: entry.name.clone(),
                compressed: entry.compressed_size,
                uncompressed: entry.size,
            });
            readable[index] = false;
        }
    }

    // The .dist-info directory: METADATA, WHEEL and RECORD are read first, sequentially.
    let mut spans: Vec<Option<DataSpan>> = vec![None; archive.entries.len()];
    let mut small: HashMap<usize, Vec<u8>> = HashMap::new();
    let dist_info = find_dist_info(archive, filename, problems);
    // Entries read (or tried) before the parallel pass.
    let mut handled = vec![false; archive.entries.len()];
    let mut read_dist_file =
        |name: &str, problems: &mut Vec<Problem>| -> Option<(usize, Vec<u8>)> {
            let index = archive.entries.iter().position(|e| e.name == name)?;
            if !readable[index] {
                return None;
            }
            handled[index] = true;
            let entry = &archive.entries[index];
            match archive.local_header(entry, problems) {
                Ok(span) => spans[index] = Some(span),
                Err(detail) => {
                    problems.push(Problem::EntryData {
                        entry: name.to_string(),
                        detail,
                    });
                    return None;
                }
            }
            match archive.read_small(entry, MAX_DIST_INFO_FILE, &mut Vec::new()) {
                Ok(bytes) => Some((index, bytes)),
                Err(detail) => {
                    problems.push(Problem::EntryData {
                        entry: name.to_string(),
                        detail,
                    });
                    None
                }
            }
        };
    let mut record_lines: Vec<RecordLine> = Vec::new();
    let mut record_path = None;
    let mut wheel_info = None;
    if let Some(dir) = &dist_info {
        let metadata_path = format!("{dir}/METADATA");
        match read_dist_file(&metadata_path, problems) {
            Some((index, bytes)) => {
                small.insert(index, bytes.clone());
                match CoreMetadata::parse(&metadata_path, bytes) {
                    Ok(metadata) => report.metadata = Some(metadata),
                    Err(error) => problems.push(Problem::DistInfo {
                        detail: error.to_string(),
                    }),
                }
            }
            None if !archive.entries.iter().any(|e| e.name == metadata_path) => {
                problems.push(Problem::DistInfo {
                    detail: format!("no '{metadata_path}'"),
                })
            }
            None => {}
        }
        let wheel_path = format!("{dir}/WHEEL");
        match read_dist_file(&wheel_path, problems) {
            Some((index, bytes)) => {
                match WheelInfo::parse(&wheel_path, &bytes) {
                    Ok(info) => wheel_info = Some(info),
                    Err(error) => problems.push(Problem::DistInfo {
                        detail: error.to_string(),
                    }),
                }
                small.insert(index, bytes);
            }
            None if !archive.entries.iter().any(|e| e.name == wheel_path) => {
                problems.push(Problem::DistInfo {
                    detail: format!("no '{wheel_path}'"),
                })
            }
            None => {}
        }
        let path = format!("{dir}/RECORD");
        match read_dist_file(&path, problems) {
            Some((_, bytes)) => {
                let text = String::from_utf8_lossy(&bytes);
                let (lines, errors) = record::parse(&text);
                for error in errors {
                    problems.push(Problem::RecordInvalid {
                        line: error.line,
                        detail: error.detail,
                    });
                }
                record_lines = lines;
            }
            None if !archive.entries.iter().any(|e| e.name == path) => {
                problems.push(Problem::RecordMissing {
                    record: path.clone(),
                });
            }
            None => {}
        }
        record_path = Some(path);
    }

    check_names(
        filename,
        dist_info.as_deref(),
        report.metadata.as_ref(),
        wheel_info.as_ref(),
        options,
        problems,
    );
    if let Some(metadata) = &report.metadata {
        report.metadata_sha256 = Some(metadata.sha256());
        report.name = Some(normalize_name(&metadata.name));
        report.version = Some(metadata.version.to_string());
    }

    // RECORD by path; a path listed twice is itself a defect.
    let mut recorded: HashMap<&str, &RecordLine> = HashMap::new();
    for line in &record_lines {
        if recorded.insert(line.path.as_str(), line).is_some() {
            problems.push(Problem::RecordInvalid {
                line: line.line,
                detail: format!("'{}' is listed more than once", line.path),
            });
        }
    }

    // The parallel pass: every other file entry is read once, biggest first.
    // The parallel pass: every other entry; those not to be read (directories, the zip-bomb
    // guard, unsupported methods) only have their local header checked, for the layout check.
    let mut order: Vec<usize> = (0..archive.entries.len())
        .filter(|i| !handled[*i])
        .collect();
    order.sort_by_key(|i| std::cmp::Reverse(archive.entries[*i].compressed_size));
    let algorithm_of = |name: &str| {
        recorded
            .get(name)
            .and_then(|line| line.hash.as_ref())
            .map(|(a, _)| *a)
    };
    let (sha256, outcomes) = rayon::join(
        || {
            crate::fsutil::sha256_reader(archive.whole_file())
                .ok()
                .map(|(digest, _)| digest)
        },
        || {
            order
                .par_iter()
                .with_max_len(1)
                .map(|index| {
                    if !readable[*index] {
                        return header_only(archive, *index);
                    }
                    read_entry(
                        archive,
                        *index,
                        algorithm_of(&archive.entries[*index].name),
                        budget,
                    )
                })
                .collect::<Vec<EntryOutcome>>()
        },
    );
    report.sha256 = sha256;
    let mut digests: HashMap<usize, (Option<String>, u64)> = HashMap::new();
    let mut elves: Vec<(usize, ElfInfo)> = Vec::new();
    for outcome in outcomes {
        problems.extend(outcome.problems);
        spans[outcome.index] = outcome.span;
        let name = &archive.entries[outcome.index].name;
        match outcome.elf {
            Some(Ok(info)) => elves.push((outcome.index, info)),
            Some(Err(detail)) => problems.push(Problem::Elf {
                entry: name.clone(),
                detail,
            }),
            None => {}
        }
        if outcome.read {
            digests.insert(outcome.index, (outcome.digest, outcome.size));
        }
    }
    for (index, bytes) in &small {
        let algorithm =
            algorithm_of(&archive.entries[*index].name).unwrap_or(HashAlgorithm::Sha256);
        let mut hasher = Hasher::new(algorithm);
        hasher.update(bytes);
        digests.insert(*index, (Some(hasher.finish()), bytes.len() as u64));
    }
    check_layout(archive, &spans, problems);
    if let Some(record_path) = &record_path
        && archive.entries.iter().any(|e| &e.name == record_path)
    {
        check_record(archive, record_path, &recorded, &digests, problems);
    }
    elves.sort_by_key(|(index, _)| archive.entries[*index].name.clone());
    report.libraries = check_elves(archive, &elves, options, report.name.as_deref(), problems);
    if let Some(filename) = filename {
        let needs = report
            .libraries
            .iter()
            .filter_map(|l| l.glibc.map(|g| (l.entry.as_str(), g)));
        report.problems.extend(crate::wheel::manylinux::check(
            &filename.platform,
            crate::wheel::manylinux::highest_need(needs),
            options.allow_linux_tag,
        ));
    }
}

/// Reads one entry: validates its local header, inflates, hashes and inspects ELF files.
fn read_entry(
    archive: &Archive,
    index: usize,
    algorithm: Option<HashAlgorithm>,
    budget: &MemoryBudget,
) -> EntryOutcome {
    let entry = &archive.entries[index];
    let mut outcome = EntryOutcome {
        index,
        span: None,
        read: false,
        digest: None,
        size: 0,
        elf: None,
        problems: Vec::new(),
    };
    let fail = |outcome: &mut EntryOutcome, detail: String| {
        outcome.problems.push(Problem::EntryData {
            entry: entry.name.clone(),
            detail,
        });
    };
    let span = match archive.local_header(entry, &mut outcome.problems) {
        Ok(span) => span,
        Err(detail) => {
            fail(&mut outcome, detail);
            return outcome;
        }
    };
    outcome.span = Some(span);
    let mut reader = match archive.reader(entry, span) {
        Ok(reader) => reader,
        Err(detail) => {
            fail(&mut outcome, detail);
            return outcome;
        }
    };
    let mut hasher = algorithm.map(Hasher::new);
    let chunk = usize::try_from(entry.size.saturating_add(1))
        .unwrap_or(usize::MAX)
        .clamp(4096, 1 << 20);
    let mut buffer = vec![0u8; chunk];
    let mut elf: Option<(Vec<u8>, BudgetGuard<'_>)> = None;
    let mut first = true;
    loop {
        let n = match reader.read(&mut buffer) {
            Ok(n) => n,
            Err(error) => {
                fail(&mut outcome, error.to_string());
                return outcome;
            }
        };
        if n == 0 {
            break;
        }
        let data = &buffer[..n];
        if first {
            first = false;
            if data.starts_with(ELF_MAGIC) {
                let guard = budget.acquire(entry.size);
                let capacity = usize::try_from(entry.size).unwrap_or(0);
                elf = Some((Vec::with_capacity(capacity), guard));
            }
        }
        if let Some(hasher) = hasher.as_mut() {
            hasher.update(data);
        }
        if let Some((bytes, _)) = elf.as_mut() {
            bytes.extend_from_slice(data);
        }
        outcome.size += n as u64;
    }
    outcome.read = true;
    outcome.digest = hasher.map(Hasher::finish);
    outcome.elf = elf.map(|(bytes, _guard)| elf::inspect(&bytes));
    outcome
}

/// Checks only the local header of an entry that is not read.
fn header_only(archive: &Archive, index: usize) -> EntryOutcome {
    let entry = &archive.entries[index];
    let mut problems = Vec::new();
    let span = match archive.local_header(entry, &mut problems) {
        Ok(span) => Some(span),
        Err(detail) => {
            problems.push(Problem::EntryData {
                entry: entry.name.clone(),
                detail,
            });
            None
        }
    };
    EntryOutcome {
        index,
        span,
        read: false,
        digest: None,
        size: 0,
        elf: None,
        problems,
    }
}

/// Why an entry path is unsafe to extract, if it is.
fn unsafe_path(name: &str) -> Option<&'static str> {
    if name.contains('\0') {
        return Some("a NUL byte in the name");
    }
    if name.contains('\\') {
        return Some("a backslash in the name (a path separator on Windows)");
    }
    if name.starts_with('/') {
        return Some("an absolute path");
    }
    let bytes = name.as_bytes();
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Some("a drive-letter path");
    }
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    for component in trimmed.split('/') {
        match component {
            ".." => return Some("a '..' component escapes the wheel root"),
            "" | "." => return Some("an empty or '.' component (a non-canonical path)"),
            _ => {}
        }
    }
    None
}

/// Finds the one `.dist-info` directory, preferring the one the file name implies.
fn find_dist_info(
    archive: &Archive,
    filename: Option<&WheelFilename>,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    let mut dirs: Vec<&str> = archive
        .entries
        .iter()
        .filter_map(|e| e.name.split_once('/').map(|(top, _)| top))
        .filter(|top| top.ends_with(".dist-info"))
        .collect();
    dirs.sort_unstable();
    dirs.dedup();
    match dirs.as_slice() {
        [] => {
            problems.push(Problem::DistInfo {
                detail: "no .dist-info directory: this is not a wheel".into(),
            });
            None
        }
        [one] => Some((*one).to_string()),
        several => {
            problems.push(Problem::DistInfo {
                detail: format!(
                    "{} .dist-info directories ({}); a wheel has exactly one",
                    several.len(),
                    several.join(", ")
                ),
            });
            let wanted = filename.map(WheelFilename::normalized_name);
            several
                .iter()
                .find(|dir| {
                    dir.trim_end_matches(".dist-info")
                        .rsplit_once('-')
                        .is_some_and(|(name, _)| Some(normalize_name(name)) == wanted)
                })
                .or(several.first())
                .map(|dir| (*dir).to_string())
        }
    }
}

/// Name, version and tags must agree between the file name, the `.dist-info` directory,
/// METADATA, WHEEL and the lock.
fn check_names(
    filename: Option<&WheelFilename>,
    dist_info: Option<&str>,
    metadata: Option<&CoreMetadata>,
    wheel_info: Option<&WheelInfo>,
    options: &VerifyOptions,
    problems: &mut Vec<Problem>,
) {
    let Some(filename) = filename else { return };
    let mismatch = |what: &str, file_name: String, found: String| Problem::Mismatch {
        what: what.to_string(),
        file_name,
        metadata: found,
    };
    if let Some(dir) = dist_info {
        match dir.trim_end_matches(".dist-info").rsplit_once('-') {
            Some((name, version)) => {
                if normalize_name(name) != filename.normalized_name() {
                    problems.push(mismatch(
                        "the .dist-info directory's name",
                        filename.name.clone(),
                        name.to_string(),
                    ));
                }
                if Version::from_str(version).ok().as_ref() != Some(&filename.version) {
                    problems.push(mismatch(
                        "the .dist-info directory's version",
                        filename.version_text().to_string(),
                        version.to_string(),
                    ));
                }
            }
            None => problems.push(Problem::DistInfo {
                detail: format!("'{dir}' is not named {{name}}-{{version}}.dist-info"),
            }),
        }
    }
    if let Some(metadata) = metadata {
        if normalize_name(&metadata.name) != filename.normalized_name() {
            problems.push(mismatch(
                "METADATA Name",
                filename.name.clone(),
                metadata.name.clone(),
            ));
        }
        if metadata.version != filename.version {
            problems.push(mismatch(
                "METADATA Version",
                filename.version_text().to_string(),
                metadata.version.to_string(),
            ));
        }
    }
    if let Some(info) = wheel_info {
        let from_name: BTreeSet<String> = filename.tags().into_iter().collect();
        let from_wheel: BTreeSet<String> = info.tags.iter().cloned().collect();
        if from_name != from_wheel {
            problems.push(mismatch(
                "WHEEL Tag",
                from_name.into_iter().collect::<Vec<_>>().join(", "),
                from_wheel.into_iter().collect::<Vec<_>>().join(", "),
            ));
        }
        if info.build != filename.build {
            problems.push(mismatch(
                "WHEEL Build",
                filename.build.clone().unwrap_or_else(|| "(none)".into()),
                info.build.clone().unwrap_or_else(|| "(none)".into()),
            ));
        }
    }
    if let Some(expected) = options.expected.get(&filename.normalized_name()) {
        let actual = metadata.map_or(&filename.version, |m| &m.version);
        if *actual != expected.version {
            problems.push(Problem::LockVersion {
                project: expected.project.clone(),
                expected: expected.version.to_string(),
                actual: actual.to_string(),
            });
        }
    }
}

/// Entries must tile the archive: no bytes before, between or after them that the central
/// directory does not account for (hidden content), and no overlaps (zip bombs reuse data).
fn check_layout(archive: &Archive, spans: &[Option<DataSpan>], problems: &mut Vec<Problem>) {
    let mut ordered: Vec<(u64, u64, &Entry)> = archive
        .entries
        .iter()
        .zip(spans)
        .filter_map(|(entry, span)| span.map(|s| (entry.header_offset, s.end, entry)))
        .collect();
    // Only a fully read archive can be judged for gaps.
    let complete = ordered.len() == archive.entries.len();
    ordered.sort_by_key(|(start, _, _)| *start);
    let mut position = 0u64;
    let mut previous: Option<&Entry> = None;
    for (start, end, entry) in &ordered {
        if *start < position {
            problems.push(Problem::zip(
                Some(&entry.name),
                format!(
                    "its local header at offset {start} lies inside the data of '{}' (overlapping entries)",
                    previous.map_or("", |p| p.name.as_str())
                ),
            ));
        } else if *start > position && complete {
            problems.push(Problem::zip(
                None,
                format!(
                    "{} bytes at offset {position} belong to no entry (hidden data)",
                    start - position
                ),
            ));
        }
        position = position.max(*end);
        previous = Some(entry);
    }
    if complete && position < archive.central_directory_offset {
        problems.push(Problem::zip(
            None,
            format!(
                "{} bytes at offset {position}, before the central directory, belong to no entry (hidden data)",
                archive.central_directory_offset - position
            ),
        ));
    }
}

/// Signature files next to RECORD are not listed in it (binary distribution format spec).
fn exempt_from_record(name: &str, record_path: &str) -> bool {
    name == record_path
        || name == format!("{record_path}.jws")
        || name == format!("{record_path}.p7s")
}

fn check_record(
    archive: &Archive,
    record_path: &str,
    recorded: &HashMap<&str, &RecordLine>,
    digests: &HashMap<usize, (Option<String>, u64)>,
    problems: &mut Vec<Problem>,
) {
    let mut present = BTreeSet::new();
    for (index, entry) in archive.entries.iter().enumerate() {
        if entry.is_dir() {
            continue;
        }
        present.insert(entry.name.as_str());
        if exempt_from_record(&entry.name, record_path) {
            continue;
        }
        let Some(line) = recorded.get(entry.name.as_str()) else {
            problems.push(Problem::NotInRecord {
                entry: entry.name.clone(),
            });
            continue;
        };
        let Some((algorithm, expected)) = &line.hash else {
            problems.push(Problem::RecordInvalid {
                line: line.line,
                detail: format!(
                    "'{}' has no hash (only RECORD itself may go without)",
                    line.path
                ),
            });
            continue;
        };
        // Entries that could not be read were reported already.
        let Some((digest, size)) = digests.get(&index) else {
            continue;
        };
        if let Some(actual) = digest
            && actual != expected
        {
            problems.push(Problem::RecordHashMismatch {
                entry: entry.name.clone(),
                algorithm: algorithm.name().to_string(),
                expected: expected.clone(),
                actual: actual.clone(),
            });
        }
        if let Some(expected_size) = line.size
            && expected_size != *size
        {
            problems.push(Problem::RecordSizeMismatch {
                entry: entry.name.clone(),
                expected: expected_size,
                actual: *size,
            });
        }
    }
    let mut missing: Vec<&&RecordLine> = recorded
        .values()
        .filter(|line| !present.contains(line.path.as_str()))
        .collect();
    missing.sort_by_key(|line| line.line);
    for line in missing {
        problems.push(Problem::MissingFile {
            entry: line.path.clone(),
        });
    }
}

/// GPU targets per offload bundle, the HIP runtime link and search paths of each ELF file.
fn check_elves(
    archive: &Archive,
    elves: &[(usize, ElfInfo)],
    options: &VerifyOptions,
    wheel_name: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Vec<LibraryReport> {
    let mut libraries = Vec::new();
    for (index, info) in elves {
        let entry = archive.entries[*index].name.clone();
        for (tag, paths) in [("RPATH", &info.rpath), ("RUNPATH", &info.runpath)] {
            for path in paths {
                if let Some(reason) = elf::search_path_problem(path) {
                    problems.push(Problem::Rpath {
                        entry: entry.clone(),
                        tag: tag.to_string(),
                        path: path.clone(),
                        reason: reason.to_string(),
                    });
                }
            }
        }
        let mut found = BTreeSet::new();
        let mut bundles = 0;
        let mut compressed = 0;
        if let Some(scan) = &info.gpu {
            if let Some(error) = &scan.error {
                problems.push(Problem::GpuCode {
                    entry: entry.clone(),
                    detail: error.clone(),
                });
            }
            // Host-only bundles carry no device code to judge.
            let device: Vec<BTreeSet<&str>> = scan
                .bundles
                .iter()
                .map(|b| b.targets().collect::<BTreeSet<&str>>())
                .filter(|targets| !targets.is_empty())
                .collect();
            bundles = device.len();
            compressed = scan
                .bundles
                .iter()
                .filter(|b| b.compressed.is_some())
                .count();
            found = device.iter().flatten().map(|t| (*t).to_string()).collect();
            for target in &options.targets {
                let missing = device
                    .iter()
                    .filter(|t| !t.contains(target.as_str()))
                    .count();
                if missing > 0 {
                    problems.push(Problem::TargetMissing {
                        entry: entry.clone(),
                        target: target.to_string(),
                        bundles_missing: missing,
                        bundles_total: device.len(),
                        found: found.iter().cloned().collect(),
                    });
                }
            }
        }
        libraries.push(LibraryReport {
            entry,
            targets: found.into_iter().collect(),
            bundles,
            compressed_bundles: compressed,
            needed: info.needed.clone(),
            rpath: info.rpath.clone(),
            runpath: info.runpath.clone(),
            glibc: info.glibc,
        });
    }
    if let Some(name) = wheel_name
        && options
            .expectations
            .get(name)
            .is_some_and(|e| e.links_hip_runtime)
        && !elves.iter().any(|(_, info)| info.links_hip_runtime())
    {
        problems.push(Problem::NoHipRuntime {
            libraries: elves.len(),
        });
    }
    libraries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_unsafe_paths() {
        for (name, reason) in [
            ("../evil.py", "'..'"),
            ("pkg/../../evil.py", "'..'"),
            ("/etc/passwd", "absolute"),
            ("C:/evil", "drive-letter"),
            ("pkg\\evil.py", "backslash"),
            ("pkg//a.py", "non-canonical"),
            ("./a.py", "non-canonical"),
        ] {
            let found = unsafe_path(name).unwrap_or_else(|| panic!("{name} passed"));
            assert!(found.contains(reason), "{name}: {found}");
        }
        for name in [
            "pkg/a.py",
            "pkg/sub/",
            "torch-2.0.dist-info/RECORD",
            "a..b/c",
        ] {
            assert_eq!(unsafe_path(name), None, "{name}");
        }
    }

    /// A minimal valid wheel (with a directory entry) written by the zip crate.
    fn wheel_bytes() -> Vec<u8> {
        wheel_bytes_with("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
    }

    fn wheel_bytes_with(metadata: &str) -> Vec<u8> {
        use std::io::Write;
        let files: [(&str, &[u8]); 3] = [
            ("demo/__init__.py", b"x = 1\n"),
            ("demo-1.0.dist-info/METADATA", metadata.as_bytes()),
            (
                "demo-1.0.dist-info/WHEEL",
                b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
            ),
        ];
        let mut record = String::new();
        for (name, data) in files {
            record.push_str(&format!(
                "{name},{},{}\n",
                record::record_hash(data),
                data.len()
            ));
        }
        record.push_str("demo-1.0.dist-info/RECORD,,\n");
        let mut cursor = std::io::Cursor::new(Vec::new());
        let mut writer = zip::ZipWriter::new(&mut cursor);
        let options = zip::write::SimpleFileOptions::default();
        writer.add_directory("demo/", options).expect("dir");
        for (name, data) in files
            .iter()
            .copied()
            .chain([("demo-1.0.dist-info/RECORD", record.as_bytes())])
        {
            writer.start_file(name, options).expect("start");
            writer.write_all(data).expect("write");
        }
        writer.finish().expect("finish");
        cursor.into_inner()
    }

    fn verify_bytes(bytes: &[u8]) -> Vec<String> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("demo-1.0-py3-none-any.whl");
        fs_err::write(&path, bytes).expect("write");
        let stack = crate::stack::Stack::load(None).expect("stack");
        let report = verify_set(&[path], &VerifyOptions::for_stack(&stack, BTreeMap::new()))
            .expect("verifies");
        report.wheels[0]
            .problems
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn directory_entries_pass_and_hidden_bytes_are_found() {
        let bytes = wheel_bytes();
        assert_eq!(verify_bytes(&bytes), Vec::<String>::new());
        // Splice 7 bytes in front of the central directory and move the end record's offset.
        let eocd = bytes.len() - 22;
        let cd_offset =
            u32::from_le_bytes(bytes[eocd + 16..eocd + 20].try_into().expect("4 bytes")) as usize;
        let mut hidden = bytes[..cd_offset].to_vec();
        hidden.extend_from_slice(b"PAYLOAD");
        hidden.extend_from_slice(&bytes[cd_offset..]);
        let eocd = hidden.len() - 22;
        hidden[eocd + 16..eocd + 20].copy_from_slice(&((cd_offset + 7) as u32).to_le_bytes());
        assert_eq!(
            verify_bytes(&hidden),
            [format!(
                "zip structure: 7 bytes at offset {cd_offset}, before the central directory, belong to no entry (hidden data)"
            )]
        );
    }

    #[test]
    fn pins_outside_the_set_can_be_left_unchecked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("demo-1.0-py3-none-any.whl");
        fs_err::write(
            &path,
            wheel_bytes_with(
                "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: rocm==7.0\n",
            ),
        )
        .expect("write");
        let stack = crate::stack::Stack::load(None).expect("stack");
        let mut options = VerifyOptions::for_stack(&stack, BTreeMap::new());
        let report = verify_set(std::slice::from_ref(&path), &options).expect("verifies");
        assert_eq!(report.problem_count, 1, "{:?}", report.wheels[0].problems);
        options.check_pins_outside_set = false;
        let report = verify_set(&[path], &options).expect("verifies");
        assert!(report.ok, "{:?}", report.wheels[0].problems);
    }

    #[test]
    fn the_memory_budget_admits_oversized_requests_alone() {
        let budget = MemoryBudget::new(100);
        let big = budget.acquire(1000);
        assert_eq!(*budget.used.lock().expect("lock"), 100);
        drop(big);
        let a = budget.acquire(60);
        let b = std::thread::scope(|scope| {
            let waiter = scope.spawn(|| {
                let _c = budget.acquire(60);
                *budget.used.lock().expect("lock")
            });
            drop(a);
            waiter.join().expect("join")
        });
        assert_eq!(b, 60);
        assert_eq!(*budget.used.lock().expect("lock"), 0);
    }
}
