//! `rockbuild promote --from URL --to URL --test-report FILE... [--waiver FILE]
//! [--rewrite-version rc|final] [--dry-run]`: gate the staged set on evidence (default deny),
//! optionally rewrite its pre-release versions (the rewritten wheels are verified), refuse
//! versions that would sort below published builds, then copy or upload every object
//! (verified) and rewrite the destination index once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::index::store_settings;
use super::stage::publish_failure;
use super::verify::verify_wheels;
use crate::cli::{PromoteArgs, RewriteTo};
use crate::context::Context;
use crate::exit::{self, ExitStatus};
use crate::index::ordering::Release;
use crate::index::scan;
use crate::promote::evidence::{self, Evidence};
use crate::promote::policy::{self, Candidate, Decision, Verdict};
use crate::promote::rewrite::{self as split_set, RewritePlan};
use crate::promote::waiver::{self, Waiver};
use crate::promote::{StagedFile, copy_items, staged_set};
use crate::store::publish::{Publication, Published, Transfer, publish_set, upload_items};
use crate::store::transfer;
use crate::store::{self, Storage, StoreSettings, StoreUrl};
use crate::ui::{markdown_table, plural, text_table};
use crate::wheel::filename::normalize_name;
use crate::wheel::rewrite::{Promotion, rewrite_set};
use crate::wheel::verify::{DEFAULT_MEMORY_BUDGET, VerifyOptions};

pub fn run(args: PromoteArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let PromoteArgs {
        from,
        to,
        test_reports,
        waiver,
        rewrite_version,
        dry_run,
        lock,
        store: store_args,
    } = args;
    let settings = store_settings(&store_args);
    let from_url = StoreUrl::parse(&from, &ctx.cwd)?;
    let to_url = StoreUrl::parse(&to, &ctx.cwd)?;
    if from_url == to_url {
        return Err(exit::usage(format!(
            "--from and --to are the same store ({from_url}); promote copies between two prefixes"
        )));
    }
    let waivers = match &waiver {
        Some(path) => waiver::load(&ctx.absolute(path))?,
        None => Vec::new(),
    };
    let evidence = read_evidence(ctx, &test_reports)?;

    let source = store::open(&from_url, &settings)?;
    let dest = store::open(&to_url, &settings)?;
    let scan = scan::scan(ctx, source.as_ref(), &HashMap::new(), settings.jobs)
        .with_context(|| format!("reading the staged set at {}", source.url()))?;
    for skipped in &scan.skipped {
        ctx.ui
            .warn(format!("{}: not part of the set: {skipped}", source.url()));
    }
    let set = staged_set(&scan);
    if let Some(path) = lock.map(|p| ctx.absolute(&p)) {
        crate::lock::Lock::read(&path)?.expect_wheels(
            &path,
            &format!("the staged set at {}", source.url()),
            set.iter().map(|s| (s.project.as_str(), s.version.as_str())),
        )?;
    }
    if set.is_empty() {
        anyhow::bail!(
            "nothing to promote: {} holds no wheels in the <project>/<file> layout\n\
             hint: a set staged with --family lives under <from>/<family>: pass that as --from",
            source.url()
        );
    }

    // The gate judges the tested bytes: the staged files, before any rewrite.
    let candidates: Vec<Candidate> = set
        .iter()
        .map(|s| Candidate {
            filename: s.filename.clone(),
            sha256: s.file.sha256.clone(),
        })
        .collect();
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let decision = policy::decide(&candidates, &evidence, &waivers, today);
    show_decision(ctx, &decision, &waivers);
    if !decision.allowed() {
        let denied = decision
            .wheels
            .iter()
            .filter(|w| matches!(w.verdict, Verdict::Denied { .. }))
            .count();
        return Err(exit::classified(
            ExitStatus::VerificationFailed,
            format!(
                "promotion denied: {denied} of {} wheels have no passing test evidence; nothing was copied\n\
                 hint: pass the reports of the runs that tested exactly these files (--test-report), \
                 or a waiver with an owner, a reason and an expiry (--waiver)",
                decision.wheels.len()
            ),
        ));
    }

    match rewrite_version {
        None => promote_as_is(
            ctx,
            source.as_ref(),
            dest.as_ref(),
            &set,
            &settings,
            dry_run,
        ),
        Some(kind) => {
            let promotion = match kind {
                RewriteTo::Rc => Promotion::ReleaseCandidate(1),
                RewriteTo::Final => Promotion::Final,
            };
            promote_rewritten(
                ctx,
                source.as_ref(),
                dest.as_ref(),
                &set,
                promotion,
                &settings,
                dry_run,
            )
        }
    }
}

