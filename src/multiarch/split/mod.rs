//! The kpack split of a fat wheel: one host wheel without device code and one device wheel per
//! GPU target, as TheRock's multi-arch builds make them with rocm-systems' `shared/kpack`
//! splitter (`python -m rocm_kpack.tools.split_python_wheels --device-package-prefix
//! amd-torch-device --overlay-root torch/ --device-requires-dist "rocm-sdk-device-@GFXARCH@ ==
//! <SDK>" --compression zstd`):
//!
//! - every ELF file under the overlay root with a `.hip_fatbin` section, and every PE image
//!   (Windows DLL, `.pyd`) with a `.hip_fat` section, is a fat binary; its code objects (host
//!   entries left out) go to the kernel pack of their target, under the key `<path under the
//!   overlay root>#<n>` (n counts that target's code objects in the binary);
//! - the binary itself is transformed ([`crate::binary::elf::transform`],
//!   [`crate::binary::pe::transform`]) to find them at
//!   `../…/.kpack/<group>_@GFXARCH@.kpack` under the kernel name `<path>`; both formats give
//!   the same pack names, keys and device wheels;
//! - the host wheel keeps the fat wheel's file name and every other entry, byte for byte; its
//!   METADATA gains the device extras ([`device::host_metadata`]);
//! - the device wheel of a target holds `<overlay>/.kpack/<group>_<target>.kpack` (the group
//!   is the host's name, lowercase, `-` → `_`) and its own `.dist-info`.
//!
//! Fat binaries are read, unbundled and transformed in parallel; packs are compressed in
//! parallel. Unchanged entries of the host wheel are copied without inflating them.

use crate::multiarch::device;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::binary::kpack::TransformError;
use crate::binary::kpack::archive::{Compression, PackWriter};
use crate::binary::offload::{self, CodeObject};
use crate::binary::target_id;
use crate::binary::{elf, pe};
use crate::wheel::archive::Entry;
use crate::wheel::filename::escape_name;
use crate::wheel::metadata::WheelInfo;
use crate::wheel::record;
use crate::wheel::rewrite::wheel::{Source, open_source};
use crate::wheel::zipwrite::ZipOut;

/// What a split is told: how the project names its device packages and where its files are.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SplitSpec {
    /// `amd-torch-device`.
    pub device_prefix: String,
    /// The package directory the packs overlay (`torch`): its `.kpack/` is where they go.
    pub overlay_root: String,
    /// `Requires-Dist` of every device wheel, `@GFXARCH@` for its target.
    pub device_requires: Vec<String>,
    pub compression: Compression,
}

/// Why a wheel cannot be split. Each variant names the wheel and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    #[error("{0}")]
    Wheel(String),
    #[error("{}: no '{overlay}/' directory to split (the overlay root of its device packages)", wheel.display())]
    NoOverlay { wheel: PathBuf, overlay: String },
    #[error("{}: no fat binary under '{overlay}/' (no ELF file with a .hip_fatbin section, no PE image with a .hip_fat section): nothing to split; was it built for GPU targets, or split already?", wheel.display())]
    NoFatBinaries { wheel: PathBuf, overlay: String },
    #[error("{}: '{path}': {detail}", wheel.display())]
    Binary {
        wheel: PathBuf,
        path: String,
        detail: String,
    },
    #[error("{0}")]
    Metadata(String),
    #[error("the host wheel would replace its input {}: split into another directory", .0.display())]
    SameFile(PathBuf),
    #[error("writing {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// A device wheel written by a split.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceWheel {
    pub processor: String,
    pub name: String,
    pub path: PathBuf,
    pub code_objects: usize,
}

/// What a split wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Split {
    pub host: PathBuf,
    pub devices: Vec<DeviceWheel>,
    /// Fat binaries transformed, by path in the wheel.
    pub fat_binaries: Vec<String>,
    /// Bytes the host wheel's binaries lost.
    pub bytes_removed: u64,
}

/// One fat binary, unbundled and transformed.
struct FatBinary {
    index: usize,
    path: String,
    original_size: usize,
    objects: Vec<CodeObject>,
    /// The host binary after the surgery.
    transformed: Vec<u8>,
    bytes_removed: u64,
}

/// `../` for each directory between `path` and the overlay root, then the pack pattern.
fn search_pattern(path_under_overlay: &str, group: &str) -> String {
    let depth = path_under_overlay.matches('/').count();
    format!("{}.kpack/{group}_@GFXARCH@.kpack", "../".repeat(depth))
}

