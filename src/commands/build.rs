use crate::cli::BuildArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: BuildArgs, _ctx: &Context, _plan_only: bool) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild build` is not implemented yet")
}
