//! `rockbuild compat` settings: what to probe (a venv or wheels), the stack, the lock.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::build::recipes::Recipes;
use crate::cli::CompatArgs;
use crate::compat::Error;
use crate::context::Context;
use crate::lock::Lock;

/// What to look at.
pub enum Subject {
    Venv(PathBuf),
    Wheels(Vec<PathBuf>),
}

pub struct CompatSettings {
    pub subject: Subject,
    /// By project of the stack: the normalized names its wheel goes by, the stack's first,
    /// then upstream's (`pytorch-triton-rocm` for triton).
    pub names: BTreeMap<String, Vec<String>>,
    pub lock: Option<(PathBuf, Lock)>,
    pub json: bool,
}

impl CompatSettings {
    pub fn resolve(args: CompatArgs, ctx: &Context) -> anyhow::Result<Self> {
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
            names: Recipes::builtin().distribution_names(&stack)?,
            lock,
            json,
        })
    }

    /// Every normalized distribution name of the stack's projects (whose libraries are read).
    pub fn distributions(&self) -> Vec<String> {
        self.names.values().flatten().cloned().collect()
    }
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
