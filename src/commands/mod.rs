//! One module per verb. Each exposes `run(args, &Context) -> anyhow::Result<ExitStatus>` (and
//! `&Recipes` when it asks about projects) and only wires stages together; the domain logic
//! lives in the stage modules.

pub mod build;
mod checkout;
mod ci;
mod compat;
mod detect;
mod doctor;
mod index;
mod install_rocm;
mod lock;
mod matrix;
mod presets;
mod promote;
mod retag;
mod smoke;
mod stage;
mod test;
mod test_report;
mod verify;

use crate::cli::Command;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::recipes::Recipes;

/// Runs one verb with `recipes`, the registry of what rockbuild knows of each project: the
/// one value every stage that asks about a project gets (built once, in `main`).
pub fn run(command: Command, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    match command {
        Command::Checkout(args) => checkout::run(args, ctx, recipes),
        Command::Lock(args) => lock::run(args, ctx, recipes),
        Command::Presets(args) => presets::run(args, ctx),
        Command::InstallRocm(args) => install_rocm::run(args, ctx),
        Command::Build(args) => build::run(args, ctx, recipes),
        Command::Plan(args) => build::plan(args, ctx, recipes),
        Command::Verify(args) => verify::run(args, ctx, recipes),
        Command::Stage(args) => stage::run(args, ctx, recipes),
        Command::Index(args) => index::run(args, ctx),
        Command::Smoke(args) => smoke::run(args, ctx),
        Command::Promote(args) => promote::run(args, ctx),
        Command::Detect(args) => detect::run(args, ctx),
        Command::Doctor(args) => doctor::run(args, ctx),
        Command::Compat(args) => compat::run(args, ctx, recipes),
        Command::Retag(args) => retag::run(args, ctx),
        Command::Matrix(args) => matrix::run(args, ctx),
        Command::Test(args) => test::run(args, ctx),
        Command::TestReport(args) => test_report::run(args, ctx),
        Command::Ci(command) => ci::run(command, ctx),
    }
}
