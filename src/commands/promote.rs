//! `rockbuild promote --from URL --to URL --test-report FILE... [--waiver FILE] [--dry-run]`:
//! gate the staged set on evidence (default deny), refuse versions that would sort below
//! published builds, then copy every object (verified) and rewrite the destination index once.

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use anyhow::Context as _;

use super::index::store_settings;
use crate::cli::PromoteArgs;
use crate::context::Context;
use crate::exit::{self, ExitStatus};
use crate::index::name_and_version;
use crate::index::scan::{self, layout};
use crate::promote::evidence::{self, Evidence};
use crate::promote::ordering::{self, Release};
use crate::promote::policy::{self, Candidate, Decision, Verdict};
use crate::promote::waiver::{self, Waiver};
use crate::promote::{copy_items, staged_set};
use crate::store::publish::{self, PublishError};
use crate::store::transfer::human_bytes;
use crate::store::{self, StoreUrl};
use crate::ui::{markdown_table, text_table};

pub fn run(args: PromoteArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let PromoteArgs {
        from,
        to,
        test_reports,
        waiver,
        rewrite_version,
        dry_run,
        store: store_args,
    } = args;
    if let Some(kind) = rewrite_version {
        return Err(exit::usage(format!(
            "--rewrite-version {kind:?} needs the wheel rewriter, which this build does not include yet"
        )));
    }
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
    let evidence = read_evidence(ctx, &test_reports);

    let source = store::open(&from_url, &settings)?;
    let dest = store::open(&to_url, &settings)?;
    let scan = scan::scan(ctx, source.as_ref(), &HashMap::new(), settings.jobs)
        .with_context(|| format!("reading the staged set at {}", source.url()))?;
    for skipped in &scan.skipped {
        ctx.ui
            .warn(format!("{}: not part of the set: {skipped}", source.url()));
    }
    let set = staged_set(&scan);
    if set.is_empty() {
        anyhow::bail!(
            "nothing to promote: {} holds no wheels in the <project>/<file> layout",
            source.url()
        );
    }

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

    // What the destination already publishes: for the ordering lint and the page list.
    let (published, _) = layout(
        &dest
            .list()
            .with_context(|| format!("listing {}", dest.url()))?,
    );
    let problems = ordering::check(
        &set.iter()
            .map(|s| Release {
                project: s.project.clone(),
                version: s.version.clone(),
            })
            .collect::<Vec<_>>(),
        &published
            .iter()
            .filter_map(|p| {
                let filename = p.object.key.rsplit('/').next()?;
                name_and_version(filename).map(|(_, v)| Release {
                    project: p.project.clone(),
                    version: v.to_string(),
                })
            })
            .collect::<Vec<_>>(),
    );
    if !problems.is_empty() {
        let lines: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
        return Err(exit::classified(
            ExitStatus::PublishConflict,
            format!(
                "refusing to promote to {}: the new builds would not be the ones pip installs\n{}",
                dest.url(),
                lines.join("\n")
            ),
        ));
    }

    let items = copy_items(&set);
    let objects: Vec<&publish::SetObject> = items.iter().map(|i| &i.object).collect();
    let state = publish::destination_state(
        ctx,
        dest.as_ref(),
        &objects,
        settings.jobs,
        settings.attempts,
    )
    .map_err(|e| anyhow::anyhow!("checking {}: {e}", dest.url()))?;
    let projects: BTreeSet<&str> = published
        .iter()
        .map(|p| p.project.as_str())
        .chain(set.iter().map(|s| s.project.as_str()))
        .collect();
    let plan = publish::plan(items, &state, &projects.into_iter().collect::<Vec<_>>()).map_err(|conflicts| {
        let lines: Vec<String> = conflicts.iter().map(|c| format!("  - {c}")).collect();
        exit::classified(
            ExitStatus::PublishConflict,
            format!(
                "refusing to promote to {}: published objects are never replaced, and nothing was copied\n{}",
                dest.url(),
                lines.join("\n")
            ),
        )
    })?;
    if dry_run {
        ctx.ui.data(&plan.describe("copy", &dest.url()));
        return Ok(ExitStatus::Success);
    }

    let (index, pages) = publish::execute(
        ctx,
        Some(source.as_ref()),
        dest.as_ref(),
        &plan,
        settings.jobs,
        settings.attempts,
        "promote",
    )
    .map_err(publish_error)?;
    ctx.ui.status(format!(
        "promoted {} files ({} copied, {}; {} already there) from {} to {}; wrote {} index pages listing {} files",
        set.len(),
        plan.transfers.len(),
        human_bytes(plan.bytes()),
        plan.present.len(),
        source.url(),
        dest.url(),
        pages.len(),
        index.file_count()
    ));
    Ok(ExitStatus::Success)
}

/// Reads every report. One that cannot be read or parsed is no evidence at all: its wheels
/// count as untested (default deny), and the user is told why.
fn read_evidence(ctx: &Context, paths: &[PathBuf]) -> Vec<Evidence> {
    let mut out = Vec::new();
    for path in paths {
        match evidence::read(&ctx.absolute(path)) {
            Ok(evidence) => out.push(evidence),
            Err(error) => ctx
                .ui
                .warn(format!("test report {error}; it counts as no evidence")),
        }
    }
    out
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

/// Exit status of a failed publish: a conflict is 6, an interrupt 128+n, the rest 1.
pub fn publish_error(error: PublishError) -> anyhow::Error {
    let status = match error.interrupted() {
        Some(signal) => ExitStatus::Signal(signal),
        None if error.is_conflict() => ExitStatus::PublishConflict,
        None => ExitStatus::Failure,
    };
    exit::classified(status, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::promote::StagedFile;

    #[test]
    fn staged_sets_list_sidecars_after_their_wheels() {
        let set = vec![StagedFile {
            project: "torch".into(),
            version: "2.9.0".into(),
            filename: "torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
            file: publish::SetObject {
                key: "torch/torch-2.9.0-cp311-cp311-linux_x86_64.whl".into(),
                size: 1,
                sha256: "a".repeat(64),
            },
            sidecar: Some(publish::SetObject {
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
