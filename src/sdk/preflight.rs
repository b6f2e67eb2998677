//! The SDK preflight: before a multi-GB install and a long build, read the index pages of
//! `rocm` (and of the packages it pins) and fail fast when the requested version is not there,
//! listing the nearest versions that are (TheRock#4746). It also fixes the version to install:
//! the newest match, so the installer gets an exact pin and cannot backtrack to an old build
//! when an index loses packages (TheRock#4824).
//!
//! Index pages are read with the shared index client (PEP 691 JSON when the server offers it,
//! PEP 503 HTML otherwise); `--find-links` is a directory or a flat HTML page of links.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::{Operator, Version, VersionSpecifiers};

use super::Error;
use crate::index::client::{IndexClient, Waits};
use crate::index::normalize_name;
use crate::redact::redact_url;
use crate::wheel::filename::dist_name_and_version;

/// Packages the `rocm` meta package pins to its own version; each must be on the index too.
pub const PINNED_COMPANIONS: &[&str] = &["rocm-sdk-core", "rocm-sdk-devel"];

/// Where pip will look for packages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexSource {
    /// A PEP 503 / 691 simple index (`--index-url`).
    Index(String),
    /// A directory or a flat page of links (`--find-links`).
    FindLinks(String),
}

impl IndexSource {
    pub fn display(&self) -> String {
        match self {
            IndexSource::Index(url) => format!("index {}", redact_url(url)),
            IndexSource::FindLinks(url) => format!("find-links {}", redact_url(url)),
        }
    }
}

/// One distribution file offered for a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexFile {
    pub filename: String,
    pub version: Version,
    pub yanked: bool,
}

/// Parses a version specifier as pip reads it after the requirement name (`>1.0`,
/// `==7.10.0a20251124`, `>=7.9,<8`). A bare version is refused with the fix.
pub fn parse_spec(spec: &str) -> Result<VersionSpecifiers, Error> {
    let trimmed = spec.trim();
    if trimmed.is_empty() {
        return Ok(VersionSpecifiers::empty());
    }
    VersionSpecifiers::from_str(trimmed).map_err(|error| {
        if Version::from_str(trimmed).is_ok() {
            Error::BareVersion {
                spec: spec.to_string(),
                version: trimmed.to_string(),
            }
        } else {
            Error::BadSpec {
                spec: spec.to_string(),
                reason: error.to_string(),
            }
        }
    })
}

/// The exact version a specifier pins (`==V` alone), if it does.
pub fn exact_pin(spec: &VersionSpecifiers) -> Option<Version> {
    let mut iter = spec.iter();
    let only = iter.next()?;
    if iter.next().is_some() {
        return None;
    }
    matches!(only.operator(), Operator::Equal | Operator::ExactEqual)
        .then(|| only.version().clone())
}

/// Whether pip would pick `version` for `spec`: it must match, and pre-releases need `--pre`
/// unless the specifier names a pre-release itself.
pub fn admits(spec: &VersionSpecifiers, pre: bool, version: &Version) -> bool {
    spec.contains(version)
        && (pre || !version.any_prerelease() || spec.iter().any(|s| s.version().any_prerelease()))
}

/// The newest non-yanked file version matching; a yanked one only when pinned exactly.
pub fn select(files: &[IndexFile], spec: &VersionSpecifiers, pre: bool) -> Option<Version> {
    let exact = exact_pin(spec);
    files
        .iter()
        .filter(|f| admits(spec, pre, &f.version))
        .filter(|f| !f.yanked || exact.as_ref() == Some(&f.version))
        .map(|f| f.version.clone())
        .max()
}

/// Up to `count` distinct versions closest to what was asked: around the pinned version for
/// `==V`, otherwise the newest ones.
pub fn nearest(files: &[IndexFile], spec: &VersionSpecifiers, count: usize) -> Vec<String> {
    let mut versions: Vec<&IndexFile> = files.iter().collect();
    versions.sort_by(|a, b| a.version.cmp(&b.version));
    versions.dedup_by(|a, b| a.version == b.version);
    let label = |f: &IndexFile| {
        if f.yanked {
            format!("{} (yanked)", f.version)
        } else {
            f.version.to_string()
        }
    };
    match exact_pin(spec) {
        Some(pin) => {
            let split = versions.partition_point(|f| f.version < pin);
            let below = versions[..split].iter().rev().take(count / 2 + count % 2);
            let above = versions[split..].iter().take(count / 2);
            let mut picked: Vec<&&IndexFile> = below.chain(above).collect();
            picked.sort_by(|a, b| a.version.cmp(&b.version));
            picked.into_iter().map(|f| label(f)).collect()
        }
        None => versions
            .iter()
            .rev()
            .take(count)
            .rev()
            .map(|f| label(f))
            .collect(),
    }
}

