//! Combining shards (F43): the results of every shard of every test config become one summary
//! (terminal, Markdown for $GITHUB_STEP_SUMMARY, JSON) and one test report that `promote`
//! reads. Every expected shard must be there: a missing or cancelled shard makes the report
//! fail, so a cancelled workflow can never pass for a tested set (TheRock#1579).
//!
//! Pure: the files are read by [`super::report::load_shards`].

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::Error;
use super::catalog::TestConfig;
use super::report::LoadedShard;
use crate::junit::CaseStatus;
use crate::promote::evidence::{
    Check, FailedTest, Outcome, REPORT_SCHEMA, TestReport, TestedWheel,
};
use crate::ui::{Markdown, markdown_table, plural, text_table};

/// How long a line of a failure message may be in a summary.
const MESSAGE_CHARS: usize = 200;
/// How many lines of a failure message a summary keeps (an assertion's first lines say what
/// differed; the traceback is in the shard's JUnit file).
const MESSAGE_LINES: usize = 3;
/// How many failures the step summary lists; the rest are counted, and every one is in the
/// test report (GitHub cuts a step summary at 1 MiB).
const SUMMARY_FAILURES: usize = 30;

/// Test case counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    pub passed: usize,
    pub failed: usize,
    pub errors: usize,
    pub skipped: usize,
    /// Wall-clock seconds of the shards' runs, from start to finish.
    pub seconds: f64,
}

impl Counts {
    /// `3 passed, 1 skipped, 0 failed, 1 error`.
    fn words(&self) -> String {
        format!(
            "{} passed, {} skipped, {} failed, {} error{}",
            self.passed,
            self.skipped,
            self.failed,
            self.errors,
            crate::ui::plural(self.errors)
        )
    }

