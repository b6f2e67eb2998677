//! Publishing a set of objects into an index prefix, as `stage` and `promote` both do:
//! plan first (a pure function of what the destination holds: copy, already there, or a
//! conflict that stops everything before the first byte moves), then move every object in
//! parallel, verified, and rewrite the index pages last. A run stopped between the objects
//! and the pages leaves the published pages as they were; a re-run skips what is already
//! there and completes.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use super::transfer::{self, TransferError};
use super::{Body, ObjectInfo, Outcome, Storage, StoreError, copy_immutable, put_immutable};
use crate::context::Context;
use crate::index::render::{Page, page_keys};
use crate::index::scan::{self, Scan, ScanError};
use crate::index::{dist_key, metadata_key};
use crate::ui::human_bytes;
use crate::wheel::verify::WheelReport;

/// One object of a set: where it goes and what its bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetObject {
    /// Key in the destination (relative to its prefix).
    pub key: String,
    pub size: u64,
    pub sha256: String,
}

/// Where an object's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// This key of the source store (promotion: a server-side copy where the backend can).
    Copy { from_key: String },
    /// A local file (a verified wheel).
    File { path: PathBuf },
    /// Bytes in memory (a PEP 658 sidecar: the wheel's METADATA, byte for byte).
    Bytes { bytes: Vec<u8> },
}

impl Source {
    fn verb(&self) -> &'static str {
        match self {
            Source::Copy { .. } => "copy",
            Source::File { .. } | Source::Bytes { .. } => "upload",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub object: SetObject,
    pub source: Source,
}

/// What publishing will do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub transfers: Vec<Item>,
    /// Already in the destination with the same bytes (a re-run): skipped.
    pub present: Vec<SetObject>,
    /// The index pages written afterwards, in order.
    pub pages: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    pub key: String,
    pub existing: String,
    pub new: String,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "'{}' is already published with sha256 {}, the set has {}",
            self.key, self.existing, self.new
        )
    }
}

/// The destination's SHA-256 at each key of the set (`None`: absent), read in parallel.
pub fn destination_state(
    ctx: &Context,
    dest: &dyn Storage,
    objects: &[&SetObject],
    jobs: usize,
    attempts: u32,
) -> Result<HashMap<String, Option<String>>, TransferError> {
    let found = transfer::run_all(
        ctx,
        "check",
        objects,
        jobs,
        attempts,
        |_| 0,
        |object| {
            let sha = match dest.head(&object.key)? {
                None => None,
                Some(ObjectInfo {
                    sha256: Some(sha), ..
                }) => Some(sha),
                Some(info) => Some(dest.content_sha256(&info.key)?),
            };
            Ok((object.key.clone(), sha))
        },
    )?;
    Ok(found.into_iter().collect())
}

/// Decides what to move: objects absent from the destination are transferred, the same
/// bytes again are skipped, different bytes under a published key stop the whole plan.
/// `projects` are the destination's projects after publishing (for the page list).
pub fn plan(
    items: Vec<Item>,
    state: &HashMap<String, Option<String>>,
    projects: &[&str],
) -> Result<Plan, Vec<Conflict>> {
    let mut transfers = Vec::new();
    let mut present = Vec::new();
    let mut conflicts = Vec::new();
    for item in items {
        match state.get(&item.object.key).cloned().flatten() {
            None => transfers.push(item),
            Some(existing) if existing == item.object.sha256 => present.push(item.object),
            Some(existing) => conflicts.push(Conflict {
                key: item.object.key.clone(),
                existing,
                new: item.object.sha256.clone(),
            }),
        }
    }
    if !conflicts.is_empty() {
        return Err(conflicts);
    }
    Ok(Plan {
        transfers,
        present,
        pages: page_keys(projects),
    })
}

impl Plan {
    pub fn bytes(&self) -> u64 {
        self.transfers.iter().map(|t| t.object.size).sum()
    }

    /// What `--dry-run` prints: every object and every page, nothing left out. `verb` sums
    /// the transfers up (`copy`, `upload`); each line says what happens to its object.
    pub fn describe(&self, verb: &str, dest: &str) -> String {
        let mut out = format!(
            "would {verb} {} objects ({}) to {dest}\n",
            self.transfers.len(),
            human_bytes(self.bytes())
        );
        for item in &self.transfers {
            let from = match &item.source {
                Source::Copy { from_key } if *from_key == item.object.key => String::new(),
                Source::Copy { from_key } => format!(" from {from_key}"),
                Source::File { path } => format!(" from {}", path.display()),
                Source::Bytes { .. } => String::new(),
            };
            let _ = writeln!(
                out,
                "  {} {}{from} ({}, sha256 {})",
                item.source.verb(),
                item.object.key,
                human_bytes(item.object.size),
                item.object.sha256
            );
        }
        for object in &self.present {
            let _ = writeln!(
                out,
                "  keep {} (already published with the same sha256)",
                object.key
            );
        }
        let _ = writeln!(out, "would then write {} index pages:", self.pages.len());
        for page in &self.pages {
            let _ = writeln!(out, "  write {page}");
        }
        out
    }
}