/// Keeps the files of `project` and reads their versions from the file names.
pub fn project_files(names: &[(String, bool)], project: &str) -> Vec<IndexFile> {
    let wanted = normalize_name(project);
    names
        .iter()
        .filter_map(|(filename, yanked)| {
            let (name, version) = dist_name_and_version(filename)?;
            if normalize_name(&name) != wanted {
                return None;
            }
            Some(IndexFile {
                filename: filename.clone(),
                version,
                yanked: *yanked,
            })
        })
        .collect()
}

/// Reads the file list of `project` from one source (HTTP, `file://` or a directory).
pub fn fetch_names(
    source: &IndexSource,
    project: &str,
    waits: Waits,
) -> Result<Vec<(String, bool)>, Error> {
    match source {
        IndexSource::Index(url) => match IndexClient::with_waits(url, waits)?.project(project)? {
            Some(files) => Ok(files.into_iter().map(|f| (f.filename, f.yanked)).collect()),
            None => Err(Error::NoPage {
                project: project.to_string(),
                index: source.clone(),
            }),
        },
        IndexSource::FindLinks(location) => match local_dir(location) {
            Some(dir) => {
                let entries = fs_err::read_dir(&dir).map_err(|error| Error::Unreachable {
                    what: format!("find-links directory {}", dir.display()),
                    reason: error.to_string(),
                })?;
                Ok(entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .map(|name| (name, false))
                    .collect())
            }
            None => flat_page(location, waits),
        },
    }
}

fn local_dir(location: &str) -> Option<PathBuf> {
    if location.starts_with("file:") {
        return reqwest::Url::parse(location).ok()?.to_file_path().ok();
    }
    (!location.contains("://")).then(|| PathBuf::from(location))
}

/// A `--find-links` page over HTTP: one flat page of links, read with the index client's
/// HTML parser.
fn flat_page(location: &str, waits: Waits) -> Result<Vec<(String, bool)>, Error> {
    let unreachable = |reason: String| Error::Unreachable {
        what: format!("find-links page {}", redact_url(location)),
        reason,
    };
    let url = reqwest::Url::parse(location).map_err(|e| unreachable(e.to_string()))?;
    let response = reqwest::blocking::Client::builder()
        .timeout(waits.timeout)
        .user_agent(concat!("rockbuild/", env!("CARGO_PKG_VERSION")))
        .build()
        .and_then(|client| client.get(url.clone()).header("Accept", "text/html").send())
        .and_then(reqwest::blocking::Response::error_for_status)
        .map_err(|e| unreachable(redact_url(&e.to_string())))?;
    let body = crate::index::client::read_page(response, waits.timeout).map_err(unreachable)?;
    Ok(crate::index::client::parse_html(&url, &body)
        .map_err(|e| unreachable(e.to_string()))?
        .into_iter()
        .map(|f| (f.filename, f.yanked))
        .collect())
}

/// What the preflight decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preflight {
    /// The exact `rocm` version to install.
    pub version: Version,
    /// How many `rocm` files the sources offered.
    pub offered: usize,
}

