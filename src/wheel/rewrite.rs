//! Rewriting the version of wheels for promotion (`promote --rewrite-version rc|final`,
//! reference F53) without touching their content: unchanged entries are raw-copied (their
//! compressed bytes, CRC and sizes as they are — no inflate, no deflate; see `zipwrite` for
//! why not zip's `raw_copy_file`); METADATA, the `.dist-info` and `.data` directory names,
//! the version files and RECORD are regenerated.
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
use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::{Prerelease, PrereleaseKind, Version};

use crate::wheel::archive::Archive;
use crate::wheel::filename::{WheelFilename, normalize_name};
use crate::wheel::metadata::{CoreMetadata, Requirement};
use crate::wheel::record;
use crate::wheel::zipwrite::ZipOut;

/// METADATA, RECORD and version files are read into memory; larger ones are not real.
const MAX_SMALL_FILE: u64 = 64 << 20;

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

impl RewriteError {
    /// True when a wheel could not be read or rewritten (a failure), rather than the
    /// promotion being refused for the versions it would make (a usage error).
    pub fn is_wheel_failure(&self) -> bool {
        match self {
            RewriteError::Wheel { .. } => true,
            RewriteError::Several(errors) => errors.iter().any(RewriteError::is_wheel_failure),
            RewriteError::NotPromotable { .. } | RewriteError::Refused(_) => false,
        }
    }

    /// The same error with every wheel named by `name` where it gives one: a caller that
    /// rewrote temporary copies reports the wheels the user knows (their store keys).
    pub fn rename_wheels(self, name: &impl Fn(&Path) -> Option<PathBuf>) -> RewriteError {
        match self {
            RewriteError::Wheel { wheel, detail } => RewriteError::Wheel {
                wheel: name(&wheel).unwrap_or(wheel),
                detail,
            },
            RewriteError::Several(errors) => {
                RewriteError::Several(errors.into_iter().map(|e| e.rename_wheels(name)).collect())
            }
            other => other,
        }
    }
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
/// wheel is left behind). The source is read with the strict reader and refused if its
/// container has any defect; it should have passed [`crate::wheel::verify::verify_set`], since
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
    let handle = fs_err::File::open(wheel).map_err(|e| fail(e.to_string()))?;
    let mut problems = Vec::new();
    let archive =
        Archive::open(handle.into_file(), &mut problems).map_err(|e| fail(e.to_string()))?;
    let mut spans = Vec::with_capacity(archive.entries.len());
    for entry in &archive.entries {
        spans.push(
            archive
                .local_header(entry, &mut problems)
                .map_err(|e| fail(format!("'{}': {e}", entry.name)))?,
        );
    }
    if let Some(problem) = problems.first() {
        return Err(fail(format!(
            "{problem}; verify the wheel before promoting it"
        )));
    }
    let find = |name: &str| {
        archive
            .entries
            .iter()
            .position(|e| e.name == name)
            .ok_or_else(|| fail(format!("no '{name}'")))
    };
    let read = |index: usize| {
        archive
            .read_small(&archive.entries[index], MAX_SMALL_FILE, &mut Vec::new())
            .map_err(|e| fail(format!("'{}': {e}", archive.entries[index].name)))
    };

