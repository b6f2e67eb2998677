//! Rewriting the version of wheels for promotion (`promote --rewrite-version rc|final`,
//! reference F53) without touching their content: unchanged entries are raw-copied (their
//! compressed bytes, CRC and sizes as they are — no inflate, no deflate); METADATA, the
//! `.dist-info` and `.data` directory names, the version files and RECORD are regenerated.
//!
//! # Version rules (PEP 440)
//!
//! Promotion moves the *public* version along `.devN`/`aN`/`bN` → `rcN` → final and keeps the
//! local label (`+rocm7.13.0a20260430`, `+git1a2b3c4d`) intact:
//!
//! | from | `rc` (`rcN`, default rc1) | `final` |
//! |---|---|---|
//! | `2.10.0a20260430+rocm7.13.0a20260430` | `2.10.0rc1+rocm7.13.0a20260430` | `2.10.0+rocm7.13.0a20260430` |
//! | `2.10.0.dev20260430`, `2.10.0b2` | `2.10.0rc1` | `2.10.0` |
//! | `2.10.0rc1` | `2.10.0rcN` for N > 1 only | `2.10.0` |
//! | `2.10.0rc2.dev3` | `2.10.0rcN` for N ≥ 2 | `2.10.0` |
//!
//! Refused, with the reason: post-releases (`2.10.0.post1`: the next release is a new build,
//! not a promotion), a release candidate to a lower or equal candidate number, and anything
//! that would not change (a final public version whose local label names no promoted SDK).
//! Epoch and release numbers never change, so every promotion sorts strictly higher.
//!
//! The one exception to "local label intact" fixes W7 without its regex: when the version map
//! also promotes the ROCm SDK (`rocm`), a local label that names that SDK build as a whole
//! dot-separated run (`rocm7.13.0a20260430`, also inside `git1a2b3c4d.rocm7.13.0a20260430`)
//! names the promoted SDK instead (`rocm7.13.0`), because the wheel's `rocm==` pin changes
//! with it. Nothing else in the label is touched. A final public version whose label changes
//! this way (`2.10.0+rocm7.13.0a20260430` → `2.10.0+rocm7.13.0`, the reference's example) is a
//! valid promotion.
//!
//! `Requires-Dist` pins between members of the map follow the map (`triton==OLD` →
//! `triton==NEW`); a pin to a version the map does not promote from is refused, since the
//! promoted set would no longer install together.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::{Prerelease, PrereleaseKind, Version};
use zip::write::SimpleFileOptions;

use crate::wheel::filename::{WheelFilename, normalize_name};
use crate::wheel::metadata::{CoreMetadata, Requirement};
use crate::wheel::record;

/// Where a promotion takes a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promotion {
    /// Release candidate N (`rc` alone means rc1).
    ReleaseCandidate(u64),
    Final,
}

impl FromStr for Promotion {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "final" => Ok(Promotion::Final),
            "rc" => Ok(Promotion::ReleaseCandidate(1)),
            other => other
                .strip_prefix("rc")
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|n| *n > 0)
                .map(Promotion::ReleaseCandidate)
                .ok_or_else(|| {
                    format!("'{other}' is not a promotion: use rc, rcN (N ≥ 1) or final")
                }),
        }
    }
}

impl fmt::Display for Promotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Promotion::ReleaseCandidate(n) => write!(f, "rc{n}"),
            Promotion::Final => f.write_str("final"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("{name} {version} cannot be promoted to {to}: {reason}")]
    NotPromotable {
        name: String,
        version: String,
        to: Promotion,
        reason: String,
    },
    #[error("{0}")]
    Refused(String),
    #[error("{}: {detail}", wheel.display())]
    Wheel { wheel: PathBuf, detail: String },
    #[error("the set cannot be promoted:\n  {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Several(Vec<RewriteError>),
}

/// Old → new version per normalized project name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionMap(BTreeMap<String, (Version, Version)>);

impl VersionMap {
    pub fn insert(&mut self, name: &str, old: Version, new: Version) {
        self.0.insert(normalize_name(name), (old, new));
    }

    pub fn get(&self, name: &str) -> Option<&(Version, Version)> {
        self.0.get(&normalize_name(name))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &(Version, Version))> {
        self.0.iter()
    }

