//! `rockbuild retag`: verify the wheels, plan which `linux_<arch>` ones get the manylinux tag,
//! print the plan, then rewrite them (all or nothing: one refusal changes no wheel).

use crate::cli::RetagArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::settings::retag::RetagSettings;
use crate::ui::plural;
use crate::wheel::retag::{self, Action, RetagError};
use crate::wheel::verify::{
    DEFAULT_MEMORY_BUDGET, WheelExpectations, collect_wheels, verify_wheels,
};

pub fn run(args: RetagArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = RetagSettings::resolve(args, ctx)?;
    let wheels = collect_wheels(&settings.paths).map_err(RetagError::from)?;
    // Only the wheel itself must be sound (container, RECORD, metadata, ELF files): targets,
    // pins and the platform tag are what `verify` and `stage` judge afterwards.
    let expect = WheelExpectations {
        allow_linux_tag: true,
        ..WheelExpectations::default()
    };
    let reports = verify_wheels(&wheels, &expect, DEFAULT_MEMORY_BUDGET);
    let plan = retag::plan(&reports, &settings.platform);
    if settings.dry_run {
        ctx.ui.data(&if settings.json {
            serde_json::to_string_pretty(&plan)?
        } else {
            plan.to_text()
        })?;
        return Ok(if plan.refusals() == 0 {
            ExitStatus::Success
        } else {
            ExitStatus::VerificationFailed
        });
    }
    ctx.ui.status(plan.to_text().trim_end());
    if plan.refusals() > 0 {
        return Err(RetagError::Refused {
            refused: plan.refusals(),
            total: plan.actions.len(),
            platform: plan.platform.tag.clone(),
        }
        .into());
    }
    let mut done = 0;
    for (action, wheel) in plan.actions.iter().zip(&reports) {
        if let Action::Retag { new_file, .. } = action {
            retag::retag_wheel(&wheel.path, new_file, &plan.platform.tag)?;
            done += 1;
        }
    }
    ctx.ui.status(format!(
        "retagged {done} wheel{} to {}",
        plural(done),
        plan.platform.tag
    ));
    Ok(ExitStatus::Success)
}
