//! `install-rocm`: the SDK flags, the venv, the log, and the lock whose SDK the install must
//! match and where the installed SDK is recorded.

use std::path::PathBuf;

use super::sdk::{expect_locked_sdk, install_settings, resolve_venv};
use crate::cli::InstallRocmArgs;
use crate::context::Context;
use crate::lock::Lock;
use crate::sdk::install::InstallSettings;

pub struct InstallRocmSettings {
    pub install: InstallSettings,
    /// The lock to check against and record into, with its path.
    pub lock: Option<(PathBuf, Lock)>,
    /// Print the plan and stop.
    pub dry_run: bool,
}

impl InstallRocmSettings {
    pub fn resolve(args: InstallRocmArgs, ctx: &Context) -> anyhow::Result<Self> {
        let InstallRocmArgs {
            sdk,
            lock,
            output_dir,
            dry_run,
        } = args;
        let lock = super::read_lock(ctx, lock)?;
        let output_dir = output_dir.map(|p| ctx.absolute(&p));
        let venv = resolve_venv(ctx, sdk.venv.as_deref(), output_dir.as_deref())?;
        let log = match &output_dir {
            Some(output) => output.join("logs/install-rocm.log"),
            None => venv.dir.join("rockbuild-install-rocm.log"),
        };
        if let Some((path, lock)) = &lock {
            expect_locked_sdk(lock, path, &sdk)?;
        }
        let locked = match &lock {
            Some((_, lock)) => lock.sdk_version()?,
            None => None,
        };
        let install = install_settings(ctx, &sdk, venv, log, locked)?;
        Ok(InstallRocmSettings {
            install,
            lock,
            dry_run,
        })
    }
}
