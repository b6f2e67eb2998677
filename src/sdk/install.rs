//! Installing `rocm[libraries,devel,<extras>]` into a venv (F12), without the reference's weak
//! spots: the index is checked first ([`super::preflight`]), the installer gets the exact
//! version the preflight chose (so it cannot drift), the cache directory is rockbuild's own
//! (no `pip cache remove`, which fails in read-only containers and never touched downloaded
//! wheels anyway: TheRock#3378, #3294), and the result is verified against what was asked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pep440_rs::{Version, VersionSpecifiers};

use super::preflight::{self, IndexSource, Preflight};
use super::{Error, SdkInfo, Venv};
use crate::exec::{Cmd, Retry, Runner};
use crate::index::client::Waits;

/// pip's default index, used when neither --index-url nor --find-links is given. Passed
/// explicitly so the preflight reads the same index the installer uses.
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple";

/// Installer settings that would add or disable package sources. The SDK install reads exactly
/// the sources the preflight checked, so these are removed from its environment (W21).
pub const SOURCE_ENV_VARS: &[&str] = &[
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_NO_INDEX",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
];

/// The extras every build needs: runtime libraries and the development tree (headers,
/// CMake files, hipcc).
pub const BASE_EXTRAS: &[&str] = &["libraries", "devel"];

/// Package installer driving a venv.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Installer {
    Pip,
    Uv,
}

impl Installer {
    /// `pip install ...` / `uv pip install ...` into `venv`, with rockbuild's cache directory.
    pub fn install(self, venv: &Venv, cache_dir: &Path) -> Cmd {
        match self {
            Installer::Pip => Cmd::new(venv.python())
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--cache-dir",
                ])
                .arg(cache_dir),
            Installer::Uv => Cmd::new("uv")
                .args(["pip", "install", "--python"])
                .arg(venv.python())
                .arg("--cache-dir")
                .arg(cache_dir),
        }
    }

    /// `pip uninstall -y NAME...` / `uv pip uninstall NAME...` (absent packages are fine).
    pub fn uninstall(self, venv: &Venv, names: &[&str]) -> Cmd {
        let cmd = match self {
            Installer::Pip => Cmd::new(venv.python()).args([
                "-m",
                "pip",
                "uninstall",
                "--disable-pip-version-check",
                "-y",
            ]),
            Installer::Uv => Cmd::new("uv")
                .args(["pip", "uninstall", "--python"])
                .arg(venv.python()),
        };
        cmd.args(names.iter().copied())
    }

    /// The flag that reinstalls what is already there.
    pub fn reinstall_flag(self) -> &'static str {
        match self {
            Installer::Pip => "--force-reinstall",
            Installer::Uv => "--reinstall",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Installer::Pip => "pip",
            Installer::Uv => "uv",
        }
    }
}

/// Everything install-rocm needs, resolved from flags, environment and lock.
#[derive(Clone, Debug)]
pub struct InstallSettings {
    pub venv: Venv,
    /// Interpreter that creates the venv when it does not exist.
    pub base_python: PathBuf,
    pub installer: Installer,
    pub index_url: Option<String>,
    pub find_links: Option<String>,
    pub cache_dir: PathBuf,
    pub spec_text: String,
    pub spec: VersionSpecifiers,
    pub pre: bool,
    pub extras: Vec<String>,
    /// The SDK version a lock already records: the install must produce exactly this.
    pub locked_version: Option<Version>,
    /// Log file of the install steps.
    pub log: PathBuf,
    /// How long each request to the index waits, and how often it is tried.
    pub waits: Waits,
}

impl InstallSettings {
    /// The index sources the installer will read.
    pub fn sources(&self) -> Vec<IndexSource> {
        preflight::sources(
            self.index_url.as_deref(),
            self.find_links.as_deref(),
            DEFAULT_INDEX,
        )
    }

    /// `rocm[libraries,devel,<extras>]==<version>`.
    pub fn requirement(&self, version: &str) -> String {
        let mut extras: Vec<&str> = BASE_EXTRAS.to_vec();
        for extra in &self.extras {
            if !extras.contains(&extra.as_str()) {
                extras.push(extra);
            }
        }
        format!("{}[{}]=={version}", super::ROCM_DIST, extras.join(","))
    }

