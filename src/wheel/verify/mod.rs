//! Verifying one wheel on its own, every problem a typed [`Problem`]: the zip container
//! (strictly, see `archive`), entry paths, RECORD (every file listed with a matching hash and
//! size, nothing unlisted), name/version/tags of the file name against METADATA, WHEEL and the
//! `.dist-info` directory, the expected version, and in ELF files the GPU targets of each
//! offload bundle, the HIP runtime link and RPATH/RUNPATH. What a *set* must satisfy (unique
//! files, every project present, pins that resolve) is the verify stage's (`crate::verify`).
//!
//! Each entry is read once: it is inflated, hashed and (for ELF files) inspected in one
//! stream. Entries of a wheel and the wheels of a set are processed in parallel (rayon); the
//! wheel's own SHA-256 (for indexes and test reports) is computed alongside.
//!
//! The parts: [`entries`] screens and reads the entries, [`dist_info`] reads and checks the
//! `.dist-info` files, [`checks`] judges the archive layout, RECORD and the ELF files.

mod checks;
mod dist_info;
mod entries;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::Version;
use rayon::prelude::*;
use serde::Serialize;

use crate::binary::elf::ElfInfo;
use crate::binary::pe::PeInfo;
use crate::stack::Target;
use crate::wheel::archive::{Archive, DataSpan, Entry, EntryError};
use crate::wheel::companion::Role;
use crate::wheel::filename::{WheelFilename, normalize_name};
use crate::wheel::metadata::CoreMetadata;
use crate::wheel::problem::Problem;
use crate::wheel::record::{HashAlgorithm, Hasher, RecordLine};
use entries::{EntryOutcome, MemoryBudget};

/// Default bound on ELF bytes held in memory at once across all parallel readers.
pub const DEFAULT_MEMORY_BUDGET: u64 = 4 << 30;

/// What every wheel of a set is checked against.
#[derive(Debug, Clone, Default)]
pub struct WheelExpectations {
    /// gfx targets every GPU library must carry code for (empty: not checked).
    pub targets: Vec<Target>,
    /// What each stack project's recipe expects of its wheel, by normalized wheel name
    /// (`recipes::Recipes::wheel_expectations`).
    pub recipes: BTreeMap<String, WheelExpectation>,
    /// Versions expected (the lock's build record), by normalized wheel name.
    pub versions: BTreeMap<String, ExpectedVersion>,
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

/// The format of a native library of a wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NativeFormat {
    Elf,
    Pe,
}

impl NativeFormat {
    fn is_elf(&self) -> bool {
        *self == NativeFormat::Elf
    }
}

/// One ELF file or PE image of a wheel, as the report shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LibraryReport {
    pub entry: String,
    /// ELF (not shown) or PE.
    #[serde(skip_serializing_if = "NativeFormat::is_elf")]
    pub format: NativeFormat,
    /// gfx targets found in any of its offload bundles (sorted).
    pub targets: Vec<String>,
    pub bundles: usize,
    pub compressed_bundles: usize,
    /// DT_NEEDED of an ELF file, the import directory's DLLs of a PE image.
    pub needed: Vec<String>,
    /// The DLLs a PE image delay-loads (on first call): reported, not resolved, since an
    /// image may delay-load what is optional.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delay_loaded: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rpath: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runpath: Vec<String>,
    /// The highest glibc it needs (`rockbuild retag` reads it; the report does not show it).
    #[serde(skip)]
    pub glibc: Option<crate::binary::elf::Glibc>,
    /// A host library of a kpack split: where its device code is (the set checks the packs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kpack: Option<crate::binary::kpack::Marker>,
}

/// A kernel pack of a device wheel, as verification read it.
#[derive(Debug, Clone, Serialize)]
pub struct PackReport {
    pub entry: String,
    /// The pack's target (`gfx906`), which every code object in it was compiled for.
    pub arch: String,
    /// Its table's binary keys (`lib/libtorch_hip.so#0`).
    pub kernels: Vec<String>,
}

/// The verdict on one wheel.
#[derive(Debug, Clone, Serialize)]
pub struct WheelReport {
    pub path: PathBuf,
    pub file: String,
    /// A product (every check) or a companion (read for its hash and METADATA; its
    /// provenance is the set's to check, see `crate::wheel::companion`).
    pub role: Role,
    /// A companion's source: the index file its bytes were found identical to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
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
    /// The DLLs it holds (file names, lowercase), that imports of the set resolve to.
    #[serde(skip)]
    pub dlls: BTreeSet<String>,
    /// Kernel packs (device wheels of a kpack split).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub packs: Vec<PackReport>,
    #[serde(serialize_with = "serialize_problems")]
    pub problems: Vec<Problem>,
}

