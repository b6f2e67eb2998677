//! Rewriting one wheel to a new version: METADATA (Version and pins), the version literals
//! of version files, the `.dist-info`/`.data` directory names and RECORD; every other entry
//! copied raw (its compressed bytes, CRC and RECORD line as they were).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pep440_rs::Version;

use super::{Promotion, PublicVersion, RewriteError, VersionMap};
use crate::wheel::archive::Archive;
use crate::wheel::filename::{WheelFilename, normalize_name};
use crate::wheel::metadata::{CoreMetadata, Requirement, RequirementError};
use crate::wheel::problem::Problem;
use crate::wheel::record;
use crate::wheel::zipwrite::ZipOut;

/// METADATA, RECORD and version files are read into memory; larger ones are not real.
const MAX_SMALL_FILE: u64 = 64 << 20;

/// One rewritten wheel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub source: PathBuf,
    pub path: PathBuf,
    pub old_version: Version,
    pub new_version: Version,
    /// `Requires-Dist` lines changed: (before, after).
    pub requirements: PinChanges,
    /// Version files whose string literals were updated.
    pub version_files: Vec<String>,
    /// Entries copied without inflating them.
    pub raw_copied: usize,
}

/// Files that carry the version as a string literal (torch/version.py, torchvision/version.py,
/// torch/_rocm_init.py, apex's git_version_info_installed.py): package-level only.
const VERSION_FILES: &[&str] = &[
    "version.py",
    "_version.py",
    "_rocm_init.py",
    "git_version_info_installed.py",
];

fn is_version_file(name: &str) -> bool {
    match name.split_once('/') {
        Some((package, file)) => {
            !package.ends_with(".dist-info")
                && !package.ends_with(".data")
                && VERSION_FILES.contains(&file)
        }
        None => false,
    }
}

/// The wheel a rewrite (or a kpack split) reads: checked strictly, its `.dist-info` located
/// and read.
pub(crate) struct Source<'a> {
    pub(crate) path: &'a Path,
    pub(crate) filename: WheelFilename,
    pub(crate) archive: Archive,
    /// Local header span of every entry, in entry order.
    pub(crate) spans: Vec<crate::wheel::archive::DataSpan>,
    pub(crate) dist_info: String,
    pub(crate) metadata_index: usize,
    pub(crate) record_index: usize,
    pub(crate) metadata: CoreMetadata,
    pub(crate) record_lines: Vec<record::RecordLine>,
}

impl Source<'_> {
    pub(crate) fn fail(&self, detail: String) -> RewriteError {
        RewriteError::Wheel {
            wheel: self.path.to_path_buf(),
            detail,
        }
    }

    /// A small entry's bytes (METADATA, RECORD, a version file).
    pub(crate) fn read(&self, index: usize) -> Result<Vec<u8>, RewriteError> {
        let entry = &self.archive.entries[index];
        self.archive
            .read_small(entry, MAX_SMALL_FILE, &mut Vec::new())
            .map_err(|e| self.fail(format!("'{}': {e}", entry.name)))
    }
}

