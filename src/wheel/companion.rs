//! Products and companions: the two kinds of wheel a published set holds.
//!
//! A **product** is a wheel rockbuild built (torch, triton, torchvision, …): it meets the tag
//! policy, its GPU code and pins are verified, it is promoted on test evidence and its version
//! is rewritten on `--rewrite-version`. A **companion** is a pinned dependency carried from
//! the index that publishes it — the ROCm SDK the products were built on (`rocm[libraries]==V`
//! in torch's METADATA). rockbuild did not build it and never changes it: a companion is
//! checked for integrity and provenance (the same bytes, by SHA-256, as its source index
//! publishes under the same file name), never renamed, retagged or rewritten, and never gated
//! on rockbuild's tests.
//!
//! The rule, not a list: a distribution of the ROCm SDK is its meta package `rocm` or a
//! distribution in its namespace, `rocm-*` — TheRock's packaging names every part of one SDK
//! release that way (`_dist_info.py`'s `ALL_PACKAGES`: `rocm-sdk-core`,
//! `rocm-sdk-libraries-<family>`, `rocm-sdk-device-<target>`, `rocm-sdk-devel`,
//! `rocm-profiler`), and its `promote_packages.py` singles the ROCm packages out by the same
//! prefix. Which of them a set carries is decided by its products' pins (see
//! `verify::companions`): the closure of their requirements into the SDK, each part at the
//! version the SDK release pins its parts to each other with (`==V`).

use std::collections::BTreeSet;

use pep440_rs::Version;
use serde::Serialize;

use crate::wheel::filename::{dist_name_and_version, normalize_name};
use crate::wheel::metadata::Requirement;

/// The ROCm SDK's meta package: what `install-rocm` installs, what torch pins.
pub const SDK_META_PACKAGE: &str = "rocm";

/// What a wheel is to the set that holds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Built here: every check, evidence, version rewrite.
    #[default]
    Product,
    /// Carried from its index: integrity and provenance only.
    Companion,
}

impl Role {
    /// The role of a distribution by its project name.
    pub fn of_name(name: &str) -> Role {
        if is_sdk_distribution(name) {
            Role::Companion
        } else {
            Role::Product
        }
    }

    /// The role of a distribution file (wheel or sdist) by its name; a file whose name does
    /// not parse is a product, so that verification reports the name.
    pub fn of_file(file_name: &str) -> Role {
        match dist_name_and_version(file_name) {
            Some((name, _)) => Role::of_name(&name),
            None => Role::Product,
        }
    }
}

/// Whether a project belongs to the ROCm SDK: `rocm` or `rocm-*` (any spelling of the name).
pub fn is_sdk_distribution(name: &str) -> bool {
    let name = normalize_name(name);
    name == SDK_META_PACKAGE || name.starts_with("rocm-")
}

/// The versions at which `requirements` pin the ROCm SDK exactly (`rocm[libraries]==V`):
/// the SDK release(s) a set of products was built on.
pub fn pinned_sdk_versions<'a>(
    requirements: impl IntoIterator<Item = &'a Requirement>,
) -> BTreeSet<Version> {
    requirements
        .into_iter()
        .filter(|r| is_sdk_distribution(&r.name))
        .filter_map(|r| r.pinned_version().cloned())
        .collect()
}

/// Whether a requirement applies when its distribution is installed with `extras`: its
/// marker's `extra == "…"` comparisons are decided by them; every other comparison
/// (`sys_platform`, `python_version`, …) counts as true, because a published set serves every
/// environment its markers name. A marker that does not parse counts as applying.
pub fn applies_with(requirement: &Requirement, extras: &BTreeSet<String>) -> bool {
    match &requirement.marker {
        None => true,
        Some(marker) => marker::evaluate(marker, extras).unwrap_or(true),
    }
}

/// A small PEP 508 marker evaluator that decides `extra` and nothing else.
mod marker {
    use std::collections::BTreeSet;

    use crate::wheel::filename::normalize_name;

    #[derive(Debug, Clone, PartialEq, Eq)]
    enum Token {
        Open,
        Close,
        Word(String),
        Text(String),
        Op(String),
    }

