use crate::cli::IndexArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: IndexArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild index` is not implemented yet")
}
