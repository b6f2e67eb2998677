//! The SDK preflight: before a multi-GB install and a long build, read the index pages of
//! `rocm` (and of the packages it pins) and fail fast when the requested version is not there,
//! listing the nearest versions that are (TheRock#4746). It also fixes the version to install:
//! the newest match, so the installer gets an exact pin and cannot backtrack to an old build
//! when an index loses packages (TheRock#4824).
//!
//! Pages are read the way pip reads them: PEP 691 JSON when the server offers it, PEP 503 HTML
//! otherwise; `--find-links` is a directory or a flat HTML page of links.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use pep440_rs::{Operator, Version, VersionSpecifiers};

use crate::redact::redact_url;
use crate::version::wheel_dist_name;

/// Packages the `rocm` meta package pins to its own version; each must be on the index too.
pub const PINNED_COMPANIONS: &[&str] = &["rocm-sdk-core", "rocm-sdk-devel"];

const PEP691_ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01";

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

#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error(
        "could not read {what}: {reason}; check the URL and the network (the preflight runs before anything is installed)"
    )]
    Unreachable { what: String, reason: String },
    #[error("{} has no page for `{project}` (HTTP 404): is this the right index for the ROCm SDK?", index.display())]
    NoPage { project: String, index: IndexSource },
    #[error("no `{project}` version matching `{spec}`{} on {}{}{}", pre_note(*pre), sources, nearest_list(nearest), hint_line(hint))]
    NoMatch {
        project: String,
        spec: String,
        pre: bool,
        sources: String,
        nearest: Vec<String>,
        hint: Option<String>,
    },
    #[error(
        "`rocm` {version} is on {sources}, but `{companion}` {version}, which it pins, is not{}; pip would fail or fall back to an older SDK (TheRock#4746, #4824): wait for the index to be complete or pick another version",
        nearest_list(nearest)
    )]
    CompanionMissing {
        version: String,
        companion: String,
        sources: String,
        nearest: Vec<String>,
    },
}

fn pre_note(pre: bool) -> &'static str {
    if pre {
        ""
    } else {
        " (pre-releases excluded by --no-pre)"
    }
}

fn nearest_list(nearest: &[String]) -> String {
    if nearest.is_empty() {
        "; it offers no versions at all".to_string()
    } else {
        format!("; nearest available: {}", nearest.join(", "))
    }
}

fn hint_line(hint: &Option<String>) -> String {
    hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default()
}

