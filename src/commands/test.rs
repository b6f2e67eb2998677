//! `rockbuild test`: one shard of PyTorch's test suite (or the GPU smoke suite) on the wheels
//! of an index. Resolve settings, inspect the sources and the index, plan, print the plan or
//! the skip lists on request, run, summarise.

use anyhow::Context as _;

use crate::cli::TestArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::settings::test::TestSettings;
use crate::suite::plan::{self, GpuState};
use crate::suite::report::LoadedShard;
use crate::suite::summary;
use crate::suite::{self as stage, Error};

pub fn run(args: TestArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = TestSettings::resolve(args, ctx)?;
    let work = tempfile::Builder::new()
        .prefix("rockbuild-shard-")
        .tempdir()
        .context("creating a work directory")?;
    let world = stage::inspect::world(&settings, ctx, work.path())?;
    if settings.print_skips {
        let (selection, present) = plan::skip_selection(&settings, &world, &GpuState::Pending)?;
        if settings.json {
            let mut value = serde_json::to_value(&selection)?;
            value["excluded_modules"] = serde_json::to_value(&present)?;
            ctx.ui.data(&serde_json::to_string_pretty(&value)?)?;
        } else {
            let present = world.source.is_some().then_some(present.as_slice());
            ctx.ui.data(&selection.to_text(settings.k_mode, present))?;
        }
        return Ok(ExitStatus::Success);
    }
    if settings.dry_run {
        let plan = plan::plan(&settings, &world, &GpuState::Pending)?;
        if settings.json {
            ctx.ui.data(&serde_json::to_string_pretty(&plan)?)?;
        } else {
            ctx.ui.data(&plan.to_text())?;
        }
        return Ok(ExitStatus::Success);
    }

    let shard = stage::run::run(ctx, &settings, &world)?;
    let report_path = settings.output_dir.join(stage::report::SHARD_FILE);
    let loaded = LoadedShard {
        file: report_path.display().to_string(),
        report: shard.report.clone(),
        junit: shard.junit,
    };
    let summary = summary::shard_summary(&loaded);
    ctx.ui.status(summary.to_text());
    ctx.ui.step_summary(&summary.to_markdown());
    ctx.ui.status(format!(
        "shard results: {} (combine shards with `rockbuild test-report`)",
        settings.output_dir.display()
    ));
    if let Some(reason) = shard.report.unfit {
        return Err(Error::RunnerUnfit {
            reason,
            report: report_path.display().to_string(),
        }
        .into());
    }
    if let Some(signal) = shard.interrupted {
        return Err(Error::Interrupted {
            signal,
            report: report_path.display().to_string(),
        }
        .into());
    }
    match summary.result {
        crate::promote::evidence::Outcome::Passed => Ok(ExitStatus::Success),
        _ => Err(Error::TestsFailed {
            summary: format!(
                "{} shard {}/{} did not pass; logs in {}",
                settings.config,
                settings.shard.number,
                settings.shard.total,
                settings.output_dir.join("logs").display()
            ),
        }
        .into()),
    }
}
