//! What an install put into a venv, file by file: pip's installation report
//! (`pip install --report FILE`, pip >= 22.2, format version 1), and which of those files came
//! from a given index — the evidence `smoke` and `test` record so that `promote` can accept a
//! wheel exactly when a passing test installed its bytes.
//!
//! "From the index under test" is decided by the index itself: a file counts when the index's
//! page for its project lists the same file name with the same SHA-256. Where the file was
//! downloaded from (an extra index, a find-links directory, a mirror) does not matter; its
//! bytes do. uv has no such report, so smoke and test install with pip.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::index::Error as IndexError;
use crate::index::client::{IndexClient, percent_decode};

/// One distribution pip installed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Installed {
    /// The name as in its METADATA.
    pub name: String,
    pub version: String,
    pub filename: String,
    /// Lowercase hex; `None` when pip did not know it (a link without a hash, a local path).
    pub sha256: Option<String>,
}

/// A parsed report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallReport {
    pub installed: Vec<Installed>,
    /// `environment.python_full_version` of the venv.
    pub python: Option<String>,
}

#[derive(Deserialize)]
struct Raw {
    version: String,
    #[serde(default)]
    install: Vec<RawItem>,
    #[serde(default)]
    environment: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct RawItem {
    download_info: RawDownload,
    metadata: RawMetadata,
}

#[derive(Deserialize)]
struct RawDownload {
    url: String,
    #[serde(default)]
    archive_info: Option<RawArchive>,
}

#[derive(Deserialize)]
struct RawArchive {
    #[serde(default)]
    hashes: BTreeMap<String, String>,
    /// pip < 23 writes only `hash` (`sha256=<hex>`).
    #[serde(default)]
    hash: Option<String>,
}

#[derive(Deserialize)]
struct RawMetadata {
    name: String,
    version: String,
}

/// Parses pip's report.
pub fn parse(text: &str) -> Result<InstallReport, String> {
    let raw: Raw =
        crate::input::strict::json(text).map_err(|e| format!("not pip's install report: {e}"))?;
    if raw.version != "1" {
        return Err(format!(
            "pip install report version {} is not supported (this rockbuild reads 1)",
            raw.version
        ));
    }
    let installed = raw
        .install
        .into_iter()
        .map(|item| {
            let url = item.download_info.url;
            let last = url.rsplit('/').next().unwrap_or(&url);
            let filename = percent_decode(last.split(['#', '?']).next().unwrap_or(last));
            let sha256 = item.download_info.archive_info.and_then(|archive| {
                archive.hashes.get("sha256").cloned().or_else(|| {
                    archive
                        .hash
                        .and_then(|h| h.strip_prefix("sha256=").map(String::from))
                })
            });
            Installed {
                name: item.metadata.name,
                version: item.metadata.version,
                filename,
                sha256: sha256.map(|s| s.to_ascii_lowercase()),
            }
        })
        .collect();
    Ok(InstallReport {
        installed,
        python: raw.environment.get("python_full_version").cloned(),
    })
}

/// The installed files the index lists with the same name and SHA-256, in install order.
pub fn from_index(
    installed: &[Installed],
    client: &IndexClient,
) -> Result<Vec<Installed>, IndexError> {
    let mut pages: BTreeMap<String, Vec<(String, Option<String>)>> = BTreeMap::new();
    let mut found = Vec::new();
    for item in installed {
        let Some(sha) = &item.sha256 else {
            continue;
        };
        let key = crate::index::normalize_name(&item.name);
        if !pages.contains_key(&key) {
            let files = client
                .project(&item.name)?
                .unwrap_or_default()
                .into_iter()
                .map(|f| (f.filename, f.sha256))
                .collect();
            pages.insert(key.clone(), files);
        }
        let listed = pages.get(&key).is_some_and(|files| {
            files
                .iter()
                .any(|(name, listed)| *name == item.filename && listed.as_deref() == Some(sha))
        });
        if listed {
            found.push(item.clone());
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pip 23.2's report for `pip install torch==2.9.0+rocm7.0.0` from two indexes (trimmed).
    const REPORT: &str = r#"{"version": "1", "pip_version": "23.2.1", "install": [
      {"download_info": {"url": "http://127.0.0.1:8000/staging/torch/torch-2.9.0%2Brocm7.0.0-cp311-cp311-linux_x86_64.whl",
                         "archive_info": {"hash": "sha256=AB", "hashes": {"sha256": "AB"}}},
       "is_direct": false, "requested": true,
       "metadata": {"metadata_version": "2.1", "name": "torch", "version": "2.9.0+rocm7.0.0"}},
      {"download_info": {"url": "http://127.0.0.1:8000/wheels/rocm_sdk_core-7.0.0-py3-none-linux_x86_64.whl#sha256=cd",
                         "archive_info": {"hash": "sha256=cd"}},
       "requested": false,
       "metadata": {"metadata_version": "2.1", "name": "rocm-sdk-core", "version": "7.0.0"}},
      {"download_info": {"url": "file:///wheelhouse/pytest-9.0.3-py3-none-any.whl", "archive_info": {}},
       "requested": true,
       "metadata": {"metadata_version": "2.4", "name": "pytest", "version": "9.0.3"}}],
      "environment": {"implementation_name": "cpython", "python_full_version": "3.11.7"}}"#;

    #[test]
    fn every_installed_file_with_its_hash() {
        let report = parse(REPORT).expect("parse");
        assert_eq!(report.python.as_deref(), Some("3.11.7"));
        let got: Vec<(&str, &str, Option<&str>)> = report
            .installed
            .iter()
            .map(|i| (i.name.as_str(), i.filename.as_str(), i.sha256.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "torch",
                    "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl",
                    Some("ab")
                ),
                (
                    "rocm-sdk-core",
                    "rocm_sdk_core-7.0.0-py3-none-linux_x86_64.whl",
                    Some("cd")
                ),
                ("pytest", "pytest-9.0.3-py3-none-any.whl", None),
            ]
        );
    }

    #[test]
    fn other_report_versions_are_refused() {
        assert_eq!(
            parse(r#"{"version": "2", "install": []}"#).expect_err("v2"),
            "pip install report version 2 is not supported (this rockbuild reads 1)"
        );
        assert!(
            parse("[]")
                .expect_err("shape")
                .starts_with("not pip's install report")
        );
    }
}
