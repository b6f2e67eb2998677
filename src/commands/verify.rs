//! `rockbuild verify [WHEEL|DIR]... [--lock FILE] [--targets gfxA,gfxB] [--index-url URL]
//! [--json]`: every problem of every wheel on stderr, the report as JSON on stdout, exit 5
//! when anything is wrong.

use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::recipes::Recipes;
use crate::settings::verify::VerifySettings;
use crate::verify;

pub fn run(args: VerifyArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    let settings = VerifySettings::resolve(args, ctx, recipes)?;
    let wheels = verify::collect(&settings.inputs)?;
    let report = verify::run(ctx, &wheels, &settings.expect)?;
    if settings.json {
        ctx.ui.data(&verify::report::to_json(&report)?)?;
    }
    Ok(if report.ok {
        ExitStatus::Success
    } else {
        ExitStatus::VerificationFailed
    })
}
