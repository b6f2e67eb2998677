//! `--manifest-url`: a TheRock source manifest read from an http(s) URL, as
//! external-builds/pytorch/checkout_from_manifest.py's `--manifest-url` downloads one before
//! checking out. The download is bounded (size, time per request, attempts); what it brings is
//! read by the same rules as a manifest file ([`super::manifest`]), and nothing is written:
//! the lock records the (masked) URL as where each pin came from.

use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use reqwest::Url;

use super::Error;
use super::manifest::{self, ReproducePin};
use crate::redact::redact_url;
use crate::stack::Stack;

/// The largest manifest read: TheRock's name five projects in well under a kilobyte each.
pub const MAX_BYTES: u64 = 1 << 20;

/// How long one request may take, and how often one that could not connect, timed out or got
/// a 5xx answer is tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Waits {
    pub timeout: Duration,
    pub attempts: u32,
}

/// The pins of the manifest at `url`, and the URL as messages and the lock show it (any
/// credential masked).
pub fn read_pins(
    url: &str,
    waits: Waits,
    stack: &Stack,
) -> Result<(String, IndexMap<String, ReproducePin>), Error> {
    let shown = redact_url(url);
    let bytes = download(url, &shown, waits)?;
    let text = String::from_utf8(bytes).map_err(|_| Error::Manifest {
        path: PathBuf::from(&shown),
        problem: "the download is not UTF-8 text, so not a TheRock manifest".into(),
    })?;
    let pins = manifest::manifest_pins_from_text(&PathBuf::from(&shown), &text, stack)?;
    Ok((shown, pins))
}

fn failed(shown: &str, reason: impl Into<String>) -> Error {
    Error::ManifestDownload {
        url: shown.to_string(),
        reason: reason.into(),
    }
}

/// The body at `url`: at most [`MAX_BYTES`], each attempt within `waits.timeout`.
fn download(url: &str, shown: &str, waits: Waits) -> Result<Vec<u8>, Error> {
    let parsed = Url::parse(url).map_err(|e| Error::ManifestUrl {
        url: shown.to_string(),
        reason: e.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::ManifestUrl {
            url: shown.to_string(),
            reason: format!(
                "the scheme is `{}`; --manifest-url takes http or https (a local manifest goes to --from-lock)",
                parsed.scheme()
            ),
        });
    }
    let http = reqwest::blocking::Client::builder()
        .connect_timeout(waits.timeout.min(Duration::from_secs(15)))
        .timeout(waits.timeout)
        .user_agent(concat!("rockbuild/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| failed(shown, e.to_string()))?;
    let attempts = waits.attempts.max(1);
    let mut backoff = Duration::from_secs(1);
    let mut attempt = 1;
    loop {
        let problem = match http.get(parsed.clone()).send() {
            Ok(response) if response.status().is_success() => {
                return read_bounded(response, shown);
            }
            Ok(response) => {
                let status = response.status().as_u16();
                let retried = status >= 500 || status == 429;
                if !retried {
                    return Err(Error::ManifestUrl {
                        url: shown.to_string(),
                        reason: format!(
                            "the server answered HTTP {status}; check the URL (TheRock names \
                             manifests therock-manifest_torch_<platform>_<ref>.json)"
                        ),
                    });
                }
                if attempt >= attempts {
                    return Err(failed(
                        shown,
                        format!(
                            "the server answered HTTP {status}{}; try again later",
                            attempts_note(attempt, attempts, retried)
                        ),
                    ));
                }
                format!("HTTP {status}")
            }
            Err(error) => {
                let waited = if error.is_timeout() {
                    format!("no answer within {}s", waits.timeout.as_secs())
                } else {
                    crate::index::client::error_chain(&error)
                };
                let retried = error.is_connect() || error.is_timeout();
                if !retried || attempt >= attempts {
                    return Err(failed(
                        shown,
                        format!(
                            "{waited}{}; check the URL and the network, or give a slow server more \
                             time with --stall-timeout and more tries with --fetch-attempts",
                            attempts_note(attempt, attempts, retried)
                        ),
                    ));
                }
                waited
            }
        };
        tracing::warn!(
            "manifest {shown}: {problem}; retrying in {}s (attempt {} of {attempts})",
            backoff.as_secs(),
            attempt + 1
        );
        std::thread::sleep(backoff);
        backoff *= 2;
        attempt += 1;
    }
}

fn attempts_note(attempt: u32, attempts: u32, retried: bool) -> String {
    if retried && attempts > 1 {
        format!(" (attempt {attempt} of {attempts})")
    } else {
        String::new()
    }
}

/// The body, refused as soon as it is known to exceed [`MAX_BYTES`] (by its Content-Length,
/// else by reading one byte more).
fn read_bounded(response: reqwest::blocking::Response, shown: &str) -> Result<Vec<u8>, Error> {
    let too_large = || Error::ManifestUrl {
        url: shown.to_string(),
        reason: format!(
            "the answer is larger than {MAX_BYTES} bytes, which no TheRock manifest is"
        ),
    };
    if response.content_length().is_some_and(|n| n > MAX_BYTES) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    response
        .take(MAX_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|e| failed(shown, format!("reading the answer: {e}")))?;
    if body.len() as u64 > MAX_BYTES {
        return Err(too_large());
    }
    Ok(body)
}