    /// Creates the venv (`python3 -m venv DIR`): pip comes with it, and the build steps use it.
    pub fn create_venv_cmd(&self) -> Cmd {
        Cmd::new(&self.base_python)
            .args(["-m", "venv"])
            .arg(&self.venv.dir)
            .label("create venv")
            .timeout(Duration::from_secs(600))
            .log_to(&self.log)
    }

    /// The install step for an exact version.
    pub fn install_cmd(&self, version: &str) -> Cmd {
        let mut cmd = self
            .installer
            .install(&self.venv, &self.cache_dir)
            .arg(self.installer.reinstall_flag());
        if self.pre {
            cmd = match self.installer {
                Installer::Pip => cmd.arg("--pre"),
                Installer::Uv => cmd.args(["--prerelease", "allow"]),
            };
        }
        for source in self.sources() {
            cmd = match source {
                IndexSource::Index(url) => cmd.args(["--index-url", &url]),
                IndexSource::FindLinks(links) => cmd.args(["--find-links", &links]),
            };
        }
        for var in SOURCE_ENV_VARS {
            cmd = cmd.env_remove(*var);
        }
        // The installer's own waits: a request without an answer ends after the timeout and
        // is retried as often as the preflight's were.
        let (timeout, retries) = (
            self.waits.timeout.as_secs().to_string(),
            self.waits.attempts.saturating_sub(1).to_string(),
        );
        cmd = match self.installer {
            Installer::Pip => cmd.args(["--timeout", &timeout, "--retries", &retries]),
            Installer::Uv => cmd
                .env("UV_HTTP_TIMEOUT", &timeout)
                .env("UV_HTTP_RETRIES", &retries),
        };
        cmd.arg(self.requirement(version))
            .label(format!("install-rocm: {} install", self.installer.as_str()))
            .env("PIP_NO_INPUT", "1")
            .timeout(Duration::from_secs(3 * 3600))
            .idle_timeout(Duration::from_secs(900))
            .retry(Retry {
                attempts: 3,
                backoff: Duration::from_secs(5),
                is_transient: crate::pip::is_transient,
            })
            .log_to(&self.log)
    }
}

/// What an install did, for the caller's status lines and the lock.
#[derive(Clone, Debug)]
pub struct Installed {
    pub sdk: SdkInfo,
    pub duration: Duration,
}

/// The extras of `--rocm-extras` (comma-separated), each a valid extra name.
pub fn parse_extras(list: Option<&str>) -> Result<Vec<String>, Error> {
    list.into_iter()
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|extra| {
            if extra
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            {
                Ok(extra.to_string())
            } else {
                Err(Error::BadExtra(extra.to_string()))
            }
        })
        .collect()
}

/// Runs the whole install: preflight, venv, install, verification, SDK record.
/// `status` receives one line per phase.
pub fn install(
    runner: &Runner,
    settings: &InstallSettings,
    status: &dyn Fn(&str),
) -> Result<Installed, Error> {
    let started = std::time::Instant::now();
    let found = inspect(settings, status)?;
    let plan = plan(settings, &found);
    let sdk = apply(runner, settings, &plan, status)?;
    Ok(Installed {
        sdk,
        duration: started.elapsed(),
    })
}

/// What the install is decided on: the preflight's choice and whether the venv exists.
pub struct Inspected {
    pub preflight: Preflight,
    pub venv_exists: bool,
}

/// Reads the index sources (the preflight) and the venv.
pub fn inspect(settings: &InstallSettings, status: &dyn Fn(&str)) -> Result<Inspected, Error> {
    if let Some(links) = settings
        .find_links
        .as_deref()
        .filter(|l| !l.trim().is_empty())
        && let Some(dir) = preflight::missing_local_find_links(links)
    {
        return Err(Error::MissingFindLinks(dir));
    }
    let sources = settings.sources();
    status(&format!(
        "preflight: looking for rocm{} on {}",
        if settings.spec_text.trim().is_empty() {
            String::new()
        } else {
            settings.spec_text.trim().to_string()
        },
        sources
            .iter()
            .map(IndexSource::display)
            .collect::<Vec<_>>()
            .join(" + ")
    ));
    let preflight = preflight::check(
        &sources,
        &settings.spec,
        settings.pre,
        settings.locked_version.as_ref(),
        settings.waits,
    )?;
    Ok(Inspected {
        preflight,
        venv_exists: settings.venv.exists(),
    })
}

