//! Keeping secrets out of logs, repro lines, locks and error messages.
//!
//! Two kinds of secret reach rockbuild: credentials embedded in URLs
//! (`https://user:token@host/…`, presigned `X-Amz-Signature=` query strings) and the values of
//! environment variables such as `AWS_SECRET_ACCESS_KEY`. URLs are masked wherever they are
//! displayed; secret-looking variables are masked in every rendered command and in every line
//! a child process prints.

use std::ffi::OsStr;
use std::io::Write;
use std::sync::Arc;

use tracing_subscriber::fmt::MakeWriter;

const MASK: &str = "****";

/// Query parameters of presigned URLs that grant access on their own.
const SECRET_QUERY_KEYS: &[&str] = &[
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "X-Amz-Signature",
    "sig",
    "token",
];

/// Whether a URL went through [`redact_url`] and lost a secret (so it cannot be used).
pub fn is_masked(url: &str) -> bool {
    url.contains(MASK)
}

/// Masks the password of a URL's userinfo and secret query parameters.
/// `https://bot:ghp_x@github.com/a/b` → `https://bot:****@github.com/a/b`.
pub fn redact_url(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| rest_start + i);
        let scheme = out[..scheme_end]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .next()
            .unwrap_or_default();
        let http = scheme.to_ascii_lowercase().starts_with("http");
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = &out[rest_start..rest_start + at];
            let masked = match userinfo.split_once(':') {
                // Over http(s) any user part is a credential: a token is often the user name
                // (`https://ghp_x@github.com`, `https://<token>:x-oauth-basic@github.com`).
                _ if http => MASK.to_string(),
                Some((user, _)) => format!("{user}:{MASK}"),
                // An ssh user name (`ssh://git@host`) is not a secret.
                None => userinfo.to_string(),
            };
            out.replace_range(rest_start..rest_start + at, &masked);
        }
    }
    if let Some(query_start) = out.find('?') {
        let (head, query) = out.split_at(query_start + 1);
        let masked: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _))
                    if SECRET_QUERY_KEYS
                        .iter()
                        .any(|secret| secret.eq_ignore_ascii_case(key)) =>
                {
                    format!("{key}={MASK}")
                }
                _ => pair.to_string(),
            })
            .collect();
        out = format!("{head}{}", masked.join("&"));
    }
    out
}

/// True for environment variable names whose values must never be printed.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "PRIVATE_KEY",
        "ACCESS_KEY",
    ]
    .iter()
    .any(|word| upper.contains(word))
}

/// Where the AWS SDK's debug and trace lines put credential material, whatever the source
/// of the credentials (environment, profile files, SSO, instance roles): the value after the
/// marker runs to its closing quote, or (unquoted) up to the first of `/`, `,`, `&`,
/// whitespace.
const LOG_SECRET_MARKERS: &[&str] = &[
    "access_key_id: \"",
    "secret_access_key: \"",
    "session_token: \"",
    "Credential=",
    "Signature=",
    "x-amz-security-token: ",
    "X-Amz-Security-Token=",
];

