//! The Markdown report: the sections of ROCm's "PyTorch compatibility" page, filled from one
//! stack instead of the validated Docker images.

use super::CompatReport;
use crate::ui::{Markdown, markdown_table_of};

fn yes_no(value: Option<bool>) -> Markdown {
    match value {
        Some(true) => Markdown::lit("yes"),
        Some(false) => Markdown::lit("**no**"),
        None => Markdown::lit("—"),
    }
}

fn or_dash(value: Option<&str>) -> Markdown {
    value.map_or_else(|| Markdown::lit("—"), Markdown::text)
}

pub fn markdown(report: &CompatReport) -> Markdown {
    let mut out = Markdown::lit("# ROCm PyTorch stack: ");
    out.push_text(&report.subject).push_lit("\n\n");
    match &report.lock {
        Some(lock) => {
            out.push_lit("Compared with the lock ")
                .push_text(lock)
                .push_lit(".\n\n");
        }
        None => {
            out.push_lit("No lock to compare with (pass --lock).\n\n");
        }
    }

    out.push_lit("## Versions\n\n");
    let mut headers = vec![""];
    headers.extend(report.components.iter().map(|c| c.name.as_str()));
    let row = |label: &'static str, cell: &dyn Fn(&super::Component) -> Markdown| {
        let mut row = vec![Markdown::lit(label)];
        row.extend(report.components.iter().map(cell));
        row
    };
    // A wheel under upstream's name says which (`2.1.0 (pytorch-triton-rocm)`).
    let mut rows = vec![row("installed", &|c| match (&c.installed, c.upstream) {
        (Some(version), true) => Markdown::text(&format!("{version} ({})", c.distribution)),
        (installed, _) => or_dash(installed.as_deref()),
    })];
    if report.lock.is_some() {
        rows.push(row("lock", &|c| or_dash(c.lock.as_deref())));
        rows.push(row("matches", &|c| yes_no(c.matches)));
    }
    out.push(markdown_table_of(&headers, rows));

    out.push_lit("\n## GPU targets compiled in\n\n");
    if report.targets.is_empty() {
        out.push_lit("No library has GPU code (`.hip_fatbin`).\n");
    } else {
        let lock_header = if report.lock_targets.is_empty() {
            "Lock".to_string()
        } else {
            format!("Lock ({})", report.lock_targets.join(","))
        };
        let rows: Vec<Vec<Markdown>> = report
            .targets
            .iter()
            .map(|t| {
                vec![
                    Markdown::code(&t.library),
                    Markdown::text(&t.distribution),
                    Markdown::text(&t.targets.join(", ")),
                    yes_no(t.matches),
                ]
            })
            .collect();
        out.push(markdown_table_of(
            &["Library", "Distribution", "gfx targets", &lock_header],
            rows,
        ));
    }

    out.push_lit("\n## Critical ROCm libraries for PyTorch\n\n");
    let rows: Vec<Vec<Markdown>> = report
        .libraries
        .iter()
        .map(|l| {
            vec![
                Markdown::text(&l.name),
                Markdown::lit(if l.linked { "yes" } else { "no" }),
                Markdown::text(&l.evidence),
            ]
        })
        .collect();
    out.push(markdown_table_of(
        &["ROCm library", "Linked by torch", "Evidence"],
        rows,
    ));

    out.push_lit("\n## Supported and unsupported features\n\n");
    let rows: Vec<Vec<Markdown>> = report
        .features
        .iter()
        .map(|f| {
            vec![
                Markdown::text(&f.name),
                Markdown::lit(if f.built { "yes" } else { "no" }),
                Markdown::text(&f.evidence),
            ]
        })
        .collect();
    out.push(markdown_table_of(&["Feature", "Built", "Evidence"], rows));

    if !report.build_settings.is_empty() {
        out.push_lit("\n## Build settings (`torch.__config__.show()`)\n\n");
        let rows: Vec<Vec<Markdown>> = report
            .build_settings
            .iter()
            .map(|(key, value)| vec![Markdown::code(key), Markdown::code(value)])
            .collect();
        out.push(markdown_table_of(&["Setting", "Value"], rows));
    }

    if !report.mismatches.is_empty() {
        out.push_lit("\n## Differences from the lock\n\n");
        for mismatch in &report.mismatches {
            out.push_lit("- ").push_text(mismatch).push_lit("\n");
        }
    }
    out
}
