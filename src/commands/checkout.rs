//! `rockbuild checkout`: settings → resolve, inspect, plan (printed with --dry-run) → apply →
//! summary and lock.

use crate::checkout::{self, Checkout};
use crate::cli::CheckoutArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::flock::{Holder, LockFile};
use crate::recipes::Recipes;
use crate::settings::checkout::CheckoutSettings;

pub fn run(args: CheckoutArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    let settings = CheckoutSettings::resolve(args, ctx)?;
    // One checkout at a time into a root: two would interleave their resolutions and write
    // one lock from both. Held until the lock file is written (dropped at return).
    let _root_lock = match settings.dry_run {
        true => None,
        false => Some(lock_root(&settings.selection.root)?),
    };
    crate::settings::lock::announce(&settings.selection, ctx);
    let outcomes = match checkout::checkout(
        &settings.selection,
        &settings.options,
        settings.dry_run,
        ctx,
        recipes,
    )? {
        Checkout::Planned(plan) => {
            ctx.ui.data(&if settings.json {
                plan.to_json()
            } else {
                plan.to_text()
            })?;
            return Ok(ExitStatus::Success);
        }
        Checkout::Done(outcomes) => outcomes,
    };
    let rows: Vec<_> = outcomes.iter().map(|o| o.row.clone()).collect();
    checkout::print_summary(ctx, "checkout", &rows);
    if let Some(report) = &settings.report {
        crate::fsutil::write_atomic(report, serde_json::to_string_pretty(&rows)?.as_bytes())?;
    }
    let locked = outcomes
        .into_iter()
        .map(|o| (o.row.project.clone(), o.locked))
        .collect();
    checkout::write_lock(&settings.selection, &settings.lock_path, locked, None)?;
    ctx.ui
        .status(format!("lock: {}", settings.lock_path.display()));
    Ok(ExitStatus::Success)
}

/// Takes the root's lock file (`<root>/.rockbuild-checkout.lock`) or refuses, naming the
/// checkout that holds it.
fn lock_root(root: &std::path::Path) -> anyhow::Result<LockFile> {
    let path = root.join(".rockbuild-checkout.lock");
    let (lock, _) = match LockFile::acquire(&path, &Holder::this_run("checkout"), false) {
        Ok(taken) => taken,
        Err(error @ crate::flock::LockError::Io { .. }) => {
            return Err(anyhow::Error::new(error).context(format!(
                "cannot take the lock of the checkout root {}; nothing was changed",
                root.display()
            )));
        }
        Err(error) => {
            return Err(anyhow::Error::new(error).context(format!(
                "another checkout is writing into {}; nothing was changed: run this again when \
                 it has finished (a killed checkout's lock is released by the kernel)",
                root.display()
            )));
        }
    };
    crate::fault::point("checkout");
    Ok(lock)
}
