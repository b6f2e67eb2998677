//! `rockbuild compat`: the versions, gfx targets, ROCm libraries and features of a venv or a
//! set of wheels, in the layout of ROCm's PyTorch compatibility page, checked against the lock.

use crate::cli::CompatArgs;
use crate::compat;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::recipes::Recipes;
use crate::settings::compat::{CompatSettings, Subject};

pub fn run(args: CompatArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    let settings = CompatSettings::resolve(args, ctx, recipes)?;
    let distributions = settings.distributions();
    let probed = match &settings.subject {
        Subject::Venv(dir) => compat::probe::venv(&ctx.runner, dir, &distributions)?,
        Subject::Wheels(paths) => compat::probe::wheels(paths, &distributions)?,
    };
    let lock = settings
        .lock
        .as_ref()
        .map(|(path, lock)| (path.display().to_string(), lock));
    let report = compat::assemble(
        &probed,
        &settings.columns,
        lock.as_ref().map(|(path, lock)| (path.as_str(), *lock)),
    );
    if settings.json {
        ctx.ui.data(&serde_json::to_string_pretty(&report)?)?;
    } else {
        ctx.ui.data(report.to_markdown().as_str())?;
    }
    report.outcome()?;
    Ok(ExitStatus::Success)
}
