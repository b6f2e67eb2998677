//! `rockbuild doctor`: checks this machine before a build and says what to fix.

use crate::cli::DoctorArgs;
use crate::context::Context;
use crate::doctor::{self, disk::Role, inspect};
use crate::exit::ExitStatus;
use crate::settings::doctor::DoctorSettings;

pub fn run(args: DoctorArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let settings = DoctorSettings::resolve(args, ctx)?;
    let scratch = tempfile::Builder::new()
        .prefix("rockbuild-doctor-")
        .tempdir()?;
    let checkouts = match &settings.lock {
        Some((_, lock)) => lock
            .projects
            .values()
            .map(|p| settings.checkout_root.value.join(&p.checkout_dir))
            .collect(),
        None => Vec::new(),
    };
    let facts = inspect::inspect(
        &ctx.runner,
        &inspect::Inputs {
            venv: &settings.venv.value,
            locations: [
                (Role::CheckoutRoot, &settings.checkout_root.value),
                (Role::OutputDir, &settings.output_dir.value),
                (Role::CacheDir, &settings.cache_dir.value),
            ],
            targets: settings.targets.as_ref().map(|t| t.value.as_slice()),
            compile: settings.compile,
            index_url: settings.index_url.as_ref().map(|u| u.value.as_str()),
            network_timeout: settings.network_timeout,
            checkouts,
            scratch: scratch.path(),
        },
    );
    let report = doctor::judge(&facts, &settings.expectations());
    if settings.json {
        ctx.ui.data(&serde_json::to_string_pretty(&report)?)?;
    } else {
        ctx.ui.data(&report.to_text())?;
    }
    report.outcome()?;
    Ok(ExitStatus::Success)
}
