//! After hipify, no source may still include a CUDA-only header that has a HIP equivalent.
//! When one does, hipify skipped or mistranslated that file, and the build would fail much
//! later with "cuda_runtime_api.h not found" (TheRock#7266, #7591) — or worse, succeed
//! without GPU code. Scanned: every file hipify changed or created, plus every source under
//! the project's `check-paths`; files matching `allow` globs (the stack config's and the
//! shipped configs/leftover-cuda.yaml's) are exempt.
//!
//! PyTorch's hipify translates names, not conditions, so a hipified file keeps its CUDA-only
//! branches (`#ifdef CUDART_VERSION`, the `#else` of `#if defined(USE_ROCM)`); includes there
//! are not leftovers. The check evaluates each include's enclosing `#if`s with what every ROCm
//! build defines and never defines (configs/leftover-cuda.yaml) and skips an include only
//! when its branch is certainly off; an undecided branch is reported with its condition.

mod cond;
mod lex;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use rayon::prelude::*;
use serde::Deserialize;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::{ConfigError, ConfigSource};
use cond::{Macro, Tri};

/// The shipped rules: macros of a ROCm build and the allow list, each entry with its reason.
pub const RULES_FILE: &str = include_str!("../../configs/leftover-cuda.yaml");
const RULES_NAME: &str = "configs/leftover-cuda.yaml";

/// Extensions of C/C++/CUDA/HIP sources and headers.
const SOURCE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cpp", "cxx", "cu", "cuh", "h", "hh", "hpp", "hxx", "hip", "inl",
];

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Rules(#[from] ConfigError),
    #[error("hipify allow glob `{glob}` is invalid: {source}")]
    InvalidAllowGlob {
        glob: String,
        source: globset::Error,
    },
    #[error("listing {dir} for the leftover-CUDA check: {source}")]
    Walk {
        dir: PathBuf,
        source: walkdir::Error,
    },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::Rules(_) | Error::InvalidAllowGlob { .. } => ExitStatus::Usage,
            Error::Walk { .. } => ExitStatus::Failure,
        }
    }
}

/// One surviving CUDA include.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    pub file: String,
    pub line: usize,
    pub header: String,
    /// The innermost enclosing condition rockbuild could not decide for ROCm, if any.
    pub guard: Option<String>,
}

impl std::fmt::Display for Leftover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: still includes <{}>",
            self.file, self.line, self.header
        )?;
        if let Some(guard) = &self.guard {
            write!(f, " (inside `{guard}`, undecided on ROCm)")?;
        }
        Ok(())
    }
}

