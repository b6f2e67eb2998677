//! What the build knows about the ROCm SDK: the installed one (checked against the lock and
//! the spec) or, for a plan that runs nothing, what can be known without installing it.

use std::path::PathBuf;

use super::recipes::SdkFacts;
use crate::exit;
use crate::sdk::{self, SdkInfo, Venv, preflight};

/// What a plan can know about the SDK without running anything: the record install-rocm left
/// in the venv, else the version from the lock, an exact `--rocm-sdk-version`, or the venv's
/// installed `rocm`, with placeholder paths.
pub fn planned(
    venv: &Venv,
    locked: Option<String>,
    spec_text: &str,
    installing: bool,
    notes: &mut Vec<String>,
) -> anyhow::Result<SdkFacts> {
    if !installing && let Some(info) = SdkInfo::read_record(venv) {
        return Ok(SdkFacts { info, known: true });
    }
    let spec = preflight::parse_spec(spec_text)?;
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
        return Err(exit::usage(format!(
            "cannot plan versions: the ROCm SDK version is unknown ({} and --rocm-sdk-version `{spec_text}` is not an exact pin); install the SDK first (`rockbuild install-rocm`), or pass --rocm-sdk-version ==VERSION",
            if installing {
                "--install-rocm decides it at run time".to_string()
            } else {
                format!("no rocm installed in {}", venv.dir.display())
            }
        )));
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
    })
}

/// The installed SDK must be the locked one (TheRock#4824) and match the spec.
pub fn check_installed(
    info: &SdkInfo,
    locked: Option<String>,
    spec_text: &str,
    installed_now: bool,
    venv: &Venv,
) -> anyhow::Result<()> {
    if let Some(locked) = locked
        && crate::version::normalize("the lock's sdk_version", &locked)? != info.version
    {
        return Err(exit::usage(format!(
            "the venv {} has rocm {}, but the lock records rocm {locked}: run `rockbuild install-rocm --lock <lock>` (or build with --install-rocm) to install the locked SDK",
            venv.dir.display(),
            info.version
        )));
    }
    let spec = preflight::parse_spec(spec_text)?;
    let version: pep440_rs::Version = crate::version::parse("rocm", &info.version)?;
    if !installed_now && !spec.contains(&version) {
        return Err(exit::usage(format!(
            "the venv {} has rocm {}, which --rocm-sdk-version `{spec_text}` excludes: add --install-rocm to install a matching SDK",
            venv.dir.display(),
            info.version
        )));
    }
    Ok(())
}