    fn add(&mut self, other: &Counts) {
        self.passed += other.passed;
        self.failed += other.failed;
        self.errors += other.errors;
        self.skipped += other.skipped;
        self.seconds += other.seconds;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ShardOutcome {
    Passed,
    Failed,
    Cancelled,
    /// No results for an expected shard.
    Missing,
    /// Ran, but no test passed or failed.
    Empty,
    /// The runner could not run the suite (no GPU, no driver, another family): nothing was
    /// tested, and not for the wheels' fault.
    #[serde(rename = "runner-unfit")]
    Unfit,
}

impl ShardOutcome {
    fn word(self) -> &'static str {
        match self {
            ShardOutcome::Passed => "passed",
            ShardOutcome::Failed => "failed",
            ShardOutcome::Cancelled => "cancelled",
            ShardOutcome::Missing => "missing",
            ShardOutcome::Empty => "ran no tests",
            ShardOutcome::Unfit => "runner unfit",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardLine {
    pub config: TestConfig,
    pub shard: u32,
    pub num_shards: u32,
    pub outcome: ShardOutcome,
    pub counts: Option<Counts>,
    /// `HIP_VISIBLE_DEVICES` and targets, or why no GPU.
    pub gpus: String,
    pub detail: String,
}

/// A failed test case or step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FailureLine {
    pub config: TestConfig,
    pub shard: String,
    pub test: String,
    /// The test's file (the JUnit `file` attribute), when the report gives one.
    pub file: Option<String>,
    pub status: CaseStatus,
    /// The message's first lines, each cut at 200 characters.
    pub message: String,
}

impl FailureLine {
    /// The test report's record of it.
    fn record(&self) -> FailedTest {
        FailedTest {
            shard: format!("{} {}", self.config, self.shard),
            test: self.test.clone(),
            file: self.file.clone(),
            result: status_word(self.status).to_string(),
            message: self.message.clone(),
        }
    }
}

/// A test a shard skipped on a runner without a GPU, and the reason it gave: what the run did
/// not check for want of one (`--allow-no-gpu`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkipLine {
    pub config: TestConfig,
    pub shard: String,
    pub test: String,
    pub reason: String,
}

fn status_word(status: CaseStatus) -> &'static str {
    match status {
        CaseStatus::Error => "error",
        _ => "failed",
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub result: Outcome,
    pub shards: Vec<ShardLine>,
    pub totals: Counts,
    pub failures: Vec<FailureLine>,
    /// Every test skipped by a shard that ran without a GPU, with its reason.
    pub without_gpu: Vec<SkipLine>,
    /// Files every present shard installed from the index under test.
    pub wheels: Vec<String>,
    pub notes: Vec<String>,
}

/// What `--expect` asks for: a config, with or without its shard count.
pub type Expectation = (TestConfig, Option<u32>);

/// How many shards a config has when nothing else says (configs/releases.yaml's
/// `test-configs`; 1 for a config it does not shard).
pub type ShardCounts = indexmap::IndexMap<TestConfig, u32>;

/// Combines shards into the summary and the report promote reads.
pub fn combine(
    shards: &[LoadedShard],
    expect: &[Expectation],
    shard_counts: &ShardCounts,
    generated_by: &str,
) -> Result<(Summary, TestReport), Error> {
    let Some(first) = shards.first() else {
        return Err(Error::NoShards {
            dirs: "the given directories".into(),
        });
    };
    // Configs and their shard counts: what was expected, else what the shards declare.
    let mut totals: BTreeMap<&'static str, (TestConfig, u32, String)> = BTreeMap::new();
    let mut seen: BTreeMap<(&'static str, u32), &LoadedShard> = BTreeMap::new();
    for shard in shards {
        let report = &shard.report;
        if report.index_url != first.report.index_url {
            return Err(Error::IndexesDisagree {
                first: first.file.clone(),
                first_url: first.report.index_url.clone(),
                second: shard.file.clone(),
                second_url: report.index_url.clone(),
            });
        }
        if report.shard == 0 || report.shard > report.num_shards {
            return Err(Error::BadShard {
                file: shard.file.clone(),
                message: format!(
                    "shard {} of {} is out of range",
                    report.shard, report.num_shards
                ),
            });
        }
        let name = report.config.name();
        match totals.get(name) {
            Some((_, total, declared_in)) if *total != report.num_shards => {
                return Err(Error::ShardCountsDisagree {
                    config: name.to_string(),
                    first: declared_in.clone(),
                    first_count: *total,
                    second: shard.file.clone(),
                    second_count: report.num_shards,
                });
            }
            Some(_) => {}
            None => {
                totals.insert(name, (report.config, report.num_shards, shard.file.clone()));
            }
        }
        if let Some(other) = seen.insert((name, report.shard), shard) {
            return Err(Error::DuplicateShard {
                config: name.to_string(),
                shard: format!("{}/{}", report.shard, report.num_shards),
                first: other.file.clone(),
                second: shard.file.clone(),
            });
        }
    }
    for (config, count) in expect {
        let name = config.name();
        match (totals.get(name), count) {
            (Some((_, total, file)), Some(count)) if total != count => {
                return Err(Error::ShardCountsDisagree {
                    config: name.to_string(),
                    first: "--expect".into(),
                    first_count: *count,
                    second: file.clone(),
                    second_count: *total,
                });
            }
            (Some(_), _) => {}
            (None, count) => {
                totals.insert(
                    name,
                    (
                        *config,
                        count.unwrap_or_else(|| shard_counts.get(config).copied().unwrap_or(1)),
                        "--expect".into(),
                    ),
                );
            }
        }
    }

    let mut slots = Vec::new();
    for (name, (config, total, _)) in &totals {
        for number in 1..=*total {
            slots.push(Slot {
                config: *config,
                number,
                total: *total,
                shard: seen.get(&(*name, number)).copied(),
            });
        }
    }
    Ok(assemble(shards, &slots, generated_by))
}

/// The summary of one shard on its own (what `rockbuild test` prints at the end).
pub fn shard_summary(shard: &LoadedShard) -> Summary {
    let slot = Slot {
        config: shard.report.config,
        number: shard.report.shard,
        total: shard.report.num_shards,
        shard: Some(shard),
    };
    assemble(
        std::slice::from_ref(shard),
        &[slot],
        &shard.report.generated_by,
    )
    .0
}

/// One expected shard and its results, if they are there.
struct Slot<'a> {
    config: TestConfig,
    number: u32,
    total: u32,
    shard: Option<&'a LoadedShard>,
}

fn assemble(
    shards: &[LoadedShard],
    slots: &[Slot<'_>],
    generated_by: &str,
) -> (Summary, TestReport) {
    let first = &shards[0];
    let mut lines = Vec::new();
    let mut failures: Vec<FailureLine> = Vec::new();
    let mut without_gpu: Vec<SkipLine> = Vec::new();
    let mut sum = Counts::default();
    let mut checks = Vec::new();
    let mut notes = Vec::new();
    for slot in slots {
        let label = format!("{} {}/{}", slot.config, slot.number, slot.total);
        let Some(shard) = slot.shard else {
            lines.push(ShardLine {
                config: slot.config,
                shard: slot.number,
                num_shards: slot.total,
                outcome: ShardOutcome::Missing,
                counts: None,
                gpus: String::new(),
                detail: "no results: the shard did not run, or its results were not collected"
                    .into(),
            });
            checks.push(Check {
                name: label,
                kind: "test-shard".into(),
                project: None,
                result: Outcome::Failed,
                started: first.report.started,
                finished: first.report.started,
                detail: "missing: no results for this shard".into(),
            });
            continue;
        };
        if let Some(runner) = &shard.report.runner {
            notes.push(format!(
                "{label} ran on: {} (sysfs at {})",
                runner.to_line(),
                runner.sysfs_root
            ));
        }
        if let Some(note) = shard.report.times.as_ref().and_then(|t| t.note.as_ref()) {
            notes.push(format!("{label}: {note}"));
        }
        let (line, shard_failures, shard_skips) = judge(shard);
        if let Some(counts) = &line.counts {
            sum.add(counts);
        }
        checks.push(Check {
            name: label,
            kind: "test-shard".into(),
            project: None,
            result: match line.outcome {
                ShardOutcome::Passed => Outcome::Passed,
                ShardOutcome::Cancelled => Outcome::Cancelled,
                ShardOutcome::Empty => Outcome::Empty,
                ShardOutcome::Failed | ShardOutcome::Missing | ShardOutcome::Unfit => {
                    Outcome::Failed
                }
            },
            started: shard.report.started,
            finished: shard.report.finished,
            detail: line.detail.clone(),
        });
        lines.push(line);
        failures.extend(shard_failures);
        without_gpu.extend(shard_skips);
    }

    // A wheel counts as tested only when every shard that ran installed those very bytes.
    let present: Vec<&LoadedShard> = shards.iter().collect();
    let mut wheels: Vec<TestedWheel> = first.report.wheels.clone();
    for shard in &present[1..] {
        wheels.retain(|w| shard.report.wheels.contains(w));
    }
    wheels.sort_by(|a, b| a.filename.cmp(&b.filename));
    let mut differing: Vec<String> = present
        .iter()
        .flat_map(|s| s.report.wheels.iter())
        .filter(|w| !wheels.contains(w))
        .map(|w| w.filename.clone())
        .collect();
    differing.sort();
    differing.dedup();
    if !differing.is_empty() {
        checks.push(Check {
            name: "same wheels in every shard".into(),
            kind: "install".into(),
            project: None,
            result: Outcome::Failed,
            started: first.report.started,
            finished: first.report.finished,
            detail: format!(
                "not every shard installed the same bytes of: {}",
                differing.join(", ")
            ),
        });
        notes.push(format!(
            "shards installed different builds of {}; none of them counts as tested",
            differing.join(", ")
        ));
    }

    let failed = checks
        .iter()
        .any(|c| matches!(c.result, Outcome::Failed | Outcome::Cancelled));
    let result = if failed {
        Outcome::Failed
    } else if checks.iter().any(|c| c.result == Outcome::Passed) {
        Outcome::Passed
    } else {
        Outcome::Empty
    };
    let started = shards
        .iter()
        .map(|s| s.report.started)
        .min()
        .unwrap_or(first.report.started);
    let finished = shards
        .iter()
        .map(|s| s.report.finished)
        .max()
        .unwrap_or(first.report.finished);
    let summary = Summary {
        result,
        shards: lines,
        totals: sum,
        failures,
        without_gpu,
        wheels: wheels.iter().map(|w| w.filename.clone()).collect(),
        notes,
    };
    let report = TestReport {
        schema: REPORT_SCHEMA,
        kind: "test".into(),
        generated_by: generated_by.to_string(),
        index_url: first.report.index_url.clone(),
        python: first.report.python.clone(),
        started,
        finished,
        result,
        wheels,
        checks,
        failures: summary.failures.iter().map(FailureLine::record).collect(),
    };
    (summary, report)
}

/// A shard's run time: tenths of a second under a minute, else minutes and seconds.
fn shard_time(seconds: f64) -> String {
    if seconds < 60.0 {
        format!("{seconds:.1}s")
    } else {
        // Whole seconds of a run that took minutes; far below u64's range.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let whole = seconds.round() as u64;
        format!("{}m{:02}s", whole / 60, whole % 60)
    }
}

/// One shard's line, its failures, and (run without a GPU) the tests it skipped.
fn judge(shard: &LoadedShard) -> (ShardLine, Vec<FailureLine>, Vec<SkipLine>) {
    let report = &shard.report;
    let label = format!("{}/{}", report.shard, report.num_shards);
    // The shard's time is its run's, installs and collection included: the sum of the test
    // cases' own times leaves most of a quick shard out (a 9 s shard read 0.0 s).
    let mut counts = Counts {
        seconds: report
            .finished
            .duration_since(report.started)
            .as_secs_f64()
            .max(0.0),
        ..Counts::default()
    };
    let mut failures = Vec::new();
    let mut skips = Vec::new();
    let no_gpu = report.gpus.hip_visible_devices.is_none();
    let mut seen = std::collections::BTreeSet::new();
    let mut unreadable = Vec::new();
    for file in &shard.junit {
        match &file.report {
            Err(message) => unreadable.push(format!("{}: {message}", file.path)),
            Ok(parsed) => {
                for case in &parsed.cases {
                    match case.status {
                        CaseStatus::Passed => counts.passed += 1,
                        CaseStatus::Skipped => counts.skipped += 1,
                        CaseStatus::Failed => counts.failed += 1,
                        CaseStatus::Error => counts.errors += 1,
                    }
                    let test = if case.classname.is_empty() {
                        case.name.clone()
                    } else {
                        format!("{}.{}", case.classname, case.name)
                    };
                    if no_gpu && case.status == CaseStatus::Skipped {
                        skips.push(SkipLine {
                            config: report.config,
                            shard: label.clone(),
                            test: test.clone(),
                            reason: first_lines(&case.message).replace('\n', " / "),
                        });
                    }
                    if matches!(case.status, CaseStatus::Failed | CaseStatus::Error)
                        && seen.insert(test.clone())
                    {
                        failures.push(FailureLine {
                            config: report.config,
                            shard: label.clone(),
                            test,
                            file: case.file.clone().filter(|f| !f.trim().is_empty()),
                            status: case.status,
                            message: first_lines(&case.message),
                        });
                    }
                }
            }
        }
    }
    // Steps that failed outside any test case: the install, the device query, a run_test.py
    // that crashed or timed out. A run that exits 1 because tests failed is already told by
    // those tests.
    let failed_cases = counts.failed + counts.errors > 0;
    for step in &report.steps {
        if step.result == Outcome::Failed && !(step.kind == "run" && failed_cases) {
            failures.push(FailureLine {
                config: report.config,
                shard: label.clone(),
                test: format!("(step) {}", step.name),
                file: None,
                status: CaseStatus::Error,
                message: first_lines(step.detail.trim()),
            });
        }
    }
    for problem in &unreadable {
        failures.push(FailureLine {
            config: report.config,
            shard: label.clone(),
            test: "(junit)".into(),
            file: None,
            status: CaseStatus::Error,
            message: first_lines(problem),
        });
    }
    let bad_cases = counts.failed + counts.errors;
    let outcome = if report.unfit.is_some() {
        ShardOutcome::Unfit
    } else if report.result == Outcome::Cancelled {
        ShardOutcome::Cancelled
    } else if report.result == Outcome::Failed || bad_cases > 0 || !unreadable.is_empty() {
        ShardOutcome::Failed
    } else if counts.passed == 0 {
        ShardOutcome::Empty
    } else {
        ShardOutcome::Passed
    };
    let mut detail = counts.words();
    if outcome == ShardOutcome::Cancelled {
        detail.insert_str(0, "cancelled; ");
    }
    if let Some(reason) = &report.unfit {
        detail = format!("runner unfit: {reason}");
    }
    let names: Vec<&str> = failures.iter().take(5).map(|f| f.test.as_str()).collect();
    if !names.is_empty() {
        let _ = write!(detail, ": {}", names.join(", "));
        if failures.len() > names.len() {
            let _ = write!(detail, " and {} more", failures.len() - names.len());
        }
    }
    let gpus = match &report.gpus.hip_visible_devices {
        Some(devices) => format!(
            "HIP_VISIBLE_DEVICES={devices} ({})",
            report.gpus.archs.join(", ")
        ),
        None => report
            .gpus
            .notes
            .first()
            .cloned()
            .unwrap_or_else(|| "no GPU".into()),
    };
    (
        ShardLine {
            config: report.config,
            shard: report.shard,
            num_shards: report.num_shards,
            outcome,
            counts: Some(counts),
            gpus,
            detail,
        },
        failures,
        skips,
    )
}

/// The message's first non-empty lines, each cut at [`MESSAGE_CHARS`], `…` where more was left
/// out.
fn first_lines(message: &str) -> String {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut kept: Vec<String> = lines
        .by_ref()
        .take(MESSAGE_LINES)
        .map(|line| match line.char_indices().nth(MESSAGE_CHARS) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_string(),
        })
        .collect();
    if lines.next().is_some()
        && let Some(last) = kept.last_mut()
        && !last.ends_with('…')
    {
        last.push_str(" …");
    }
    kept.join("\n")
}

fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "passed",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
        Outcome::Empty => "ran no tests",
        Outcome::Skipped => "skipped",
    }
}

