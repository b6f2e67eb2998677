//! Which wheels a smoke run installs: each stack project's locked version (or its newest)
//! as the index offers it, with the hash of every file of that version.

use std::fmt::Write as _;

use indexmap::IndexMap;

use super::Error;
use crate::index::client::{IndexClient, RemoteFile};
use crate::index::dist_name_and_version;
use crate::stack::{Project, Stack};

/// One project of the set as the index offers it.
#[derive(Clone, Debug)]
pub struct Selected {
    pub project: Project,
    /// The project's wheel (distribution name) and its smoke code.
    pub wheel: String,
    pub smoke: String,
    pub version: String,
    /// Every file of that version (pip picks the one matching this interpreter).
    pub files: Vec<RemoteFile>,
    /// From a multi-arch index: the project's device wheels of the tested targets, installed
    /// with it (what `<wheel>[device-<target>]` adds).
    pub devices: Vec<Device>,
}

/// A device wheel of a split product (`amd-torch-device-gfx906`) at the product's version.
#[derive(Clone, Debug)]
pub struct Device {
    pub name: String,
    pub files: Vec<RemoteFile>,
}

/// Picks the set from the index: each stack project's locked version (or its newest), with
/// the hashes of every file of that version. A locked project missing from the index is an
/// error that lists what the index has (TheRock#4746).
pub fn select(
    stack: &Stack,
    client: &IndexClient,
    versions: Option<&IndexMap<String, String>>,
    device_targets: &[String],
) -> Result<(Vec<Selected>, Vec<String>), Error> {
    let mut selected = Vec::new();
    let mut notes = Vec::new();
    for project in stack.projects.values() {
        let (Some(wheel), Some(smoke)) = (&project.wheel, &project.smoke) else {
            notes.push(format!(
                "{}: makes no wheel; nothing to install",
                project.name
            ));
            continue;
        };
        let locked = versions.and_then(|v| v.get(&project.name));
        if versions.is_some() && locked.is_none() {
            notes.push(format!(
                "{}: not in the lock's build record; not tested",
                project.name
            ));
            continue;
        }
        let files = client
            .project(wheel)
            .map_err(|source| Error::Page {
                wheel: wheel.clone(),
                url: client.display_url(),
                source,
            })?
            .unwrap_or_default();
        let files: Vec<RemoteFile> = files
            .into_iter()
            .filter(|f| !f.yanked && f.filename.ends_with(".whl"))
            .collect();
        let mut available: Vec<(pep440_rs::Version, String)> = files
            .iter()
            .filter_map(|f| dist_name_and_version(&f.filename))
            .map(|(_, v)| (v.clone(), v.to_string()))
            .collect();
        available.sort();
        available.dedup_by(|a, b| a.0 == b.0);
        let version = match locked {
            Some(version) => {
                let wanted: pep440_rs::Version =
                    version.parse().map_err(|e: pep440_rs::VersionParseError| {
                        Error::LockVersion {
                            project: project.name.clone(),
                            version: version.clone(),
                            reason: e.to_string(),
                        }
                    })?;
                if !available.iter().any(|(v, _)| *v == wanted) {
                    let have: Vec<&str> = available.iter().map(|(_, text)| text.as_str()).collect();
                    return Err(Error::NotOnIndex {
                        wheel: wheel.clone(),
                        version: version.clone(),
                        url: client.display_url(),
                        have: if have.is_empty() {
                            "no wheels of it".to_string()
                        } else {
                            have.join(", ")
                        },
                    });
                }
                wanted
            }
            None => match available.last() {
                Some((newest, _)) => newest.clone(),
                None => {
                    notes.push(format!(
                        "{}: no {wheel} wheels on the index; not tested",
                        project.name
                    ));
                    continue;
                }
            },
        };
        let files: Vec<RemoteFile> = files
            .into_iter()
            .filter(|f| {
                dist_name_and_version(&f.filename).map(|(_, v)| v).as_ref() == Some(&version)
            })
            .collect();
        check_hashes(&files, client)?;
        let devices = devices(wheel, &version, client, device_targets)?;
        selected.push(Selected {
            project: project.clone(),
            wheel: wheel.clone(),
            smoke: smoke.clone(),
            version: version.to_string(),
            files,
            devices,
        });
    }
    if selected.is_empty() {
        return Err(Error::NothingOnIndex {
            wheels: stack
                .projects
                .values()
                .filter_map(|p| p.wheel.as_deref())
                .collect::<Vec<_>>()
                .join(", "),
            url: client.display_url(),
        });
    }
    Ok((selected, notes))
}