/// Reads `rocm` (and its pinned companions) from every source and picks the version to
/// install: `pinned` (from a lock) when given, else the newest match of `spec`.
pub fn check(
    sources: &[IndexSource],
    spec: &VersionSpecifiers,
    pre: bool,
    pinned: Option<&Version>,
    waits: Waits,
) -> Result<Preflight, Error> {
    let sources_text = sources
        .iter()
        .map(IndexSource::display)
        .collect::<Vec<_>>()
        .join(" + ");
    let gather = |project: &str| -> Result<Vec<IndexFile>, Error> {
        let mut files = Vec::new();
        for source in sources {
            match fetch_names(source, project, waits) {
                Ok(names) => files.extend(project_files(&names, project)),
                // A find-links page beside an index may lack a project; the index may lack it
                // when find-links provides it. Only "nowhere" is an error (below).
                Err(Error::NoPage { .. }) if sources.len() > 1 => {}
                Err(error) => return Err(error),
            }
        }
        Ok(files)
    };
    let rocm = gather(super::ROCM_DIST)?;
    let chosen = match pinned {
        Some(version) => rocm
            .iter()
            .find(|f| &f.version == version)
            .map(|f| f.version.clone()),
        None => select(&rocm, spec, pre),
    };
    let Some(version) = chosen else {
        let any_pre = !pre
            && rocm
                .iter()
                .any(|f| spec.contains(&f.version) && f.version.any_prerelease());
        let hint = if any_pre {
            Some("pre-releases match: drop --no-pre".to_string())
        } else {
            pinned.map(|v| format!("the lock pins rocm {v}: install from an index that still has it, or start from a new lock"))
        };
        let pin_spec = pinned.map(|v| format!("=={v}"));
        let shown_spec = pin_spec.clone().unwrap_or_else(|| spec.to_string());
        let nearest_spec = pin_spec
            .and_then(|s| parse_spec(&s).ok())
            .unwrap_or_else(|| spec.clone());
        return Err(Error::NoMatch {
            project: super::ROCM_DIST.into(),
            spec: if shown_spec.is_empty() {
                "(any)".into()
            } else {
                shown_spec
            },
            pre,
            sources: sources_text,
            nearest: nearest(&rocm, &nearest_spec, 6),
            hint,
        });
    };
    for companion in PINNED_COMPANIONS {
        let files = gather(companion)?;
        if !files.iter().any(|f| f.version == version) {
            let exact =
                parse_spec(&format!("=={version}")).unwrap_or_else(|_| VersionSpecifiers::empty());
            return Err(Error::CompanionMissing {
                version: version.to_string(),
                companion: (*companion).to_string(),
                sources: sources_text,
                nearest: nearest(&files, &exact, 4),
            });
        }
    }
    Ok(Preflight {
        version,
        offered: rocm.len(),
    })
}

/// The index sources pip will use, from the flags (empty strings ignored, as the reference
/// does); with neither, pip's default index.
pub fn sources(
    index_url: Option<&str>,
    find_links: Option<&str>,
    default_index: &str,
) -> Vec<IndexSource> {
    let index_url = index_url.filter(|s| !s.trim().is_empty());
    let find_links = find_links.filter(|s| !s.trim().is_empty());
    let mut out = vec![IndexSource::Index(
        index_url.unwrap_or(default_index).to_string(),
    )];
    if let Some(links) = find_links {
        out.push(IndexSource::FindLinks(links.to_string()));
    }
    out
}