/// What a ROCm build defines and never defines, and which files are exempt.
#[derive(Clone, Debug)]
pub struct Rules {
    defined: BTreeSet<String>,
    undefined: BTreeSet<String>,
    allow: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    schema: u32,
    defined: Vec<MacroEntry>,
    undefined: Vec<MacroEntry>,
    allow: Vec<AllowEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MacroEntry {
    name: String,
    why: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowEntry {
    path: String,
    why: String,
}

impl Rules {
    /// The rules rockbuild ships (configs/leftover-cuda.yaml, compiled in).
    pub fn shipped() -> Result<Rules, Error> {
        Rules::parse(&ConfigSource::embedded(RULES_NAME, RULES_FILE))
    }

    fn parse(source: &ConfigSource) -> Result<Rules, Error> {
        let file: RulesFile = source.parse()?;
        // The `nth` line containing `needle` (entries are found by their text).
        let at_nth = |needle: &str, nth: usize, message: String| ConfigError {
            file: source.name.clone(),
            line: source
                .text
                .lines()
                .enumerate()
                .filter(|(_, line)| line.contains(needle))
                .nth(nth)
                .map(|(i, _)| i + 1),
            column: None,
            message,
        };
        let at = |needle: &str, message: String| at_nth(needle, 0, message);
        source.check_schema(file.schema)?;
        let mut seen = BTreeSet::new();
        for entry in file.defined.iter().chain(&file.undefined) {
            let needle = format!("name: {}", entry.name);
            let identifier = entry
                .name
                .starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && entry
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !identifier {
                return Err(at(&needle, format!("`{}` is not a macro name", entry.name)).into());
            }
            if !seen.insert(entry.name.as_str()) {
                return Err(at_nth(
                    &needle,
                    1,
                    format!(
                        "macro `{}` is listed twice (defined and undefined, or repeated)",
                        entry.name
                    ),
                )
                .into());
            }
            if entry.why.trim().is_empty() {
                return Err(at(&needle, format!("macro `{}` needs a `why`", entry.name)).into());
            }
        }
        for entry in &file.allow {
            if entry.why.trim().is_empty() {
                let needle = format!("path: {}", entry.path);
                return Err(at(
                    &needle,
                    format!("allowed path `{}` needs a `why`", entry.path),
                )
                .into());
            }
        }
        let names = |entries: &[MacroEntry]| entries.iter().map(|e| e.name.clone()).collect();
        Ok(Rules {
            defined: names(&file.defined),
            undefined: names(&file.undefined),
            allow: file.allow.into_iter().map(|entry| entry.path).collect(),
        })
    }

    fn macro_state(&self, name: &str) -> Macro {
        if self.defined.contains(name) {
            Macro::Defined
        } else if self.undefined.contains(name) {
            Macro::Undefined
        } else {
            Macro::Unknown
        }
    }
}

/// Builds the allow-list matcher from the stack config's globs plus the shipped ones; a bad
/// glob is a config error naming it.
pub fn allow_set(globs: &[String]) -> Result<GlobSet, Error> {
    let rules = Rules::shipped()?;
    let mut builder = GlobSetBuilder::new();
    for glob in globs.iter().chain(&rules.allow) {
        builder.add(Glob::new(glob).map_err(|source| Error::InvalidAllowGlob {
            glob: glob.clone(),
            source,
        })?);
    }
    builder.build().map_err(|source| Error::InvalidAllowGlob {
        glob: globs.join(", "),
        source,
    })
}

/// Scans `changed` (paths relative to `root`) and every source under `check_paths`.
pub fn scan(
    root: &Path,
    changed: &[String],
    check_paths: &[String],
    allow: &GlobSet,
    headers: &[String],
) -> Result<Vec<Leftover>, Error> {
    let rules = Rules::shipped()?;
    let mut files: BTreeSet<String> = changed.iter().cloned().collect();
    for dir in check_paths {
        let base = root.join(dir);
        if !base.exists() {
            continue;
        }
        // Links are not followed, the check path's own included: a committed `csrc -> /`
        // would scan the host.
        for entry in walkdir::WalkDir::new(&base)
            .follow_root_links(false)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".git")
        {
            let entry = entry.map_err(|source| Error::Walk {
                dir: base.clone(),
                source,
            })?;
            if entry.file_type().is_file()
                && let Ok(relative) = entry.path().strip_prefix(root)
            {
                files.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    // Files apart, on every core: after a warm checkout this is most of what is left to do.
    let files: Vec<String> = files.into_iter().collect();
    let found: Vec<Vec<Leftover>> = files
        .par_iter()
        .map(|file| {
            let is_source = Path::new(file)
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| SOURCE_EXTENSIONS.contains(&e));
            if !is_source || allow.is_match(file) {
                return Vec::new();
            }
            // Read as the tree's content: a file deleted by hipify, a link or a file too large
            // for a source is not scanned.
            let Ok(Some(bytes)) =
                crate::input::read_tree_file(root, file, crate::input::SOURCE_FILE)
            else {
                return Vec::new();
            };
            scan_text(file, &String::from_utf8_lossy(&bytes), headers, &rules)
        })
        .collect();
    Ok(found.into_iter().flatten().collect())
}

/// One `#if` group: the branch being read and whether an earlier branch may have been taken.
struct Group {
    /// The directive that opened the current branch, as written (for the report).
    branch: String,
    /// Is the current branch on?
    current: Tri,
    /// Was any earlier branch of this group on?
    earlier: Tri,
}

/// The CUDA-only includes of one file's text that a ROCm build may compile.
pub fn scan_text(file: &str, text: &str, headers: &[String], rules: &Rules) -> Vec<Leftover> {
    let mut found = Vec::new();
    let mut groups: Vec<Group> = Vec::new();
    // `#define`/`#undef` seen in the file take precedence over the rules.
    let mut local: HashMap<String, Macro> = HashMap::new();
    for line in lex::logical_lines(text) {
        let Some((directive, rest)) = line.directive() else {
            continue;
        };
        let lookup = |name: &str| {
            local
                .get(name)
                .copied()
                .unwrap_or_else(|| rules.macro_state(name))
        };
        let reachable = groups.iter().fold(Tri::On, |on, g| on.and(g.current));
        let written = || {
            format!("#{directive} {rest}")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        match directive {
            "if" | "ifdef" | "ifndef" => {
                let on = condition(directive, rest, &lookup);
                groups.push(Group {
                    branch: written(),
                    current: on,
                    earlier: on,
                });
            }
            "elif" | "elifdef" | "elifndef" | "else" => {
                let Some(group) = groups.last_mut() else {
                    continue; // unbalanced: the compiler will say so
                };
                let on = if directive == "else" {
                    Tri::On
                } else {
                    condition(directive, rest, &lookup)
                };
                group.current = group.earlier.not().and(on);
                group.earlier = group.earlier.or(on);
                group.branch = if directive == "else" {
                    format!("#else after {}", group.branch)
                } else {
                    written()
                };
            }
            "endif" => {
                groups.pop();
            }
            "define" | "undef" if reachable != Tri::Off => {
                let name = first_identifier(rest);
                let now = if directive == "define" {
                    Macro::Defined
                } else {
                    Macro::Undefined
                };
                let state = if reachable == Tri::On || lookup(name) == now {
                    now
                } else {
                    Macro::Unknown
                };
                local.insert(name.to_string(), state);
            }
            "include" if reachable != Tri::Off => {
                let Some(header) = included_header(rest) else {
                    continue;
                };
                if headers.iter().any(|h| h == header) {
                    let guard = groups
                        .iter()
                        .rev()
                        .find(|g| g.current == Tri::Undecided)
                        .map(|g| g.branch.clone());
                    found.push(Leftover {
                        file: file.to_string(),
                        line: line.number,
                        header: header.to_string(),
                        guard,
                    });
                }
            }
            _ => {}
        }
    }
    found
}

/// The truth of an `#if`/`#ifdef`/`#ifndef`/`#elif…` condition on ROCm.
fn condition(directive: &str, rest: &str, lookup: &dyn Fn(&str) -> Macro) -> Tri {
    match directive {
        "ifdef" | "elifdef" => lookup(first_identifier(rest)).is_defined(),
        "ifndef" | "elifndef" => lookup(first_identifier(rest)).is_defined().not(),
        _ => cond::eval(rest, lookup),
    }
}

fn first_identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// `<x.h>` / `"x.h"` (after `#include`) → `x.h`.
fn included_header(rest: &str) -> Option<&str> {
    let close = match rest.chars().next()? {
        '<' => '>',
        '"' => '"',
        _ => return None,
    };
    let inner = &rest[1..];
    inner.find(close).map(|end| &inner[..end])
}

#[cfg(test)]
mod tests;
