//! The `.dist-info` files verification and indexes need: METADATA (core metadata: name,
//! version, Requires-Dist, Requires-Python; its raw bytes are the PEP 658 sidecar) and WHEEL
//! (wheel version, tags). Both use the email-header format: `Key: value` lines, continuation
//! lines indented, a blank line before the body.

use std::str::FromStr;

use pep440_rs::{Operator, Version, VersionSpecifiers};
use serde::Serialize;

use crate::wheel::filename::normalize_name;

/// Why a METADATA or WHEEL file is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {detail}")]
pub struct MetadataError {
    pub file: String,
    pub detail: String,
}

/// Header fields in file order (keys as written; values with continuation lines joined).
fn headers(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = out.last_mut() {
                value.push('\n');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            out.push((key.trim().to_string(), value.trim().to_string()));
        }
    }
    out
}

fn field<'a>(headers: &'a [(String, String)], key: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

fn fields<'a>(headers: &'a [(String, String)], key: &'a str) -> impl Iterator<Item = &'a str> {
    headers
        .iter()
        .filter(move |(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v.as_str())
}

/// `Requires-Python` of a METADATA file, from its headers only (the body is the
/// description), without parsing the rest: a stored PEP 658 sidecar may come from another
/// tool, and an index still wants this one field from it.
pub fn requires_python(text: &str) -> Option<String> {
    field(&headers(text), "Requires-Python")
        .filter(|value| !value.is_empty())
        .map(str::to_string)
}

/// Core metadata of a wheel, parsed from its METADATA file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoreMetadata {
    pub metadata_version: String,
    /// The name as METADATA writes it.
    pub name: String,
    #[serde(serialize_with = "serialize_display")]
    pub version: Version,
    pub requires_dist: Vec<Requirement>,
    pub requires_python: Option<String>,
    /// Extras the distribution declares (normalized, PEP 685).
    pub provides_extra: Vec<String>,
    /// The METADATA file byte for byte: what a PEP 658 `<wheel>.metadata` sidecar serves.
    #[serde(skip)]
    pub raw: Vec<u8>,
}

fn serialize_display<S: serde::Serializer, T: std::fmt::Display>(
    value: &T,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

impl CoreMetadata {
    /// Parses METADATA. `file` names it in errors (`torch-2.10.0.dist-info/METADATA`).
    pub fn parse(file: &str, raw: Vec<u8>) -> Result<CoreMetadata, MetadataError> {
        let error = |detail: String| MetadataError {
            file: file.to_string(),
            detail,
        };
        let text = std::str::from_utf8(&raw).map_err(|e| error(format!("not UTF-8 ({e})")))?;
        let headers = headers(text);
        let metadata_version = field(&headers, "Metadata-Version")
            .ok_or_else(|| error("no Metadata-Version field".into()))?
            .to_string();
        let name = field(&headers, "Name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| error("no Name field".into()))?
            .to_string();
        let version_text =
            field(&headers, "Version").ok_or_else(|| error("no Version field".into()))?;
        let version = Version::from_str(version_text)
            .map_err(|e| error(format!("Version '{version_text}' is not PEP 440: {e}")))?;
        let mut requires_dist = Vec::new();
        for value in fields(&headers, "Requires-Dist") {
            requires_dist.push(
                Requirement::parse(value)
                    .map_err(|e| error(format!("Requires-Dist '{value}': {e}")))?,
            );
        }
        Ok(CoreMetadata {
            metadata_version,
            name,
            version,
            requires_dist,
            requires_python: field(&headers, "Requires-Python")
                .filter(|value| !value.is_empty())
                .map(str::to_string),
            provides_extra: fields(&headers, "Provides-Extra")
                .map(normalize_name)
                .collect(),
            raw,
        })
    }

    /// SHA-256 of the raw METADATA, hex: the `data-dist-info-metadata="sha256=…"` value.
    pub fn sha256(&self) -> String {
        crate::fsutil::sha256_hex(&self.raw)
    }
}

/// The WHEEL file: format version and the tags the wheel claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelInfo {
    pub wheel_version: String,
    pub tags: Vec<String>,
    pub build: Option<String>,
}

impl WheelInfo {
    pub fn parse(file: &str, raw: &[u8]) -> Result<WheelInfo, MetadataError> {
        let error = |detail: String| MetadataError {
            file: file.to_string(),
            detail,
        };
        let text = std::str::from_utf8(raw).map_err(|e| error(format!("not UTF-8 ({e})")))?;
        let headers = headers(text);
        let wheel_version = field(&headers, "Wheel-Version")
            .ok_or_else(|| error("no Wheel-Version field".into()))?
            .to_string();
        if !wheel_version.starts_with("1.") {
            return Err(error(format!(
                "Wheel-Version {wheel_version} is not supported by installers (1.x is)"
            )));
        }
        Ok(WheelInfo {
            wheel_version,
            tags: fields(&headers, "Tag").map(str::to_string).collect(),
            build: field(&headers, "Build").map(str::to_string),
        })
    }
}

/// A PEP 508 requirement as it appears in `Requires-Dist`: name, extras, version specifiers
/// (or a direct URL) and an environment marker, which is kept as text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Requirement {
    /// The line as written.
    pub raw: String,
    pub name: String,
    pub extras: Vec<String>,
    #[serde(serialize_with = "serialize_display")]
    pub specifiers: VersionSpecifiers,
    pub url: Option<String>,
    pub marker: Option<String>,
}

