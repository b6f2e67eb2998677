//! Waivers: an explicit, owned, expiring decision to promote wheels without passing evidence
//! (TheRock#2156: gating without them blocked releases for weeks, and a release branch
//! hard-coded "tests passed" instead). Every waiver used, and every expired one, is shown in
//! the promotion summary.
//!
//! ```yaml
//! waivers:
//!   - wheel: "torchaudio-*"          # glob on wheel file names
//!     owner: jane.doe@example.com
//!     reason: audio smoke test hangs on gfx1151 (ROCm/TheRock#1234)
//!     expires: 2026-12-31            # valid through this day (UTC)
//! ```

use serde::Deserialize;

use crate::stack::{ConfigError, ConfigSource};

#[derive(Clone, Debug)]
pub struct Waiver {
    /// 1-based position in the file.
    pub number: usize,
    /// Where it is written (`file:line`).
    pub location: String,
    pub pattern: String,
    matcher: globset::GlobMatcher,
    pub owner: String,
    pub reason: String,
    pub expires: jiff::civil::Date,
}

impl Waiver {
    pub fn matches(&self, filename: &str) -> bool {
        self.matcher.is_match(filename)
    }

    /// Expired once the expiry day is over (UTC).
    pub fn is_expired(&self, today: jiff::civil::Date) -> bool {
        today > self.expires
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaiverFile {
    waivers: Vec<WaiverEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaiverEntry {
    wheel: String,
    owner: String,
    reason: String,
    expires: String,
}

pub fn parse(source: &ConfigSource) -> Result<Vec<Waiver>, ConfigError> {
    let file: WaiverFile = source.parse()?;
    let lines = item_lines(&source.text);
    let mut waivers = Vec::with_capacity(file.waivers.len());
    for (index, entry) in file.waivers.into_iter().enumerate() {
        let line = lines.get(index).copied();
        let fail = |message: String| ConfigError {
            file: source.name.clone(),
            line,
            column: None,
            message,
        };
        let number = index + 1;
        for (field, value) in [
            ("wheel", &entry.wheel),
            ("owner", &entry.owner),
            ("reason", &entry.reason),
        ] {
            if value.trim().is_empty() {
                return Err(fail(format!(
                    "waiver {number}: `{field}` must not be empty (a waiver needs an owner and a reason)"
                )));
            }
        }
        let matcher = globset::Glob::new(entry.wheel.trim())
            .map_err(|e| {
                fail(format!(
                    "waiver {number}: `wheel: {}` is not a valid glob: {e}",
                    entry.wheel
                ))
            })?
            .compile_matcher();
        let expires: jiff::civil::Date = entry.expires.trim().parse().map_err(|_| {
            fail(format!(
                "waiver {number}: `expires: {}` is not a date; write YYYY-MM-DD",
                entry.expires
            ))
        })?;
        waivers.push(Waiver {
            number,
            location: match line {
                Some(line) => format!("{}:{line}", source.name),
                None => source.name.clone(),
            },
            pattern: entry.wheel.trim().to_string(),
            matcher,
            owner: entry.owner.trim().to_string(),
            reason: entry.reason.trim().to_string(),
            expires,
        });
    }
    Ok(waivers)
}

/// The 1-based line where each item of the (single) top-level sequence starts.
fn item_lines(text: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let mut indent = None;
    for (index, raw) in text.lines().enumerate() {
        let trimmed = raw.trim_start();
        if !trimmed.starts_with("- ") && trimmed != "-" {
            continue;
        }
        let this = raw.len() - trimmed.len();
        if *indent.get_or_insert(this) == this {
            lines.push(index + 1);
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> ConfigSource {
        ConfigSource {
            name: "waivers.yaml".into(),
            text: text.into(),
        }
    }

    const GOOD: &str = "# waivers for the 2.9 release
waivers:
  - wheel: \"torchaudio-*\"
    owner: jane.doe@example.com
    reason: audio smoke test hangs on gfx1151
    expires: 2026-12-31
  - wheel: apex-*.whl
    owner: ops
    reason: no GPU runner
    expires: 2026-01-01
";

    #[test]
    fn parses_and_matches() {
        let waivers = parse(&source(GOOD)).expect("parse");
        assert_eq!(waivers.len(), 2);
        assert_eq!(waivers[0].location, "waivers.yaml:3");
        assert_eq!(waivers[1].location, "waivers.yaml:7");
        assert!(waivers[0].matches("torchaudio-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl"));
        assert!(!waivers[0].matches("torch-2.9.0-cp311-cp311-linux_x86_64.whl"));
        let day = |s: &str| s.parse::<jiff::civil::Date>().expect("date");
        assert!(
            !waivers[0].is_expired(day("2026-12-31")),
            "valid through its last day"
        );
        assert!(waivers[0].is_expired(day("2027-01-01")));
    }

    #[test]
    fn errors_name_the_line_and_the_fix() {
        let error = parse(&source(&GOOD.replace("2026-01-01", "next week"))).expect_err("date");
        assert_eq!(
            error.to_string(),
            "waivers.yaml:7: waiver 2: `expires: next week` is not a date; write YYYY-MM-DD"
        );
        let error = parse(&source(&GOOD.replace("owner: ops", "owner: \"\""))).expect_err("owner");
        assert_eq!(
            error.to_string(),
            "waivers.yaml:7: waiver 2: `owner` must not be empty (a waiver needs an owner and a reason)"
        );
        let error =
            parse(&source(&GOOD.replace("    reason: no GPU runner\n", ""))).expect_err("missing");
        assert!(
            error.to_string().contains("missing field `reason`"),
            "{error}"
        );
        let error = parse(&source(&GOOD.replace("owner: ops", "onwer: ops"))).expect_err("typo");
        assert!(
            error.to_string().contains("did you mean `owner`"),
            "{error}"
        );
        let error = parse(&source(&GOOD.replace("apex-*.whl", "apex-[.whl"))).expect_err("glob");
        assert!(
            error
                .to_string()
                .starts_with("waivers.yaml:7: waiver 2: `wheel: apex-[.whl` is not a valid glob"),
            "{error}"
        );
    }
}
