//! Reading a skip-list file: the YAML shape, then every value checked, each problem an error
//! naming `file:line` and what to write instead.

use std::fmt::Write as _;

use indexmap::IndexMap;
use serde::Deserialize;

use super::{MajorMinor, Platform, Section, SkipFile, Versions, When};
use crate::stack::source::{did_you_mean, locate};
use crate::stack::{ConfigError, ConfigSource, FamilyTable};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    schema: u32,
    pytorch: yaml_serde::Value,
    #[serde(default)]
    skip: IndexMap<String, IndexMap<String, Vec<String>>>,
    #[serde(default)]
    hang: IndexMap<String, Vec<String>>,
}

pub(super) fn parse_file(
    source: &ConfigSource,
    families: &FamilyTable,
) -> Result<SkipFile, ConfigError> {
    let raw: RawFile = source.parse()?;
    source.check_schema(raw.schema)?;
    let versions = parse_versions(source, &raw.pytorch)?;
    let mut skip = Vec::new();
    for (key, modules) in &raw.skip {
        let when = parse_when(source, "skip", key, families)?;
        let mut tests = IndexMap::new();
        for (module, names) in modules {
            let path = ["skip", key.as_str(), module.as_str()];
            check_module(source, &path, module)?;
            if names.is_empty() {
                return Err(source.error_at(
                    &path,
                    format!("`{module}` lists no tests; remove the key or add names"),
                ));
            }
            for (index, name) in names.iter().enumerate() {
                check_test_name(source, &path, index, name)?;
                if let Some(first) = names[..index].iter().position(|n| n == name) {
                    return Err(item_error(
                        source,
                        &path,
                        index,
                        format!(
                            "`{name}` is listed twice under {key}/{module} (first at line {})",
                            item_line(&source.text, &path, first).unwrap_or(0)
                        ),
                    ));
                }
            }
            tests.insert(module.clone(), names.clone());
        }
        if tests.is_empty() {
            return Err(source.error_at(&["skip", key.as_str()], "empty section"));
        }
        skip.push(Section {
            when,
            tests,
            modules: Vec::new(),
        });
    }
    let mut hang = Vec::new();
    for (key, modules) in &raw.hang {
        let when = parse_when(source, "hang", key, families)?;
        let path = ["hang", key.as_str()];
        if modules.is_empty() {
            return Err(source.error_at(&path, "empty section"));
        }
        for (index, module) in modules.iter().enumerate() {
            if !is_module_path(module) {
                return Err(item_error(
                    source,
                    &path,
                    index,
                    format!(
                        "`{module}` is not a test module path like `nn/test_convolution` (letters, digits, _ and /)"
                    ),
                ));
            }
            if modules[..index].contains(module) {
                return Err(item_error(
                    source,
                    &path,
                    index,
                    format!("`{module}` is listed twice under hang/{key}"),
                ));
            }
        }
        hang.push(Section {
            when,
            tests: IndexMap::new(),
            modules: modules.clone(),
        });
    }
    if skip.is_empty() && hang.is_empty() {
        return Err(source.error_at(
            &["schema"],
            "the file has neither `skip:` nor `hang:` entries",
        ));
    }
    Ok(SkipFile {
        name: source.name.clone(),
        versions,
        skip,
        hang,
    })
}

fn parse_versions(
    source: &ConfigSource,
    value: &yaml_serde::Value,
) -> Result<Versions, ConfigError> {
    use yaml_serde::Value;
    let one = |value: &Value| -> Result<MajorMinor, String> {
        match value {
            Value::String(text) => MajorMinor::parse(text)
                .ok_or_else(|| format!("'{text}' is not a PyTorch version like \"2.12\"")),
            Value::Number(number) => Err(format!(
                "write the version {number} in quotes (\"2.10\"): YAML reads 2.10 as the number 2.1"
            )),
            _ => Err("expected `all` or a list of versions like [\"2.12\", \"2.13\"]".to_string()),
        }
    };
    let result = match value {
        Value::String(text) if text == "all" => Ok(Versions::All),
        Value::Sequence(items) if !items.is_empty() => items
            .iter()
            .map(one)
            .collect::<Result<Vec<_>, _>>()
            .map(Versions::Only),
        Value::Sequence(_) => Err("an empty version list matches nothing".to_string()),
        other => one(other).map(|v| Versions::Only(vec![v])),
    };
    result.map_err(|message| source.error_at(&["pytorch"], format!("pytorch: {message}")))
}