/// Moves every planned object (in parallel, with retries, verified), then rewrites the
/// destination's index pages. `known` SHA-256s spare re-reading objects for the index.
pub fn execute(
    ctx: &Context,
    source: Option<&dyn Storage>,
    dest: &dyn Storage,
    plan: &Plan,
    jobs: usize,
    attempts: u32,
    title: &str,
) -> Result<(Scan, Vec<Page>), PublishError> {
    let outcomes = transfer::run_all(
        ctx,
        title,
        &plan.transfers,
        jobs,
        attempts,
        |t| t.object.size,
        |item| {
            let object = &item.object;
            match &item.source {
                Source::Copy { from_key } => {
                    let source = source.ok_or_else(|| StoreError::Backend {
                        store: dest.url(),
                        op: "copy",
                        key: object.key.clone(),
                        message: "no source store".into(),
                        transient: false,
                    })?;
                    let info = ObjectInfo {
                        key: from_key.clone(),
                        size: object.size,
                        sha256: Some(object.sha256.clone()),
                    };
                    copy_immutable(dest, source, from_key, &object.key, &info, &object.sha256)
                }
                Source::File { path } => {
                    put_immutable(dest, &object.key, Body::File(path), &object.sha256)
                }
                Source::Bytes { bytes } => {
                    put_immutable(dest, &object.key, Body::Bytes(bytes), &object.sha256)
                }
            }
        },
    )
    .map_err(PublishError::Transfer)?;
    let raced = outcomes
        .iter()
        .filter(|o| **o == Outcome::Unchanged)
        .count();
    if raced > 0 {
        tracing::info!(
            "{raced} objects were already there with the same bytes (written by a concurrent run)"
        );
    }
    let known: HashMap<String, String> = plan
        .transfers
        .iter()
        .map(|t| &t.object)
        .chain(&plan.present)
        .map(|o| (o.key.clone(), o.sha256.clone()))
        .collect();
    scan::reindex(ctx, dest, &known, jobs).map_err(PublishError::Index)
}

/// The uploads that publish verified wheels: each wheel from its file, then its PEP 658
/// sidecar from the METADATA bytes verification read, at the layout's keys. Every report
/// must be a passing one (it then has a name, a SHA-256 and metadata).
pub fn upload_items(wheels: &[WheelReport]) -> Result<Vec<Item>, String> {
    let mut items = Vec::with_capacity(2 * wheels.len());
    for wheel in wheels {
        let missing = |what: &str| {
            format!(
                "{}: the verification report has no {what}; only verified wheels are published",
                wheel.path.display()
            )
        };
        let name = wheel.name.as_deref().ok_or_else(|| missing("name"))?;
        let sha256 = wheel.sha256.clone().ok_or_else(|| missing("sha256"))?;
        let metadata = wheel.metadata.as_ref().ok_or_else(|| missing("METADATA"))?;
        let metadata_sha256 = wheel
            .metadata_sha256
            .clone()
            .ok_or_else(|| missing("METADATA hash"))?;
        let key = dist_key(name, &wheel.file);
        let sidecar = metadata_key(&key);
        items.push(Item {
            object: SetObject {
                key,
                size: wheel.size,
                sha256,
            },
            source: Source::File {
                path: wheel.path.clone(),
            },
        });
        items.push(Item {
            object: SetObject {
                key: sidecar,
                size: metadata.raw.len() as u64,
                sha256: metadata_sha256,
            },
            source: Source::Bytes {
                bytes: metadata.raw.clone(),
            },
        });
    }
    Ok(items)
}

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("{0}\nthe index pages were not changed; fix the cause and run the same command again")]
    Transfer(TransferError),
    #[error(
        "all objects are in place, but writing the index failed: {0}\nrun `rockbuild index` on the destination (or this command again) to finish"
    )]
    Index(ScanError),
}

impl PublishError {
    pub fn is_conflict(&self) -> bool {
        match self {
            PublishError::Transfer(error) => error.is_conflict(),
            PublishError::Index(_) => false,
        }
    }

    pub fn interrupted(&self) -> Option<i32> {
        match self {
            PublishError::Transfer(error) => error.interrupted,
            PublishError::Index(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(key: &str, sha: char) -> SetObject {
        SetObject {
            key: key.into(),
            size: 10,
            sha256: sha.to_string().repeat(64),
        }
    }

    fn copy(key: &str, sha: char) -> Item {
        Item {
            object: object(key, sha),
            source: Source::Copy {
                from_key: key.into(),
            },
        }
    }

    #[test]
    fn plans_copies_skips_and_conflicts() {
        let items = vec![
            copy("torch/a.whl", 'a'),
            copy("torch/a.whl.metadata", 'b'),
            copy("vision/v.whl", 'c'),
        ];
        let state = HashMap::from([
            ("torch/a.whl".to_string(), None),
            ("torch/a.whl.metadata".to_string(), Some("b".repeat(64))),
        ]);
        let plan = plan(items.clone(), &state, &["vision", "torch"]).expect("plan");
        assert_eq!(plan.transfers, vec![items[0].clone(), items[2].clone()]);
        assert_eq!(plan.present, vec![object("torch/a.whl.metadata", 'b')]);
        assert_eq!(
            plan.pages,
            [
                "torch/index.html",
                "torch/index.json",
                "vision/index.html",
                "vision/index.json",
                "index.html",
                "index.json"
            ]
        );
        let text = plan.describe("copy", "s3://wheels/release");
        assert!(text.starts_with("would copy 2 objects (20 B) to s3://wheels/release\n  copy torch/a.whl (10 B, sha256 aaaa"), "{text}");

        let state = HashMap::from([("vision/v.whl".to_string(), Some("d".repeat(64)))]);
        let conflicts = super::plan(items, &state, &[]).expect_err("conflict");
        assert_eq!(
            conflicts,
            vec![Conflict {
                key: "vision/v.whl".into(),
                existing: "d".repeat(64),
                new: "c".repeat(64)
            }]
        );
    }
}