/// What the install will do: the exact version, and the commands that install it.
pub struct InstallPlan {
    pub version: String,
    /// Why this version: `pinned by the lock` or `newest match`.
    pub chosen_by: &'static str,
    /// How many `rocm` files the sources offered.
    pub offered: usize,
    /// Creates the venv when it does not exist yet.
    pub create_venv: Option<Cmd>,
    pub install: Cmd,
}

/// Plans the install from the settings and what the preflight found.
pub fn plan(settings: &InstallSettings, found: &Inspected) -> InstallPlan {
    let version = found.preflight.version.to_string();
    InstallPlan {
        chosen_by: if settings.locked_version.is_some() {
            "pinned by the lock"
        } else {
            "newest match"
        },
        offered: found.preflight.offered,
        create_venv: (!found.venv_exists).then(|| settings.create_venv_cmd()),
        install: settings.install_cmd(&version),
        version,
    }
}

/// Runs the plan, then checks that the venv holds exactly the planned SDK and records what
/// the SDK reports about itself.
pub fn apply(
    runner: &Runner,
    settings: &InstallSettings,
    plan: &InstallPlan,
    status: &dyn Fn(&str),
) -> Result<SdkInfo, Error> {
    let version = &plan.version;
    status(&format!(
        "preflight: installing rocm {version} ({}), {} file{} offered",
        plan.chosen_by,
        plan.offered,
        crate::ui::plural(plan.offered)
    ));
    if let Some(create) = &plan.create_venv {
        status(&format!("creating venv {}", settings.venv.dir.display()));
        runner.run(create)?;
    }
    fs_err::create_dir_all(&settings.cache_dir).map_err(|source| Error::Cache {
        path: settings.cache_dir.clone(),
        source,
    })?;
    status(&format!(
        "{} install {}",
        settings.installer.as_str(),
        settings.requirement(version)
    ));
    runner.run(&plan.install)?;

    let found = settings
        .venv
        .installed_version(super::ROCM_DIST)
        .and_then(|v| crate::version::normalize("installed rocm", &v).ok());
    if found.as_deref() != Some(version.as_str()) {
        return Err(Error::DistMismatch {
            wanted: version.clone(),
            found,
            venv: settings.venv.dir.clone(),
            log: settings.log.clone(),
        });
    }
    check_extras(settings, version)?;
    let sdk = super::query(runner, &settings.venv)?;
    if sdk.version != *version {
        return Err(Error::ReportedMismatch {
            wanted: version.clone(),
            reported: sdk.version,
            venv: settings.venv.dir.clone(),
        });
    }
    sdk.write_record(&settings.venv)?;
    Ok(sdk)
}

/// Every extra asked for is one the installed `rocm` provides, and its requirements are
/// installed: pip and uv only warn about an unknown extra and exit 0.
fn check_extras(settings: &InstallSettings, version: &str) -> Result<(), Error> {
    let metadata = settings
        .venv
        .site_packages()
        .and_then(|site| super::venv::installed_metadata_in(&site, super::ROCM_DIST))
        .unwrap_or_default();
    let site = settings.venv.site_packages();
    let mut asked: Vec<&str> = BASE_EXTRAS.to_vec();
    asked.extend(settings.extras.iter().map(String::as_str));
    for extra in asked {
        let found =
            extra_requirements(&metadata, extra).ok_or_else(|| Error::ExtraNotProvided {
                extra: extra.to_string(),
                version: version.to_string(),
                provided: provided_extras(&metadata),
            })?;
        for requirement in found {
            let name = requirement_name(&requirement);
            let installed = site
                .as_deref()
                .and_then(|site| super::venv::installed_version_in(site, name));
            if installed.is_none() {
                return Err(Error::ExtraNotInstalled {
                    extra: extra.to_string(),
                    version: version.to_string(),
                    requirement,
                    venv: settings.venv.dir.clone(),
                    log: settings.log.clone(),
                });
            }
        }
    }
    Ok(())
}

/// The `Provides-Extra:` names of core metadata.
fn provided_extras(metadata: &str) -> Vec<String> {
    metadata
        .lines()
        .filter_map(|line| line.strip_prefix("Provides-Extra:"))
        .map(|extra| extra.trim().to_string())
        .collect()
}

