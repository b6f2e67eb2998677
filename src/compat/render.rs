//! The Markdown report: the sections of ROCm's "PyTorch compatibility" page, filled from one
//! stack instead of the validated Docker images.

use std::fmt::Write as _;

use super::CompatReport;
use crate::ui::markdown_table;

fn yes_no(value: Option<bool>) -> String {
    match value {
        Some(true) => "yes".into(),
        Some(false) => "**no**".into(),
        None => "—".into(),
    }
}

fn or_dash(value: Option<&str>) -> String {
    value.map_or_else(|| "—".to_string(), ToString::to_string)
}

pub fn markdown(report: &CompatReport) -> String {
    let mut out = format!("# ROCm PyTorch stack: {}\n\n", report.subject);
    match &report.lock {
        Some(lock) => {
            let _ = writeln!(out, "Compared with the lock {lock}.\n");
        }
        None => out.push_str("No lock to compare with (pass --lock).\n\n"),
    }

    out.push_str("## Versions\n\n");
    let mut headers = vec![""];
    headers.extend(report.components.iter().map(|c| c.name.as_str()));
    let row = |label: &str, cell: &dyn Fn(&super::Component) -> String| {
        let mut row = vec![label.to_string()];
        row.extend(report.components.iter().map(cell));
        row
    };
    // A wheel under upstream's name says which (`2.1.0 (pytorch-triton-rocm)`).
    let mut rows = vec![row("installed", &|c| match (&c.installed, c.upstream) {
        (Some(version), true) => format!("{version} ({})", c.distribution),
        (installed, _) => or_dash(installed.as_deref()),
    })];
    if report.lock.is_some() {
        rows.push(row("lock", &|c| or_dash(c.lock.as_deref())));
        rows.push(row("matches", &|c| yes_no(c.matches)));
    }
    out.push_str(&markdown_table(&headers, &rows));

    out.push_str("\n## GPU targets compiled in\n\n");
    if report.targets.is_empty() {
        out.push_str("No library has GPU code (`.hip_fatbin`).\n");
    } else {
        let lock_header = if report.lock_targets.is_empty() {
            "Lock".to_string()
        } else {
            format!("Lock ({})", report.lock_targets.join(","))
        };
        let rows: Vec<Vec<String>> = report
            .targets
            .iter()
            .map(|t| {
                vec![
                    format!("`{}`", t.library),
                    t.distribution.clone(),
                    t.targets.join(", "),
                    yes_no(t.matches),
                ]
            })
            .collect();
        out.push_str(&markdown_table(
            &["Library", "Distribution", "gfx targets", &lock_header],
            &rows,
        ));
    }

    out.push_str("\n## Critical ROCm libraries for PyTorch\n\n");
    let rows: Vec<Vec<String>> = report
        .libraries
        .iter()
        .map(|l| {
            vec![
                l.name.clone(),
                if l.linked { "yes".into() } else { "no".into() },
                l.evidence.clone(),
            ]
        })
        .collect();
    out.push_str(&markdown_table(
        &["ROCm library", "Linked by torch", "Evidence"],
        &rows,
    ));

    out.push_str("\n## Supported and unsupported features\n\n");
    let rows: Vec<Vec<String>> = report
        .features
        .iter()
        .map(|f| {
            vec![
                f.name.clone(),
                if f.built { "yes".into() } else { "no".into() },
                f.evidence.clone(),
            ]
        })
        .collect();
    out.push_str(&markdown_table(&["Feature", "Built", "Evidence"], &rows));

    if !report.build_settings.is_empty() {
        out.push_str("\n## Build settings (`torch.__config__.show()`)\n\n");
        let rows: Vec<Vec<String>> = report
            .build_settings
            .iter()
            .map(|(key, value)| vec![format!("`{key}`"), format!("`{value}`")])
            .collect();
        out.push_str(&markdown_table(&["Setting", "Value"], &rows));
    }

    if !report.mismatches.is_empty() {
        out.push_str("\n## Differences from the lock\n\n");
        for mismatch in &report.mismatches {
            let _ = writeln!(out, "- {mismatch}");
        }
    }
    out
}
