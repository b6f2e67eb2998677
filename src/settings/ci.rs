//! `ci generate`: the two tables the workflows come from and where they are written.

use std::path::PathBuf;

use crate::ci::releases::ReleaseTable;
use crate::cli::CiGenerateArgs;
use crate::context::Context;
use crate::stack::FamilyTable;

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
        let (families, releases) = super::matrix::load_tables(ctx, families, releases)?;
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
