//! Index pages as pure functions of a listing: PEP 503 HTML (with PEP 592/629/658/714
//! attributes) and PEP 691 JSON (api-version 1.1, PEP 700's `versions` and `size`).
//! Links are relative to the page, so a prefix can be served from any root.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use super::{
    DistFile, HTML_CONTENT_TYPE, HTML_PAGE, JSON_CONTENT_TYPE, JSON_PAGE, ProjectListing,
    dist_name_and_version,
};
use crate::store::encode_segment;

/// The PEP 691 api-version (and PEP 629 repository-version) the pages declare.
pub const API_VERSION: &str = "1.1";

/// One page to write: its key relative to the index prefix, media type and content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub key: String,
    pub content_type: &'static str,
    pub body: String,
}

/// Every page of an index: each project's HTML and JSON first, the root pages last, so a
/// reader that follows the root never meets a project whose page is not written yet.
pub fn render_pages(projects: &[ProjectListing]) -> Vec<Page> {
    let mut sorted: Vec<&ProjectListing> = projects.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut pages = Vec::with_capacity(2 * sorted.len() + 2);
    for project in &sorted {
        pages.push(Page {
            key: format!("{}/{HTML_PAGE}", project.name),
            content_type: HTML_CONTENT_TYPE,
            body: render_project_html(project),
        });
        pages.push(Page {
            key: format!("{}/{JSON_PAGE}", project.name),
            content_type: JSON_CONTENT_TYPE,
            body: render_project_json(project),
        });
    }
    let names: Vec<&str> = sorted.iter().map(|p| p.name.as_str()).collect();
    pages.push(Page {
        key: HTML_PAGE.to_string(),
        content_type: HTML_CONTENT_TYPE,
        body: render_root_html(&names),
    });
    pages.push(Page {
        key: JSON_PAGE.to_string(),
        content_type: JSON_CONTENT_TYPE,
        body: render_root_json(&names),
    });
    pages
}

/// The keys [`render_pages`] writes for these projects, in the same order (for `--dry-run`).
pub fn page_keys(names: &[&str]) -> Vec<String> {
    let mut sorted = names.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut keys: Vec<String> = sorted
        .iter()
        .flat_map(|name| [format!("{name}/{HTML_PAGE}"), format!("{name}/{JSON_PAGE}")])
        .collect();
    keys.push(HTML_PAGE.to_string());
    keys.push(JSON_PAGE.to_string());
    keys
}

/// The root page: one link per project (`<a href="torch/">torch</a>`).
pub fn render_root_html(names: &[&str]) -> String {
    let mut out = html_head("Simple index");
    for name in names {
        let _ = writeln!(
            out,
            "    <a href=\"{}/\">{}</a><br/>",
            escape_html(&encode_segment(name)),
            escape_html(name)
        );
    }
    out.push_str("  </body>\n</html>\n");
    out
}

/// The root page as PEP 691 JSON.
pub fn render_root_json(names: &[&str]) -> String {
    let projects: Vec<Value> = names.iter().map(|name| json!({ "name": name })).collect();
    to_json(&json!({
        "meta": { "api-version": API_VERSION },
        "projects": projects,
    }))
}

/// One project's page: a link per file with its `#sha256=` fragment, `data-requires-python`
/// (HTML-escaped) and, when a `.metadata` sidecar exists, `data-dist-info-metadata` and
/// `data-core-metadata` (PEP 658 and its PEP 714 rename; pip reads either).
pub fn render_project_html(project: &ProjectListing) -> String {
    let mut out = html_head(&format!("Links for {}", project.name));
    for file in sorted_files(project) {
        let mut attributes = String::new();
        if let Some(requires_python) = &file.requires_python {
            let _ = write!(
                attributes,
                " data-requires-python=\"{}\"",
                escape_html(requires_python)
            );
        }
        if let Some(metadata_sha) = &file.metadata_sha256 {
            let _ = write!(
                attributes,
                " data-dist-info-metadata=\"sha256={metadata_sha}\" data-core-metadata=\"sha256={metadata_sha}\""
            );
        }
        let _ = writeln!(
            out,
            "    <a href=\"{}#sha256={}\"{attributes}>{}</a><br/>",
            escape_html(&encode_segment(&file.filename)),
            file.sha256,
            escape_html(&file.filename)
        );
    }
    out.push_str("  </body>\n</html>\n");
    out
}

/// One project's page as PEP 691 JSON (api-version 1.1: `versions` and `size` included).
pub fn render_project_json(project: &ProjectListing) -> String {
    let files: Vec<Value> = sorted_files(project)
        .into_iter()
        .map(|file| {
            let mut entry = Map::new();
            entry.insert("filename".into(), json!(file.filename));
            entry.insert("url".into(), json!(encode_segment(&file.filename)));
            entry.insert("hashes".into(), json!({ "sha256": file.sha256 }));
            if let Some(requires_python) = &file.requires_python {
                entry.insert("requires-python".into(), json!(requires_python));
            }
            let metadata = match &file.metadata_sha256 {
                Some(sha) => json!({ "sha256": sha }),
                None => json!(false),
            };
            entry.insert("core-metadata".into(), metadata.clone());
            entry.insert("dist-info-metadata".into(), metadata);
            entry.insert("size".into(), json!(file.size));
            Value::Object(entry)
        })
        .collect();
    to_json(&json!({
        "meta": { "api-version": API_VERSION },
        "name": project.name,
        "versions": versions(project),
        "files": files,
    }))
}

