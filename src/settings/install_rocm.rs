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
}

impl InstallRocmSettings {
    pub fn resolve(args: InstallRocmArgs, ctx: &Context) -> anyhow::Result<Self> {
        let InstallRocmArgs {
            mut sdk,
            lock,
            output_dir,
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
            // The SDK comes from where the lock's was installed from, as verify and promote
            // read it, unless the command line names an index.
            let given = sdk
                .index_url
                .as_deref()
                .is_some_and(|url| !url.trim().is_empty());
            if !given && let Some(url) = lock.sdk_index_url() {
                ctx.ui.status(format!(
                    "--index-url from the lock {}: {}",
                    path.display(),
                    crate::redact::redact_url(&url)
                ));
                sdk.index_url = Some(url);
            }
        }
        let locked = match &lock {
            Some((_, lock)) => lock.sdk_version()?,
            None => None,
        };
        let install = install_settings(ctx, &sdk, venv, log, locked)?;
        Ok(InstallRocmSettings { install, lock })
    }
}
