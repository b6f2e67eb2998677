//! `rockbuild stage --to URL [--input DIR] [--amdgpu-family F] [--lock FILE] [--targets LIST]
//! [--index-url URL] [--dry-run [--json]]`: verify every wheel of the build output (nothing
//! is uploaded unless all pass), then upload the wheels and their PEP 658 sidecars and write
//! the index pages last (see `publish`).

use crate::cli::StageArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::publish::{self, stage};
use crate::recipes::Recipes;
use crate::settings::Source;
use crate::settings::stage::StageSettings;
use crate::store::{self, lease};
use crate::ui::plural;
use crate::verify;
use crate::wheel::companion::Role;

pub fn run(args: StageArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<ExitStatus> {
    let settings = StageSettings::resolve(args, ctx, recipes)?;
    announce_targets(ctx, &settings);
    sdk_index_answers(&settings)?;
    let wheels = verify::collect(std::slice::from_ref(&settings.input))?;
    let report = verify::run(ctx, &wheels, &settings.expect)?;
    // The companions the set pins are downloaded here and uploaded from here.
    let scratch = tempfile::Builder::new()
        .prefix("rockbuild-stage-")
        .tempdir()
        .map_err(verify::Error::Scratch)?;
    let report = stage::bring_companions(
        ctx,
        report,
        settings.expect.index_url.as_deref(),
        scratch.path(),
    )?;
    let dest_url = settings.dest.to_string();
    let publication = stage::publication(&report, &settings.input, &dest_url)?;
    let dest = store::open(&settings.dest, &settings.store)?;
    // One writer at a time, from before the destination is read until its pages are written.
    let lease = match settings.dry_run {
        true => None,
        false => Some(lease::acquire(
            ctx,
            dest.as_ref(),
            "stage",
            &settings.store.lease,
        )?),
    };
    let found = publish::inspect(
        ctx,
        &settings.dest,
        dest.as_ref(),
        &publication,
        &settings.store,
    )?;
    let from = settings.targets.as_ref().map(|t| t.source.to_string());
    let plan =
        stage::plan(&settings.input, from, &report, publication, &found).map_err(|error| {
            match error {
                publish::Error::Conflicts {
                    verb,
                    dest,
                    nothing,
                    conflicts,
                    restage: _,
                } => publish::Error::Conflicts {
                    verb,
                    dest,
                    nothing,
                    conflicts,
                    // The command line as typed (a word that is not UTF-8: no hint).
                    restage: std::env::args_os()
                        .map(std::ffi::OsString::into_string)
                        .collect::<Result<Vec<String>, _>>()
                        .ok()
                        .and_then(|argv| stage::restage_command(&argv, &settings.to, &report)),
                },
                other => other,
            }
        })?;
    let Some(mut lease) = lease else {
        ctx.ui.data(&match settings.json {
            true => serde_json::to_string_pretty(&plan)?,
            false => plan.to_text(),
        })?;
        return Ok(ExitStatus::Success);
    };
    let done = publish::apply(
        ctx,
        None,
        dest.as_ref(),
        &mut lease,
        plan.publish,
        &settings.store,
    )?;
    let products = report
        .wheels
        .iter()
        .filter(|w| w.role == Role::Product)
        .count();
    let companions = report.wheels.len() - products;
    ctx.ui.status(done.summary(
        &match companions {
            0 => format!("staged {products} wheel{}", plural(products)),
            n => format!(
                "staged {products} wheel{} and {n} ROCm SDK file{} they pin",
                plural(products),
                plural(n)
            ),
        },
        None,
        &format!("to {}", dest.url()),
    ));
    Ok(ExitStatus::Success)
}

/// Which GPU targets the libraries must carry, and why; or that they are not checked.
fn announce_targets(ctx: &Context, settings: &StageSettings) {
    match &settings.targets {
        Some(targets) => ctx.ui.status(format!(
            "GPU targets every library must carry: {} (from {})",
            crate::stack::families::join(&targets.value),
            match &targets.source {
                Source::Lock(path) => format!("the build record of {path}"),
                other => other.to_string(),
            }
        )),
        None => ctx.ui.warn(
            "no GPU targets to check (give --targets, --amdgpu-family or a lock with a build record): \
             libraries are checked for HIP code, not for which targets it covers",
        ),
    }
}

/// The SDK's index answers before anything is verified: without it the set's SDK pins cannot
/// be resolved nor its SDK wheels brought, and a connection that fails is a cause of its own
/// (a stopped server, the network) with its own fix, not a failure of the wheel that pins it.
fn sdk_index_answers(settings: &StageSettings) -> Result<(), publish::Error> {
    let Some(url) = &settings.expect.index_url else {
        return Ok(());
    };
    let Ok(client) = crate::index::client::IndexClient::new(url) else {
        // A malformed URL is verify's to report, with the rest of the set.
        return Ok(());
    };
    match client.project(crate::sdk::ROCM_DIST) {
        Err(crate::index::Error::Transfer { message, .. }) => Err(publish::Error::SdkIndex {
            url: client.display_url(),
            from: settings.index_from.clone(),
            message,
            dest: settings.dest.to_string(),
            fix: crate::index::reach::unreachable_fix(url),
        }),
        _ => Ok(()),
    }
}
