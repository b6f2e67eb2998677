//! Publishing a set of objects into an index prefix, as `stage` and `promote` both do:
//! plan first (a pure function of what the destination holds: copy, already there, or a
//! conflict that stops everything before the first byte moves), then move every object in
//! parallel, verified, and rewrite the index pages last. A run stopped between the objects
//! and the pages leaves the published pages as they were; a re-run skips what is already
//! there and completes.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::PathBuf;

use super::transfer::{self, TransferError};
use super::{Body, ObjectInfo, Outcome, Storage, StoreError, copy_immutable, put_immutable};
use crate::context::Context;
use crate::index::ordering::{self, OrderingProblem, Release};
use crate::index::render::{Page, page_keys};
use crate::index::scan::{self, Scan, ScanError, layout};
use crate::index::{dist_key, metadata_key};
use crate::store::StoreSettings;
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
pub fn upload_items(wheels: &[WheelReport]) -> Result<Vec<Item>, UnverifiedWheel> {
    let mut items = Vec::with_capacity(2 * wheels.len());
    for wheel in wheels {
        let missing = |missing: &'static str| UnverifiedWheel {
            wheel: wheel.path.clone(),
            missing,
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

/// A wheel report without what publishing needs: only a passing verification has it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{}: the verification report has no {missing}, and only verified wheels are published; \
     run `rockbuild verify` on it, fix what it reports, then publish again",
    wheel.display()
)]
pub struct UnverifiedWheel {
    pub wheel: PathBuf,
    pub missing: &'static str,
}

/// How a set's objects get to the destination, for messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    /// Local files and sidecars (`stage`).
    Upload,
    /// Objects of the source store, copied unchanged (`promote`).
    Copy,
    /// Rewritten wheels uploaded, the others copied (`promote --rewrite-version`).
    Write,
}

impl Transfer {
    /// The verb for the plan: `would upload 6 objects`.
    pub fn verb(self) -> &'static str {
        match self {
            Transfer::Upload => "upload",
            Transfer::Copy => "copy",
            Transfer::Write => "write",
        }
    }

    /// The participle for results: `nothing was uploaded`.
    pub fn done(self) -> &'static str {
        match self {
            Transfer::Upload => "uploaded",
            Transfer::Copy => "copied",
            Transfer::Write => "written",
        }
    }
}

/// What to publish where.
pub struct Publication<'a> {
    /// The verb for messages and the progress line (`stage`, `promote`).
    pub verb: &'static str,
    pub transfer: Transfer,
    /// Where `Source::Copy` items come from.
    pub source: Option<&'a dyn Storage>,
    pub dest: &'a dyn Storage,
    pub items: Vec<Item>,
    /// The versions the set brings, for the ordering lint.
    pub releases: Vec<Release>,
}

/// What a publish did.
pub enum Published {
    /// `--dry-run`: the plan, with nothing written.
    DryRun(Plan),
    Done(Done),
}

/// A finished publish: the plan it executed and the index it wrote.
pub struct Done {
    pub plan: Plan,
    pub transfer: Transfer,
    pub index: Scan,
    pub pages: Vec<Page>,
}

impl Done {
    /// The line a finished publish ends with: `{what} ({detail; }N objects uploaded, size;
    /// M already there) {route}; wrote P index pages listing F files`.
    pub fn summary(&self, what: &str, detail: Option<&str>, route: &str) -> String {
        let Done {
            plan,
            transfer,
            index,
            pages,
        } = self;
        let detail = detail.map(|d| format!("{d}; ")).unwrap_or_default();
        format!(
            "{what} ({detail}{} objects {}, {}; {} already there) {route}; wrote {} index pages listing {} files",
            plan.transfers.len(),
            transfer.done(),
            human_bytes(plan.bytes()),
            plan.present.len(),
            pages.len(),
            index.file_count()
        )
    }
}

