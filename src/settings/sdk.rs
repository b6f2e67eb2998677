//! The SDK settings `install-rocm` and `build --install-rocm` share: which venv, and how to
//! install the ROCm SDK into it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pep440_rs::Version;

use crate::cli::{SdkArgs, flag};
use crate::context::Context;
use crate::env_vars;
use crate::index::client::Waits;
use crate::lock::Lock;
use crate::sdk::install::{InstallSettings, parse_extras};
use crate::sdk::{self, Venv, preflight};

/// `--venv`, else the active `$VIRTUAL_ENV`, else `<output-dir>/venv`.
pub fn resolve_venv(
    ctx: &Context,
    venv: Option<&Path>,
    output_dir: Option<&Path>,
) -> anyhow::Result<Venv> {
    if let Some(dir) = venv {
        return Ok(Venv::new(ctx.absolute(dir)));
    }
    if let Some(active) = ctx.env().non_empty(env_vars::VIRTUAL_ENV) {
        return Ok(Venv::new(PathBuf::from(active)));
    }
    match output_dir {
        Some(output) => Ok(Venv::new(output.join("venv"))),
        None => Err(sdk::Error::NoVenvGiven.into()),
    }
}

/// A lock that names an SDK version: `--rocm-sdk-version` must admit it (drift is refused,
/// naming both). Every caller of [`install_settings`] with a lock checks this first.
pub fn expect_locked_sdk(lock: &Lock, path: &Path, args: &SdkArgs) -> anyhow::Result<()> {
    let spec = preflight::parse_spec(&args.rocm_sdk_version)?;
    lock.expect_sdk(
        path,
        "--rocm-sdk-version",
        &args.rocm_sdk_version,
        |locked| locked.parse::<Version>().is_ok_and(|v| spec.contains(&v)),
    )?;
    Ok(())
}

/// Resolves the SDK flags shared by `install-rocm` and `build --install-rocm`.
pub fn install_settings(
    ctx: &Context,
    args: &SdkArgs,
    venv: Venv,
    log: PathBuf,
    locked: Option<Version>,
) -> anyhow::Result<InstallSettings> {
    let SdkArgs {
        venv: _,
        index_url,
        find_links,
        pip_cache_dir: _,
        rocm_sdk_version,
        pre,
        no_pre,
        rocm_extras,
        installer,
        python,
        index_timeout,
        index_retries,
    } = args;
    let spec = preflight::parse_spec(rocm_sdk_version)?;
    let pre = flag(*pre, *no_pre).unwrap_or(true);
    let extras = parse_extras(rocm_extras.as_deref())?;
    let cache_dir = args.cache_dir(ctx);
    let non_empty = |value: &Option<String>| value.clone().filter(|v| !v.trim().is_empty());
    Ok(InstallSettings {
        venv,
        base_python: python
            .as_deref()
            .map_or_else(|| PathBuf::from("python3"), |p| ctx.absolute(p)),
        installer: *installer,
        index_url: super::detect::auto_index_url(ctx, non_empty(index_url))?,
        find_links: non_empty(find_links).map(|links| absolute_links(ctx, &links)),
        cache_dir,
        spec_text: rocm_sdk_version.clone(),
        spec,
        pre,
        extras,
        locked_version: locked,
        log,
        waits: Waits {
            timeout: Duration::from_secs((*index_timeout).max(1)),
            attempts: index_retries.saturating_add(1),
        },
    })
}

/// A relative find-links directory is relative to where rockbuild was started.
fn absolute_links(ctx: &Context, links: &str) -> String {
    if links.contains("://") {
        links.to_string()
    } else {
        ctx.absolute(Path::new(links)).display().to_string()
    }
}
