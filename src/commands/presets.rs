//! `rockbuild presets`: the version preset table as the stack resolves it.

use crate::cli::PresetsArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::stack::PresetTable;

pub fn run(args: PresetsArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let PresetsArgs { config, presets } = args;
    let stack = config.stack(ctx)?;
    let table = PresetTable::load(presets.map(|p| ctx.absolute(&p)).as_deref())?;
    ctx.ui.data(&table.to_text(&stack))?;
    Ok(ExitStatus::Success)
}
