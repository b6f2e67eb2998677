//! The promoted version of each wheel of a set (see the module documentation of
//! `wheel::rewrite` for the rules): a pure function of the versions and the promotion.

use std::collections::BTreeMap;
use std::str::FromStr;

use pep440_rs::{Prerelease, PrereleaseKind, Version};

use super::{Promotion, PublicVersion, RewriteError};
use crate::wheel::companion::{SDK_META_PACKAGE, is_sdk_distribution};
use crate::wheel::filename::{WheelFilename, normalize_name};

/// Old → new version per normalized project name, and the ROCm SDK's when it is promoted
/// with the set (then every pin on a part of the SDK follows it: `rocm[libraries]==`,
/// `rocm-sdk-core==`, …).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionMap {
    wheels: BTreeMap<String, (Version, Version)>,
    sdk: Option<(Version, Version)>,
}

impl VersionMap {
    pub fn insert(&mut self, name: &str, old: Version, new: Version) {
        self.wheels.insert(normalize_name(name), (old, new));
    }

    /// The SDK's promotion: pins on any of its distributions follow it.
    pub fn set_sdk(&mut self, old: Version, new: Version) {
        self.sdk = Some((old, new));
    }

    pub fn get(&self, name: &str) -> Option<&(Version, Version)> {
        self.wheels
            .get(&normalize_name(name))
            .or_else(|| self.sdk.as_ref().filter(|_| is_sdk_distribution(name)))
    }

    /// Every promotion of the map (the SDK's as `rocm`).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &(Version, Version))> {
        self.wheels
            .iter()
            .map(|(name, versions)| (name.as_str(), versions))
            .chain(self.sdk.iter().map(|versions| (SDK_META_PACKAGE, versions)))
    }

    /// New versions for every wheel of a set (products: the SDK's wheels are companions,
    /// never rewritten). `sdk` carries the ROCm SDK's promotion when the SDK is promoted
    /// with the set: labels naming that SDK build follow it, and so do pins on it. Every
    /// refusal is collected before failing.
    pub fn for_set(
        wheels: &[WheelFilename],
        to: Promotion,
        public: PublicVersion,
        sdk: Option<(Version, Version)>,
    ) -> Result<VersionMap, RewriteError> {
        let mut map = VersionMap::default();
        let mut seen: BTreeMap<String, Version> = BTreeMap::new();
        let mut refusals = Vec::new();
        for wheel in wheels {
            let name = wheel.normalized_name();
            if let Some(other) = seen.get(&name) {
                if *other != wheel.version {
                    refusals.push(RewriteError::Refused(format!(
                        "the set holds {name} {other} and {name} {}: promote one version of each project",
                        wheel.version
                    )));
                }
                continue;
            }
            seen.insert(name.clone(), wheel.version.clone());
            match promoted_version(&name, &wheel.version, to, public, sdk.as_ref()) {
                Ok(new) => map.insert(&name, wheel.version.clone(), new),
                Err(error) => refusals.push(error),
            }
        }
        if let Some((old, new)) = sdk {
            map.set_sdk(old, new);
        }
        match refusals.len() {
            0 => Ok(map),
            1 => Err(refusals.remove(0)),
            _ => Err(RewriteError::Several(refusals)),
        }
    }
}

/// Whether `version`'s local label names SDK build `sdk` as a whole dot-separated run
/// (`rocm7.13.0a20260430`, also in `git1a2b3c4d.rocm7.13.0a20260430`): the wheel was built
/// on that SDK, and a promotion of the SDK renames it.
pub fn label_names_sdk(version: &Version, sdk: &Version) -> bool {
    let text = version.to_string();
    let Some((_, label)) = text.split_once('+') else {
        return false;
    };
    let needle = format!("rocm{sdk}");
    label
        .split('.')
        .collect::<Vec<_>>()
        .windows(needle.split('.').count())
        .any(|run| run.join(".") == needle)
}

