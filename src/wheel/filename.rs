//! Wheel file names (`{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl`, the binary
//! distribution format spec), PEP 503 name normalization and PEP 427 escaping.

use std::fmt;
use std::str::FromStr;

use pep440_rs::Version;

/// Why a file name is not a wheel name. Every variant names the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FilenameError {
    #[error("'{file}' does not end in .whl")]
    NotWheel { file: String },
    #[error(
        "'{file}' has {parts} dash-separated parts; a wheel name has 5 or 6: \
         name-version[-build]-python-abi-platform.whl"
    )]
    PartCount { file: String, parts: usize },
    #[error("'{file}': distribution name '{name}' may only hold letters, digits, '_' and '.'")]
    BadName { file: String, name: String },
    #[error("'{file}': '{version}' is not a PEP 440 version: {reason}")]
    BadVersion {
        file: String,
        version: String,
        reason: String,
    },
    #[error("'{file}': build tag '{build}' must start with a digit")]
    BadBuild { file: String, build: String },
    #[error("'{file}': empty {what} tag")]
    EmptyTag { file: String, what: &'static str },
}

/// A parsed wheel file name. `Display` writes it back exactly as parsed (or, after
/// [`WheelFilename::with_version`], with the new version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WheelFilename {
    /// The distribution name as written in the file name (escaped, original case).
    pub name: String,
    pub version: Version,
    /// The version as written (it may be unnormalized; `Display` keeps it).
    version_text: String,
    pub build: Option<String>,
    pub python: String,
    pub abi: String,
    pub platform: String,
}

impl WheelFilename {
    pub fn parse(file_name: &str) -> Result<Self, FilenameError> {
        let file = file_name.to_string();
        let stem = file_name
            .strip_suffix(".whl")
            .ok_or_else(|| FilenameError::NotWheel { file: file.clone() })?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (name, version, build, python, abi, platform) = match parts.as_slice() {
            [n, v, p, a, pl] => (*n, *v, None, *p, *a, *pl),
            [n, v, b, p, a, pl] => (*n, *v, Some(*b), *p, *a, *pl),
            _ => {
                return Err(FilenameError::PartCount {
                    file,
                    parts: parts.len(),
                });
            }
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(FilenameError::BadName {
                file,
                name: name.to_string(),
            });
        }
        let parsed = Version::from_str(version).map_err(|e| FilenameError::BadVersion {
            file: file.clone(),
            version: version.to_string(),
            reason: e.to_string(),
        })?;
        if let Some(build) = build
            && !build.starts_with(|c: char| c.is_ascii_digit())
        {
            return Err(FilenameError::BadBuild {
                file,
                build: build.to_string(),
            });
        }
        for (what, tag) in [("python", python), ("abi", abi), ("platform", platform)] {
            if tag.is_empty() || tag.split('.').any(str::is_empty) {
                return Err(FilenameError::EmptyTag { file, what });
            }
        }
        Ok(WheelFilename {
            name: name.to_string(),
            version: parsed,
            version_text: version.to_string(),
            build: build.map(str::to_string),
            python: python.to_string(),
            abi: abi.to_string(),
            platform: platform.to_string(),
        })
    }

    /// The PEP 503 normalized project name (`Foo_Bar` → `foo-bar`).
    pub fn normalized_name(&self) -> String {
        normalize_name(&self.name)
    }

    /// The version exactly as the file name writes it.
    pub fn version_text(&self) -> &str {
        &self.version_text
    }

    /// Every `python-abi-platform` tag the name stands for (compressed tag sets such as
    /// `py2.py3-none-any` expand to two), in file-name order.
    pub fn tags(&self) -> Vec<String> {
        let mut out = Vec::new();
        for python in self.python.split('.') {
            for abi in self.abi.split('.') {
                for platform in self.platform.split('.') {
                    out.push(format!("{python}-{abi}-{platform}"));
                }
            }
        }
        out
    }

    /// The same wheel with another version (normalized form).
    pub fn with_version(&self, version: &Version) -> WheelFilename {
        WheelFilename {
            version: version.clone(),
            version_text: version.to_string(),
            ..self.clone()
        }
    }

    /// The `.dist-info` directory an installer expects for this name and version:
    /// `{escaped name}-{version}.dist-info`.
    pub fn dist_info_dir(&self) -> String {
        format!("{}-{}.dist-info", escape_name(&self.name), self.version)
    }
}

impl fmt::Display for WheelFilename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.name, self.version_text)?;
        if let Some(build) = &self.build {
            write!(f, "-{build}")?;
        }
        write!(f, "-{}-{}-{}.whl", self.python, self.abi, self.platform)
    }
}

