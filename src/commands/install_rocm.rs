use crate::cli::InstallRocmArgs;
use crate::context::Context;
use crate::exit::ExitStatus;

pub fn run(_args: InstallRocmArgs, _ctx: &Context) -> anyhow::Result<ExitStatus> {
    anyhow::bail!("`rockbuild install-rocm` is not implemented yet")
}
