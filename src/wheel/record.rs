//! RECORD: the wheel's manifest, a CSV of `path,algorithm=urlsafe-b64-digest,size` lines
//! (binary distribution format spec). Parsing for verification, rendering for rewrites.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::Digest as _;

/// The hash algorithms a RECORD may use (the spec requires sha256 or stronger).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashAlgorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl HashAlgorithm {
    pub fn name(self) -> &'static str {
        match self {
            HashAlgorithm::Sha256 => "sha256",
            HashAlgorithm::Sha384 => "sha384",
            HashAlgorithm::Sha512 => "sha512",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "sha256" => Some(HashAlgorithm::Sha256),
            "sha384" => Some(HashAlgorithm::Sha384),
            "sha512" => Some(HashAlgorithm::Sha512),
            _ => None,
        }
    }
}

/// A streaming hasher for one of the RECORD algorithms.
pub enum Hasher {
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Hasher {
    pub fn new(algorithm: HashAlgorithm) -> Self {
        match algorithm {
            HashAlgorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            HashAlgorithm::Sha384 => Hasher::Sha384(sha2::Sha384::new()),
            HashAlgorithm::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha384(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
        }
    }

    /// The digest as RECORD writes it: urlsafe base64 without padding.
    pub fn finish(self) -> String {
        match self {
            Hasher::Sha256(h) => URL_SAFE_NO_PAD.encode(h.finalize()),
            Hasher::Sha384(h) => URL_SAFE_NO_PAD.encode(h.finalize()),
            Hasher::Sha512(h) => URL_SAFE_NO_PAD.encode(h.finalize()),
        }
    }
}

/// The RECORD form of a SHA-256 digest of `data`: `sha256=<urlsafe-b64-nopad>`.
pub fn record_hash(data: &[u8]) -> String {
    format!(
        "sha256={}",
        URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(data))
    )
}

/// One RECORD line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordLine {
    /// 1-based line number in RECORD.
    pub line: usize,
    pub path: String,
    /// `None` for lines without a hash (RECORD itself).
    pub hash: Option<(HashAlgorithm, String)>,
    pub size: Option<u64>,
}

/// A RECORD line that cannot be used; verification reports it and goes on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub line: usize,
    pub detail: String,
}

/// Parses RECORD, returning the good lines and the errors (one per bad line).
pub fn parse(text: &str) -> (Vec<RecordLine>, Vec<RecordError>) {
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for (index, row) in csv_rows(text).into_iter().enumerate() {
        let line = index + 1;
        let row = match row {
            Ok(row) => row,
            Err(detail) => {
                errors.push(RecordError {
                    line,
                    detail: detail.to_string(),
                });
                continue;
            }
        };
        if row.len() == 1 && row[0].is_empty() {
            continue;
        }
        let [path, hash, size] = match <[String; 3]>::try_from(row) {
            Ok(fields) => fields,
            Err(row) => {
                errors.push(RecordError {
                    line,
                    detail: format!("expected 3 fields (path,hash,size), found {}", row.len()),
                });
                continue;
            }
        };
        let hash = if hash.is_empty() {
            None
        } else {
            match hash.split_once('=') {
                Some((algorithm, digest)) => match HashAlgorithm::parse(algorithm) {
                    Some(algorithm) => Some((algorithm, digest.to_string())),
                    None => {
                        errors.push(RecordError {
                            line,
                            detail: format!(
                                "'{path}' uses hash algorithm '{algorithm}'; only sha256, \
                                 sha384 and sha512 are allowed"
                            ),
                        });
                        continue;
                    }
                },
                None => {
                    errors.push(RecordError {
                        line,
                        detail: format!("hash '{hash}' of '{path}' is not algorithm=digest"),
                    });
                    continue;
                }
            }
        };
        let size = if size.is_empty() {
            None
        } else {
            match size.parse::<u64>() {
                Ok(size) => Some(size),
                Err(_) => {
                    errors.push(RecordError {
                        line,
                        detail: format!("size '{size}' of '{path}' is not a number"),
                    });
                    continue;
                }
            }
        };
        lines.push(RecordLine {
            line,
            path,
            hash,
            size,
        });
    }
    (lines, errors)
}

/// A RECORD line that is not valid CSV.
#[derive(Debug, thiserror::Error)]
enum CsvError {
    #[error("a quote inside an unquoted field")]
    QuoteInside,
    #[error("text after a closing quote")]
    AfterQuote,
    #[error("an unterminated quote")]
    Unterminated,
}