/// The promoted version of `version` (see the module documentation for the rules).
/// `sdk` is the ROCm SDK's (old, new) version when the SDK is promoted as well.
pub fn promoted_version(
    name: &str,
    version: &Version,
    to: Promotion,
    public: PublicVersion,
    sdk: Option<&(Version, Version)>,
) -> Result<Version, RewriteError> {
    let refuse = |reason: String| RewriteError::NotPromotable {
        name: name.to_string(),
        version: version.to_string(),
        to,
        reason,
    };
    let labelled = !version.local().is_empty();
    let pre = version.is_pre() || version.is_dev();
    // The reference moves the public version of a version without a local label only (the
    // SDK's own); one with a label keeps it unless asked.
    let moves_public = !labelled || public == PublicVersion::Promote;
    if moves_public && version.is_post() {
        return Err(refuse(
            "it is a post-release; publish a new build instead of promoting one".into(),
        ));
    }
    let mut new = version.clone();
    if pre && moves_public {
        new = new.with_dev(None).with_post(None);
        new = match to {
            Promotion::Final => new.with_pre(None),
            Promotion::ReleaseCandidate(number) => {
                if let Some(Prerelease {
                    kind: PrereleaseKind::Rc,
                    number: current,
                }) = version.pre()
                {
                    // rcM.devK comes before rcM; a plain rcM only moves to a later candidate.
                    let lowest = if version.is_dev() {
                        current
                    } else {
                        current + 1
                    };
                    if number < lowest {
                        return Err(refuse(format!(
                            "rc{number} does not sort above rc{current}{}; use rc{lowest} or later",
                            if version.is_dev() { ".dev" } else { "" }
                        )));
                    }
                }
                new.with_pre(Some(Prerelease {
                    kind: PrereleaseKind::Rc,
                    number,
                }))
            }
        };
    }
    if let Some(sdk) = sdk {
        new = with_sdk_label(&new, sdk).map_err(|e| refuse(e.to_string()))?;
    }
    if new == *version {
        let kept = if pre {
            "it has a local label, so its public version is kept (the reference's rule; --rewrite-public-version moves it too)"
        } else {
            "its public version is already final"
        };
        return Err(refuse(if sdk.is_some() {
            format!("{kept} and its local label does not name the promoted ROCm SDK build")
        } else {
            format!("{kept} and the local label is never rewritten on its own")
        }));
    }
    Ok(new)
}

/// A local label that names the promoted SDK but is no valid PEP 440 label.
#[derive(Debug, thiserror::Error)]
#[error("the local label with the promoted SDK, '{label}', is not valid PEP 440: {error}")]
struct InvalidLabel {
    label: String,
    error: pep440_rs::VersionParseError,
}

