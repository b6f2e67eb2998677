//! A small reader of PEP 503 project pages (`<index>/<normalized-name>/`), enough to ask which
//! files an index offers for a project. HTTP(S) through reqwest's blocking client, with a few
//! retries on transient failures; `file://` indexes (a local directory of pages) are read from
//! disk. URLs are only ever displayed with their credentials masked.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use crate::redact::redact_url;
use crate::wheel::filename::normalize_name;

const ATTEMPTS: u32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("cannot build an HTTP client: {0}")]
    Client(String),
    #[error("{url}: {detail}")]
    Fetch { url: String, detail: String },
    #[error("'{0}' is not an http(s):// or file:// index URL")]
    Scheme(String),
}

/// One file link on a project page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    pub filename: String,
    /// PEP 592: installers skip yanked files unless an exact pin names them.
    pub yanked: bool,
}

pub struct IndexClient {
    base: String,
    http: Option<reqwest::blocking::Client>,
    cache: Mutex<Vec<(String, Vec<IndexFile>)>>,
}

impl IndexClient {
    pub fn new(base_url: &str) -> Result<IndexClient, IndexError> {
        let base = base_url.trim_end_matches('/').to_string();
        let http = if base.starts_with("http://") || base.starts_with("https://") {
            Some(
                reqwest::blocking::Client::builder()
                    .connect_timeout(Duration::from_secs(15))
                    .timeout(Duration::from_secs(120))
                    .user_agent(concat!("rockbuild/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| IndexError::Client(e.to_string()))?,
            )
        } else if base.starts_with("file://") {
            None
        } else {
            return Err(IndexError::Scheme(redact_url(base_url)));
        };
        Ok(IndexClient {
            base,
            http,
            cache: Mutex::new(Vec::new()),
        })
    }

    /// The project page URL, credentials masked, for messages.
    pub fn display_url(&self, project: &str) -> String {
        redact_url(&self.page_url(project))
    }

    fn page_url(&self, project: &str) -> String {
        format!("{}/{}/", self.base, normalize_name(project))
    }

    /// The files of a project; a project the index does not have (404) has none.
    pub fn project_files(&self, project: &str) -> Result<Vec<IndexFile>, IndexError> {
        let name = normalize_name(project);
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, files)) = cache.iter().find(|(n, _)| *n == name) {
            return Ok(files.clone());
        }
        drop(cache);
        let url = self.page_url(&name);
        let html = match &self.http {
            Some(http) => fetch(http, &url)?,
            None => read_file_page(&url)?,
        };
        let files = html
            .map(|html| parse_project_page(&html))
            .unwrap_or_default();
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push((name, files.clone()));
        Ok(files)
    }
}

/// GET with retries on connection errors and 5xx; `None` for 404.
fn fetch(http: &reqwest::blocking::Client, url: &str) -> Result<Option<String>, IndexError> {
    let error = |detail: String| IndexError::Fetch {
        url: redact_url(url),
        detail,
    };
    let mut last = String::new();
    for attempt in 1..=ATTEMPTS {
        match http.get(url).header("Accept", "text/html").send() {
            Ok(response) if response.status() == reqwest::StatusCode::NOT_FOUND => return Ok(None),
            Ok(response) if response.status().is_success() => {
                return response.text().map(Some).map_err(|e| error(e.to_string()));
            }
            Ok(response) if response.status().is_server_error() => {
                last = format!("HTTP {}", response.status())
            }
            Ok(response) => return Err(error(format!("HTTP {}", response.status()))),
            // reqwest errors can repeat the URL with credentials: keep only the kind.
            Err(e) if e.is_timeout() => last = "timed out".into(),
            Err(e) if e.is_connect() => last = "cannot connect".into(),
            Err(e) => return Err(error(redact_url(&e.to_string()))),
        }
        if attempt < ATTEMPTS {
            std::thread::sleep(Duration::from_secs(u64::from(attempt)));
        }
    }
    Err(error(format!("{last} (after {ATTEMPTS} attempts)")))
}

fn read_file_page(url: &str) -> Result<Option<String>, IndexError> {
    let path = PathBuf::from(url.trim_start_matches("file://")).join("index.html");
    match fs_err::read_to_string(&path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(IndexError::Fetch {
            url: url.to_string(),
            detail: e.to_string(),
        }),
    }
}

