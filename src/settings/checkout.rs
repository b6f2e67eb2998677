//! Settings of `checkout`: the selection it shares with `lock` (see [`super::lock`]), where
//! each project's tree goes, and what is done to the trees.

use std::path::PathBuf;

use crate::checkout::{Selection, TreeOptions};
use crate::cli::{CheckoutArgs, flag};
use crate::context::Context;

#[derive(Debug)]
pub struct CheckoutSettings {
    pub selection: Selection,
    pub options: TreeOptions,
    pub lock_path: PathBuf,
    pub dry_run: bool,
    pub json: bool,
    pub report: Option<PathBuf>,
}

impl CheckoutSettings {
    pub fn resolve(args: CheckoutArgs, ctx: &Context) -> anyhow::Result<Self> {
        let CheckoutArgs {
            selection,
            root_checkout_dir,
            checkout_dir,
            hipify,
            no_hipify,
            commit_hipify,
            no_commit_hipify,
            python,
            force,
            strict,
            lock,
            dry_run,
            json,
            report,
        } = args;
        let (root, single_dir) = match (&root_checkout_dir, &checkout_dir) {
            (_, Some(dir)) => {
                let dir = ctx.absolute(dir);
                let root = dir.parent().map_or_else(|| ctx.cwd.clone(), PathBuf::from);
                (root, Some(dir))
            }
            (Some(root), None) => (ctx.absolute(root), None),
            (None, None) => (ctx.cwd.clone(), None),
        };
        let lock_path = lock.map_or_else(
            || super::lock::default_lock_path(&root),
            |l| ctx.absolute(&l),
        );
        let selection = super::lock::resolve_selection(selection, &root, &lock_path, ctx)?;
        if single_dir.is_some() && selection.projects.len() != 1 {
            return Err(crate::exit::usage(
                "--checkout-dir names the directory of one project: pass exactly one --project with it",
            ));
        }
        let dirs = selection
            .projects
            .iter()
            .map(|name| {
                let dir = single_dir
                    .clone()
                    .unwrap_or_else(|| root.join(&selection.stack.projects[name].checkout_dir));
                (name.clone(), dir)
            })
            .collect();
        Ok(CheckoutSettings {
            options: TreeOptions {
                dirs,
                hipify: flag(hipify, no_hipify).unwrap_or(true),
                commit_hipify: flag(commit_hipify, no_commit_hipify).unwrap_or(true),
                python: python.unwrap_or_else(|| PathBuf::from("python3")),
                force,
                strict,
            },
            lock_path,
            selection,
            dry_run,
            json,
            report: report.map(|r| ctx.absolute(&r)),
        })
    }
}
