//! `rockbuild checkout`: settings → resolve, inspect, plan (printed with --dry-run) → apply →
//! summary and lock.

use crate::checkout::{self, Checkout};
use crate::cli::CheckoutArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::settings::checkout::CheckoutSettings;

pub fn run(args: CheckoutArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = CheckoutSettings::resolve(args, ctx)?;
    crate::settings::lock::announce(&settings.selection, ctx);
    let outcomes = match checkout::checkout(
        &settings.selection,
        &settings.options,
        settings.dry_run,
        ctx,
    )? {
        Checkout::Planned(plan) => {
            ctx.ui.data(&if settings.json {
                plan.to_json()
            } else {
                plan.to_text()
            });
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
