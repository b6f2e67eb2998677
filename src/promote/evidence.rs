//! Test evidence: rockbuild's JSON test report (written by `rockbuild smoke`, later by the full
//! test runner) and JUnit XML from any test runner. Both become [`Evidence`]: which wheels
//! (by SHA-256) were tested and how it went.
//!
//! JUnit has no standard place for what was tested, so a JUnit file names its wheels with
//! properties, one per wheel, in the same shape as an index link:
//!
//! ```xml
//! <properties>
//!   <property name="rockbuild.wheel" value="torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl#sha256=…"/>
//! </properties>
//! ```
//!
//! (pytest: `record_testsuite_property("rockbuild.wheel", f"{name}#sha256={sha}")`). A JUnit
//! file without them still counts against a promotion when it failed, never for one.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::junit::CaseStatus;

/// The report format version smoke writes and promote reads.
pub const REPORT_SCHEMA: u32 = 1;
/// The JUnit property naming a tested wheel.
pub const JUNIT_WHEEL_PROPERTY: &str = "rockbuild.wheel";

/// How a whole run or one check ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Passed,
    Failed,
    /// Stopped before it finished (a cancelled workflow, an interrupt): never a pass.
    Cancelled,
    /// Ran nothing (no test cases, or every one skipped): no evidence either way.
    Empty,
    Skipped,
}

/// A wheel a test run installed and tested.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestedWheel {
    /// Distribution name as in METADATA (or the file name's first field).
    pub name: String,
    pub version: String,
    pub filename: String,
    pub sha256: String,
}

/// One check of a test run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub name: String,
    /// `install`, `import`, `smoke`, `versions`, ...
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    pub result: Outcome,
    pub started: jiff::Timestamp,
    pub finished: jiff::Timestamp,
    /// Output tail or the reason, for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// rockbuild's test report (JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TestReport {
    pub schema: u32,
    /// What produced it: `smoke`, ...
    pub kind: String,
    pub generated_by: String,
    /// The index the wheels were installed from (credentials masked).
    pub index_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    pub started: jiff::Timestamp,
    pub finished: jiff::Timestamp,
    pub result: Outcome,
    pub wheels: Vec<TestedWheel>,
    pub checks: Vec<Check>,
    /// Every failed test and step of a test run, for people: the step summary lists the
    /// first of them (the checks decide the outcome).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailedTest>,
}

/// One failed test case (or step) of a test run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailedTest {
    /// `default 2/6`.
    pub shard: String,
    /// `file.Class.test`, `(step) NAME` or `(junit)`.
    pub test: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `failed` or `error`.
    pub result: String,
    /// The message's first lines.
    pub message: String,
}

impl TestReport {
    /// The outcome the checks support: any failed check fails the run whatever `result`
    /// says, a run without a passing check is empty, a cancelled run stays cancelled.
    pub fn effective_outcome(&self) -> Outcome {
        if self.result == Outcome::Cancelled {
            return Outcome::Cancelled;
        }
        if self.result == Outcome::Failed || self.checks.iter().any(|c| c.result == Outcome::Failed)
        {
            return Outcome::Failed;
        }
        if self.checks.iter().any(|c| c.result == Outcome::Cancelled) {
            return Outcome::Cancelled;
        }
        if !self.checks.iter().any(|c| c.result == Outcome::Passed) {
            return Outcome::Empty;
        }
        Outcome::Passed
    }
}

/// A wheel named by evidence: file name and SHA-256.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelRef {
    pub filename: String,
    pub sha256: String,
}

/// What one report says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    /// The report file, for messages.
    pub source: String,
    pub outcome: Outcome,
    /// Why, in a few words (`2 failed: test_a, test_b`).
    pub detail: String,
    /// The wheels it covers; empty when the report does not say.
    pub wheels: Vec<WheelRef>,
}

#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct EvidenceError {
    pub file: String,
    pub message: String,
}

