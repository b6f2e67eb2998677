//! Reading a package index: one project's page (PEP 691 JSON or PEP 503 HTML) over HTTP(S)
//! or from a `file://` tree, as the list of files with their hashes, `Requires-Python` and
//! metadata sidecars. Used to check what an index really serves (closure checks, smoke
//! installs, link checks after publishing).

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use reqwest::Url;
use serde::Deserialize;

use super::Error;
use super::normalize_name;
use crate::redact::redact_url;

/// What the client asks for: JSON first, then HTML (PEP 691 content negotiation).
const ACCEPT: &str = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1";
/// Attempts for one page fetch that fails with a transient error.
const ATTEMPTS: u32 = 3;
/// The largest project page read, over HTTP or from files (`input::INDEX_PAGE`).
const MAX_PAGE_BYTES: u64 = crate::input::INDEX_PAGE.bytes;
/// The most files one project page may list.
pub const MAX_PAGE_FILES: usize = 500_000;

/// One file an index offers for a project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteFile {
    pub filename: String,
    /// Absolute URL of the file, without the hash fragment.
    pub url: String,
    /// Lowercase hex SHA-256, when the index gives one.
    pub sha256: Option<String>,
    pub requires_python: Option<String>,
    /// The PEP 658 sidecar: `None` when absent, `Some(None)` when present without a hash.
    pub metadata: Option<Option<String>>,
    pub size: Option<u64>,
    pub yanked: bool,
}

/// How long a request to an index may take, and how often one that timed out or could not
/// connect is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    pub timeout: Duration,
    pub attempts: u32,
}

impl Default for Waits {
    fn default() -> Self {
        Waits {
            timeout: Duration::from_secs(120),
            attempts: ATTEMPTS,
        }
    }
}

/// A client for one index root (`https://host/simple/`, `file:///srv/index/`).
#[derive(Debug)]
pub struct IndexClient {
    base: Url,
    http: reqwest::blocking::Client,
    waits: Waits,
}

impl IndexClient {
    pub fn new(index_url: &str) -> Result<Self, Error> {
        Self::with_waits(index_url, Waits::default())
    }