impl WheelReport {
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// Versions as parsed, for closure checks (METADATA first, the file name otherwise).
    pub fn parsed_version(&self) -> Option<Version> {
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

#[derive(Serialize)]
struct ProblemOut<'a> {
    #[serde(flatten)]
    problem: &'a Problem,
    message: String,
}

/// Problems as JSON: the typed problem and its message.
pub fn serialize_problems<S: serde::Serializer>(
    problems: &[Problem],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(problems.iter().map(|problem| ProblemOut {
        problem,
        message: problem.to_string(),
    }))
}

/// The wheels a command line names cannot be found.
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
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
}

/// Expands the command line's wheels and directories (their `*.whl` files, not recursive)
/// into a sorted list of wheel paths. An empty directory is an error, never a pass (W5).
pub fn collect_wheels(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, CollectError> {
    let mut out = Vec::new();
    for input in inputs {
        let metadata =
            fs_err::metadata(input).map_err(|_| CollectError::NotFound(input.clone()))?;
        if !metadata.is_dir() {
            out.push(input.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = fs_err::read_dir(input)
            .map_err(|error| CollectError::Io {
                path: input.clone(),
                error,
            })?
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == "whl") && path.is_file())
            .collect();
        if found.is_empty() {
            return Err(CollectError::EmptyDirectory(input.clone()));
        }
        found.sort();
        out.append(&mut found);
    }
    if out.is_empty() {
        return Err(CollectError::NoWheels);
    }
    Ok(out)
}

/// Verifies wheels (paths to `.whl` files) each on its own, in parallel, holding at most
/// `memory_budget` bytes of ELF files in memory at once. Reports are in the order given.
/// Products get every check; companions (the ROCm SDK's wheels, by name) are only read
/// ([`read_companion`]).
pub fn verify_wheels(
    wheels: &[PathBuf],
    expect: &WheelExpectations,
    memory_budget: u64,
) -> Vec<WheelReport> {
    let budget = MemoryBudget::new(memory_budget);
    wheels
        .par_iter()
        .with_max_len(1)
        .map(|path| match Role::of_file(&file_name(path)) {
            Role::Product => verify_wheel(path, expect, &budget),
            Role::Companion => read_companion(path),
        })
        .collect()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// An empty report of a file: no problems yet, nothing read.
fn blank_report(path: &Path, role: Role) -> WheelReport {
    WheelReport {
        path: path.to_path_buf(),
        file: file_name(path),
        role,
        source: None,
        size: 0,
        sha256: None,
        name: None,
        version: None,
        entries: 0,
        zip64: false,
        metadata: None,
        metadata_sha256: None,
        libraries: Vec::new(),
        dlls: BTreeSet::new(),
        packs: Vec::new(),
        problems: Vec::new(),
    }
}

/// Reads a companion (a wheel or source distribution carried from its index): its SHA-256,
/// name and version and, for a wheel, its METADATA (the PEP 658 sidecar stage publishes with
/// it, and the requirements the set's closure follows). Nothing else is judged: its bytes
/// are the index's, checked by hash (`crate::verify`). A file that cannot be read as a
/// distribution at all is a problem, since no installer could use it either.
pub fn read_companion(path: &Path) -> WheelReport {
    let mut report = blank_report(path, Role::Companion);
    if let Some((name, version)) = crate::wheel::filename::dist_name_and_version(&report.file) {
        report.name = Some(normalize_name(&name));
        report.version = Some(version.to_string());
    }
    match crate::fsutil::sha256_file(path) {
        Ok((sha256, size)) => {
            report.sha256 = Some(sha256);
            report.size = size;
        }
        Err(error) => {
            report.problems.push(Problem::Archive {
                detail: format!("cannot read the file: {error}"),
            });
            return report;
        }
    }
    if !report.file.ends_with(".whl") {
        return report;
    }
    match metadata_and_dlls(path) {
        Ok((metadata, dlls)) => {
            report.dlls = dlls;
            report.metadata_sha256 = Some(metadata.sha256());
            report.name = Some(normalize_name(&metadata.name));
            report.version = Some(metadata.version.to_string());
            report.metadata = Some(metadata);
        }
        Err(detail) => report.problems.push(Problem::DistInfo { detail }),
    }
    report
}

/// The METADATA of a wheel (`<name>-<version>.dist-info/METADATA` at the top), without
/// verifying anything else of it.
pub fn read_metadata(path: &Path) -> Result<CoreMetadata, String> {
    metadata_and_dlls(path).map(|(metadata, _)| metadata)
}

/// The METADATA of a wheel and the DLLs it holds.
fn metadata_and_dlls(path: &Path) -> Result<(CoreMetadata, BTreeSet<String>), String> {
    const LIMIT: u64 = 64 << 20;
    let handle = fs_err::File::open(path).map_err(|e| e.to_string())?;
    let archive = Archive::open(handle.into_file(), &mut Vec::new()).map_err(|e| e.to_string())?;
    let entry = archive
        .entries
        .iter()
        .find(|e| {
            e.name
                .split_once('/')
                .is_some_and(|(dir, file)| dir.ends_with(".dist-info") && file == "METADATA")
        })
        .ok_or_else(|| "no .dist-info/METADATA".to_string())?;
    let bytes = archive
        .read_small(entry, LIMIT, &mut Vec::new())
        .map_err(|e| format!("'{}': {e}", entry.name))?;
    let metadata = CoreMetadata::parse(&entry.name, bytes).map_err(|e| e.to_string())?;
    Ok((metadata, dll_names(&archive)))
}

/// The file names (lowercase: the loader compares them so) of the `.dll` entries of a wheel.
fn dll_names(archive: &Archive) -> BTreeSet<String> {
    archive
        .entries
        .iter()
        .map(|e| {
            e.name
                .rsplit('/')
                .next()
                .unwrap_or(&e.name)
                .to_ascii_lowercase()
        })
        .filter(|name| name.ends_with(".dll"))
        .collect()
}

/// The local header of `entry`, checked against the central directory; what the archive reader
/// finds wrong with it becomes a problem.
fn local_header(
    archive: &Archive,
    entry: &Entry,
    problems: &mut Vec<Problem>,
) -> Result<DataSpan, EntryError> {
    let mut defects = Vec::new();
    let span = archive.local_header(entry, &mut defects);
    problems.extend(defects.into_iter().map(Problem::from));
    span
}

/// Verifies one wheel on its own (no set-level checks).
fn verify_wheel(path: &Path, expect: &WheelExpectations, budget: &MemoryBudget) -> WheelReport {
    let mut report = blank_report(path, Role::Product);
    let file = report.file.clone();
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
            let mut defects = Vec::new();
            let archive = Archive::open(handle, &mut defects);
            report
                .problems
                .extend(defects.into_iter().map(Problem::from));
            archive
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
    report.dlls = dll_names(&archive);
    check_wheel(&archive, filename.as_ref(), expect, budget, &mut report);
    report
}

/// Checks an opened archive: entries, `.dist-info`, names, every entry's bytes against
/// RECORD, the layout, the ELF files. Problems are reported in that order.
fn check_wheel(
    archive: &Archive,
    filename: Option<&WheelFilename>,
    expect: &WheelExpectations,
    budget: &MemoryBudget,
    report: &mut WheelReport,
) {
    let problems = &mut report.problems;
    let readable = entries::screen(archive, problems);
    let dist = dist_info::read(archive, filename, &readable, problems);
    dist_info::check_names(
        filename,
        dist.dir.as_deref(),
        dist.metadata.as_ref(),
        dist.wheel_info.as_ref(),
        &expect.versions,
        problems,
    );
    let recorded = record_by_path(&dist.record_lines, problems);

    // Every other entry, biggest first.
    let mut order: Vec<usize> = (0..archive.entries.len())
        .filter(|i| !dist.handled.contains(i))
        .collect();
    order.sort_by_key(|i| std::cmp::Reverse(archive.entries[*i].compressed_size));
    let algorithm_of = |name: &str| {
        recorded
            .get(name)
            .and_then(|line| line.hash.as_ref())
            .map(|(a, _)| *a)
    };
    let (sha256, outcomes) = entries::read_all(archive, &order, &readable, &algorithm_of, budget);
    let mut spans = vec![None; archive.entries.len()];
    for (index, span) in &dist.spans {
        spans[*index] = Some(*span);
    }
    let (mut digests, natives) = gather(archive, outcomes, &mut spans, problems);
    for (index, bytes) in &dist.bytes {
        let algorithm =
            algorithm_of(&archive.entries[*index].name).unwrap_or(HashAlgorithm::Sha256);
        let mut hasher = Hasher::new(algorithm);
        hasher.update(bytes);
        digests.insert(*index, (Some(hasher.finish()), bytes.len() as u64));
    }
    checks::check_layout(archive, &spans, problems);
    if let Some(record_path) = &dist.record_path
        && archive.entries.iter().any(|e| &e.name == record_path)
    {
        checks::check_record(archive, record_path, &recorded, &digests, problems);
    }
    let name = dist
        .metadata
        .as_ref()
        .map(|m| normalize_name(&m.name))
        .or_else(|| report.name.clone());
    report.libraries =
        checks::check_libraries(archive, &natives, expect, name.as_deref(), problems);
    report.packs = checks::check_packs(archive, name.as_deref(), problems);
    if let Some(filename) = filename {
        let needs = report
            .libraries
            .iter()
            .filter_map(|l| l.glibc.map(|g| (l.entry.as_str(), g)));
        problems.extend(crate::wheel::manylinux::check(
            &filename.platform,
            crate::wheel::manylinux::highest_need(needs),
            expect.allow_linux_tag,
        ));
    }
    report.sha256 = sha256;
    if let Some(metadata) = dist.metadata {
        report.metadata_sha256 = Some(metadata.sha256());
        report.name = Some(normalize_name(&metadata.name));
        report.version = Some(metadata.version.to_string());
        report.metadata = Some(metadata);
    }
}

/// RECORD by path; a path listed twice is itself a defect.
fn record_by_path<'a>(
    lines: &'a [RecordLine],
    problems: &mut Vec<Problem>,
) -> HashMap<&'a str, &'a RecordLine> {
    let mut recorded = HashMap::new();
    for line in lines {
        if recorded.insert(line.path.as_str(), line).is_some() {
            problems.push(Problem::RecordInvalid {
                line: line.line,
                detail: format!("'{}' is listed more than once", line.path),
            });
        }
    }
    recorded
}

/// The digest (in the entry's RECORD algorithm) and size of each entry read, by index.
type Digests = HashMap<usize, (Option<String>, u64)>;

/// The ELF files and PE images of a wheel, by entry index, sorted by entry name.
#[derive(Default)]
pub(super) struct Natives {
    pub elves: Vec<(usize, ElfInfo)>,
    pub pes: Vec<(usize, PeInfo)>,
}

/// Digests, ELF files and PE images of the parallel pass; its problems in order, each native
/// library that could not be parsed as one more.
fn gather(
    archive: &Archive,
    outcomes: Vec<EntryOutcome>,
    spans: &mut [Option<crate::wheel::archive::DataSpan>],
    problems: &mut Vec<Problem>,
) -> (Digests, Natives) {
    let mut digests = HashMap::new();
    let mut natives = Natives::default();
    for outcome in outcomes {
        problems.extend(outcome.problems);
        spans[outcome.index] = outcome.span;
        let name = &archive.entries[outcome.index].name;
        match outcome.pe {
            Some(Ok(info)) => natives.pes.push((outcome.index, info)),
            Some(Err(error)) => problems.push(Problem::Pe {
                entry: name.clone(),
                detail: error.to_string(),
            }),
            None => {}
        }
        match outcome.elf {
            Some(Ok(info)) => natives.elves.push((outcome.index, info)),
            Some(Err(error)) => problems.push(Problem::Elf {
                entry: name.clone(),
                detail: error.to_string(),
            }),
            None => {}
        }
        if outcome.read {
            digests.insert(outcome.index, (outcome.digest, outcome.size));
        }
    }
    natives
        .elves
        .sort_by_key(|(index, _)| archive.entries[*index].name.clone());
    natives
        .pes
        .sort_by_key(|(index, _)| archive.entries[*index].name.clone());
    (digests, natives)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wheel::record;

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
        let reports = verify_wheels(&[path], &WheelExpectations::default(), 1 << 20);
        reports[0]
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
    fn a_wheel_on_its_own_has_no_set_problems() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("demo-1.0-py3-none-any.whl");
        fs_err::write(
            &path,
            wheel_bytes_with(
                "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: rocm==7.0\n",
            ),
        )
        .expect("write");
        let reports = verify_wheels(&[path], &WheelExpectations::default(), 1 << 20);
        assert!(reports[0].ok(), "{:?}", reports[0].problems);
        assert_eq!(reports[0].name.as_deref(), Some("demo"));
    }
}
