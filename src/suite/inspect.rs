//! What a shard needs to know before planning: the test sources as they are on disk (version,
//! commit, run_test.py, the hang-listed modules present) and the torch version to install (the
//! lock's, else the newest on the index under test), and what the venv directory holds.

use std::path::Path;

use anyhow::Context as _;

use super::Error;
use super::input::TestSettings;
use super::plan::{self, SourceFacts, VenvState, WheelFacts, World};
use super::times::{self, TimesFacts};
use crate::context::Context;
use crate::env_vars;
use crate::index::client::IndexClient;
use crate::sourced::Source;

/// The cache's directory of exported test times (one directory per torch commit).
pub const TIMES_CACHE: &str = "test-times";

/// What the run needs to know before planning: the sources and the torch to install. A dry
/// run reads no index: without a lock, the torch version stays a placeholder.
pub fn world(settings: &TestSettings, ctx: &Context, work_dir: &Path) -> anyhow::Result<World> {
    let source = match &settings.pytorch_dir {
        None => None,
        Some(dir) => {
            if !dir.is_dir() {
                return Err(Error::Flag {
                    flag: "--pytorch-dir",
                    message: format!("{} is not a directory", dir.display()),
                }
                .into());
            }
            let commit = crate::git::local::open(dir)
                .ok()
                .and_then(|repo| crate::git::local::head_commit(&repo))
                .map(|oid| oid.to_string());
            Some(SourceFacts {
                dir: dir.clone(),
                version: crate::input::read_tree_text(
                    dir,
                    "version.txt",
                    crate::input::REPOSITORY_FILE,
                )?
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty()),
                commit,
                has_run_test: dir.join("test/run_test.py").is_file(),
                has_verify_dynamo: dir.join("tools/dynamo/verify_dynamo.py").is_file(),
                requirements_ci: crate::input::read_tree_text(
                    dir,
                    super::requirements_ci::PATH,
                    crate::input::REPOSITORY_FILE,
                )?,
                present_modules: plan::hang_candidates(settings)
                    .into_iter()
                    .filter(|m| plan::module_present(dir, m))
                    .collect(),
            })
        }
    };
    let times = times_facts(settings, ctx, source.as_ref())?;
    let locked = settings
        .lock
        .as_ref()
        .and_then(|l| l.torch_version.clone().map(|v| (v, l.path.clone())));
    let wheel = match (locked, &settings.index_url) {
        (Some((version, path)), _) => Some(WheelFacts {
            version,
            source: Source::Lock(path.display().to_string()),
            at_run_time: false,
        }),
        (None, Some(url)) if settings.dry_run => Some(WheelFacts {
            version: "<newest>".to_string(),
            source: Source::Inferred(format!(
                "the newest torch on {} when the run starts",
                crate::redact::redact_url(url)
            )),
            at_run_time: true,
        }),
        (None, Some(url)) => Some(newest_torch(url)?),
        (None, None) => None,
    };
    Ok(World {
        source,
        wheel,
        work_dir: work_dir.to_path_buf(),
        path: ctx
            .env()
            .get(env_vars::PATH)
            .unwrap_or_default()
            .to_string(),
        venv: VenvState::of(&plan::venv_dir(settings, work_dir)),
        sdk_inherited: crate::suite::sdk_env::PREPENDED
            .iter()
            .filter_map(|name| {
                ctx.env()
                    .non_empty(name)
                    .map(|value| (name.to_string(), value.to_string()))
            })
            .collect(),
        sdk: None,
        times,
    })
}

/// The checkout's test modules and this ref's cached test times (the cache holds what the
/// checkout's export wrote, under the torch commit).
fn times_facts(
    settings: &TestSettings,
    ctx: &Context,
    source: Option<&SourceFacts>,
) -> anyhow::Result<TimesFacts> {
    let Some(source) = source else {
        return Ok(TimesFacts::default());
    };
    let cache_dir = source.commit.as_ref().map(|commit| {
        crate::sdk::cache_root(ctx.env())
            .join(TIMES_CACHE)
            .join(commit)
    });
    let build_environment = settings
        .test_env
        .iter()
        .find(|(name, _)| *name == env_vars::BUILD_ENVIRONMENT)
        .map(|(_, value)| value.value.clone())
        .unwrap_or_default();
    let mut facts = TimesFacts {
        cache_dir: cache_dir.clone(),
        tests: times::discover(&source.dir),
        has_export_script: source.dir.join(times::EXPORT_SCRIPT).is_file(),
        ..TimesFacts::default()
    };
    if let Some(dir) = &cache_dir {
        match times::load(dir, &build_environment, settings.config.run_test_config()) {
            Ok(Some(file)) => {
                facts.file = Some(times::Loaded {
                    times: file,
                    from: format!("cached for commit {}", short(source.commit.as_deref())),
                });
            }
            Ok(None) => {}
            // The cache only saves the export: a file there that run_test.py could not use
            // is exported again (and replaced when the export succeeds).
            Err(why) => ctx.ui.warn(format!(
                "the cached test times are unusable ({why}); the run exports them again"
            )),
        }
    }
    Ok(facts)
}

fn short(commit: Option<&str>) -> &str {
    commit.map_or("unknown", |c| &c[..c.len().min(12)])
}

/// The newest torch version the index offers.
fn newest_torch(index_url: &str) -> anyhow::Result<WheelFacts> {
    let client = IndexClient::new(index_url).map_err(|e| Error::Flag {
        flag: "--index-url",
        message: e.to_string(),
    })?;
    let files = client
        .project("torch")
        .with_context(|| format!("reading torch's page from {}", client.display_url()))?
        .unwrap_or_default();
    let newest = files
        .iter()
        .filter(|f| !f.yanked && f.filename.ends_with(".whl"))
        .filter_map(|f| crate::index::dist_name_and_version(&f.filename).map(|(_, v)| v))
        .max()
        .ok_or_else(|| Error::Flag {
            flag: "--index-url",
            message: format!(
                "{} has no torch wheels; pass the index the set was staged to (or --lock)",
                client.display_url()
            ),
        })?;
    Ok(WheelFacts {
        version: newest.to_string(),
        source: Source::Inferred(format!("newest torch on {}", client.display_url())),
        at_run_time: false,
    })
}
