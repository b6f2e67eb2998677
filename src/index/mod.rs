//! The package index rockbuild publishes: PEP 503 HTML pages, PEP 691 JSON beside them, and
//! PEP 658 `.metadata` sidecars. The layout of a prefix is
//!
//! ```text
//! <prefix>/index.html, index.json               every project
//! <prefix>/<normalized-name>/index.html, .json  one project's files
//! <prefix>/<normalized-name>/<file>             the distribution itself
//! <prefix>/<normalized-name>/<file>.metadata    its METADATA (PEP 658), when written
//! ```
//!
//! Rendering ([`render`]) is a pure function of a listing; [`scan`] builds the listing from a
//! store and writes the pages; [`client`] reads a project page back over HTTP.

pub mod client;
mod error;
pub mod ordering;
pub mod reach;
pub mod readable;
pub mod render;
pub mod scan;
pub mod sidecar;

pub use error::Error;

/// One distribution file as the index lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistFile {
    pub filename: String,
    /// Lowercase hex SHA-256 of the file.
    pub sha256: String,
    pub size: u64,
    /// `Requires-Python` from the file's METADATA, if known.
    pub requires_python: Option<String>,
    /// SHA-256 of the `<filename>.metadata` sidecar (PEP 658): the METADATA of the wheel,
    /// derived from it (`index::sidecar`); none for other distributions.
    pub metadata_sha256: Option<String>,
}

/// One project of the index: its normalized name and its files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectListing {
    pub name: String,
    pub files: Vec<DistFile>,
}

/// Suffix of a PEP 658 metadata sidecar.
pub const METADATA_SUFFIX: &str = ".metadata";
/// The page every directory of the index serves.
pub const HTML_PAGE: &str = "index.html";
/// The PEP 691 JSON page beside it.
pub const JSON_PAGE: &str = "index.json";
/// Media types of the two page formats.
pub const HTML_CONTENT_TYPE: &str = "text/html; charset=utf-8";
pub const JSON_CONTENT_TYPE: &str = "application/vnd.pypi.simple.v1+json";

/// PEP 503 name normalization and distribution file names (one implementation each, in
/// the wheel module).
pub use crate::wheel::filename::{dist_name_and_version, is_distribution, normalize_name};

/// Where the layout puts a distribution: `<normalized-name>/<file>`.
pub fn dist_key(project: &str, filename: &str) -> String {
    format!("{}/{filename}", normalize_name(project))
}

/// The key of a distribution's PEP 658 sidecar: `<key>.metadata`.
pub fn metadata_key(dist_key: &str) -> String {
    format!("{dist_key}{METADATA_SUFFIX}")
}

/// The media type an object of the index is served with.
pub fn content_type_of(key: &str) -> &'static str {
    if key.ends_with(METADATA_SUFFIX) {
        "text/plain; charset=utf-8"
    } else if key.ends_with(".html") {
        HTML_CONTENT_TYPE
    } else if key.ends_with(".json") {
        JSON_CONTENT_TYPE
    } else {
        "application/octet-stream"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_normalize_like_pep_503() {
        for (given, expected) in [
            ("torch", "torch"),
            ("Torch_Vision", "torch-vision"),
            (
                "rocm-sdk-libraries-gfx94X-dcgpu",
                "rocm-sdk-libraries-gfx94x-dcgpu",
            ),
            ("a.._-b", "a-b"),
            ("pytorch_triton_rocm", "pytorch-triton-rocm"),
        ] {
            assert_eq!(normalize_name(given), expected, "{given}");
        }
    }

    #[test]
    fn distributions_and_their_keys() {
        assert!(is_distribution("a-1-py3-none-any.whl"));
        assert!(!is_distribution("a-1-py3-none-any.whl.metadata"));
        assert!(!is_distribution(".whl"));
        let key = dist_key("Rock_Torch", "rock_torch-1.0-py3-none-any.whl");
        assert_eq!(key, "rock-torch/rock_torch-1.0-py3-none-any.whl");
        assert_eq!(
            metadata_key(&key),
            "rock-torch/rock_torch-1.0-py3-none-any.whl.metadata"
        );
    }

    #[test]
    fn content_types() {
        assert_eq!(
            content_type_of("t/t-1-py3-none-any.whl"),
            "application/octet-stream"
        );
        assert_eq!(
            content_type_of("t/t-1-py3-none-any.whl.metadata"),
            "text/plain; charset=utf-8"
        );
        assert_eq!(
            content_type_of("t/index.json"),
            "application/vnd.pypi.simple.v1+json"
        );
        assert_eq!(content_type_of("index.html"), "text/html; charset=utf-8");
    }
}