/// Opens `wheel` with the strict reader and reads what a rewrite needs. A container with any
/// defect is refused.
pub(crate) fn open_source(wheel: &Path) -> Result<Source<'_>, RewriteError> {
    let fail = |detail: String| RewriteError::Wheel {
        wheel: wheel.to_path_buf(),
        detail,
    };
    let file_name = wheel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let filename = WheelFilename::parse(&file_name).map_err(|e| fail(e.to_string()))?;
    let handle = fs_err::File::open(wheel).map_err(|e| fail(e.to_string()))?;
    let mut defects = Vec::new();
    let archive =
        Archive::open(handle.into_file(), &mut defects).map_err(|e| fail(e.to_string()))?;
    let mut spans = Vec::with_capacity(archive.entries.len());
    for entry in &archive.entries {
        spans.push(
            archive
                .local_header(entry, &mut defects)
                .map_err(|e| fail(format!("'{}': {e}", entry.name)))?,
        );
    }
    if let Some(defect) = defects.first() {
        return Err(fail(format!(
            "{}; verify the wheel before promoting it",
            Problem::from(defect.clone())
        )));
    }
    let find = |name: &str| {
        archive
            .entries
            .iter()
            .position(|e| e.name == name)
            .ok_or_else(|| fail(format!("no '{name}'")))
    };
    let dist_info = archive
        .entries
        .iter()
        .filter_map(|e| e.name.split_once('/').map(|(top, _)| top))
        .find(|top| top.ends_with(".dist-info"))
        .ok_or_else(|| fail("no .dist-info directory".into()))?
        .to_string();
    let read = |index: usize| {
        archive
            .read_small(&archive.entries[index], MAX_SMALL_FILE, &mut Vec::new())
            .map_err(|e| fail(format!("'{}': {e}", archive.entries[index].name)))
    };
    let metadata_name = format!("{dist_info}/METADATA");
    let metadata_index = find(&metadata_name)?;
    let record_index = find(&format!("{dist_info}/RECORD"))?;
    let metadata = CoreMetadata::parse(&metadata_name, read(metadata_index)?)
        .map_err(|e| fail(e.to_string()))?;
    if metadata.version != filename.version {
        return Err(fail(format!(
            "METADATA says version {} but the file name says {}: verify the wheel first",
            metadata.version, filename.version
        )));
    }
    let record_text =
        String::from_utf8(read(record_index)?).map_err(|_| fail("RECORD is not UTF-8".into()))?;
    let (record_lines, record_errors) = record::parse(&record_text);
    if let Some(error) = record_errors.first() {
        return Err(fail(format!(
            "RECORD line {}: {}",
            error.line, error.detail
        )));
    }
    Ok(Source {
        path: wheel,
        filename,
        archive,
        spans,
        dist_info,
        metadata_index,
        record_index,
        metadata,
        record_lines,
    })
}

/// Rewrites one wheel to `new_version`, patching `Requires-Dist` pins by `pins`, into
/// `out_dir/<new file name>` (written to a temporary file, then renamed: no half-written
/// wheel is left behind). The source is read with the strict reader and refused if its
/// container has any defect; it should have passed verification (`crate::verify`), since
/// RECORD lines of raw-copied entries are carried over, not recomputed.
pub fn rewrite_version(
    wheel: &Path,
    new_version: &Version,
    pins: &VersionMap,
    out_dir: &Path,
) -> Result<Rewritten, RewriteError> {
    let source = open_source(wheel)?;
    let fail = |detail: String| source.fail(detail);
    let metadata = &source.metadata;
    let own = normalize_name(&metadata.name);
    let (new_metadata, requirements) =
        rewrite_metadata(metadata, new_version, pins, &own).map_err(|e| fail(e.to_string()))?;
    let mut replacements: Vec<(String, String)> =
        vec![(metadata.version.to_string(), new_version.to_string())];
    for (name, (old, new)) in pins.iter() {
        if name != own {
            replacements.push((old.to_string(), new.to_string()));
        }
    }
    // `<name>-<version>.dist-info/` and `.data/` carry the version in their names.
    let old_stem = source.dist_info.trim_end_matches(".dist-info").to_string();
    let new_stem = source
        .filename
        .with_version(new_version)
        .dist_info_dir()
        .trim_end_matches(".dist-info")
        .to_string();
    let rename = |name: &str| -> String {
        for suffix in [".dist-info", ".data"] {
            if let Some(rest) = name.strip_prefix(&format!("{old_stem}{suffix}/")) {
                return format!("{new_stem}{suffix}/{rest}");
            }
        }
        name.to_string()
    };

    let new_file = source.filename.with_version(new_version).to_string();
    fs_err::create_dir_all(out_dir).map_err(|e| fail(e.to_string()))?;
    let temp = tempfile::Builder::new()
        .prefix(".rockbuild-rewrite-")
        .suffix(".tmp")
        .tempfile_in(out_dir)
        .map_err(|e| {
            fail(format!(
                "creating a temporary file in {}: {e}",
                out_dir.display()
            ))
        })?;
    let write_error = |e: std::io::Error| fail(format!("writing {new_file}: {e}"));
    let mut out = ZipOut::new(temp.reopen().map_err(write_error)?);
    let written = write_entries(
        &source,
        &mut out,
        &new_metadata,
        &replacements,
        &rename,
        &write_error,
    )?;
    let record_name = format!("{}/RECORD", source.dist_info);
    let new_record_name = rename(&record_name);
    let record_bytes = new_record(&source, &record_name, &new_record_name, &written, &rename);
    out.add(
        &new_record_name,
        record_bytes.as_bytes(),
        &source.archive.entries[source.record_index],
    )
    .map_err(write_error)?;
    let file = out.finish().map_err(write_error)?;
    file.sync_all().map_err(write_error)?;
    let path = out_dir.join(&new_file);
    temp.persist(&path)
        .map_err(|e| fail(format!("renaming into {}: {}", path.display(), e.error)))?;
    Ok(Rewritten {
        source: wheel.to_path_buf(),
        path,
        old_version: metadata.version.clone(),
        new_version: new_version.clone(),
        requirements,
        version_files: written.version_files,
        raw_copied: written.raw_copied,
    })
}

