//! Which wheels of a tested set `promote --rewrite-version` rewrites, and which it promotes as
//! they are. A pure decision: the rewriting itself is `wheel::rewrite`.
//!
//! A set mixes release lines: torch and its domain libraries are nightlies or candidates
//! (`2.10.0a0+rocm…`), while triton carries a final public version with a git label
//! (`3.5.0+git1a2b3c4d`). Promotion moves the pre-releases along; a wheel whose public
//! version is already final has nothing to move and goes as it is (its bytes are the tested
//! ones). Pins on it stay valid, since its version does not change. When the promotion moves
//! the ROCm SDK too, a final wheel whose local label names that SDK build
//! (`2.9.0+rocm7.10.0a20251124`) is rewritten as well: its label follows the SDK.

use std::fmt::Write as _;
use std::path::Path;

use pep440_rs::Version;
use serde::Serialize;

use super::StagedFile;
use crate::ui::plural;
use crate::wheel::filename::WheelFilename;
use crate::wheel::rewrite::{Promotion, PublicVersion, Rewritten, label_names_sdk};

/// The set split for a version rewrite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RewritePlan {
    /// Pre-release and dev builds: rewritten, then uploaded under their new names.
    pub rewrite: Vec<StagedFile>,
    /// Already final: copied as they are.
    pub keep: Vec<StagedFile>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SplitError {
    #[error(
        "'{0}' is not a wheel; --rewrite-version rewrites wheels only (promote source distributions without it)"
    )]
    NotAWheel(String),
    #[error(
        "nothing to rewrite: no wheel of the set changes version ({0}): a final public version is never moved, a pre-release with a local label keeps its public version unless --rewrite-public-version is given, and a label moves only with the ROCm SDK build it names; promote without --rewrite-version, or with --rewrite-public-version"
    )]
    NothingToRewrite(String),
}

/// Splits the set (its products): wheels whose label names the ROCm SDK build `sdk` the
/// promotion moves are rewritten, and so are those with a pre-release or dev public version
/// that moves (no local label, or `public` says so); the others are kept.
pub fn split(
    set: &[StagedFile],
    sdk: Option<&Version>,
    public: PublicVersion,
) -> Result<RewritePlan, SplitError> {
    let mut plan = RewritePlan {
        rewrite: Vec::new(),
        keep: Vec::new(),
    };
    for staged in set {
        let wheel = WheelFilename::parse(&staged.filename)
            .map_err(|_| SplitError::NotAWheel(staged.filename.clone()))?;
        let follows_sdk = sdk.is_some_and(|sdk| label_names_sdk(&wheel.version, sdk));
        let public_moves = !is_final(&wheel.version)
            && (wheel.version.local().is_empty() || public == PublicVersion::Promote);
        if !public_moves && !follows_sdk {
            plan.keep.push(staged.clone());
        } else {
            plan.rewrite.push(staged.clone());
        }
    }
    if plan.rewrite.is_empty() {
        let versions: Vec<String> = plan
            .keep
            .iter()
            .map(|s| format!("{} {}", s.project, s.version))
            .collect();
        return Err(SplitError::NothingToRewrite(versions.join(", ")));
    }
    Ok(plan)
}

/// A final public version: no alpha, beta, candidate or dev part (post-releases are final).
pub fn is_final(version: &Version) -> bool {
    version.is_stable()
}

/// What a rewrite did (or, on `--dry-run`, would do), wheel by wheel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RewriteSummary {
    /// The kind of version the wheels were promoted to (`rc1`, `final`).
    pub to: String,
    pub rewritten: Vec<RewrittenWheel>,
    /// Wheels that go as they are (already final).
    pub keep: Vec<KeptWheel>,
    /// The ROCm SDK the promotion moves with the set, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdk: Option<SdkMove>,
}