/// Why a `Requires-Dist` value is not a requirement.
#[derive(Debug, thiserror::Error)]
pub enum RequirementError {
    #[error("no project name")]
    NoName,
    #[error("unclosed '[' in extras")]
    UnclosedExtras,
    #[error("unclosed '(' around the version")]
    UnclosedParenthesis,
    #[error(transparent)]
    Specifiers(#[from] pep440_rs::VersionSpecifiersParseError),
}

impl Requirement {
    pub fn parse(text: &str) -> Result<Requirement, RequirementError> {
        let raw = text.trim().to_string();
        let (body, marker) = match raw.split_once(';') {
            Some((body, marker)) => (body.trim(), Some(marker.trim().to_string())),
            None => (raw.as_str(), None),
        };
        let name_end = body
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .unwrap_or(body.len());
        let name = &body[..name_end];
        if name.is_empty() {
            return Err(RequirementError::NoName);
        }
        let mut rest = body[name_end..].trim_start();
        let mut extras = Vec::new();
        if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']').ok_or(RequirementError::UnclosedExtras)?;
            extras = after[..close]
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(normalize_name)
                .collect();
            rest = after[close + 1..].trim_start();
        }
        let mut url = None;
        let mut specifier_text = "";
        if let Some(direct) = rest.strip_prefix('@') {
            url = Some(direct.trim().to_string());
        } else {
            specifier_text = rest.trim();
            if let Some(inner) = specifier_text.strip_prefix('(') {
                specifier_text = inner
                    .strip_suffix(')')
                    .ok_or(RequirementError::UnclosedParenthesis)?
                    .trim();
            }
        }
        let specifiers = VersionSpecifiers::from_str(specifier_text)?;
        Ok(Requirement {
            name: name.to_string(),
            extras,
            specifiers,
            url,
            marker,
            raw,
        })
    }

    pub fn normalized_name(&self) -> String {
        normalize_name(&self.name)
    }

    /// The version of an exact pin (`==X` or `===X`, not a wildcard), if this is one.
    pub fn pinned_version(&self) -> Option<&Version> {
        match self.specifiers.iter().collect::<Vec<_>>().as_slice() {
            [only] if matches!(only.operator(), Operator::Equal | Operator::ExactEqual) => {
                Some(only.version())
            }
            _ => None,
        }
    }

    /// The same requirement pinned to `version` (`name[extras]==version ; marker`).
    pub fn with_pin(&self, version: &Version) -> String {
        let mut out = self.name.clone();
        if !self.extras.is_empty() {
            out.push_str(&format!("[{}]", self.extras.join(",")));
        }
        out.push_str(&format!("=={version}"));
        if let Some(marker) = &self.marker {
            out.push_str(&format!("; {marker}"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA: &str = "Metadata-Version: 2.1\n\
        Name: torch\n\
        Version: 2.10.0a0+rocm7.13.0a20260430\n\
        Summary: Tensors and Dynamic neural networks\n\
        License: BSD-3-Clause\n\
        \x20 second license line\n\
        Requires-Python: >=3.10\n\
        Requires-Dist: filelock\n\
        Requires-Dist: triton==3.5.0+git1a2b3c4d; platform_system == \"Linux\"\n\
        Requires-Dist: rocm[libraries,devel]==7.13.0a20260430\n\
        Requires-Dist: sympy (>=1.13.3)\n\
        Provides-Extra: Opt_Einsum\n\
        \n\
        Requires-Dist: not-a-header-this-is-the-body\n";

    #[test]
    fn parses_core_metadata() {
        let metadata =
            CoreMetadata::parse("torch.dist-info/METADATA", METADATA.as_bytes().to_vec())
                .expect("parses");
        assert_eq!(metadata.name, "torch");
        assert_eq!(metadata.version.to_string(), "2.10.0a0+rocm7.13.0a20260430");
        assert_eq!(metadata.requires_python.as_deref(), Some(">=3.10"));
        assert_eq!(metadata.provides_extra, vec!["opt-einsum"]);
        let names: Vec<&str> = metadata
            .requires_dist
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(names, ["filelock", "triton", "rocm", "sympy"]);
        let triton = &metadata.requires_dist[1];
        assert_eq!(
            triton.pinned_version().map(ToString::to_string).as_deref(),
            Some("3.5.0+git1a2b3c4d")
        );
        assert_eq!(
            triton.marker.as_deref(),
            Some("platform_system == \"Linux\"")
        );
        let rocm = &metadata.requires_dist[2];
        assert_eq!(rocm.extras, vec!["libraries", "devel"]);
        assert_eq!(
            rocm.with_pin(&Version::from_str("7.13.0").expect("v")),
            "rocm[libraries,devel]==7.13.0"
        );
        assert_eq!(metadata.requires_dist[3].pinned_version(), None);
        assert_eq!(metadata.requires_dist[0].pinned_version(), None);
        assert_eq!(metadata.raw, METADATA.as_bytes());
        assert_eq!(
            metadata.sha256(),
            crate::fsutil::sha256_hex(METADATA.as_bytes())
        );
    }

    #[test]
    fn refuses_broken_metadata_naming_the_file() {
        let cases = [
            ("Metadata-Version: 2.1\nVersion: 1.0\n", "no Name field"),
            ("Metadata-Version: 2.1\nName: x\n", "no Version field"),
            (
                "Metadata-Version: 2.1\nName: x\nVersion: one\n",
                "Version 'one' is not PEP 440",
            ),
            (
                "Metadata-Version: 2.1\nName: x\nVersion: 1.0\nRequires-Dist: y[a\n",
                "unclosed '['",
            ),
            ("Name: x\nVersion: 1.0\n", "no Metadata-Version field"),
        ];
        for (text, expected) in cases {
            let error = CoreMetadata::parse("x-1.0.dist-info/METADATA", text.as_bytes().to_vec())
                .expect_err(text)
                .to_string();
            assert!(error.starts_with("x-1.0.dist-info/METADATA: "), "{error}");
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn requires_python_comes_from_the_headers_only() {
        let metadata =
            "Metadata-Version: 2.1\nName: torch\nRequires-Python: >=3.10\n\nRequires-Python: no\n";
        assert_eq!(requires_python(metadata).as_deref(), Some(">=3.10"));
        assert_eq!(requires_python("Name: x\n\nRequires-Python: >=3\n"), None);
        assert_eq!(requires_python("Name: x\nrequires-python:\n"), None);
    }

    #[test]
    fn parses_wheel_files() {
        let info = WheelInfo::parse(
            "WHEEL",
            b"Wheel-Version: 1.0\nGenerator: bdist_wheel\nRoot-Is-Purelib: false\nTag: cp311-cp311-linux_x86_64\n",
        )
        .expect("parses");
        assert_eq!(info.tags, vec!["cp311-cp311-linux_x86_64"]);
        let error = WheelInfo::parse("WHEEL", b"Wheel-Version: 2.0\n").expect_err("v2");
        assert!(
            error
                .to_string()
                .contains("Wheel-Version 2.0 is not supported")
        );
    }

    #[test]
    fn parses_direct_references() {
        let requirement =
            Requirement::parse("torch @ https://example.com/torch.whl").expect("parses");
        assert_eq!(
            requirement.url.as_deref(),
            Some("https://example.com/torch.whl")
        );
        assert_eq!(requirement.pinned_version(), None);
    }
}
