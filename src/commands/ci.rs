//! `rockbuild ci generate`: the workflows from the family and release tables, written, checked
//! (`--check`) or printed (`--dry-run`).

use crate::ci::{self, files, generate};
use crate::cli::CiCommand;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::settings::ci::{CiGenerateSettings, Mode};

pub fn run(command: CiCommand, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let CiCommand::Generate(args) = command;
    let settings = CiGenerateSettings::resolve(args, ctx)?;
    let plan = generate::plan(&settings.families, &settings.releases, settings.chains.mode)?;
    let dir = &settings.output_dir;
    ctx.ui.note(format!("tables: {}", settings.tables));
    match settings.mode {
        Mode::DryRun { json: true } => ctx.ui.data(&serde_json::to_string_pretty(&plan)?)?,
        Mode::DryRun { json: false } => ctx.ui.data(plan.to_text().trim_end())?,
        Mode::Check => {
            // A missing directory is not "every workflow differs": nothing was committed here.
            if !dir.is_dir() {
                return Err(ci::Error::NothingToCheck {
                    dir: dir.display().to_string(),
                }
                .into());
            }
            let stale = files::differences(&plan, &files::inspect(dir)?);
            if !stale.is_empty() {
                return Err(ci::Error::Stale {
                    dir: dir.display().to_string(),
                    files: stale.join(", "),
                }
                .into());
            }
            ctx.ui
                .note(format!("{}: the workflows are up to date", dir.display()));
        }
        Mode::Write => {
            let disk = files::inspect(dir)?;
            let changed = files::differences(&plan, &disk);
            files::apply(&plan, dir, &disk)?;
            ctx.ui.note(format!(
                "{}: {} workflows written, {} chains (from {}) ({})",
                dir.display(),
                plan.workflows.len(),
                settings.chains.mode,
                settings.chains.source,
                if changed.is_empty() {
                    "unchanged".to_string()
                } else {
                    format!("changed: {}", changed.join(", "))
                }
            ));
        }
    }
    Ok(ExitStatus::Success)
}
