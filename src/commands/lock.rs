use crate::cli::LockArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: LockArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild lock` is not implemented yet")
}
