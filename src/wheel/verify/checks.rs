//! Checks over a whole read wheel: the archive layout, RECORD against what was read, and the
//! ELF files (GPU targets, HIP runtime link, search paths, kpack markers), the PE images (GPU
//! targets, imports) and the kernel packs of device wheels.

use std::collections::{BTreeSet, HashMap};

use super::{LibraryReport, NativeFormat, Natives, PackReport, WheelExpectations};
use crate::binary::elf;
use crate::binary::elf::code_object_target;
use crate::binary::kpack::Marker;
use crate::binary::kpack::archive::Pack;
use crate::binary::offload::SectionScan;
use crate::binary::target_id;
use crate::wheel::archive::{Archive, DataSpan, Entry};
use crate::wheel::problem::Problem;
use crate::wheel::record::RecordLine;

/// Entries must tile the archive: no bytes before, between or after them that the central
/// directory does not account for (hidden content), and no overlaps (zip bombs reuse data).
pub(super) fn check_layout(
    archive: &Archive,
    spans: &[Option<DataSpan>],
    problems: &mut Vec<Problem>,
) {
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

pub(super) fn check_record(
    archive: &Archive,
    record_path: &str,
    recorded: &HashMap<&str, &RecordLine>,
    digests: &super::Digests,
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

/// GPU targets per offload bundle, the HIP runtime link and search paths of each ELF file;
/// GPU targets and imports of each PE image (whether the imports resolve is the set's to
/// judge: `crate::verify`).
pub(super) fn check_libraries(
    archive: &Archive,
    natives: &Natives,
    expect: &WheelExpectations,
    wheel_name: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Vec<LibraryReport> {
    let mut libraries = Vec::new();
    for (index, info) in &natives.elves {
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
        let gpu = gpu_code(&entry, info.gpu.as_ref(), expect, problems);
        let kpack = kpack_marker(&entry, info.kpack.as_ref(), ".hip_fatbin", &gpu, problems);
        libraries.push(LibraryReport {
            kpack,
            entry,
            format: NativeFormat::Elf,
            targets: gpu.targets.into_iter().collect(),
            bundles: gpu.bundles,
            compressed_bundles: gpu.compressed,
            needed: info.needed.clone(),
            delay_loaded: Vec::new(),
            rpath: info.rpath.clone(),
            runpath: info.runpath.clone(),
            glibc: info.glibc,
        });
    }
    for (index, info) in &natives.pes {
        let entry = archive.entries[*index].name.clone();
        let gpu = gpu_code(&entry, info.gpu.as_ref(), expect, problems);
        let kpack = kpack_marker(&entry, info.kpack.as_ref(), ".hip_fat", &gpu, problems);
        libraries.push(LibraryReport {
            kpack,
            entry,
            format: NativeFormat::Pe,
            targets: gpu.targets.into_iter().collect(),
            bundles: gpu.bundles,
            compressed_bundles: gpu.compressed,
            needed: info.imports.clone(),
            delay_loaded: info.delay_imports.clone(),
            rpath: Vec::new(),
            runpath: Vec::new(),
            glibc: None,
        });
    }
    libraries.sort_by(|a, b| a.entry.cmp(&b.entry));
    let links_hip = natives.elves.iter().any(|(_, i)| i.links_hip_runtime())
        || natives.pes.iter().any(|(_, i)| i.links_hip_runtime());
    if let Some(name) = wheel_name
        && expect
            .recipes
            .get(name)
            .is_some_and(|recipe| recipe.links_hip_runtime)
        && !links_hip
    {
        problems.push(if natives.pes.is_empty() {
            Problem::NoHipRuntime {
                libraries: natives.elves.len(),
            }
        } else {
            Problem::NoHipRuntimeImport {
                libraries: natives.elves.len() + natives.pes.len(),
            }
        });
    }
    libraries
}

/// What a library's offload bundles hold.
struct GpuCode {
    targets: BTreeSet<String>,
    /// Bundles with device code.
    bundles: usize,
    compressed: usize,
}

/// The targets of a library's offload bundles, each requested target checked in every
/// bundle with device code.
fn gpu_code(
    entry: &str,
    scan: Option<&SectionScan>,
    expect: &WheelExpectations,
    problems: &mut Vec<Problem>,
) -> GpuCode {
    let Some(scan) = scan else {
        return GpuCode {
            targets: BTreeSet::new(),
            bundles: 0,
            compressed: 0,
        };
    };
    if let Some(error) = &scan.error {
        problems.push(Problem::GpuCode {
            entry: entry.to_string(),
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
    let found: BTreeSet<String> = device.iter().flatten().map(|t| (*t).to_string()).collect();
    for target in &expect.targets {
        let missing = device
            .iter()
            .filter(|t| !t.contains(target.as_str()))
            .count();
        if missing > 0 {
            problems.push(Problem::TargetMissing {
                entry: entry.to_string(),
                target: target.to_string(),
                bundles_missing: missing,
                bundles_total: device.len(),
                found: found.iter().cloned().collect(),
            });
        }
    }
    GpuCode {
        bundles: device.len(),
        compressed: scan
            .bundles
            .iter()
            .filter(|b| b.compressed.is_some())
            .count(),
        targets: found,
    }
}

/// The marker of a host library of a kpack split (ELF or PE), its problems pushed.
fn kpack_marker(
    entry: &str,
    marker: Option<&Result<Marker, String>>,
    fatbin_section: &str,
    gpu: &GpuCode,
    problems: &mut Vec<Problem>,
) -> Option<Marker> {
    match marker? {
        Err(detail) => {
            problems.push(Problem::KpackReference {
                entry: entry.to_string(),
                detail: detail.clone(),
            });
            None
        }
        Ok(marker) => {
            problems.extend(marker_problems(entry, marker, fatbin_section, &gpu.targets));
            Some(marker.clone())
        }
    }
}

/// What is wrong with a host library's marker on its own: device code left in the file, no
/// wrapper redirected, a search path that is not a relative `@GFXARCH@` pattern.
fn marker_problems(
    entry: &str,
    marker: &Marker,
    fatbin_section: &str,
    found: &BTreeSet<String>,
) -> Vec<Problem> {
    let problem = |detail: String| Problem::KpackReference {
        entry: entry.to_string(),
        detail,
    };
    let mut problems = Vec::new();
    if !found.is_empty() || marker.fatbin_file_bytes > 0 {
        problems.push(problem(format!(
            "it has a kpack marker but still carries device code ({} bytes of {fatbin_section}{})",
            marker.fatbin_file_bytes,
            if found.is_empty() {
                String::new()
            } else {
                format!(
                    ", targets {}",
                    found.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            }
        )));
    }
    if marker.wrappers == 0 {
        problems.push(problem(
            "no fat binary wrapper points at its marker (HIPK): the runtime would never load \
             its device code"
                .into(),
        ));
    }
    for path in &marker.search_paths {
        if path.starts_with('/') || !path.contains("@GFXARCH@") {
            problems.push(problem(format!(
                "search path '{path}' is not a relative path with @GFXARCH@: the packs of an \
                 installed device wheel would not be found"
            )));
        }
    }
    problems
}

/// Kernel packs are read whole; a device wheel's pack larger than this is not plausible.
const MAX_PACK: u64 = 16 << 30;

/// The kernel packs of a device wheel (`<package>/.kpack/*.kpack`): each read, every code
/// object decompressed and its own metadata note checked against the pack's target, and the
/// target against the wheel's name (`…-device-<processor>`).
pub(super) fn check_packs(
    archive: &Archive,
    wheel_name: Option<&str>,
    problems: &mut Vec<Problem>,
) -> Vec<PackReport> {
    let named = wheel_name
        .and_then(|n| n.rsplit_once("-device-"))
        .map(|(_, processor)| processor.to_string());
    let mut packs = Vec::new();
    for entry in archive
        .entries
        .iter()
        .filter(|e| e.name.contains("/.kpack/") && e.name.ends_with(".kpack"))
    {
        let problem = |detail: String| Problem::KernelPack {
            entry: entry.name.clone(),
            detail,
        };
        let bytes = match archive.read_small(entry, MAX_PACK, &mut Vec::new()) {
            Ok(bytes) => bytes,
            Err(error) => {
                problems.push(problem(error.to_string()));
                continue;
            }
        };
        let pack = match Pack::parse(&bytes) {
            Ok(pack) => pack,
            Err(error) => {
                problems.push(problem(error.to_string()));
                continue;
            }
        };
        let processor = target_id::processor(&pack.arch_family)
            .map(str::to_string)
            .unwrap_or_else(|_| pack.arch_family.clone());
        if pack.arches != [pack.arch_family.clone()] {
            problems.push(problem(format!(
                "it is for {} but lists targets {}",
                pack.arch_family,
                pack.arches.join(", ")
            )));
        }
        if let Some(named) = &named
            && *named != processor
        {
            problems.push(problem(format!(
                "it holds {processor} code in the device wheel for {named}"
            )));
        }
        for kernel in &pack.entries {
            let target = pack
                .code_object(kernel)
                .map_err(|e| e.to_string())
                .and_then(|code| code_object_target(&code));
            match target {
                Ok(target) if target == kernel.arch && kernel.arch == pack.arch_family => {}
                Ok(target) => problems.push(problem(format!(
                    "'{}' is listed for {} in a {} pack but was compiled for {target}",
                    kernel.binary, kernel.arch, pack.arch_family
                ))),
                Err(detail) => problems.push(problem(format!(
                    "'{}' {}: {detail}",
                    kernel.binary, kernel.arch
                ))),
            }
        }
        packs.push(PackReport {
            entry: entry.name.clone(),
            arch: pack.arch_family.clone(),
            kernels: pack.entries.iter().map(|k| k.binary.clone()).collect(),
        });
    }
    packs
}
