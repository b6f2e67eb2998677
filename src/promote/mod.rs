//! Promotion: moving a tested set from a staging index to a release index, all or nothing,
//! in the shape every verb takes:
//!
//! * [`inspect`] reads the evidence (test reports) and the staged set;
//! * [`gate`] decides, as a pure function ([`policy`]), whether the set may go (default deny),
//!   wheel by wheel, from the [`evidence`] and owned, expiring [`waiver`]s;
//! * [`prepare`] builds what goes: the staged objects as they are, or — with
//!   `--rewrite-version` — the tested wheels rewritten to new versions ([`rewrite`] decides
//!   which), in a scratch directory, and verified again;
//! * [`plan`] decides, as a pure function, every copy, upload and index page: the
//!   [`PromotePlan`] that `--dry-run` prints;
//! * the publishing itself is [`crate::publish::apply`], shared with `stage`: every object
//!   first (verified), the destination index last, so a run stopped half way leaves the
//!   published index as it was and a re-run completes it.

pub mod companions;
mod error;
pub mod evidence;
#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests start python, pip and uv directly
mod installs_tests;
mod plan;
pub mod policy;
mod prepare;
pub mod rewrite;
pub mod waiver;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use pep440_rs::Version;

pub use error::Error;
pub use plan::{plan, show_gate};
pub use prepare::{Prepared, Sources, prepare};

use crate::context::Context;
use crate::index::client::IndexClient;
use crate::index::scan::{self, Scan};
use crate::index::{dist_key, dist_name_and_version};
use crate::lock::Lock;
use crate::publish::{Item, SetObject, Source};
use crate::store::Storage;
use crate::wheel::companion::Role;
use crate::wheel::rewrite::Promotion;
use evidence::Evidence;
use policy::{Candidate, Decision, Verdict};
use waiver::Waiver;

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

/// What a promotion is decided on: the staged set, the evidence, and today's date (waivers
/// expire); the verdicts on its companions (their provenance).
pub struct Staged {
    /// The source store's URL.
    pub url: String,
    pub set: Vec<StagedFile>,
    pub evidence: Vec<Evidence>,
    pub today: jiff::civil::Date,
    /// One verdict per companion of the set (see [`companions`]).
    pub companions: Vec<policy::WheelDecision>,
    /// The SDK release the set was built on, when known before its wheels are read.
    pub sdk: Option<Version>,
}

impl StagedFile {
    /// A product (built here) or a companion (the ROCm SDK, carried).
    pub fn role(&self) -> Role {
        Role::of_name(&self.project)
    }
}

/// Where the ROCm SDK a promotion carries is published.
#[derive(Clone, Debug, Default)]
pub struct SdkIndexes {
    /// `--index-url`: the index of the SDK release the promoted set carries.
    pub given: Option<String>,
    /// The lock's build record: the index the set's SDK was installed from.
    pub locked: Option<String>,
}