    pub fn with_waits(index_url: &str, waits: Waits) -> Result<Self, Error> {
        let bad = |reason: String| Error::BadUrl {
            url: redact_url(index_url),
            reason,
        };
        let mut base = Url::parse(index_url).map_err(|e| bad(e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https" | "file") {
            return Err(bad(format!(
                "unsupported scheme `{}` (use http, https or file)",
                base.scheme()
            )));
        }
        // Project pages are resolved relative to the root, which must end in `/`.
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(waits.timeout.min(Duration::from_secs(15)))
            .timeout(waits.timeout)
            .user_agent(concat!("rockbuild/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| bad(e.to_string()))?;
        Ok(IndexClient { base, http, waits })
    }

    /// The index root, credentials masked.
    pub fn display_url(&self) -> String {
        redact_url(self.base.as_str())
    }

    /// The files of project `name`; `None` when the index has no such project (404).
    pub fn project(&self, name: &str) -> Result<Option<Vec<RemoteFile>>, Error> {
        let page_url = self
            .base
            .join(&format!("{}/", normalize_name(name)))
            .map_err(|e| Error::BadUrl {
                url: self.display_url(),
                reason: e.to_string(),
            })?;
        let fetched = if page_url.scheme() == "file" {
            read_file_page(&page_url)?
        } else {
            self.fetch(&page_url)?
        };
        let Some((body, is_json)) = fetched else {
            return Ok(None);
        };
        let files = if is_json {
            parse_json(&page_url, &body)?
        } else {
            parse_html(&page_url, &body)?
        };
        Ok(Some(files))
    }

    /// The normalized names of every project the index's root page lists (PEP 691 JSON
    /// `projects`, or the PEP 503 links to `<name>/`).
    pub fn projects(&self) -> Result<Vec<String>, Error> {
        let fetched = if self.base.scheme() == "file" {
            read_file_page(&self.base)?
        } else {
            self.fetch(&self.base)?
        };
        let Some((body, is_json)) = fetched else {
            return Ok(Vec::new());
        };
        let mut names: Vec<String> = if is_json {
            #[derive(Deserialize)]
            struct Root {
                projects: Vec<RootProject>,
            }
            #[derive(Deserialize)]
            struct RootProject {
                name: String,
            }
            let root: Root = serde_json::from_str(&body).map_err(|e| Error::Parse {
                url: self.display_url(),
                message: e.to_string(),
            })?;
            root.projects
                .into_iter()
                .map(|p| normalize_name(&p.name))
                .collect()
        } else {
            let mut names = Vec::new();
            for_each_anchor(&body, |anchor| {
                if let Some(name) = anchor
                    .href
                    .and_then(|href| self.base.join(&href).ok())
                    .and_then(|url| {
                        url.path_segments()?
                            .rev()
                            .find(|s| !s.is_empty())
                            .map(|s| normalize_name(&percent_decode(s)))
                    })
                {
                    names.push(name);
                }
                names.len() < MAX_PAGE_FILES
            });
            names
        };
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Downloads a file the index offers into `to` (written beside it, then renamed, so no
    /// partial file is left at `to`), hashing the bytes as they are written; returns their
    /// SHA-256 (hex) and size. Whether they are the bytes wanted is the caller's to judge.
    /// A connection that fails or times out is tried again, `attempts` times in all.
    pub fn download(&self, file: &RemoteFile, to: &Path) -> Result<(String, u64), Error> {
        let shown = redact_url(&file.url);
        let failed = |message: String| Error::Transfer {
            url: shown.clone(),
            message,
        };
        let url = Url::parse(&file.url).map_err(|e| Error::BadUrl {
            url: shown.clone(),
            reason: e.to_string(),
        })?;
        let dir = to.parent().unwrap_or(Path::new("."));
        let attempts = self.waits.attempts.max(1);
        let mut attempt = 1;
        loop {
            let mut temp = tempfile::Builder::new()
                .prefix(".rockbuild-download-")
                .tempfile_in(dir)
                .map_err(|e| failed(format!("creating a file in {}: {e}", dir.display())))?;
            let result = if url.scheme() == "file" {
                let path = url
                    .to_file_path()
                    .map_err(|()| failed("not a local path".into()))?;
                fs_err::File::open(&path)
                    .map_err(|e| (false, e.to_string()))
                    .and_then(|source| copy_hashed(source, temp.as_file_mut()))
            } else {
                match self.http.get(url.clone()).send() {
                    Ok(response) if response.status().is_success() => {
                        copy_hashed(response, temp.as_file_mut())
                    }
                    Ok(response) => {
                        let status = response.status().as_u16();
                        Err((status >= 500 || status == 429, format!("HTTP {status}")))
                    }
                    Err(error) => Err((
                        error.is_connect() || error.is_timeout(),
                        error_chain(&error),
                    )),
                }
            };
            match result {
                Ok(hashed) => {
                    temp.persist(to).map_err(|e| {
                        failed(format!("renaming into {}: {}", to.display(), e.error))
                    })?;
                    return Ok(hashed);
                }
                Err((retry, message)) if retry && attempt < attempts => {
                    tracing::warn!(
                        "download {shown}: {message}; retrying (attempt {} of {attempts})",
                        attempt + 1
                    );
                    attempt += 1;
                }
                Err((_, message)) => {
                    return Err(failed(format!(
                        "{message} (attempt {attempt} of {attempts})"
                    )));
                }
            }
        }
    }

    fn fetch(&self, url: &Url) -> Result<Option<(String, bool)>, Error> {
        let shown = redact_url(url.as_str());
        let mut backoff = Duration::from_millis(500);
        let mut attempt = 1;
        let attempts = self.waits.attempts.max(1);
        let timeout = self.waits.timeout.as_secs_f64();
        loop {
            let result = self.http.get(url.clone()).header("Accept", ACCEPT).send();
            let retry = match result {
                Ok(response) if response.status().as_u16() == 404 => return Ok(None),
                Ok(response) if response.status().is_success() => {
                    let is_json = response
                        .headers()
                        .get(reqwest::header::CONTENT_TYPE)
                        .and_then(|v| v.to_str().ok())
                        .is_some_and(|v| v.contains("json"));
                    let body = read_page(response, self.waits.timeout).map_err(|message| {
                        Error::Transfer {
                            url: shown.clone(),
                            message,
                        }
                    })?;
                    return Ok(Some((body, is_json)));
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    if (status < 500 && status != 429) || attempt >= attempts {
                        return Err(Error::Status { url: shown, status });
                    }
                    format!("HTTP {status}")
                }
                Err(error) => {
                    let waited = if error.is_timeout() {
                        format!("no answer within {timeout}s")
                    } else {
                        error_chain(&error)
                    };
                    if attempt >= attempts || !(error.is_connect() || error.is_timeout()) {
                        return Err(Error::Transfer {
                            url: shown,
                            message: format!(
                                "{waited} (attempt {attempt} of {attempts}; each request waits \
                                 up to {timeout}s)"
                            ),
                        });
                    }
                    waited
                }
            };
            tracing::warn!(
                "index {shown}: {retry}; retrying in {:.1}s (attempt {} of {attempts})",
                backoff.as_secs_f64(),
                attempt + 1
            );
            std::thread::sleep(backoff);
            backoff *= 2;
            attempt += 1;
        }
    }
}

/// The body of an index page, read with bounds: no encoding rockbuild did not ask for (it
/// asks for none: a compressed answer could expand without bound), at most
/// [`MAX_PAGE_BYTES`], and a wait for the body that ran out said as such. The error is what
/// went wrong, in words.
pub fn read_page(
    response: reqwest::blocking::Response,
    timeout: Duration,
) -> Result<String, String> {
    use std::io::Read as _;
    if let Some(encoding) = response
        .headers()
        .get(reqwest::header::CONTENT_ENCODING)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .filter(|v| !v.trim().eq_ignore_ascii_case("identity"))
    {
        return Err(format!(
            "the server sent the page `{encoding}`-encoded although rockbuild asked for it \
             uncompressed (no Accept-Encoding); fix the server or the proxy in between"
        ));
    }
    let too_large = || {
        format!(
            "the page is larger than {}, more than any index page holds",
            crate::ui::human_bytes(MAX_PAGE_BYTES)
        )
    };
    if response
        .content_length()
        .is_some_and(|n| n > MAX_PAGE_BYTES)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    response
        .take(MAX_PAGE_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|error| {
            if error_chain(&error)
                .to_ascii_lowercase()
                .contains("timed out")
                || error.kind() == std::io::ErrorKind::TimedOut
            {
                format!(
                    "no answer within {}s while reading the page (the request's time ran out)",
                    timeout.as_secs_f64()
                )
            } else {
                format!("reading the page: {}", error_chain(&error))
            }
        })?;
    if body.len() as u64 > MAX_PAGE_BYTES {
        return Err(too_large());
    }
    Ok(match String::from_utf8(body) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    })
}

/// Copies `from` into `to`, hashing every byte; an error says whether it is worth another
/// attempt (a read that failed mid-transfer).
fn copy_hashed(
    mut from: impl Read,
    to: &mut std::fs::File,
) -> Result<(String, u64), (bool, String)> {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err((true, error.to_string())),
        };
        hasher.update(&buffer[..read]);
        to.write_all(&buffer[..read])
            .map_err(|e| (false, e.to_string()))?;
        size += read as u64;
    }
    to.sync_all().map_err(|e| (false, e.to_string()))?;
    Ok((hex::encode(hasher.finalize()), size))
}

/// A `file://` index: `<dir>/index.json` when present, else `<dir>/index.html`.
fn read_file_page(url: &Url) -> Result<Option<(String, bool)>, Error> {
    let dir = url.to_file_path().map_err(|()| Error::BadUrl {
        url: url.to_string(),
        reason: "not a local path".into(),
    })?;
    for (name, is_json) in [(super::JSON_PAGE, true), (super::HTML_PAGE, false)] {
        let path = dir.join(name);
        match crate::input::read_text(&path, crate::input::INDEX_PAGE) {
            Ok(text) => return Ok(Some((text, is_json))),
            Err(error) if error.is_not_found() => {}
            Err(error) => {
                return Err(Error::Transfer {
                    url: url.to_string(),
                    message: error.to_string(),
                });
            }
        }
    }
    Ok(None)
}

/// An error with every cause after it, credentials in URLs masked.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    redact_url(&text)
}

// ---- PEP 691 JSON ----

#[derive(Deserialize)]
struct JsonPage {
    files: Vec<JsonFile>,
}

#[derive(Deserialize)]
struct JsonFile {
    filename: String,
    url: String,
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
    #[serde(default, rename = "requires-python")]
    requires_python: Option<String>,
    #[serde(default, rename = "core-metadata")]
    core_metadata: Option<serde_json::Value>,
    #[serde(default, rename = "dist-info-metadata")]
    dist_info_metadata: Option<serde_json::Value>,
    #[serde(default)]
    size: Option<u64>,
    #[serde(default)]
    yanked: Option<serde_json::Value>,
}

/// Parses a PEP 691 project page; relative URLs are resolved against `page_url`.
pub fn parse_json(page_url: &Url, text: &str) -> Result<Vec<RemoteFile>, Error> {
    let page: JsonPage = serde_json::from_str(text).map_err(|e| Error::Parse {
        url: redact_url(page_url.as_str()),
        message: e.to_string(),
    })?;
    if page.files.len() > MAX_PAGE_FILES {
        return Err(too_many_files(page_url));
    }
    let mut files = Vec::with_capacity(page.files.len());
    for file in page.files {
        let url = page_url.join(&file.url).map_err(|e| Error::Parse {
            url: redact_url(page_url.as_str()),
            message: format!("bad url '{}': {e}", file.url),
        })?;
        let metadata = match file.core_metadata.or(file.dist_info_metadata) {
            None | Some(serde_json::Value::Bool(false)) => None,
            Some(serde_json::Value::Object(hashes)) => Some(
                hashes
                    .get("sha256")
                    .and_then(|v| v.as_str())
                    .map(str::to_ascii_lowercase),
            ),
            Some(_) => Some(None),
        };
        files.push(RemoteFile {
            filename: file.filename,
            url: without_fragment(url),
            sha256: file.hashes.get("sha256").map(|s| s.to_ascii_lowercase()),
            requires_python: file.requires_python,
            metadata,
            size: file.size,
            yanked: matches!(
                file.yanked,
                Some(serde_json::Value::Bool(true)) | Some(serde_json::Value::String(_))
            ),
        });
    }
    Ok(files)
}

// ---- PEP 503 HTML ----

/// Parses a PEP 503 project page: every `<a href>` is a file; the `#sha256=` fragment, PEP
/// 503/592/658/714 data attributes are read; entities in attribute values are decoded. Each
/// anchor is turned into its file as it is found, keeping only the attributes read (a page of
/// anchors with many attributes costs no more than its files).
pub fn parse_html(page_url: &Url, text: &str) -> Result<Vec<RemoteFile>, Error> {
    let mut files = Vec::new();
    let mut result = Ok(());
    for_each_anchor(text, |anchor| {
        if files.len() >= MAX_PAGE_FILES {
            result = Err(too_many_files(page_url));
            return false;
        }
        if let Some(file) = remote_file(page_url, anchor) {
            files.push(file);
        }
        true
    });
    result.map(|()| files)
}

fn too_many_files(page_url: &Url) -> Error {
    Error::Parse {
        url: redact_url(page_url.as_str()),
        message: format!(
            "it lists more than {MAX_PAGE_FILES} files, more than any index page holds"
        ),
    }
}

/// The file one anchor names, if it names one.
fn remote_file(page_url: &Url, anchor: Anchor) -> Option<RemoteFile> {
    let url = page_url.join(&anchor.href?).ok()?;
    let sha256 = url
        .fragment()
        .and_then(|f| f.strip_prefix("sha256="))
        .map(str::to_ascii_lowercase);
    let filename = url
        .path_segments()
        .and_then(|mut segments| segments.next_back())
        .map(percent_decode)
        .unwrap_or_default();
    if filename.is_empty() {
        return None;
    }
    let metadata = anchor
        .core_metadata
        .or(anchor.dist_info_metadata)
        .map(|value| value.strip_prefix("sha256=").map(str::to_ascii_lowercase));
    Some(RemoteFile {
        filename,
        url: without_fragment(url),
        sha256,
        requires_python: anchor.requires_python,
        metadata,
        size: None,
        yanked: anchor.yanked,
    })
}

fn without_fragment(mut url: Url) -> String {
    url.set_fragment(None);
    url.to_string()
}

/// The attributes of an `<a>` start tag that name a file, values unescaped.
#[derive(Default)]
struct Anchor {
    href: Option<String>,
    core_metadata: Option<String>,
    dist_info_metadata: Option<String>,
    requires_python: Option<String>,
    yanked: bool,
}

impl Anchor {
    /// Keeps the attribute when it is one a file is read from (the value is decoded only then).
    fn set(&mut self, name: &str, raw_value: &str) {
        let slot = match name {
            "href" => &mut self.href,
            "data-core-metadata" => &mut self.core_metadata,
            "data-dist-info-metadata" => &mut self.dist_info_metadata,
            "data-requires-python" => &mut self.requires_python,
            "data-yanked" => {
                self.yanked = true;
                return;
            }
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(unescape_html(raw_value));
        }
    }
}

/// Calls `each` with every `<a ...>` start tag, in order, until it returns false.
fn for_each_anchor(text: &str, mut each: impl FnMut(Anchor) -> bool) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(offset) = text[i..].find('<') {
        let start = i + offset + 1;
        i = start;
        let is_anchor = bytes
            .get(start)
            .is_some_and(|b| b.eq_ignore_ascii_case(&b'a'))
            && bytes
                .get(start + 1)
                .is_some_and(|b| b.is_ascii_whitespace() || *b == b'>' || *b == b'/');
        if !is_anchor {
            continue;
        }
        let (anchor, end) = parse_attributes(text, start + 1);
        i = end;
        if !each(anchor) {
            return;
        }
    }
}

