//! The verdict on a set, and how it is shown: a line per wheel (every problem of a failed
//! one, up to a limit), a summary line, a GitHub annotation per problem and a Markdown table
//! for the step summary. The text is a pure function of the report.

use serde::Serialize;

use crate::context::Context;
use crate::ui::{self, plural};
use crate::wheel::companion::Role;
use crate::wheel::problem::Problem;
use crate::wheel::verify::{WheelReport, serialize_problems};

/// A wheel with thousands of problems (an empty RECORD) should not bury the others.
const SHOWN_PER_WHEEL: usize = 40;

/// The verdict on a set.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub ok: bool,
    pub targets: Vec<String>,
    pub index_url: Option<String>,
    pub problem_count: usize,
    pub wheels: Vec<WheelReport>,
    /// Problems of the set as a whole (missing projects, duplicate files).
    #[serde(serialize_with = "serialize_problems")]
    pub set_problems: Vec<Problem>,
}

impl VerifyReport {
    /// How many wheels failed on their own.
    pub fn failed(&self) -> usize {
        self.wheels.iter().filter(|w| !w.ok()).count()
    }
}

/// One line for stderr, with the GitHub error annotation that goes with it.
#[derive(Clone)]
pub struct Line {
    pub text: String,
    /// Title and message.
    pub annotation: Option<(String, String)>,
}

impl Line {
    fn plain(text: String) -> Line {
        Line {
            text,
            annotation: None,
        }
    }
}

/// What the report shows people: lines for stderr, the step summary table.
pub struct Shown {
    pub lines: Vec<Line>,
    pub markdown: ui::Markdown,
}

impl Shown {
    /// The lines as stderr shows them.
    #[cfg(test)]
    pub fn text(&self) -> String {
        self.lines.iter().map(|l| format!("{}\n", l.text)).collect()
    }
}

/// The report as people read it. `targets_text` says what the GPU libraries were checked
/// for (`targets gfx90a,gfx942`).
pub fn render(report: &VerifyReport, targets_text: &str) -> Shown {
    let mut lines = Vec::new();
    let mut rows = Vec::new();
    for wheel in &report.wheels {
        let gpu: Vec<_> = wheel.libraries.iter().filter(|l| l.bundles > 0).collect();
        let mut targets: Vec<&str> = gpu
            .iter()
            .flat_map(|l| l.targets.iter().map(String::as_str))
            .collect();
        targets.sort_unstable();
        targets.dedup();
        let gpu_text = if gpu.is_empty() {
            String::new()
        } else {
            format!(
                ", {} GPU librar{}: {}",
                gpu.len(),
                if gpu.len() == 1 { "y" } else { "ies" },
                targets.join(",")
            )
        };
        if wheel.ok() && wheel.role == Role::Companion {
            lines.push(Line::plain(format!(
                "  ok    {}  (ROCm SDK, carried: the bytes {} publishes)",
                wheel.file,
                wheel.source.as_deref().unwrap_or("its index")
            )));
        } else if wheel.ok() {
            lines.push(Line::plain(format!(
                "  ok    {}  ({} files{gpu_text})",
                wheel.file, wheel.entries
            )));
        } else {
            lines.push(Line::plain(format!(
                "  FAIL  {}  {} problem{}",
                wheel.file,
                wheel.problems.len(),
                plural(wheel.problems.len())
            )));
            for problem in wheel.problems.iter().take(SHOWN_PER_WHEEL) {
                lines.push(Line {
                    text: format!("        {problem}"),
                    annotation: Some((
                        format!("verify: {}", problem.kind()),
                        format!("{}: {problem}", wheel.file),
                    )),
                });
            }
            if wheel.problems.len() > SHOWN_PER_WHEEL {
                lines.push(Line::plain(format!(
                    "        … and {} more (--json lists them all)",
                    wheel.problems.len() - SHOWN_PER_WHEEL
                )));
            }
        }
        rows.push(vec![
            wheel.file.clone(),
            if wheel.ok() {
                "ok".into()
            } else {
                format!(
                    "{} problem{}",
                    wheel.problems.len(),
                    plural(wheel.problems.len())
                )
            },
            targets.join(" "),
        ]);
    }
    for problem in &report.set_problems {
        lines.push(Line {
            text: format!("  FAIL  set: {problem}"),
            annotation: Some((format!("verify: {}", problem.kind()), problem.to_string())),
        });
    }
    lines.push(Line::plain(summary(report, targets_text)));
    Shown {
        lines,
        markdown: {
            let mut markdown = ui::Markdown::lit("### rockbuild verify\n\n");
            markdown.push(ui::markdown_table(
                &["wheel", "result", "gfx targets"],
                &rows,
            ));
            markdown
        },
    }
}

fn summary(report: &VerifyReport, targets_text: &str) -> String {
    let wheels = report.wheels.len();
    let failed = report.failed();
    if report.ok {
        format!(
            "verify: all {wheels} wheel{} passed ({targets_text})",
            plural(wheels)
        )
    } else if failed == 0 {
        // Only the set as a whole failed (a missing project, a duplicate file).
        format!(
            "verify: all {wheels} wheel{} passed one by one, but the set has {} problem{} ({targets_text})",
            plural(wheels),
            report.set_problems.len(),
            plural(report.set_problems.len())
        )
    } else {
        format!(
            "verify: {failed} of {wheels} wheel{} failed, {} problem{} in all ({targets_text})",
            plural(wheels),
            report.problem_count,
            plural(report.problem_count)
        )
    }
}

