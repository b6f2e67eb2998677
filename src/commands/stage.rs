use crate::cli::StageArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: StageArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild stage` is not implemented yet")
}