/// Splits the fat wheel `wheel` into `out_dir`: the host wheel under the same file name, one
/// device wheel per target. Every output is written to a temporary file and renamed into
/// place, so an interrupted split leaves no half-written wheel.
pub fn split_wheel(wheel: &Path, out_dir: &Path, spec: &SplitSpec) -> Result<Split, SplitError> {
    let rewrite_error = |e: crate::wheel::rewrite::RewriteError| SplitError::Wheel(e.to_string());
    let source = open_source(wheel).map_err(rewrite_error)?;
    let host_path = out_dir.join(source.filename.to_string());
    if same_file(wheel, &host_path) {
        return Err(SplitError::SameFile(host_path));
    }
    let overlay = spec.overlay_root.trim_matches('/').to_string();
    let prefix = format!("{overlay}/");
    let candidates: Vec<usize> = source
        .archive
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.name.starts_with(&prefix) && !e.is_dir() && !e.is_symlink())
        .map(|(i, _)| i)
        .collect();
    if candidates.is_empty() {
        return Err(SplitError::NoOverlay {
            wheel: wheel.to_path_buf(),
            overlay,
        });
    }
    let name = source.metadata.name.clone();
    let group = name.to_lowercase().replace('-', "_");
    let mut fat: Vec<FatBinary> = candidates
        .par_iter()
        .map(|&index| read_fat_binary(&source, index, &prefix, &group))
        .filter_map(Result::transpose)
        .collect::<Result<_, _>>()?;
    if fat.is_empty() {
        return Err(SplitError::NoFatBinaries {
            wheel: wheel.to_path_buf(),
            overlay,
        });
    }
    // The reference packs the largest binaries first; ties by path, so the order (and the
    // ordinals) never depend on which worker finished first.
    fat.sort_by(|a, b| {
        b.original_size
            .cmp(&a.original_size)
            .then_with(|| a.path.cmp(&b.path))
    });
    let mut by_target: BTreeMap<String, Vec<(String, &CodeObject)>> = BTreeMap::new();
    for binary in &fat {
        let under = &binary.path[prefix.len()..];
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for object in &binary.objects {
            let n = counts.entry(&object.arch).or_default();
            by_target
                .entry(object.arch.clone())
                .or_default()
                .push((format!("{under}#{n}"), object));
            *n += 1;
        }
    }
    // Targets with features (gfx942:xnack+) share their processor's device wheel.
    let mut by_processor: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for arch in by_target.keys() {
        let processor = target_id::processor(arch).map_err(|detail| SplitError::Binary {
            wheel: wheel.to_path_buf(),
            path: fat
                .iter()
                .find(|b| b.objects.iter().any(|o| &o.arch == arch))
                .map(|b| b.path.clone())
                .unwrap_or_default(),
            detail,
        })?;
        by_processor
            .entry(processor.to_string())
            .or_default()
            .push(arch);
    }
    let packs: BTreeMap<&str, (Vec<u8>, usize)> = by_target
        .par_iter()
        .map(|(arch, objects)| {
            let mut writer = PackWriter::new(&group, arch, spec.compression);
            for (key, object) in objects {
                writer
                    .add(key, arch, &object.data)
                    .map_err(|e| SplitError::Binary {
                        wheel: wheel.to_path_buf(),
                        path: key.clone(),
                        detail: e.to_string(),
                    })?;
            }
            let count = writer.count();
            Ok((arch.as_str(), (writer.finish(), count)))
        })
        .collect::<Result<_, SplitError>>()?;

    fs_err::create_dir_all(out_dir).map_err(|error| SplitError::Write {
        path: out_dir.to_path_buf(),
        error,
    })?;
    let version = metadata_version(&source)?;
    let wheel_info = wheel_info(&source)?;
    let tag =
        wheel_info.tags.first().cloned().ok_or_else(|| {
            SplitError::Metadata(format!("{}: WHEEL has no Tag", wheel.display()))
        })?;
    let processors: Vec<String> = by_processor.keys().cloned().collect();
    let host_metadata = device::host_metadata(
        &source.metadata.raw,
        &spec.device_prefix,
        &version,
        &processors,
    )?;
    write_host(&source, &fat, &host_metadata, &host_path)?;
    let template = &source.archive.entries[source.metadata_index];
    let mut devices = Vec::new();
    for (processor, arches) in &by_processor {
        let files: Vec<(String, &[u8])> = arches
            .iter()
            .map(|arch| {
                let (bytes, _) = &packs[arch];
                (
                    format!("{overlay}/.kpack/{group}_{arch}.kpack"),
                    bytes.as_slice(),
                )
            })
            .collect();
        let device_name = device::device_name(&spec.device_prefix, processor);
        let metadata = device::device_metadata(
            &name,
            &version,
            &spec.device_prefix,
            processor,
            &spec.device_requires,
        );
        let file_name = format!("{}-{version}-{tag}.whl", escape_name(&device_name));
        let path = out_dir.join(&file_name);
        let dist_info = format!("{}-{version}.dist-info", escape_name(&device_name));
        write_device(
            &path,
            &files,
            &dist_info,
            &metadata,
            &device::device_wheel_file(&tag),
            &format!("{overlay}\n"),
            template,
        )?;
        devices.push(DeviceWheel {
            processor: processor.clone(),
            name: device_name,
            path,
            code_objects: arches.iter().map(|a| packs[a].1).sum(),
        });
    }
    Ok(Split {
        host: host_path,
        devices,
        fat_binaries: fat.iter().map(|b| b.path.clone()).collect(),
        bytes_removed: fat.iter().map(|b| b.bytes_removed).sum(),
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs_err::canonicalize(a), fs_err::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn metadata_version(source: &Source<'_>) -> Result<String, SplitError> {
    // The version as METADATA writes it: the device wheels repeat it exactly.
    let text = String::from_utf8_lossy(&source.metadata.raw);
    text.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.trim().eq_ignore_ascii_case("Version"))
                .map(|(_, v)| v.trim().to_string())
        })
        .ok_or_else(|| {
            SplitError::Metadata(format!(
                "{}: METADATA has no Version",
                source.path.display()
            ))
        })
}

