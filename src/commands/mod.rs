//! One module per verb. Each exposes `run(args, &Context) -> anyhow::Result<ExitStatus>` and
//! only wires stages together; the domain logic lives in the stage modules.

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

pub fn run(command: Command, ctx: &Context) -> anyhow::Result<ExitStatus> {
    match command {
        Command::Checkout(args) => checkout::run(args, ctx),
        Command::Lock(args) => lock::run(args, ctx),
        Command::Presets(args) => presets::run(args, ctx),
        Command::InstallRocm(args) => install_rocm::run(args, ctx),
        Command::Build(args) => build::run(args, ctx),
        Command::Plan(args) => build::plan(args, ctx),
        Command::Verify(args) => verify::run(args, ctx),
        Command::Stage(args) => stage::run(args, ctx),
        Command::Index(args) => index::run(args, ctx),
        Command::Smoke(args) => smoke::run(args, ctx),
        Command::Promote(args) => promote::run(args, ctx),
        Command::Detect(args) => detect::run(args, ctx),
        Command::Doctor(args) => doctor::run(args, ctx),
        Command::Compat(args) => compat::run(args, ctx),
        Command::Retag(args) => retag::run(args, ctx),
        Command::Matrix(args) => matrix::run(args, ctx),
        Command::Test(args) => test::run(args, ctx),
        Command::TestReport(args) => test_report::run(args, ctx),
        Command::Ci(command) => ci::run(command, ctx),
    }
}