impl Summary {
    fn headline(&self) -> String {
        let count =
            |outcome: ShardOutcome| self.shards.iter().filter(|s| s.outcome == outcome).count();
        let mut parts = vec![format!(
            "{} of {} shard{} passed",
            count(ShardOutcome::Passed),
            self.shards.len(),
            plural(self.shards.len())
        )];
        for outcome in [
            ShardOutcome::Failed,
            ShardOutcome::Cancelled,
            ShardOutcome::Missing,
            ShardOutcome::Empty,
            ShardOutcome::Unfit,
        ] {
            let n = count(outcome);
            if n > 0 {
                parts.push(format!("{n} {}", outcome.word()));
            }
        }
        format!(
            "tests {}: {}; {}",
            outcome_word(self.result),
            parts.join(", "),
            self.totals.words()
        )
    }

    fn shard_rows(&self) -> Vec<Vec<String>> {
        self.shards
            .iter()
            .map(|line| {
                let cell = |f: fn(&Counts) -> usize| {
                    line.counts
                        .as_ref()
                        .map_or_else(|| "-".to_string(), |c| f(c).to_string())
                };
                vec![
                    line.config.to_string(),
                    format!("{}/{}", line.shard, line.num_shards),
                    line.outcome.word().to_string(),
                    cell(|c| c.passed),
                    cell(|c| c.skipped),
                    cell(|c| c.failed),
                    cell(|c| c.errors),
                    line.counts
                        .as_ref()
                        .map_or_else(|| "-".to_string(), |c| shard_time(c.seconds)),
                    line.gpus.clone(),
                ]
            })
            .collect()
    }

