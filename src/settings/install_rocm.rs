//! `install-rocm`: the SDK flags, the venv, the log, and the lock whose SDK the install must
//! match and where the installed SDK is recorded.

use std::path::PathBuf;

use super::sdk::{expect_locked_sdk, install_settings, resolve_venv};
use crate::build::mode::ModeChoice;
use crate::cli::InstallRocmArgs;
use crate::context::Context;
use crate::lock::{BuildMode, Lock};
use crate::sdk::install::InstallSettings;
use crate::stack::IndexKind;

pub struct InstallRocmSettings {
    pub install: InstallSettings,
    /// The lock to check against and record into, with its path.
    pub lock: Option<(PathBuf, Lock)>,
    /// The build mode the SDK's index says, for the lock's record (none: it says none).
    pub mode: Option<BuildMode>,
    /// Print the plan and stop.
    pub dry_run: bool,
}

impl InstallRocmSettings {
    pub fn resolve(args: InstallRocmArgs, ctx: &Context) -> anyhow::Result<Self> {
        let InstallRocmArgs {
            mut sdk,
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
        let mode = record_mode(&lock, install.index_url.as_deref())?;
        Ok(InstallRocmSettings {
            install,
            lock,
            mode,
            dry_run,
        })
    }
}

/// The mode the index the SDK comes from says ([`crate::stack::IndexKind`]): the SDK of a
/// multi-arch build comes from the multi-arch index. A lock whose record names built targets
/// has its mode already: an index of the other mode is an error.
fn record_mode(
    lock: &Option<(PathBuf, Lock)>,
    index_url: Option<&str>,
) -> anyhow::Result<Option<BuildMode>> {
    let Some(url) = index_url else {
        return Ok(None);
    };
    let families = crate::stack::load_families(None)?;
    let built = lock
        .as_ref()
        .and_then(|(_, lock)| lock.build.as_ref())
        .filter(|build| !build.targets.is_empty());
    if let Some(build) = built {
        ModeChoice::resolve(false, false, Some(build.mode)).with_index(
            &families,
            "--index-url",
            url,
            "the build the lock records",
        )?;
        return Ok(Some(build.mode));
    }
    Ok(match families.index_kind(url) {
        IndexKind::PerFamily { .. } => Some(BuildMode::PerFamily),
        IndexKind::MultiArch => Some(BuildMode::MultiArch),
        IndexKind::Unknown => None,
    })
}