/// Parses `name="value" name='value' name=value name` up to the closing `>`.
fn parse_attributes(text: &str, mut i: usize) -> (Anchor, usize) {
    let bytes = text.as_bytes();
    let mut anchor = Anchor::default();
    loop {
        while i < bytes.len() && (bytes[i].is_ascii_whitespace() || bytes[i] == b'/') {
            i += 1;
        }
        if i >= bytes.len() || bytes[i] == b'>' {
            return (anchor, (i + 1).min(bytes.len()));
        }
        let name_start = i;
        while i < bytes.len()
            && !bytes[i].is_ascii_whitespace()
            && !matches!(bytes[i], b'=' | b'>' | b'/')
        {
            i += 1;
        }
        let name = &text[name_start..i];
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        let mut value = "";
        if i < bytes.len() && bytes[i] == b'=' {
            i += 1;
            while i < bytes.len() && bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            if i < bytes.len() && matches!(bytes[i], b'"' | b'\'') {
                let quote = bytes[i];
                let value_start = i + 1;
                let value_end = text[value_start..]
                    .find(char::from(quote))
                    .map_or(bytes.len(), |o| value_start + o);
                value = &text[value_start..value_end];
                i = (value_end + 1).min(bytes.len());
            } else {
                let value_start = i;
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() && bytes[i] != b'>' {
                    i += 1;
                }
                value = &text[value_start..i];
            }
        }
        // Names are compared lowercased without allocating for the ones not read.
        if name.len() <= "data-dist-info-metadata".len() {
            anchor.set(&name.to_ascii_lowercase(), value);
        }
    }
}

