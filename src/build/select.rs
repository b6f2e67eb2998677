//! Which projects a build covers: a project named by `--build` (or the reference's
//! `--build-…`) must have its checkout; one named by `--skip` (`--no-build-…`) is left out;
//! the others build when their checkout exists (the reference's default). `--build NAME`
//! (rockbuild's own flag, not the reference's) also narrows the build: the projects it does
//! not name are left out. A project left out is "what is there", never "nothing": the
//! inspection takes its wheel from the build cache ([`Role::LeftOut`]). A checkout
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
    /// `--build NAME` was given: the projects it does not name are left out.
    pub narrowed: bool,
}

/// Whether a selected project is built, or left out of this build and used as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Build,
    /// Left out: its wheel is taken from the build cache. `flag` says why (`--skip triton`,
    /// `--no-build-triton`, or `--build` naming others).
    LeftOut {
        flag: String,
        by: LeftOutBy,
    },
}

/// How a project came to be left out; it decides what happens when the build cache has no
/// wheel of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftOutBy {
    /// `--skip NAME` / `--no-build-…`: without a wheel to use it stays out, as the reference
    /// leaves it (nothing pins it).
    Skip,
    /// Not named by `--build`: without a wheel to use it is built after all.
    NotNamed,
}

/// A project selected for the build, with its checkout and lock entry.
#[derive(Clone, Debug)]
pub struct Selected<'a> {
    pub project: &'a Project,
    pub dir: PathBuf,
    pub locked: Option<&'a LockedProject>,
    pub role: Role,
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
    let narrowing: Vec<String> = selection
        .build
        .values()
        .filter(|b| b.value)
        .map(|b| b.source.to_string())
        .collect();
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
        let role = match build {
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
            _ if !exists => continue,
            Some(Sourced {
                value: false,
                source,
            }) => Role::LeftOut {
                flag: source.to_string(),
                by: LeftOutBy::Skip,
            },
            None if selection.narrowed => Role::LeftOut {
                flag: format!("not named by {}", narrowing.join(", ")),
                by: LeftOutBy::NotNamed,
            },
            _ => Role::Build,
        };
        selected.push(Selected {
            project,
            dir,
            locked: lock.and_then(|l| l.projects.get(&project.name)),
            role,
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
            narrowed: false,
        }
    }

    fn flag<T>(value: T, flag: &str) -> Sourced<T> {
        Sourced {
            value,
            source: Source::Flag(flag.into()),
        }
    }

    fn names(selected: &[Selected<'_>]) -> Vec<String> {
        selected
            .iter()
            .map(|s| match &s.role {
                Role::Build => s.project.name.clone(),
                Role::LeftOut { flag, .. } => format!("{} (left out: {flag})", s.project.name),
            })
            .collect()
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
        assert_eq!(
            names(&selected),
            ["torch", "vision", "triton (left out: --skip triton)"]
        );
        assert_eq!(selected[1].dir, Path::new("/elsewhere/vision"));

        // `--build NAME` narrows: the other checkouts are left out (used from the cache).
        chosen.narrowed = true;
        chosen
            .build
            .insert("vision".into(), flag(true, "--build vision"));
        chosen.build.remove("triton");
        assert_eq!(
            names(&select(&stack, &chosen, None, present).expect("selects")),
            [
                "torch (left out: not named by --build vision)",
                "vision",
                "triton (left out: not named by --build vision)"
            ]
        );

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