/// The `<a>` links of a PEP 503 project page. The file name is the last path segment of the
/// link (percent-decoded, fragment and query dropped); `data-yanked` marks yanked files.
pub fn parse_project_page(html: &str) -> Vec<IndexFile> {
    let mut files = Vec::new();
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    while let Some(found) = lower[at..].find("<a") {
        let start = at + found;
        let Some(tag_end) = lower[start..].find('>').map(|i| start + i) else {
            break;
        };
        at = tag_end + 1;
        let next = lower.as_bytes().get(start + 2).copied();
        if !matches!(next, Some(b' ' | b'\t' | b'\n' | b'\r')) {
            continue;
        }
        let tag = &html[start + 2..tag_end];
        let attributes = parse_attributes(tag);
        let Some(href) = attributes
            .iter()
            .find(|(k, _)| k == "href")
            .map(|(_, v)| v.clone())
        else {
            continue;
        };
        let location = href.split(['#', '?']).next().unwrap_or(&href);
        let Some(segment) = location.rsplit('/').next().filter(|s| !s.is_empty()) else {
            continue;
        };
        files.push(IndexFile {
            filename: percent_decode(segment),
            yanked: attributes.iter().any(|(k, _)| k == "data-yanked"),
        });
    }
    files
}

/// `key="value"` pairs of a tag (quoted with `"` or `'`, or bare), HTML entities decoded.
fn parse_attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = tag.trim_start();
    while !rest.is_empty() {
        let key_end = rest
            .find(|c: char| c == '=' || c.is_whitespace() || c == '/')
            .unwrap_or(rest.len());
        let key = rest[..key_end].to_ascii_lowercase();
        rest = rest[key_end..].trim_start();
        let value = if let Some(after) = rest.strip_prefix('=') {
            let after = after.trim_start();
            let (value, remaining) = match after.chars().next() {
                Some(quote @ ('"' | '\'')) => {
                    let inner = &after[1..];
                    let close = inner.find(quote).unwrap_or(inner.len());
                    (&inner[..close], inner.get(close + 1..).unwrap_or(""))
                }
                _ => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            rest = remaining;
            html_unescape(value)
        } else {
            if key.is_empty() {
                rest = rest.get(1..).unwrap_or("");
            }
            String::new()
        };
        if !key.is_empty() {
            out.push((key, value));
        }
        rest = rest.trim_start();
    }
    out
}

fn html_unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(value) = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(value);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pep_503_pages() {
        let html = r#"<!DOCTYPE html><html><body>
            <a href="../../files/torch-2.10.0%2Brocm7.1-cp311-cp311-linux_x86_64.whl#sha256=abc123" data-requires-python="&gt;=3.10">torch-2.10.0+rocm7.1-cp311-cp311-linux_x86_64.whl</a><br/>
            <A HREF='https://cdn.example/rocm-7.13.0.tar.gz' data-yanked="">rocm-7.13.0.tar.gz</A>
            <abbr>not a link</abbr>
            </body></html>"#;
        let files = parse_project_page(html);
        assert_eq!(files.len(), 2);
        assert_eq!(
            files[0].filename,
            "torch-2.10.0+rocm7.1-cp311-cp311-linux_x86_64.whl"
        );
        assert!(!files[0].yanked);
        assert_eq!(files[1].filename, "rocm-7.13.0.tar.gz");
        assert!(files[1].yanked);
    }

    #[test]
    fn reads_file_indexes_and_masks_credentials() {
        let dir = tempfile::tempdir().expect("tempdir");
        let page = dir.path().join("triton");
        fs_err::create_dir_all(&page).expect("mkdir");
        fs_err::write(
            page.join("index.html"),
            r#"<a href="triton-3.5.0-cp311-cp311-linux_x86_64.whl">x</a>"#,
        )
        .expect("write");
        let client =
            IndexClient::new(&format!("file://{}/", dir.path().display())).expect("client");
        let files = client.project_files("Triton").expect("reads");
        assert_eq!(
            files[0].filename,
            "triton-3.5.0-cp311-cp311-linux_x86_64.whl"
        );
        assert!(
            client
                .project_files("torch")
                .expect("404 is empty")
                .is_empty()
        );

        let http = IndexClient::new("https://bot:secret@example.com/simple").expect("client");
        assert_eq!(
            http.display_url("Torch_Vision"),
            "https://bot:****@example.com/simple/torch-vision/"
        );
        assert!(IndexClient::new("ftp://x").is_err());
    }
}