/// What writing the entries did.
struct Written {
    /// New RECORD hash and size of each patched entry, by new name.
    hashes: BTreeMap<String, (String, u64)>,
    version_files: Vec<String>,
    raw_copied: usize,
}

/// Every entry but RECORD, renamed: METADATA and changed version files patched, the rest
/// copied raw.
fn write_entries(
    source: &Source<'_>,
    out: &mut ZipOut,
    new_metadata: &[u8],
    replacements: &[(String, String)],
    rename: &dyn Fn(&str) -> String,
    write_error: &dyn Fn(std::io::Error) -> RewriteError,
) -> Result<Written, RewriteError> {
    let mut written = Written {
        hashes: BTreeMap::new(),
        version_files: Vec::new(),
        raw_copied: 0,
    };
    let archive = &source.archive;
    for (index, (entry, span)) in archive.entries.iter().zip(&source.spans).enumerate() {
        if index == source.record_index {
            continue;
        }
        let new_name = rename(&entry.name);
        let patched = if index == source.metadata_index {
            Some(new_metadata.to_vec())
        } else if is_version_file(&entry.name) {
            let original = source.read(index)?;
            let text = String::from_utf8_lossy(&original);
            let replaced = replace_literals(&text, replacements);
            (replaced != text).then(|| {
                written.version_files.push(new_name.clone());
                replaced.into_bytes()
            })
        } else {
            None
        };
        match patched {
            Some(bytes) => {
                out.add(&new_name, &bytes, entry).map_err(write_error)?;
                written
                    .hashes
                    .insert(new_name, (record::record_hash(&bytes), bytes.len() as u64));
            }
            None => {
                out.raw_copy(archive, entry, *span, &new_name)
                    .map_err(write_error)?;
                written.raw_copied += 1;
            }
        }
    }
    Ok(written)
}

/// RECORD of the rewritten wheel: renamed paths, new hashes of the patched entries, the
/// original lines of the rest, RECORD itself last.
fn new_record(
    source: &Source<'_>,
    record_name: &str,
    new_record_name: &str,
    written: &Written,
    rename: &dyn Fn(&str) -> String,
) -> String {
    let mut lines = carried_record(source, record_name, rename, &written.hashes);
    lines.push((new_record_name.to_string(), None, None));
    record::render(lines.iter().map(|(p, h, s)| (p.as_str(), h.as_deref(), *s)))
}

