//! ROCm/pytorch's `related_commits` file: one pin per line, six `|`-separated fields
//! `os|source|project|branch|commit|origin`, e.g.
//! `ubuntu|pytorch|torchaudio|release/2.10|<sha>|https://github.com/pytorch/audio`.
//!
//! One strict parser (the reference has two that disagree, and the lenient one compares stale
//! values after a malformed line: W2): blank and `#` lines are skipped; anything else that is
//! not six fields with a full commit SHA is an error naming the file and line; two rows for the
//! same (os, project) that disagree are an error naming both lines.

use crate::git::is_full_sha;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelatedCommit {
    pub os: String,
    pub source: String,
    pub project: String,
    pub branch: String,
    pub commit: String,
    pub origin: String,
    /// 1-based line number in the file.
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RelatedCommitsError {
    #[error(
        "{file}:{line}: malformed related_commits line: {reason} (expected `os|source|project|branch|commit|origin`, got `{text}`)"
    )]
    Malformed {
        file: String,
        line: usize,
        reason: String,
        text: String,
    },
    #[error(
        "{file}:{line}: conflicting pins for {project} on {os}: this line says {commit}, line {first_line} says {first_commit}"
    )]
    Conflict {
        file: String,
        line: usize,
        first_line: usize,
        os: String,
        project: String,
        commit: String,
        first_commit: String,
    },
}

/// Parses a whole file. `file` is the name errors use.
pub fn parse(file: &str, text: &str) -> Result<Vec<RelatedCommit>, RelatedCommitsError> {
    let mut rows: Vec<RelatedCommit> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let malformed = |reason: &str| RelatedCommitsError::Malformed {
            file: file.to_string(),
            line,
            reason: reason.to_string(),
            text: trimmed
                .split('|')
                .map(crate::redact::redact_url)
                .collect::<Vec<_>>()
                .join("|"),
        };
        let fields: Vec<&str> = trimmed.split('|').map(str::trim).collect();
        if fields.len() != 6 {
            return Err(malformed(&format!("{} fields instead of 6", fields.len())));
        }
        if let Some(position) = [0, 2, 4].into_iter().find(|&i| fields[i].is_empty()) {
            let name = ["os", "", "project", "", "commit"][position];
            return Err(malformed(&format!("empty {name}")));
        }
        if !is_full_sha(fields[4]) {
            return Err(malformed(&format!(
                "`{}` is not a full commit SHA",
                fields[4]
            )));
        }
        if !fields[5].is_empty()
            && let Err(invalid) = crate::git::Origin::parse(fields[5])
        {
            return Err(malformed(&format!("origin {invalid}")));
        }
        let row = RelatedCommit {
            os: fields[0].to_string(),
            source: fields[1].to_string(),
            project: fields[2].to_string(),
            branch: fields[3].to_string(),
            commit: fields[4].to_ascii_lowercase(),
            origin: fields[5].to_string(),
            line,
        };
        if let Some(first) = rows
            .iter()
            .find(|r| r.os == row.os && r.project == row.project)
        {
            if first.commit != row.commit || first.origin != row.origin {
                return Err(RelatedCommitsError::Conflict {
                    file: file.to_string(),
                    line,
                    first_line: first.line,
                    os: row.os,
                    project: row.project,
                    commit: row.commit,
                    first_commit: first.commit.clone(),
                });
            }
            continue;
        }
        rows.push(row);
    }
    Ok(rows)
}

/// The row for (os, project), if any.
pub fn find<'a>(rows: &'a [RelatedCommit], os: &str, project: &str) -> Option<&'a RelatedCommit> {
    rows.iter().find(|r| r.os == os && r.project == project)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";

    #[test]
    fn parses_rows_skipping_blanks_and_comments() {
        let text = format!(
            "# pins\n\nubuntu|pytorch|torchaudio|release/2.9|{A}|https://github.com/pytorch/audio\n\
             ubuntu|pytorch|torchvision|release/2.9|{B}|https://github.com/pytorch/vision\n\
             ubuntu|pytorch|torchaudio|release/2.9|{A}|https://github.com/pytorch/audio\n"
        );
        let rows = parse("pytorch/related_commits", &text).expect("parses");
        assert_eq!(rows.len(), 2);
        let audio = find(&rows, "ubuntu", "torchaudio").expect("audio");
        assert_eq!((audio.commit.as_str(), audio.line), (A, 3));
        assert_eq!(audio.origin, "https://github.com/pytorch/audio");
        assert!(find(&rows, "centos", "torchaudio").is_none());
    }

    #[test]
    fn malformed_lines_name_the_line() {
        let cases = [
            (
                "ubuntu|pytorch|torchaudio|release/2.9|abc",
                "f:1: malformed related_commits line: 5 fields instead of 6",
            ),
            (
                &format!("\n# c\nubuntu|pytorch||main|{A}|x") as &str,
                "f:3: malformed related_commits line: empty project",
            ),
            (
                "ubuntu|pytorch|apex|main|1a2b3c4|x",
                "f:1: malformed related_commits line: `1a2b3c4` is not a full commit SHA",
            ),
        ];
        for (text, want) in cases {
            let error = parse("f", text).expect_err("malformed").to_string();
            assert!(error.starts_with(want), "{error}");
        }
    }

    #[test]
    fn conflicting_rows_name_both_lines() {
        let text = format!("ubuntu|pytorch|apex|master|{A}|x\nubuntu|pytorch|apex|master|{B}|x\n");
        assert_eq!(
            parse("rc", &text).expect_err("conflict").to_string(),
            format!(
                "rc:2: conflicting pins for apex on ubuntu: this line says {B}, line 1 says {A}"
            )
        );
    }
}