fn parse_when(
    source: &ConfigSource,
    list: &str,
    key: &str,
    families: &FamilyTable,
) -> Result<When, ConfigError> {
    let targets: Vec<&str> = families
        .families()
        .flat_map(|f| f.targets.iter().map(|t| t.as_str()))
        .collect();
    let error = |message: String| source.error_at(&[list, key], message);
    match key {
        "common" => return Ok(When::Common),
        "linux" => return Ok(When::Platform(Platform::Linux)),
        "windows" => return Ok(When::Platform(Platform::Windows)),
        _ => {}
    }
    if let Some(prefix) = key.strip_suffix('*') {
        if !prefix.starts_with("gfx") || prefix.contains('*') {
            return Err(error(format!(
                "section `{key}`: a prefix section is `gfx` and the start of a target, then `*` (e.g. gfx94*)"
            )));
        }
        if !targets.iter().any(|t| t.starts_with(prefix)) {
            return Err(error(format!(
                "section `{key}` matches no gfx target of the family table"
            )));
        }
        return Ok(When::Prefix(prefix.to_string()));
    }
    if let Some(family) = families.families().find(|f| f.name == key) {
        return Ok(When::Family {
            name: family.name.clone(),
            targets: family.targets.iter().map(|t| t.to_string()).collect(),
        });
    }
    if targets.contains(&key) {
        return Ok(When::Target(key.to_string()));
    }
    let mut message = format!(
        "section `{key}` is not common, linux, windows, a gfx target (gfx950), a target prefix (gfx94*) or a GPU family (gfx94X-dcgpu)"
    );
    if targets.iter().any(|t| t.starts_with(key)) {
        let _ = write!(
            message,
            "; for every target starting with {key}, write `{key}*` (sections match exactly, not as substrings)"
        );
    } else {
        let names = families
            .families()
            .map(|f| f.name.as_str())
            .chain(targets.iter().copied())
            .chain(["common", "linux", "windows"]);
        if let Some(guess) = did_you_mean(key, names) {
            let _ = write!(message, " (did you mean `{guess}`?)");
        }
    }
    Err(error(message))
}

fn check_module(source: &ConfigSource, path: &[&str], module: &str) -> Result<(), ConfigError> {
    if is_module_path(module) {
        Ok(())
    } else {
        Err(source.error_at(
            path,
            format!("`{module}` is not a test module name (letters, digits, _ and /)"),
        ))
    }
}

fn is_module_path(text: &str) -> bool {
    !text.is_empty()
        && text.split('/').all(|part| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        })
}

/// A name pytest's `-k` reads as one identifier: no spaces, none of its operators.
fn check_test_name(
    source: &ConfigSource,
    path: &[&str],
    index: usize,
    name: &str,
) -> Result<(), ConfigError> {
    let problem = if name.chars().any(char::is_whitespace) {
        Some(format!(
            "`{name}` contains a space: two names on one line? Write each as its own `- name` item (TheRock lost two tests to a missing comma, W3)"
        ))
    } else if matches!(name, "and" | "or" | "not") || name.is_empty() {
        Some(format!("`{name}` is a pytest -k operator, not a test name"))
    } else if name.starts_with('-')
        || !name.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '+' | '-' | '[' | ']' | '/')
        })
    {
        Some(format!(
            "`{name}` is not a test name pytest -k can match (letters, digits and _ . : + - [ ] /)"
        ))
    } else {
        None
    };
    match problem {
        Some(message) => Err(item_error(source, path, index, message)),
        None => Ok(()),
    }
}

fn item_error(source: &ConfigSource, path: &[&str], index: usize, message: String) -> ConfigError {
    ConfigError {
        file: source.name.clone(),
        line: item_line(&source.text, path, index).or_else(|| locate(&source.text, path)),
        column: None,
        message,
    }
}

/// The line of the `index`-th `- item` of the block list under the key at `path`.
fn item_line(text: &str, path: &[&str], index: usize) -> Option<usize> {
    let key_line = locate(text, path)?;
    let lines: Vec<&str> = text.lines().collect();
    let key_indent = indent(lines.get(key_line - 1)?);
    let mut seen = 0;
    for (offset, line) in lines.iter().enumerate().skip(key_line) {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if indent(line) <= key_indent && !trimmed.starts_with("- ") {
            break;
        }
        if trimmed.starts_with("- ") {
            if seen == index {
                return Some(offset + 1);
            }
            seen += 1;
        }
    }
    None
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}
