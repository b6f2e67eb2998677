//! `rockbuild build` and `rockbuild plan`: settings → the checkouts and the SDK as they are →
//! the plan → printed (`plan`, `--dry-run`, `--json`) or applied.

use crate::build::inspect::{self, Snapshot};
use crate::build::{apply, plan, sdk_facts, tools};
use crate::cli::BuildArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::recipes::Recipes;
use crate::settings::build::BuildSettings;

/// `plan` is `build --dry-run`.
pub fn plan(mut args: BuildArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    args.dry_run = true;
    run(args, ctx, recipes)
}

pub fn run(args: BuildArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    let settings = BuildSettings::resolve(args, ctx, recipes)?;
    // The checkouts first: a mistyped directory fails before an SDK is installed.
    let inspect::Checkouts {
        projects,
        sources,
        mut notes,
    } = inspect::checkouts(&settings, recipes)?;
    let sdk = sdk_facts::obtain(ctx, &settings, &recipes.sdk_dirs(), &mut notes)?;
    let tools = tools::resolve(
        settings.platform,
        &plan::build_path(&settings, &sdk),
        &settings.base_env,
        &settings.sdk.venv.python(),
    );
    let world = Snapshot {
        sdk,
        projects,
        sources,
        notes,
        tools,
    };
    let plan = plan::assemble(&settings, recipes, &world)?;
    // `rockbuild lock` fixed the targets and named every wheel up front: no drift from it.
    if let Some(lock) = &settings.lock {
        let targets = &plan.targets;
        lock.lock
            .expect_targets(&lock.path, &targets.source.to_string(), &targets.targets)?;
        // The lock names the versions of wheels.
        // A version the build decides is checked once it is built (the record then holds it).
        let versions = plan
            .projects
            .iter()
            .filter(|p| p.dist.is_some())
            .filter_map(|p| Some((p.name.as_str(), p.version.known()?)));
        lock.lock
            .expect_versions(&lock.path, "the build plan", versions)?;
    }
    ctx.ui
        .status(format!("targets: {}", plan.targets.describe()));
    if settings.dry_run {
        ctx.ui.data(&if settings.json {
            plan.to_json()?
        } else {
            plan.to_text()
        })?;
        return Ok(ExitStatus::Success);
    }
    let lock = settings.lock.as_ref().map(|l| (l.path.as_path(), &l.lock));
    apply::apply(ctx, &plan, lock, settings.sdk.record_index_url.clone())
}
