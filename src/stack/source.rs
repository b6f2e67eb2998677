//! Config files as text with a name: parse YAML with errors that say `file:line:col`, find the
//! line of a key for semantic errors, and suggest the nearest spelling.

use std::fmt;
use std::path::Path;

use anyhow::Context as _;
use serde::de::DeserializeOwned;

/// A config file's text and the name errors use for it.
#[derive(Clone, Debug)]
pub struct ConfigSource {
    pub name: String,
    pub text: String,
}

impl ConfigSource {
    pub fn embedded(name: &str, text: &str) -> Self {
        ConfigSource {
            name: format!("{name} (built in)"),
            text: text.to_string(),
        }
    }

    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text = crate::input::read_text(path, crate::input::CONFIG)
            .with_context(|| format!("reading config file {}", path.display()))
            .map_err(|error| crate::exit::usage(format!("{error:#}")))?;
        Ok(ConfigSource {
            name: path.display().to_string(),
            text,
        })
    }

    /// The file a flag names, else the config compiled into the binary.
    pub fn flag_or_embedded(path: Option<&Path>, name: &str, text: &str) -> anyhow::Result<Self> {
        match path {
            Some(path) => ConfigSource::read(path),
            None => Ok(ConfigSource::embedded(name, text)),
        }
    }

    /// Deserializes the whole file, turning serde's message into a located [`ConfigError`]
    /// with a "did you mean" for misspelled keys and values. A key given twice in a mapping
    /// and aliases that expand without bound are refused (`input::strict`).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ConfigError> {
        crate::input::strict::yaml(&self.text).map_err(|error| {
            let location = error.location();
            let mut message = error.to_string();
            if let Some(index) = message.rfind(" at line ") {
                message.truncate(index);
            }
            if message == "repetition limit exceeded" {
                message = "aliases repeat their anchors too often (an alias bomb, or not the file \
                           you meant)"
                    .to_string();
            }
            ConfigError {
                file: self.name.clone(),
                line: location.as_ref().map(|l| l.line()),
                column: location.as_ref().map(|l| l.column()),
                message: add_suggestion(&message),
            }
        })
    }

    /// Config files carry `schema: 1`; another number is a format this rockbuild cannot read.
    pub fn check_schema(&self, schema: u32) -> Result<(), ConfigError> {
        if schema == 1 {
            return Ok(());
        }
        Err(self.error_at(
            &["schema"],
            format!("unsupported schema {schema} (this rockbuild reads schema 1)"),
        ))
    }

    /// An error about the value at a key path, located by [`locate`].
    pub fn error_at(&self, path: &[&str], message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.name.clone(),
            line: locate(&self.text, path),
            column: None,
            message: message.into(),
        }
    }
}

/// A config file problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(line), Some(column)) => {
                write!(f, "{}:{line}:{column}: {}", self.file, self.message)
            }
            (Some(line), None) => write!(f, "{}:{line}: {}", self.file, self.message),
            _ => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl From<ConfigError> for crate::exit::Classified {
    fn from(error: ConfigError) -> Self {
        crate::exit::Classified {
            status: crate::exit::ExitStatus::Usage,
            message: error.to_string(),
        }
    }
}

/// The 1-based line of the mapping key at `path` (e.g. `["projects", "torch", "recipe"]`),
/// found by walking the indentation of block-style YAML. Falls back to the deepest key found.
pub fn locate(text: &str, path: &[&str]) -> Option<usize> {
    let mut found = None;
    let mut min_indent: Option<usize> = None;
    let mut depth = 0;
    for (index, raw) in text.lines().enumerate() {
        if depth == path.len() {
            break;
        }
        let trimmed = raw.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = raw.len() - trimmed.len();
        if let Some(min) = min_indent
            && indent < min
        {
            // Left the parent's block without finding the key.
            break;
        }
        let key_part = trimmed.trim_start_matches("- ");
        let key = key_part
            .split_once(':')
            .map(|(key, _)| key.trim().trim_matches(|c| c == '"' || c == '\''));
        if key == Some(path[depth]) && min_indent.is_none_or(|min| indent >= min) {
            found = Some(index + 1);
            depth += 1;
            min_indent = Some(indent + 1);
        }
    }
    found
}

/// The closest candidate to `word`, if it is close enough to be a plausible typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|candidate| {
            (
                strsim::jaro_winkler(&word.to_lowercase(), &candidate.to_lowercase()),
                candidate,
            )
        })
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, candidate)| candidate)
}

/// Adds "(did you mean `x`?)" to serde's "unknown field/variant `y`, expected ..." messages.
fn add_suggestion(message: &str) -> String {
    let Some(start) = message
        .find("unknown field `")
        .map(|i| i + "unknown field `".len())
        .or_else(|| {
            message
                .find("unknown variant `")
                .map(|i| i + "unknown variant `".len())
        })
    else {
        return message.to_string();
    };
    let Some(len) = message[start..].find('`') else {
        return message.to_string();
    };
    let unknown = &message[start..start + len];
    let expected: Vec<&str> = message.split('`').skip(3).step_by(2).collect();
    match did_you_mean(unknown, expected.iter().copied()) {
        Some(suggestion) => {
            let (head, tail) = message.split_at(start + len + 1);
            format!("{head} (did you mean `{suggestion}`?){tail}")
        }
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
schema: 1
# comment
projects:
  torch:
    origin: x
    recipe: torch
  audio:
    origin: y
    recipe: audio
";

    #[test]
    fn locates_nested_keys() {
        assert_eq!(locate(TEXT, &["projects"]), Some(3));
        assert_eq!(locate(TEXT, &["projects", "torch", "recipe"]), Some(6));
        assert_eq!(locate(TEXT, &["projects", "audio", "recipe"]), Some(9));
        assert_eq!(locate(TEXT, &["projects", "audio", "missing"]), Some(7));
        assert_eq!(locate(TEXT, &["nothing"]), None);
    }

    #[test]
    fn suggests_the_closest_key() {
        assert_eq!(
            add_suggestion(
                "projects.torch: unknown field `checkout-dri`, expected `checkout-dir` or `pin`"
            ),
            "projects.torch: unknown field `checkout-dri` (did you mean `checkout-dir`?), expected `checkout-dir` or `pin`"
        );
        assert_eq!(
            add_suggestion("unknown variant `scirpt`, expected one of `script`, `off`"),
            "unknown variant `scirpt` (did you mean `script`?), expected one of `script`, `off`"
        );
        assert_eq!(did_you_mean("zzzz", ["torch", "audio"]), None);
    }

    #[test]
    fn parse_errors_are_located() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        #[expect(dead_code, reason = "only the error matters here")]
        struct Doc {
            schema: u32,
        }
        let source = ConfigSource {
            name: "x.yaml".into(),
            text: "schema: 1\nschemaa: 2\n".into(),
        };
        let error = source.parse::<Doc>().expect_err("unknown key");
        assert_eq!(
            error.to_string(),
            "x.yaml:2:1: unknown field `schemaa` (did you mean `schema`?), expected `schema`"
        );
    }
}