/// Shows the report: its lines on stderr, annotations, the step summary.
pub fn show(ctx: &Context, report: &VerifyReport, targets_text: &str) {
    let shown = render(report, targets_text);
    for line in &shown.lines {
        ctx.ui.status(&line.text);
        if let Some((title, message)) = &line.annotation {
            ctx.ui.error_annotation(title, message);
        }
    }
    ctx.ui.step_summary(&shown.markdown);
}

/// The report as JSON, for `--json` (every problem, none left out).
pub fn to_json(report: &VerifyReport) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(report)?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::wheel::verify::LibraryReport;

    fn wheel(file: &str, libraries: Vec<LibraryReport>, problems: Vec<Problem>) -> WheelReport {
        let (name, rest) = file.split_once('-').expect("name-version");
        WheelReport {
            path: PathBuf::from("/build/dist").join(file),
            file: file.into(),
            role: Role::Product,
            source: None,
            size: 4096,
            sha256: Some("5".repeat(64)),
            name: Some(name.into()),
            version: rest.split('-').next().map(String::from),
            entries: 12,
            zip64: false,
            metadata: None,
            metadata_sha256: Some("6".repeat(64)),
            libraries,
            dlls: Default::default(),
            packs: Vec::new(),
            problems,
        }
    }

    fn library(entry: &str, targets: &[&str]) -> LibraryReport {
        LibraryReport {
            entry: entry.into(),
            format: crate::wheel::verify::NativeFormat::Elf,
            targets: targets.iter().map(|t| t.to_string()).collect(),
            bundles: 1,
            compressed_bundles: 0,
            needed: vec!["libamdhip64.so.7".into()],
            delay_loaded: Vec::new(),
            rpath: Vec::new(),
            runpath: vec!["$ORIGIN".into()],
            glibc: None,
            kpack: None,
        }
    }

    /// A set with a passing GPU wheel, a failing one and a problem of the set as a whole.
    fn failing_set() -> VerifyReport {
        let torch = wheel(
            "torch-2.10.0a0+rocm7.13.0-cp311-cp311-linux_x86_64.whl",
            vec![library("torch/lib/libtorch_hip.so", &["gfx90a", "gfx942"])],
            Vec::new(),
        );
        let vision = wheel(
            "torchvision-0.25.0a0+rocm7.13.0-cp311-cp311-linux_x86_64.whl",
            vec![library("torchvision/_C.so", &["gfx90a"])],
            vec![
                Problem::TargetMissing {
                    entry: "torchvision/_C.so".into(),
                    target: "gfx942".into(),
                    bundles_missing: 1,
                    bundles_total: 1,
                    found: vec!["gfx90a".into()],
                },
                Problem::NotInRecord {
                    entry: "torchvision/extra.py".into(),
                },
            ],
        );
        VerifyReport {
            ok: false,
            targets: vec!["gfx90a".into(), "gfx942".into()],
            index_url: Some("https://user:****@example.com/simple".into()),
            problem_count: 3,
            wheels: vec![torch, vision],
            set_problems: vec![Problem::MissingProject {
                project: "audio".into(),
                wheel: "torchaudio".into(),
                version: "2.10.0a0+rocm7.13.0".into(),
            }],
        }
    }

    #[test]
    fn a_failing_set_shows_every_problem_and_a_summary() {
        let report = failing_set();
        let shown = render(&report, "targets gfx90a,gfx942");
        insta::assert_snapshot!("failing_set_text", shown.text());
        insta::assert_snapshot!("failing_set_markdown", shown.markdown);
        let annotations: Vec<_> = shown
            .lines
            .iter()
            .filter_map(|l| l.annotation.clone())
            .collect();
        assert_eq!(annotations.len(), 3, "one annotation per problem shown");
        insta::assert_snapshot!("failing_set_json", to_json(&report).expect("json"));
    }

    #[test]
    fn a_passing_set_is_one_line_per_wheel() {
        let mut report = failing_set();
        report.wheels.truncate(1);
        report.set_problems.clear();
        report.problem_count = 0;
        report.ok = true;
        insta::assert_snapshot!(render(&report, "targets gfx90a,gfx942").text(), @r"
          ok    torch-2.10.0a0+rocm7.13.0-cp311-cp311-linux_x86_64.whl  (12 files, 1 GPU library: gfx90a,gfx942)
        verify: all 1 wheel passed (targets gfx90a,gfx942)
        ");
    }

    #[test]
    fn a_wheel_with_many_problems_shows_the_first_ones() {
        let problems = (0..45)
            .map(|n| Problem::NotInRecord {
                entry: format!("pkg/file{n}.py"),
            })
            .collect();
        let report = VerifyReport {
            ok: false,
            targets: Vec::new(),
            index_url: None,
            problem_count: 45,
            wheels: vec![wheel("pkg-1.0-py3-none-any.whl", Vec::new(), problems)],
            set_problems: Vec::new(),
        };
        let text = render(&report, "no gfx targets requested").text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + SHOWN_PER_WHEEL + 2, "{text}");
        insta::assert_snapshot!(lines[lines.len() - 2..].join("\n"), @r"
                … and 5 more (--json lists them all)
        verify: 1 of 1 wheel failed, 45 problems in all (no gfx targets requested)
        ");
    }
}