/// The source's RECORD lines but its own, renamed: the new hash and size of each entry in
/// `new_hashes` (by new name), the original line for the rest.
pub fn carried_record(
    source: &Source<'_>,
    record_name: &str,
    rename: &dyn Fn(&str) -> String,
    new_hashes: &BTreeMap<String, (String, u64)>,
) -> Vec<(String, Option<String>, Option<u64>)> {
    source
        .record_lines
        .iter()
        .filter(|line| line.path != record_name)
        .map(|line| {
            let path = rename(&line.path);
            let (hash, size) = match new_hashes.get(&path) {
                Some((hash, size)) => (Some(hash.clone()), Some(*size)),
                None => (
                    line.hash
                        .as_ref()
                        .map(|(algorithm, digest)| format!("{}={digest}", algorithm.name())),
                    line.size,
                ),
            };
            (path, hash, size)
        })
        .collect()
}

/// `Requires-Dist` lines changed by a rewrite: (before, after).
type PinChanges = Vec<(String, String)>;

/// Why METADATA cannot be rewritten.
#[derive(Debug, thiserror::Error)]
enum MetadataError {
    #[error("METADATA is not UTF-8")]
    NotUtf8,
    #[error("Requires-Dist '{value}': {error}")]
    Requirement {
        value: String,
        error: RequirementError,
    },
    #[error(
        "Requires-Dist '{requirement}' pins {name} {pinned}, but the set promotes {name} {old}: \
         the promoted set would not install together"
    )]
    OtherPin {
        requirement: String,
        name: String,
        pinned: Version,
        old: Version,
    },
    #[error("Requires-Dist '{requirement}' does not admit the promoted {name} {new}")]
    NotAdmitted {
        requirement: String,
        name: String,
        new: Version,
    },
}

/// METADATA with the new Version and pins; every other byte as it was.
fn rewrite_metadata(
    metadata: &CoreMetadata,
    new_version: &Version,
    pins: &VersionMap,
    own: &str,
) -> Result<(Vec<u8>, PinChanges), MetadataError> {
    let text = std::str::from_utf8(&metadata.raw).map_err(|_| MetadataError::NotUtf8)?;
    let mut out = String::with_capacity(text.len() + 64);
    let mut changes = Vec::new();
    let mut in_headers = true;
    for line in text.split_inclusive('\n') {
        let content = line.trim_end_matches(['\n', '\r']);
        let ending = &line[content.len()..];
        if in_headers && content.is_empty() {
            in_headers = false;
        }
        if in_headers && let Some((key, value)) = content.split_once(':') {
            let key_trimmed = key.trim();
            if key_trimmed.eq_ignore_ascii_case("Version") {
                out.push_str(&format!("{key}: {new_version}{ending}"));
                continue;
            }
            if key_trimmed.eq_ignore_ascii_case("Requires-Dist") {
                let requirement =
                    Requirement::parse(value).map_err(|error| MetadataError::Requirement {
                        value: value.trim().to_string(),
                        error,
                    })?;
                let name = requirement.normalized_name();
                if name != own
                    && let Some((old, new)) = pins.get(&name)
                {
                    match requirement.pinned_version() {
                        Some(pinned) if pinned == old => {
                            let patched = requirement.with_pin(new);
                            changes.push((requirement.raw.clone(), patched.clone()));
                            out.push_str(&format!("{key}: {patched}{ending}"));
                            continue;
                        }
                        Some(pinned) => {
                            return Err(MetadataError::OtherPin {
                                requirement: requirement.raw.clone(),
                                name,
                                pinned: pinned.clone(),
                                old: old.clone(),
                            });
                        }
                        None if requirement.url.is_none()
                            && !requirement.specifiers.contains(new) =>
                        {
                            return Err(MetadataError::NotAdmitted {
                                requirement: requirement.raw.clone(),
                                name,
                                new: new.clone(),
                            });
                        }
                        None => {}
                    }
                }
            }
        }
        out.push_str(line);
    }
    Ok((out.into_bytes(), changes))
}