/// The requirements an extra adds (`Requires-Dist: x; extra == "name"`), or None when the
/// metadata does not provide the extra.
fn extra_requirements(metadata: &str, extra: &str) -> Option<Vec<String>> {
    let normalize = |name: &str| name.trim().to_ascii_lowercase().replace(['_', '.'], "-");
    if !provided_extras(metadata)
        .iter()
        .any(|p| normalize(p) == normalize(extra))
    {
        return None;
    }
    Some(
        metadata
            .lines()
            .filter_map(|line| line.strip_prefix("Requires-Dist:"))
            .filter_map(|requirement| {
                let (requirement, marker) = requirement.split_once(';')?;
                let marker = marker.replace(['\'', '"'], "");
                let (_, name) = marker.split_once("extra ==")?;
                (normalize(name) == normalize(extra)).then(|| requirement.trim().to_string())
            })
            .collect(),
    )
}

/// `rocm-sdk-device-gfx942==7.10.0` → `rocm-sdk-device-gfx942`.
fn requirement_name(requirement: &str) -> &str {
    let end = requirement
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(requirement.len());
    &requirement[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(installer: Installer) -> InstallSettings {
        InstallSettings {
            venv: Venv::new("/w/venv"),
            base_python: PathBuf::from("python3"),
            installer,
            index_url: Some("http://127.0.0.1:9/simple".into()),
            find_links: Some(String::new()),
            cache_dir: PathBuf::from("/c/pip"),
            spec_text: ">1.0".into(),
            spec: preflight::parse_spec(">1.0").expect("spec"),
            pre: true,
            extras: vec!["device-gfx942".into(), "devel".into()],
            locked_version: None,
            log: PathBuf::from("/o/logs/install-rocm.log"),
            waits: Waits {
                timeout: Duration::from_secs(7),
                attempts: 3,
            },
        }
    }

    #[test]
    fn install_commands_pin_the_exact_version_and_own_the_cache() {
        let pip = settings(Installer::Pip).install_cmd("7.10.0a1");
        assert_eq!(
            pip.argv_display().join(" "),
            "/w/venv/bin/python -m pip install --disable-pip-version-check --cache-dir /c/pip --force-reinstall --pre --index-url http://127.0.0.1:9/simple --timeout 7 --retries 2 rocm[libraries,devel,device-gfx942]==7.10.0a1"
        );
        let uv = settings(Installer::Uv).install_cmd("7.10.0a1");
        let env = uv.env_diff();
        assert_eq!(env.get("UV_HTTP_TIMEOUT"), Some(&Some("7".into())));
        assert_eq!(env.get("UV_HTTP_RETRIES"), Some(&Some("2".into())));
        assert_eq!(
            uv.argv_display().join(" "),
            "uv pip install --python /w/venv/bin/python --cache-dir /c/pip --reinstall --prerelease allow --index-url http://127.0.0.1:9/simple rocm[libraries,devel,device-gfx942]==7.10.0a1"
        );
        let mut no_pre = settings(Installer::Pip);
        no_pre.pre = false;
        no_pre.index_url = None;
        no_pre.find_links = Some("/wheels".into());
        let argv = no_pre.install_cmd("7.9.0").argv_display().join(" ");
        assert!(argv.ends_with("--force-reinstall --index-url https://pypi.org/simple --find-links /wheels --timeout 7 --retries 2 rocm[libraries,devel,device-gfx942]==7.9.0"), "{argv}");
    }

    #[test]
    fn extras_are_read_from_the_metadata() {
        // As the stand-in (examples/sdk/build_sdk.py) and the real rocm sdist write them.
        let metadata = "Metadata-Version: 2.1\nName: rocm\nProvides-Extra: libraries\n\
            Requires-Dist: rocm-sdk-libraries==7.10.0; extra == \"libraries\"\n\
            Provides-Extra: device-gfx906\n\
            Requires-Dist: rocm-sdk-device-gfx906==7.10.0 ; extra == 'device-gfx906'\n";
        assert_eq!(
            extra_requirements(metadata, "device-gfx906"),
            Some(vec!["rocm-sdk-device-gfx906==7.10.0".to_string()])
        );
        assert_eq!(extra_requirements(metadata, "device-gfx942"), None);
        assert_eq!(provided_extras(metadata), ["libraries", "device-gfx906"]);
        assert_eq!(
            requirement_name("rocm-sdk-device-gfx906==7.10.0"),
            "rocm-sdk-device-gfx906"
        );
    }
}
