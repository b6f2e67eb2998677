//! `rockbuild matrix`: the GitHub Actions matrix of a release type as step outputs in
//! `$GITHUB_OUTPUT` (what the workflows read) and, with `--json`, on stdout; a summary for
//! people on stdout otherwise (the JSON's table on stderr), and in the step summary.

use std::io::Write as _;

use anyhow::Context as _;

use crate::build::mode::BuildMode;
use crate::ci::matrix::{self, Matrix};
use crate::cli::MatrixArgs;
use crate::context::Context;
use crate::env_vars::GITHUB_OUTPUT;
use crate::exit::ExitStatus;
use crate::settings::matrix::MatrixSettings;
use crate::ui;

pub fn run(args: MatrixArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = MatrixSettings::resolve(args, ctx)?;
    let per_family = matrix::plan(&settings.release, &settings.families, &settings.selection())?;
    let multi_arch = per_family.clone().multi_arch();
    let mut counts = format!(
        "builds: {} per-family, {} multi-arch (one per ref and Python)",
        per_family.builds(),
        multi_arch.builds(),
    );
    if !per_family.windows.include.is_empty() {
        counts.push_str(&format!(
            "; on Windows {} per-family, {} multi-arch",
            per_family.windows_builds(),
            multi_arch.windows_builds(),
        ));
    }
    counts.push_str(&format!("; this matrix is {}", settings.mode.mode));
    let matrix = match settings.mode.mode {
        BuildMode::PerFamily => per_family,
        BuildMode::MultiArch => multi_arch,
    };
    let table = ui::text_table(&Matrix::HEADERS, &matrix.rows());
    // The table goes where people look: stdout, or beside the JSON on stderr.
    let log = if settings.json {
        format!("{}\n{counts}\n\n{table}", settings.describe())
    } else {
        settings.describe()
    };
    ctx.ui.group("rockbuild matrix", &log);
    for note in &matrix.notes {
        ctx.ui.note(note);
    }
    if let Some(path) = ctx.env().non_empty(GITHUB_OUTPUT) {
        let lines = matrix.github_outputs()?;
        crate::fsutil::append(std::path::Path::new(path))
            .and_then(|mut file| file.write_all(lines.as_bytes()))
            .with_context(|| format!("writing the step outputs to ${GITHUB_OUTPUT} ({path})"))?;
    }
    ctx.ui.step_summary(&summary(&matrix, &counts));
    if settings.json {
        ctx.ui.data(&serde_json::to_string_pretty(&matrix)?)?;
    } else {
        ctx.ui.data(&format!("{}\n\n{counts}", table.trim_end()))?;
    }
    Ok(ExitStatus::Success)
}

fn summary(matrix: &Matrix, counts: &str) -> ui::Markdown {
    let mut out = ui::Markdown::lit("### Matrix: ");
    out.push_text(matrix.release_type.as_str())
        .push_lit("\n\n")
        .push(ui::markdown_table(&Matrix::HEADERS, &matrix.rows()))
        .push_lit("\n")
        .push_text(counts)
        .push_lit("\n");
    for note in &matrix.notes {
        out.push_lit("\n- ").push_text(note);
    }
    out
}
