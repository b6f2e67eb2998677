//! What goes to the destination: the staged objects as they are, or the tested products
//! rewritten to new versions. A rewrite happens in a scratch directory, outside both stores,
//! from downloads checked against the SHA-256s the gate judged; the rewritten set is
//! verified again before anything is planned.
//!
//! The ROCm SDK moves with a rewrite (`super::companions`): the products' labels and pins
//! follow its promoted version, and a set that carries the SDK carries the promoted
//! release's own files, brought from the index that publishes it.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use pep440_rs::Version;

use super::rewrite::{self as split_set, RewritePlan, RewriteSummary, SdkMove};
use super::{Error, SdkIndexes, Staged, StagedFile, companions, copy_items};
use crate::context::Context;
use crate::index::client::IndexClient;
use crate::index::ordering::Release;
use crate::publish::{Publication, Transfer, upload_items};
use crate::redact::redact_url;
use crate::store::{self, Storage, StoreSettings, transfer};
use crate::ui::plural;
use crate::verify::{self, Expectations, companions as sdk_files};
use crate::wheel::companion::{Role, pinned_sdk_versions};
use crate::wheel::filename::normalize_name;
use crate::wheel::metadata::Requirement;
use crate::wheel::rewrite::{Promotion, PublicVersion, Rewritten, rewrite_set};
use crate::wheel::verify::{DEFAULT_MEMORY_BUDGET, WheelExpectations, read_metadata};

/// The set ready to be planned.
pub struct Prepared {
    pub publication: Publication,
    /// What `--rewrite-version` rewrote, when it was given.
    pub rewrite: Option<RewriteSummary>,
    /// The scratch directory holding the downloaded and rewritten wheels the publication
    /// uploads; removed when this is dropped.
    _work: Option<tempfile::TempDir>,
}

/// Where a promotion's inputs come from and what it may read.
pub struct Sources<'a> {
    pub source: &'a dyn Storage,
    pub indexes: &'a SdkIndexes,
    pub settings: &'a StoreSettings,
}

/// Prepares the staged set for publication: copied as it is, or rewritten as `promotion`
/// asks. The rewrite's summary is shown as it happens (on a dry run it is part of the plan
/// instead). `dest` names the destination in refusals.
pub fn prepare(
    ctx: &Context,
    staged: &Staged,
    sources: &Sources<'_>,
    promotion: Option<Promotion>,
    public: PublicVersion,
    dest: &str,
    dry_run: bool,
) -> Result<Prepared, Error> {
    let set = &staged.set;
    let Some(promotion) = promotion else {
        return Ok(Prepared {
            publication: Publication {
                verb: "promote",
                transfer: Transfer::Copy,
                items: copy_items(set),
                releases: set.iter().map(release_of).collect(),
            },
            rewrite: None,
            _work: None,
        });
    };
    rewritten(ctx, staged, sources, (promotion, public), dest, dry_run)
}

