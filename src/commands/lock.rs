//! `rockbuild lock`: settings → resolve every source into the cache and the SDK version
//! through the index preflight → the lock as a plan (printed) → written.

use crate::checkout::{self, lockfile};
use crate::cli::LockArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::recipes::Recipes;
use crate::sdk::preflight;
use crate::settings::lock::{BuildInputs, LockSettings};

pub fn run(args: LockArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    let settings = LockSettings::resolve(args, ctx)?;
    let selection = &settings.selection;
    // The lock names every wheel by its recipe's rule: a stack entry without one fails here,
    // before anything is fetched.
    recipes.check(&selection.stack)?;
    let resolved = checkout::resolve_all(selection, ctx)?;
    let facts = inspect_build(&settings.build, ctx)?;
    let locked = lockfile::locked_projects(selection, &resolved)?;
    let build = lockfile::build_record(selection, &resolved, &facts, recipes)?;
    let lock = if settings.dry_run {
        checkout::merged_lock(selection, &settings.lock_path, locked, build)
    } else {
        checkout::write_lock(selection, &settings.lock_path, locked, build)?
    };
    ctx.ui.data(&if settings.json {
        serde_json::to_string_pretty(&lock)?
    } else {
        crate::lock::plan::describe(
            &lock,
            selection.preset.as_deref(),
            &selection.stack,
            &lockfile::checkout_files(&lock, &selection.stack, recipes)?,
        )
    })?;
    if !settings.dry_run {
        ctx.ui
            .status(format!("lock: {}", settings.lock_path.display()));
    }
    Ok(ExitStatus::Success)
}

/// The SDK version the index offers for the spec (the install's own preflight), with the
/// other build inputs.
fn inspect_build(inputs: &BuildInputs, ctx: &Context) -> anyhow::Result<lockfile::BuildFacts> {
    let sdk = match &inputs.sdk {
        Some(query) => {
            let sources = preflight::sources(
                Some(&query.index_url),
                query.find_links.as_deref(),
                crate::sdk::install::DEFAULT_INDEX,
            );
            let chosen = preflight::check(
                &sources,
                &query.spec,
                query.pre,
                None,
                crate::index::client::Waits::default(),
            )?;
            ctx.ui.status(format!(
                "preflight: rocm {} (newest match of `{}` on {})",
                chosen.version,
                query.spec_text.trim(),
                sources
                    .iter()
                    .map(preflight::IndexSource::display)
                    .collect::<Vec<_>>()
                    .join(" + ")
            ));
            Some((chosen.version.to_string(), query.index_url.clone()))
        }
        None => None,
    };
    Ok(lockfile::BuildFacts {
        sdk,
        targets: inputs
            .targets
            .as_ref()
            .map(|t| t.value.clone())
            .unwrap_or_default(),
        version_suffix: inputs.version_suffix.clone(),
        release_type: Some(inputs.release_type),
        build_number: inputs.build_number,
    })
}
