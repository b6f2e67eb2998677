//! Rewriting the version of wheels for promotion (`promote --rewrite-version rc|final`,
//! reference F53) without touching their content: unchanged entries are raw-copied (their
//! compressed bytes, CRC and sizes as they are — no inflate, no deflate; see `zipwrite` for
//! why not zip's `raw_copy_file`); METADATA, the `.dist-info` and `.data` directory names,
//! the version files and RECORD are regenerated.
//!
//! # Version rules (PEP 440)
//!
//! A version with a local label keeps its *public* version and its label moves with the SDK
//! it names (the reference's rule: `2.10.0a0+rocm7.13.0a20260430` → `2.10.0a0+rocm7.13.0rc1`);
//! a version without one (the SDK's own) moves its public version along
//! `.devN`/`aN`/`bN` → `rcN` → final, and so does a labelled one with
//! [`PublicVersion::Promote`] (`--rewrite-public-version`), keeping its label otherwise intact:
//!
//! | from | `rc` (`rcN`, default rc1) | `final` |
//! |---|---|---|
//! | `2.10.0a20260430+rocm7.13.0a20260430` (public moved on request) | `2.10.0rc1+rocm7.13.0a20260430` | `2.10.0+rocm7.13.0a20260430` |
//! | `2.10.0.dev20260430`, `2.10.0b2` | `2.10.0rc1` | `2.10.0` |
//! | `2.10.0rc1` | `2.10.0rcN` for N > 1 only | `2.10.0` |
//! | `2.10.0rc2.dev3` | `2.10.0rcN` for N ≥ 2 | `2.10.0` |
//!
//! Refused, with the reason: post-releases (`2.10.0.post1`: the next release is a new build,
//! not a promotion), a release candidate to a lower or equal candidate number, and anything
//! that would not change (a final public version whose local label names no promoted SDK).
//! Epoch and release numbers never change, so every promotion sorts strictly higher.
//!
//! The one exception to "local label intact" fixes W7 without its regex: when the version map
//! also promotes the ROCm SDK (TheRock's `promote_packages.py` promotes the ROCm packages and
//! torch together), a local label that names that SDK build as a whole dot-separated run
//! (`rocm7.13.0a20260430`, also inside `git1a2b3c4d.rocm7.13.0a20260430`) names the promoted
//! SDK instead (`rocm7.13.0rc1`, `rocm7.13.0`), because every pin on a part of the SDK
//! (`rocm[libraries]==`, `rocm-sdk-core==`, …) changes with it, and so do version literals
//! equal to its version (torch's `_rocm_init.py` check). Nothing else in the label is touched.
//! A final public version whose label changes this way (`2.10.0+rocm7.13.0a20260430` →
//! `2.10.0+rocm7.13.0`, the reference's example) is a valid promotion. The SDK's own wheels
//! are companions (`crate::wheel::companion`): never in the map's set, never rewritten.
//!
//! `Requires-Dist` pins between members of the map follow the map (`triton==OLD` →
//! `triton==NEW`); a pin to a version the map does not promote from is refused, since the
//! promoted set would no longer install together.
//!
//! The parts: [`version`] computes the promoted versions (pure), [`wheel`] rewrites one wheel
//! (METADATA, version files, RECORD; every other entry copied raw).

mod version;
pub(crate) mod wheel;

use std::fmt;
use std::path::{Path, PathBuf};

pub use version::{VersionMap, label_names_sdk, promoted_version};
pub use wheel::{Rewritten, rewrite_set, rewrite_version};

/// What a promotion does to the pre-release public version of a wheel with a local label.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PublicVersion {
    /// The reference's rule (`promote_packages.py`): a version with a local label keeps its
    /// public version and only the label moves (`2.10.0a0+rocm7.13.0a20260430` →
    /// `2.10.0a0+rocm7.13.0rc1`); one without a label (the SDK's own) moves its public version.
    #[default]
    Keep,
    /// `promote --rewrite-public-version`: the public version moves too (`2.10.0a0` →
    /// `2.10.0rc1`).
    Promote,
}

/// Where a promotion takes a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Promotion {
    /// Release candidate N (`rc` alone means rc1).
    ReleaseCandidate(u64),
    Final,
}

impl fmt::Display for Promotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Promotion::ReleaseCandidate(n) => write!(f, "rc{n}"),
            Promotion::Final => f.write_str("final"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RewriteError {
    #[error("{name} {version} cannot be promoted to {to}: {reason}")]
    NotPromotable {
        name: String,
        version: String,
        to: Promotion,
        reason: String,
    },
    #[error("{0}")]
    Refused(String),
    #[error("{}: {detail}", wheel.display())]
    Wheel { wheel: PathBuf, detail: String },
    #[error("the set cannot be promoted:\n  {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Several(Vec<RewriteError>),
}

impl RewriteError {
    /// True when a wheel could not be read or rewritten (a failure), rather than the
    /// promotion being refused for the versions it would make (a usage error).
    pub fn is_wheel_failure(&self) -> bool {
        match self {
            RewriteError::Wheel { .. } => true,
            RewriteError::Several(errors) => errors.iter().any(RewriteError::is_wheel_failure),
            RewriteError::NotPromotable { .. } | RewriteError::Refused(_) => false,
        }
    }

    /// The same error with every wheel named by `name` where it gives one: a caller that
    /// rewrote temporary copies reports the wheels the user knows (their store keys).
    pub fn rename_wheels(self, name: &impl Fn(&Path) -> Option<PathBuf>) -> RewriteError {
        match self {
            RewriteError::Wheel { wheel, detail } => RewriteError::Wheel {
                wheel: name(&wheel).unwrap_or(wheel),
                detail,
            },
            RewriteError::Several(errors) => {
                RewriteError::Several(errors.into_iter().map(|e| e.rename_wheels(name)).collect())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_failures_anywhere_are_failures_and_are_renamed() {
        let wheel = |path: &str| RewriteError::Wheel {
            wheel: PathBuf::from(path),
            detail: "truncated zip".into(),
        };
        let refused = RewriteError::Refused("no".into());
        assert!(wheel("/tmp/a.whl").is_wheel_failure());
        assert!(!refused.is_wheel_failure());
        let several =
            RewriteError::Several(vec![refused, wheel("/tmp/a.whl"), wheel("/tmp/b.whl")]);
        assert!(several.is_wheel_failure());
        assert!(
            !RewriteError::Several(vec![RewriteError::Refused("no".into())]).is_wheel_failure()
        );
        let renamed = several.rename_wheels(&|path: &Path| {
            (path == Path::new("/tmp/a.whl")).then(|| PathBuf::from("s3://wheels/staged/a/a.whl"))
        });
        assert_eq!(
            renamed.to_string(),
            "the set cannot be promoted:\n  no\n  s3://wheels/staged/a/a.whl: truncated zip\n  /tmp/b.whl: truncated zip"
        );
    }
}