/// The staged objects, copied unchanged to the same keys.
fn promote_as_is(
    ctx: &Context,
    source: &dyn Storage,
    dest: &dyn Storage,
    set: &[StagedFile],
    settings: &StoreSettings,
    dry_run: bool,
) -> anyhow::Result<ExitStatus> {
    let publication = Publication {
        verb: "promote",
        transfer: Transfer::Copy,
        source: Some(source),
        dest,
        items: copy_items(set),
        releases: set.iter().map(release_of).collect(),
    };
    match publish_set(ctx, publication, settings, dry_run).map_err(publish_failure)? {
        Published::DryRun(plan) => ctx
            .ui
            .data(&plan.describe(Transfer::Copy.verb(), &dest.url())),
        Published::Done(done) => ctx.ui.status(done.summary(
            &format!("promoted {} wheel{}", set.len(), plural(set.len())),
            None,
            &format!("from {} to {}", source.url(), dest.url()),
        )),
    }
    Ok(ExitStatus::Success)
}

/// The tested wheels with new versions: fetched (and checked against the tested SHA-256s),
/// rewritten, verified, then uploaded; wheels already final are copied as they are.
fn promote_rewritten(
    ctx: &Context,
    source: &dyn Storage,
    dest: &dyn Storage,
    set: &[StagedFile],
    promotion: Promotion,
    settings: &StoreSettings,
    dry_run: bool,
) -> anyhow::Result<ExitStatus> {
    let RewritePlan { rewrite, keep } =
        split_set::split(set).map_err(|e| exit::usage(e.to_string()))?;
    // The rewritten set is built outside both stores and removed when the run ends.
    let work = tempfile::Builder::new()
        .prefix("rockbuild-promote-")
        .tempdir()
        .context("creating a work directory for the rewritten wheels")?;
    let tested = fetch_tested(ctx, source, set, &work.path().join("tested"), settings)?;
    let local = |staged: &StagedFile| {
        tested.get(&staged.file.key).cloned().with_context(|| {
            format!(
                "'{}' of {} was not among the downloaded wheels",
                staged.file.key,
                source.url()
            )
        })
    };
    let rewrite_paths = rewrite
        .iter()
        .map(local)
        .collect::<anyhow::Result<Vec<_>>>()?;
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
        let status = if error.is_wheel_failure() {
            ExitStatus::Failure
        } else {
            ExitStatus::Usage
        };
        // The rewrite read temporary copies, gone when this run ends: name the staged objects.
        let staged: HashMap<&Path, String> = tested
            .iter()
            .map(|(key, path)| (path.as_path(), format!("{}/{key}", source.url())))
            .collect();
        let error = error.rename_wheels(&|path: &Path| staged.get(path).map(PathBuf::from));
        exit::classified(status, format!("{error}\nnothing was written"))
    })?;
    task.finish(format!(
        "{} wheel{} in {:.1}s",
        rewritten.len(),
        plural(rewritten.len()),
        task.elapsed().as_secs_f64()
    ));
    let description = split_set::describe(&rewritten, &keep, promotion, dry_run);
    if dry_run {
        ctx.ui.data(&description);
    } else {
        ctx.ui.status(description.trim_end());
    }

    // The rewritten wheels with the ones kept, as one set: the container, RECORD, metadata
    // and every pin between members are checked again. Pins outside the set, GPU code and
    // RPATHs are the tested wheels' own, unchanged by the rewrite.
    let kept_paths = keep.iter().map(local).collect::<anyhow::Result<Vec<_>>>()?;
    let mut check: Vec<PathBuf> = rewritten.iter().map(|r| r.path.clone()).collect();
    check.extend(kept_paths);
    let options = VerifyOptions {
        targets: Vec::new(),
        stack_wheels: set.iter().map(|s| normalize_name(&s.project)).collect(),
        expectations: Default::default(),
        expected: Default::default(),
        index_url: None,
        memory_budget: DEFAULT_MEMORY_BUDGET,
        check_pins_outside_set: false,
        // The platform tag was judged when the set was staged; a rewrite does not change it.
        allow_linux_tag: true,
    };
    let report = verify_wheels(ctx, &check, &options)?;
    if !report.ok {
        return Err(exit::classified(
            ExitStatus::VerificationFailed,
            format!(
                "the rewritten set failed verification; nothing was written to {}",
                dest.url()
            ),
        ));
    }
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

    let publication = Publication {
        verb: "promote",
        transfer: Transfer::Write,
        source: Some(source),
        dest,
        items,
        releases,
    };
    let done = match publish_set(ctx, publication, settings, dry_run).map_err(publish_failure)? {
        Published::DryRun(plan) => {
            ctx.ui
                .data(&plan.describe(Transfer::Write.verb(), &dest.url()));
            return Ok(ExitStatus::Success);
        }
        Published::Done(done) => done,
    };
    ctx.ui.status(done.summary(
        &format!("promoted {} wheels as {promotion}", set.len()),
        Some(&format!(
            "{} rewritten, {} as they were",
            rewritten.len(),
            keep.len()
        )),
        &format!("from {} to {}", source.url(), dest.url()),
    ));
    ctx.ui.step_summary(&format!(
        "### Promotion as {promotion}\n\n```\n{}```",
        description
    ));
    Ok(ExitStatus::Success)
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
) -> anyhow::Result<HashMap<String, PathBuf>> {
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
    .map_err(|e| anyhow::anyhow!("downloading the tested set from {}: {e}", source.url()))?;
    Ok(fetched.into_iter().collect())
}

