use crate::cli::SmokeArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: SmokeArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild smoke` is not implemented yet")
}
