use crate::cli::CheckoutArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: CheckoutArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild checkout` is not implemented yet")
}
