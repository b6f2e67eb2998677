//! What a set must satisfy beyond each wheel on its own: unique file names, every project the
//! lock expects, and every `Requires-Dist` on a stack project resolving to a wheel of the set
//! or of the index (`--index-url`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pep440_rs::Version;

use super::Expectations;
use crate::index::Error as ClientError;
use crate::index::client::IndexClient;
use crate::wheel::filename::{dist_name_and_version, normalize_name};
use crate::wheel::problem::Problem;
use crate::wheel::verify::WheelReport;

/// Problems of the set; closure problems are added to the wheel whose requirement fails.
pub(super) fn check_set(
    reports: &mut [WheelReport],
    expect: &Expectations,
    index: Option<&IndexClient>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut by_file: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for report in reports.iter() {
        by_file
            .entry(&report.file)
            .or_default()
            .push(report.path.display().to_string());
    }
    for (file, paths) in by_file {
        if paths.len() > 1 {
            problems.push(Problem::DuplicateWheel {
                file: file.to_string(),
                paths,
            });
        }
    }
    let present: BTreeSet<String> = reports.iter().filter_map(|r| r.name.clone()).collect();
    for (wheel, expected) in &expect.wheels.versions {
        if !present.contains(wheel) {
            problems.push(Problem::MissingProject {
                project: expected.project.clone(),
                wheel: wheel.clone(),
                version: expected.version.to_string(),
            });
        }
    }

    // What the set provides: name -> [(version, extras, file)].
    let mut provided: HashMap<String, Vec<(Version, Vec<String>, String)>> = HashMap::new();
    for report in reports.iter() {
        if let (Some(name), Some(version)) = (&report.name, report.parsed_version()) {
            let extras = report
                .metadata
                .as_ref()
                .map(|m| m.provides_extra.clone())
                .unwrap_or_default();
            provided
                .entry(name.clone())
                .or_default()
                .push((version, extras, report.file.clone()));
        }
    }
    let mut index_cache: HashMap<String, Result<Vec<(Version, bool)>, ClientError>> =
        HashMap::new();
    for report in reports.iter_mut() {
        let Some(metadata) = &report.metadata else {
            continue;
        };
        let own = normalize_name(&metadata.name);
        for requirement in &metadata.requires_dist {
            let name = requirement.normalized_name();
            if name == own || !expect.inside_stack(&name) {
                continue;
            }
            if requirement.url.is_some() {
                report.problems.push(Problem::Unresolved {
                    requirement: requirement.raw.clone(),
                    detail: "a direct URL reference to a stack project cannot be checked or \
                             published; pin a version"
                        .into(),
                });
                continue;
            }
            let candidates = provided.get(&name).map(Vec::as_slice).unwrap_or_default();
            let matching: Vec<&(Version, Vec<String>, String)> = candidates
                .iter()
                .filter(|(version, _, _)| requirement.specifiers.contains(version))
                .collect();
            if !matching.is_empty() {
                for extra in &requirement.extras {
                    if !matching.iter().any(|(_, extras, _)| extras.contains(extra)) {
                        report.problems.push(Problem::MissingExtra {
                            requirement: requirement.raw.clone(),
                            extra: extra.clone(),
                            provider: matching[0].2.clone(),
                        });
                    }
                }
                continue;
            }
            if candidates.is_empty() && !expect.check_pins_outside_set {
                continue;
            }
            let in_set = if candidates.is_empty() {
                format!("the set has no {name} wheel")
            } else {
                let versions: Vec<String> =
                    candidates.iter().map(|(v, _, _)| v.to_string()).collect();
                format!("the set has {name} {}", versions.join(", "))
            };
            let Some(index) = index else {
                report.problems.push(Problem::Unresolved {
                    requirement: requirement.raw.clone(),
                    detail: format!("{in_set}, and no --index-url was given to look further"),
                });
                continue;
            };
            let versions = index_cache
                .entry(name.clone())
                .or_insert_with(|| index_versions(index, &name));
            // PEP 592: a yanked file only satisfies an exact pin.
            let exact = requirement.pinned_version().is_some();
            match versions {
                Ok(versions)
                    if versions.iter().any(|(v, yanked)| {
                        (exact || !yanked) && requirement.specifiers.contains(v)
                    }) => {}
                Ok(versions) => {
                    let listed = if versions.is_empty() {
                        "no files for it".to_string()
                    } else {
                        let mut shown: Vec<String> = versions
                            .iter()
                            .map(|(v, yanked)| {
                                if *yanked {
                                    format!("{v} (yanked)")
                                } else {
                                    v.to_string()
                                }
                            })
                            .collect();
                        shown.dedup();
                        format!("only {}", shown.join(", "))
                    };
                    report.problems.push(Problem::Unresolved {
                        requirement: requirement.raw.clone(),
                        detail: format!(
                            "{in_set}, and the index {}{}/ has {listed}",
                            index.display_url(),
                            normalize_name(&name)
                        ),
                    });
                }
                Err(error) => report.problems.push(Problem::Unresolved {
                    requirement: requirement.raw.clone(),
                    detail: format!("{in_set}, and the index could not be read: {error}"),
                }),
            }
        }
    }
    problems
}

/// Versions of a project's wheels and sdists on an index page, with their yanked flag.
fn index_versions(index: &IndexClient, name: &str) -> Result<Vec<(Version, bool)>, ClientError> {
    let files = index.project(name)?.unwrap_or_default();
    let mut versions: Vec<(Version, bool)> = files
        .iter()
        .filter_map(|file| {
            dist_name_and_version(&file.filename).map(|(_, version)| (version, file.yanked))
        })
        .collect();
    versions.sort();
    versions.dedup();
    Ok(versions)
}
