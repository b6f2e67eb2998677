//! Where each project's ref comes from — a pure function of what settings decided (an exact
//! ref, or "follow the pin" with a fallback) and the pin files of the project that pins it.
//! Precedence, decided in settings: flag > preset > stack default.

use super::related_commits;
use super::{Error, PinOrigin};
use crate::git::is_full_sha;
use crate::stack::{PinSource, Project};

/// What settings decided for one project: its origin and how to find its ref.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub origin: String,
    /// The flag that set the origin, when one did (it then beats a related_commits row's).
    pub origin_flag: Option<String>,
    pub rule: RefRequest,
    /// The preset that chose origin and rule, if any.
    pub preset: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefRequest {
    /// A ref known up front (flag, preset, stack default).
    Exact { reference: String, pin: PinOrigin },
    /// The project's `pinned-by` rule. Without a pin: an error naming `required_by`, or the
    /// fallback.
    Pinned {
        required_by: Option<String>,
        fallback: String,
        fallback_pin: PinOrigin,
    },
}

/// A project's origin and ref, and where the ref came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPin {
    pub origin: String,
    pub requested_ref: String,
    pub pin: PinOrigin,
}

/// A pin file of the pinning project: its display name and content (None when absent).
pub type ReadPinFile<'a> = &'a dyn Fn(&str) -> Result<(String, Option<String>), Error>;

/// Resolves one project's origin and ref. `read` returns pin files of the project named in
/// `pinned-by` (display name, content); it is only called when the pin is needed.
pub fn resolve_pin(
    project: &Project,
    request: &Request,
    release: bool,
    read: ReadPinFile<'_>,
) -> Result<ResolvedPin, Error> {
    let (required_by, fallback, fallback_pin) = match &request.rule {
        RefRequest::Exact { reference, pin } => {
            return Ok(ResolvedPin {
                origin: request.origin.clone(),
                requested_ref: reference.clone(),
                pin: pin.clone(),
            });
        }
        RefRequest::Pinned {
            required_by,
            fallback,
            fallback_pin,
        } => (required_by, fallback, fallback_pin),
    };
    let fallback = || {
        Ok(ResolvedPin {
            origin: request.origin.clone(),
            requested_ref: fallback.clone(),
            pin: fallback_pin.clone(),
        })
    };
    match &project.pin {
        PinSource::Explicit => fallback(),
        PinSource::RelatedCommits {
            from,
            file,
            os,
            key,
        } => {
            let (display, text) = read(file)?;
            let rows = match &text {
                Some(text) => related_commits::parse(&display, text)?,
                None => Vec::new(),
            };
            match (related_commits::find(&rows, os, key), required_by) {
                (Some(row), _) => Ok(ResolvedPin {
                    // The row's origin goes with its commit; a flag still wins.
                    origin: if request.origin_flag.is_none() && !row.origin.is_empty() {
                        row.origin.clone()
                    } else {
                        request.origin.clone()
                    },
                    requested_ref: row.commit.clone(),
                    pin: PinOrigin::RelatedCommits {
                        file: display,
                        line: row.line,
                    },
                }),
                (None, Some(required_by)) => Err(match text {
                    Some(_) => Error::MissingRow {
                        file: display,
                        os: os.clone(),
                        key: key.clone(),
                        project: project.name.clone(),
                        required_by: required_by.clone(),
                    },
                    None => Error::MissingPinFile {
                        from: from.clone(),
                        file: display,
                        project: project.name.clone(),
                        required_by: required_by.clone(),
                    },
                }),
                (None, None) => fallback(),
            }
        }
        PinSource::CommitFile {
            from,
            commit_file,
            release_version_file,
        } => {
            if release {
                let Some(version_file) = release_version_file else {
                    return Err(Error::NoReleaseVersionFile {
                        project: project.name.clone(),
                    });
                };
                let (display, text) = read(version_file)?;
                let Some(text) = text else {
                    return Err(Error::NoVersionFile {
                        from: from.clone(),
                        file: display,
                        project: project.name.clone(),
                    });
                };
                let branch = release_branch(&text).ok_or_else(|| Error::BadVersionFile {
                    file: display.clone(),
                    value: text.trim().to_string(),
                })?;
                return Ok(ResolvedPin {
                    origin: request.origin.clone(),
                    requested_ref: branch,
                    pin: PinOrigin::ReleaseBranch { file: display },
                });
            }
            let (display, text) = read(commit_file)?;
            match (text.as_deref().map(str::trim), required_by) {
                (Some(commit), _) if is_full_sha(commit) => Ok(ResolvedPin {
                    origin: request.origin.clone(),
                    requested_ref: commit.to_ascii_lowercase(),
                    pin: PinOrigin::CommitFile { file: display },
                }),
                (Some(other), _) => Err(Error::NotACommit {
                    file: display,
                    value: other.to_string(),
                }),
                (None, Some(required_by)) => Err(Error::MissingPinFile {
                    from: from.clone(),
                    file: display,
                    project: project.name.clone(),
                    required_by: required_by.clone(),
                }),
                (None, None) => fallback(),
            }
        }
    }
}

