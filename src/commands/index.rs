//! `rockbuild index URL [--dry-run [--json]]`: rewrite the index pages of a store prefix from
//! what is stored there (see `publish::reindex`).

use std::collections::HashMap;

use crate::cli::IndexArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::index::scan;
use crate::publish::{nesting, reindex};
use crate::settings::index::IndexSettings;
use crate::store::{self, lease};

pub fn run(args: IndexArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = IndexSettings::resolve(args, ctx)?;
    let store = store::open(&settings.url, &settings.store)?;
    // One writer at a time, from before the prefix is read until its pages are written.
    let lease = match settings.dry_run {
        true => None,
        false => Some(lease::acquire(
            ctx,
            store.as_ref(),
            "index",
            &settings.store.lease,
        )?),
    };
    let listing = store.list()?;
    nesting::check("index", &settings.url, &listing, &settings.store)?;
    let scan = scan::scan(ctx, store.as_ref(), &HashMap::new(), settings.store.jobs)?;
    for skipped in &scan.skipped {
        ctx.ui.warn(format!("not indexed: {skipped}"));
    }
    let plan = reindex::plan(&store.url(), &scan);
    let Some(mut lease) = lease else {
        ctx.ui.data(&match settings.json {
            true => serde_json::to_string_pretty(&plan)?,
            false => plan.to_text(),
        })?;
        return Ok(ExitStatus::Success);
    };
    reindex::apply(ctx, store.as_ref(), &mut lease, &plan)?;
    ctx.ui.status(plan.summary());
    Ok(ExitStatus::Success)
}
