//! What the build knows about the ROCm SDK: the installed one (installed now with
//! `--install-rocm`, checked against the lock and the spec) or, for a plan that runs nothing,
//! what can be known without installing it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::error::Error;
use crate::build::input::BuildSettings;
use crate::context::Context;
use crate::recipes::SdkFacts;
use crate::sdk::{self, SdkInfo, Venv, preflight};

/// The SDK facts the plan needs: for a dry run what is known without running anything; for a
/// build the SDK installed now (`--install-rocm`) or already in the venv. `dirs` are the
/// optional SDK directories the recipes look for.
pub fn obtain(
    ctx: &Context,
    settings: &BuildSettings,
    dirs: &[&str],
    notes: &mut Vec<String>,
) -> anyhow::Result<SdkFacts> {
    let sdk = &settings.sdk;
    let locked = sdk.locked_version.as_ref().map(ToString::to_string);
    if settings.dry_run {
        return Ok(planned(
            &sdk.venv,
            locked,
            &sdk.spec_text,
            sdk.install.is_some(),
            dirs,
            notes,
        )?);
    }
    let info = match &sdk.install {
        Some(install) => {
            let installed =
                sdk::install::install(&ctx.runner, install, &|line| ctx.ui.status(line))?;
            ctx.ui.status(format!(
                "installed rocm {} in {:.0}s",
                installed.sdk.version,
                installed.duration.as_secs_f64()
            ));
            installed.sdk
        }
        None => sdk::query(&ctx.runner, &sdk.venv)?,
    };
    check_installed(
        &info,
        locked,
        &sdk.spec_text,
        sdk.install.is_some(),
        &sdk.venv,
    )?;
    Ok(SdkFacts {
        dirs: present(&info, dirs),
        info,
        known: true,
    })
}

/// Which of `dirs` the SDK root has.
fn present(info: &SdkInfo, dirs: &[&str]) -> BTreeSet<String> {
    dirs.iter()
        .filter(|d| info.root.join(d).is_dir())
        .map(|d| d.to_string())
        .collect()
}

/// What a plan can know about the SDK without running anything: the record install-rocm left
/// in the venv, else the version from the lock, an exact `--rocm-sdk-version`, or the venv's
/// installed `rocm`, with placeholder paths.
fn planned(
    venv: &Venv,
    locked: Option<String>,
    spec_text: &str,
    installing: bool,
    dirs: &[&str],
    notes: &mut Vec<String>,
) -> Result<SdkFacts, Error> {
    if !installing && let Some(info) = SdkInfo::read_record(venv) {
        return Ok(SdkFacts {
            dirs: present(&info, dirs),
            info,
            known: true,
        });
    }
    let spec = preflight::parse_spec(spec_text).map_err(Error::SdkSpec)?;
    let (version, from) = if let Some(version) = locked {
        (version, "the lock")
    } else if let Some(pin) = preflight::exact_pin(&spec) {
        (pin.to_string(), "--rocm-sdk-version")
    } else if let Some(installed) = venv
        .installed_version(sdk::ROCM_DIST)
        .filter(|_| !installing)
    {
        (installed, "the venv's installed rocm")
    } else {
        return Err(Error::SdkVersionUnknown {
            why: if installing {
                "--install-rocm decides it at run time".to_string()
            } else {
                format!("no rocm installed in {}", venv.dir.display())
            },
            spec: spec_text.to_string(),
        });
    };
    let version = crate::version::normalize("the ROCm SDK version", &version)?;
    let root = PathBuf::from("<rocm-sdk root>");
    notes.push(format!(
        "the ROCm SDK is {} in {}: SDK paths are placeholders; rocm {version} from {from}",
        if installing {
            "installed by this build"
        } else {
            "not installed"
        },
        venv.dir.display()
    ));
    Ok(SdkFacts {
        info: SdkInfo {
            version,
            bin: root.join("bin"),
            cmake: root.join("lib/cmake"),
            root,
            targets: Vec::new(),
            python: venv
                .python_version()
                .unwrap_or_else(|| "<venv python>".into()),
        },
        known: false,
        dirs: BTreeSet::new(),
    })
}

/// The installed SDK must be the locked one (TheRock#4824) and match the spec.
fn check_installed(
    info: &SdkInfo,
    locked: Option<String>,
    spec_text: &str,
    installed_now: bool,
    venv: &Venv,
) -> Result<(), Error> {
    if let Some(locked) = locked
        && crate::version::normalize("the lock's sdk_version", &locked)? != info.version
    {
        return Err(Error::SdkNotLocked {
            venv: venv.dir.clone(),
            installed: info.version.clone(),
            locked,
        });
    }
    let spec = preflight::parse_spec(spec_text).map_err(Error::SdkSpec)?;
    let version: pep440_rs::Version = crate::version::parse("rocm", &info.version)?;
    if !installed_now && !spec.contains(&version) {
        return Err(Error::SdkExcluded {
            venv: venv.dir.clone(),
            installed: info.version.clone(),
            spec: spec_text.to_string(),
        });
    }
    Ok(())
}