/// Decodes the character references an index page uses: named `&amp; &lt; &gt; &quot;
/// &apos;` and numeric `&#NN; &#xHH;`. Anything else is kept as written.
pub fn unescape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let decoded = rest.find(';').filter(|&end| end <= 10).and_then(|end| {
            let entity = &rest[1..end];
            let c = match entity {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" => Some('\''),
                _ => entity
                    .strip_prefix("#x")
                    .or_else(|| entity.strip_prefix("#X"))
                    .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                    .or_else(|| entity.strip_prefix('#').and_then(|dec| dec.parse().ok()))
                    .and_then(char::from_u32),
            };
            c.map(|c| (c, end))
        });
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Decodes `%XX` escapes of a URL path segment (invalid escapes are kept as written).
pub fn percent_decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = segment.get(i + 1..i + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::render::{render_project_html, render_project_json};
    use crate::index::{DistFile, ProjectListing};

    fn page() -> Url {
        Url::parse("http://127.0.0.1:8000/simple/torch/").expect("url")
    }

    #[test]
    fn reads_pep_503_pages_from_other_generators() {
        let html = r#"<!DOCTYPE html><html><body>
<h1>Links for torch</h1>
<A HREF="../../packages/torch-2.9.0%2Brocm7.0.0-cp311-cp311-linux_x86_64.whl#sha256=ABCDEF" data-requires-python="&gt;=3.9" >torch</A><br>
<a href='torch-2.8.0-cp311-cp311-linux_x86_64.whl' data-dist-info-metadata=true data-yanked="">x</a>
<abbr title="not a link">t</abbr>
<a name="anchor-without-href">n</a>
</body></html>"#;
        let files = parse_html(&page(), html).expect("html");
        assert_eq!(files.len(), 2);
        assert_eq!(
            files[0].filename,
            "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl"
        );
        assert_eq!(
            files[0].url,
            "http://127.0.0.1:8000/packages/torch-2.9.0%2Brocm7.0.0-cp311-cp311-linux_x86_64.whl"
        );
        assert_eq!(files[0].sha256.as_deref(), Some("abcdef"));
        assert_eq!(files[0].requires_python.as_deref(), Some(">=3.9"));
        assert_eq!(files[0].metadata, None);
        assert!(!files[0].yanked);
        assert_eq!(files[1].metadata, Some(None));
        assert!(files[1].yanked);
        assert_eq!(files[1].sha256, None);
    }

    #[test]
    fn round_trips_our_own_pages() {
        let listing = ProjectListing {
            name: "torch".into(),
            files: vec![DistFile {
                filename: "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl".into(),
                sha256: "ab".repeat(32),
                size: 42,
                requires_python: Some("<4,>=3.9".into()),
                metadata_sha256: Some("cd".repeat(32)),
            }],
        };
        let from_html = parse_html(&page(), &render_project_html(&listing)).expect("html");
        let from_json = parse_json(&page(), &render_project_json(&listing)).expect("json");
        for (files, size) in [(from_html, None), (from_json, Some(42))] {
            assert_eq!(
                files,
                vec![RemoteFile {
                    filename: "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl".into(),
                    url: "http://127.0.0.1:8000/simple/torch/torch-2.9.0%2Brocm7.0.0-cp311-cp311-linux_x86_64.whl".into(),
                    sha256: Some("ab".repeat(32)),
                    requires_python: Some("<4,>=3.9".into()),
                    metadata: Some(Some("cd".repeat(32))),
                    size,
                    yanked: false,
                }]
            );
        }
    }

    #[test]
    fn entities_and_escapes_decode() {
        assert_eq!(
            unescape_html("&lt;4,&gt;=3.9 &amp; &#x27;x&#39; &bogus; &"),
            "<4,>=3.9 & 'x' &bogus; &"
        );
        assert_eq!(percent_decode("a%2Bb%2bc%zz%"), "a+b+c%zz%");
    }

    #[test]
    fn bad_json_names_the_page() {
        let error = parse_json(&page(), "{\"files\": 3}").expect_err("bad");
        assert!(
            error
                .to_string()
                .starts_with("http://127.0.0.1:8000/simple/torch/ is not a valid index page"),
            "{error}"
        );
    }

    #[test]
    fn refuses_other_schemes() {
        let error = IndexClient::new("ftp://x/simple").expect_err("ftp");
        assert!(
            error.to_string().contains("unsupported scheme `ftp`"),
            "{error}"
        );
    }

    #[test]
    fn reads_file_trees() {
        let dir = tempfile::tempdir().expect("tempdir");
        let listing = ProjectListing {
            name: "rock-demo".into(),
            files: vec![DistFile {
                filename: "rock_demo-1.0-py3-none-any.whl".into(),
                sha256: "ef".repeat(32),
                size: 7,
                requires_python: None,
                metadata_sha256: None,
            }],
        };
        crate::fsutil::write_atomic(
            &dir.path().join("rock-demo/index.html"),
            render_project_html(&listing).as_bytes(),
        )
        .expect("write");
        let url = Url::from_directory_path(dir.path()).expect("url");
        let client = IndexClient::new(url.as_str()).expect("client");
        let files = client.project("Rock_Demo").expect("read").expect("exists");
        assert_eq!(files[0].sha256.as_deref(), Some(&*"ef".repeat(32)));
        assert!(client.project("absent").expect("read").is_none());
    }
}
