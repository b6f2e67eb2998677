//! The companions of a staged set in a promotion: the ROCm SDK wheels it carries
//! (`crate::wheel::companion`). They are never judged on tests and never rewritten; each is
//! promoted when it is byte for byte (SHA-256) the file its index publishes.
//!
//! With `--rewrite-version` the SDK is promoted with the products, as TheRock's
//! `promote_packages.py` promotes the ROCm packages and torch together (`7.13.0a20260501` →
//! `7.13.0rc1` → `7.13.0`): the products' labels and pins follow the SDK's promoted
//! version. rockbuild does not rewrite the SDK's own wheels — two different files named
//! `rocm_sdk_core-7.13.0rc1-…` would then exist, its and the SDK's own. The promoted set
//! carries the promoted SDK's files as the index that publishes that SDK release has them
//! (`--index-url`); the staged SDK files are replaced.

use std::path::Path;

use pep440_rs::Version;

use super::StagedFile;
use super::policy::{Verdict, WheelDecision};
use crate::index::client::IndexClient;
use crate::verify::companions::IndexPages;
use crate::wheel::rewrite::{Promotion, promoted_version};

/// The SDK release a promotion moves to: `promotion` applied to the SDK version `staged`
/// by the products' rule, when it moves it (an SDK already at or past the target stays).
pub fn promoted_sdk(staged: &Version, promotion: Promotion) -> Option<Version> {
    // The SDK's versions have no local label: their public version moves either way.
    promoted_version(
        crate::wheel::companion::SDK_META_PACKAGE,
        staged,
        promotion,
        crate::wheel::rewrite::PublicVersion::Keep,
        None,
    )
    .ok()
    .filter(|promoted| promoted != staged)
}

/// The verdict on each staged companion. `staged_sdk` is the SDK the set was built on, when
/// known; `promoted_to`, the SDK release the promotion moves it to (then the companions are
/// replaced by that release's, from `new_index`); otherwise each is checked against `index`.
pub fn judge(
    companions: &[StagedFile],
    staged_sdk: Option<&Version>,
    promoted_to: Option<&Version>,
    index: Option<&IndexClient>,
    new_index: Option<&str>,
    scratch: &Path,
) -> Vec<WheelDecision> {
    let mut pages = IndexPages::new(index);
    companions
        .iter()
        .map(|staged| {
            let version: Option<Version> = staged.version.parse().ok();
            let verdict = match (staged_sdk, promoted_to) {
                (Some(sdk), _) if version.as_ref() != Some(sdk) => Verdict::Denied {
                    reasons: vec![format!(
                        "{} {} is not the ROCm SDK the set was built on ({sdk})",
                        staged.project, staged.version
                    )],
                },
                (_, Some(promoted)) => Verdict::Replaced {
                    by: format!(
                        "the promoted set carries the SDK's {promoted} from {}",
                        new_index
                            .map_or_else(|| "its index".to_string(), crate::redact::redact_url)
                    ),
                },
                _ => match pages.provenance(
                    &staged.project,
                    &staged.filename,
                    &staged.file.sha256,
                    scratch,
                ) {
                    Ok(source) => Verdict::Carried { source },
                    Err(problem) => Verdict::Denied {
                        reasons: vec![problem.to_string()],
                    },
                },
            };
            WheelDecision {
                filename: staged.filename.clone(),
                sha256: staged.file.sha256.clone(),
                verdict,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::SetObject;

    fn v(text: &str) -> Version {
        text.parse().expect("version")
    }

    #[test]
    fn the_sdk_moves_by_the_products_rule_and_stays_when_already_there() {
        let rc = Promotion::ReleaseCandidate(1);
        let cases = [
            ("7.10.0a20251124", rc, Some("7.10.0rc1")),
            ("7.10.0a20251124", Promotion::Final, Some("7.10.0")),
            ("7.10.0rc1", Promotion::Final, Some("7.10.0")),
            ("7.10.0rc2", rc, None),
            ("7.10.0", Promotion::Final, None),
            ("7.10.0", rc, None),
        ];
        for (staged, promotion, expected) in cases {
            assert_eq!(
                promoted_sdk(&v(staged), promotion).map(|p| p.to_string()),
                expected.map(String::from),
                "{staged} → {promotion}"
            );
        }
    }

    #[test]
    fn companions_of_another_sdk_are_denied_and_moved_ones_replaced() {
        let staged = |file: &str, version: &str| StagedFile {
            project: "rocm-sdk-core".into(),
            version: version.into(),
            filename: file.into(),
            file: SetObject {
                key: format!("rocm-sdk-core/{file}"),
                size: 1,
                sha256: "a".repeat(64),
            },
            sidecar: None,
        };
        let set = [
            staged("rocm_sdk_core-7.9.0-py3-none-linux_x86_64.whl", "7.9.0"),
            staged(
                "rocm_sdk_core-7.10.0a1-py3-none-linux_x86_64.whl",
                "7.10.0a1",
            ),
        ];
        let scratch = tempfile::tempdir().expect("tempdir");
        let verdicts = judge(
            &set,
            Some(&v("7.10.0a1")),
            Some(&v("7.10.0rc1")),
            None,
            Some("https://user:secret@sdk.example/rc/"),
            scratch.path(),
        );
        assert_eq!(
            verdicts[0].verdict,
            Verdict::Denied {
                reasons: vec![
                    "rocm-sdk-core 7.9.0 is not the ROCm SDK the set was built on (7.10.0a1)"
                        .into()
                ]
            }
        );
        assert_eq!(
            verdicts[1].verdict,
            Verdict::Replaced {
                by:
                    "the promoted set carries the SDK's 7.10.0rc1 from https://****@sdk.example/rc/"
                        .into()
            }
        );
        // Not moved, and no index to check against: denied, saying what to give.
        let unchecked = judge(&set[1..], None, None, None, None, scratch.path());
        let Verdict::Denied { reasons } = &unchecked[0].verdict else {
            panic!("{unchecked:?}");
        };
        assert!(reasons[0].contains("no index was given"), "{reasons:?}");
    }
}