/// Replaces quoted string literals that are exactly an old version (`'2.10.0a0'` or
/// `"2.10.0a0"`) by the new one; text that merely contains the version is left alone.
fn replace_literals(text: &str, replacements: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (old, new) in replacements {
        for quote in ['\'', '"'] {
            out = out.replace(
                &format!("{quote}{old}{quote}"),
                &format!("{quote}{new}{quote}"),
            );
        }
    }
    out
}

/// Rewrites a whole set for a promotion: computes every new version first (refusing the set
/// if any wheel cannot be promoted), then rewrites each wheel into `out_dir` with pins
/// between members (and to the SDK, when `sdk` promotes it) following the map.
pub fn rewrite_set(
    wheels: &[PathBuf],
    to: Promotion,
    public: PublicVersion,
    sdk: Option<(Version, Version)>,
    out_dir: &Path,
) -> Result<Vec<Rewritten>, RewriteError> {
    let mut names = Vec::new();
    for wheel in wheels {
        let file = wheel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        names.push(
            WheelFilename::parse(&file).map_err(|e| RewriteError::Wheel {
                wheel: wheel.clone(),
                detail: e.to_string(),
            })?,
        );
    }
    let map = VersionMap::for_set(&names, to, public, sdk)?;
    wheels
        .iter()
        .zip(&names)
        .map(|(wheel, name)| {
            let (_, new) = map
                .get(&name.name)
                .ok_or_else(|| RewriteError::Refused(format!("{} has no new version", name)))?;
            rewrite_version(wheel, new, &map, out_dir)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn v(text: &str) -> Version {
        Version::from_str(text).expect("version")
    }

    #[test]
    fn rewrites_metadata_lines_and_refuses_inconsistent_pins() {
        let raw = "Metadata-Version: 2.1\r\nName: torchvision\r\nVersion: 0.25.0a0\r\nRequires-Dist: numpy\r\nRequires-Dist: torch==2.10.0a0\r\n\r\nVersion: body text stays\r\n";
        let metadata = CoreMetadata::parse("METADATA", raw.as_bytes().to_vec()).expect("parses");
        let mut pins = VersionMap::default();
        pins.insert("torch", v("2.10.0a0"), v("2.10.0rc1"));
        let (out, changes) =
            rewrite_metadata(&metadata, &v("0.25.0rc1"), &pins, "torchvision").expect("rewrites");
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "Metadata-Version: 2.1\r\nName: torchvision\r\nVersion: 0.25.0rc1\r\nRequires-Dist: numpy\r\nRequires-Dist: torch==2.10.0rc1\r\n\r\nVersion: body text stays\r\n"
        );
        assert_eq!(
            changes,
            vec![(
                "torch==2.10.0a0".to_string(),
                "torch==2.10.0rc1".to_string()
            )]
        );
        let mut other = VersionMap::default();
        other.insert("torch", v("2.9.0"), v("2.9.1"));
        let error = rewrite_metadata(&metadata, &v("0.25.0rc1"), &other, "torchvision")
            .expect_err("mismatch");
        assert!(
            error
                .to_string()
                .contains("pins torch 2.10.0a0, but the set promotes torch 2.9.0"),
            "{error}"
        );
    }

    #[test]
    fn replaces_only_whole_quoted_versions() {
        let text = "__version__ = '2.10.0a0'\ngit_version = '2.10.0a0-extra'\nhip = \"2.10.0a0\"\n";
        let out = replace_literals(text, &[("2.10.0a0".into(), "2.10.0".into())]);
        assert_eq!(
            out,
            "__version__ = '2.10.0'\ngit_version = '2.10.0a0-extra'\nhip = \"2.10.0\"\n"
        );
        assert!(is_version_file("torch/version.py"));
        assert!(is_version_file("torch/_rocm_init.py"));
        assert!(!is_version_file("torch/utils/version.py"));
        assert!(!is_version_file("version.py"));
        assert!(!is_version_file("torch-2.10.0.dist-info/version.py"));
    }
}
