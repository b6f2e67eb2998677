//! `rockbuild test-report DIR...`: every shard's results combined into one summary and the
//! test report promote reads.

use anyhow::Context as _;

use crate::cli::TestReportArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::promote::evidence::Outcome;
use crate::settings::test_report::TestReportSettings;
use crate::suite::{Error, summary};

pub fn run(args: TestReportArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = TestReportSettings::resolve(args, ctx)?;
    let shards = crate::suite::report::load_shards(&settings.results)?;
    let (summary, report) = summary::combine(
        &shards,
        &settings.expect,
        &settings.shard_counts,
        &format!("rockbuild {}", env!("CARGO_PKG_VERSION")),
    )?;
    let mut text = serde_json::to_string_pretty(&report).context("serializing the test report")?;
    text.push('\n');
    crate::fsutil::write_atomic(&settings.report, text.as_bytes())
        .with_context(|| format!("writing the test report {}", settings.report.display()))?;
    let markdown = summary.to_markdown();
    if let Some(path) = &settings.markdown {
        crate::fsutil::write_atomic(path, markdown.as_str().as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    ctx.ui.step_summary(&markdown);
    if settings.json {
        ctx.ui.data(&serde_json::to_string_pretty(&summary)?)?;
    }
    ctx.ui.status(summary.to_text());
    ctx.ui
        .status(format!("test report: {}", settings.report.display()));
    match summary.result {
        Outcome::Passed => Ok(ExitStatus::Success),
        _ => Err(Error::TestsFailed {
            summary: format!(
                "the combined test report records a failure; promote will refuse these wheels ({})",
                settings.report.display()
            ),
        }
        .into()),
    }
}
