//! What a set must satisfy beyond each wheel on its own: unique file names, every project the
//! lock expects, and every `Requires-Dist` on a stack project resolving to a wheel of the set
//! or of the index (`--index-url`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use pep440_rs::Version;

use super::Expectations;
use crate::index::Error as ClientError;
use crate::index::client::IndexClient;
use crate::wheel::companion::{Role, applies_with};
use crate::wheel::filename::{dist_name_and_version, normalize_name};
use crate::wheel::metadata::{CoreMetadata, Requirement};
use crate::wheel::problem::Problem;
use crate::wheel::verify::WheelReport;

/// Problems of the set; closure problems are added to the wheel whose requirement fails.
pub(super) fn check_set(
    reports: &mut [WheelReport],
    expect: &Expectations,
    index: Option<&IndexClient>,
) -> Vec<Problem> {
    let mut problems = duplicate_files(reports);
    problems.extend(missing_projects(reports, expect));
    problems.extend(missing_devices(reports, expect));
    let split: Vec<(usize, Vec<Problem>)> = reports
        .iter()
        .enumerate()
        .filter(|(_, r)| r.role == Role::Product)
        .map(|(i, r)| (i, kpack_split(r, reports)))
        .collect();
    for (index, found) in split {
        reports[index].problems.extend(found);
    }
    let mut closure = Closure {
        expect,
        index,
        provided: provided(reports),
        index_cache: HashMap::new(),
    };
    // A companion's own requirements are its SDK's business: the companions a set carries
    // are the closure of its products' pins (`super::companions::bring`).
    for report in reports.iter_mut().filter(|r| r.role == Role::Product) {
        let Some(metadata) = &report.metadata else {
            continue;
        };
        let own = normalize_name(&metadata.name);
        let mut found = match expect.wheels.recipes.get(&own) {
            Some(recipe) => closure.exact_pins(&recipe.pins, metadata),
            None => Vec::new(),
        };
        found.extend(
            metadata
                .requires_dist
                .iter()
                .flat_map(|requirement| closure.check(requirement, &own)),
        );
        report.problems.extend(found);
    }
    problems
}

/// The device packages a host wheel's `device-*` extras require, with the requirement.
fn device_requirements(metadata: &CoreMetadata) -> Vec<(String, &Requirement)> {
    let mut out = Vec::new();
    for extra in metadata
        .provides_extra
        .iter()
        .filter(|e| e.starts_with("device-"))
    {
        let with: BTreeSet<String> = [extra.clone()].into();
        for requirement in &metadata.requires_dist {
            let gated = requirement.marker.is_some()
                && !applies_with(requirement, &BTreeSet::new())
                && applies_with(requirement, &with);
            if gated {
                out.push((extra.clone(), requirement));
            }
        }
    }
    out
}

/// A host wheel of a kpack split against the set: every `device-*` extra resolves within the
/// set (its companions included), and each library's marker finds, in every device wheel the
/// extras name, a pack where it looks with the code objects of every one of its wrappers.
fn kpack_split(host: &WheelReport, reports: &[WheelReport]) -> Vec<Problem> {
    let Some(metadata) = &host.metadata else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let mut devices: BTreeMap<String, &WheelReport> = BTreeMap::new();
    for (extra, requirement) in device_requirements(metadata) {
        let name = requirement.normalized_name();
        let candidates: Vec<&WheelReport> = reports
            .iter()
            .filter(|r| r.name.as_deref() == Some(name.as_str()))
            .collect();
        let matching = candidates.iter().find(|r| {
            r.parsed_version()
                .is_some_and(|v| requirement.specifiers.contains(&v))
        });
        match matching {
            Some(device) => {
                devices.insert(name, device);
            }
            None => problems.push(Problem::DeviceExtra {
                extra,
                requirement: requirement.raw.clone(),
                detail: if candidates.is_empty() {
                    format!("the set has no {name} wheel")
                } else {
                    let versions: Vec<String> = candidates
                        .iter()
                        .filter_map(|r| r.version.clone())
                        .collect();
                    format!("the set has {name} {}", versions.join(", "))
                },
            }),
        }
    }
    for library in &host.libraries {
        let Some(marker) = &library.kpack else {
            continue;
        };
        let dir = library
            .entry
            .rsplit_once('/')
            .map_or("", |(dir, _)| dir)
            .to_string();
        for device in devices.values().filter(|d| d.role == Role::Product) {
            let found = device.packs.iter().find(|pack| {
                marker.search_paths.iter().any(|path| {
                    normalize_path(&format!("{dir}/{}", path.replace("@GFXARCH@", &pack.arch)))
                        .is_some_and(|p| p == pack.entry)
                })
            });
            let Some(pack) = found else {
                problems.push(Problem::KpackReference {
                    entry: library.entry.clone(),
                    detail: format!(
                        "{} has no pack where it looks ({})",
                        device.file,
                        marker.search_paths.join(", ")
                    ),
                });
                continue;
            };
            let missing: Vec<String> = (0..marker.wrappers)
                .map(|i| format!("{}#{i}", marker.kernel_name))
                .filter(|key| !pack.kernels.contains(key))
                .collect();
            if !missing.is_empty() {
                problems.push(Problem::KpackReference {
                    entry: library.entry.clone(),
                    detail: format!(
                        "{} of {} has no code object for {}",
                        pack.entry,
                        device.file,
                        missing.join(", ")
                    ),
                });
            }
        }
    }
    problems
}

