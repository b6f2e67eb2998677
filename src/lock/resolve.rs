//! Where each project's ref comes from — a pure function of the stack entry, the flags and the
//! pin files of the project that pins it. Precedence: flag > pin > default.

use super::PinOrigin;
use super::related_commits;
use crate::git::is_full_sha;
use crate::stack::{PinSource, Project};

/// Flags that name this project's origin or ref (`--gitrepo-origin`, `--origin NAME=URL`,
/// `--repo-hashtag`, `--hashtag NAME=REF`), with the flag that set each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    pub origin: Option<(String, String)>,
    pub reference: Option<(String, String)>,
}

/// A project's origin and ref, and where the ref came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedPin {
    pub origin: String,
    pub requested_ref: String,
    pub pin: PinOrigin,
}

/// A pin file of the pinning project: its display name and content (None when absent).
pub type ReadPinFile<'a> = &'a dyn Fn(&str) -> anyhow::Result<(String, Option<String>)>;

/// Resolves one project's origin and ref. `read` returns pin files of the project named in
/// `pinned-by` (display name, content); it is only called when the pin is needed.
pub fn resolve_pin(
    project: &Project,
    overrides: &Overrides,
    release: bool,
    require_related_commit: bool,
    read: ReadPinFile<'_>,
) -> anyhow::Result<ResolvedPin> {
    let default_origin = || {
        overrides
            .origin
            .as_ref()
            .map_or_else(|| project.origin.clone(), |(url, _)| url.clone())
    };
    if let Some((reference, flag)) = &overrides.reference {
        return Ok(ResolvedPin {
            origin: default_origin(),
            requested_ref: reference.clone(),
            pin: PinOrigin::Flag { flag: flag.clone() },
        });
    }
    let default = || ResolvedPin {
        origin: default_origin(),
        requested_ref: project.default_ref.clone(),
        pin: PinOrigin::Default,
    };
    match &project.pin {
        PinSource::Explicit => Ok(default()),
        PinSource::RelatedCommits {
            from,
            file,
            os,
            key,
        } => {
            let (display, text) = read(file)?;
            let rows = match &text {
                Some(text) => related_commits::parse(&display, text)
                    .map_err(|e| crate::exit::usage(e.to_string()))?,
                None => Vec::new(),
            };
            match related_commits::find(&rows, os, key) {
                Some(row) => Ok(ResolvedPin {
                    // The row's origin goes with its commit; a flag still wins.
                    origin: overrides.origin.as_ref().map_or_else(
                        || {
                            if row.origin.is_empty() {
                                project.origin.clone()
                            } else {
                                row.origin.clone()
                            }
                        },
                        |(url, _)| url.clone(),
                    ),
                    requested_ref: row.commit.clone(),
                    pin: PinOrigin::RelatedCommits {
                        file: display,
                        line: row.line,
                    },
                }),
                None if require_related_commit => Err(crate::exit::usage(match text {
                    Some(_) => format!(
                        "{display} has no `{os}|…|{key}|…` row for project '{}' (--require-related-commit); add the row or name a ref with --hashtag {}=REF",
                        project.name, project.name
                    ),
                    None => format!(
                        "'{from}' has no {display} to pin '{}' (--require-related-commit); check out a '{from}' ref that carries it, or name a ref with --hashtag {}=REF",
                        project.name, project.name
                    ),
                })),
                None => Ok(default()),
            }
        }
        PinSource::CommitFile {
            from,
            commit_file,
            release_version_file,
        } => {
            if release {
                let Some(version_file) = release_version_file else {
                    return Err(crate::exit::usage(format!(
                        "--release: project '{}' has no release-version-file in the stack config",
                        project.name
                    )));
                };
                let (display, text) = read(version_file)?;
                let Some(text) = text else {
                    return Err(crate::exit::usage(format!(
                        "--release: '{from}' has no {display} to derive the {} release branch from",
                        project.name
                    )));
                };
                let branch = release_branch(&text).ok_or_else(|| {
                    crate::exit::usage(format!(
                        "{display}: `{}` is not a version like 3.4.0; cannot derive the release branch",
                        text.trim()
                    ))
                })?;
                return Ok(ResolvedPin {
                    origin: default_origin(),
                    requested_ref: branch,
                    pin: PinOrigin::ReleaseBranch { file: display },
                });
            }
            let (display, text) = read(commit_file)?;
            match text.as_deref().map(str::trim) {
                Some(commit) if is_full_sha(commit) => Ok(ResolvedPin {
                    origin: default_origin(),
                    requested_ref: commit.to_ascii_lowercase(),
                    pin: PinOrigin::CommitFile { file: display },
                }),
                Some(other) => Err(crate::exit::usage(format!(
                    "{display}: `{other}` is not a full commit SHA"
                ))),
                None => Ok(default()),
            }
        }
    }
}