fn wheel_info(source: &Source<'_>) -> Result<WheelInfo, SplitError> {
    let name = format!("{}/WHEEL", source.dist_info);
    let index = source
        .archive
        .entries
        .iter()
        .position(|e| e.name == name)
        .ok_or_else(|| SplitError::Metadata(format!("{}: no {name}", source.path.display())))?;
    let raw = source
        .read(index)
        .map_err(|e| SplitError::Wheel(e.to_string()))?;
    WheelInfo::parse(&name, &raw).map_err(|e| SplitError::Metadata(e.to_string()))
}

/// Reads entry `index`; `Some` when it is a fat ELF binary (unbundled and transformed).
fn read_fat_binary(
    source: &Source<'_>,
    index: usize,
    prefix: &str,
    group: &str,
) -> Result<Option<FatBinary>, SplitError> {
    let entry = &source.archive.entries[index];
    let fail = |detail: String| SplitError::Binary {
        wheel: source.path.to_path_buf(),
        path: entry.name.clone(),
        detail,
    };
    let mut reader = source
        .archive
        .reader(entry, source.spans[index])
        .map_err(|e| fail(e.to_string()))?;
    let mut magic = [0u8; 4];
    let mut head = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(&mut reader, magic.len() as u64),
        &mut head,
    )
    .map_err(|e| fail(e.to_string()))?;
    if head.len() < 2 {
        return Ok(None);
    }
    magic[..head.len()].copy_from_slice(&head);
    let is_elf = magic == *b"\x7fELF";
    let is_pe = magic[..2] == *b"MZ";
    if !is_elf && !is_pe {
        return Ok(None);
    }
    let mut data = head;
    data.reserve(entry.size as usize);
    std::io::Read::read_to_end(&mut reader, &mut data).map_err(|e| fail(e.to_string()))?;
    let under = &entry.name[prefix.len()..];
    let search = [search_pattern(under, group)];
    // The same split for both formats; only the section names and the surgery differ.
    let section = if is_pe {
        pe::fatbin_section(&data).map_err(|e| fail(e.to_string()))?
    } else {
        elf::fatbin_section(&data).map_err(|e| fail(e.to_string()))?
    };
    let Some(section) = section else {
        return Ok(None);
    };
    let objects = offload::code_objects(section).map_err(fail)?;
    let transformed = if is_pe {
        pe::transform(&data, &search, under)
    } else {
        elf::transform(&data, &search, under)
    };
    let (transformed, bytes_removed) = match transformed {
        Ok(t) => (t.data, t.bytes_removed),
        Err(TransformError::NotFat(_)) => return Ok(None),
        Err(e) => return Err(fail(e.to_string())),
    };
    Ok(Some(FatBinary {
        index,
        path: entry.name.clone(),
        original_size: data.len(),
        objects,
        transformed,
        bytes_removed,
    }))
}

fn write_error(path: &Path) -> impl Fn(std::io::Error) -> SplitError + '_ {
    move |error| SplitError::Write {
        path: path.to_path_buf(),
        error,
    }
}

fn temp_in(path: &Path) -> Result<tempfile::NamedTempFile, SplitError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    tempfile::Builder::new()
        .prefix(".rockbuild-split-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(write_error(path))
}

