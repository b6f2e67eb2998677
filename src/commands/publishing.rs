//! The tail `stage` and `promote` share (not a verb): with the set's objects decided, check
//! the destination (version order, no replaced objects), print the plan on `--dry-run`, or
//! move every object and write the index pages last.

use std::collections::BTreeSet;

use anyhow::Context as _;

use crate::context::Context;
use crate::exit::{self, ExitStatus};
use crate::index::render::Page;
use crate::index::scan::{Scan, layout};
use crate::promote::ordering::{self, Release};
use crate::store::publish::{self, Item, Plan, PublishError};
use crate::store::{Storage, StoreSettings};

/// What to publish where.
pub(super) struct Publication<'a> {
    /// The verb for messages (`stage`, `promote`).
    pub verb: &'static str,
    /// What the transfers are (`upload`, `copy`, `write`), and the word for "nothing was
    /// …" when the run is refused (`uploaded`, `copied`, `written`).
    pub transfer: &'static str,
    pub nothing: &'static str,
    /// Where `Source::Copy` items come from.
    pub source: Option<&'a dyn Storage>,
    pub dest: &'a dyn Storage,
    pub items: Vec<Item>,
    /// The versions the set brings, for the ordering lint.
    pub releases: Vec<Release>,
}

pub(super) enum Published {
    /// `--dry-run`: the plan was printed, nothing written.
    DryRun,
    Done {
        plan: Plan,
        index: Scan,
        pages: Vec<Page>,
    },
}

/// Refuses (exit 6, before anything is written) versions that would sort below published
/// builds and objects that would replace published ones; then prints the plan
/// (`dry_run`) or executes it, the index pages last.
pub(super) fn publish(
    ctx: &Context,
    publication: Publication<'_>,
    settings: &StoreSettings,
    dry_run: bool,
) -> anyhow::Result<Published> {
    let Publication {
        verb,
        transfer,
        nothing,
        source,
        dest,
        items,
        releases,
    } = publication;
    // What the destination already publishes: for the ordering lint and the page list.
    let (published, _) = layout(
        &dest
            .list()
            .with_context(|| format!("listing {}", dest.url()))?,
    );
    let problems = ordering::check(&releases, &ordering::published(&published));
    if !problems.is_empty() {
        let lines: Vec<String> = problems.iter().map(|p| format!("  - {p}")).collect();
        return Err(exit::classified(
            ExitStatus::PublishConflict,
            format!(
                "refusing to {verb} to {}: the new builds would not be the ones pip installs; nothing was {nothing}\n{}",
                dest.url(),
                lines.join("\n")
            ),
        ));
    }

    let objects: Vec<&publish::SetObject> = items.iter().map(|i| &i.object).collect();
    let state = publish::destination_state(ctx, dest, &objects, settings.jobs, settings.attempts)
        .map_err(|e| anyhow::anyhow!("checking {}: {e}", dest.url()))?;
    let projects: BTreeSet<&str> = published
        .iter()
        .map(|p| p.project.as_str())
        .chain(releases.iter().map(|r| r.project.as_str()))
        .collect();
    let plan = publish::plan(items, &state, &projects.into_iter().collect::<Vec<_>>())
        .map_err(|conflicts| {
            let lines: Vec<String> = conflicts.iter().map(|c| format!("  - {c}")).collect();
            exit::classified(
                ExitStatus::PublishConflict,
                format!(
                    "refusing to {verb} to {}: published objects are never replaced, and nothing was {nothing}\n{}",
                    dest.url(),
                    lines.join("\n")
                ),
            )
        })?;
    if dry_run {
        ctx.ui.data(&plan.describe(transfer, &dest.url()));
        return Ok(Published::DryRun);
    }
    let (index, pages) = publish::execute(
        ctx,
        source,
        dest,
        &plan,
        settings.jobs,
        settings.attempts,
        verb,
    )
    .map_err(publish_error)?;
    Ok(Published::Done { plan, index, pages })
}

/// Exit status of a failed publish: a conflict is 6, an interrupt 128+n, the rest 1.
fn publish_error(error: PublishError) -> anyhow::Error {
    let status = match error.interrupted() {
        Some(signal) => ExitStatus::Signal(signal),
        None if error.is_conflict() => ExitStatus::PublishConflict,
        None => ExitStatus::Failure,
    };
    exit::classified(status, error.to_string())
}