/// The project name (as the file name writes it) and version of a distribution file: a
/// wheel, parsed in full by [`WheelFilename::parse`], or a source distribution
/// (`{name}-{version}.tar.gz` or `.zip`; PEP 625 escapes `-` in the name, and older sdists
/// that did not are split at their last `-`). `None` for anything else, or a version that is
/// not PEP 440: installers ignore such files, so indexes and version checks do too.
pub fn dist_name_and_version(file_name: &str) -> Option<(String, Version)> {
    if file_name.ends_with(".whl") {
        let wheel = WheelFilename::parse(file_name).ok()?;
        return Some((wheel.name, wheel.version));
    }
    let stem = sdist_stem(file_name)?;
    let (name, version) = stem.rsplit_once('-')?;
    if name.is_empty() {
        return None;
    }
    Some((name.to_string(), Version::from_str(version).ok()?))
}

/// What installers take a distribution file for, whatever its spelling: the PEP 503 name, the
/// PEP 440 version (`1.0`, `01.00` and `v1.0` are one), the build tag and, for a wheel, its
/// tag set (`Foo_Bar-1.0-py3-none-any.whl` and `foo.bar-1.0-py3-none-any.whl` are one
/// file to pip, which takes whichever it meets last). Two files with one identity in one
/// index shadow each other. `None` for what is not a distribution file.
pub fn distribution_identity(file_name: &str) -> Option<String> {
    if file_name.ends_with(".whl") {
        let wheel = WheelFilename::parse(file_name).ok()?;
        let mut tags: Vec<String> = wheel
            .tags()
            .iter()
            .map(|t| t.to_ascii_lowercase())
            .collect();
        tags.sort();
        tags.dedup();
        return Some(format!(
            "{} {} {} {}",
            wheel.normalized_name(),
            wheel.version,
            wheel.build.as_deref().unwrap_or("-"),
            tags.join(".")
        ));
    }
    let (name, version) = dist_name_and_version(file_name)?;
    Some(format!("{} {version} sdist", normalize_name(&name)))
}

/// The suffixes of source distributions installers accept.
const SDIST_SUFFIXES: [&str; 2] = [".tar.gz", ".zip"];

/// A source distribution's file name without its suffix.
fn sdist_stem(file_name: &str) -> Option<&str> {
    SDIST_SUFFIXES
        .iter()
        .find_map(|suffix| file_name.strip_suffix(suffix))
}

/// True for the files an index lists: wheels and source distributions (a bare suffix is
/// not a file name).
pub fn is_distribution(file_name: &str) -> bool {
    match file_name.strip_suffix(".whl") {
        Some(stem) => !stem.is_empty(),
        None => sdist_stem(file_name).is_some_and(|stem| !stem.is_empty()),
    }
}

/// PEP 503 normalization: lowercase, every run of `-`, `_` and `.` becomes one `-`.
pub fn normalize_name(name: &str) -> String {
    collapse_separators(name, '-')
}

/// PEP 427 escaping for file and `.dist-info` names: like [`normalize_name`] but with `_`, so
/// the name holds no `-` (the field separator).
pub fn escape_name(name: &str) -> String {
    collapse_separators(name, '_')
}

