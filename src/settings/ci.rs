//! `ci generate`: the two tables the workflows come from and where they are written.

use std::path::PathBuf;

use crate::build::mode::ModeChoice;
use crate::ci::releases::ReleaseTable;
use crate::cli::CiGenerateArgs;
use crate::context::Context;
use crate::stack::{FamilyTable, IndexLayout};

pub struct CiGenerateSettings {
    pub families: FamilyTable,
    pub releases: ReleaseTable,
    pub output_dir: PathBuf,
    pub mode: Mode,
    /// Per-family chains, or multi-arch sets (`--multi-arch`, or a family table whose index
    /// layout is multi-arch).
    pub chains: ModeChoice,
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
            multi_arch,
        } = args;
        let (families, releases) = super::matrix::load_tables(ctx, families, releases)?;
        let chains = ModeChoice::resolve(
            multi_arch,
            families.index_layout() == IndexLayout::MultiArch,
            None,
        );
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
            chains,
        })
    }
}