/// A set of secret values to mask in free text (child output, error tails).
#[derive(Clone, Debug, Default)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    /// The values of an environment's secret-named variables (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `*_TOKEN`, ...).
    pub fn of_env<'a>(vars: impl Iterator<Item = (&'a OsStr, &'a OsStr)>) -> Secrets {
        let mut secrets = Secrets::default();
        for (key, value) in vars {
            if is_secret_env_name(&key.to_string_lossy()) {
                secrets.add(value.to_string_lossy());
            }
        }
        secrets
    }

    /// [`Secrets::mask`], then the credential fields libraries print in their debug lines.
    pub fn mask_log(&self, text: &str) -> String {
        let mut out = self.mask(text);
        for marker in LOG_SECRET_MARKERS {
            let mut from = 0;
            while let Some(found) = out[from..].find(marker) {
                let start = from + found + marker.len();
                // A quoted value runs to its closing quote; a bare one to a separator.
                let quoted = marker.ends_with('"');
                let end = out[start..]
                    .find(|c: char| {
                        c == '"' || (!quoted && (matches!(c, '/' | ',' | '&') || c.is_whitespace()))
                    })
                    .map_or(out.len(), |i| start + i);
                if end > start && &out[start..end] != MASK {
                    out.replace_range(start..end, MASK);
                }
                from = start + MASK.len().min(out.len() - start);
            }
        }
        out
    }

    pub fn add(&mut self, value: impl Into<String>) {
        let value = value.into();
        // Very short values would mask ordinary words; they are not credentials anyway.
        if value.len() >= 6 && !self.values.contains(&value) {
            self.values.push(value);
        }
    }

    /// Replaces every occurrence of a secret value, then masks URL credentials.
    pub fn mask(&self, text: &str) -> String {
        let mut out = text.to_string();
        for value in &self.values {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), MASK);
            }
        }
        if out.contains("://") {
            out = out
                .split(' ')
                .map(|word| {
                    if word.contains("://") {
                        redact_url(word)
                    } else {
                        word.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
        }
        out
    }
}

/// A log writer that masks every line with [`Secrets::mask_log`] before it reaches `inner`:
/// verbose logging (`-vv`, `ROCKBUILD_LOG=trace`) turns on libraries' debug lines, which are
/// not written with secrets in mind.
#[derive(Clone)]
pub struct RedactingWriter<W> {
    inner: W,
    secrets: Arc<Secrets>,
}

impl<W> RedactingWriter<W> {
    pub fn new(inner: W, secrets: Secrets) -> Self {
        RedactingWriter {
            inner,
            secrets: Arc::new(secrets),
        }
    }
}

/// One event per write: tracing formats an event whole, then writes it.
pub struct RedactingLine<W> {
    inner: W,
    secrets: Arc<Secrets>,
}

impl<W: Write> Write for RedactingLine<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let masked = self.secrets.mask_log(&String::from_utf8_lossy(buf));
        self.inner.write_all(masked.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<'a, W: MakeWriter<'a>> MakeWriter<'a> for RedactingWriter<W> {
    type Writer = RedactingLine<W::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingLine {
            inner: self.inner.make_writer(),
            secrets: Arc::clone(&self.secrets),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_passwords_and_tokens_in_urls() {
        assert_eq!(
            redact_url("https://bot:ghp_secret@github.com/ROCm/pytorch.git"),
            "https://****@github.com/ROCm/pytorch.git"
        );
        assert_eq!(
            redact_url("https://ghp_0123456789abcdefghijklmnop@github.com/a/b"),
            "https://****@github.com/a/b"
        );
        assert_eq!(
            redact_url("https://ghp_x@github.com/a/b"),
            "https://****@github.com/a/b"
        );
        assert_eq!(
            redact_url("ssh://git:pw@github.com/a/b"),
            "ssh://git:****@github.com/a/b"
        );
        assert_eq!(
            redact_url("ssh://git@github.com/a/b"),
            "ssh://git@github.com/a/b"
        );
        assert_eq!(
            redact_url("https://b.s3.amazonaws.com/k?X-Amz-Signature=abc&x=1"),
            "https://b.s3.amazonaws.com/k?X-Amz-Signature=****&x=1"
        );
        assert_eq!(
            redact_url("file:///tmp/origin.git"),
            "file:///tmp/origin.git"
        );
        assert!(is_masked(&redact_url("https://u:p@h/simple/")));
        assert!(!is_masked("https://h/simple/"));
    }

    #[test]
    fn repro_lines_and_logs_mask_a_token_given_as_user_name() {
        let cmd = crate::exec::Cmd::new("git").args([
            "fetch",
            "--",
            "https://ghp_token0as0user@github.com/ROCm/pytorch.git",
        ]);
        assert_eq!(
            cmd.repro(),
            "git fetch -- 'https://****@github.com/ROCm/pytorch.git'"
        );
        let secrets = Secrets::default();
        assert_eq!(
            secrets.mask("fatal: unable to access 'https://ghp_token0as0user@github.com/x/'"),
            "fatal: unable to access 'https://****@github.com/x/'"
        );
    }

    #[test]
    fn sdk_debug_lines_lose_their_credentials() {
        let line = r#"Identity { data: Credentials { provider_name: "Profile", access_key_id: "AKIAEXAMPLE", secret_access_key: "** redacted **", session_token: "tok" } } authorization: AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0123abcd"#;
        assert_eq!(
            Secrets::default().mask_log(line),
            r#"Identity { data: Credentials { provider_name: "Profile", access_key_id: "****", secret_access_key: "****", session_token: "****" } } authorization: AWS4-HMAC-SHA256 Credential=****/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=****"#
        );
    }

    #[test]
    fn masks_secret_values_in_text() {
        let mut secrets = Secrets::default();
        secrets.add("hunter2hunter2");
        assert_eq!(
            secrets.mask("auth hunter2hunter2 to https://u:p@h/x"),
            "auth **** to https://****@h/x"
        );
        assert!(is_secret_env_name("AWS_SECRET_ACCESS_KEY"));
        assert!(is_secret_env_name("GITHUB_TOKEN"));
        assert!(!is_secret_env_name("PYTORCH_ROCM_ARCH"));
    }
}
