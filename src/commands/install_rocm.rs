//! `rockbuild install-rocm`: the ROCm SDK into a venv (see `sdk::install`), recorded in the
//! lock when one is given.

use crate::cli::InstallRocmArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::sdk::install;
use crate::settings::install_rocm::InstallRocmSettings;

pub fn run(args: InstallRocmArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let mut settings = InstallRocmSettings::resolve(args, ctx)?;
    if settings.dry_run {
        let plan = install::plan_offline(&settings.install);
        ctx.ui.data(&plan.to_text(&settings.install))?;
        return Ok(ExitStatus::Success);
    }
    let started = std::time::Instant::now();
    let status = |line: &str| ctx.ui.status(line);
    let found = install::inspect(&settings.install, &status)?;
    let plan = install::plan(&settings.install, &found);
    let sdk = install::apply(&ctx.runner, &settings.install, &plan, &status)?;
    ctx.ui.status(format!(
        "installed rocm {} into {} in {:.0}s: root {}, SDK targets {}",
        sdk.version,
        settings.install.venv.dir.display(),
        started.elapsed().as_secs_f64(),
        sdk.root.display(),
        if sdk.targets.is_empty() {
            "(none reported)".to_string()
        } else {
            sdk.targets.join(",")
        }
    ));
    if let Some((path, lock)) = settings.lock.as_mut() {
        lock.record_sdk(&sdk, settings.install.index_url.as_deref(), settings.mode);
        lock.write(path)?;
        ctx.ui.status(format!(
            "recorded rocm {} in {}",
            sdk.version,
            path.display()
        ));
    }
    Ok(ExitStatus::Success)
}
