//! Which projects a build covers: a project named by `--build` (or the reference's
//! `--build-…`) must have its checkout; one named by `--skip` (`--no-build-…`) is left out;
//! the others build when their checkout exists (the reference's default). A checkout
//! directory named explicitly must exist.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::Error;
use crate::lock::{Lock, LockedProject};
use crate::sourced::Sourced;
use crate::stack::{Project, Stack};

/// What the command line says about the projects: where the checkouts are and which to build.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The directory holding one checkout per project.
    pub root: Sourced<PathBuf>,
    /// By project name: its checkout (`--dir NAME=DIR`, `--pytorch-dir DIR`, …), absolute.
    pub dirs: BTreeMap<String, Sourced<PathBuf>>,
    /// By project name: build it (`--build NAME`) or not (`--skip NAME`).
    pub build: BTreeMap<String, Sourced<bool>>,
}

/// A project selected for the build, with its checkout and lock entry.
#[derive(Clone, Debug)]
pub struct Selected<'a> {
    pub project: &'a Project,
    pub dir: PathBuf,
    pub locked: Option<&'a LockedProject>,
}

/// The projects to build, in stack order. `is_dir` says whether a checkout exists (the only
/// thing looked at on disk).
pub fn select<'a>(
    stack: &'a Stack,
    selection: &Selection,
    lock: Option<&'a Lock>,
    is_dir: impl Fn(&Path) -> bool,
) -> Result<Vec<Selected<'a>>, Error> {
    let mut selected = Vec::new();
    for project in stack.projects.values() {
        let default_dir = selection.root.value.join(&project.checkout_dir);
        let named = selection.dirs.get(&project.name);
        let build = selection.build.get(&project.name);
        let dir = named.map_or_else(|| default_dir.clone(), |d| d.value.clone());
        let exists = is_dir(&dir);
        // A typo in a directory flag must not quietly drop a project from the build.
        if let Some(named) = named
            && !exists
            && build.is_none_or(|b| b.value)
        {
            return Err(Error::NotADirectory {
                flag: named.source.to_string(),
                dir,
                default: default_dir,
            });
        }
        match build {
            Some(Sourced {
                value: true,
                source,
            }) if !exists => {
                return Err(Error::NoCheckout {
                    flag: source.to_string(),
                    project: project.name.clone(),
                    dir,
                });
            }
            Some(Sourced { value: false, .. }) => continue,
            _ if !exists => continue,
            _ => {}
        }
        selected.push(Selected {
            project,
            dir,
            locked: lock.and_then(|l| l.projects.get(&project.name)),
        });
    }
    if selected.is_empty() {
        let dirs: Vec<&str> = stack
            .projects
            .values()
            .map(|p| p.checkout_dir.as_str())
            .collect();
        return Err(Error::NothingToBuild {
            root: selection.root.value.clone(),
            dirs: dirs.join(", "),
        });
    }
    Ok(selected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sourced::Source;

    fn selection() -> Selection {
        Selection {
            root: Sourced {
                value: PathBuf::from("/src"),
                source: Source::Inferred("the working directory".into()),
            },
            dirs: BTreeMap::new(),
            build: BTreeMap::new(),
        }
    }

    fn flag<T>(value: T, flag: &str) -> Sourced<T> {
        Sourced {
            value,
            source: Source::Flag(flag.into()),
        }
    }

    fn names(selected: &[Selected<'_>]) -> Vec<String> {
        selected.iter().map(|s| s.project.name.clone()).collect()
    }

    #[test]
    fn defaults_follow_the_checkouts_and_flags_override() {
        let stack = Stack::load(None).expect("stack");
        let exists = |dirs: &'static [&'static str]| {
            move |dir: &Path| dirs.iter().any(|d| dir == Path::new(d))
        };
        let present = exists(&["/src/pytorch", "/src/triton", "/elsewhere/vision"]);
        assert_eq!(
            names(&select(&stack, &selection(), None, present).expect("selects")),
            ["torch", "triton"]
        );
        let mut chosen = selection();
        chosen.dirs.insert(
            "vision".into(),
            flag("/elsewhere/vision".into(), "--dir vision"),
        );
        chosen
            .build
            .insert("triton".into(), flag(false, "--skip triton"));
        let selected = select(&stack, &chosen, None, present).expect("selects");
        assert_eq!(names(&selected), ["torch", "vision"]);
        assert_eq!(selected[1].dir, Path::new("/elsewhere/vision"));

        // A named directory that does not exist, a project asked for without a checkout,
        // and no checkouts at all are errors.
        let mut typo = selection();
        typo.dirs
            .insert("torch".into(), flag("/typo".into(), "--pytorch-dir"));
        assert_eq!(
            select(&stack, &typo, None, present)
                .expect_err("typo")
                .to_string(),
            "--pytorch-dir: /typo is not a directory: check the path, or drop the flag to use /src/pytorch"
        );
        let mut wanted = selection();
        wanted
            .build
            .insert("apex".into(), flag(true, "--build-apex"));
        assert_eq!(
            select(&stack, &wanted, None, present)
                .expect_err("no apex")
                .to_string(),
            "--build-apex: no apex checkout at /src/apex: run `rockbuild checkout`, or point at it with --root-checkout-dir or --dir apex=DIR"
        );
        assert_eq!(
            select(&stack, &selection(), None, exists(&[]))
                .expect_err("nothing")
                .to_string(),
            "nothing to build: no checkouts in /src (looked for pytorch, pytorch_audio, pytorch_vision, triton, apex); run `rockbuild checkout --root-checkout-dir /src` first"
        );
    }
}