/// Replaces a whole `rocm<old SDK version>` run of the local label by `rocm<new>`.
fn with_sdk_label(
    version: &Version,
    (old, new): &(Version, Version),
) -> Result<Version, InvalidLabel> {
    if version.local().is_empty() {
        return Ok(version.clone());
    }
    let text = version.to_string();
    let Some((public, label)) = text.split_once('+') else {
        return Ok(version.clone());
    };
    let needle = format!("rocm{old}");
    let mut out = String::new();
    let mut rest = label;
    let mut changed = false;
    while let Some(at) = rest.find(&needle) {
        let end = at + needle.len();
        let starts_run = at == 0 || rest.as_bytes()[at - 1] == b'.';
        let ends_run = end == rest.len() || rest.as_bytes()[end] == b'.';
        out.push_str(&rest[..at]);
        if starts_run && ends_run {
            out.push_str(&format!("rocm{new}"));
            changed = true;
        } else {
            out.push_str(&needle);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    if !changed {
        return Ok(version.clone());
    }
    Version::from_str(&format!("{public}+{out}"))
        .map_err(|error| InvalidLabel { label: out, error })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::from_str(text).expect("version")
    }

    /// `rc`, `rcN` or `final`.
    fn promotion(text: &str) -> Promotion {
        match text {
            "final" => Promotion::Final,
            "rc" => Promotion::ReleaseCandidate(1),
            other => Promotion::ReleaseCandidate(
                other
                    .strip_prefix("rc")
                    .and_then(|n| n.parse().ok())
                    .expect("rcN"),
            ),
        }
    }

    /// On request (`--rewrite-public-version`), as an unlabelled version always is.
    fn promote(text: &str, to: &str) -> Result<Version, RewriteError> {
        promoted_version(
            "torch",
            &v(text),
            promotion(to),
            PublicVersion::Promote,
            None,
        )
    }

    /// The reference's rule (promote_packages.py: a version with a local label keeps its
    /// public version, its label is rewritten; one without moves its public version): the
    /// issue's example, a dev build's label, and the SDK's own versions.
    #[test]
    fn a_labelled_version_keeps_its_public_version_unless_asked() {
        let rc = (v("7.13.0a20260430"), v("7.13.0rc1"));
        let keep = |text: &str, to: Promotion, sdk: Option<&(Version, Version)>| {
            promoted_version("torch", &v(text), to, PublicVersion::Keep, sdk)
                .map(|new| new.to_string())
        };
        let cases = [
            (
                "2.10.0a0+rocm7.13.0a20260430",
                Promotion::ReleaseCandidate(1),
                "2.10.0a0+rocm7.13.0rc1",
            ),
            (
                "2.10.0a0+git1a2b3c4d.rocm7.13.0a20260430",
                Promotion::ReleaseCandidate(1),
                "2.10.0a0+git1a2b3c4d.rocm7.13.0rc1",
            ),
            // The SDK's own version has no label: its public version moves.
            (
                "7.13.0a20260430",
                Promotion::ReleaseCandidate(1),
                "7.13.0rc1",
            ),
        ];
        for (from, to, expected) in cases {
            assert_eq!(keep(from, to, Some(&rc)).expect(from), expected, "{from}");
        }
        let asked = promoted_version(
            "torch",
            &v("2.10.0a0+rocm7.13.0a20260430"),
            Promotion::ReleaseCandidate(1),
            PublicVersion::Promote,
            Some(&rc),
        )
        .expect("promoted");
        assert_eq!(asked.to_string(), "2.10.0rc1+rocm7.13.0rc1");
        // Nothing moves the label without the SDK: refused, saying how to move the public part.
        let error = keep(
            "2.10.0a0+rocm7.13.0a20260430",
            Promotion::ReleaseCandidate(1),
            None,
        )
        .expect_err("nothing changes");
        assert_eq!(
            error.to_string(),
            "torch 2.10.0a0+rocm7.13.0a20260430 cannot be promoted to rc1: it has a local label, so its public version is kept (the reference's rule; --rewrite-public-version moves it too) and the local label is never rewritten on its own"
        );
    }

    #[test]
    fn promotes_the_public_version_and_keeps_the_label() {
        let table = [
            (
                "2.10.0a20260430+rocm7.13.0a20260430",
                "rc",
                "2.10.0rc1+rocm7.13.0a20260430",
            ),
            (
                "2.10.0a20260430+rocm7.13.0a20260430",
                "final",
                "2.10.0+rocm7.13.0a20260430",
            ),
            (
                "2.10.0a0+git1a2b3c4d.rocm7.13.0a20260501",
                "rc2",
                "2.10.0rc2+git1a2b3c4d.rocm7.13.0a20260501",
            ),
            ("2.10.0.dev20260430", "rc", "2.10.0rc1"),
            ("2.10.0b2", "final", "2.10.0"),
            ("2.10.0rc1", "rc2", "2.10.0rc2"),
            ("2.10.0rc1", "final", "2.10.0"),
            ("2.10.0rc2.dev3", "rc2", "2.10.0rc2"),
            ("1!3.5.0a1", "final", "1!3.5.0"),
        ];
        for (from, to, expected) in table {
            let promoted = promote(from, to).unwrap_or_else(|e| panic!("{from} → {to}: {e}"));
            assert_eq!(promoted.to_string(), expected, "{from} → {to}");
        }
    }

    #[test]
    fn refuses_what_cannot_be_promoted() {
        let table = [
            ("2.10.0", "final", "already final"),
            ("2.10.0+rocm7.13.0a20260430", "rc", "already final"),
            ("2.10.0.post1", "final", "post-release"),
            ("2.10.0a1.post1", "rc", "post-release"),
            ("2.10.0rc2", "rc2", "rc2 does not sort above rc2; use rc3"),
            ("2.10.0rc2", "rc1", "rc1 does not sort above rc2"),
            (
                "2.10.0rc2.dev1",
                "rc1",
                "rc1 does not sort above rc2.dev; use rc2",
            ),
        ];
        for (from, to, expected) in table {
            let error = promote(from, to).expect_err(from).to_string();
            assert!(error.contains(expected), "{from} → {to}: {error}");
            assert!(
                error.starts_with(&format!("torch {} cannot be promoted to", v(from))),
                "{error}"
            );
        }
    }

    #[test]
    fn follows_a_promoted_sdk_in_the_label_only_as_a_whole_run() {
        let sdk = (v("7.13.0a20260501"), v("7.13.0"));
        let cases = [
            // W7: the reference turned this label into `git1b3c4d.rocm7.13.0`.
            (
                "2.10.0a0+git1a2b3c4d.rocm7.13.0a20260501",
                Promotion::ReleaseCandidate(1),
                "2.10.0rc1+git1a2b3c4d.rocm7.13.0",
            ),
            // F53's example: a final torch built on a nightly SDK follows the SDK's release.
            (
                "2.10.0+rocm7.13.0a20260501",
                Promotion::Final,
                "2.10.0+rocm7.13.0",
            ),
            // Another SDK build in the label is not the promoted one: left alone.
            (
                "2.10.0a0+rocm7.13.0a2026050",
                Promotion::Final,
                "2.10.0+rocm7.13.0a2026050",
            ),
        ];
        for (from, to, expected) in cases {
            let promoted =
                promoted_version("torch", &v(from), to, PublicVersion::Promote, Some(&sdk))
                    .expect(from);
            assert_eq!(promoted.to_string(), expected);
        }
        let error = promoted_version(
            "torch",
            &v("2.10.0+rocm7.12.0"),
            Promotion::Final,
            PublicVersion::Promote,
            Some(&sdk),
        )
        .expect_err("no change");
        assert!(
            error
                .to_string()
                .contains("does not name the promoted ROCm SDK build"),
            "{error}"
        );
    }

    #[test]
    fn maps_a_set_and_collects_every_refusal() {
        let names: Vec<WheelFilename> = [
            "torch-2.10.0a0+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl",
            "triton-3.5.0a0+git1a2b3c4d-cp311-cp311-linux_x86_64.whl",
        ]
        .iter()
        .map(|n| WheelFilename::parse(n).expect("name"))
        .collect();
        let map = VersionMap::for_set(&names, Promotion::Final, PublicVersion::Promote, None)
            .expect("maps");
        assert_eq!(
            map.get("triton").map(|(_, new)| new.to_string()).as_deref(),
            Some("3.5.0+git1a2b3c4d")
        );
        let finals: Vec<WheelFilename> = [
            "torch-2.10.0-cp311-cp311-linux_x86_64.whl",
            "triton-3.5.0.post1-cp311-cp311-linux_x86_64.whl",
        ]
        .iter()
        .map(|n| WheelFilename::parse(n).expect("name"))
        .collect();
        let error = VersionMap::for_set(&finals, Promotion::Final, PublicVersion::Keep, None)
            .expect_err("refused")
            .to_string();
        assert!(error.contains("torch 2.10.0 cannot be promoted"), "{error}");
        assert!(
            error.contains("triton 3.5.0.post1 cannot be promoted"),
            "{error}"
        );
    }

    #[test]
    fn every_pin_on_the_sdk_follows_a_promoted_sdk() {
        let names: Vec<WheelFilename> = [
            "torch-2.9.0+rocm7.10.0a20251124-cp311-cp311-linux_x86_64.whl",
            "triton-3.4.0+git8518ca6a.rocm7.10.0a20251124-cp311-cp311-linux_x86_64.whl",
        ]
        .iter()
        .map(|n| WheelFilename::parse(n).expect("name"))
        .collect();
        let sdk = (v("7.10.0a20251124"), v("7.10.0rc1"));
        let map = VersionMap::for_set(
            &names,
            Promotion::ReleaseCandidate(1),
            PublicVersion::Keep,
            Some(sdk.clone()),
        )
        .expect("maps");
        for name in ["rocm", "rocm-sdk-core", "rocm_sdk_libraries_gfx94X-dcgpu"] {
            assert_eq!(map.get(name), Some(&sdk), "{name}");
        }
        assert_eq!(map.get("numpy"), None);
        let new = |name: &str| map.get(name).map(|(_, new)| new.to_string());
        assert_eq!(new("torch").as_deref(), Some("2.9.0+rocm7.10.0rc1"));
        assert_eq!(
            new("triton").as_deref(),
            Some("3.4.0+git8518ca6a.rocm7.10.0rc1")
        );
        // The SDK's literal is among the replacements version files get.
        assert!(
            map.iter()
                .any(|(name, versions)| name == "rocm" && *versions == sdk)
        );
        assert!(label_names_sdk(
            &v("3.4.0+git8518ca6a.rocm7.10.0a20251124"),
            &sdk.0
        ));
        assert!(!label_names_sdk(
            &v("3.4.0+git8518ca6a.rocm7.10.0a2025112"),
            &sdk.0
        ));
        assert!(!label_names_sdk(&v("2.9.0"), &sdk.0));
    }
}
