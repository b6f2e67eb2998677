//! The version-ordering lint. pip installs the highest PEP 440 version, and PEP 440 compares
//! local version segments that are not pure numbers as strings: `+rocm7.15.0` sorts above
//! `+rocm10.1.0` ('7' > '1'), a final `+rocm7.0.0` sorts below `+rocm7.0.0.dev1` (the longer
//! local label wins). So publishing a new build of the same upstream version can leave pip
//! choosing the old one (TheRock#7183, #1056, #2392). Before anything is written, every new
//! version must sort above each published version with the same public version.
//!
//! Builds of other public versions are left alone: an older release line (2.8.x) sorting
//! below a newer one (2.9.x) is what PEP 440 means.

use std::cmp::Ordering;

use pep440_rs::{LocalSegment, Version};

use crate::index::dist_name_and_version;
use crate::index::scan::Placed;

/// A project version, as found in file names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Release {
    /// Normalized project name.
    pub project: String,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderingProblem {
    pub project: String,
    pub new: String,
    pub existing: String,
    pub explanation: String,
}

impl std::fmt::Display for OrderingProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{project} {new} would sort below {project} {existing}, which is already published: {explanation}; \
             pip would keep installing {existing}",
            project = self.project,
            new = self.new,
            existing = self.existing,
            explanation = self.explanation
        )
    }
}

/// The releases of the distributions a store listing holds in the index layout.
pub fn published(placed: &[Placed]) -> Vec<Release> {
    placed
        .iter()
        .filter_map(|p| {
            let filename = p.object.key.rsplit('/').next()?;
            dist_name_and_version(filename).map(|(_, version)| Release {
                project: p.project.clone(),
                version: version.to_string(),
            })
        })
        .collect()
}

/// Checks `new` against `published`: one problem per (new, published) pair that sorts wrong.
/// Versions in both lists (a re-run) are not compared with themselves; unparsable versions
/// are skipped (verification rejects them earlier).
pub fn check(new: &[Release], published: &[Release]) -> Vec<OrderingProblem> {
    let mut problems = Vec::new();
    for candidate in new {
        let Ok(new_version) = candidate.version.parse::<Version>() else {
            continue;
        };
        for existing in published.iter().filter(|p| p.project == candidate.project) {
            let Ok(old_version) = existing.version.parse::<Version>() else {
                continue;
            };
            if old_version == new_version
                || new.iter().any(|n| {
                    n.project == existing.project
                        && n.version.parse::<Version>().is_ok_and(|v| v == old_version)
                })
                || old_version.clone().without_local() != new_version.clone().without_local()
            {
                continue;
            }
            if new_version < old_version
                && !problems.iter().any(|p: &OrderingProblem| {
                    p.new == candidate.version
                        && p.existing == existing.version
                        && p.project == candidate.project
                })
            {
                problems.push(OrderingProblem {
                    project: candidate.project.clone(),
                    new: candidate.version.clone(),
                    existing: existing.version.clone(),
                    explanation: explain(&new_version, &old_version),
                });
            }
        }
    }
    problems
}

/// Why `new` sorts below `old` when both share a public version: the first local segment
/// pair that decides it.
fn explain(new: &Version, old: &Version) -> String {
    let (a, b) = (new.local(), old.local());
    for (x, y) in a.iter().zip(b) {
        match (x, y) {
            (LocalSegment::String(x), LocalSegment::String(y)) if x != y => {
                return format!(
                    "PEP 440 compares the local segments '{x}' and '{y}' as strings, character by character, \
                     so '{x}' < '{y}' whatever the numbers in them mean (TheRock#7183); put numbers in their own \
                     dot-separated segments (e.g. 'rocm.10.1.0') so they compare as numbers"
                );
            }
            (LocalSegment::Number(x), LocalSegment::Number(y)) if x != y => {
                return format!("its local segment {x} is lower than {y}");
            }
            (LocalSegment::String(x), LocalSegment::Number(y)) => {
                return format!(
                    "a text segment ('{x}') sorts below a number ({y}) in PEP 440 local versions"
                );
            }
            (LocalSegment::Number(_), LocalSegment::String(_)) => {}
            _ => {}
        }
    }
    match a.len().cmp(&b.len()) {
        Ordering::Less => format!(
            "its local label '+{}' is a prefix of '+{}', and the longer local label sorts higher \
             (a final build published after a dev build of the same version; TheRock#2392)",
            join(a),
            join(b)
        ),
        _ => "PEP 440 orders it lower".to_string(),
    }
}