/// `a/b/../c` → `a/c`; `None` when it climbs above the root.
fn normalize_path(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// One distribution twice in one set: the same file name from two directories, or two
/// spellings installers take for one file (`torch-1.0` and `torch-01.00`, `Foo_Bar` and
/// `foo.bar`: PEP 503 names, PEP 440 versions, the same tags), of which pip would install
/// whichever it met last.
fn duplicate_files(reports: &[WheelReport]) -> Vec<Problem> {
    let mut by_identity: BTreeMap<String, (&str, Vec<String>)> = BTreeMap::new();
    for report in reports {
        let identity = crate::wheel::filename::distribution_identity(&report.file)
            .unwrap_or_else(|| report.file.clone());
        by_identity
            .entry(identity)
            .or_insert_with(|| (report.file.as_str(), Vec::new()))
            .1
            .push(report.path.display().to_string());
    }
    by_identity
        .into_values()
        .filter(|(_, paths)| paths.len() > 1)
        .map(|(file, paths)| Problem::DuplicateWheel {
            file: file.to_string(),
            paths,
        })
        .collect()
}

/// Projects the lock's build record lists that the set has no wheel of.
fn missing_projects(reports: &[WheelReport], expect: &Expectations) -> Vec<Problem> {
    let present: BTreeSet<String> = reports.iter().filter_map(|r| r.name.clone()).collect();
    expect
        .wheels
        .versions
        .iter()
        .filter(|(wheel, _)| !present.contains(*wheel))
        .map(|(wheel, expected)| Problem::MissingProject {
            project: expected.project.clone(),
            wheel: wheel.clone(),
            version: expected.version.to_string(),
        })
        .collect()
}

/// Device wheels a multi-arch lock's record requires that the set has not at the project's
/// version: a target the split lost, or a device wheel left out of the set.
fn missing_devices(reports: &[WheelReport], expect: &Expectations) -> Vec<Problem> {
    expect
        .devices
        .iter()
        .filter_map(|(wheel, expected)| {
            let same_name: Vec<&WheelReport> = reports
                .iter()
                .filter(|r| r.name.as_deref() == Some(wheel.as_str()))
                .collect();
            if same_name
                .iter()
                .any(|r| r.parsed_version().as_ref() == Some(&expected.version))
            {
                return None;
            }
            Some(Problem::MissingDeviceWheel {
                project: expected.project.clone(),
                target: expected.target.clone(),
                wheel: wheel.clone(),
                version: expected.version.to_string(),
                found: same_name.iter().filter_map(|r| r.version.clone()).collect(),
            })
        })
        .collect()
}

/// A wheel of the set: its version, the extras it provides (unknown for a source
/// distribution, whose extras are decided when it is built), its file name.
type Provided = (Version, Option<Vec<String>>, String);

/// What the set provides, by normalized name.
fn provided(reports: &[WheelReport]) -> HashMap<String, Vec<Provided>> {
    let mut provided: HashMap<String, Vec<Provided>> = HashMap::new();
    for report in reports {
        if let (Some(name), Some(version)) = (&report.name, report.parsed_version()) {
            let extras = report.metadata.as_ref().map(|m| m.provides_extra.clone());
            provided
                .entry(name.clone())
                .or_default()
                .push((version, extras, report.file.clone()));
        }
    }
    provided
}

/// Resolving `Requires-Dist` on stack projects: in the set, else on the index (each project
/// page read once).
struct Closure<'a> {
    expect: &'a Expectations,
    index: Option<&'a IndexClient>,
    provided: HashMap<String, Vec<Provided>>,
    index_cache: HashMap<String, Result<Vec<(Version, bool)>, ClientError>>,
}

