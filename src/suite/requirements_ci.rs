//! PyTorch's own test requirements, `.ci/docker/requirements-ci.txt` of the torch checkout the
//! tests come from, installed into the test venv after the short list, as TheRock's test jobs
//! do since TheRock#6384 (an unpinned numpy and a missing scipy failed tests, #6095). Some pins
//! have no wheel for a newer Python and fail to build there (scikit-image 0.22.0 on 3.14,
//! TheRock#7185): configs/pytorch-tests.yaml overrides such pins per Python (TheRock#7455; the
//! versions ROCm/pytorch#3423 moved to for 3.14). An override is a marker, not a choice made
//! here: the file's pin gets `python_version != "X"`, the override `python_version == "X"`,
//! and pip, knowing the venv's Python, takes one of them.

use std::collections::BTreeMap;

/// Where the file is in a torch checkout.
pub const PATH: &str = ".ci/docker/requirements-ci.txt";

/// A line of the file pip would not take as a requirement, named by its line.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "{PATH}:{line}: `{text}` is not a requirement line ({why}); the test venv takes requirement lines only"
)]
pub struct BadLine {
    pub line: usize,
    pub text: String,
    pub why: &'static str,
}

/// The requirement arguments for pip: every requirement line of `text` (comments and blank
/// lines dropped), each pin an override names made conditional on the other Pythons, and the
/// overrides for their Python. `overrides`: by Python (`3.14`), requirement lines.
pub fn requirements(
    text: &str,
    overrides: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<String>, BadLine> {
    let mut out = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why| BadLine {
            line: index + 1,
            text: line.to_string(),
            why,
        };
        // Options (`-r`, `--index-url`) would reach pip from a repository file.
        if line.starts_with('-') {
            return Err(bad("an option"));
        }
        let name = name_of(line).ok_or_else(|| bad("no project name"))?;
        let (requirement, marker) = match line.split_once(';') {
            Some((requirement, marker)) => (requirement.trim(), Some(marker.trim())),
            None => (line, None),
        };
        let excluded: Vec<String> = overrides
            .iter()
            .filter(|(_, lines)| {
                lines
                    .iter()
                    .any(|o| name_of(o).as_deref() == Some(name.as_str()))
            })
            .map(|(python, _)| format!("python_version != \"{python}\""))
            .collect();
        out.push(match (marker, excluded.is_empty()) {
            (None, true) => requirement.to_string(),
            (Some(marker), true) => format!("{requirement} ; {marker}"),
            (None, false) => format!("{requirement} ; {}", excluded.join(" and ")),
            (Some(marker), false) => {
                format!("{requirement} ; ({marker}) and {}", excluded.join(" and "))
            }
        });
    }
    for (python, lines) in overrides {
        for line in lines {
            out.push(format!("{line} ; python_version == \"{python}\""));
        }
    }
    Ok(out)
}

/// The line without a `#` comment (pip's rule: `#` at the start or after whitespace).
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let at = (0..bytes.len())
        .find(|&i| bytes[i] == b'#' && (i == 0 || bytes[i - 1].is_ascii_whitespace()));
    at.map_or(line, |i| &line[..i])
}

/// The normalized project name a requirement starts with (PEP 508, PEP 503 normalization).
fn name_of(requirement: &str) -> Option<String> {
    let end = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .unwrap_or(requirement.len());
    let name = &requirement[..end];
    (!name.is_empty()).then(|| crate::wheel::filename::normalize_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of PyTorch's .ci/docker/requirements-ci.txt (ROCm/pytorch, comments after
    /// each pin, markers per Python).
    const UPSTREAM: &str = r#"# Python dependencies required for unit tests

#awscli==1.6 #this breaks some platforms
#Description: AWS command line interface

numpy==2.1.2 ; python_version >= "3.10"
#Description: Provides N-dimensional arrays and linear algebra

scikit-image==0.22.0 ; python_version >= "3.10"
#Description: image processing routines

scipy==1.14.1 ; python_version > "3.9"
unittest-xml-reporting<=3.2.0,>=2.0.0
Scikit_Image==0.19.3 ; python_version < "3.10"  # old Pythons
"#;

    #[test]
    fn pins_an_override_names_give_way_on_its_python() {
        let overrides =
            BTreeMap::from([("3.14".to_string(), vec!["scikit-image==0.26.0".to_string()])]);
        assert_eq!(
            requirements(UPSTREAM, &overrides).expect("requirements"),
            [
                "numpy==2.1.2 ; python_version >= \"3.10\"",
                "scikit-image==0.22.0 ; (python_version >= \"3.10\") and python_version != \"3.14\"",
                "scipy==1.14.1 ; python_version > \"3.9\"",
                "unittest-xml-reporting<=3.2.0,>=2.0.0",
                "Scikit_Image==0.19.3 ; (python_version < \"3.10\") and python_version != \"3.14\"",
                "scikit-image==0.26.0 ; python_version == \"3.14\"",
            ]
        );
        assert_eq!(
            requirements("numpy\n", &BTreeMap::new()).expect("plain"),
            ["numpy"]
        );
    }

    #[test]
    fn anything_but_a_requirement_is_refused_by_its_line() {
        let error = requirements("numpy\n--index-url http://elsewhere/\n", &BTreeMap::new())
            .expect_err("an option");
        assert_eq!(
            error.to_string(),
            ".ci/docker/requirements-ci.txt:2: `--index-url http://elsewhere/` is not a requirement line (an option); the test venv takes requirement lines only"
        );
        let error = requirements("== 1.0\n", &BTreeMap::new()).expect_err("no name");
        assert_eq!(error.line, 1);
    }
}