/// Files by version (PEP 440 order), then by name: the order people scan a page in. Files
/// without a parsable version (which the scan does not list) would sort last.
fn sorted_files(project: &ProjectListing) -> Vec<&DistFile> {
    let mut files: Vec<(Option<pep440_rs::Version>, &DistFile)> = project
        .files
        .iter()
        .map(|f| (dist_name_and_version(&f.filename).map(|(_, v)| v), f))
        .collect();
    files.sort_by(|(va, a), (vb, b)| {
        compare_versions(va.as_ref(), vb.as_ref()).then_with(|| a.filename.cmp(&b.filename))
    });
    files.into_iter().map(|(_, f)| f).collect()
}

/// The distinct versions of a project's files, in PEP 440 order (PEP 440 equal versions
/// are one version, written normalized).
fn versions(project: &ProjectListing) -> Vec<String> {
    let mut versions: Vec<pep440_rs::Version> = project
        .files
        .iter()
        .filter_map(|f| dist_name_and_version(&f.filename).map(|(_, v)| v))
        .collect();
    versions.sort();
    versions.dedup();
    versions.iter().map(ToString::to_string).collect()
}

fn compare_versions(a: Option<&pep440_rs::Version>, b: Option<&pep440_rs::Version>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.cmp(b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

fn html_head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"{API_VERSION}\">\n    <title>{title}</title>\n  </head>\n  <body>\n    <h1>{title}</h1>\n",
        title = escape_html(title)
    )
}

/// Escapes text for HTML content and double-quoted attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#x27;"),
            _ => out.push(c),
        }
    }
    out
}

fn to_json(value: &Value) -> String {
    // Serializing a `Value` cannot fail; the fallback keeps the function total.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, requires_python: Option<&str>, metadata: Option<&str>) -> DistFile {
        DistFile {
            filename: name.into(),
            sha256: "ab".repeat(32),
            size: 1234,
            requires_python: requires_python.map(String::from),
            metadata_sha256: metadata.map(String::from),
        }
    }

    fn torch() -> ProjectListing {
        ProjectListing {
            name: "torch".into(),
            files: vec![
                file(
                    "torch-2.10.0+rocm7.1.0-cp311-cp311-linux_x86_64.whl",
                    Some(">=3.10"),
                    Some(&"cd".repeat(32)),
                ),
                file(
                    "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl",
                    Some("<4,>=3.9"),
                    None,
                ),
            ],
        }
    }

    #[test]
    fn project_page_html() {
        insta::assert_snapshot!("project_page_html", render_project_html(&torch()));
    }

    #[test]
    fn project_page_json() {
        insta::assert_snapshot!("project_page_json", render_project_json(&torch()));
    }

    #[test]
    fn root_pages_and_page_order() {
        let vision = ProjectListing {
            name: "torchvision".into(),
            files: vec![],
        };
        let pages = render_pages(&[vision, torch()]);
        let keys: Vec<&str> = pages.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "torch/index.html",
                "torch/index.json",
                "torchvision/index.html",
                "torchvision/index.json",
                "index.html",
                "index.json"
            ]
        );
        assert_eq!(keys, page_keys(&["torchvision", "torch", "torch"]));
        assert_eq!(pages[1].content_type, "application/vnd.pypi.simple.v1+json");
        insta::assert_snapshot!("root_page_html", pages[4].body);
        insta::assert_snapshot!("root_page_json", pages[5].body);
        insta::assert_snapshot!("empty_project_page_html", pages[2].body);
    }

    #[test]
    fn hostile_text_is_escaped() {
        let project = ProjectListing {
            name: "x".into(),
            files: vec![file("x-1.0-py3-none-any.whl", Some("\"><script>"), None)],
        };
        insta::assert_snapshot!("hostile_text_escaped", render_project_html(&project));
        assert_eq!(escape_html("a'b&c"), "a&#x27;b&amp;c");
    }

    #[test]
    fn versions_are_unique_and_pep440_ordered() {
        let project = ProjectListing {
            name: "a".into(),
            files: vec![
                file("a-1.10-py3-none-any.whl", None, None),
                file("a-1.9-cp311-cp311-linux_x86_64.whl", None, None),
                file("a-1.9-py3-none-any.whl", None, None),
                file("a-1.9.tar.gz", None, None),
            ],
        };
        let page: Value = serde_json::from_str(&render_project_json(&project)).expect("json");
        assert_eq!(page["versions"], json!(["1.9", "1.10"]));
    }
}