    fn tokens(text: &str) -> Option<Vec<Token>> {
        let mut out = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            match c {
                _ if c.is_whitespace() => i += 1,
                '(' => {
                    out.push(Token::Open);
                    i += 1;
                }
                ')' => {
                    out.push(Token::Close);
                    i += 1;
                }
                '\'' | '"' => {
                    let end = chars[i + 1..].iter().position(|&d| d == c)? + i + 1;
                    out.push(Token::Text(chars[i + 1..end].iter().collect()));
                    i = end + 1;
                }
                '<' | '>' | '=' | '!' | '~' => {
                    let start = i;
                    while i < chars.len() && matches!(chars[i], '<' | '>' | '=' | '!' | '~') {
                        i += 1;
                    }
                    out.push(Token::Op(chars[start..i].iter().collect()));
                }
                _ if c.is_ascii_alphanumeric() || c == '_' || c == '.' => {
                    let start = i;
                    while i < chars.len()
                        && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.'))
                    {
                        i += 1;
                    }
                    out.push(Token::Word(chars[start..i].iter().collect()));
                }
                _ => return None,
            }
        }
        Some(out)
    }

    /// `None` when the marker does not parse.
    pub(super) fn evaluate(text: &str, extras: &BTreeSet<String>) -> Option<bool> {
        let tokens = tokens(text)?;
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            extras,
        };
        let value = parser.or()?;
        (parser.at == tokens.len()).then_some(value)
    }

    struct Parser<'a> {
        tokens: &'a [Token],
        at: usize,
        extras: &'a BTreeSet<String>,
    }

    impl Parser<'_> {
        fn peek_word(&self, word: &str) -> bool {
            matches!(self.tokens.get(self.at), Some(Token::Word(w)) if w == word)
        }

        fn or(&mut self) -> Option<bool> {
            let mut value = self.and()?;
            while self.peek_word("or") {
                self.at += 1;
                let right = self.and()?;
                value = value || right;
            }
            Some(value)
        }

        fn and(&mut self) -> Option<bool> {
            let mut value = self.expression()?;
            while self.peek_word("and") {
                self.at += 1;
                let right = self.expression()?;
                value = value && right;
            }
            Some(value)
        }

        fn expression(&mut self) -> Option<bool> {
            if self.tokens.get(self.at) == Some(&Token::Open) {
                self.at += 1;
                let value = self.or()?;
                if self.tokens.get(self.at) != Some(&Token::Close) {
                    return None;
                }
                self.at += 1;
                return Some(value);
            }
            let left = self.tokens.get(self.at)?.clone();
            self.at += 1;
            let op = match self.tokens.get(self.at)? {
                Token::Op(op) => op.clone(),
                Token::Word(w) if w == "in" => "in".to_string(),
                Token::Word(w) if w == "not" => {
                    self.at += 1;
                    if !self.peek_word("in") {
                        return None;
                    }
                    "not in".to_string()
                }
                _ => return None,
            };
            self.at += 1;
            let right = self.tokens.get(self.at)?.clone();
            self.at += 1;
            let extra = match (&left, &right) {
                (Token::Word(w), Token::Text(t)) | (Token::Text(t), Token::Word(w))
                    if w == "extra" =>
                {
                    Some(normalize_name(t))
                }
                (Token::Word(_) | Token::Text(_), Token::Word(_) | Token::Text(_)) => None,
                _ => return None,
            };
            Some(match (extra, op.as_str()) {
                (Some(extra), "==" | "===") => self.extras.contains(&extra),
                (Some(extra), "!=") => !self.extras.contains(&extra),
                // Environment comparisons: the set is published for every environment.
                _ => true,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requirement(text: &str) -> Requirement {
        Requirement::parse(text).expect("requirement")
    }

    fn extras(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn the_sdk_is_rocm_and_its_namespace() {
        for name in [
            "rocm",
            "rocm-sdk-core",
            "rocm_sdk_libraries_gfx94X-dcgpu",
            "rocm-sdk-device-gfx1201",
            "rocm-sdk-devel",
            "ROCm.Profiler",
        ] {
            assert!(is_sdk_distribution(name), "{name}");
            assert_eq!(Role::of_name(name), Role::Companion, "{name}");
        }
        for name in ["torch", "rocmx", "pytorch-triton-rocm", "triton", "apex"] {
            assert_eq!(Role::of_name(name), Role::Product, "{name}");
        }
        assert_eq!(
            Role::of_file("rocm_sdk_core-7.10.0a20251124-py3-none-linux_x86_64.whl"),
            Role::Companion
        );
        assert_eq!(Role::of_file("rocm-7.10.0.tar.gz"), Role::Companion);
        assert_eq!(
            Role::of_file("torch-2.9.0+rocm7.10.0-cp311-cp311-linux_x86_64.whl"),
            Role::Product
        );
        assert_eq!(Role::of_file("not a wheel.whl"), Role::Product);
    }

    #[test]
    fn pins_name_the_sdk_release() {
        let requirements = [
            requirement("rocm[libraries]==7.10.0a20251124"),
            requirement("triton==3.4.0+git8518ca6a"),
            requirement("rocm-sdk-core>=7.0"),
        ];
        let versions: Vec<String> = pinned_sdk_versions(&requirements)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(versions, ["7.10.0a20251124"]);
    }

    #[test]
    fn markers_decide_extras_and_admit_every_environment() {
        let cases = [
            ("rocm-sdk-core==1", &[][..], true),
            ("rocm-sdk-devel==1; extra == \"devel\"", &[][..], false),
            (
                "rocm-sdk-devel==1; extra == \"devel\"",
                &["devel"][..],
                true,
            ),
            ("rocm-sdk-devel==1; 'Devel' == extra", &["devel"][..], true),
            ("x==1; extra != 'devel'", &["devel"][..], false),
            (
                "rocm-sdk-device-gfx942==1; extra == 'device-gfx942' and sys_platform == 'linux'",
                &["device-gfx942"][..],
                true,
            ),
            (
                "rocm-sdk-device-gfx942==1; (extra == 'device-all' or extra == 'device-gfx942') and sys_platform == 'win32'",
                &["device-all"][..],
                true,
            ),
            (
                "x==1; (extra == 'a' or extra == 'b') and python_version >= '3.10'",
                &["c"][..],
                false,
            ),
            (
                "x==1; platform_machine not in 'arm64 aarch64'",
                &[][..],
                true,
            ),
            // Not a marker: counted as applying rather than leaving a dependency behind.
            ("x==1; extra == ", &[][..], true),
        ];
        for (text, given, expected) in cases {
            assert_eq!(
                applies_with(&requirement(text), &extras(given)),
                expected,
                "{text} with {given:?}"
            );
        }
    }
}