/// True when a find-links location is a local path that does not exist (a typo caught before
/// pip silently ignores it).
pub fn missing_local_find_links(location: &str) -> Option<PathBuf> {
    local_dir(location).filter(|dir| !Path::new(dir).is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[&str]) -> Vec<IndexFile> {
        let names: Vec<(String, bool)> = list
            .iter()
            .map(|n| (n.trim_start_matches('!').to_string(), n.starts_with('!')))
            .collect();
        project_files(&names, "rocm")
    }

    fn spec(s: &str) -> VersionSpecifiers {
        parse_spec(s).expect("spec")
    }

    #[test]
    fn file_names_are_matched_to_the_project() {
        let names: Vec<(String, bool)> = [
            "rocm-7.10.0-py3-none-any.whl",
            "rocm_sdk_core-7.10.0-py3-none-linux_x86_64.whl",
            "rocm_sdk_core-7.9.0.tar.gz",
            "rocm-7.8.0.tar.gz",
            "README.txt",
        ]
        .iter()
        .map(|n| (n.to_string(), false))
        .collect();
        let versions = |p: &str| -> Vec<String> {
            project_files(&names, p)
                .iter()
                .map(|f| f.version.to_string())
                .collect()
        };
        assert_eq!(versions("rocm"), ["7.10.0", "7.8.0"]);
        assert_eq!(versions("rocm-sdk-core"), ["7.10.0", "7.9.0"]);
    }

    #[test]
    fn selection_follows_pip_rules() {
        let offered = files(&[
            "rocm-0.1.0-py3-none-any.whl",
            "rocm-7.9.0-py3-none-any.whl",
            "rocm-7.10.0a20251124-py3-none-any.whl",
            "!rocm-7.10.0a20251125-py3-none-any.whl",
        ]);
        let pick = |s: &str, pre: bool| select(&offered, &spec(s), pre).map(|v| v.to_string());
        assert_eq!(
            pick(">1.0", true).as_deref(),
            Some("7.10.0a20251124"),
            "yanked skipped"
        );
        assert_eq!(
            pick(">1.0", false).as_deref(),
            Some("7.9.0"),
            "no pre without --pre"
        );
        assert_eq!(
            pick("==7.10.0a20251124", false).as_deref(),
            Some("7.10.0a20251124"),
            "explicit pre"
        );
        assert_eq!(
            pick("==7.10.0a20251125", true).as_deref(),
            Some("7.10.0a20251125"),
            "exact pin takes yanked"
        );
        assert_eq!(pick("==7.11.0", true), None);
        assert_eq!(pick("", true).as_deref(), Some("7.10.0a20251124"));
    }

    #[test]
    fn nearest_versions_surround_the_pin() {
        let offered = files(&[
            "rocm-7.8.0-py3-none-any.whl",
            "rocm-7.9.0-py3-none-any.whl",
            "rocm-7.9.0-py3-none-manylinux.whl",
            "rocm-7.10.0a1-py3-none-any.whl",
            "rocm-7.11.0-py3-none-any.whl",
            "rocm-7.12.0-py3-none-any.whl",
        ]);
        assert_eq!(
            nearest(&offered, &spec("==7.10.0"), 4),
            ["7.9.0", "7.10.0a1", "7.11.0", "7.12.0"]
        );
        assert_eq!(nearest(&offered, &spec(">8"), 2), ["7.11.0", "7.12.0"]);
        assert!(nearest(&[], &spec(">8"), 2).is_empty());
    }

    #[test]
    fn specs_are_validated_with_the_fix() {
        assert_eq!(
            parse_spec("7.10.0").expect_err("bare").to_string(),
            "--rocm-sdk-version `7.10.0` is a version, not a specifier: write `==7.10.0`"
        );
        assert!(
            parse_spec("=>7")
                .expect_err("bad")
                .to_string()
                .contains("is not a PEP 440 version specifier")
        );
        assert_eq!(
            exact_pin(&spec("==7.10.0"))
                .map(|v| v.to_string())
                .as_deref(),
            Some("7.10.0")
        );
        assert_eq!(exact_pin(&spec(">=7.10.0")), None);
        assert_eq!(exact_pin(&spec("==7.10.0,!=7.9")), None);
    }

    #[test]
    fn local_directory_sources_are_listed() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in [
            "rocm-7.10.0-py3-none-any.whl",
            "rocm_sdk_core-7.10.0-py3-none-any.whl",
        ] {
            fs_err::write(dir.path().join(name), "").expect("write");
        }
        let source = IndexSource::FindLinks(dir.path().display().to_string());
        let error = check(
            std::slice::from_ref(&source),
            &spec("==7.10.0"),
            true,
            None,
            Waits::default(),
        )
        .expect_err("no devel");
        assert!(
            error
                .to_string()
                .contains("but `rocm-sdk-devel` 7.10.0, which it pins, is not"),
            "{error}"
        );
        fs_err::write(
            dir.path().join("rocm_sdk_devel-7.10.0-py3-none-any.whl"),
            "",
        )
        .expect("write");
        let found = check(
            std::slice::from_ref(&source),
            &spec(">1.0"),
            true,
            None,
            Waits::default(),
        )
        .expect("found");
        assert_eq!(found.version.to_string(), "7.10.0");
        let error =
            check(&[source], &spec("==7.11.0"), true, None, Waits::default()).expect_err("missing");
        assert_eq!(
            error.to_string(),
            format!(
                "no `rocm` version matching `==7.11.0` on find-links {}; nearest available: 7.10.0",
                dir.path().display()
            )
        );
        assert_eq!(
            missing_local_find_links("/definitely/not/here"),
            Some(PathBuf::from("/definitely/not/here"))
        );
        assert_eq!(missing_local_find_links("http://h/x"), None);
    }
}