/// Reads every report, before anything else is looked at. A report the user named that
/// cannot be read or parsed is a usage error: going on would deny the promotion and then
/// suggest the very flag that was given.
fn read_evidence(ctx: &Context, paths: &[PathBuf]) -> anyhow::Result<Vec<Evidence>> {
    paths
        .iter()
        .map(|path| {
            evidence::read(&ctx.absolute(path)).map_err(|error| {
                exit::usage(format!(
                    "--test-report {error}\nhint: pass the report `rockbuild smoke --report FILE` \
                     or a JUnit XML run wrote for exactly this staged set; nothing was copied"
                ))
            })
        })
        .collect()
}

/// The gate's decision, wheel by wheel, with the waivers used and the expired ones.
fn show_decision(ctx: &Context, decision: &Decision, waivers: &[Waiver]) {
    let rows: Vec<Vec<String>> = decision
        .wheels
        .iter()
        .map(|w| {
            let (verdict, why) = match &w.verdict {
                Verdict::Passed { sources } => ("passed", sources.join(", ")),
                Verdict::Waived { number, waived } => {
                    ("waived", format!("waiver {number} ({})", waived.join("; ")))
                }
                Verdict::Denied { reasons } => ("DENIED", reasons.join("; ")),
            };
            vec![w.filename.clone(), verdict.to_string(), why]
        })
        .collect();
    ctx.ui
        .status(text_table(&["wheel", "verdict", "evidence"], &rows));
    let mut summary = markdown_table(&["wheel", "verdict", "evidence"], &rows);
    for note in &decision.notes {
        ctx.ui.warn(note);
    }
    for number in decision.waivers_used() {
        if let Some(w) = waivers.iter().find(|w| w.number == number) {
            let line = format!(
                "waiver {number} ({}): `{}` owned by {}, until {}: {}",
                w.location, w.pattern, w.owner, w.expires, w.reason
            );
            ctx.ui.warn(format!("promoting on {line}"));
            summary.push_str(&format!("\n- used {line}"));
        }
    }
    for number in &decision.expired {
        if let Some(w) = waivers.iter().find(|w| w.number == *number) {
            let line = format!(
                "waiver {number} ({}): `{}` owned by {} expired on {}; it was not counted",
                w.location, w.pattern, w.owner, w.expires
            );
            ctx.ui.warn(&line);
            summary.push_str(&format!("\n- {line}"));
        }
    }
    ctx.ui
        .step_summary(&format!("### Promotion gate\n\n{summary}"));
}