    /// The first `limit` failures; the terminal's messages on one line each.
    fn failure_rows(&self, limit: usize, one_line: bool) -> Vec<Vec<String>> {
        self.failures
            .iter()
            .take(limit)
            .map(|f| {
                vec![
                    format!("{} {}", f.config, f.shard),
                    f.test.clone(),
                    f.file.clone().unwrap_or_else(|| "-".into()),
                    status_word(f.status).to_string(),
                    if one_line {
                        f.message.replace('\n', " / ")
                    } else {
                        f.message.clone()
                    },
                ]
            })
            .collect()
    }

    const SHARD_HEADERS: [&'static str; 9] = [
        "config", "shard", "result", "passed", "skipped", "failed", "errors", "time", "GPUs",
    ];
    const FAILURE_HEADERS: [&'static str; 5] = ["shard", "test", "file", "result", "message"];
    const SKIP_HEADERS: [&'static str; 3] = ["shard", "test", "reason"];

    /// The first `limit` tests skipped without a GPU.
    fn skip_rows(&self, limit: usize) -> Vec<Vec<String>> {
        self.without_gpu
            .iter()
            .take(limit)
            .map(|s| {
                vec![
                    format!("{} {}", s.config, s.shard),
                    s.test.clone(),
                    s.reason.clone(),
                ]
            })
            .collect()
    }

    /// The heading of the list of tests skipped without a GPU.
    fn skip_heading(&self) -> String {
        format!(
            "{} test{} skipped without a GPU (not checked here: they need one)",
            self.without_gpu.len(),
            plural(self.without_gpu.len())
        )
    }

    /// For the terminal.
    pub fn to_text(&self) -> String {
        let mut out = format!("{}\n\n", self.headline());
        out.push_str(&text_table(&Self::SHARD_HEADERS, &self.shard_rows()));
        out.push('\n');
        if !self.failures.is_empty() {
            let _ = write!(
                out,
                "\n{} failure{}:\n{}\n",
                self.failures.len(),
                plural(self.failures.len()),
                text_table(
                    &Self::FAILURE_HEADERS,
                    &self.failure_rows(self.failures.len(), true)
                )
            );
        }
        if !self.without_gpu.is_empty() {
            let _ = write!(
                out,
                "\n{}:\n{}\n",
                self.skip_heading(),
                text_table(&Self::SKIP_HEADERS, &self.skip_rows(SUMMARY_FAILURES))
            );
            let more = self.without_gpu.len().saturating_sub(SUMMARY_FAILURES);
            if more > 0 {
                let _ = writeln!(out, "and {more} more (the shards' JUnit XML has them all)");
            }
        }
        let _ = writeln!(
            out,
            "\nwheels from the index under test, installed by every shard: {}",
            if self.wheels.is_empty() {
                "none".to_string()
            } else {
                self.wheels.join(", ")
            }
        );
        for note in &self.notes {
            let _ = writeln!(out, "note: {note}");
        }
        out
    }

    /// For $GITHUB_STEP_SUMMARY.
    pub fn to_markdown(&self) -> Markdown {
        let mut out = Markdown::lit("### PyTorch tests\n\n**");
        out.push_text(&self.headline())
            .push_lit("**\n\n")
            .push(markdown_table(&Self::SHARD_HEADERS, &self.shard_rows()));
        if !self.failures.is_empty() {
            // On the page itself, not folded away: the failures are what the reader came for
            // (TheRock #5987).
            out.push_lit("\n#### ")
                .push_text(&format!(
                    "{} failure{}",
                    self.failures.len(),
                    plural(self.failures.len())
                ))
                .push_lit("\n\n")
                .push(markdown_table(
                    &Self::FAILURE_HEADERS,
                    &self.failure_rows(SUMMARY_FAILURES, false),
                ));
            let more = self.failures.len().saturating_sub(SUMMARY_FAILURES);
            if more > 0 {
                out.push_lit("\n").push_text(&format!(
                    "and {more} more: every failure is in the test report's `failures`"
                ));
                out.push_lit("\n");
            }
        }
        if !self.without_gpu.is_empty() {
            out.push_lit("\n#### ")
                .push_text(&self.skip_heading())
                .push_lit("\n\n")
                .push(markdown_table(
                    &Self::SKIP_HEADERS,
                    &self.skip_rows(SUMMARY_FAILURES),
                ));
            let more = self.without_gpu.len().saturating_sub(SUMMARY_FAILURES);
            if more > 0 {
                out.push_lit("\n").push_text(&format!(
                    "and {more} more: the shards' JUnit XML has them all"
                ));
                out.push_lit("\n");
            }
        }
        out.push_lit("\nWheels from the index under test, installed by every shard: ");
        if self.wheels.is_empty() {
            out.push_lit("none");
        } else {
            out.push(Markdown::join(
                self.wheels.iter().map(|w| Markdown::code(w)),
                ", ",
            ));
        }
        out.push_lit("\n");
        for note in &self.notes {
            out.push_lit("\n> ").push_text(note).push_lit("\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::report::{
        GpuRecord, JunitFile, SHARD_KIND, SHARD_SCHEMA, ShardReport, SkipRecord,
    };
    use crate::suite::skips::Platform;

    const SHA_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const SHA_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    fn at(minute: u32) -> jiff::Timestamp {
        format!("2026-11-24T10:{minute:02}:00Z")
            .parse()
            .expect("time")
    }

    fn wheel(name: &str, sha: &str) -> TestedWheel {
        TestedWheel {
            name: name.into(),
            version: "2.12.0+rocm7.10.0".into(),
            filename: format!("{name}-2.12.0+rocm7.10.0-cp312-cp312-linux_x86_64.whl"),
            sha256: sha.into(),
        }
    }

    fn junit(cases: &[(&str, &str)]) -> JunitFile {
        let mut xml = String::from("<testsuites><testsuite name=\"pytest\">");
        for (name, outcome) in cases {
            xml.push_str(&format!(
                "<testcase classname=\"test_nn.TestNN\" name=\"{name}\" file=\"test_nn.py\" time=\"1.5\">{}</testcase>",
                match *outcome {
                    // pytest writes the whole assertion message, lines and all, with
                    // characters that mean something in Markdown.
                    "failed" =>
                        "<failure message=\"AssertionError: Tensor-likes are not close!&#10;&#10;Mismatched elements: 1 / 10 (10.0%)&#10;| *x* | &lt;b&gt;x&lt;/b&gt; |&#10;Greatest relative difference: inf\"/>",
                    "error" =>
                        "<error message=\"RuntimeError: HIP error: invalid device function\"/>",
                    "skipped" => "<skipped message=\"not on ROCm\"/>",
                    _ => "",
                }
            ));
        }
        xml.push_str("</testsuite></testsuites>");
        JunitFile {
            path: "junit/python-pytest/test_nn/test_nn-1.xml".into(),
            report: crate::junit::parse(&xml).map_err(|e| e.to_string()),
        }
    }

    fn shard(
        config: TestConfig,
        number: u32,
        total: u32,
        result: Outcome,
        cases: &[(&str, &str)],
    ) -> LoadedShard {
        LoadedShard {
            file: format!("results/{config}-{number}-{total}/shard.json"),
            report: ShardReport {
                schema: SHARD_SCHEMA,
                kind: SHARD_KIND.into(),
                generated_by: "rockbuild 0.1.0".into(),
                config,
                shard: number,
                num_shards: total,
                index_url: "https://example.org/staging/gfx94X-dcgpu/".into(),
                python: Some("3.12.3".into()),
                torch: Some("2.12.0+rocm7.10.0".into()),
                source: None,
                platform: Platform::Linux,
                amdgpu_family: Some("gfx94X-dcgpu".into()),
                gpus: GpuRecord {
                    hip_visible_devices: Some("0".into()),
                    archs: vec!["gfx942".into()],
                    notes: Vec::new(),
                },
                skips: SkipRecord::default(),
                started: at(number),
                finished: at(number + 30),
                result,
                wheels: vec![wheel("torch", SHA_A), wheel("rocm", SHA_B)],
                sdk_env: None,
                runner: None,
                unfit: None,
                times: None,
                steps: Vec::new(),
                junit: vec!["junit/python-pytest/test_nn/test_nn-1.xml".into()],
            },
            junit: vec![junit(cases)],
        }
    }

    /// The shipped counts (default 6, distributed 3, inductor 2).
    fn catalog() -> ShardCounts {
        [
            (TestConfig::Default, 6),
            (TestConfig::Distributed, 3),
            (TestConfig::Inductor, 2),
        ]
        .into_iter()
        .collect()
    }

    /// Two default shards of three (one failed, one missing), an inductor shard that was
    /// cancelled and one that passed.
    fn mixed() -> Vec<LoadedShard> {
        vec![
            shard(
                TestConfig::Default,
                1,
                3,
                Outcome::Failed,
                &[
                    ("test_conv", "passed"),
                    ("test_rnn", "failed"),
                    ("test_rnn", "failed"),
                    ("test_pool", "error"),
                    ("test_fft", "skipped"),
                ],
            ),
            shard(
                TestConfig::Default,
                2,
                3,
                Outcome::Passed,
                &[("test_a", "passed")],
            ),
            shard(
                TestConfig::Inductor,
                1,
                2,
                Outcome::Cancelled,
                &[("test_b", "passed")],
            ),
            shard(
                TestConfig::Inductor,
                2,
                2,
                Outcome::Passed,
                &[("test_c", "passed")],
            ),
        ]
    }

    #[test]
    fn a_shard_without_a_gpu_lists_what_it_skipped_and_why() {
        let mut no_gpu = shard(
            TestConfig::GpuSmoke,
            1,
            1,
            Outcome::Passed,
            &[("test_conv", "passed"), ("test_fft", "skipped")],
        );
        no_gpu.report.gpus = GpuRecord {
            hip_visible_devices: None,
            archs: Vec::new(),
            notes: vec!["no GPU: the device query found none".into()],
        };
        let with_gpu = shard(
            TestConfig::Quick,
            1,
            1,
            Outcome::Passed,
            &[("test_a", "passed"), ("test_b", "skipped")],
        );
        let (summary, _) = combine(
            &[no_gpu, with_gpu],
            &[
                (TestConfig::GpuSmoke, Some(1)),
                (TestConfig::Quick, Some(1)),
            ],
            &catalog(),
            "rockbuild 0.1.0",
        )
        .expect("combine");
        // Only the GPU-less shard's skip: a runner with a GPU skipped test_b for another reason.
        assert_eq!(
            summary.without_gpu,
            [SkipLine {
                config: TestConfig::GpuSmoke,
                shard: "1/1".into(),
                test: "test_nn.TestNN.test_fft".into(),
                reason: "not on ROCm".into(),
            }]
        );
        let text = summary.to_text();
        let listed: Vec<String> = text
            .lines()
            .skip_while(|l| *l != "1 test skipped without a GPU (not checked here: they need one):")
            .take(4)
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            listed[3], "gpu-smoke 1/1 test_nn.TestNN.test_fft not on ROCm",
            "{text}"
        );
        let markdown = summary.to_markdown().to_string();
        assert!(
            markdown.contains("#### 1 test skipped without a GPU"),
            "{markdown}"
        );
    }

    #[test]
    fn summaries_name_every_shard_and_failure() {
        let (summary, report) =
            combine(&mixed(), &[], &catalog(), "rockbuild 0.1.0").expect("combine");
        insta::assert_snapshot!("summary_text", summary.to_text());
        insta::assert_snapshot!("summary_markdown", summary.to_markdown());
        insta::assert_snapshot!(
            "summary_json",
            serde_json::to_string_pretty(&summary).expect("json")
        );
        assert_eq!(report.result, Outcome::Failed);
        assert_eq!(
            crate::promote::evidence::parse(
                "test-report.json",
                &serde_json::to_string(&report).expect("json")
            )
            .expect("promote reads it")
            .outcome,
            Outcome::Failed
        );
    }

    /// Past 30 failures the step summary counts the rest; the report lists them all.
    #[test]
    fn the_step_summary_caps_its_failures_and_the_report_keeps_all() {
        let names: Vec<String> = (0..33).map(|i| format!("test_{i:02}")).collect();
        let cases: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "failed")).collect();
        let shards = vec![shard(TestConfig::Quick, 1, 1, Outcome::Failed, &cases)];
        let (summary, report) =
            combine(&shards, &[], &ShardCounts::new(), "rockbuild 0.1.0").expect("combine");
        let markdown = summary.to_markdown();
        assert!(
            markdown.as_str().contains("| test_nn.TestNN.test_29 |"),
            "{}",
            markdown.as_str()
        );
        assert!(
            !markdown.as_str().contains("test_30"),
            "{}",
            markdown.as_str()
        );
        assert!(
            markdown
                .as_str()
                .contains("and 3 more: every failure is in the test report's \\`failures\\`"),
            "{}",
            markdown.as_str()
        );
        assert_eq!(report.failures.len(), 33);
        assert_eq!(report.failures[32].test, "test_nn.TestNN.test_32");
        assert_eq!(report.failures[32].file.as_deref(), Some("test_nn.py"));
        assert_eq!(
            report.failures[32].message,
            "AssertionError: Tensor-likes are not close!\nMismatched elements: 1 / 10 (10.0%)\n| *x* | <b>x</b> | …"
        );
    }

    #[test]
    fn only_a_complete_passing_set_passes() {
        let passing = vec![
            shard(
                TestConfig::Default,
                1,
                2,
                Outcome::Passed,
                &[("test_a", "passed")],
            ),
            shard(
                TestConfig::Default,
                2,
                2,
                Outcome::Passed,
                &[("test_b", "passed")],
            ),
        ];
        let (summary, report) = combine(&passing, &[], &catalog(), "rockbuild").expect("combine");
        assert_eq!(
            (summary.result, report.result),
            (Outcome::Passed, Outcome::Passed)
        );
        assert_eq!(report.wheels.len(), 2);
        // A config expected but absent: all its shards (the catalog's count) are missing.
        let (summary, _) = combine(
            &passing,
            &[(TestConfig::Distributed, None)],
            &catalog(),
            "rockbuild",
        )
        .expect("combine");
        assert_eq!(summary.result, Outcome::Failed);
        assert_eq!(
            summary
                .shards
                .iter()
                .filter(|s| s.outcome == ShardOutcome::Missing)
                .count(),
            3
        );
        // Shards that installed different builds of a wheel: none of them counts as tested.
        let mut other = passing.clone();
        other[1].report.wheels[0].sha256 = SHA_B.into();
        let (summary, report) = combine(&other, &[], &catalog(), "rockbuild").expect("combine");
        assert_eq!(report.result, Outcome::Failed);
        assert_eq!(report.wheels.len(), 1, "only rocm was the same everywhere");
        assert_eq!(
            summary.notes,
            [
                "shards installed different builds of torch-2.12.0+rocm7.10.0-cp312-cp312-linux_x86_64.whl; none of them counts as tested"
            ]
        );
    }

    #[test]
    fn inconsistent_shards_are_errors() {
        let one = shard(
            TestConfig::Default,
            1,
            2,
            Outcome::Passed,
            &[("a", "passed")],
        );
        let mut again = one.clone();
        again.file = "elsewhere/shard.json".into();
        let error = combine(&[one.clone(), again], &[], &catalog(), "r").expect_err("duplicate");
        assert_eq!(
            error.to_string(),
            "default shard 1/2 is in both results/default-1-2/shard.json and elsewhere/shard.json"
        );
        let three = shard(
            TestConfig::Default,
            2,
            3,
            Outcome::Passed,
            &[("a", "passed")],
        );
        let error = combine(&[one.clone(), three], &[], &catalog(), "r").expect_err("counts");
        assert_eq!(
            error.to_string(),
            "the default config has 2 shards according to results/default-1-2/shard.json but 3 according to results/default-2-3/shard.json"
        );
        let error = combine(
            std::slice::from_ref(&one),
            &[(TestConfig::Default, Some(6))],
            &catalog(),
            "r",
        )
        .expect_err("expect");
        assert_eq!(
            error.to_string(),
            "the default config has 6 shards according to --expect but 2 according to results/default-1-2/shard.json"
        );
        let mut elsewhere = shard(
            TestConfig::Default,
            2,
            2,
            Outcome::Passed,
            &[("a", "passed")],
        );
        elsewhere.report.index_url = "https://example.org/other/".into();
        let error = combine(&[one, elsewhere], &[], &catalog(), "r").expect_err("index");
        assert!(
            error
                .to_string()
                .starts_with("shards tested different indexes"),
            "{error}"
        );
    }
}
