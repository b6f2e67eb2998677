//! The `.dist-info` directory of a wheel: METADATA, WHEEL and RECORD, read first and
//! sequentially; and the names, versions and tags they must agree on.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;

use pep440_rs::Version;

use super::ExpectedVersion;
use crate::wheel::archive::{Archive, DataSpan};
use crate::wheel::filename::{WheelFilename, normalize_name};
use crate::wheel::metadata::{CoreMetadata, WheelInfo};
use crate::wheel::problem::Problem;
use crate::wheel::record::{self, RecordLine};

/// METADATA, WHEEL and RECORD are read into memory; anything larger is not a real one.
const MAX_DIST_INFO_FILE: u64 = 64 << 20;

/// What the `.dist-info` directory holds, as far as it could be read.
#[derive(Default)]
pub(super) struct DistInfo {
    /// The directory (`{name}-{version}.dist-info`).
    pub dir: Option<String>,
    pub metadata: Option<CoreMetadata>,
    pub wheel_info: Option<WheelInfo>,
    pub record_lines: Vec<RecordLine>,
    /// `<dir>/RECORD`, when there is a directory.
    pub record_path: Option<String>,
    /// Local header spans of the entries read here, by entry index.
    pub spans: HashMap<usize, DataSpan>,
    /// The bytes of the entries read here, by entry index (hashed for RECORD later).
    pub bytes: HashMap<usize, Vec<u8>>,
    /// Entries read (or tried) here; the parallel pass skips them.
    pub handled: BTreeSet<usize>,
}

/// Finds the `.dist-info` directory and reads its METADATA, WHEEL and RECORD.
pub(super) fn read(
    archive: &Archive,
    filename: Option<&WheelFilename>,
    readable: &[bool],
    problems: &mut Vec<Problem>,
) -> DistInfo {
    let mut found = DistInfo {
        dir: find_dist_info(archive, filename, problems),
        ..DistInfo::default()
    };
    let Some(dir) = found.dir.clone() else {
        return found;
    };
    let metadata_path = format!("{dir}/METADATA");
    if let Some(bytes) = found.read_file(archive, &metadata_path, readable, problems, "no '") {
        match CoreMetadata::parse(&metadata_path, bytes) {
            Ok(metadata) => found.metadata = Some(metadata),
            Err(error) => problems.push(Problem::DistInfo {
                detail: error.to_string(),
            }),
        }
    }
    let wheel_path = format!("{dir}/WHEEL");
    if let Some(bytes) = found.read_file(archive, &wheel_path, readable, problems, "no '") {
        match WheelInfo::parse(&wheel_path, &bytes) {
            Ok(info) => found.wheel_info = Some(info),
            Err(error) => problems.push(Problem::DistInfo {
                detail: error.to_string(),
            }),
        }
    }
    let record_path = format!("{dir}/RECORD");
    if let Some(bytes) = found.read_file(archive, &record_path, readable, problems, "") {
        let text = String::from_utf8_lossy(&bytes);
        let (lines, errors) = record::parse(&text);
        for error in errors {
            problems.push(Problem::RecordInvalid {
                line: error.line,
                detail: error.detail,
            });
        }
        found.record_lines = lines;
    }
    found.record_path = Some(record_path);
    found
}

impl DistInfo {
    /// Reads one file of the directory. A missing file is a problem (`missing` starts its
    /// message; RECORD's has a problem of its own); one that cannot be read was reported.
    fn read_file(
        &mut self,
        archive: &Archive,
        name: &str,
        readable: &[bool],
        problems: &mut Vec<Problem>,
        missing: &str,
    ) -> Option<Vec<u8>> {
        let Some(index) = archive.entries.iter().position(|e| e.name == name) else {
            problems.push(if missing.is_empty() {
                Problem::RecordMissing {
                    record: name.to_string(),
                }
            } else {
                Problem::DistInfo {
                    detail: format!("{missing}{name}'"),
                }
            });
            return None;
        };
        if !readable[index] {
            return None;
        }
        self.handled.insert(index);
        let entry = &archive.entries[index];
        let read = super::local_header(archive, entry, problems)
            .map(|span| {
                self.spans.insert(index, span);
            })
            .and_then(|()| archive.read_small(entry, MAX_DIST_INFO_FILE, &mut Vec::new()));
        match read {
            Ok(bytes) => {
                self.bytes.insert(index, bytes.clone());
                Some(bytes)
            }
            Err(detail) => {
                problems.push(Problem::EntryData {
                    entry: name.to_string(),
                    detail: detail.to_string(),
                });
                None
            }
        }
    }
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
pub(super) fn check_names(
    filename: Option<&WheelFilename>,
    dist_info: Option<&str>,
    metadata: Option<&CoreMetadata>,
    wheel_info: Option<&WheelInfo>,
    versions: &BTreeMap<String, ExpectedVersion>,
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
    if let Some(expected) = versions.get(&filename.normalized_name()) {
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