fn join(local: &[LocalSegment]) -> String {
    local
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn releases(list: &[(&str, &str)]) -> Vec<Release> {
        list.iter()
            .map(|(p, v)| Release {
                project: (*p).into(),
                version: (*v).into(),
            })
            .collect()
    }

    #[test]
    fn table() {
        let cases: Vec<(&str, &str, &str, Option<&str>)> = vec![
            // (new, published, project, explanation prefix when refused)
            (
                "2.10.0+rocm10.1.0",
                "2.10.0+rocm7.15.0",
                "torch",
                Some("PEP 440 compares the local segments 'rocm10' and 'rocm7' as strings"),
            ),
            ("2.10.0+rocm7.15.0", "2.10.0+rocm7.2.0", "torch", None),
            ("2.10.0+rocm.10.1.0", "2.10.0+rocm.7.15.0", "torch", None),
            (
                "2.9.0+rocm7.0.0",
                "2.9.0+rocm7.0.0.dev20250801",
                "torch",
                Some("its local label '+rocm7.0.0' is a prefix of '+rocm7.0.0.dev20250801'"),
            ),
            (
                "2.9.0+rocm7.0.0rc20250715",
                "2.9.0+rocmsdk20250709",
                "torch",
                Some("PEP 440 compares the local segments 'rocm7' and 'rocmsdk20250709'"),
            ),
            // Other public versions are PEP 440's business, not a mistake.
            ("2.8.1+rocm7.1.0", "2.9.0+rocm7.0.0", "torch", None),
            (
                "2.10.0+rocm10.1.0",
                "2.10.0+rocm7.15.0",
                "torchvision-other",
                None,
            ),
            // The same version again (a re-run) is not compared with itself.
            ("2.10.0+rocm7.15.0", "2.10.0+rocm7.15.0", "torch", None),
            (
                "2.9.0+rocm7.1",
                "2.9.0+rocm7.1.post3",
                "torch",
                Some("its local label '+rocm7.1' is a prefix"),
            ),
            ("1.0+7", "1.0+ab", "torch", None),
            (
                "1.0+ab",
                "1.0+7",
                "torch",
                Some("a text segment ('ab') sorts below a number (7)"),
            ),
            (
                "1.0+7",
                "1.0+12",
                "torch",
                Some("its local segment 7 is lower than 12"),
            ),
        ];
        for (new, old, project, expected) in cases {
            let problems = check(&releases(&[("torch", new)]), &releases(&[(project, old)]));
            match expected {
                None => assert!(problems.is_empty(), "{new} vs {old}: {problems:?}"),
                Some(prefix) => {
                    assert_eq!(problems.len(), 1, "{new} vs {old}");
                    assert!(
                        problems[0].explanation.starts_with(prefix),
                        "{new} vs {old}: {}",
                        problems[0].explanation
                    );
                }
            }
        }
    }

    #[test]
    fn message_names_both_versions_and_the_consequence() {
        let problems = check(
            &releases(&[("torch", "2.10.0+rocm10.1.0")]),
            &releases(&[("torch", "2.10.0+rocm7.15.0")]),
        );
        let text = problems[0].to_string();
        assert!(text.starts_with("torch 2.10.0+rocm10.1.0 would sort below torch 2.10.0+rocm7.15.0, which is already published: "), "{text}");
        assert!(
            text.ends_with("pip would keep installing 2.10.0+rocm7.15.0"),
            "{text}"
        );
    }

    #[test]
    fn versions_of_the_new_set_are_not_held_against_each_other() {
        let new = releases(&[
            ("torch", "2.10.0+rocm10.1.0"),
            ("torch", "2.10.0+rocm7.15.0"),
        ]);
        assert!(check(&new, &releases(&[("torch", "2.10.0+rocm7.15.0")])).is_empty());
    }
}
