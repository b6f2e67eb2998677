//! Reading pins to reproduce: a rockbuild lock, or TheRock's source manifest (schema_version
//! 1: objects `pytorch`, `pytorch_audio`, `pytorch_vision`, `triton`, `apex` (and `therock`),
//! each with `repo`, `commit`, optional `branch` and `version`; F9).

use std::path::Path;

use indexmap::IndexMap;

use super::{Error, Lock};
use crate::git::{Commit, Origin, RefName, is_full_sha};
use crate::stack::Stack;

/// A pin to reproduce: origin + exact commit (+ what the lock knows about its hipify result).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReproducePin {
    pub origin: String,
    pub requested_ref: String,
    pub commit: String,
    pub hipify: Option<super::HipifyStamp>,
    /// The preset the lock recorded (none for a TheRock manifest).
    pub preset: Option<String>,
    /// The tree and the submodule commits (path, commit) the lock recorded, checked against
    /// what the commit really holds (none for a TheRock manifest, which records neither).
    pub recorded: Option<Recorded>,
}

/// What a lock says a commit holds: checked, never taken on trust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub tree: String,
    pub submodules: Vec<(String, String)>,
}

/// Pins by project name, from a lock or a TheRock manifest, whichever the file is.
pub fn read_pins(path: &Path, stack: &Stack) -> Result<IndexMap<String, ReproducePin>, Error> {
    let text =
        crate::input::read_text(path, crate::input::LOCK).map_err(|e| Error::Unreadable {
            path: path.to_path_buf(),
            reason: e.reason(),
        })?;
    let value: serde_json::Value =
        crate::input::strict::json(&text).map_err(|error| Error::NotALock {
            path: path.to_path_buf(),
            line: error.line(),
            column: error.column(),
            reason: crate::input::strict::json_message(&error),
        })?;
    if value.get("schema_version").is_some() || value.get("pytorch").is_some() {
        return manifest_pins(path, &text, &value, stack);
    }
    let lock = Lock::read(path)?;
    let mut pins = IndexMap::new();
    for (name, project) in lock.projects {
        if !stack.projects.contains_key(&name) {
            return Err(invalid(
                path,
                format!(
                    "project '{name}' is not in the stack ({})",
                    stack.source_name
                ),
            ));
        }
        let pin = ReproducePin {
            origin: project.origin,
            requested_ref: project.requested_ref,
            commit: project.commit,
            hipify: project.hipify,
            preset: project.preset,
            recorded: Some(Recorded {
                tree: project.tree,
                submodules: project
                    .submodules
                    .into_iter()
                    .map(|s| (s.path, s.commit))
                    .collect(),
            }),
        };
        check_pin(
            path,
            &text,
            &format!("projects.{name}"),
            &pin,
            ["origin", "requested_ref", "commit"],
        )?;
        pins.insert(name, pin);
    }
    Ok(pins)
}

fn invalid(path: &Path, problem: String) -> Error {
    Error::Manifest {
        path: path.to_path_buf(),
        problem,
    }
}

/// Checks what reaches git (origin, ref, commit), naming the field and its line: a value git
/// would read as an option or a program is refused here, before any fetch.
fn check_pin(
    path: &Path,
    text: &str,
    at: &str,
    pin: &ReproducePin,
    [origin, reference, commit]: [&str; 3],
) -> Result<(), Error> {
    let checks = [
        (origin, &pin.origin, Origin::parse(&pin.origin).err()),
        (
            reference,
            &pin.requested_ref,
            RefName::parse(&pin.requested_ref).err(),
        ),
        (commit, &pin.commit, Commit::parse(&pin.commit).err()),
    ];
    for (field, value, failed) in checks {
        if let Some(invalid) = failed {
            let quoted = serde_json::to_string(value).unwrap_or_default();
            let line = text
                .lines()
                .position(|l| l.contains(&quoted))
                .map_or(1, |i| i + 1);
            return Err(Error::Field {
                path: path.to_path_buf(),
                line,
                field: format!("{at}.{field}"),
                invalid,
            });
        }
    }
    Ok(())
}