/// Reads a report: JUnit XML when the file starts with `<`, rockbuild JSON otherwise.
pub fn read(path: &Path) -> Result<Evidence, EvidenceError> {
    let file = path.display().to_string();
    let text = crate::input::read_text(path, crate::input::REPORT).map_err(|e| EvidenceError {
        file: file.clone(),
        message: e.to_string(),
    })?;
    parse(&file, &text)
}

pub fn parse(file: &str, text: &str) -> Result<Evidence, EvidenceError> {
    if text.trim_start().starts_with('<') {
        parse_junit(file, text)
    } else {
        parse_json(file, text)
    }
}

fn parse_json(file: &str, text: &str) -> Result<Evidence, EvidenceError> {
    let error = |message: String| EvidenceError {
        file: file.to_string(),
        message,
    };
    let value: serde_json::Value = crate::input::strict::json(text).map_err(|e| {
        let what = if e.is_data() {
            "not a valid test report"
        } else {
            "not JSON or JUnit XML"
        };
        error(format!(
            "{}:{}: {what}: {}",
            e.line(),
            e.column(),
            crate::input::strict::json_message(&e)
        ))
    })?;
    match value.get("schema").and_then(serde_json::Value::as_u64) {
        Some(schema) if schema == u64::from(REPORT_SCHEMA) => {}
        Some(schema) => {
            return Err(error(format!(
                "test report schema {schema} is not supported (this rockbuild reads {REPORT_SCHEMA})"
            )));
        }
        None => {
            return Err(error(
                "not a rockbuild test report (no `schema` field)".into(),
            ));
        }
    }
    let report: TestReport = serde_json::from_value(value)
        .map_err(|e| error(format!("not a valid test report: {e}")))?;
    let outcome = report.effective_outcome();
    let failed: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| matches!(c.result, Outcome::Failed | Outcome::Cancelled))
        .map(|c| c.name.as_str())
        .collect();
    let detail = match outcome {
        Outcome::Passed => format!("{} {} checks passed", report.kind, report.checks.len()),
        Outcome::Failed | Outcome::Cancelled if !failed.is_empty() => {
            format!(
                "{} {}: {}",
                report.kind,
                outcome_word(outcome),
                failed.join(", ")
            )
        }
        _ => format!("{} {}", report.kind, outcome_word(outcome)),
    };
    Ok(Evidence {
        source: file.to_string(),
        outcome,
        detail,
        wheels: report
            .wheels
            .into_iter()
            .map(|w| WheelRef {
                filename: w.filename,
                sha256: w.sha256.to_ascii_lowercase(),
            })
            .collect(),
    })
}

pub fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Passed => "passed",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "was cancelled",
        Outcome::Empty => "ran no tests",
        Outcome::Skipped => "was skipped",
    }
}

/// `FILENAME#sha256=HEX`, the value of a wheel property.
fn wheel_property(value: &str) -> Option<WheelRef> {
    value
        .split_once("#sha256=")
        .map(|(name, sha)| WheelRef {
            filename: name.trim().to_string(),
            sha256: sha.trim().to_ascii_lowercase(),
        })
        .filter(|w| {
            !w.filename.is_empty()
                && w.sha256.len() == 64
                && w.sha256.bytes().all(|b| b.is_ascii_hexdigit())
        })
}

fn parse_junit(file: &str, text: &str) -> Result<Evidence, EvidenceError> {
    let error = |message: String| EvidenceError {
        file: file.to_string(),
        message,
    };
    let report = crate::junit::parse(text).map_err(|e| error(e.0))?;
    let mut wheels = Vec::new();
    for (name, value) in &report.properties {
        if name == JUNIT_WHEEL_PROPERTY {
            wheels.push(wheel_property(value).ok_or_else(|| {
                error(format!(
                    "property {JUNIT_WHEEL_PROPERTY}='{value}' is not FILENAME#sha256=HEX"
                ))
            })?);
        }
    }
    let (outcome, detail) = junit_verdict(&report);
    Ok(Evidence {
        source: file.to_string(),
        outcome,
        detail,
        wheels,
    })
}

