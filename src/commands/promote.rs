use crate::cli::PromoteArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: PromoteArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild promote` is not implemented yet")
}
