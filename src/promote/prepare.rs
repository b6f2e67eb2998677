//! What goes to the destination: the staged objects as they are, or the tested wheels
//! rewritten to new versions. A rewrite happens in a scratch directory, outside both stores,
//! from downloads checked against the SHA-256s the gate judged; the rewritten set is
//! verified again before anything is planned.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::rewrite::{self as split_set, RewritePlan, RewriteSummary};
use super::{Error, Staged, StagedFile, copy_items};
use crate::context::Context;
use crate::index::ordering::Release;
use crate::publish::{Publication, Transfer, upload_items};
use crate::store::{self, Storage, StoreSettings, transfer};
use crate::ui::plural;
use crate::verify::{self, Expectations};
use crate::wheel::filename::normalize_name;
use crate::wheel::rewrite::{Promotion, rewrite_set};
use crate::wheel::verify::{DEFAULT_MEMORY_BUDGET, WheelExpectations};

/// The set ready to be planned.
pub struct Prepared {
    pub publication: Publication,
    /// What `--rewrite-version` rewrote, when it was given.
    pub rewrite: Option<RewriteSummary>,
    /// The scratch directory holding the downloaded and rewritten wheels the publication
    /// uploads; removed when this is dropped.
    _work: Option<tempfile::TempDir>,
}

/// Prepares the staged set for publication: copied as it is, or rewritten as `promotion`
/// asks. The rewrite's summary is shown as it happens (on a dry run it is part of the plan
/// instead). `dest` names the destination in refusals.
pub fn prepare(
    ctx: &Context,
    staged: &Staged,
    source: &dyn Storage,
    promotion: Option<Promotion>,
    settings: &StoreSettings,
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
    rewritten(ctx, staged, source, promotion, settings, dest, dry_run)
}

/// The tested wheels rewritten to `promotion` in a scratch directory and verified again as
/// one set with the wheels kept as they are.
fn rewritten(
    ctx: &Context,
    staged: &Staged,
    source: &dyn Storage,
    promotion: Promotion,
    settings: &StoreSettings,
    dest: &str,
    dry_run: bool,
) -> Result<Prepared, Error> {
    let set = &staged.set;
    let RewritePlan { rewrite, keep } = split_set::split(set).map_err(Error::Split)?;
    let work = tempfile::Builder::new()
        .prefix("rockbuild-promote-")
        .tempdir()
        .map_err(Error::WorkDir)?;
    let tested = fetch_tested(ctx, source, set, &work.path().join("tested"), settings)?;
    let local = |staged: &StagedFile| {
        tested
            .get(&staged.file.key)
            .cloned()
            .ok_or_else(|| Error::NotDownloaded {
                key: staged.file.key.clone(),
                url: source.url(),
            })
    };
    let rewrite_paths = rewrite.iter().map(local).collect::<Result<Vec<_>, _>>()?;
    let task = ctx.ui.task("rewrite");
    task.phase(format!(
        "{} wheel{} to {promotion}",
        rewrite.len(),
        plural(rewrite.len())
    ));
    let rewritten = rewrite_set(
        &rewrite_paths,
        promotion,
        None,
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
    let summary = split_set::summary(&rewritten, &keep, promotion);
    if !dry_run {
        ctx.ui.status(summary.describe(false).trim_end());
    }

    let kept_paths = keep.iter().map(local).collect::<Result<Vec<_>, _>>()?;
    let mut check: Vec<PathBuf> = rewritten.iter().map(|r| r.path.clone()).collect();
    check.extend(kept_paths);
    let report = verify_rewritten(ctx, set, &check, dest)?;
    let uploads: Vec<_> = report
        .wheels
        .iter()
        .filter(|w| rewritten.iter().any(|r| r.path == w.path))
        .cloned()
        .collect();
    let mut items = upload_items(&uploads)?;
    items.extend(copy_items(&keep));
    let mut releases: Vec<Release> = rewritten
        .iter()
        .zip(&rewrite)
        .map(|(r, staged)| Release {
            project: staged.project.clone(),
            version: r.new_version.to_string(),
        })
        .collect();
    releases.extend(keep.iter().map(release_of));
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

/// The rewritten wheels with the ones kept, as one set: the container, RECORD, metadata and
/// every pin between members are checked again. Pins outside the set, GPU code and RPATHs are
/// the tested wheels' own, unchanged by the rewrite.
fn verify_rewritten(
    ctx: &Context,
    set: &[StagedFile],
    wheels: &[PathBuf],
    dest: &str,
) -> Result<crate::verify::VerifyReport, Error> {
    let expect = Expectations {
        wheels: WheelExpectations {
            // The platform tag was judged when the set was staged; a rewrite does not change it.
            allow_linux_tag: true,
            ..WheelExpectations::default()
        },
        stack_wheels: set.iter().map(|s| normalize_name(&s.project)).collect(),
        index_url: None,
        memory_budget: DEFAULT_MEMORY_BUDGET,
        check_pins_outside_set: false,
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