/// Publishes a set: refuses (before anything is written) versions that would sort below
/// published builds and objects that would replace published ones; then returns the plan
/// (`dry_run`) or executes it, the index pages last.
pub fn publish_set(
    ctx: &Context,
    publication: Publication<'_>,
    settings: &StoreSettings,
    dry_run: bool,
) -> Result<Published, PublishError> {
    let Publication {
        verb,
        transfer,
        source,
        dest,
        items,
        releases,
    } = publication;
    // What the destination already publishes: for the ordering lint and the page list.
    let (published, _) = layout(&dest.list().map_err(PublishError::List)?);
    let problems = ordering::check(&releases, &ordering::published(&published));
    if !problems.is_empty() {
        return Err(PublishError::Ordering {
            verb,
            dest: dest.url(),
            nothing: transfer.done(),
            problems,
        });
    }

    let objects: Vec<&SetObject> = items.iter().map(|i| &i.object).collect();
    let state = destination_state(ctx, dest, &objects, settings.jobs, settings.attempts).map_err(
        |error| PublishError::Check {
            dest: dest.url(),
            error,
        },
    )?;
    let projects: BTreeSet<&str> = published
        .iter()
        .map(|p| p.project.as_str())
        .chain(releases.iter().map(|r| r.project.as_str()))
        .collect();
    let plan =
        plan(items, &state, &projects.into_iter().collect::<Vec<_>>()).map_err(|conflicts| {
            PublishError::Conflicts {
                verb,
                dest: dest.url(),
                nothing: transfer.done(),
                conflicts,
            }
        })?;
    if dry_run {
        return Ok(Published::DryRun(plan));
    }
    let (index, pages) = execute(
        ctx,
        source,
        dest,
        &plan,
        settings.jobs,
        settings.attempts,
        verb,
    )?;
    Ok(Published::Done(Done {
        plan,
        transfer,
        index,
        pages,
    }))
}

fn bullets<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(|i| format!("\n  - {i}"))
        .collect::<String>()
}

#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("listing the destination: {0}")]
    List(StoreError),
    #[error(
        "refusing to {verb} to {dest}: the new builds would not be the ones pip installs; nothing was {nothing}{}",
        bullets(problems)
    )]
    Ordering {
        verb: &'static str,
        dest: String,
        nothing: &'static str,
        problems: Vec<OrderingProblem>,
    },
    #[error("checking {dest}: {error}")]
    Check { dest: String, error: TransferError },
    #[error(
        "refusing to {verb} to {dest}: published objects are never replaced, and nothing was {nothing}{}",
        bullets(conflicts)
    )]
    Conflicts {
        verb: &'static str,
        dest: String,
        nothing: &'static str,
        conflicts: Vec<Conflict>,
    },
    #[error("{0}\nthe index pages were not changed; fix the cause and run the same command again")]
    Transfer(TransferError),
    #[error(
        "all objects are in place, but writing the index failed: {0}\nrun `rockbuild index` on the destination (or this command again) to finish"
    )]
    Index(ScanError),
}

impl PublishError {
    /// True when publishing would replace a published object or shadow a published
    /// version: refused before (or, for a race, while) writing.
    pub fn is_conflict(&self) -> bool {
        match self {
            PublishError::Ordering { .. } | PublishError::Conflicts { .. } => true,
            PublishError::Transfer(error) => error.is_conflict(),
            PublishError::List(_) | PublishError::Check { .. } | PublishError::Index(_) => false,
        }
    }

    pub fn interrupted(&self) -> Option<i32> {
        match self {
            PublishError::Transfer(error) | PublishError::Check { error, .. } => error.interrupted,
            _ => None,
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
    fn only_verified_wheels_become_uploads() {
        let report = WheelReport {
            path: PathBuf::from("/dist/rock_torch-1.0-py3-none-any.whl"),
            file: "rock_torch-1.0-py3-none-any.whl".into(),
            size: 10,
            sha256: None,
            name: Some("rock-torch".into()),
            version: Some("1.0".into()),
            entries: 0,
            zip64: false,
            metadata: None,
            metadata_sha256: None,
            libraries: Vec::new(),
            problems: Vec::new(),
        };
        let error = upload_items(&[report]).expect_err("no sha256");
        assert_eq!(
            error,
            UnverifiedWheel {
                wheel: PathBuf::from("/dist/rock_torch-1.0-py3-none-any.whl"),
                missing: "sha256"
            }
        );
        assert_eq!(
            error.to_string(),
            "/dist/rock_torch-1.0-py3-none-any.whl: the verification report has no sha256, and only \
             verified wheels are published; run `rockbuild verify` on it, fix what it reports, then publish again"
        );
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
