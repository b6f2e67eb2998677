//! Promotion: moving a tested set from a staging index to a release index, all or nothing.
//!
//! * [`evidence`] reads test reports (rockbuild JSON, JUnit XML) into evidence per wheel;
//! * [`waiver`] reads owned, expiring waivers;
//! * [`policy`] decides, as a pure function, whether the set may go (default deny);
//! * the version-ordering lint that stage and promote share is [`crate::index::ordering`];
//! * [`rewrite`] decides which wheels `--rewrite-version` rewrites and which go as they are;
//!
//! The copy itself is [`crate::store::publish::publish_set`], shared with `stage`: every
//! object first (verified), the destination index last, so a run stopped half way leaves the
//! published index as it was and a re-run completes it.

pub mod evidence;
pub mod policy;
pub mod rewrite;
pub mod waiver;

use crate::index::scan::Scan;
use crate::index::{dist_key, dist_name_and_version};
use crate::store::publish::{Item, SetObject, Source};

/// One wheel (or sdist) of a staged set, with its PEP 658 sidecar when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedFile {
    pub project: String,
    pub version: String,
    pub filename: String,
    pub file: SetObject,
    pub sidecar: Option<SetObject>,
}

/// The staged set as a scan of the source prefix found it.
pub fn staged_set(scan: &Scan) -> Vec<StagedFile> {
    let mut set = Vec::new();
    for project in &scan.projects {
        for file in &project.files {
            let key = dist_key(&project.name, &file.filename);
            let sidecar = match (scan.sidecars.get(&key), &file.metadata_sha256) {
                (Some(info), Some(sha)) => Some(SetObject {
                    key: info.key.clone(),
                    size: info.size,
                    sha256: sha.clone(),
                }),
                _ => None,
            };
            set.push(StagedFile {
                project: project.name.clone(),
                version: dist_name_and_version(&file.filename)
                    .map(|(_, v)| v.to_string())
                    .unwrap_or_default(),
                filename: file.filename.clone(),
                file: SetObject {
                    key,
                    size: file.size,
                    sha256: file.sha256.clone(),
                },
                sidecar,
            });
        }
    }
    set
}

/// The copies that move a staged set, file by file, to the same keys in the destination.
pub fn copy_items(set: &[StagedFile]) -> Vec<Item> {
    set.iter()
        .flat_map(|staged| std::iter::once(&staged.file).chain(&staged.sidecar))
        .map(|object| Item {
            object: object.clone(),
            source: Source::Copy {
                from_key: object.key.clone(),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_sets_list_sidecars_after_their_wheels() {
        let set = vec![StagedFile {
            project: "torch".into(),
            version: "2.9.0".into(),
            filename: "torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
            file: SetObject {
                key: "torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
                size: 1,
                sha256: "a".repeat(64),
            },
            sidecar: Some(SetObject {
                key: "torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl.metadata".into(),
                size: 1,
                sha256: "b".repeat(64),
            }),
        }];
        let keys: Vec<String> = copy_items(&set).into_iter().map(|i| i.object.key).collect();
        assert_eq!(
            keys,
            [
                "torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl",
                "torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl.metadata"
            ]
        );
    }
}