fn persist(
    temp: tempfile::NamedTempFile,
    file: std::fs::File,
    path: &Path,
) -> Result<(), SplitError> {
    file.sync_all().map_err(write_error(path))?;
    temp.persist(path).map_err(|e| write_error(path)(e.error))?;
    Ok(())
}

/// The host wheel: the fat wheel's entries in order, fat binaries transformed, METADATA with
/// the extras, RECORD with the new hashes; every other entry copied raw.
fn write_host(
    source: &Source<'_>,
    fat: &[FatBinary],
    metadata: &[u8],
    path: &Path,
) -> Result<(), SplitError> {
    let temp = temp_in(path)?;
    let error = write_error(path);
    let mut out = ZipOut::new(temp.reopen().map_err(&error)?);
    let replaced: BTreeMap<usize, &[u8]> = fat
        .iter()
        .map(|b| (b.index, b.transformed.as_slice()))
        .chain([(source.metadata_index, metadata)])
        .collect();
    let mut hashes: BTreeMap<&str, (String, u64)> = BTreeMap::new();
    for (index, (entry, span)) in source.archive.entries.iter().zip(&source.spans).enumerate() {
        if index == source.record_index {
            continue;
        }
        match replaced.get(&index) {
            Some(bytes) => {
                out.add(&entry.name, bytes, entry).map_err(&error)?;
                hashes.insert(
                    &entry.name,
                    (record::record_hash(bytes), bytes.len() as u64),
                );
            }
            None => out
                .raw_copy(&source.archive, entry, *span, &entry.name)
                .map_err(&error)?,
        }
    }
    let record_name = &source.archive.entries[source.record_index].name;
    let lines: Vec<(String, Option<String>, Option<u64>)> = source
        .record_lines
        .iter()
        .filter(|line| &line.path != record_name)
        .map(|line| match hashes.get(line.path.as_str()) {
            Some((hash, size)) => (line.path.clone(), Some(hash.clone()), Some(*size)),
            None => (
                line.path.clone(),
                line.hash
                    .as_ref()
                    .map(|(algorithm, digest)| format!("{}={digest}", algorithm.name())),
                line.size,
            ),
        })
        .chain([(record_name.clone(), None, None)])
        .collect();
    let record = record::render(lines.iter().map(|(p, h, s)| (p.as_str(), h.as_deref(), *s)));
    out.add(
        record_name,
        record.as_bytes(),
        &source.archive.entries[source.record_index],
    )
    .map_err(&error)?;
    let file = out.finish().map_err(&error)?;
    persist(temp, file, path)
}

/// A device wheel: its packs (stored: they are compressed already), then its `.dist-info`.
fn write_device(
    path: &Path,
    files: &[(String, &[u8])],
    dist_info: &str,
    metadata: &str,
    wheel_file: &str,
    top_level: &str,
    template: &Entry,
) -> Result<(), SplitError> {
    let temp = temp_in(path)?;
    let error = write_error(path);
    let mut out = ZipOut::new(temp.reopen().map_err(&error)?);
    let mut lines: Vec<(String, Option<String>, Option<u64>)> = Vec::new();
    for (name, bytes) in files {
        out.add_stored(name, bytes, template).map_err(&error)?;
        lines.push((
            name.clone(),
            Some(record::record_hash(bytes)),
            Some(bytes.len() as u64),
        ));
    }
    for (file, text) in [
        ("METADATA", metadata),
        ("WHEEL", wheel_file),
        ("top_level.txt", top_level),
    ] {
        let name = format!("{dist_info}/{file}");
        out.add(&name, text.as_bytes(), template).map_err(&error)?;
        lines.push((
            name,
            Some(record::record_hash(text.as_bytes())),
            Some(text.len() as u64),
        ));
    }
    let record_name = format!("{dist_info}/RECORD");
    lines.push((record_name.clone(), None, None));
    let record = record::render(lines.iter().map(|(p, h, s)| (p.as_str(), h.as_deref(), *s)));
    out.add(&record_name, record.as_bytes(), template)
        .map_err(&error)?;
    let file = out.finish().map_err(&error)?;
    persist(temp, file, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_patterns_climb_to_the_overlay_root() {
        assert_eq!(
            search_pattern("lib/libtorch_hip.so", "torch"),
            "../.kpack/torch_@GFXARCH@.kpack"
        );
        assert_eq!(
            search_pattern("_C.so", "torchvision"),
            ".kpack/torchvision_@GFXARCH@.kpack"
        );
        assert_eq!(
            search_pattern("a/b/c.so", "torch"),
            "../../.kpack/torch_@GFXARCH@.kpack"
        );
    }
}
