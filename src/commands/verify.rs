use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: VerifyArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild verify` is not implemented yet")
}
