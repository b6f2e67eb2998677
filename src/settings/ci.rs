//! `ci generate`: the two tables the workflows come from and where they are written.

use std::path::PathBuf;

use crate::ci::Error;
use crate::ci::releases::{DEFAULT_RELEASES, ReleaseTable};
use crate::cli::CiGenerateArgs;
use crate::context::Context;
use crate::stack::{ConfigSource, FamilyTable};

pub struct CiGenerateSettings {
    pub families: FamilyTable,
    pub releases: ReleaseTable,
    pub output_dir: PathBuf,
    pub mode: Mode,
}

/// What `ci generate` does with the workflows it computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Write,
    Check,
    DryRun { json: bool },
}

impl CiGenerateSettings {
    pub fn resolve(args: CiGenerateArgs, ctx: &Context) -> anyhow::Result<Self> {
        let CiGenerateArgs {
            output_dir,
            check,
            dry_run,
            json,
            families,
            releases,
        } = args;
        let families =
            crate::stack::load_families(families.as_deref().map(|p| ctx.absolute(p)).as_deref())?;
        let source = match releases {
            Some(path) => ConfigSource::read(&ctx.absolute(&path))?,
            None => ConfigSource::embedded("configs/releases.yaml", DEFAULT_RELEASES),
        };
        let releases = ReleaseTable::load(&source, &families).map_err(Error::from)?;
        let mode = match (check, dry_run) {
            (true, _) => Mode::Check,
            (false, true) => Mode::DryRun { json },
            (false, false) => Mode::Write,
        };
        Ok(CiGenerateSettings {
            families,
            releases,
            output_dir: ctx.absolute(&output_dir),
            mode,
        })
    }
}