/// Reads every report (before anything else is looked at: going on would deny the promotion
/// and then suggest the very flag that was given), then the staged set. A report that is
/// missing or cannot be opened is no evidence (exit 5, as docs/publishing.md says); one that
/// is not a report is a usage error.
pub fn inspect(
    ctx: &Context,
    reports: &[PathBuf],
    source: &dyn Storage,
    jobs: usize,
    lock: Option<&(PathBuf, Lock)>,
    promotion: Option<Promotion>,
    indexes: &SdkIndexes,
) -> Result<Staged, Error> {
    let evidence = reports
        .iter()
        .map(|path| {
            // Whether the report exists is asked without opening it: opening a FIFO waits.
            evidence::read(path).map_err(|error| match fs_err::metadata(path) {
                Err(_) => Error::NoEvidence(error),
                Ok(_) => Error::Evidence(error),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let scan =
        scan::scan(ctx, source, &HashMap::new(), jobs).map_err(|source_error| Error::Scan {
            url: source.url(),
            source: source_error,
        })?;
    for skipped in &scan.skipped {
        ctx.ui
            .warn(format!("{}: not part of the set: {skipped}", source.url()));
    }
    let set = staged_set(&scan);
    if let Some((path, lock)) = lock {
        lock.expect_wheels(
            path,
            &format!("the staged set at {}", source.url()),
            set.iter().map(|s| (s.project.as_str(), s.version.as_str())),
        )?;
    }
    if set.is_empty() {
        return Err(Error::NothingToPromote(source.url()));
    }
    let sdk = staged_sdk(&set, lock)?;
    let companions = judge_companions(&set, sdk.as_ref(), promotion, indexes)?;
    Ok(Staged {
        url: source.url(),
        set,
        evidence,
        today: jiff::Timestamp::now()
            .to_zoned(jiff::tz::TimeZone::UTC)
            .date(),
        companions,
        sdk,
    })
}

/// The SDK release the staged set was built on, as far as it is known before any wheel is
/// read: the lock's, else the one release the staged companions are of.
fn staged_sdk(
    set: &[StagedFile],
    lock: Option<&(PathBuf, Lock)>,
) -> Result<Option<Version>, Error> {
    if let Some((_, lock)) = lock
        && let Some(version) = lock.sdk_version()?
    {
        return Ok(Some(version));
    }
    let versions: BTreeSet<Version> = set
        .iter()
        .filter(|s| s.role() == Role::Companion)
        .filter_map(|s| s.version.parse().ok())
        .collect();
    let mut versions = versions.into_iter();
    Ok(match (versions.next(), versions.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    })
}

/// The verdicts on the staged companions: the SDK the set was built on is the lock's (else
/// the one release the companions are of); a promotion that moves it replaces them, and
/// then needs the index of the promoted SDK release; otherwise each must be the bytes its
/// index (`--index-url`, else the lock's) publishes.
fn judge_companions(
    set: &[StagedFile],
    staged_sdk: Option<&Version>,
    promotion: Option<Promotion>,
    indexes: &SdkIndexes,
) -> Result<Vec<policy::WheelDecision>, Error> {
    let staged: Vec<StagedFile> = set
        .iter()
        .filter(|s| s.role() == Role::Companion)
        .cloned()
        .collect();
    if staged.is_empty() {
        return Ok(Vec::new());
    }
    let promoted_to = promotion
        .zip(staged_sdk)
        .and_then(|(promotion, sdk)| companions::promoted_sdk(sdk, promotion));
    if let (Some(promoted), None) = (&promoted_to, &indexes.given) {
        return Err(Error::NoSdkIndex {
            promoted: promoted.to_string(),
        });
    }
    let index = indexes
        .given
        .as_deref()
        .or(indexes.locked.as_deref())
        .map(IndexClient::new)
        .transpose()
        .map_err(|error| Error::Verify(crate::verify::Error::Index(error)))?;
    let scratch = tempfile::Builder::new()
        .prefix("rockbuild-promote-")
        .tempdir()
        .map_err(Error::WorkDir)?;
    Ok(companions::judge(
        &staged,
        staged_sdk,
        promoted_to.as_ref(),
        index.as_ref(),
        indexes.given.as_deref(),
        scratch.path(),
    ))
}

/// The gate's decision: the tested bytes (the staged products, before any rewrite) judged
/// on the evidence and the waivers; the companions by their provenance.
pub fn gate(staged: &Staged, waivers: &[Waiver]) -> Decision {
    let candidates: Vec<Candidate> = staged
        .set
        .iter()
        .filter(|s| s.role() == Role::Product)
        .map(|s| Candidate {
            filename: s.filename.clone(),
            sha256: s.file.sha256.clone(),
        })
        .collect();
    let mut decision = policy::decide(&candidates, &staged.evidence, waivers, staged.today);
    decision.wheels.extend(staged.companions.iter().cloned());
    // In the set's order: the table reads as the prefix lists it.
    let order: HashMap<&str, usize> = staged
        .set
        .iter()
        .enumerate()
        .map(|(i, s)| (s.filename.as_str(), i))
        .collect();
    decision
        .wheels
        .sort_by_key(|w| order.get(w.filename.as_str()).copied());
    decision
}

/// A denied wheel denies the set.
pub fn require_allowed(decision: &Decision) -> Result<(), Error> {
    if decision.allowed() {
        return Ok(());
    }
    let denied: Vec<&policy::WheelDecision> = decision
        .wheels
        .iter()
        .filter(|w| matches!(w.verdict, Verdict::Denied { .. }))
        .collect();
    let total = decision.wheels.len();
    if denied
        .iter()
        .all(|w| Role::of_file(&w.filename) == Role::Companion)
    {
        return Err(Error::NotAsPublished {
            denied: denied.len(),
            total,
        });
    }
    Err(Error::Denied {
        denied: denied.len(),
        total,
    })
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