/// The tested products rewritten to `promotion` in a scratch directory and verified again as
/// one set with the products kept as they are and the companions the promoted set carries.
fn rewritten(
    ctx: &Context,
    staged: &Staged,
    sources: &Sources<'_>,
    (promotion, public): (Promotion, PublicVersion),
    dest: &str,
    dry_run: bool,
) -> Result<Prepared, Error> {
    let source = sources.source;
    let (products, staged_companions): (Vec<StagedFile>, Vec<StagedFile>) = staged
        .set
        .iter()
        .cloned()
        .partition(|s| s.role() == Role::Product);
    let work = tempfile::Builder::new()
        .prefix("rockbuild-promote-")
        .tempdir()
        .map_err(Error::WorkDir)?;
    let tested = fetch_tested(
        ctx,
        source,
        &products,
        &work.path().join("tested"),
        sources.settings,
    )?;
    let local = |staged: &StagedFile| {
        tested
            .get(&staged.file.key)
            .cloned()
            .ok_or_else(|| Error::NotDownloaded {
                key: staged.file.key.clone(),
                url: source.url(),
            })
    };
    let product_paths = products.iter().map(local).collect::<Result<Vec<_>, _>>()?;
    let sdk = sdk_promotion(&product_paths, staged.sdk.as_ref(), promotion)?;
    let RewritePlan { rewrite, keep } =
        split_set::split(&products, sdk.as_ref().map(|(old, _)| old), public)
            .map_err(Error::Split)?;
    let rewrite_paths = rewrite.iter().map(local).collect::<Result<Vec<_>, _>>()?;
    let kept_paths = keep.iter().map(local).collect::<Result<Vec<_>, _>>()?;
    let task = ctx.ui.task("rewrite");
    task.phase(format!(
        "{} wheel{} to {promotion}",
        rewrite.len(),
        plural(rewrite.len())
    ));
    let rewritten = rewrite_set(
        &rewrite_paths,
        promotion,
        public,
        sdk.clone(),
        &work.path().join("rewritten"),
    )
    .map_err(|error| {
        task.finish("refused");
        // The rewrite read temporary copies, gone when this run ends: name the staged objects.
        let staged: HashMap<&Path, String> = tested
            .iter()
            .map(|(key, path)| (path.as_path(), format!("{}/{key}", source.url())))
            .collect();
        Error::Rewrite(error.rename_wheels(&|path: &Path| staged.get(path).map(PathBuf::from)))
    })?;
    task.finish(format!(
        "{} wheel{} in {:.1}s",
        rewritten.len(),
        plural(rewritten.len()),
        task.elapsed().as_secs_f64()
    ));

    // The SDK the promoted set carries: the promoted release's files when the SDK moved,
    // else the staged companions as they are (the gate checked their provenance).
    let (brought, carried) = match (&sdk, staged_companions.is_empty()) {
        (Some((_, promoted)), false) => {
            let seeds = promoted_seeds(&rewritten, &kept_paths, &staged_companions, promoted)?;
            let index = promoted_index(sources.indexes)?;
            let dir = work.path().join("sdk");
            fs_err::create_dir_all(&dir)?;
            let brought = sdk_files::bring(ctx, seeds, &[], &index, &dir)
                .map_err(|error| Error::Verify(error.into()))?;
            (brought, Vec::new())
        }
        _ => (Vec::new(), staged_companions),
    };
    let sdk_move = sdk.as_ref().map(|(old, new)| SdkMove {
        from: old.to_string(),
        to: new.to_string(),
        index: (!brought.is_empty())
            .then(|| sources.indexes.given.as_deref().map(redact_url))
            .flatten(),
        carried: brought.iter().map(|r| r.file.clone()).collect(),
    });
    let summary = split_set::summary(&rewritten, &keep, promotion, sdk_move);
    if !dry_run {
        ctx.ui.status(summary.describe(false).trim_end());
    }
    let carries_none = brought.is_empty() && carried.is_empty();
    if let (Some((_, promoted)), true, None) = (&sdk, carries_none, &sources.indexes.given) {
        ctx.ui.warn(format!(
            "the promoted set pins the ROCm SDK {promoted}, and no index that publishes it was \
             given to check (--index-url): it installs only where that SDK release is published"
        ));
    }

    let mut check: Vec<PathBuf> = rewritten.iter().map(|r| r.path.clone()).collect();
    check.extend(kept_paths);
    check.extend(brought.iter().map(|r| r.path.clone()));
    // When the SDK moved, the promoted set is checked against the promoted SDK's index: the
    // companions it carries from there, or its pins when it carries none.
    let index_url = sdk.as_ref().and(sources.indexes.given.clone());
    let check_outside = index_url.is_some() && brought.is_empty() && carried.is_empty();
    let report = verify_rewritten(ctx, &staged.set, &check, index_url, check_outside, dest)?;
    let uploads: Vec<_> = report
        .wheels
        .iter()
        .filter(|w| {
            rewritten.iter().any(|r| r.path == w.path) || brought.iter().any(|b| b.path == w.path)
        })
        .cloned()
        .collect();
    let mut items = upload_items(&uploads)?;
    items.extend(copy_items(&keep));
    items.extend(copy_items(&carried));
    let mut releases: Vec<Release> = rewritten
        .iter()
        .zip(&rewrite)
        .map(|(r, staged)| Release {
            project: staged.project.clone(),
            version: r.new_version.to_string(),
        })
        .collect();
    releases.extend(keep.iter().chain(&carried).map(release_of));
    releases.extend(brought.iter().filter_map(|b| {
        Some(Release {
            project: b.name.clone()?,
            version: b.version.clone()?,
        })
    }));
    Ok(Prepared {
        publication: Publication {
            verb: "promote",
            transfer: Transfer::Write,
            items,
            releases,
        },
        rewrite: Some(summary),
        _work: Some(work),
    })
}

/// The ROCm SDK the tested products pin (`rocm[libraries]==V`; else the one the staged set
/// is known to be built on, `staged`) and the release the promotion moves it to, when it
/// moves it. Two releases are refused.
fn sdk_promotion(
    products: &[PathBuf],
    staged: Option<&Version>,
    promotion: Promotion,
) -> Result<Option<(Version, Version)>, Error> {
    let metadata: Vec<_> = products
        .iter()
        .filter_map(|path| read_metadata(path).ok())
        .collect();
    let mut releases = pinned_sdk_versions(metadata.iter().flat_map(|m| &m.requires_dist));
    releases.extend(staged.cloned());
    let mut releases = releases.into_iter();
    match (releases.next(), releases.next()) {
        (None, _) => Ok(None),
        (Some(built_on), None) => {
            Ok(companions::promoted_sdk(&built_on, promotion).map(|promoted| (built_on, promoted)))
        }
        (Some(first), Some(second)) => Err(Error::SeveralSdks {
            versions: [first, second]
                .into_iter()
                .chain(releases)
                .map(|v| v.to_string())
                .collect(),
        }),
    }
}

