//! Wheel versions: the local suffix derived from the installed ROCm version, the per-project
//! version (with the commit merged into the local segment for dev builds). A project with a
//! rule of its own (triton's setup.py) has it in its recipe. Pure functions; every result is parsed as PEP 440 and returned normalized, so a version that pip
//! would reject or rewrite never reaches a build (TheRock#1208, ROCm/triton#957).

use std::str::FromStr;

use pep440_rs::{LocalSegment, Version};

/// The release channel of a build; decides version suffixes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseType {
    Ci,
    Dev,
    DevBkc,
    Nightly,
    NightlyBkc,
    Prerelease,
}

impl ReleaseType {
    /// `dev` and `dev-bkc` builds carry the source commit in their local version (F28).
    pub fn tags_commit(self) -> bool {
        matches!(self, ReleaseType::Dev | ReleaseType::DevBkc)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseType::Ci => "ci",
            ReleaseType::Dev => "dev",
            ReleaseType::DevBkc => "dev-bkc",
            ReleaseType::Nightly => "nightly",
            ReleaseType::NightlyBkc => "nightly-bkc",
            ReleaseType::Prerelease => "prerelease",
        }
    }
}

/// A version that is not valid PEP 440, with what it was meant to be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} `{value}` is not a valid PEP 440 version: {reason}")]
pub struct VersionError {
    pub what: String,
    pub value: String,
    pub reason: String,
}

/// Parses a version, naming what it is in the error (`torch version.txt + suffix`).
pub fn parse(what: &str, value: &str) -> Result<Version, VersionError> {
    Version::from_str(value.trim()).map_err(|error| VersionError {
        what: what.to_string(),
        value: value.to_string(),
        reason: error.to_string(),
    })
}

/// The normalized form of a version (`1.0-rc.1` → `1.0rc1`, local `-` → `.`).
pub fn normalize(what: &str, value: &str) -> Result<String, VersionError> {
    parse(what, value).map(|v| v.to_string())
}

/// The local suffix for wheels built against ROCm `rocm_version` (F27): `+rocm<v>`, or
/// `+devrocm<v>` when the version is a dev build (so dev wheels sort below nightlies), where
/// `<v>` is the normalized ROCm version with its own `+` replaced by `-` (a version can have
/// only one local segment; PEP 440 then reads the `-` as a `.`).
pub fn rocm_suffix(rocm_version: &str) -> Result<String, VersionError> {
    let normalized = normalize("the ROCm SDK version", rocm_version)?;
    let base = if normalized.contains("dev") {
        "devrocm"
    } else {
        "rocm"
    };
    Ok(format!("+{base}{}", normalized.replace('+', "-")))
}

/// A project's wheel version (F28): `<base><suffix>`, normalized. With `commit` (dev and
/// dev-bkc builds of torch, audio and vision) the first 8 characters of the commit become the
/// first part of the single local segment: `2.12.0a0+git1a2b3c4d.rocm7.10.0`.
pub fn project_version(
    project: &str,
    base: &str,
    suffix: &str,
    commit: Option<&str>,
) -> Result<String, VersionError> {
    let joined = format!("{}{}", base.trim(), suffix.trim());
    let version = parse(
        &format!("{project}: version `{}` + suffix `{suffix}`", base.trim()),
        &joined,
    )?;
    let version = match commit {
        Some(commit) => {
            let mut local = vec![LocalSegment::String(format!("git{}", short_sha(commit)))];
            local.extend(version.local().iter().cloned());
            version.with_local(local)
        }
        None => version,
    };
    Ok(version.to_string())
}

