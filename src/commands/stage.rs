//! `rockbuild stage --to URL [--input DIR] [--family F] [--lock FILE] [--targets LIST]
//! [--index-url URL] [--dry-run]`: verify every wheel of the build output (nothing is
//! uploaded unless all pass), then upload the wheels and their PEP 658 sidecars in parallel
//! (retried, never replacing published bytes), and write the index pages last, so a run
//! stopped half way leaves the index as it was.

use crate::cli::StageArgs;
use crate::context::Context;
use crate::exit::{self, ExitStatus};
use crate::index::ordering::Release;
use crate::store::publish::{
    Publication, PublishError, Published, Transfer, publish_set, upload_items,
};
use crate::store::{self, StoreUrl};
use crate::ui::plural;

use super::index::store_settings;
use super::verify::{collect, expectations, verify_wheels};

pub fn run(args: StageArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let StageArgs {
        to,
        input,
        family,
        lock,
        targets,
        index_url,
        dry_run,
        allow_linux_tag,
        store: store_args,
        config,
    } = args;
    let settings = store_settings(&store_args);
    let stack = config.stack(ctx)?;
    let table = config.family_table(ctx)?;
    // Every usage error comes before the (possibly long) verification.
    let mut dest_url = StoreUrl::parse(&to, &ctx.cwd)?;
    let family = match &family {
        Some(name) => {
            let family = table
                .family_named(name)
                .map_err(|e| exit::usage(format!("--family: {e}")))?;
            dest_url = dest_url.join(&family.name).map_err(|e| {
                exit::usage(format!(
                    "--family '{}' cannot be a store path segment: {e}",
                    family.name
                ))
            })?;
            Some(family)
        }
        None => None,
    };
    // With a lock, the targets are the lock's: a different --targets is drift, not an override.
    if let (Some(path), Some(list)) = (&lock, &targets) {
        let path = ctx.absolute(path);
        let given = table
            .targets(list)
            .map_err(|e| exit::usage(format!("--targets: {e}")))?;
        crate::lock::Lock::read(&path)?.expect_targets(&path, "--targets", &given)?;
    }
    let (mut options, mut targets_from) = expectations(
        ctx,
        &stack,
        &table,
        lock.as_deref(),
        targets.as_deref(),
        index_url,
    )?;
    options.allow_linux_tag = allow_linux_tag;
    // Without a lock record or --targets, the family names the targets the set was built for.
    if options.targets.is_empty()
        && let Some(family) = family
    {
        options.targets = family.targets.clone();
        targets_from = Some(format!("family {}", family.name));
    }
    match &targets_from {
        Some(from) => ctx.ui.status(format!(
            "GPU targets every library must carry: {} (from {from})",
            options
                .targets
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(",")
        )),
        None => ctx.ui.warn(
            "no GPU targets to check (give --targets, --family or a lock with a build record): \
             libraries are checked for HIP code, not for which targets it covers",
        ),
    }

    let input = ctx.absolute(&input);
    let wheels = collect(std::slice::from_ref(&input))?;
    let report = verify_wheels(ctx, &wheels, &options)?;
    if !report.ok {
        let failed = report.wheels.iter().filter(|w| !w.ok()).count();
        return Err(exit::classified(
            ExitStatus::VerificationFailed,
            format!(
                "{} (above); nothing was uploaded to {dest_url}",
                what_failed(
                    failed,
                    report.wheels.len(),
                    report.set_problems.len(),
                    &input.display().to_string()
                )
            ),
        ));
    }

    let items = upload_items(&report.wheels)?;
    let releases: Vec<Release> = report
        .wheels
        .iter()
        .filter_map(|w| {
            Some(Release {
                project: w.name.clone()?,
                version: w.version.clone()?,
            })
        })
        .collect();
    let dest = store::open(&dest_url, &settings)?;
    let publication = Publication {
        verb: "stage",
        transfer: Transfer::Upload,
        source: None,
        dest: dest.as_ref(),
        items,
        releases,
    };
    match publish_set(ctx, publication, &settings, dry_run).map_err(publish_failure)? {
        Published::DryRun(plan) => ctx
            .ui
            .data(&plan.describe(Transfer::Upload.verb(), &dest.url())),
        Published::Done(done) => ctx.ui.status(done.summary(
            &format!(
                "staged {} wheel{}",
                report.wheels.len(),
                plural(report.wheels.len())
            ),
            None,
            &format!("to {}", dest.url()),
        )),
    }
    Ok(ExitStatus::Success)
}

/// What failed verification: wheels on their own, the set as a whole (a pin between two
/// wheels, a missing project), or both.
fn what_failed(failed: usize, wheels: usize, set_problems: usize, input: &str) -> String {
    let set = format!("{set_problems} problem{}", plural(set_problems));
    match (failed, set_problems) {
        (_, 0) => format!(
            "{failed} of {wheels} wheel{} in {input} failed verification",
            plural(wheels)
        ),
        (0, _) => format!(
            "the {wheels} wheel{} in {input} passed one by one, but the set has {set}",
            plural(wheels)
        ),
        _ => format!(
            "{failed} of {wheels} wheel{} in {input} failed verification, and the set has {set}",
            plural(wheels)
        ),
    }
}

/// Exit status of a refused or failed publish (`stage`, `promote`): a conflict is 6, an
/// interrupt 128+n, the rest 1.
pub(super) fn publish_failure(error: PublishError) -> anyhow::Error {
    let status = match error.interrupted() {
        Some(signal) => ExitStatus::Signal(signal),
        None if error.is_conflict() => ExitStatus::PublishConflict,
        None => ExitStatus::Failure,
    };
    exit::classified(status, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::what_failed;

    #[test]
    fn the_refusal_counts_wheel_and_set_problems() {
        assert_eq!(
            what_failed(1, 3, 0, "dist"),
            "1 of 3 wheels in dist failed verification"
        );
        assert_eq!(
            what_failed(0, 3, 1, "dist"),
            "the 3 wheels in dist passed one by one, but the set has 1 problem"
        );
        assert_eq!(
            what_failed(2, 3, 2, "dist"),
            "2 of 3 wheels in dist failed verification, and the set has 2 problems"
        );
    }
}
