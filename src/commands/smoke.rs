//! `rockbuild smoke --index-url URL [--lock FILE] [--report FILE]`: install the staged set into
//! a fresh venv (hash-checked), import it, run each project's smoke command, write the test
//! report `promote` consumes.

use anyhow::Context as _;

use crate::cli::SmokeArgs;
use crate::context::Context;
use crate::exit::{self, ExitStatus};
use crate::index::client::IndexClient;
use crate::lock::Lock;
use crate::promote::evidence::{Outcome, outcome_word};
use crate::smoke::{self, Settings};
use crate::ui::{markdown_table, text_table};

pub fn run(args: SmokeArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let SmokeArgs {
        index_url,
        lock,
        report,
        extra_index_url,
        venv,
        python,
        config,
    } = args;
    let stack = config.stack(ctx)?;
    let versions = match &lock {
        Some(path) => {
            let path = ctx.absolute(path);
            let lock = Lock::read(&path)?;
            let build = lock.build.ok_or_else(|| {
                exit::usage(format!(
                    "{}: the lock has no build record (versions); run `rockbuild build` with it first, or omit --lock to test the newest wheels",
                    path.display()
                ))
            })?;
            Some(build.versions)
        }
        None => None,
    };
    let client = IndexClient::new(&index_url).map_err(|e| exit::usage(e.to_string()))?;
    let (selected, notes) = smoke::select(&stack, &client, versions.as_ref())?;
    for note in &notes {
        ctx.ui.status(note);
    }
    ctx.ui.status(format!(
        "smoke-testing {} from {}",
        selected
            .iter()
            .map(|s| format!("{}=={}", s.project.wheel, s.version))
            .collect::<Vec<_>>()
            .join(", "),
        client.display_url()
    ));

    let report_path = ctx.absolute(&report);
    let log_dir = report_path.with_extension("logs");
    let work = tempfile::Builder::new()
        .prefix("rockbuild-smoke-")
        .tempdir()
        .context("creating a work directory")?;
    let (venv, clear_venv) = match venv {
        Some(dir) => {
            let dir = ctx.absolute(&dir);
            let holds_venv = dir.join("pyvenv.cfg").is_file();
            let empty = fs_err::read_dir(&dir)
                .map(|mut d| d.next().is_none())
                .unwrap_or(true);
            if !holds_venv && !empty {
                return Err(exit::usage(format!(
                    "--venv {}: the directory is not empty and is not a venv; smoke will only empty a directory that holds a venv",
                    dir.display()
                )));
            }
            (dir, holds_venv)
        }
        None => (work.path().join("venv"), false),
    };
    let settings = Settings {
        index_url,
        extra_index_urls: extra_index_url,
        venv,
        clear_venv,
        python: python
            .map(|p| ctx.absolute(&p))
            .unwrap_or_else(|| "python3".into()),
        log_dir,
        work_dir: work.path().to_path_buf(),
    };
    let run = smoke::run(ctx, &settings, &selected)?;
    let mut text =
        serde_json::to_string_pretty(&run.report).context("serializing the test report")?;
    text.push('\n');
    crate::fsutil::write_atomic(&report_path, text.as_bytes())
        .with_context(|| format!("writing the test report {}", report_path.display()))?;

    let rows: Vec<Vec<String>> = run
        .report
        .checks
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                outcome_word(c.result).to_string(),
                first_line(&c.detail, c.result),
            ]
        })
        .collect();
    ctx.ui
        .status(text_table(&["check", "result", "detail"], &rows));
    ctx.ui.step_summary(&format!(
        "### Smoke test\n\n{}",
        markdown_table(&["check", "result", "detail"], &rows)
    ));
    ctx.ui
        .status(format!("test report: {}", report_path.display()));

    if let Some(signal) = run.interrupted {
        return Err(exit::classified(
            ExitStatus::Signal(signal),
            format!(
                "smoke was interrupted; the report records the run as cancelled ({})",
                report_path.display()
            ),
        ));
    }
    if run.report.result != Outcome::Passed {
        let failed: Vec<String> = run
            .report
            .checks
            .iter()
            .filter(|c| c.result == Outcome::Failed)
            .map(|c| format!("  - {}:\n{}", c.name, indent(&c.detail)))
            .collect();
        return Err(exit::classified(
            ExitStatus::Failure,
            format!(
                "smoke failed ({} of {} checks); logs in {}\n{}",
                failed.len(),
                run.report.checks.len(),
                settings.log_dir.display(),
                failed.join("\n")
            ),
        ));
    }
    Ok(ExitStatus::Success)
}

/// The line of a check's detail worth a table cell: the last one of a failure (the error),
/// the first one of a success (what it printed).
fn first_line(detail: &str, result: Outcome) -> String {
    let line = match result {
        Outcome::Failed => detail.lines().rev().find(|l| !l.trim().is_empty()),
        _ => detail.lines().find(|l| !l.trim().is_empty()),
    };
    let line = line.unwrap_or_default().trim();
    match line.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("      {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
