//! `rockbuild retag`: which wheels, which manylinux tag.

use std::path::PathBuf;

use crate::cli::RetagArgs;
use crate::context::Context;
use crate::wheel::retag::{RetagError, Target};

#[derive(Clone, Debug)]
pub struct RetagSettings {
    /// Wheels and directories, absolute.
    pub paths: Vec<PathBuf>,
    pub platform: Target,
    pub dry_run: bool,
    pub json: bool,
}

impl RetagSettings {
    pub fn resolve(args: RetagArgs, ctx: &Context) -> anyhow::Result<Self> {
        let RetagArgs {
            paths,
            platform,
            dry_run,
            json,
        } = args;
        let platform = Target::parse(platform.trim()).ok_or(RetagError::Platform(platform))?;
        Ok(RetagSettings {
            paths: paths.iter().map(|p| ctx.absolute(p)).collect(),
            platform,
            dry_run,
            json,
        })
    }
}