/// What the promoted set carries of the promoted SDK: what its products pin, and the same
/// parts of the SDK the staged set carried (`rocm-sdk-devel` included), at the promoted
/// release.
fn promoted_seeds(
    rewritten: &[Rewritten],
    kept: &[PathBuf],
    staged: &[StagedFile],
    promoted: &Version,
) -> Result<Vec<Requirement>, Error> {
    let mut seeds: Vec<Requirement> = Vec::new();
    for path in rewritten.iter().map(|r| &r.path).chain(kept) {
        if let Ok(metadata) = read_metadata(path) {
            seeds.extend(
                metadata
                    .requires_dist
                    .into_iter()
                    .filter(|r| crate::wheel::companion::is_sdk_distribution(&r.name)),
            );
        }
    }
    let names: BTreeSet<String> = staged.iter().map(|s| normalize_name(&s.project)).collect();
    for name in names {
        let requirement = Requirement::parse(&format!("{name}=={promoted}")).map_err(|error| {
            Error::Verify(verify::Error::Companion(
                sdk_files::CompanionError::Unreadable {
                    url: name.clone(),
                    detail: error.to_string(),
                },
            ))
        })?;
        seeds.push(requirement);
    }
    Ok(seeds)
}

/// The index of the promoted SDK release (`--index-url`; inspect refused a promotion that
/// moves the SDK of a set that carries it without one).
fn promoted_index(indexes: &SdkIndexes) -> Result<IndexClient, Error> {
    let given = indexes.given.as_deref().ok_or_else(|| Error::NoSdkIndex {
        promoted: "a new release".into(),
    })?;
    IndexClient::new(given).map_err(|error| Error::Verify(verify::Error::Index(error)))
}

/// The rewritten products with the ones kept and the companions brought, as one set: the
/// container, RECORD, metadata and every pin between members are checked again, and the
/// companions' provenance against `index_url` (the promoted SDK's index). Pins outside the
/// set are checked there too when `check_outside` (the SDK moved, and the set carries none
/// of it); otherwise they, the GPU code and RPATHs are the tested wheels' own, unchanged by
/// the rewrite.
fn verify_rewritten(
    ctx: &Context,
    set: &[StagedFile],
    wheels: &[PathBuf],
    index_url: Option<String>,
    check_outside: bool,
    dest: &str,
) -> Result<crate::verify::VerifyReport, Error> {
    let expect = Expectations {
        wheels: WheelExpectations {
            // The platform tag was judged when the set was staged; a rewrite does not change it.
            allow_linux_tag: true,
            ..WheelExpectations::default()
        },
        stack_wheels: set.iter().map(|s| normalize_name(&s.project)).collect(),
        index_url,
        memory_budget: DEFAULT_MEMORY_BUDGET,
        check_pins_outside_set: check_outside,
        // The staged set was held to its lock's device wheels when it was staged.
        devices: Default::default(),
    };
    let report = verify::run(ctx, wheels, &expect)?;
    if !report.ok {
        return Err(Error::RewrittenNotVerified(dest.to_string()));
    }
    Ok(report)
}

fn release_of(staged: &StagedFile) -> Release {
    Release {
        project: staged.project.clone(),
        version: staged.version.clone(),
    }
}

/// Local copies of the set's wheels, by key, downloaded into `dir` (in parallel, with
/// retries; a directory store's files are copied) and each checked against the SHA-256 the
/// gate judged, so the rewrite starts from exactly the tested bytes even when the source
/// changed after the gate read it.
fn fetch_tested(
    ctx: &Context,
    source: &dyn Storage,
    set: &[StagedFile],
    dir: &Path,
    settings: &StoreSettings,
) -> Result<HashMap<String, PathBuf>, Error> {
    fs_err::create_dir_all(dir)?;
    let fetched = transfer::run_all(
        ctx,
        "download",
        set,
        settings.jobs,
        settings.attempts,
        |s| s.file.size,
        |staged| {
            let path = dir.join(&staged.filename);
            store::download_verified(source, &staged.file.key, &path, &staged.file.sha256)?;
            Ok((staged.file.key.clone(), path))
        },
    )
    .map_err(|error| Error::Download {
        url: source.url(),
        error,
    })?;
    Ok(fetched.into_iter().collect())
}