impl Closure<'_> {
    /// Each wheel the recipe says this one pins, when the set holds exactly one version of
    /// it, must be required as `==` that version.
    fn exact_pins(&self, pins: &BTreeSet<String>, metadata: &CoreMetadata) -> Vec<Problem> {
        let mut problems = Vec::new();
        for dist in pins {
            let Some([(version, _, _)]) = self.provided.get(dist).map(Vec::as_slice) else {
                continue;
            };
            let on_it: Vec<&Requirement> = metadata
                .requires_dist
                .iter()
                .filter(|r| r.normalized_name() == *dist)
                .collect();
            if !on_it
                .iter()
                .any(|r| r.pinned_version().is_some_and(|v| v == version))
            {
                problems.push(Problem::PinNotExact {
                    dist: dist.clone(),
                    version: version.to_string(),
                    found: on_it.iter().map(|r| r.raw.clone()).collect(),
                });
            }
        }
        problems
    }

    /// The problems of one requirement of wheel `own`: none when it resolves.
    fn check(&mut self, requirement: &Requirement, own: &str) -> Vec<Problem> {
        let name = requirement.normalized_name();
        if name == own || !self.expect.inside_stack(&name) {
            return Vec::new();
        }
        let unresolved = |detail: String| {
            vec![Problem::Unresolved {
                requirement: requirement.raw.clone(),
                detail,
            }]
        };
        if requirement.url.is_some() {
            return unresolved(
                "a direct URL reference to a stack project cannot be checked or published; pin \
                 a version"
                    .into(),
            );
        }
        let candidates = self
            .provided
            .get(&name)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let matching: Vec<&Provided> = candidates
            .iter()
            .filter(|(version, _, _)| requirement.specifiers.contains(version))
            .collect();
        if !matching.is_empty() {
            return requirement
                .extras
                .iter()
                .filter(|extra| {
                    !matching.iter().any(|(_, extras, _)| {
                        extras.as_ref().is_none_or(|extras| extras.contains(extra))
                    })
                })
                .map(|extra| Problem::MissingExtra {
                    requirement: requirement.raw.clone(),
                    extra: extra.clone(),
                    provider: matching[0].2.clone(),
                })
                .collect();
        }
        if candidates.is_empty() && !self.expect.check_pins_outside_set {
            return Vec::new();
        }
        let in_set = if candidates.is_empty() {
            format!("the set has no {name} wheel")
        } else {
            let versions: Vec<String> = candidates.iter().map(|(v, _, _)| v.to_string()).collect();
            format!("the set has {name} {}", versions.join(", "))
        };
        let Some(index) = self.index else {
            return unresolved(format!(
                "{in_set}, and no --index-url was given to look further"
            ));
        };
        let versions = self
            .index_cache
            .entry(name.clone())
            .or_insert_with(|| index_versions(index, &name));
        // PEP 592: a yanked file only satisfies an exact pin.
        let exact = requirement.pinned_version().is_some();
        match versions {
            Ok(versions)
                if versions.iter().any(|(v, yanked)| {
                    (exact || !yanked) && requirement.specifiers.contains(v)
                }) =>
            {
                Vec::new()
            }
            Ok(versions) => unresolved(format!(
                "{in_set}, and the index {}{}/ has {}",
                index.display_url(),
                normalize_name(&name),
                listed(versions)
            )),
            Err(error) => unresolved(format!(
                "{in_set}, and the index could not be read: {error}"
            )),
        }
    }
}

/// What an index page offers, for a message: `only 1.0, 1.1 (yanked)`.
fn listed(versions: &[(Version, bool)]) -> String {
    if versions.is_empty() {
        return "no files for it".to_string();
    }
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