fn collapse_separators(name: &str, with: char) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_run = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_run {
                out.push(with);
            }
            in_run = true;
        } else {
            out.push(c.to_ascii_lowercase());
            in_run = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_distribution_whatever_its_spelling() {
        let id = |name: &str| distribution_identity(name).expect(name);
        assert_eq!(
            id("torch-1.0-py3-none-any.whl"),
            id("torch-01.00-py3-none-any.whl")
        );
        assert_eq!(
            id("torch-1.0-py3-none-any.whl"),
            id("torch-v1.0-py3-none-any.whl")
        );
        assert_eq!(
            id("Foo_Bar-1.0-py3-none-any.whl"),
            id("foo.bar-1.0-py3-none-any.whl")
        );
        assert_eq!(
            id("x-1.0-py2.py3-none-any.whl"),
            id("x-1.0-py3.py2-none-any.whl")
        );
        assert_ne!(
            id("torch-1.0-py3-none-any.whl"),
            id("torch-1.0-cp311-cp311-linux_x86_64.whl")
        );
        assert_ne!(
            id("torch-1.0-py3-none-any.whl"),
            id("torch-1.0.1-py3-none-any.whl")
        );
        assert_eq!(id("foo-1.0.tar.gz"), id("Foo-1.00.zip"));
        assert_eq!(distribution_identity("index.html"), None);
    }

    #[test]
    fn parses_and_round_trips() {
        for name in [
            "torch-2.10.0a0+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl",
            "torchvision-0.25.0+rocm7.1-1local-cp312-cp312-manylinux_2_28_x86_64.whl",
            "six-1.16.0-py2.py3-none-any.whl",
            "Foo_Bar-1.0-py3-none-any.whl",
        ] {
            let parsed = WheelFilename::parse(name).expect(name);
            assert_eq!(parsed.to_string(), name);
        }
        let torch =
            WheelFilename::parse("torch-2.10.0a0+rocm7.13.0a20260430-cp311-cp311-linux_x86_64.whl")
                .expect("parses");
        assert_eq!(torch.normalized_name(), "torch");
        assert_eq!(torch.version.to_string(), "2.10.0a0+rocm7.13.0a20260430");
        assert_eq!(torch.tags(), vec!["cp311-cp311-linux_x86_64"]);
        assert_eq!(
            torch.dist_info_dir(),
            "torch-2.10.0a0+rocm7.13.0a20260430.dist-info"
        );
        let build = WheelFilename::parse(
            "torchvision-0.25.0+rocm7.1-1local-cp312-cp312-manylinux_2_28_x86_64.whl",
        )
        .expect("parses");
        assert_eq!(build.build.as_deref(), Some("1local"));
        let six = WheelFilename::parse("six-1.16.0-py2.py3-none-any.whl").expect("parses");
        assert_eq!(six.tags(), vec!["py2-none-any", "py3-none-any"]);
    }

    #[test]
    fn refuses_bad_names_naming_the_file() {
        let cases = [
            ("torch-2.10.0.tar.gz", "does not end in .whl"),
            ("torch-2.10.0-py3-any.whl", "has 4 dash-separated parts"),
            (
                "torch-2.10-0-x-py3-none-any.whl",
                "has 7 dash-separated parts",
            ),
            (
                "torch-2.x.0-py3-none-any.whl",
                "'2.x.0' is not a PEP 440 version",
            ),
            ("tor ch-2.0-py3-none-any.whl", "distribution name 'tor ch'"),
            (
                "torch-2.0-local-py3-none-any.whl",
                "build tag 'local' must start with a digit",
            ),
            ("torch-2.0-py3..x-none-any.whl", "empty python tag"),
        ];
        for (name, expected) in cases {
            let error = WheelFilename::parse(name).expect_err(name).to_string();
            assert!(error.contains(expected), "{name}: {error}");
            assert!(error.contains(name), "{error} does not name the file");
        }
    }

    #[test]
    fn names_and_versions_of_wheels_and_sdists() {
        let parsed = |name: &str| dist_name_and_version(name).map(|(n, v)| (n, v.to_string()));
        assert_eq!(
            parsed("torch-2.9.0+rocm7.0.0-cp311-cp311-linux_x86_64.whl"),
            Some(("torch".into(), "2.9.0+rocm7.0.0".into()))
        );
        assert_eq!(
            parsed("rock_demo-1.0.tar.gz"),
            Some(("rock_demo".into(), "1.0".into()))
        );
        assert_eq!(
            parsed("old-style-name-2.0.zip"),
            Some(("old-style-name".into(), "2.0".into()))
        );
        for bad in [
            "torch.whl",
            "README.md",
            "torch-2.x-py3-none-any.whl",
            "torch-2.0.tar.gz.metadata",
            "-1.0.tar.gz",
        ] {
            assert_eq!(parsed(bad), None, "{bad}");
        }
    }

    #[test]
    fn normalizes_and_escapes() {
        assert_eq!(normalize_name("Foo__Bar.baz-Qux"), "foo-bar-baz-qux");
        assert_eq!(normalize_name("rocm_sdk_core"), "rocm-sdk-core");
        assert_eq!(escape_name("rocm-sdk-core"), "rocm_sdk_core");
        assert_eq!(escape_name("Foo.-Bar"), "foo_bar");
    }

    #[test]
    fn rewrites_the_version() {
        let wheel =
            WheelFilename::parse("triton-3.5.0a20260430+git1a2b3c4d-cp311-cp311-linux_x86_64.whl")
                .expect("parses");
        let new = Version::from_str("3.5.0rc1+git1a2b3c4d").expect("version");
        assert_eq!(
            wheel.with_version(&new).to_string(),
            "triton-3.5.0rc1+git1a2b3c4d-cp311-cp311-linux_x86_64.whl"
        );
    }
}
