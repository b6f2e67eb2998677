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
pub mod render;
pub mod scan;

/// One distribution file as the index lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistFile {
    pub filename: String,
    /// Lowercase hex SHA-256 of the file.
    pub sha256: String,
    pub size: u64,
    /// `Requires-Python` from the file's METADATA, if known.
    pub requires_python: Option<String>,
    /// SHA-256 of the `<filename>.metadata` sidecar, when one is stored (PEP 658).
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

/// PEP 503 name normalization (one implementation, in the wheel module).
pub use crate::wheel::filename::normalize_name;

/// True for the files an index lists: wheels and source distributions.
pub fn is_distribution(filename: &str) -> bool {
    [".whl", ".tar.gz", ".zip"]
        .iter()
        .any(|suffix| filename.ends_with(suffix) && filename.len() > suffix.len())
}

/// The project name and version encoded in a distribution file name. Wheels (PEP 427) and
/// sdists (PEP 625) both escape `-` inside the name, so the first two `-`-separated fields are
/// the name and the version. Only the index needs this much; `crate::wheel` parses the rest.
pub fn name_and_version(filename: &str) -> Option<(&str, &str)> {
    let stem = [".whl", ".tar.gz", ".zip"]
        .iter()
        .find_map(|suffix| filename.strip_suffix(suffix))?;
    let mut fields = stem.split('-');
    let name = fields.next().filter(|n| !n.is_empty())?;
    let version = fields.next().filter(|v| !v.is_empty())?;
    Some((name, version))
}

/// Percent-encodes one path segment (a file name) for an href or a request path: everything
/// but RFC 3986 unreserved characters. `+` becomes `%2B`, which S3 and CDNs would otherwise
/// read as a space (TheRock#777).
pub fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Percent-encodes a `/`-separated key, segment by segment.
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(encode_segment)
        .collect::<Vec<_>>()
        .join("/")
}

/// `Requires-Python` from the header block of a METADATA file (RFC 822 style: the headers end
/// at the first empty line, the body is the description). Used on stored `.metadata`
/// sidecars, which are the wheel's METADATA verbatim.
pub fn requires_python_of(metadata: &str) -> Option<String> {
    for line in metadata.lines() {
        if line.trim().is_empty() {
            break;
        }
        if let Some((key, value)) = line.split_once(':')
            && key.trim().eq_ignore_ascii_case("requires-python")
        {
            let value = value.trim();
            return (!value.is_empty()).then(|| value.to_string());
        }
    }
    None
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
    fn file_names_give_name_and_version() {
        assert_eq!(
            name_and_version("torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl"),
            Some(("torch", "2.9.0+rocm7.0.0"))
        );
        assert_eq!(
            name_and_version("rock_demo-1.0.tar.gz"),
            Some(("rock_demo", "1.0"))
        );
        assert_eq!(name_and_version("torch.whl"), None);
        assert_eq!(name_and_version("README.md"), None);
        assert!(is_distribution("a-1-py3-none-any.whl"));
        assert!(!is_distribution("a-1-py3-none-any.whl.metadata"));
        assert!(!is_distribution(".whl"));
    }

    #[test]
    fn plus_and_other_reserved_characters_are_encoded() {
        assert_eq!(
            encode_segment("torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl"),
            "torch-2.9.0%2Brocm7.0.0-cp311-cp311-linux_x86_64.whl"
        );
        assert_eq!(encode_segment("a b#c?d%"), "a%20b%23c%3Fd%25");
        assert_eq!(encode_path("torch/a+b.whl"), "torch/a%2Bb.whl");
    }

    #[test]
    fn requires_python_comes_from_the_headers_only() {
        let metadata =
            "Metadata-Version: 2.1\nName: torch\nRequires-Python: >=3.10\n\nRequires-Python: no\n";
        assert_eq!(requires_python_of(metadata).as_deref(), Some(">=3.10"));
        assert_eq!(
            requires_python_of("Name: x\n\nRequires-Python: >=3\n"),
            None
        );
        assert_eq!(requires_python_of("Name: x\nrequires-python:\n"), None);
    }
}