    let dist_info = archive
        .entries
        .iter()
        .filter_map(|e| e.name.split_once('/').map(|(top, _)| top))
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
    let metadata_index = find(&metadata_name)?;
    let record_index = find(&record_name)?;
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
    let write_error = |e: std::io::Error| fail(format!("writing {new_file}: {e}"));
    let mut out = ZipOut::new(temp.reopen().map_err(write_error)?);
    let mut new_hashes: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut version_files = Vec::new();
    let mut raw_copied = 0;
    for (index, (entry, span)) in archive.entries.iter().zip(&spans).enumerate() {
        if index == record_index {
            continue;
        }
        let new_name = rename(&entry.name);
        let patched = if index == metadata_index {
            Some(new_metadata.clone())
        } else if is_version_file(&entry.name) {
            let original = read(index)?;
            let text = String::from_utf8_lossy(&original);
            let replaced = replace_literals(&text, &replacements);
            (replaced != text).then(|| {
                version_files.push(new_name.clone());
                replaced.into_bytes()
            })
        } else {
            None
        };
        match patched {
            Some(bytes) => {
                out.add(&new_name, &bytes, entry).map_err(write_error)?;
                new_hashes.insert(new_name, (record::record_hash(&bytes), bytes.len() as u64));
            }
            None => {
                out.raw_copy(&archive, entry, *span, &new_name)
                    .map_err(write_error)?;
                raw_copied += 1;
            }
        }
    }
    let new_record_name = rename(&record_name);
    let mut lines: Vec<(String, Option<String>, Option<u64>)> = Vec::new();
    for line in record_lines.iter().filter(|line| line.path != record_name) {
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
        lines.push((path, hash, size));
    }
    lines.push((new_record_name.clone(), None, None));
    let record_bytes = record::render(lines.iter().map(|(p, h, s)| (p.as_str(), h.as_deref(), *s)));
    out.add(
        &new_record_name,
        record_bytes.as_bytes(),
        &archive.entries[record_index],
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

    #[test]
    fn wheel_failures_anywhere_are_failures_and_are_renamed() {
        let wheel = |path: &str| RewriteError::Wheel {
            wheel: PathBuf::from(path),
            detail: "truncated zip".into(),
        };
        let refused = RewriteError::Refused("no".into());
        assert!(wheel("/tmp/a.whl").is_wheel_failure());
        assert!(!refused.is_wheel_failure());
        let several =
            RewriteError::Several(vec![refused, wheel("/tmp/a.whl"), wheel("/tmp/b.whl")]);
        assert!(several.is_wheel_failure());
        assert!(
            !RewriteError::Several(vec![RewriteError::Refused("no".into())]).is_wheel_failure()
        );
        let renamed = several.rename_wheels(&|path: &Path| {
            (path == Path::new("/tmp/a.whl")).then(|| PathBuf::from("s3://wheels/staged/a/a.whl"))
        });
        assert_eq!(
            renamed.to_string(),
            "the set cannot be promoted:\n  no\n  s3://wheels/staged/a/a.whl: truncated zip\n  /tmp/b.whl: truncated zip"
        );
    }

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

    /// Real tools: setuptools builds the wheels, pip and uv install the rewritten ones.
    #[allow(clippy::disallowed_methods)]
    mod installs {
        use super::super::*;
        use std::io::Read;
        use std::process::Command;

        fn tools() -> PathBuf {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin")
        }

        /// A command with a clean environment: no PIP_* or VIRTUAL_ENV from the shell.
        fn command(program: impl AsRef<std::ffi::OsStr>, home: &Path) -> Command {
            let mut command = Command::new(program);
            command
                .env_clear()
                .env("PATH", format!("{}:/usr/bin:/bin", tools().display()))
                .env("HOME", home)
                .env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
                .env("PIP_NO_INPUT", "1")
                .env("UV_NO_CACHE", "1")
                .env("PYTHONDONTWRITEBYTECODE", "1");
            command
        }

        #[track_caller]
        fn run(command: &mut Command) -> String {
            let output = command.output().expect("spawn");
            assert!(
                output.status.success(),
                "{command:?} failed:\n{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8_lossy(&output.stdout).into_owned()
        }

        /// A setuptools project with a version file, a pin and a data file; built by pip.
        fn build_wheel(
            root: &Path,
            name: &str,
            version: &str,
            requires: &[&str],
            out: &Path,
        ) -> PathBuf {
            let project = root.join(format!("src-{name}"));
            fs_err::create_dir_all(project.join(name)).expect("mkdir");
            fs_err::create_dir_all(project.join("share")).expect("mkdir");
            fs_err::write(
                project.join(name).join("__init__.py"),
                "from .version import __version__\n",
            )
            .expect("write");
            fs_err::write(
                project.join(name).join("version.py"),
                format!("__version__ = '{version}'\ngit_version = 'abc{version}'\n"),
            )
            .expect("write");
            fs_err::write(project.join("share/notes.txt"), format!("{name} data\n"))
                .expect("write");
            fs_err::write(
                project.join("setup.py"),
                format!(
                    "from setuptools import setup\nsetup(name={name:?}, version={version:?}, packages=[{name:?}], \
                     install_requires={requires:?}, data_files=[('share/{name}-test', ['share/notes.txt'])])\n"
                ),
            )
            .expect("write");
            run(command(tools().join("python"), root)
                .args([
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    "--no-build-isolation",
                    "--no-index",
                    "-q",
                    "-w",
                ])
                .arg(out)
                .arg(&project));
            fs_err::read_dir(out)
                .expect("list")
                .map(|e| e.expect("entry").path())
                .find(|p| {
                    p.file_name()
                        .is_some_and(|f| f.to_string_lossy().starts_with(&format!("{name}-")))
                })
                .expect("built wheel")
        }

        fn raw_bytes(wheel: &Path, entry: &str) -> Vec<u8> {
            let mut archive =
                zip::ZipArchive::new(fs_err::File::open(wheel).expect("open")).expect("zip");
            let mut raw = Vec::new();
            let index = archive.index_for_name(entry).expect("entry");
            // `by_index_raw` reads the stored (compressed) bytes.
            archive
                .by_index_raw(index)
                .expect("entry")
                .read_to_end(&mut raw)
                .expect("read");
            raw
        }

        #[test]
        fn promoted_sets_verify_and_pip_and_uv_install_them() {
            let root = tempfile::tempdir().expect("tempdir");
            let root = root.path();
            let staged = root.join("staged");
            let torch = build_wheel(
                root,
                "torch",
                "2.10.0a0+rocm7.13.0a20260430",
                &["triton==3.5.0a0+git1a2b3c4d"],
                &staged,
            );
            let triton = build_wheel(root, "triton", "3.5.0a0+git1a2b3c4d", &[], &staged);

            let released = root.join("released");
            let rewritten = rewrite_set(
                &[torch.clone(), triton.clone()],
                Promotion::Final,
                None,
                &released,
            )
            .expect("rewrites");
            let files: Vec<String> = rewritten
                .iter()
                .map(|r| {
                    r.path
                        .file_name()
                        .expect("name")
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            assert_eq!(
                files,
                [
                    "torch-2.10.0+rocm7.13.0a20260430-py3-none-any.whl",
                    "triton-3.5.0+git1a2b3c4d-py3-none-any.whl"
                ]
            );
            assert_eq!(
                rewritten[0].requirements,
                vec![(
                    "triton==3.5.0a0+git1a2b3c4d".to_string(),
                    "triton==3.5.0+git1a2b3c4d".to_string()
                )]
            );
            assert_eq!(rewritten[0].version_files, vec!["torch/version.py"]);
            assert!(rewritten[0].raw_copied >= 3, "{:?}", rewritten[0]);
            // Unchanged entries keep their compressed bytes: copied, not recompressed.
            assert_eq!(
                raw_bytes(&torch, "torch/__init__.py"),
                raw_bytes(&rewritten[0].path, "torch/__init__.py")
            );

            // The strict verifier accepts the result, closure included (these pure-Python
            // stand-ins have no GPU libraries, so no recipe expectations apply).
            let stack = crate::stack::Stack::load(None).expect("stack");
            let options =
                crate::wheel::verify::VerifyOptions::for_stack(&stack, Default::default());
            let report = crate::wheel::verify::verify_set(
                &[rewritten[0].path.clone(), rewritten[1].path.clone()],
                &options,
            )
            .expect("verifies");
            assert!(
                report.ok,
                "{:?}",
                report
                    .wheels
                    .iter()
                    .map(|w| &w.problems)
                    .collect::<Vec<_>>()
            );

            for installer in ["pip", "uv"] {
                let venv = root.join(format!("venv-{installer}"));
                run(command("python3", root)
                    .args(["-m", "venv", "--without-pip"])
                    .arg(&venv));
                let python = venv.join("bin/python");
                match installer {
                    "pip" => run(command(tools().join("python"), root)
                        .args(["-m", "pip", "--python"])
                        .arg(&python)
                        .args(["install", "-q", "--no-index", "--find-links"])
                        .arg(&released)
                        .arg("torch==2.10.0+rocm7.13.0a20260430")),
                    _ => run(command(tools().join("uv"), root)
                        .args([
                            "pip",
                            "install",
                            "-q",
                            "--offline",
                            "--no-index",
                            "--python",
                        ])
                        .arg(&python)
                        .arg("--find-links")
                        .arg(&released)
                        .arg("torch==2.10.0+rocm7.13.0a20260430")),
                };
                let seen = run(command(&python, root).args([
                    "-c",
                    "import torch, triton, importlib.metadata as m; print(torch.__version__, m.version('torch'), m.version('triton'), triton.__version__)",
                ]));
                assert_eq!(
                    seen.trim(),
                    "2.10.0+rocm7.13.0a20260430 2.10.0+rocm7.13.0a20260430 3.5.0+git1a2b3c4d 3.5.0+git1a2b3c4d",
                    "{installer}"
                );
                // The .data directory was renamed with the dist-info: its file lands in share/.
                assert!(
                    venv.join("share/torch-test/notes.txt").exists(),
                    "{installer}: data file not installed"
                );
                // Text that merely contains the version is left alone.
                let version_py = fs_err::read_to_string(
                    fs_err::read_dir(venv.join("lib"))
                        .expect("lib")
                        .next()
                        .expect("python dir")
                        .expect("entry")
                        .path()
                        .join("site-packages/torch/version.py"),
                )
                .expect("version.py");
                assert!(
                    version_py.contains("git_version = 'abc2.10.0a0+rocm7.13.0a20260430'"),
                    "{version_py}"
                );
            }
        }

        #[test]
        fn defective_sources_are_refused_and_nothing_is_written() {
            let root = tempfile::tempdir().expect("tempdir");
            let root = root.path();
            let staged = root.join("staged");
            let wheel = build_wheel(root, "triton", "3.5.0a0+git1a2b3c4d", &[], &staged);
            let bytes = fs_err::read(&wheel).expect("read");
            let broken = root.join("broken");
            fs_err::create_dir_all(&broken).expect("mkdir");
            // A truncated upload, and a file renamed without its metadata (TheRock W6).
            let truncated = broken.join("triton-3.5.0a0+git1a2b3c4d-py3-none-any.whl");
            fs_err::write(&truncated, &bytes[..bytes.len() - 30]).expect("write");
            let renamed = broken.join("triton-3.6.0a0-py3-none-any.whl");
            fs_err::write(&renamed, &bytes).expect("write");
            let out = root.join("out");
            for (source, expected) in [
                (&truncated, "the archive is truncated"),
                (
                    &renamed,
                    "METADATA says version 3.5.0a0+git1a2b3c4d but the file name says 3.6.0a0",
                ),
            ] {
                let error = rewrite_set(std::slice::from_ref(source), Promotion::Final, None, &out)
                    .expect_err("refused")
                    .to_string();
                assert!(error.starts_with(&source.display().to_string()), "{error}");
                assert!(error.contains(expected), "{error}");
            }
            let left = fs_err::read_dir(&out).map(|d| d.count()).unwrap_or(0);
            assert_eq!(left, 0, "files left in {}", out.display());
        }

        #[test]
        fn a_zip64_wheel_is_rewritten_by_raw_copy() {
            let root = tempfile::tempdir().expect("tempdir");
            let root = root.path();
            let staged = root.join("staged");
            fs_err::create_dir_all(&staged).expect("mkdir");
            // Python's zipfile with a tiny ZIP64 limit writes ZIP64 records and extra fields,
            // as it does for wheels over 4 GiB.
            let script = r#"
import base64, hashlib, random, sys, zipfile
zipfile.ZIP64_LIMIT = 1024
files = {"big/__init__.py": b"from .version import __version__\n", "big/version.py": b"__version__ = '1.0a3'\n", "big/blob.bin": random.Random(7).randbytes(50000),
         "big-1.0a3.dist-info/METADATA": b"Metadata-Version: 2.1\nName: big\nVersion: 1.0a3\n",
         "big-1.0a3.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n" for n, d in files.items())
files["big-1.0a3.dist-info/RECORD"] = (record + "big-1.0a3.dist-info/RECORD,,\n").encode()
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for n, d in files.items():
        z.writestr(n, d)
"#;
            let source = staged.join("big-1.0a3-py3-none-any.whl");
            run(command("python3", root).arg("-c").arg(script).arg(&source));
            let stack = crate::stack::Stack::load(None).expect("stack");
            let options =
                crate::wheel::verify::VerifyOptions::for_stack(&stack, Default::default());
            let before = crate::wheel::verify::verify_set(std::slice::from_ref(&source), &options)
                .expect("verifies");
            assert!(before.ok && before.wheels[0].zip64, "{before:?}");

            let out = root.join("out");
            let rewritten = rewrite_set(
                std::slice::from_ref(&source),
                Promotion::ReleaseCandidate(1),
                None,
                &out,
            )
            .expect("rewrites");
            assert_eq!(rewritten[0].path, out.join("big-1.0rc1-py3-none-any.whl"));
            assert_eq!(
                raw_bytes(&source, "big/blob.bin"),
                raw_bytes(&rewritten[0].path, "big/blob.bin")
            );
            let after = crate::wheel::verify::verify_set(
                std::slice::from_ref(&rewritten[0].path),
                &options,
            )
            .expect("verifies");
            assert!(after.ok, "{:?}", after.wheels[0].problems);
            // uv is the strict one (zip's own raw copy produced wheels it refuses).
            let venv = root.join("venv");
            run(command("python3", root)
                .args(["-m", "venv", "--without-pip"])
                .arg(&venv));
            run(command(tools().join("uv"), root)
                .args([
                    "pip",
                    "install",
                    "-q",
                    "--offline",
                    "--no-index",
                    "--python",
                ])
                .arg(venv.join("bin/python"))
                .arg(&rewritten[0].path));
            let seen = run(command(venv.join("bin/python"), root).args([
                "-c",
                "import big, importlib.metadata as m; print(big.__version__, m.version('big'))",
            ]));
            assert_eq!(seen.trim(), "1.0rc1 1.0rc1");
            // No temporary file is left next to the result.
            let names: Vec<String> = fs_err::read_dir(&out)
                .expect("list")
                .map(|e| e.expect("e").file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, ["big-1.0rc1-py3-none-any.whl"]);
        }
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