/// Parses a version specifier as pip reads it after the requirement name (`>1.0`,
/// `==7.10.0a20251124`, `>=7.9,<8`). A bare version is refused with the fix.
pub fn parse_spec(spec: &str) -> Result<VersionSpecifiers, String> {
    let trimmed = spec.trim();
    if trimmed.is_empty() {
        return Ok(VersionSpecifiers::empty());
    }
    VersionSpecifiers::from_str(trimmed).map_err(|error| {
        if Version::from_str(trimmed).is_ok() {
            format!(
                "--rocm-sdk-version `{spec}` is a version, not a specifier: write `=={trimmed}`"
            )
        } else {
            format!("--rocm-sdk-version `{spec}` is not a PEP 440 version specifier: {error}")
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
    let wanted = wheel_dist_name(project);
    names
        .iter()
        .filter_map(|(filename, yanked)| {
            let version = file_version(filename, &wanted)?;
            Some(IndexFile {
                filename: filename.clone(),
                version,
                yanked: *yanked,
            })
        })
        .collect()
}

/// The version in a wheel or sdist file name, if the file belongs to `dist` (normalized).
fn file_version(filename: &str, dist: &str) -> Option<Version> {
    let raw = if let Some(stem) = filename.strip_suffix(".whl") {
        let mut parts = stem.splitn(3, '-');
        let name = parts.next()?;
        if wheel_dist_name(name) != dist {
            return None;
        }
        parts.next()?.to_string()
    } else {
        let stem = [".tar.gz", ".zip", ".tar.bz2"]
            .iter()
            .find_map(|ext| filename.strip_suffix(ext))?;
        // sdist names may contain `-`: the version is what follows the normalized name.
        let (name, version) = stem.rsplit_once('-')?;
        if wheel_dist_name(name) != dist {
            return None;
        }
        version.to_string()
    };
    Version::from_str(&raw).ok()
}

/// `(file name, yanked)` of every `<a>` in a PEP 503 page or flat find-links page.
pub fn parse_html(html: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    while let Some(offset) = lower[at..].find("<a") {
        let start = at + offset;
        let Some(tag_len) = lower[start..].find('>') else {
            break;
        };
        let tag = &html[start..start + tag_len];
        let after_tag = start + tag_len + 1;
        let Some(close) = lower[after_tag..].find("</a>") else {
            break;
        };
        let text = decode_entities(html[after_tag..after_tag + close].trim());
        at = after_tag + close + 4;
        // `<abbr>` and friends are not links.
        if !tag[2..].starts_with(|c: char| c.is_ascii_whitespace()) {
            continue;
        }
        let yanked = tag.to_ascii_lowercase().contains("data-yanked");
        let name = if text.is_empty() || text.contains('/') {
            attribute(tag, "href")
                .map(|href| href_file_name(&href))
                .unwrap_or_default()
        } else {
            text
        };
        if !name.is_empty() {
            out.push((name, yanked));
        }
    }
    out
}

/// `(file name, yanked)` of every file in a PEP 691 JSON page.
pub fn parse_json(text: &str) -> Result<Vec<(String, bool)>, String> {
    #[derive(serde::Deserialize)]
    struct Page {
        files: Vec<File>,
    }
    #[derive(serde::Deserialize)]
    struct File {
        filename: String,
        #[serde(default)]
        yanked: serde_json::Value,
    }
    let page: Page = serde_json::from_str(text).map_err(|e| format!("not a PEP 691 page: {e}"))?;
    Ok(page
        .files
        .into_iter()
        .map(|f| {
            let yanked = match f.yanked {
                serde_json::Value::Bool(b) => b,
                serde_json::Value::String(_) => true,
                _ => false,
            };
            (f.filename, yanked)
        })
        .collect())
}

fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut search = 0;
    while let Some(offset) = lower[search..].find(name) {
        let start = search + offset;
        search = start + name.len();
        let preceded_by_space = lower[..start].ends_with(|c: char| c.is_ascii_whitespace());
        let rest = lower[search..].trim_start();
        if !preceded_by_space || !rest.starts_with('=') {
            continue;
        }
        let value_start = tag.len() - rest.len() + 1;
        let value = tag[value_start..].trim_start();
        return Some(match value.chars().next() {
            Some(quote @ ('"' | '\'')) => value[1..]
                .split(quote)
                .next()
                .unwrap_or_default()
                .to_string(),
            _ => value
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string(),
        });
    }
    None
}

fn href_file_name(href: &str) -> String {
    let path = href.split(['#', '?']).next().unwrap_or_default();
    percent_decode(path.rsplit('/').next().unwrap_or_default())
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn decode_entities(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#43;", "+")
        .replace("&#x2B;", "+")
        .replace("&amp;", "&")
}

/// Reads the file list of `project` from one source (HTTP or a local directory).
pub fn fetch_names(
    source: &IndexSource,
    project: &str,
) -> Result<Vec<(String, bool)>, PreflightError> {
    match source {
        IndexSource::Index(url) => {
            let page = format!(
                "{}/{}/",
                url.trim_end_matches('/'),
                wheel_dist_name(project).replace('_', "-")
            );
            match http_get(&page, PEP691_ACCEPT)? {
                None => Err(PreflightError::NoPage {
                    project: project.to_string(),
                    index: source.clone(),
                }),
                Some((content_type, body)) => {
                    if content_type.contains("json") {
                        parse_json(&body).map_err(|reason| PreflightError::Unreachable {
                            what: redact_url(&page),
                            reason,
                        })
                    } else {
                        Ok(parse_html(&body))
                    }
                }
            }
        }
        IndexSource::FindLinks(location) => {
            if let Some(dir) = local_dir(location) {
                let entries =
                    fs_err::read_dir(&dir).map_err(|error| PreflightError::Unreachable {
                        what: format!("find-links directory {}", dir.display()),
                        reason: error.to_string(),
                    })?;
                Ok(entries
                    .filter_map(Result::ok)
                    .filter_map(|e| e.file_name().into_string().ok())
                    .map(|name| (name, false))
                    .collect())
            } else {
                match http_get(location, "text/html")? {
                    Some((_, body)) => Ok(parse_html(&body)),
                    None => Err(PreflightError::Unreachable {
                        what: format!("find-links page {}", redact_url(location)),
                        reason: "HTTP 404".into(),
                    }),
                }
            }
        }
    }
}

fn local_dir(location: &str) -> Option<PathBuf> {
    if let Some(path) = location.strip_prefix("file://") {
        return Some(PathBuf::from(percent_decode(path)));
    }
    (!location.contains("://")).then(|| PathBuf::from(location))
}

/// GET with a few retries on connection errors and 5xx; `None` for 404.
fn http_get(url: &str, accept: &str) -> Result<Option<(String, String)>, PreflightError> {
    let unreachable = |reason: String| PreflightError::Unreachable {
        what: redact_url(url),
        reason,
    };
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .user_agent(concat!("rockbuild/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| unreachable(e.to_string()))?;
    let mut last_error = String::new();
    for attempt in 0..3u32 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_secs(1 << (attempt - 1)));
        }
        match client.get(url).header("Accept", accept).send() {
            Ok(response) if response.status() == reqwest::StatusCode::NOT_FOUND => return Ok(None),
            Ok(response) if response.status().is_server_error() => {
                last_error = format!("HTTP {}", response.status());
            }
            Ok(response) if !response.status().is_success() => {
                return Err(unreachable(format!("HTTP {}", response.status())));
            }
            Ok(response) => {
                let content_type = response
                    .headers()
                    .get(reqwest::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                let body = response.text().map_err(|e| unreachable(e.to_string()))?;
                return Ok(Some((content_type, body)));
            }
            Err(error) => last_error = crate::redact::redact_url(&error.to_string()),
        }
    }
    Err(unreachable(last_error))
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
) -> Result<Preflight, PreflightError> {
    let sources_text = sources
        .iter()
        .map(IndexSource::display)
        .collect::<Vec<_>>()
        .join(" + ");
    let gather = |project: &str| -> Result<Vec<IndexFile>, PreflightError> {
        let mut files = Vec::new();
        for source in sources {
            match fetch_names(source, project) {
                Ok(names) => files.extend(project_files(&names, project)),
                // A find-links page beside an index may lack a project; the index may lack it
                // when find-links provides it. Only "nowhere" is an error (below).
                Err(PreflightError::NoPage { .. }) if sources.len() > 1 => {}
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
        return Err(PreflightError::NoMatch {
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
            return Err(PreflightError::CompanionMissing {
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
    fn reads_pep503_html_and_pep691_json() {
        let html = r#"<!DOCTYPE html><html><body>
            <a href="../../files/rocm-7.9.0-py3-none-any.whl#sha256=ab">rocm-7.9.0-py3-none-any.whl</a><br/>
            <A HREF="rocm-7.10.0a1-py3-none-any.whl" data-yanked="">rocm-7.10.0a1-py3-none-any.whl</A>
            <a href="https://h/x/rocm-7.10.0%2Blocal-py3-none-any.whl"></a>
            <abbr>not a link</abbr>
            </body></html>"#;
        assert_eq!(
            parse_html(html),
            vec![
                ("rocm-7.9.0-py3-none-any.whl".to_string(), false),
                ("rocm-7.10.0a1-py3-none-any.whl".to_string(), true),
                ("rocm-7.10.0+local-py3-none-any.whl".to_string(), false),
            ]
        );
        let json = r#"{"meta":{"api-version":"1.1"},"name":"rocm","files":[
            {"filename":"rocm-7.9.0-py3-none-any.whl","url":"x","hashes":{}},
            {"filename":"rocm-7.10.0-py3-none-any.whl","url":"y","hashes":{},"yanked":"broken"}]}"#;
        assert_eq!(
            parse_json(json).expect("json"),
            vec![
                ("rocm-7.9.0-py3-none-any.whl".to_string(), false),
                ("rocm-7.10.0-py3-none-any.whl".to_string(), true)
            ]
        );
    }

    #[test]
    fn file_names_are_matched_to_the_project() {
        let names: Vec<(String, bool)> = [
            "rocm-7.10.0-py3-none-any.whl",
            "rocm_sdk_core-7.10.0-py3-none-linux_x86_64.whl",
            "rocm-sdk-core-7.9.0.tar.gz",
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
            parse_spec("7.10.0").expect_err("bare"),
            "--rocm-sdk-version `7.10.0` is a version, not a specifier: write `==7.10.0`"
        );
        assert!(
            parse_spec("=>7")
                .expect_err("bad")
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
        let error = check(std::slice::from_ref(&source), &spec("==7.10.0"), true, None)
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
        let found = check(std::slice::from_ref(&source), &spec(">1.0"), true, None).expect("found");
        assert_eq!(found.version.to_string(), "7.10.0");
        let error = check(&[source], &spec("==7.11.0"), true, None).expect_err("missing");
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