/// The pins of a TheRock manifest's text (`path`: how messages name it — a file, or the URL
/// it was downloaded from). Refuses anything else, a rockbuild lock included.
pub fn manifest_pins_from_text(
    path: &Path,
    text: &str,
    stack: &Stack,
) -> Result<IndexMap<String, ReproducePin>, Error> {
    let value: serde_json::Value = crate::input::strict::json(text).map_err(|error| {
        invalid(
            path,
            format!(
                "not JSON, so not a TheRock manifest ({error} at line {}, column {})",
                error.line(),
                error.column()
            ),
        )
    })?;
    if !value.is_object()
        || (value.get("schema_version").is_none() && value.get("pytorch").is_none())
    {
        return Err(invalid(
            path,
            "not a TheRock source manifest (it has neither `schema_version` nor `pytorch`); a \
             rockbuild lock is reproduced with --from-lock FILE"
                .into(),
        ));
    }
    manifest_pins(path, text, &value, stack)
}

fn manifest_pins(
    path: &Path,
    text: &str,
    value: &serde_json::Value,
    stack: &Stack,
) -> Result<IndexMap<String, ReproducePin>, Error> {
    match value.get("schema_version") {
        None => {}
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(1) => {}
        Some(other) => {
            return Err(invalid(
                path,
                format!("TheRock manifest schema_version {other} is not supported (expected 1)"),
            ));
        }
    }
    let mut pins = IndexMap::new();
    for project in stack.projects.values() {
        // TheRock keys entries by checkout directory name (pytorch, pytorch_audio, ...).
        let Some(entry) = value.get(&project.checkout_dir) else {
            continue;
        };
        let field = |key: &str| entry.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        let (repo, commit) = (field("repo"), field("commit"));
        if repo.is_empty() || commit.is_empty() {
            return Err(invalid(
                path,
                format!(
                    "manifest entry `{}` needs non-empty string `repo` and `commit`",
                    project.checkout_dir
                ),
            ));
        }
        if !is_full_sha(commit) {
            return Err(invalid(
                path,
                format!(
                    "manifest entry `{}` has commit `{commit}`, which is not a full SHA",
                    project.checkout_dir
                ),
            ));
        }
        let branch = field("branch");
        let pin = ReproducePin {
            origin: repo.to_string(),
            requested_ref: if branch.is_empty() {
                commit.to_string()
            } else {
                branch.to_string()
            },
            commit: commit.to_ascii_lowercase(),
            hipify: None,
            preset: None,
            recorded: None,
        };
        check_pin(
            path,
            text,
            &project.checkout_dir,
            &pin,
            [
                "repo",
                if branch.is_empty() {
                    "commit"
                } else {
                    "branch"
                },
                "commit",
            ],
        )?;
        pins.insert(project.name.clone(), pin);
    }
    if pins.is_empty() {
        return Err(invalid(
            path,
            format!(
                "the manifest names none of the stack's projects ({})",
                stack
                    .projects
                    .values()
                    .map(|p| p.checkout_dir.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    Ok(pins)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_therock_manifests() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir
            .path()
            .join("therock-manifest_torch_linux_release-2.9.json");
        let sha = "0123456789abcdef0123456789abcdef01234567";
        fs_err::write(
            &path,
            format!(
                r#"{{"schema_version": 1,
                   "pytorch": {{"repo": "https://github.com/ROCm/pytorch.git", "commit": "{sha}", "branch": "release/2.9", "version": "2.9.0+rocm7.10.0"}},
                   "triton": {{"repo": "https://github.com/ROCm/triton.git", "commit": "{sha}"}},
                   "therock": {{"repo": "https://github.com/ROCm/TheRock.git", "commit": "{sha}"}}}}"#
            ),
        )
        .expect("write");
        let stack = Stack::load(None).expect("stack");
        let pins = read_pins(&path, &stack).expect("reads");
        assert_eq!(pins.keys().collect::<Vec<_>>(), ["torch", "triton"]);
        assert_eq!(pins["torch"].requested_ref, "release/2.9");
        assert_eq!(pins["triton"].requested_ref, sha);

        fs_err::write(&path, r#"{"schema_version": 2, "pytorch": {}}"#).expect("write");
        let error = read_pins(&path, &stack).expect_err("schema 2").to_string();
        assert!(
            error.contains("schema_version 2 is not supported"),
            "{error}"
        );

        fs_err::write(
            &path,
            r#"{"schema_version": 1, "pytorch": {"repo": "x", "commit": "abc"}}"#,
        )
        .expect("write");
        let error = read_pins(&path, &stack).expect_err("short sha").to_string();
        assert!(
            error.contains("commit `abc`, which is not a full SHA"),
            "{error}"
        );
    }
}
