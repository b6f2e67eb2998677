//! `rockbuild install-rocm`: the ROCm SDK into a venv (see `sdk::install`), recorded in the
//! lock when one is given.

use crate::cli::InstallRocmArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::lock::Lock;
use crate::sdk;
use crate::settings::sdk::{expect_locked_sdk, install_settings, resolve_venv};

pub fn run(args: InstallRocmArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let InstallRocmArgs {
        sdk: sdk_args,
        lock,
        output_dir,
    } = args;
    let lock_path = lock.map(|p| ctx.absolute(&p));
    let mut lock = lock_path.as_deref().map(Lock::read).transpose()?;
    let output_dir = output_dir.map(|p| ctx.absolute(&p));
    let venv = resolve_venv(ctx, sdk_args.venv.as_deref(), output_dir.as_deref())?;
    let log = match &output_dir {
        Some(output) => output.join("logs/install-rocm.log"),
        None => venv.dir.join("rockbuild-install-rocm.log"),
    };
    if let (Some(lock), Some(path)) = (&lock, &lock_path) {
        expect_locked_sdk(lock, path, &sdk_args)?;
    }
    let locked = lock.as_ref().map(Lock::sdk_version).transpose()?.flatten();
    let settings = install_settings(ctx, &sdk_args, venv, log, locked)?;
    let installed = sdk::install::install(&ctx.runner, &settings, &|line| ctx.ui.status(line))?;
    let info = &installed.sdk;
    ctx.ui.status(format!(
        "installed rocm {} into {} in {:.0}s: root {}, SDK targets {}",
        info.version,
        settings.venv.dir.display(),
        installed.duration.as_secs_f64(),
        info.root.display(),
        if info.targets.is_empty() {
            "(none reported)".to_string()
        } else {
            info.targets.join(";")
        }
    ));
    if let (Some(lock), Some(path)) = (lock.as_mut(), lock_path.as_deref()) {
        lock.record_sdk(info, settings.index_url.as_deref());
        lock.write(path)?;
        ctx.ui.status(format!(
            "recorded rocm {} in {}",
            info.version,
            path.display()
        ));
    }
    Ok(ExitStatus::Success)
}
