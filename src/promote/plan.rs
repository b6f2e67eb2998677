//! The promotion plan: the gate's decision wheel by wheel, the rewrite, every copy and upload
//! and every index page — a pure function of what was inspected and prepared. `--dry-run`
//! prints it; the apply step publishes it.

use std::fmt::Write as _;

use serde::Serialize;

use super::policy::{Decision, Verdict};
use super::rewrite::RewriteSummary;
use super::waiver::Waiver;
use super::{Error, Prepared, Staged};
use crate::context::Context;
use crate::publish::{self, Destination, PublishPlan};
use crate::ui::{Markdown, markdown_table, plural, text_table};
use crate::wheel::companion::Role;

/// What `promote` will do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PromotePlan {
    /// The source store (staging).
    pub from: String,
    /// The gate's verdict on each wheel.
    pub gate: Vec<GateLine>,
    /// The waivers the verdicts used, and the matching ones that had expired.
    pub waivers: Vec<String>,
    /// What `--rewrite-version` rewrote.
    pub rewrite: Option<RewriteSummary>,
    pub publish: PublishPlan,
}

/// One wheel's verdict, with the evidence or the reasons.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GateLine {
    pub wheel: String,
    pub verdict: &'static str,
    pub evidence: String,
}

/// Plans the promotion: what was decided and prepared, published into `dest`.
pub fn plan(
    staged: &Staged,
    decision: &Decision,
    waivers: &[Waiver],
    prepared: &Prepared,
    dest: &Destination,
) -> Result<PromotePlan, Error> {
    let (used, expired) = waiver_lines(decision, waivers);
    Ok(PromotePlan {
        from: staged.url.clone(),
        gate: gate_lines(decision),
        waivers: used
            .into_iter()
            .map(|line| format!("used {line}"))
            .chain(expired)
            .collect(),
        rewrite: prepared.rewrite.clone(),
        publish: publish::plan(prepared.publication.clone(), dest)?,
    })
}

impl PromotePlan {
    /// What `--dry-run` prints.
    pub fn to_text(&self) -> String {
        let companions = self
            .gate
            .iter()
            .filter(|line| Role::of_file(&line.wheel) == Role::Companion)
            .count();
        let products = self.gate.len() - companions;
        let mut out = format!(
            "promote {products} wheel{}{} from {} to {}\n",
            plural(products),
            match companions {
                0 => String::new(),
                n => format!(" and {n} ROCm SDK file{}", plural(n)),
            },
            self.from,
            self.publish.dest
        );
        for line in &self.gate {
            let _ = writeln!(
                out,
                "  {:<7} {} ({})",
                line.verdict, line.wheel, line.evidence
            );
        }
        for line in &self.waivers {
            let _ = writeln!(out, "  {line}");
        }
        if let Some(rewrite) = &self.rewrite {
            out.push_str(&rewrite.describe(true));
        }
        out.push_str(&self.publish.to_text());
        out
    }
}

/// The gate's decision, wheel by wheel.
fn gate_lines(decision: &Decision) -> Vec<GateLine> {
    decision
        .wheels
        .iter()
        .map(|w| {
            let (verdict, evidence) = match &w.verdict {
                Verdict::Passed { sources } => ("passed", sources.join(", ")),
                Verdict::Waived { number, waived } => {
                    ("waived", format!("waiver {number} ({})", waived.join("; ")))
                }
                Verdict::Denied { reasons } => ("DENIED", reasons.join("; ")),
                Verdict::Carried { source } => {
                    ("carried", format!("ROCm SDK, the bytes {source} publishes"))
                }
                Verdict::Replaced { by } => ("dropped", by.clone()),
            };
            GateLine {
                wheel: w.filename.clone(),
                verdict,
                evidence,
            }
        })
        .collect()
}

/// The waivers used (`waiver 1 (file:3): `pattern` owned by …, until …: reason`) and the
/// matching ones that had expired.
fn waiver_lines(decision: &Decision, waivers: &[Waiver]) -> (Vec<String>, Vec<String>) {
    let find = |number: usize| waivers.iter().find(|w| w.number == number);
    let used = decision
        .waivers_used()
        .into_iter()
        .filter_map(|number| {
            find(number).map(|w| {
                format!(
                    "waiver {number} ({}): `{}` owned by {}, until {}: {}",
                    w.location, w.pattern, w.owner, w.expires, w.reason
                )
            })
        })
        .collect();
    let expired = decision
        .expired
        .iter()
        .filter_map(|number| {
            find(*number).map(|w| {
                format!(
                    "waiver {number} ({}): `{}` owned by {} expired on {}; it was not counted",
                    w.location, w.pattern, w.owner, w.expires
                )
            })
        })
        .collect();
    (used, expired)
}

/// Shows the gate's decision: a table on stderr, the notes and waivers as warnings, all of
/// it in the step summary.
pub fn show_gate(ctx: &Context, decision: &Decision, waivers: &[Waiver]) {
    let rows: Vec<Vec<String>> = gate_lines(decision)
        .into_iter()
        .map(|line| vec![line.wheel, line.verdict.to_string(), line.evidence])
        .collect();
    ctx.ui
        .status(text_table(&["wheel", "verdict", "evidence"], &rows));
    let mut summary = Markdown::lit("### Promotion gate\n\n");
    summary.push(markdown_table(&["wheel", "verdict", "evidence"], &rows));
    for note in &decision.notes {
        ctx.ui.warn(note);
    }
    let (used, expired) = waiver_lines(decision, waivers);
    for line in used {
        ctx.ui.warn(format!("promoting on {line}"));
        summary.push_lit("\n- used ").push_text(&line);
    }
    for line in expired {
        ctx.ui.warn(&line);
        summary.push_lit("\n- ").push_text(&line);
    }
    summary.push_lit("\n");
    ctx.ui.step_summary(&summary);
}
