//! `smoke`: the index and the set to test (the lock's versions, else the newest), the venv,
//! the report and its logs.

use std::path::PathBuf;

use indexmap::IndexMap;

use crate::build::mode::ModeChoice;
use crate::cli::SmokeArgs;
use crate::context::Context;
use crate::index::client::IndexClient;
use crate::lock::BuildMode;
use crate::lock::Lock;
use crate::smoke;
use crate::sourced::Source;
use crate::stack::Stack;

pub struct SmokeSettings {
    pub stack: Stack,
    pub client: IndexClient,
    /// The versions to test, by project (the lock's build record); none: the newest.
    pub versions: Option<IndexMap<String, String>>,
    /// `--targets`: the processors whose device wheels go in with the set.
    pub device_targets: Vec<String>,
    pub smoke: smoke::Settings,
    /// Where the test report goes.
    pub report: PathBuf,
    pub dry_run: bool,
    pub json: bool,
}

impl SmokeSettings {
    pub fn resolve(args: SmokeArgs, ctx: &Context) -> anyhow::Result<Self> {
        let SmokeArgs {
            index_url,
            lock,
            report,
            extra_index_url,
            venv,
            python,
            targets,
            dry_run,
            json,
            config,
        } = args;
        let stack = config.stack(ctx)?;
        let device_targets = match targets.filter(|t| !t.trim().is_empty()) {
            Some(given) => {
                let families = config.family_table(ctx)?;
                let (list, _) =
                    super::detect::auto_targets(ctx, &families, Some(given.clone()), None)?;
                let list = list.unwrap_or(given);
                let targets = match families.family_named(list.trim()) {
                    Ok(family) => family.targets.clone(),
                    Err(_) => list
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(|t| families.target(t))
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(|error| smoke::Error::Targets(error.to_string()))?,
                };
                targets
                    .iter()
                    .map(|t| {
                        crate::binary::target_id::processor(t.as_str())
                            .map(str::to_string)
                            .map_err(smoke::Error::Targets)
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            None => Vec::new(),
        };
        let (versions, locked_mode) = match &lock {
            Some(path) => {
                let path = ctx.absolute(path);
                let lock = Lock::read(&path)?;
                let build = lock.build.ok_or(smoke::Error::NoBuildRecord(path))?;
                (Some(build.versions.clone()), build.recorded_mode())
            }
            None => (None, None),
        };
        // Device wheels (`--targets`) come from a multi-arch index; the lock's record says
        // which mode the set was built in.
        let mode = match locked_mode {
            Some(mode) => ModeChoice::resolve(false, false, Some(mode)),
            None if !device_targets.is_empty() => ModeChoice {
                mode: BuildMode::MultiArch,
                source: Source::Flag("--targets (device wheels)".into()),
            },
            None => ModeChoice::resolve(false, false, None),
        };
        mode.with_index(
            &config.family_table(ctx)?,
            "--index-url",
            &index_url,
            "the set under test",
        )?;
        let client = IndexClient::new(&index_url).map_err(smoke::Error::Index)?;
        let report = ctx.absolute(&report);
        let (venv, clear_venv) = match venv {
            Some(dir) => {
                let dir = ctx.absolute(&dir);
                let holds_venv = dir.join("pyvenv.cfg").is_file();
                let empty = fs_err::read_dir(&dir)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(true);
                if !holds_venv && !empty {
                    return Err(smoke::Error::VenvNotEmpty(dir).into());
                }
                (Some(dir), holds_venv)
            }
            None => (None, false),
        };
        Ok(SmokeSettings {
            stack,
            client,
            versions,
            device_targets,
            smoke: smoke::Settings {
                index_url,
                extra_index_urls: extra_index_url,
                venv,
                clear_venv,
                python: python
                    .map(|p| ctx.absolute(&p))
                    .unwrap_or_else(|| "python3".into()),
                log_dir: report.with_extension("logs"),
            },
            report,
            dry_run,
            json,
        })
    }
}
