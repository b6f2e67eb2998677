//! `promote`: the two stores, the evidence and waivers, the version rewrite.

use std::path::PathBuf;

use super::store::store_settings;
use crate::cli::{PromoteArgs, RewriteTo};
use crate::context::Context;
use crate::lock::Lock;
use crate::promote::waiver::{self, Waiver};
use crate::promote::{self, SdkIndexes};
use crate::stack::ConfigSource;
use crate::store::{StoreSettings, StoreUrl};
use crate::wheel::rewrite::{Promotion, PublicVersion};

pub struct PromoteSettings {
    pub from: StoreUrl,
    pub to: StoreUrl,
    /// The test reports to judge the set by, absolute.
    pub test_reports: Vec<PathBuf>,
    pub waivers: Vec<Waiver>,
    /// The lock the set was built from (every wheel's version must be the one it names).
    pub lock: Option<(PathBuf, Lock)>,
    /// The versions to promote to (`--rewrite-version`); none: the objects go as they are.
    pub promotion: Option<Promotion>,
    /// What the promotion does to a labelled pre-release public version
    /// (`--rewrite-public-version`; kept by default, as the reference keeps it).
    pub public_version: PublicVersion,
    /// Where the ROCm SDK the set carries is published (`--index-url`, the lock's).
    pub sdk_indexes: SdkIndexes,
    pub store: StoreSettings,
    pub dry_run: bool,
    pub json: bool,
}

impl PromoteSettings {
    pub fn resolve(args: PromoteArgs, ctx: &Context) -> anyhow::Result<Self> {
        let PromoteArgs {
            from,
            to,
            test_reports,
            waiver,
            rewrite_version,
            rewrite_public_version,
            dry_run,
            json,
            lock,
            index_url,
            store,
        } = args;
        let from = StoreUrl::parse(&from, &ctx.cwd)?;
        let to = StoreUrl::parse(&to, &ctx.cwd)?;
        if from == to {
            return Err(promote::Error::SameStore(from.to_string()).into());
        }
        let waivers = match &waiver {
            Some(path) => {
                let source = ConfigSource::read(&ctx.absolute(path))?;
                waiver::parse(&source).map_err(promote::Error::Waiver)?
            }
            None => Vec::new(),
        };
        let lock = super::read_lock(ctx, lock)?;
        let sdk_indexes = SdkIndexes {
            given: index_url,
            locked: lock.as_ref().and_then(|(_, lock)| lock.sdk_index_url()),
        };
        Ok(PromoteSettings {
            from,
            to,
            test_reports: expand_reports(test_reports.iter().map(|p| ctx.absolute(p)))?,
            waivers,
            lock,
            promotion: rewrite_version.map(|kind| match kind {
                RewriteTo::Rc => Promotion::ReleaseCandidate(1),
                RewriteTo::Final => Promotion::Final,
            }),
            public_version: if rewrite_public_version {
                PublicVersion::Promote
            } else {
                PublicVersion::Keep
            },
            sdk_indexes,
            store: store_settings(store),
            dry_run,
            json,
        })
    }
}

/// A directory given as `--test-report` stands for every report in it (`*.json`, `*.xml`, by
/// name): a CI job downloads each Python's reports into one directory. An empty or unreadable
/// one is no evidence (exit 5), never "no evidence needed".
fn expand_reports(given: impl Iterator<Item = PathBuf>) -> Result<Vec<PathBuf>, promote::Error> {
    let mut reports = Vec::new();
    for path in given {
        if !path.is_dir() {
            reports.push(path);
            continue;
        }
        let no_reports = |source| promote::Error::NoReportsIn {
            dir: path.clone(),
            source,
        };
        let mut found: Vec<PathBuf> = fs_err::read_dir(&path)
            .map_err(|error| no_reports(Some(error)))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "json" || e == "xml"))
            .collect();
        if found.is_empty() {
            return Err(no_reports(None));
        }
        found.sort();
        reports.extend(found);
    }
    Ok(reports)
}
