//! The promotion gate, a pure function: default deny. A wheel is promoted only when a report
//! that passed names exactly its bytes (SHA-256), and no report that failed or was cancelled
//! names them — or when an unexpired waiver covers it. The set goes all or nothing: one
//! denied wheel denies the promotion (TheRock#1579: a cancelled workflow fell through to
//! "upload", and #5107: host and device wheels promoted apart broke installs).
//!
//! Companions (the ROCm SDK's wheels the set carries, `crate::wheel::companion`) are not
//! judged on tests: their verdict is their provenance (`super::companions`), which no waiver
//! replaces.

use super::evidence::{Evidence, Outcome, outcome_word};
use super::waiver::Waiver;

/// A wheel to promote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub filename: String,
    pub sha256: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Passing evidence from these reports.
    Passed {
        sources: Vec<String>,
    },
    /// Promoted on waiver `number` despite `waived` (the reasons it would be denied).
    Waived {
        number: usize,
        waived: Vec<String>,
    },
    Denied {
        reasons: Vec<String>,
    },
    /// A companion that is byte for byte the file its index publishes there.
    Carried {
        source: String,
    },
    /// A companion of the SDK release the promotion replaces: the promoted set carries the
    /// promoted SDK's own files instead (`by` says which and from where).
    Replaced {
        by: String,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelDecision {
    pub filename: String,
    pub sha256: String,
    pub verdict: Verdict,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub wheels: Vec<WheelDecision>,
    /// Waivers that matched a wheel but had expired (shown, never counted).
    pub expired: Vec<usize>,
    /// Remarks about the evidence itself (reports that name no wheels).
    pub notes: Vec<String>,
}

impl Decision {
    pub fn allowed(&self) -> bool {
        !self.wheels.is_empty()
            && self
                .wheels
                .iter()
                .all(|w| !matches!(w.verdict, Verdict::Denied { .. }))
    }

    pub fn waivers_used(&self) -> Vec<usize> {
        let mut used: Vec<usize> = self
            .wheels
            .iter()
            .filter_map(|w| match w.verdict {
                Verdict::Waived { number, .. } => Some(number),
                _ => None,
            })
            .collect();
        used.sort_unstable();
        used.dedup();
        used
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Decides the promotion of `candidates` from `evidence` and `waivers` as of `today`.
pub fn decide(
    candidates: &[Candidate],
    evidence: &[Evidence],
    waivers: &[Waiver],
    today: jiff::civil::Date,
) -> Decision {
    let mut notes = Vec::new();
    for report in evidence {
        if report.wheels.is_empty() {
            let effect = if matches!(report.outcome, Outcome::Failed | Outcome::Cancelled) {
                "its failure denies every wheel"
            } else {
                "it counts for none"
            };
            notes.push(format!(
                "{} names no wheels ({}); {effect}",
                report.source, report.detail
            ));
        }
    }
    let mut expired = Vec::new();
    let wheels = candidates
        .iter()
        .map(|candidate| {
            let mut passes = Vec::new();
            // Results about these bytes that stand against promotion.
            let mut blocking = Vec::new();
            // Reports about another build with the same file name: why nothing matched.
            let mut mismatches = Vec::new();
            for report in evidence {
                let covers = report.wheels.iter().any(|w| w.sha256 == candidate.sha256);
                // A failure that does not say what it tested cannot be ruled out for any wheel.
                let unbound_failure = report.wheels.is_empty()
                    && matches!(report.outcome, Outcome::Failed | Outcome::Cancelled);
                if covers || unbound_failure {
                    match report.outcome {
                        Outcome::Passed => passes.push(report.source.clone()),
                        outcome => blocking.push(format!(
                            "{} {} ({})",
                            report.source,
                            outcome_word(outcome),
                            report.detail
                        )),
                    }
                } else if let Some(other) = report
                    .wheels
                    .iter()
                    .find(|w| w.filename == candidate.filename)
                {
                    mismatches.push(format!(
                        "{} tested another build of this file (sha256 {}…, staged {}…)",
                        report.source,
                        short(&other.sha256),
                        short(&candidate.sha256)
                    ));
                }
            }
            let reasons = if !blocking.is_empty() {
                blocking
            } else if !passes.is_empty() {
                Vec::new()
            } else if !mismatches.is_empty() {
                mismatches
            } else {
                vec!["no test report covers it".to_string()]
            };
            let verdict = if reasons.is_empty() {
                Verdict::Passed { sources: passes }
            } else {
                let matching = waivers.iter().filter(|w| w.matches(&candidate.filename));
                let mut chosen = None;
                for waiver in matching {
                    if waiver.is_expired(today) {
                        if !expired.contains(&waiver.number) {
                            expired.push(waiver.number);
                        }
                    } else if chosen.is_none() {
                        chosen = Some(waiver.number);
                    }
                }
                match chosen {
                    Some(number) => Verdict::Waived {
                        number,
                        waived: reasons,
                    },
                    None => Verdict::Denied { reasons },
                }
            };
            WheelDecision {
                filename: candidate.filename.clone(),
                sha256: candidate.sha256.clone(),
                verdict,
            }
        })
        .collect();
    expired.sort_unstable();
    Decision {
        wheels,
        expired,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::promote::evidence::WheelRef;
    use crate::stack::ConfigSource;

    const TORCH: &str = "torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl";
    const AUDIO: &str = "torchaudio-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl";

    fn sha(c: char) -> String {
        c.to_string().repeat(64)
    }

    fn set() -> Vec<Candidate> {
        vec![
            Candidate {
                filename: TORCH.into(),
                sha256: sha('a'),
            },
            Candidate {
                filename: AUDIO.into(),
                sha256: sha('b'),
            },
        ]
    }

    fn report(source: &str, outcome: Outcome, wheels: &[(&str, char)]) -> Evidence {
        Evidence {
            source: source.into(),
            outcome,
            detail: "detail".into(),
            wheels: wheels
                .iter()
                .map(|(f, c)| WheelRef {
                    filename: (*f).into(),
                    sha256: sha(*c),
                })
                .collect(),
        }
    }

    fn waivers(expires: &str) -> Vec<Waiver> {
        let text = format!(
            "waivers:\n  - wheel: \"torchaudio-*\"\n    owner: jane\n    reason: flaky\n    expires: {expires}\n"
        );
        crate::promote::waiver::parse(&ConfigSource {
            name: "w.yaml".into(),
            text,
        })
        .expect("waivers")
    }

    fn today() -> jiff::civil::Date {
        "2026-11-22".parse().expect("date")
    }

    fn verdicts(decision: &Decision) -> Vec<&Verdict> {
        decision.wheels.iter().map(|w| &w.verdict).collect()
    }

    fn denied(reason: &str) -> Verdict {
        Verdict::Denied {
            reasons: vec![reason.into()],
        }
    }

    #[test]
    fn table() {
        let pass_both = report("smoke.json", Outcome::Passed, &[(TORCH, 'a'), (AUDIO, 'b')]);
        let pass_torch = report("smoke.json", Outcome::Passed, &[(TORCH, 'a')]);
        let passed = |source: &str| Verdict::Passed {
            sources: vec![source.into()],
        };
        // (name, evidence, waivers, expected verdicts, allowed)
        type Case<'a> = (&'a str, Vec<Evidence>, Vec<Waiver>, Vec<Verdict>, bool);
        let cases: Vec<Case> = vec![
            (
                "no report: deny",
                vec![],
                vec![],
                vec![
                    denied("no test report covers it"),
                    denied("no test report covers it"),
                ],
                false,
            ),
            (
                "passing report for both",
                vec![pass_both.clone()],
                vec![],
                vec![passed("smoke.json"), passed("smoke.json")],
                true,
            ),
            (
                "one wheel untested: the whole set is denied",
                vec![pass_torch.clone()],
                vec![],
                vec![passed("smoke.json"), denied("no test report covers it")],
                false,
            ),
            (
                "failing report",
                vec![report(
                    "smoke.json",
                    Outcome::Failed,
                    &[(TORCH, 'a'), (AUDIO, 'b')],
                )],
                vec![],
                vec![
                    denied("smoke.json failed (detail)"),
                    denied("smoke.json failed (detail)"),
                ],
                false,
            ),
            (
                "cancelled run never passes (TheRock#1579)",
                vec![report(
                    "smoke.json",
                    Outcome::Cancelled,
                    &[(TORCH, 'a'), (AUDIO, 'b')],
                )],
                vec![],
                vec![
                    denied("smoke.json was cancelled (detail)"),
                    denied("smoke.json was cancelled (detail)"),
                ],
                false,
            ),
            (
                "a pass elsewhere does not outweigh a failure",
                vec![
                    pass_both.clone(),
                    report("full.xml", Outcome::Failed, &[(AUDIO, 'b')]),
                ],
                vec![],
                vec![passed("smoke.json"), denied("full.xml failed (detail)")],
                false,
            ),
            (
                "a failure that names no wheels denies everything",
                vec![pass_both.clone(), report("junit.xml", Outcome::Failed, &[])],
                vec![],
                vec![
                    denied("junit.xml failed (detail)"),
                    denied("junit.xml failed (detail)"),
                ],
                false,
            ),
            (
                "tested bytes differ from the staged ones",
                vec![report(
                    "smoke.json",
                    Outcome::Passed,
                    &[(TORCH, 'c'), (AUDIO, 'b')],
                )],
                vec![],
                vec![
                    denied(
                        "smoke.json tested another build of this file (sha256 cccccccccccc…, staged aaaaaaaaaaaa…)",
                    ),
                    passed("smoke.json"),
                ],
                false,
            ),
            (
                "a run with no tests is no evidence",
                vec![report(
                    "junit.xml",
                    Outcome::Empty,
                    &[(TORCH, 'a'), (AUDIO, 'b')],
                )],
                vec![],
                vec![
                    denied("junit.xml ran no tests (detail)"),
                    denied("junit.xml ran no tests (detail)"),
                ],
                false,
            ),
            (
                "waiver covers the untested wheel",
                vec![pass_torch.clone()],
                waivers("2026-12-31"),
                vec![
                    passed("smoke.json"),
                    Verdict::Waived {
                        number: 1,
                        waived: vec!["no test report covers it".into()],
                    },
                ],
                true,
            ),
            (
                "expired waiver does not count",
                vec![pass_torch.clone()],
                waivers("2026-11-21"),
                vec![passed("smoke.json"), denied("no test report covers it")],
                false,
            ),
            (
                "waiver on its last day still counts",
                vec![pass_torch],
                waivers("2026-11-22"),
                vec![
                    passed("smoke.json"),
                    Verdict::Waived {
                        number: 1,
                        waived: vec!["no test report covers it".into()],
                    },
                ],
                true,
            ),
        ];
        for (name, evidence, waivers, expected, allowed) in cases {
            let decision = decide(&set(), &evidence, &waivers, today());
            assert_eq!(
                verdicts(&decision),
                expected.iter().collect::<Vec<_>>(),
                "{name}"
            );
            assert_eq!(decision.allowed(), allowed, "{name}");
        }
    }

    #[test]
    fn expired_waivers_and_notes_are_reported() {
        let decision = decide(
            &set(),
            &[report("junit.xml", Outcome::Passed, &[])],
            &waivers("2026-01-01"),
            today(),
        );
        assert_eq!(decision.expired, vec![1]);
        assert!(decision.waivers_used().is_empty());
        assert_eq!(
            decision.notes,
            vec!["junit.xml names no wheels (detail); it counts for none".to_string()]
        );
        assert!(
            !decide(&[], &[], &[], today()).allowed(),
            "an empty set is never promoted"
        );
    }
}
