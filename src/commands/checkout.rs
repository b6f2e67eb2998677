//! `rockbuild checkout`: resolve settings, run the checkout stage.

use std::path::PathBuf;

use crate::checkout::{self, Settings};
use crate::cli::{CheckoutArgs, flag};
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(args: CheckoutArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
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
        lock,
    } = args;
    let depth = selection.depth;
    if let Some(0) = depth {
        return Err(crate::exit::usage("--depth must be at least 1"));
    }
    let (root, single_dir) = match (&root_checkout_dir, &checkout_dir) {
        (_, Some(dir)) => {
            let dir = ctx.absolute(dir);
            let root = dir.parent().map_or_else(|| ctx.cwd.clone(), PathBuf::from);
            (root, Some(dir))
        }
        (Some(root), None) => (ctx.absolute(root), None),
        (None, None) => (ctx.cwd.clone(), None),
    };
    let selection = super::lock::resolve_selection(selection, &root, lock.as_deref(), ctx)?;
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
    let settings = Settings {
        selection,
        dirs,
        depth,
        hipify: flag(hipify, no_hipify).unwrap_or(true),
        commit_hipify: flag(commit_hipify, no_commit_hipify).unwrap_or(true),
        python: python.unwrap_or_else(|| PathBuf::from("python3")),
        force,
    };
    checkout::run(&settings, ctx)
}