/// Splits CSV text into rows of fields (RFC 4180 quoting, as Python's csv module writes it).
fn csv_rows(text: &str) -> Vec<Result<Vec<String>, CsvError>> {
    let mut rows = Vec::new();
    for raw in split_records(text) {
        rows.push(csv_fields(&raw));
    }
    rows
}

/// Splits into physical records, keeping newlines inside quotes.
fn split_records(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            '\n' if !quoted => {
                out.push(
                    std::mem::take(&mut current)
                        .trim_end_matches('\r')
                        .to_string(),
                );
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        out.push(current.trim_end_matches('\r').to_string());
    }
    out
}

fn csv_fields(record: &str) -> Result<Vec<String>, CsvError> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = record.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (false, ',') => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            (false, '"') if field.is_empty() && !was_quoted => {
                quoted = true;
                was_quoted = true;
            }
            (false, '"') => return Err(CsvError::QuoteInside),
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => {
                quoted = false;
                if chars.peek().is_some_and(|next| *next != ',') {
                    return Err(CsvError::AfterQuote);
                }
            }
            (_, c) => field.push(c),
        }
    }
    if quoted {
        return Err(CsvError::Unterminated);
    }
    fields.push(field);
    Ok(fields)
}

/// Renders RECORD lines as Python's csv writer does (quoting only where needed, `\n` ends).
pub fn render<'a>(
    lines: impl IntoIterator<Item = (&'a str, Option<&'a str>, Option<u64>)>,
) -> String {
    let mut out = String::new();
    for (path, hash, size) in lines {
        out.push_str(&csv_field(path));
        out.push(',');
        out.push_str(&csv_field(hash.unwrap_or("")));
        out.push(',');
        if let Some(size) = size {
            out.push_str(&size.to_string());
        }
        out.push('\n');
    }
    out
}

fn csv_field(value: &str) -> String {
    if value.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_quotes_and_the_record_itself() {
        let text = "pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n\
                    \"pkg/a,b.py\",sha256=abc,12\n\
                    \"pkg/q\"\"uote.py\",sha512=xyz,3\n\
                    pkg-1.0.dist-info/RECORD,,\n";
        let (lines, errors) = parse(text);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(lines.len(), 4);
        assert_eq!(
            lines[0].hash,
            Some((
                HashAlgorithm::Sha256,
                "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU".into()
            ))
        );
        assert_eq!(lines[1].path, "pkg/a,b.py");
        assert_eq!(lines[2].path, "pkg/q\"uote.py");
        assert_eq!(
            lines[2].hash.as_ref().map(|h| h.0),
            Some(HashAlgorithm::Sha512)
        );
        assert_eq!(lines[3].hash, None);
        assert_eq!(lines[3].size, None);
        assert_eq!(lines[3].line, 4);
    }

    #[test]
    fn reports_each_bad_line_with_its_number() {
        let text =
            "a.py,md5=abc,1\nb.py,sha256=abc\nc.py,sha256=abc,big\nd.py,nohash,1\n\"e.py,x,1\n";
        let (lines, errors) = parse(text);
        assert!(lines.is_empty());
        let found: Vec<(usize, &str)> =
            errors.iter().map(|e| (e.line, e.detail.as_str())).collect();
        assert_eq!(
            found[0],
            (
                1,
                "'a.py' uses hash algorithm 'md5'; only sha256, sha384 and sha512 are allowed"
            )
        );
        assert_eq!(found[1], (2, "expected 3 fields (path,hash,size), found 2"));
        assert_eq!(found[2], (3, "size 'big' of 'c.py' is not a number"));
        assert_eq!(
            found[3],
            (4, "hash 'nohash' of 'd.py' is not algorithm=digest")
        );
        assert_eq!(found[4], (5, "an unterminated quote"));
    }

    #[test]
    fn render_round_trips_and_hashes_match_the_spec() {
        // sha256 of the empty string, as every RECORD writes it for an empty __init__.py.
        assert_eq!(
            record_hash(b""),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
        let mut hasher = Hasher::new(HashAlgorithm::Sha256);
        hasher.update(b"");
        assert_eq!(
            hasher.finish(),
            "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
        let text = render([
            ("pkg/a,b.py", Some("sha256=x"), Some(3)),
            ("pkg-1.0.dist-info/RECORD", None, None),
        ]);
        assert_eq!(
            text,
            "\"pkg/a,b.py\",sha256=x,3\npkg-1.0.dist-info/RECORD,,\n"
        );
        let (lines, errors) = parse(&text);
        assert!(errors.is_empty());
        assert_eq!(lines[0].path, "pkg/a,b.py");
    }
}