fn check_hashes(files: &[RemoteFile], client: &IndexClient) -> Result<(), Error> {
    match files.iter().find(|f| f.sha256.is_none()) {
        Some(unhashed) => Err(Error::NoHash {
            file: unhashed.filename.clone(),
            url: client.display_url(),
        }),
        None => Ok(()),
    }
}

/// The device wheels of `project` at `version` for each target, named as the reference's
/// splitter names them (`amd-<wheel>-device-<target>`). A project the index has no device
/// packages of ships whole (triton, audio, apex): nothing to add. One that has them but not
/// for this version and target is an error: its host wheel would run without its kernels.
fn devices(
    wheel: &str,
    version: &pep440_rs::Version,
    client: &IndexClient,
    targets: &[String],
) -> Result<Vec<Device>, Error> {
    let prefix = crate::multiarch::device::device_prefix(wheel);
    let mut devices = Vec::new();
    for target in targets {
        let name = crate::multiarch::device::device_name(&prefix, target);
        let page = client.project(&name).map_err(|source| Error::Page {
            wheel: name.clone(),
            url: client.display_url(),
            source,
        })?;
        let Some(files) = page else {
            continue;
        };
        let (files, others): (Vec<RemoteFile>, Vec<RemoteFile>) = files
            .into_iter()
            .filter(|f| !f.yanked && f.filename.ends_with(".whl"))
            .partition(|f| {
                dist_name_and_version(&f.filename).map(|(_, v)| v).as_ref() == Some(version)
            });
        if files.is_empty() {
            let mut have: Vec<String> = others
                .iter()
                .filter_map(|f| dist_name_and_version(&f.filename))
                .map(|(_, v)| v.to_string())
                .collect();
            have.dedup();
            return Err(Error::DeviceNotOnIndex {
                device: name,
                product: wheel.to_string(),
                version: version.to_string(),
                url: client.display_url(),
                have: if have.is_empty() {
                    "no wheels of it".into()
                } else {
                    have.join(", ")
                },
            });
        }
        check_hashes(&files, client)?;
        devices.push(Device { name, files });
    }
    Ok(devices)
}

/// The hash-pinned requirements of the set (pip's `--require-hashes` format).
pub fn requirements(selected: &[Selected], with_hashes: bool) -> String {
    let mut out = String::new();
    for item in selected {
        let lines = std::iter::once((&item.wheel, &item.files))
            .chain(item.devices.iter().map(|d| (&d.name, &d.files)));
        for (name, files) in lines {
            let _ = write!(out, "{name}=={}", item.version);
            if with_hashes {
                for file in files {
                    if let Some(sha) = &file.sha256 {
                        let _ = write!(out, " \\\n    --hash=sha256:{sha}");
                    }
                }
            }
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_pin_versions_and_every_hash() {
        let stack = Stack::load(None).expect("stack");
        let file = |name: &str, sha: char| RemoteFile {
            filename: name.into(),
            url: format!("http://x/{name}"),
            sha256: Some(sha.to_string().repeat(64)),
            requires_python: None,
            metadata: None,
            size: None,
            yanked: false,
        };
        let selected = vec![Selected {
            project: stack.projects["torch"].clone(),
            wheel: "torch".into(),
            smoke: "import torch".into(),
            version: "2.9.0+rocm7.0.0".into(),
            files: vec![
                file("torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl", 'a'),
                file("torch-2.9.0+rocm7.0.0-cp312-cp312-linux_x86_64.whl", 'b'),
            ],
            devices: Vec::new(),
        }];
        assert_eq!(
            requirements(&selected, true),
            format!(
                "torch==2.9.0+rocm7.0.0 \\\n    --hash=sha256:{} \\\n    --hash=sha256:{}\n",
                "a".repeat(64),
                "b".repeat(64)
            )
        );
        assert_eq!(requirements(&selected, false), "torch==2.9.0+rocm7.0.0\n");
    }
}