/// `3.4.0` → `release/3.4.x` (the reference crashes on this path: W1).
pub fn release_branch(version: &str) -> Option<String> {
    // The whole file is one PEP 440 version: nothing else may ride along in it.
    let version = version.trim();
    if version.lines().count() != 1 || version.parse::<pep440_rs::Version>().is_err() {
        return None;
    }
    let mut parts = version.split('.');
    let major = parts.next()?;
    let minor = parts.next()?;
    let numeric = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    (numeric(major) && numeric(minor)).then(|| format!("release/{major}.{minor}.x"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::stack::Stack;

    const AUDIO_SHA: &str = "1111111111111111111111111111111111111111";
    const TRITON_SHA: &str = "3333333333333333333333333333333333333333";

    fn files() -> BTreeMap<&'static str, String> {
        BTreeMap::from([
            (
                "related_commits",
                format!("ubuntu|pytorch|torchaudio|release/2.9|{AUDIO_SHA}|https://mirror/audio\n"),
            ),
            (
                ".ci/docker/ci_commit_pins/triton.txt",
                format!("{TRITON_SHA}\n"),
            ),
            (".ci/docker/triton_version.txt", "3.4.0\n".to_string()),
        ])
    }

    fn pinned(required_by: Option<&str>) -> RefRequest {
        RefRequest::Pinned {
            required_by: required_by.map(str::to_string),
            fallback: "nightly".into(),
            fallback_pin: PinOrigin::Default,
        }
    }

    fn request(origin: &str, rule: RefRequest) -> Request {
        Request {
            origin: origin.into(),
            origin_flag: None,
            rule,
            preset: None,
        }
    }

    fn resolve(
        name: &str,
        request: &Request,
        release: bool,
        files: &BTreeMap<&'static str, String>,
    ) -> Result<ResolvedPin, Error> {
        let stack = Stack::load(None).expect("stack");
        let read = |path: &str| Ok((format!("pytorch/{path}"), files.get(path).cloned()));
        resolve_pin(&stack.projects[name], request, release, &read)
    }

    #[test]
    fn a_pin_brings_its_origin_unless_a_flag_names_one() {
        let files = files();
        let from_row = resolve(
            "audio",
            &request("https://up/audio", pinned(None)),
            false,
            &files,
        )
        .expect("pin");
        assert_eq!(
            from_row,
            ResolvedPin {
                origin: "https://mirror/audio".into(),
                requested_ref: AUDIO_SHA.into(),
                pin: PinOrigin::RelatedCommits {
                    file: "pytorch/related_commits".into(),
                    line: 1
                },
            }
        );
        let mut flagged = request("file:///mine", pinned(None));
        flagged.origin_flag = Some("--origin audio=file:///mine".into());
        let flagged = resolve("audio", &flagged, false, &files).expect("origin flag");
        assert_eq!(
            (flagged.origin.as_str(), flagged.requested_ref.as_str()),
            ("file:///mine", AUDIO_SHA)
        );
        let exact = resolve(
            "audio",
            &request(
                "https://up/audio",
                RefRequest::Exact {
                    reference: "v2.9.0".into(),
                    pin: PinOrigin::Flag {
                        flag: "--hashtag audio=v2.9.0".into(),
                    },
                },
            ),
            false,
            &files,
        )
        .expect("exact");
        assert_eq!(
            (exact.origin.as_str(), exact.requested_ref.as_str()),
            ("https://up/audio", "v2.9.0")
        );
    }

    #[test]
    fn a_missing_pin_falls_back_unless_required() {
        let defaulted = resolve(
            "vision",
            &request("https://up/vision", pinned(None)),
            false,
            &files(),
        )
        .expect("default");
        assert_eq!(
            (defaulted.requested_ref.as_str(), &defaulted.pin),
            ("nightly", &PinOrigin::Default)
        );
        let required = pinned(Some("preset 'rocm-release', presets.yaml:44"));
        let errors: Vec<String> = [
            resolve("vision", &request("u", required.clone()), false, &files()),
            resolve(
                "vision",
                &request("u", required.clone()),
                false,
                &BTreeMap::new(),
            ),
            resolve("triton", &request("u", required), false, &BTreeMap::new()),
        ]
        .into_iter()
        .map(|r| r.expect_err("required").to_string())
        .collect();
        insta::assert_snapshot!(errors.join("\n"));
    }

    #[test]
    fn triton_follows_the_ci_pin_or_the_release_branch() {
        let files = files();
        let rule = request("https://up/triton", pinned(None));
        let ci = resolve("triton", &rule, false, &files).expect("pin");
        assert_eq!(ci.requested_ref, TRITON_SHA);
        assert_eq!(
            ci.pin,
            PinOrigin::CommitFile {
                file: "pytorch/.ci/docker/ci_commit_pins/triton.txt".into()
            }
        );
        let release = resolve("triton", &rule, true, &files).expect("release");
        assert_eq!(release.requested_ref, "release/3.4.x");

        let mut bad = files.clone();
        bad.insert(".ci/docker/ci_commit_pins/triton.txt", "main\n".into());
        let error = resolve("triton", &rule, false, &bad).expect_err("not a sha");
        assert_eq!(
            error.to_string(),
            "pytorch/.ci/docker/ci_commit_pins/triton.txt: `main` is not a full commit SHA"
        );
    }

    #[test]
    fn malformed_related_commits_is_an_error_with_the_line() {
        let mut bad = files();
        bad.insert(
            "related_commits",
            "# header\nubuntu|pytorch|torchaudio\n".into(),
        );
        let error =
            resolve("audio", &request("u", pinned(None)), false, &bad).expect_err("malformed");
        assert!(
            error
                .to_string()
                .starts_with("pytorch/related_commits:2: malformed related_commits line"),
            "{error}"
        );
    }

    #[test]
    fn release_branches() {
        assert_eq!(release_branch("3.4.0\n").as_deref(), Some("release/3.4.x"));
        assert_eq!(
            release_branch("3.5.0+git1234").as_deref(),
            Some("release/3.5.x")
        );
        assert_eq!(release_branch("main"), None);
        assert_eq!(release_branch("3.4.0\n::error::x"), None);
        assert_eq!(release_branch("3.4.0 junk"), None);
    }
}
