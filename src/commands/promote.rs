//! `rockbuild promote --from URL --to URL --test-report FILE... [--waiver FILE]
//! [--rewrite-version rc|final] [--dry-run [--json]]`: gate the staged set on evidence
//! (default deny), optionally rewrite its pre-release versions (the rewritten wheels are
//! verified), refuse versions that would sort below published builds, then copy or upload
//! every object (verified) and rewrite the destination index once (see `promote`).

use crate::cli::PromoteArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::promote;
use crate::publish;
use crate::settings::promote::PromoteSettings;
use crate::store::{self, lease};
use crate::ui::plural;
use crate::wheel::companion::Role;

pub fn run(args: PromoteArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = PromoteSettings::resolve(args, ctx)?;
    let source = store::open(&settings.from, &settings.store)?;
    let dest = store::open(&settings.to, &settings.store)?;
    let staged = promote::inspect(
        ctx,
        &settings.test_reports,
        source.as_ref(),
        settings.store.jobs,
        settings.lock.as_ref(),
        settings.promotion,
        &settings.sdk_indexes,
    )?;
    let decision = promote::gate(&staged, &settings.waivers);
    promote::show_gate(ctx, &decision, &settings.waivers);
    promote::require_allowed(&decision)?;
    let prepared = promote::prepare(
        ctx,
        &staged,
        &promote::Sources {
            source: source.as_ref(),
            indexes: &settings.sdk_indexes,
            settings: &settings.store,
        },
        settings.promotion,
        settings.public_version,
        &dest.url(),
        settings.dry_run,
    )?;
    // One writer at a time, from before the destination is read until its pages are written.
    let lease = match settings.dry_run {
        true => None,
        false => Some(lease::acquire(
            ctx,
            dest.as_ref(),
            "promote",
            &settings.store.lease,
        )?),
    };
    let found = publish::inspect(
        ctx,
        &settings.to,
        dest.as_ref(),
        &prepared.publication,
        &settings.store,
    )?;
    let plan = promote::plan(&staged, &decision, &settings.waivers, &prepared, &found)?;
    let Some(mut lease) = lease else {
        ctx.ui.data(&match settings.json {
            true => serde_json::to_string_pretty(&plan)?,
            false => plan.to_text(),
        })?;
        return Ok(ExitStatus::Success);
    };
    let rewrite = plan.rewrite.clone();
    let done = publish::apply(
        ctx,
        Some(source.as_ref()),
        dest.as_ref(),
        &mut lease,
        plan.publish,
        &settings.store,
    )?;
    let route = format!("from {} to {}", source.url(), dest.url());
    let products = staged
        .set
        .iter()
        .filter(|s| s.role() == Role::Product)
        .count();
    let wheels = format!("{products} wheel{}", plural(products));
    let companions = match rewrite.as_ref().and_then(|r| r.sdk.as_ref()) {
        Some(sdk) if !sdk.carried.is_empty() => sdk.carried.len(),
        _ => staged.set.len() - products,
    };
    let carried = match companions {
        0 => String::new(),
        n => format!(" and {n} ROCm SDK file{}", plural(n)),
    };
    match rewrite {
        None => ctx
            .ui
            .status(done.summary(&format!("promoted {wheels}{carried}"), None, &route)),
        Some(rewrite) => {
            ctx.ui.status(done.summary(
                &format!("promoted {wheels}{carried} as {}", rewrite.to),
                Some(&format!(
                    "{} rewritten, {} as they were",
                    rewrite.rewritten.len(),
                    rewrite.keep.len()
                )),
                &route,
            ));
            let mut summary = crate::ui::Markdown::lit("### Promotion as ");
            summary
                .push_text(&rewrite.to.to_string())
                .push_lit("\n\n")
                .push(crate::ui::Markdown::code_block(&rewrite.describe(false)));
            ctx.ui.step_summary(&summary);
        }
    }
    Ok(ExitStatus::Success)
}