/// The first 8 characters of a commit, as `git rev-parse --short=8` prints them.
pub fn short_sha(commit: &str) -> &str {
    commit.get(..8).unwrap_or(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocm_suffix_follows_the_reference_table() {
        // F27 examples, plus the normalization PEP 440 applies to them.
        let cases = [
            ("7.10.0", "+rocm7.10.0"),
            ("7.10.0a20251124", "+rocm7.10.0a20251124"),
            ("7.10.0rc2", "+rocm7.10.0rc2"),
            ("7.10.0.dev0+efed3c0123", "+devrocm7.10.0.dev0-efed3c0123"),
            (
                "10.1.0a20260811+bkc.20260814",
                "+rocm10.1.0a20260811-bkc.20260814",
            ),
            ("7.10.0-rc.2", "+rocm7.10.0rc2"),
        ];
        for (rocm, want) in cases {
            assert_eq!(rocm_suffix(rocm).expect(rocm), want, "{rocm}");
        }
        let error = rocm_suffix("seven").expect_err("invalid");
        assert!(
            error
                .to_string()
                .starts_with("the ROCm SDK version `seven` is not a valid PEP 440 version"),
            "{error}"
        );
    }

    #[test]
    fn project_versions_follow_the_reference_examples() {
        let sha = "1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d";
        let cases = [
            // (base, rocm version, commit?, expected)
            (
                "2.13.0a0",
                "7.14.0a20260801",
                None,
                "2.13.0a0+rocm7.14.0a20260801",
            ),
            (
                "2.13.0",
                "7.14.0a20260801",
                None,
                "2.13.0+rocm7.14.0a20260801",
            ),
            ("0.28.0a0", "7.14.0", None, "0.28.0a0+rocm7.14.0"),
            ("1.11.0", "7.14.0", None, "1.11.0+rocm7.14.0"),
            (
                "2.12.0a0",
                "7.10.0",
                Some(sha),
                "2.12.0a0+git1a2b3c4d.rocm7.10.0",
            ),
            // dev SDK: the SDK's own local part ends up as further segments, normalized.
            (
                "2.12.0a0",
                "7.10.0.dev0+efed3c0123",
                Some(sha),
                "2.12.0a0+git1a2b3c4d.devrocm7.10.0.dev0.efed3c0123",
            ),
            (
                "2.12.0a0",
                "7.10.0.dev0+efed3c0123",
                None,
                "2.12.0a0+devrocm7.10.0.dev0.efed3c0123",
            ),
        ];
        for (base, rocm, commit, want) in cases {
            let suffix = rocm_suffix(rocm).expect("suffix");
            let got = project_version("torch", base, &suffix, commit).expect("version");
            assert_eq!(got, want, "{base} {rocm} {commit:?}");
            // Every computed version is valid and already normalized.
            assert_eq!(normalize("v", &got).expect("parses"), got);
        }
        // No suffix at all is a plain version; a commit alone still makes a local segment.
        assert_eq!(
            project_version("apex", "1.11.0", "", None).expect("plain"),
            "1.11.0"
        );
        assert_eq!(
            project_version("torch", "2.12.0a0", "", Some(sha)).expect("git"),
            "2.12.0a0+git1a2b3c4d"
        );
    }

    #[test]
    fn invalid_project_versions_name_the_project_and_parts() {
        let error =
            project_version("torch", "2.12.0a0+local", "+rocm7.10.0", None).expect_err("two plus");
        let text = error.to_string();
        assert!(
            text.starts_with("torch: version `2.12.0a0+local` + suffix `+rocm7.10.0`"),
            "{text}"
        );
        assert!(project_version("vision", "not a version", "+rocm7", None).is_err());
    }

    #[test]
    fn local_segments_compare_as_strings_rocm7_above_rocm10() {
        // W8 / TheRock#7183, pinned: PEP 440 compares `rocm7…` and `rocm10…` as strings, so
        // the older SDK's wheel sorts higher. The publish stage lints this; here it is a fact.
        let old = parse("a", "2.13.0+rocm7.15.0").expect("old");
        let new = parse("b", "2.13.0+rocm10.1.0").expect("new");
        assert!(old > new);
    }

    #[test]
    fn release_types_that_tag_commits() {
        assert!(ReleaseType::Dev.tags_commit() && ReleaseType::DevBkc.tags_commit());
        assert!(!ReleaseType::Nightly.tags_commit() && !ReleaseType::Ci.tags_commit());
    }
}