    /// New versions for every wheel of a set. `sdk` carries the ROCm SDK's promotion when the
    /// SDK is promoted too (it is added to the map, so `rocm==` pins follow it); every
    /// refusal is collected before failing.
    pub fn for_set(
        wheels: &[WheelFilename],
        to: Promotion,
        sdk: Option<(Version, Version)>,
    ) -> Result<VersionMap, RewriteError> {
        let mut map = VersionMap::default();
        if let Some((old, new)) = &sdk {
            map.insert("rocm", old.clone(), new.clone());
        }
        let mut seen: BTreeMap<String, Version> = BTreeMap::new();
        let mut refusals = Vec::new();
        for wheel in wheels {
            let name = wheel.normalized_name();
            if let Some(other) = seen.get(&name) {
                if *other != wheel.version {
                    refusals.push(RewriteError::Refused(format!(
                        "the set holds {name} {other} and {name} {}: promote one version of each project",
                        wheel.version
                    )));
                }
                continue;
            }
            seen.insert(name.clone(), wheel.version.clone());
            // The SDK's own wheels are promoted by the public rule; other labels follow them.
            let is_sdk = name == "rocm" || name.starts_with("rocm-sdk-");
            match promoted_version(
                &name,
                &wheel.version,
                to,
                if is_sdk { None } else { sdk.as_ref() },
            ) {
                Ok(new) => map.insert(&name, wheel.version.clone(), new),
                Err(error) => refusals.push(error),
            }
        }
        match refusals.len() {
            0 => Ok(map),
            1 => Err(refusals.remove(0)),
            _ => Err(RewriteError::Several(refusals)),
        }
    }
}

/// The promoted version of `version` (see the module documentation for the rules).
/// `sdk` is the ROCm SDK's (old, new) version when the SDK is promoted as well.
pub fn promoted_version(
    name: &str,
    version: &Version,
    to: Promotion,
    sdk: Option<&(Version, Version)>,
) -> Result<Version, RewriteError> {
    let refuse = |reason: String| RewriteError::NotPromotable {
        name: name.to_string(),
        version: version.to_string(),
        to,
        reason,
    };
    if version.is_post() {
        return Err(refuse(
            "it is a post-release; publish a new build instead of promoting one".into(),
        ));
    }
    let mut new = version.clone();
    if version.is_pre() || version.is_dev() {
        new = new.with_dev(None).with_post(None);
        new = match to {
            Promotion::Final => new.with_pre(None),
            Promotion::ReleaseCandidate(number) => {
                if let Some(Prerelease {
                    kind: PrereleaseKind::Rc,
                    number: current,
                }) = version.pre()
                {
                    // rcM.devK comes before rcM; a plain rcM only moves to a later candidate.
                    let lowest = if version.is_dev() {
                        current
                    } else {
                        current + 1
                    };
                    if number < lowest {
                        return Err(refuse(format!(
                            "rc{number} does not sort above rc{current}{}; use rc{lowest} or later",
                            if version.is_dev() { ".dev" } else { "" }
                        )));
                    }
                }
                new.with_pre(Some(Prerelease {
                    kind: PrereleaseKind::Rc,
                    number,
                }))
            }
        };
    }
    if let Some(sdk) = sdk {
        new = with_sdk_label(&new, sdk).map_err(refuse)?;
    }
    if new == *version {
        return Err(refuse(if sdk.is_some() {
            "its public version is already final and its local label does not name the promoted ROCm SDK build".into()
        } else {
            "its public version is already final (the local label is never rewritten on its own)"
                .into()
        }));
    }
    Ok(new)
}

