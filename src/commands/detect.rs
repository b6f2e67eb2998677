//! `rockbuild detect`: the machine's AMD GPUs, their gfx targets and families, and what a
//! build on this machine would target.

use crate::cli::DetectArgs;
use crate::context::Context;
use crate::detect;
use crate::exit::ExitStatus;
use crate::settings::detect::DetectSettings;

pub fn run(args: DetectArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = DetectSettings::resolve(args, ctx)?;
    let snapshot = detect::sysfs::read(&settings.sysfs_root)?;
    let detection = detect::resolve(&snapshot, &settings.tables(), &settings.runtime)?;
    if settings.json {
        ctx.ui.data(&serde_json::to_string_pretty(&detection)?)?;
    } else {
        ctx.ui.data(&detection.to_text())?;
    }
    detection.selection().map_err(detect::Error::from)?;
    Ok(ExitStatus::Success)
}
