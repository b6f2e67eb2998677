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
    /// Which tables were read, for the log.
    pub tables: String,
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
        // The generated workflows' `rockbuild matrix` reads the repository's configs/ (the
        // matrix job checks it out): so does `ci generate` run in that repository, so that a
        // table edit shows in what it writes and in `--check`.
        let mut read = Vec::new();
        let mut built_in = false;
        let mut repository_table = |given: Option<PathBuf>, path: &str| match given {
            Some(path) => {
                read.push(path.display().to_string());
                Some(path)
            }
            None if ctx.absolute(std::path::Path::new(path)).is_file() => {
                read.push(path.to_string());
                Some(PathBuf::from(path))
            }
            None => {
                read.push(format!("built-in {path}"));
                built_in = true;
                None
            }
        };
        let families = repository_table(families, "configs/families.yaml");
        let releases = repository_table(releases, "configs/releases.yaml");
        let mut tables = read.join(", ");
        if built_in {
            tables.push_str(
                " (no configs/ here: the generated workflows read the repository's configs/, so \
                 commit it beside them)",
            );
        }
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
            tables,
        })
    }
}
