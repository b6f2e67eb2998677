//! `rockbuild doctor` settings: which venv, directories, lock, targets and index to check, and
//! where each came from.

use std::path::{Path, PathBuf};

use crate::cli::DoctorArgs;
use crate::context::Context;
use crate::env_vars;
use crate::lock::{DEFAULT_FILE_NAME, Lock};
use crate::settings::{Source, Sourced};

pub struct DoctorSettings {
    pub venv: Sourced<PathBuf>,
    pub output_dir: Sourced<PathBuf>,
    pub checkout_root: Sourced<PathBuf>,
    pub cache_dir: Sourced<PathBuf>,
    /// The lock, when one was given or sits in the checkout root.
    pub lock: Option<(PathBuf, Lock)>,
    /// The targets hipcc must compile for.
    pub targets: Option<Sourced<Vec<String>>>,
    /// The index the SDK comes from.
    pub index_url: Option<Sourced<String>>,
    pub compile: bool,
    pub network_timeout: std::time::Duration,
    pub json: bool,
}

impl DoctorSettings {
    /// What `install-rocm --lock` cannot take from the lock: the index given on the command
    /// line, or `auto` (this machine's family) when neither names one.
    fn install_index(&self) -> Option<String> {
        let locked = self
            .lock
            .as_ref()
            .and_then(|(_, lock)| lock.sdk_index_url());
        match &self.index_url {
            Some(url) if matches!(url.source, Source::Flag(_)) => {
                Some(crate::redact::redact_url(&url.value))
            }
            _ if locked.is_some() => None,
            _ => Some(crate::settings::detect::AUTO.to_string()),
        }
    }

    pub fn resolve(args: DoctorArgs, ctx: &Context) -> anyhow::Result<Self> {
        let DoctorArgs {
            venv,
            output_dir,
            root_checkout_dir,
            cache_dir,
            lock,
            pytorch_rocm_arch,
            amdgpu_family,
            families,
            index_url,
            no_compile,
            network_timeout,
            json,
        } = args;
        let cwd = || Sourced {
            value: ctx.cwd.clone(),
            source: Source::Inferred("the working directory".into()),
        };
        let flag = |path: PathBuf, name: &str| Sourced {
            value: ctx.absolute(&path),
            source: Source::Flag(name.into()),
        };
        let output_dir = output_dir.map_or_else(cwd, |p| flag(p, "--output-dir"));
        let checkout_root = root_checkout_dir.map_or_else(cwd, |p| flag(p, "--root-checkout-dir"));
        let cache_dir = cache_dir.map_or_else(
            || Sourced {
                value: crate::sdk::cache_root(ctx.env()),
                source: Source::Inferred("rockbuild's cache (~/.cache/rockbuild)".into()),
            },
            |p| flag(p, "--cache-dir"),
        );
        let venv = match (venv, ctx.env().non_empty(env_vars::VIRTUAL_ENV)) {
            (Some(path), _) => flag(path, "--venv"),
            (None, Some(active)) => Sourced {
                value: PathBuf::from(active),
                source: Source::Env(env_vars::VIRTUAL_ENV.into()),
            },
            (None, None) => Sourced {
                value: output_dir.value.join("venv"),
                source: Source::Inferred("<output-dir>/venv, install-rocm's default".into()),
            },
        };
        let lock = read_lock(ctx, lock.as_deref(), &checkout_root.value)?;
        let lock_record = lock
            .as_ref()
            .and_then(|(path, lock)| Some((path, lock.build.as_ref()?)));
        let family_table =
            || crate::stack::load_families(families.as_deref().map(|p| ctx.absolute(p)).as_deref());
        let given = match (pytorch_rocm_arch, amdgpu_family) {
            (Some(list), _) => Some((family_table()?.targets(&list), "--pytorch-rocm-arch")),
            (None, Some(list)) => Some((family_table()?.expand_families(&list), "--amdgpu-family")),
            (None, None) => None,
        };
        let targets = match given {
            Some((targets, flag)) => Some(Sourced {
                value: names(targets.map_err(crate::doctor::Error::Targets)?),
                source: Source::Flag(flag.into()),
            }),
            None => lock_record
                .filter(|(_, record)| !record.targets.is_empty())
                .map(|(path, record)| Sourced {
                    value: names(record.targets.clone()),
                    source: Source::Lock(path.display().to_string()),
                }),
        };
        let index_url = match index_url {
            Some(url) => Some(Sourced {
                value: url,
                source: Source::Flag("--index-url".into()),
            }),
            None => lock_record.and_then(|(path, record)| {
                Some(Sourced {
                    value: record.index_url.clone()?,
                    source: Source::Lock(path.display().to_string()),
                })
            }),
        };
        Ok(DoctorSettings {
            venv,
            output_dir,
            checkout_root,
            cache_dir,
            lock,
            targets,
            index_url,
            compile: !no_compile,
            network_timeout: std::time::Duration::from_secs(network_timeout.max(1)),
            json,
        })
    }
}

impl DoctorSettings {
    /// What the facts are judged against, with where each expectation came from.
    pub fn expectations(&self) -> crate::doctor::Expectations {
        crate::doctor::Expectations {
            venv_from: self.venv.source.to_string(),
            lock: self.lock.as_ref().map(|(path, lock)| {
                (
                    path.clone(),
                    lock.build.as_ref().map(|b| b.sdk_version.clone()),
                )
            }),
            targets: self
                .targets
                .as_ref()
                .map(|t| (t.value.clone(), t.source.to_string())),
            index_from: self.index_url.as_ref().map(|u| u.source.to_string()),
            install_index: self.install_index(),
            compile: self.compile,
        }
    }
}

fn names(targets: Vec<crate::stack::Target>) -> Vec<String> {
    targets.iter().map(ToString::to_string).collect()
}

/// `--lock`, else `<root>/rockbuild.lock.json` when it exists. A lock that is given but
/// unreadable is an error; doctor does not guess around it.
fn read_lock(
    ctx: &Context,
    given: Option<&Path>,
    root: &Path,
) -> anyhow::Result<Option<(PathBuf, Lock)>> {
    let path = match given {
        Some(path) => ctx.absolute(path),
        None => {
            let default = root.join(DEFAULT_FILE_NAME);
            if !default.is_file() {
                return Ok(None);
            }
            default
        }
    };
    let lock = Lock::read(&path)?;
    Ok(Some((path, lock)))
}
