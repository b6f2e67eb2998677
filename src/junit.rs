//! JUnit XML, as pytest writes it (`--junit-xml`) and PyTorch's run_test.py collects it under
//! test/test-reports/: every test case with its outcome and message, and the suites' properties.
//! A tokenizer (xmlparser), no DOM: reports of a full PyTorch shard run to hundreds of MB.

use serde::Serialize;

use crate::index::client::unescape_html;

/// How one test case ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    Passed,
    Skipped,
    Failed,
    /// An error outside the test body (setup, teardown, collection).
    Error,
}

/// One `<testcase>`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Case {
    pub classname: String,
    pub name: String,
    /// The `file` attribute, when the writer gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub time: f64,
    pub status: CaseStatus,
    /// The failure, error or skip message (the `message` attribute, else the first line of the
    /// element's text).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Everything of one report file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub cases: Vec<Case>,
    /// `<property name value>` of every suite, in order.
    pub properties: Vec<(String, String)>,
    /// Failures and errors the `<testsuite>` elements claim (a writer may count cases it
    /// did not write out).
    pub claimed_failures: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JunitError(pub String);

/// Parses a JUnit XML document.
pub fn parse(text: &str) -> Result<Report, JunitError> {
    let mut report = Report::default();
    let mut stack: Vec<String> = Vec::new();
    let mut element: Option<(String, Vec<(String, String)>)> = None;
    let mut saw_root = false;
    // The status element of the current case whose text may give the message.
    let mut wants_text = false;
    for token in xmlparser::Tokenizer::from(text) {
        let token = token.map_err(|e| JunitError(format!("not well-formed XML: {e}")))?;
        match token {
            xmlparser::Token::ElementStart { local, .. } => {
                element = Some((local.as_str().to_string(), Vec::new()));
            }
            xmlparser::Token::Attribute { local, value, .. } => {
                if let Some((_, attributes)) = element.as_mut() {
                    attributes.push((local.as_str().to_string(), unescape_html(value.as_str())));
                }
            }
            xmlparser::Token::ElementEnd { end, .. } => match end {
                xmlparser::ElementEnd::Open | xmlparser::ElementEnd::Empty => {
                    let Some((name, attributes)) = element.take() else {
                        continue;
                    };
                    if stack.is_empty() {
                        if !matches!(name.as_str(), "testsuites" | "testsuite") {
                            return Err(JunitError(format!(
                                "not a JUnit report (root element <{name}>)"
                            )));
                        }
                        saw_root = true;
                    }
                    let get = |key: &str| {
                        attributes
                            .iter()
                            .find(|(k, _)| k == key)
                            .map(|(_, v)| v.clone())
                    };
                    let parent = stack.last().map(String::as_str);
                    wants_text = false;
                    match name.as_str() {
                        // Writers put the counts on <testsuite>, some also on <testsuites>.
                        "testsuite" | "testsuites" => {
                            for key in ["failures", "errors"] {
                                report.claimed_failures += get(key)
                                    .and_then(|v| v.trim().parse::<u64>().ok())
                                    .unwrap_or(0);
                            }
                        }
                        "testcase" => report.cases.push(Case {
                            classname: get("classname").unwrap_or_default(),
                            name: get("name").unwrap_or_default(),
                            file: get("file"),
                            time: get("time")
                                .and_then(|t| t.trim().parse().ok())
                                .unwrap_or(0.0),
                            status: CaseStatus::Passed,
                            message: String::new(),
                        }),
                        "failure" | "error" | "skipped" if parent == Some("testcase") => {
                            let status = match name.as_str() {
                                "failure" => CaseStatus::Failed,
                                "error" => CaseStatus::Error,
                                _ => CaseStatus::Skipped,
                            };
                            if let Some(case) = report.cases.last_mut()
                                && status > case.status
                            {
                                case.status = status;
                                case.message = get("message").unwrap_or_default();
                                wants_text = case.message.is_empty()
                                    && matches!(end, xmlparser::ElementEnd::Open);
                            }
                        }
                        "property" if parent == Some("properties") => {
                            report.properties.push((
                                get("name").unwrap_or_default(),
                                get("value").unwrap_or_default(),
                            ));
                        }
                        _ => {}
                    }
                    if matches!(end, xmlparser::ElementEnd::Open) {
                        stack.push(name);
                    }
                }
                xmlparser::ElementEnd::Close(_, local) => {
                    if stack.last().map(String::as_str) != Some(local.as_str()) {
                        return Err(JunitError(format!(
                            "mismatched closing tag </{}>",
                            local.as_str()
                        )));
                    }
                    wants_text = false;
                    stack.pop();
                }
            },
            xmlparser::Token::Text { text } | xmlparser::Token::Cdata { text, .. }
                if wants_text =>
            {
                let line = unescape_html(text.as_str());
                if let (Some(case), Some(first)) = (
                    report.cases.last_mut(),
                    line.lines().map(str::trim).find(|l| !l.is_empty()),
                ) {
                    case.message = first.to_string();
                    wants_text = false;
                }
            }
            _ => {}
        }
    }
    if !saw_root {
        return Err(JunitError(
            "not a JUnit report (no <testsuites> or <testsuite>)".into(),
        ));
    }
    if !stack.is_empty() {
        return Err(JunitError(format!(
            "truncated: <{}> is never closed",
            stack.join("> <")
        )));
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// pytest 9's --junit-xml output (xunit2), shortened.
    const PYTEST: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="1" skipped="1" tests="5" time="0.1" timestamp="2026-11-24T10:00:00" hostname="h"><properties><property name="rockbuild.wheel" value="torch-2.9.0-cp311-cp311-linux_x86_64.whl#sha256=ab"/></properties><testcase classname="test_torch.TestTorch" name="test_add" time="0.001" /><testcase classname="test_torch.TestTorch" name="test_print" time="0.002"><failure message="AssertionError: 'tensor([2.3000+4.j])' != 'tensor([2.30000+4.j])'">def test_print():
&gt;       assert False</failure></testcase><testcase classname="test_torch.TestTorch" name="test_gpu" time="0.000"><skipped type="pytest.skip" message="no GPU">/t/test_torch.py:9: no GPU</skipped></testcase><testcase classname="test_torch.TestTorch" name="test_teardown" time="0.000"><error><![CDATA[
fixture 'x' not found
more]]></error></testcase><testcase classname="test_torch.TestTorch" name="test_hang" time="3.01"><failure message="Failed: Timeout (&gt;3.0s) from pytest-timeout." /></testcase></testsuite></testsuites>"#;

    #[test]
    fn every_case_with_its_outcome_and_message() {
        let report = parse(PYTEST).expect("parse");
        let got: Vec<(&str, CaseStatus, &str)> = report
            .cases
            .iter()
            .map(|c| (c.name.as_str(), c.status, c.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("test_add", CaseStatus::Passed, ""),
                (
                    "test_print",
                    CaseStatus::Failed,
                    "AssertionError: 'tensor([2.3000+4.j])' != 'tensor([2.30000+4.j])'"
                ),
                ("test_gpu", CaseStatus::Skipped, "no GPU"),
                ("test_teardown", CaseStatus::Error, "fixture 'x' not found"),
                (
                    "test_hang",
                    CaseStatus::Failed,
                    "Failed: Timeout (>3.0s) from pytest-timeout."
                ),
            ]
        );
        assert_eq!(report.claimed_failures, 2);
        assert_eq!(
            report.properties,
            [(
                "rockbuild.wheel".to_string(),
                "torch-2.9.0-cp311-cp311-linux_x86_64.whl#sha256=ab".to_string()
            )]
        );
        assert_eq!(report.cases[0].classname, "test_torch.TestTorch");
    }

    #[test]
    fn broken_documents() {
        assert_eq!(
            parse("<html/>").expect_err("html").to_string(),
            "not a JUnit report (root element <html>)"
        );
        assert_eq!(
            parse("<testsuite><testcase name=\"a\">")
                .expect_err("truncated")
                .to_string(),
            "truncated: <testsuite> <testcase> is never closed"
        );
        assert!(
            parse("<testsuite></testcase>")
                .expect_err("mismatch")
                .to_string()
                .starts_with("mismatched closing tag")
        );
        assert!(parse("").is_err());
    }
}