/// A JUnit run's outcome: failed when any case (or the suite's own count) failed, empty when
/// nothing ran, passed otherwise.
fn junit_verdict(report: &crate::junit::Report) -> (Outcome, String) {
    let named = |status: CaseStatus| -> Vec<String> {
        report
            .cases
            .iter()
            .enumerate()
            .filter(|(_, case)| case.status == status)
            .map(
                |(index, case)| match (case.classname.as_str(), case.name.as_str()) {
                    ("", "") => format!("test case {}", index + 1),
                    ("", name) => name.to_string(),
                    (class, name) => format!("{class}.{name}"),
                },
            )
            .collect()
    };
    let failed = named(CaseStatus::Failed);
    let errors = named(CaseStatus::Error);
    let skipped = named(CaseStatus::Skipped).len();
    let cases = report.cases.len();
    let bad = failed.len() + errors.len();
    if bad > 0 || report.claimed_failures > 0 {
        let mut names: Vec<String> = failed.iter().chain(&errors).take(5).cloned().collect();
        if bad > names.len() {
            names.push(format!("and {} more", bad - names.len()));
        }
        let detail = if names.is_empty() {
            format!(
                "junit: the suite reports {} failures and errors",
                report.claimed_failures
            )
        } else {
            format!(
                "junit: {} failed, {} errors: {}",
                failed.len(),
                errors.len(),
                names.join(", ")
            )
        };
        (Outcome::Failed, detail)
    } else if cases == skipped {
        (
            Outcome::Empty,
            format!("junit: {cases} test cases, none ran"),
        )
    } else {
        (
            Outcome::Passed,
            format!("junit: {} passed, {skipped} skipped", cases - skipped),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn junit(body: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="utf-8"?>
<testsuites>
  <testsuite name="pytest" tests="3" failures="0" errors="0" skipped="1">
    <properties>
      <property name="rockbuild.wheel" value="torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl#sha256={SHA}"/>
      <property name="other" value="x"/>
    </properties>
{body}
  </testsuite>
</testsuites>
"#
        )
    }

    #[test]
    fn junit_with_zero_failures_passes_and_names_its_wheels() {
        let text = junit(
            r#"    <testcase classname="test_ops" name="test_add" time="0.1"/>
    <testcase classname="test_ops" name="test_mul"><system-out>ok &amp; fine</system-out></testcase>
    <testcase classname="test_ops" name="test_gpu"><skipped message="no GPU"/></testcase>"#,
        );
        let evidence = parse("junit.xml", &text).expect("parse");
        assert_eq!(evidence.outcome, Outcome::Passed);
        assert_eq!(evidence.detail, "junit: 2 passed, 1 skipped");
        assert_eq!(
            evidence.wheels,
            vec![WheelRef {
                filename: "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl".into(),
                sha256: SHA.into()
            }]
        );
    }

    #[test]
    fn junit_failures_errors_and_empty_runs() {
        let failed = junit(
            r#"    <testcase classname="a" name="t1"><failure message="boom">trace</failure></testcase>
    <testcase classname="a" name="t2"><error message="setup"/></testcase>
    <testcase classname="a" name="t3"/>"#,
        );
        let evidence = parse("f.xml", &failed).expect("parse");
        assert_eq!(evidence.outcome, Outcome::Failed);
        assert_eq!(evidence.detail, "junit: 1 failed, 1 errors: a.t1, a.t2");

        let claimed =
            junit(r#"    <testcase name="t"/>"#).replace("failures=\"0\"", "failures=\"2\"");
        assert_eq!(
            parse("c.xml", &claimed).expect("parse").outcome,
            Outcome::Failed,
            "the suite's own count is believed"
        );

        let skipped = junit(r#"    <testcase name="t"><skipped/></testcase>"#);
        assert_eq!(
            parse("s.xml", &skipped).expect("parse").outcome,
            Outcome::Empty
        );
        let none = junit("");
        assert_eq!(
            parse("n.xml", &none).expect("parse").outcome,
            Outcome::Empty
        );
    }

    #[test]
    fn bad_junit_is_an_error_naming_the_file() {
        let truncated = junit(r#"    <testcase name="t"/>"#);
        let truncated = &truncated[..truncated.len() - 30];
        let error = parse("t.xml", truncated).expect_err("truncated");
        assert!(error.to_string().starts_with("t.xml: "), "{error}");
        let error = parse("h.xml", "<html><body/></html>").expect_err("html");
        assert_eq!(
            error.to_string(),
            "h.xml: not a JUnit report (root element <html>)"
        );
        let bad_property = junit("").replace(&format!("#sha256={SHA}"), "");
        let error = parse("p.xml", &bad_property).expect_err("property");
        assert!(
            error.to_string().contains("is not FILENAME#sha256=HEX"),
            "{error}"
        );
    }

    fn report(result: Outcome, checks: &[(&str, Outcome)]) -> TestReport {
        let at: jiff::Timestamp = "2026-11-22T05:00:00Z".parse().expect("time");
        TestReport {
            schema: REPORT_SCHEMA,
            kind: "smoke".into(),
            generated_by: "rockbuild test".into(),
            index_url: "http://127.0.0.1/simple/".into(),
            python: Some("3.11.7".into()),
            started: at,
            finished: at,
            result,
            wheels: vec![TestedWheel {
                name: "torch".into(),
                version: "2.9.0+rocm7.0.0".into(),
                filename: "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl".into(),
                sha256: SHA.to_uppercase(),
            }],
            checks: checks
                .iter()
                .map(|(name, result)| Check {
                    name: (*name).into(),
                    kind: "import".into(),
                    project: None,
                    result: *result,
                    started: at,
                    finished: at,
                    detail: String::new(),
                })
                .collect(),
            failures: Vec::new(),
        }
    }

    #[test]
    fn json_reports_are_judged_by_their_checks() {
        let text = serde_json::to_string(&report(
            Outcome::Passed,
            &[("import torch", Outcome::Passed)],
        ))
        .expect("json");
        let evidence = parse("smoke.json", &text).expect("parse");
        assert_eq!(
            (evidence.outcome, evidence.detail.as_str()),
            (Outcome::Passed, "smoke 1 checks passed")
        );
        assert_eq!(
            evidence.wheels[0].sha256, SHA,
            "hashes compare in lowercase"
        );

        // A report that claims a pass while a check failed is a failure.
        let lying = report(
            Outcome::Passed,
            &[
                ("import torch", Outcome::Passed),
                ("smoke torch", Outcome::Failed),
            ],
        );
        let evidence =
            parse("x.json", &serde_json::to_string(&lying).expect("json")).expect("parse");
        assert_eq!(
            (evidence.outcome, evidence.detail.as_str()),
            (Outcome::Failed, "smoke failed: smoke torch")
        );
        let cancelled = report(Outcome::Cancelled, &[("import torch", Outcome::Passed)]);
        assert_eq!(cancelled.effective_outcome(), Outcome::Cancelled);
        assert_eq!(
            report(Outcome::Passed, &[]).effective_outcome(),
            Outcome::Empty
        );
        assert_eq!(
            report(Outcome::Passed, &[("a", Outcome::Skipped)]).effective_outcome(),
            Outcome::Empty
        );
    }

    #[test]
    fn bad_json_reports() {
        let error = parse("r.json", "{\"schema\": 2}").expect_err("schema");
        assert_eq!(
            error.to_string(),
            "r.json: test report schema 2 is not supported (this rockbuild reads 1)"
        );
        let error = parse("r.json", "{}").expect_err("no schema");
        assert!(error.to_string().contains("no `schema` field"), "{error}");
        let error = parse("r.json", "{\"schema\": 1, \"kind\": \"smoke\"}").expect_err("fields");
        assert!(
            error
                .to_string()
                .contains("not a valid test report: missing field"),
            "{error}"
        );
        let error = parse("r.json", "passed").expect_err("text");
        assert!(
            error.to_string().contains("not JSON or JUnit XML"),
            "{error}"
        );
    }
}