/// Replaces a whole `rocm<old SDK version>` run of the local label by `rocm<new>`.
fn with_sdk_label(version: &Version, (old, new): &(Version, Version)) -> Result<Version, String> {
    if version.local().is_empty() {
        return Ok(version.clone());
    }
    let text = version.to_string();
    let Some((public, label)) = text.split_once('+') else {
        return Ok(version.clone());
    };
    let needle = format!("rocm{old}");
    let mut out = String::new();
    let mut rest = label;
    let mut changed = false;
    while let Some(at) = rest.find(&needle) {
        let end = at + needle.len();
        let starts_run = at == 0 || rest.as_bytes()[at - 1] == b'.';
        let ends_run = end == rest.len() || rest.as_bytes()[end] == b'.';
        out.push_str(&rest[..at]);
        if starts_run && ends_run {
            out.push_str(&format!("rocm{new}"));
            changed = true;
        } else {
            out.push_str(&needle);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    if !changed {
        return Ok(version.clone());
    }
    Version::from_str(&format!("{public}+{out}")).map_err(|e| {
        format!("the local label with the promoted SDK, '{out}', is not valid PEP 440: {e}")
    })
}

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

/// Rewrites one wheel to `new_version`, patching `Requires-Dist` pins by `pins`, into
/// `out_dir/<new file name>` (written to a temporary file, then renamed: no half-written
/// wheel is left behind). The source should have passed [`crate::wheel::verify::verify_set`]:
/// RECORD lines of raw-copied entries are carried over, not recomputed.
pub fn rewrite_version(
    wheel: &Path,
    new_version: &Version,
    pins: &VersionMap,
    out_dir: &Path,
) -> Result<Rewritten, RewriteError> {
    let fail = |detail: String| RewriteError::Wheel {
        wheel: wheel.to_path_buf(),
        detail,
    };
    let file_name = wheel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let filename = WheelFilename::parse(&file_name).map_err(|e| fail(e.to_string()))?;
    let source = fs_err::File::open(wheel).map_err(|e| fail(e.to_string()))?;
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(source))
        .map_err(|e| fail(format!("not a readable zip: {e}")))?;

    // The .dist-info directory and its files.
    let names: Vec<String> = archive
        .file_names()
        .map(|n| n.map(|s| s.into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| fail(e.to_string()))?;
    let dist_info = names
        .iter()
        .filter_map(|n| n.split_once('/').map(|(top, _)| top))
        .find(|top| top.ends_with(".dist-info"))
        .ok_or_else(|| fail("no .dist-info directory".into()))?
        .to_string();
    let old_stem = dist_info.trim_end_matches(".dist-info").to_string();
    let new_stem = filename
        .with_version(new_version)
        .dist_info_dir()
        .trim_end_matches(".dist-info")
        .to_string();
    let metadata_name = format!("{dist_info}/METADATA");
    let record_name = format!("{dist_info}/RECORD");
    let read_entry =
        |archive: &mut zip::ZipArchive<_>, name: &str| -> Result<Vec<u8>, RewriteError> {
            let mut entry = archive
                .by_name(name)
                .map_err(|e| fail(format!("{name}: {e}")))?;
            let mut bytes = Vec::new();
            entry
                .read_to_end(&mut bytes)
                .map_err(|e| fail(format!("{name}: {e}")))?;
            Ok(bytes)
        };
    let metadata_raw = read_entry(&mut archive, &metadata_name)?;
    let metadata = CoreMetadata::parse(&metadata_name, metadata_raw.clone())
        .map_err(|e| fail(e.to_string()))?;
    if metadata.version != filename.version {
        return Err(fail(format!(
            "METADATA says version {} but the file name says {}: verify the wheel first",
            metadata.version, filename.version
        )));
    }
    let record_text = String::from_utf8(read_entry(&mut archive, &record_name)?)
        .map_err(|_| fail("RECORD is not UTF-8".into()))?;
    let (record_lines, record_errors) = record::parse(&record_text);
    if let Some(error) = record_errors.first() {
        return Err(fail(format!(
            "RECORD line {}: {}",
            error.line, error.detail
        )));
    }

    let own = normalize_name(&metadata.name);
    let (new_metadata, requirements) =
        rewrite_metadata(&metadata, new_version, pins, &own).map_err(fail)?;
    let mut replacements: Vec<(String, String)> =
        vec![(metadata.version.to_string(), new_version.to_string())];
    for (name, (old, new)) in pins.iter() {
        if *name != own {
            replacements.push((old.to_string(), new.to_string()));
        }
    }

    // `<name>-<version>.dist-info/` and `.data/` carry the version in their names.
    let rename = |name: &str| -> String {
        for suffix in [".dist-info", ".data"] {
            if let Some(rest) = name.strip_prefix(&format!("{old_stem}{suffix}/")) {
                return format!("{new_stem}{suffix}/{rest}");
            }
        }
        name.to_string()
    };

    let new_file = filename.with_version(new_version).to_string();
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
    let mut writer = zip::ZipWriter::new(BufWriter::with_capacity(
        1 << 20,
        temp.reopen().map_err(|e| fail(e.to_string()))?,
    ));
    let mut new_hashes: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut version_files = Vec::new();
    let mut raw_copied = 0;
    let zip_error = |e: zip::result::ZipError| fail(format!("writing {new_file}: {e}"));
    for (index, name) in names.iter().enumerate() {
        let name = name.clone();
        if name == record_name {
            continue;
        }
        let new_name = rename(&name);
        let patched = if name == metadata_name {
            Some(new_metadata.clone())
        } else if is_version_file(&name) {
            let original = read_entry(&mut archive, &name)?;
            let text = String::from_utf8_lossy(&original);
            let replaced = replace_literals(&text, &replacements);
            (replaced != text).then(|| {
                version_files.push(new_name.clone());
                replaced.into_bytes()
            })
        } else {
            None
        };
        let entry = archive.by_index_raw(index).map_err(zip_error)?;
        match patched {
            Some(bytes) => {
                let options = SimpleFileOptions::default()
                    .compression_method(zip::CompressionMethod::Deflated)
                    .last_modified_time(entry.last_modified().unwrap_or_default())
                    .unix_permissions(entry.unix_mode().unwrap_or(0o644) & 0o7777);
                drop(entry);
                writer.start_file(&new_name, options).map_err(zip_error)?;
                writer.write_all(&bytes).map_err(|e| fail(e.to_string()))?;
                new_hashes.insert(new_name, (record::record_hash(&bytes), bytes.len() as u64));
            }
            None if new_name != name => {
                writer
                    .raw_copy_file_rename(entry, &new_name)
                    .map_err(zip_error)?;
                raw_copied += 1;
            }
            None => {
                writer.raw_copy_file(entry).map_err(zip_error)?;
                raw_copied += 1;
            }
        }
    }
    let new_record_name = rename(&record_name);
    let mut lines: Vec<(String, Option<String>, Option<u64>)> = Vec::new();
    for line in &record_lines {
        let path = rename(&line.path);
        if line.path == record_name {
            continue;
        }
        let (hash, size) = match new_hashes.get(&path) {
            Some((hash, size)) => (Some(hash.clone()), Some(*size)),
            None => (
                line.hash
                    .as_ref()
                    .map(|(algorithm, digest)| format!("{}={digest}", algorithm.name())),
                line.size,
            ),
        };
        lines.push((path, hash, size));
    }
    lines.push((new_record_name.clone(), None, None));
    let record_bytes = record::render(lines.iter().map(|(p, h, s)| (p.as_str(), h.as_deref(), *s)));
    let record_entry = archive.by_name(&record_name).map_err(zip_error)?;
    let options = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(record_entry.last_modified().unwrap_or_default())
        .unix_permissions(0o644);
    drop(record_entry);
    writer
        .start_file(&new_record_name, options)
        .map_err(zip_error)?;
    writer
        .write_all(record_bytes.as_bytes())
        .map_err(|e| fail(e.to_string()))?;
    let mut inner = writer.finish().map_err(zip_error)?;
    inner.flush().map_err(|e| fail(e.to_string()))?;
    let file = inner.into_inner().map_err(|e| fail(e.to_string()))?;
    file.sync_all().map_err(|e| fail(e.to_string()))?;
    let path = out_dir.join(&new_file);
    temp.persist(&path)
        .map_err(|e| fail(format!("renaming into {}: {}", path.display(), e.error)))?;
    Ok(Rewritten {
        source: wheel.to_path_buf(),
        path,
        old_version: metadata.version.clone(),
        new_version: new_version.clone(),
        requirements,
        version_files,
        raw_copied,
    })
}

/// `Requires-Dist` lines changed by a rewrite: (before, after).
type PinChanges = Vec<(String, String)>;

/// METADATA with the new Version and pins; every other byte as it was.
fn rewrite_metadata(
    metadata: &CoreMetadata,
    new_version: &Version,
    pins: &VersionMap,
    own: &str,
) -> Result<(Vec<u8>, PinChanges), String> {
    let text =
        std::str::from_utf8(&metadata.raw).map_err(|_| "METADATA is not UTF-8".to_string())?;
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
                let requirement = Requirement::parse(value)
                    .map_err(|e| format!("Requires-Dist '{}': {e}", value.trim()))?;
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
                            return Err(format!(
                                "Requires-Dist '{}' pins {name} {pinned}, but the set promotes {name} {old}: \
                                 the promoted set would not install together",
                                requirement.raw
                            ));
                        }
                        None if requirement.url.is_none()
                            && !requirement.specifiers.contains(new) =>
                        {
                            return Err(format!(
                                "Requires-Dist '{}' does not admit the promoted {name} {new}",
                                requirement.raw
                            ));
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
    let map = VersionMap::for_set(&names, to, sdk)?;
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
    use super::*;

    fn v(text: &str) -> Version {
        Version::from_str(text).expect("version")
    }

    fn promote(text: &str, to: &str) -> Result<String, String> {
        promoted_version("torch", &v(text), to.parse().expect("promotion"), None)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn promotes_the_public_version_and_keeps_the_label() {
        let table = [
            (
                "2.10.0a20260430+rocm7.13.0a20260430",
                "rc",
                "2.10.0rc1+rocm7.13.0a20260430",
            ),
            (
                "2.10.0a20260430+rocm7.13.0a20260430",
                "final",
                "2.10.0+rocm7.13.0a20260430",
            ),
            (
                "2.10.0a0+git1a2b3c4d.rocm7.13.0a20260501",
                "rc2",
                "2.10.0rc2+git1a2b3c4d.rocm7.13.0a20260501",
            ),
            ("2.10.0.dev20260430", "rc", "2.10.0rc1"),
            ("2.10.0b2", "final", "2.10.0"),
            ("2.10.0rc1", "rc2", "2.10.0rc2"),
            ("2.10.0rc1", "final", "2.10.0"),
            ("2.10.0rc2.dev3", "rc2", "2.10.0rc2"),
            ("1!3.5.0a1", "final", "1!3.5.0"),
        ];
        for (from, to, expected) in table {
            assert_eq!(promote(from, to).as_deref(), Ok(expected), "{from} → {to}");
        }
    }

    #[test]
    fn refuses_what_cannot_be_promoted() {
        let table = [
            ("2.10.0", "final", "already final"),
            ("2.10.0+rocm7.13.0a20260430", "rc", "already final"),
            ("2.10.0.post1", "final", "post-release"),
            ("2.10.0a1.post1", "rc", "post-release"),
            ("2.10.0rc2", "rc2", "rc2 does not sort above rc2; use rc3"),
            ("2.10.0rc2", "rc1", "rc1 does not sort above rc2"),
            (
                "2.10.0rc2.dev1",
                "rc1",
                "rc1 does not sort above rc2.dev; use rc2",
            ),
        ];
        for (from, to, expected) in table {
            let error = promote(from, to).expect_err(from);
            assert!(error.contains(expected), "{from} → {to}: {error}");
            assert!(
                error.starts_with(&format!("torch {} cannot be promoted to", v(from))),
                "{error}"
            );
        }
        assert!("rc0".parse::<Promotion>().is_err());
        assert!(
            "beta"
                .parse::<Promotion>()
                .expect_err("beta")
                .contains("use rc, rcN")
        );
    }

    #[test]
    fn follows_a_promoted_sdk_in_the_label_only_as_a_whole_run() {
        let sdk = (v("7.13.0a20260501"), v("7.13.0"));
        let cases = [
            // W7: the reference turned this label into `git1b3c4d.rocm7.13.0`.
            (
                "2.10.0a0+git1a2b3c4d.rocm7.13.0a20260501",
                Promotion::ReleaseCandidate(1),
                "2.10.0rc1+git1a2b3c4d.rocm7.13.0",
            ),
            // F53's example: a final torch built on a nightly SDK follows the SDK's release.
            (
                "2.10.0+rocm7.13.0a20260501",
                Promotion::Final,
                "2.10.0+rocm7.13.0",
            ),
            // Another SDK build in the label is not the promoted one: left alone.
            (
                "2.10.0a0+rocm7.13.0a2026050",
                Promotion::Final,
                "2.10.0+rocm7.13.0a2026050",
            ),
        ];
        for (from, to, expected) in cases {
            let promoted = promoted_version("torch", &v(from), to, Some(&sdk)).expect(from);
            assert_eq!(promoted.to_string(), expected);
        }
        let error = promoted_version(
            "torch",
            &v("2.10.0+rocm7.12.0"),
            Promotion::Final,
            Some(&sdk),
        )
        .expect_err("no change");
        assert!(
            error
                .to_string()
                .contains("does not name the promoted ROCm SDK build"),
            "{error}"
        );
    }

    #[test]
    fn maps_a_set_and_collects_every_refusal() {
        let names: Vec<WheelFilename> = [
            "torch-2.10.0a0+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl",
            "triton-3.5.0a0+git1a2b3c4d-cp311-cp311-linux_x86_64.whl",
        ]
        .iter()
        .map(|n| WheelFilename::parse(n).expect("name"))
        .collect();
        let map = VersionMap::for_set(&names, Promotion::Final, None).expect("maps");
        assert_eq!(
            map.get("triton").map(|(_, new)| new.to_string()).as_deref(),
            Some("3.5.0+git1a2b3c4d")
        );
        let finals: Vec<WheelFilename> = [
            "torch-2.10.0-cp311-cp311-linux_x86_64.whl",
            "triton-3.5.0.post1-cp311-cp311-linux_x86_64.whl",
        ]
        .iter()
        .map(|n| WheelFilename::parse(n).expect("name"))
        .collect();
        let error = VersionMap::for_set(&finals, Promotion::Final, None)
            .expect_err("refused")
            .to_string();
        assert!(error.contains("torch 2.10.0 cannot be promoted"), "{error}");
        assert!(
            error.contains("triton 3.5.0.post1 cannot be promoted"),
            "{error}"
        );
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
            error.contains("pins torch 2.10.0a0, but the set promotes torch 2.9.0"),
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
