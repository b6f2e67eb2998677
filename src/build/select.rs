//! Which projects a build covers: torch whenever its checkout exists, the others when their
//! `--build-…` flag says so or, without one, when their checkout exists (the reference's
//! defaults). A checkout directory named explicitly must exist.

use std::path::{Path, PathBuf};

use super::plan::Selected;
use crate::exit;
use crate::lock::Lock;
use crate::stack::{RecipeKind, Stack};

/// What the command line says about one project.
pub struct Choice {
    /// `--<project>-dir`, made absolute; `None`: `<root>/<checkout dir>`.
    pub dir: Option<PathBuf>,
    pub dir_flag: &'static str,
    /// `--build-…` / `--no-build-…`; `None`: build when the checkout exists.
    pub build: Option<bool>,
    pub build_flag: &'static str,
}

/// The projects to build, in stack order, with their checkouts and locked pins.
pub fn select<'a>(
    stack: &'a Stack,
    root: &Path,
    lock: Option<&'a Lock>,
    choice: impl Fn(RecipeKind) -> Choice,
) -> anyhow::Result<Vec<Selected<'a>>> {
    let mut selected = Vec::new();
    for project in stack.projects.values() {
        let Choice {
            dir,
            dir_flag,
            build,
            build_flag,
        } = choice(project.recipe);
        let default_dir = root.join(&project.checkout_dir);
        let named = dir.is_some();
        let dir = dir.unwrap_or_else(|| default_dir.clone());
        let exists = dir.is_dir();
        // A typo in a directory flag must not quietly drop a project from the build.
        if named && !exists && build != Some(false) {
            return Err(exit::usage(format!(
                "{dir_flag}: {} is not a directory: check the path, or drop the flag to use {}",
                dir.display(),
                default_dir.display()
            )));
        }
        match build {
            Some(true) if !exists => {
                return Err(exit::usage(format!(
                    "{build_flag}: no {} checkout at {}: run `rockbuild checkout`, or point at it with --root-checkout-dir or {dir_flag}",
                    project.name,
                    dir.display()
                )));
            }
            Some(false) => continue,
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
        return Err(exit::usage(format!(
            "nothing to build: no checkouts in {} (looked for {}); run `rockbuild checkout --root-checkout-dir {}` first",
            root.display(),
            dirs.join(", "),
            root.display()
        )));
    }
    Ok(selected)
}
