//! The last step of a split: the packs compressed (in parallel), then the host wheel and the
//! device wheels written as the plan says, each to a temporary file renamed into place.

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;

use super::read::{FatBinary, FatWheel};
use super::{DevicePlan, DeviceWheel, Split, SplitError, SplitPlan, SplitSpec};
use crate::binary::kpack::archive::PackWriter;
use crate::wheel::archive::Entry;
use crate::wheel::record;
use crate::wheel::rewrite::wheel::Source;
use crate::wheel::zipwrite::ZipOut;

/// Writes the wheels of `plan` into `out_dir`.
pub(super) fn write(
    fat: &FatWheel<'_>,
    plan: &SplitPlan,
    spec: &SplitSpec,
    out_dir: &Path,
) -> Result<Split, SplitError> {
    let packs: Vec<Vec<u8>> = plan
        .packs
        .par_iter()
        .map(|pack| {
            let mut writer = PackWriter::new(&fat.facts.group, &pack.arch, spec.compression);
            for (key, binary, object) in &pack.kernels {
                let object = &fat.binaries[*binary].objects[*object];
                writer
                    .add(key, &pack.arch, &object.data)
                    .map_err(|e| SplitError::Binary {
                        wheel: fat.facts.wheel.clone(),
                        path: key.clone(),
                        detail: e.to_string(),
                    })?;
            }
            Ok(writer.finish())
        })
        .collect::<Result<_, SplitError>>()?;
    fs_err::create_dir_all(out_dir).map_err(write_error(out_dir))?;
    write_host(
        &fat.source,
        &fat.binaries,
        &plan.host_metadata,
        &fat.host_path,
    )?;
    let template = &fat.source.archive.entries[fat.source.metadata_index];
    let mut devices = Vec::new();
    for device in &plan.devices {
        let files: Vec<(&str, &[u8])> = device
            .packs
            .iter()
            .map(|&i| (plan.packs[i].path.as_str(), packs[i].as_slice()))
            .collect();
        let path = out_dir.join(&device.file_name);
        write_device(&path, &files, device, template)?;
        devices.push(DeviceWheel {
            processor: device.processor.clone(),
            name: device.name.clone(),
            path,
            code_objects: device
                .packs
                .iter()
                .map(|&i| plan.packs[i].kernels.len())
                .sum(),
        });
    }
    Ok(Split {
        host: fat.host_path.clone(),
        devices,
        fat_binaries: fat.binaries.iter().map(|b| b.path.clone()).collect(),
        bytes_removed: fat.binaries.iter().map(|b| b.bytes_removed).sum(),
    })
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
    files: &[(&str, &[u8])],
    device: &DevicePlan,
    template: &Entry,
) -> Result<(), SplitError> {
    let temp = temp_in(path)?;
    let error = write_error(path);
    let mut out = ZipOut::new(temp.reopen().map_err(&error)?);
    let mut lines: Vec<(String, Option<String>, Option<u64>)> = Vec::new();
    for (name, bytes) in files {
        out.add_stored(name, bytes, template).map_err(&error)?;
        lines.push((
            name.to_string(),
            Some(record::record_hash(bytes)),
            Some(bytes.len() as u64),
        ));
    }
    for (file, text) in [
        ("METADATA", &device.metadata),
        ("WHEEL", &device.wheel_file),
        ("top_level.txt", &device.top_level),
    ] {
        let name = format!("{}/{file}", device.dist_info);
        out.add(&name, text.as_bytes(), template).map_err(&error)?;
        lines.push((
            name,
            Some(record::record_hash(text.as_bytes())),
            Some(text.len() as u64),
        ));
    }
    let record_name = format!("{}/RECORD", device.dist_info);
    lines.push((record_name.clone(), None, None));
    let record = record::render(lines.iter().map(|(p, h, s)| (p.as_str(), h.as_deref(), *s)));
    out.add(&record_name, record.as_bytes(), template)
        .map_err(&error)?;
    let file = out.finish().map_err(&error)?;
    persist(temp, file, path)
}
