//! `rockbuild compat` settings: what to probe (a venv or wheels), the stack, the lock.

use std::path::PathBuf;

use crate::cli::CompatArgs;
use crate::compat::{Column, Error};
use crate::context::Context;
use crate::lock::Lock;
use crate::recipes::Recipes;
use crate::stack::Stack;

/// What to look at.
pub enum Subject {
    Venv(PathBuf),
    Wheels(Vec<PathBuf>),
}

pub struct CompatSettings {
    pub subject: Subject,
    /// The stack's projects as the report lists them, with the normalized names each one's
    /// wheel goes by (the stack's first, then upstream's: `pytorch-triton-rocm` for triton).
    pub columns: Vec<Column>,
    pub lock: Option<(PathBuf, Lock)>,
    pub json: bool,
}

impl CompatSettings {
    pub fn resolve(args: CompatArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<Self> {
        let CompatArgs {
            paths,
            lock,
            config,
            json,
        } = args;
        let paths: Vec<PathBuf> = paths.iter().map(|p| ctx.absolute(p)).collect();
        let lock = match lock {
            Some(path) => {
                let path = ctx.absolute(&path);
                let lock = Lock::read(&path)?;
                Some((path, lock))
            }
            None => None,
        };
        let stack = config.stack(ctx)?;
        Ok(CompatSettings {
            subject: subject(paths)?,
            columns: columns(&stack, recipes)?,
            lock,
            json,
        })
    }

    /// Every normalized distribution name of the stack's projects (whose libraries are read).
    pub fn distributions(&self) -> Vec<String> {
        self.columns
            .iter()
            .flat_map(|c| c.distributions.iter().cloned())
            .collect()
    }
}

/// The report's columns: every project of the stack that makes a wheel, in its order, named
/// by its recipe.
pub fn columns(stack: &Stack, recipes: &Recipes) -> Result<Vec<Column>, crate::recipes::Error> {
    let mut names = recipes.distribution_names(stack)?;
    recipes
        .wheel_projects(stack)?
        .into_iter()
        .map(|project| {
            let recipe = recipes.of(stack, project)?;
            Ok(Column {
                name: recipe
                    .compat_column()
                    .or(project.wheel.as_deref())
                    .unwrap_or(&project.name)
                    .to_string(),
                project: project.name.clone(),
                distributions: names.remove(&project.name).unwrap_or_default(),
            })
        })
        .collect()
}

/// One venv (a directory with pyvenv.cfg), or wheels and directories of wheels.
fn subject(paths: Vec<PathBuf>) -> Result<Subject, Error> {
    if let [only] = paths.as_slice()
        && only.join("pyvenv.cfg").is_file()
    {
        return Ok(Subject::Venv(only.clone()));
    }
    let mut wheels = Vec::new();
    for path in &paths {
        if path.is_dir() {
            let entries = fs_err::read_dir(path).map_err(|e| Error::Read {
                path: path.display().to_string(),
                detail: e.to_string(),
            })?;
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "whl"))
                .collect();
            if found.is_empty() {
                return Err(Error::NotAStack {
                    path: path.display().to_string(),
                });
            }
            found.sort();
            wheels.extend(found);
        } else if path.extension().is_some_and(|e| e == "whl") && path.is_file() {
            wheels.push(path.clone());
        } else {
            return Err(Error::NotAStack {
                path: path.display().to_string(),
            });
        }
    }
    Ok(Subject::Wheels(wheels))
}