/// `3.4.0` → `release/3.4.x` (the reference crashes on this path: W1).
pub fn release_branch(version: &str) -> Option<String> {
    let version = version.trim();
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

    fn resolve(
        name: &str,
        overrides: Overrides,
        release: bool,
        require: bool,
        files: &BTreeMap<&'static str, String>,
    ) -> anyhow::Result<ResolvedPin> {
        let stack = Stack::load(None).expect("stack");
        let read = |path: &str| Ok((format!("pytorch/{path}"), files.get(path).cloned()));
        resolve_pin(&stack.projects[name], &overrides, release, require, &read)
    }

    #[test]
    fn precedence_is_flag_then_pin_then_default() {
        let files = files();
        let pinned = resolve("audio", Overrides::default(), false, false, &files).expect("pin");
        assert_eq!(pinned.requested_ref, AUDIO_SHA);
        assert_eq!(pinned.origin, "https://mirror/audio");
        assert_eq!(
            pinned.pin,
            PinOrigin::RelatedCommits {
                file: "pytorch/related_commits".into(),
                line: 1
            }
        );

        let flagged = resolve(
            "audio",
            Overrides {
                reference: Some(("v2.9.0".into(), "--hashtag audio=v2.9.0".into())),
                origin: None,
            },
            false,
            true,
            &files,
        )
        .expect("flag");
        assert_eq!(flagged.requested_ref, "v2.9.0");
        assert_eq!(flagged.origin, "https://github.com/pytorch/audio.git");

        let defaulted =
            resolve("vision", Overrides::default(), false, false, &files).expect("default");
        assert_eq!(
            (defaulted.requested_ref.as_str(), &defaulted.pin),
            ("nightly", &PinOrigin::Default)
        );

        let origin_flag = resolve(
            "audio",
            Overrides {
                origin: Some(("file:///mine".into(), "--origin audio=file:///mine".into())),
                reference: None,
            },
            false,
            false,
            &files,
        )
        .expect("origin flag");
        assert_eq!(
            (
                origin_flag.origin.as_str(),
                origin_flag.requested_ref.as_str()
            ),
            ("file:///mine", AUDIO_SHA)
        );
    }

    #[test]
    fn require_related_commit_turns_a_missing_row_into_an_error() {
        let error = resolve("vision", Overrides::default(), false, true, &files())
            .expect_err("missing row");
        assert!(
            error.to_string().starts_with(
                "pytorch/related_commits has no `ubuntu|…|torchvision|…` row for project 'vision'"
            ),
            "{error}"
        );
        let error = resolve(
            "vision",
            Overrides::default(),
            false,
            true,
            &BTreeMap::new(),
        )
        .expect_err("missing file");
        assert!(
            error
                .to_string()
                .starts_with("'torch' has no pytorch/related_commits to pin 'vision'"),
            "{error}"
        );
    }

    #[test]
    fn triton_follows_the_ci_pin_or_the_release_branch() {
        let files = files();
        let pinned = resolve("triton", Overrides::default(), false, false, &files).expect("pin");
        assert_eq!(pinned.requested_ref, TRITON_SHA);
        assert_eq!(
            pinned.pin,
            PinOrigin::CommitFile {
                file: "pytorch/.ci/docker/ci_commit_pins/triton.txt".into()
            }
        );
        let release =
            resolve("triton", Overrides::default(), true, false, &files).expect("release");
        assert_eq!(release.requested_ref, "release/3.4.x");

        let mut bad = files.clone();
        bad.insert(".ci/docker/ci_commit_pins/triton.txt", "main\n".into());
        let error =
            resolve("triton", Overrides::default(), false, false, &bad).expect_err("not a sha");
        assert_eq!(
            error.to_string(),
            "pytorch/.ci/docker/ci_commit_pins/triton.txt: `main` is not a full commit SHA"
        );
    }

    #[test]
    fn malformed_related_commits_is_a_usage_error_with_the_line() {
        let mut bad = files();
        bad.insert(
            "related_commits",
            "# header\nubuntu|pytorch|torchaudio\n".into(),
        );
        let error =
            resolve("audio", Overrides::default(), false, false, &bad).expect_err("malformed");
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
    }
}
