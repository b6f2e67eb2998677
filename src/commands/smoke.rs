//! `rockbuild smoke --index-url URL [--lock FILE] [--report FILE] [--dry-run [--json]]`:
//! install the staged set into a fresh venv (hash-checked), import it, run each project's
//! smoke command, write the test report `promote` consumes (see `smoke`).

use crate::cli::SmokeArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::promote::evidence::{Outcome, outcome_word};
use crate::settings::smoke::SmokeSettings;
use crate::smoke::{self, SmokeRun};
use crate::ui::{markdown_table, text_table};

pub fn run(args: SmokeArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = SmokeSettings::resolve(args, ctx)?;
    let (selected, notes) = smoke::select(
        &settings.stack,
        &settings.client,
        settings.versions.as_ref(),
        &settings.device_targets,
    )?;
    for note in &notes {
        ctx.ui.status(note);
    }
    ctx.ui.status(format!(
        "smoke-testing {} from {}",
        selected
            .iter()
            .flat_map(|s| {
                std::iter::once(&s.wheel)
                    .chain(s.devices.iter().map(|d| &d.name))
                    .map(|name| format!("{name}=={}", s.version))
            })
            .collect::<Vec<_>>()
            .join(", "),
        settings.client.display_url()
    ));
    let work = tempfile::Builder::new()
        .prefix("rockbuild-smoke-")
        .tempdir()
        .map_err(smoke::Error::WorkDir)?;
    let plan = smoke::plan(ctx.env(), &settings.smoke, &selected, work.path());
    if settings.dry_run {
        ctx.ui.data(&match settings.json {
            true => plan.to_json()?,
            false => plan.to_text(),
        })?;
        return Ok(ExitStatus::Success);
    }
    let run = smoke::apply(ctx, &plan)?;
    smoke::write_report(&run.report, &settings.report)?;
    show(ctx, &run);
    ctx.ui
        .status(format!("test report: {}", settings.report.display()));
    run.verdict(&settings.report, &settings.smoke.log_dir)?;
    Ok(ExitStatus::Success)
}

/// The checks as a table, on stderr and in the step summary.
fn show(ctx: &Context, run: &SmokeRun) {
    let rows: Vec<Vec<String>> = run
        .report
        .checks
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                outcome_word(c.result).to_string(),
                smoke::summary_line(&c.detail, c.result == Outcome::Failed),
            ]
        })
        .collect();
    ctx.ui
        .status(text_table(&["check", "result", "detail"], &rows));
    let mut summary = crate::ui::Markdown::lit("### Smoke test\n\n");
    summary.push(markdown_table(&["check", "result", "detail"], &rows));
    ctx.ui.step_summary(&summary);
}