/// The ROCm SDK moved by a promotion: labels and pins follow it; its own wheels are never
/// rewritten, the promoted release's are carried from its index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SdkMove {
    pub from: String,
    pub to: String,
    /// The index the promoted SDK's wheels come from (none when the set carries none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// The files of the promoted SDK the promoted set carries.
    pub carried: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RewrittenWheel {
    pub from: String,
    pub to: String,
    /// `Requires-Dist` lines changed: (before, after).
    pub requirements: Vec<(String, String)>,
    /// Files whose version literals were updated.
    pub version_files: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeptWheel {
    pub file: String,
    pub version: String,
}

/// The summary of a rewrite: old name → new name, the pins and version files it changed;
/// the wheels that go as they are; the SDK it moves.
pub fn summary(
    rewritten: &[Rewritten],
    keep: &[StagedFile],
    promotion: Promotion,
    sdk: Option<SdkMove>,
) -> RewriteSummary {
    let file_name = |path: &Path| {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    RewriteSummary {
        to: promotion.to_string(),
        rewritten: rewritten
            .iter()
            .map(|wheel| RewrittenWheel {
                from: file_name(&wheel.source),
                to: file_name(&wheel.path),
                requirements: wheel.requirements.clone(),
                version_files: wheel.version_files.clone(),
            })
            .collect(),
        keep: keep
            .iter()
            .map(|staged| KeptWheel {
                file: staged.filename.clone(),
                version: staged.version.clone(),
            })
            .collect(),
        sdk,
    }
}

impl RewriteSummary {
    /// The summary as people read it: `would rewrite` on a dry run, `rewrote` after.
    pub fn describe(&self, dry_run: bool) -> String {
        let mut out = format!(
            "{} {} wheel{} to {}:\n",
            if dry_run { "would rewrite" } else { "rewrote" },
            self.rewritten.len(),
            plural(self.rewritten.len()),
            self.to
        );
        for wheel in &self.rewritten {
            let _ = writeln!(out, "  rewrite {} -> {}", wheel.from, wheel.to);
            for (before, after) in &wheel.requirements {
                let _ = writeln!(out, "    Requires-Dist: {before} -> {after}");
            }
            for file in &wheel.version_files {
                let _ = writeln!(out, "    version in {file}");
            }
        }
        for kept in &self.keep {
            let _ = writeln!(
                out,
                "  keep {} (version {} is already final)",
                kept.file, kept.version
            );
        }
        if let Some(sdk) = &self.sdk {
            let _ = writeln!(
                out,
                "  the ROCm SDK {} -> {}: labels and pins follow it; its wheels are never rewritten",
                sdk.from, sdk.to
            );
            for file in &sdk.carried {
                let _ = writeln!(
                    out,
                    "    carry {file} from {}",
                    sdk.index.as_deref().unwrap_or("its index")
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::publish::SetObject;

    fn staged(project: &str, filename: &str) -> StagedFile {
        StagedFile {
            project: project.into(),
            version: WheelFilename::parse(filename)
                .map(|w| w.version.to_string())
                .unwrap_or_default(),
            filename: filename.into(),
            file: SetObject {
                key: format!("{project}/{filename}"),
                size: 1,
                sha256: "a".repeat(64),
            },
            sidecar: None,
        }
    }

    #[test]
    fn the_description_says_whether_the_rewrite_happened() {
        let version = |v: &str| v.parse::<Version>().expect("version");
        let rewritten = Rewritten {
            source: "/tmp/tested/torch-2.10.0a0-cp311-cp311-linux_x86_64.whl".into(),
            path: "/tmp/rewritten/torch-2.10.0rc1-cp311-cp311-linux_x86_64.whl".into(),
            old_version: version("2.10.0a0"),
            new_version: version("2.10.0rc1"),
            requirements: vec![("rocm==7.13.0a1".into(), "rocm==7.13.0rc1".into())],
            version_files: vec!["torch/version.py".into()],
            raw_copied: 0,
        };
        let triton = staged("triton", "triton-3.5.0-cp311-cp311-linux_x86_64.whl");
        let rewritten = std::slice::from_ref(&rewritten);
        let keep = std::slice::from_ref(&triton);
        let body = "  rewrite torch-2.10.0a0-cp311-cp311-linux_x86_64.whl -> torch-2.10.0rc1-cp311-cp311-linux_x86_64.whl\n    \
                    Requires-Dist: rocm==7.13.0a1 -> rocm==7.13.0rc1\n    version in torch/version.py\n  \
                    keep triton-3.5.0-cp311-cp311-linux_x86_64.whl (version 3.5.0 is already final)\n";
        let rc = Promotion::ReleaseCandidate(1);
        let summary = summary(rewritten, keep, rc, None);
        assert_eq!(
            summary.describe(true),
            format!("would rewrite 1 wheel to {rc}:\n{body}")
        );
        assert_eq!(
            summary.describe(false),
            format!("rewrote 1 wheel to {rc}:\n{body}")
        );
    }

    #[test]
    fn pre_releases_are_rewritten_and_final_versions_kept() {
        let torch = staged(
            "torch",
            "torch-2.10.0a0+rocm7.13.0-cp311-cp311-linux_x86_64.whl",
        );
        let vision = staged(
            "torchvision",
            "torchvision-0.25.0.dev20260430-cp311-cp311-linux_x86_64.whl",
        );
        let candidate = staged("apex", "apex-1.9.0rc2-cp311-cp311-linux_x86_64.whl");
        let triton = staged(
            "triton",
            "triton-3.5.0+git1a2b3c4d-cp311-cp311-linux_x86_64.whl",
        );
        let post = staged(
            "audio",
            "torchaudio-2.9.0.post1-cp311-cp311-linux_x86_64.whl",
        );
        let all = [
            torch.clone(),
            triton.clone(),
            vision.clone(),
            candidate.clone(),
            post.clone(),
        ];
        let plan = split(&all, None, PublicVersion::Promote).expect("split");
        assert_eq!(
            plan.rewrite,
            vec![torch.clone(), vision.clone(), candidate.clone()]
        );
        assert_eq!(plan.keep, vec![triton.clone(), post.clone()]);
        // The reference's rule: a labelled pre-release keeps its public version, and with no
        // SDK moving its label neither, it goes as it is.
        let plan = split(&all, None, PublicVersion::Keep).expect("split");
        assert_eq!(plan.rewrite, vec![vision, candidate]);
        assert_eq!(plan.keep, vec![torch.clone(), triton.clone(), post]);
        let sdk: Version = "7.13.0".parse().expect("version");
        let plan = split(
            std::slice::from_ref(&torch),
            Some(&sdk),
            PublicVersion::Keep,
        )
        .expect("split");
        assert_eq!(plan.rewrite, vec![torch]);

        assert_eq!(
            split(std::slice::from_ref(&triton), None, PublicVersion::Keep)
                .expect_err("nothing")
                .to_string(),
            "nothing to rewrite: no wheel of the set changes version (triton 3.5.0+git1a2b3c4d): a final public version is never moved, a pre-release with a local label keeps its public version unless --rewrite-public-version is given, and a label moves only with the ROCm SDK build it names; promote without --rewrite-version, or with --rewrite-public-version"
        );
        let sdist = staged("demo", "demo-1.0a1.tar.gz");
        assert_eq!(
            split(&[sdist], None, PublicVersion::Keep).expect_err("sdist"),
            SplitError::NotAWheel("demo-1.0a1.tar.gz".into())
        );
    }

    #[test]
    fn final_wheels_built_on_a_promoted_sdk_follow_it() {
        let torch = staged(
            "torch",
            "torch-2.9.0+rocm7.10.0a20251124-cp311-cp311-linux_x86_64.whl",
        );
        let triton = staged(
            "triton",
            "triton-3.4.0+git8518ca6a.rocm7.10.0a20251124-cp311-cp311-linux_x86_64.whl",
        );
        let other = staged(
            "apex",
            "apex-1.9.0+rocm7.10.0a2025112-cp311-cp311-linux_x86_64.whl",
        );
        let sdk: Version = "7.10.0a20251124".parse().expect("version");
        let plan = split(
            &[torch.clone(), triton.clone(), other.clone()],
            Some(&sdk),
            PublicVersion::Keep,
        )
        .expect("split");
        assert_eq!(plan.rewrite, vec![torch.clone(), triton]);
        assert_eq!(plan.keep, vec![other]);
        assert!(
            split(&[torch], None, PublicVersion::Keep).is_err(),
            "without the SDK: nothing to rewrite"
        );
    }
}
