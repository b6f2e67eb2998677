//! `verify`: which wheels, and what they are verified against — the stack, the lock's build
//! record, `--targets`, `--index-url`. The expectations are shared with `stage`.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use pep440_rs::Version;

use super::{Source, Sourced};
use crate::build::mode::{ModeChoice, device_prefix};
use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::lock::Lock;
use crate::recipes::Recipes;
use crate::stack::{self, FamilyTable, Stack, Target};
use crate::verify::{self, Expectations, ExpectedDevice};
use crate::wheel::filename::normalize_name;
use crate::wheel::verify::ExpectedVersion;

pub struct VerifySettings {
    /// The wheels and directories of wheels named on the command line, absolute.
    pub inputs: Vec<PathBuf>,
    pub expect: Expectations,
    /// Print the report as JSON on stdout.
    pub json: bool,
}

impl VerifySettings {
    pub fn resolve(args: VerifyArgs, ctx: &Context, recipes: &Recipes) -> anyhow::Result<Self> {
        let VerifyArgs {
            paths,
            lock,
            targets,
            index_url,
            json,
            allow_linux_tag,
            config,
        } = args;
        let stack = config.stack(ctx)?;
        let table = config.family_table(ctx)?;
        let asked = index_url.is_some();
        let (mut expect, _) = expectations(
            ctx,
            recipes,
            &stack,
            &table,
            lock.as_deref(),
            targets.as_deref(),
            index_url,
        )?;
        if !asked
            && let Some(url) = &expect.index_url
            && !lock_index_answers(ctx, url)
        {
            expect.index_url = None;
            expect.check_pins_outside_set = false;
        }
        expect.wheels.allow_linux_tag = allow_linux_tag;
        Ok(VerifySettings {
            inputs: paths.iter().map(|p| ctx.absolute(p)).collect(),
            expect,
            json,
        })
    }
}

/// Verification reaches the network only when asked (`--index-url`): the SDK's index a lock
/// names may be gone since (the quickstart's server, stopped), and a connection that fails is
/// then a warning and checks without the index, never a failure of every wheel.
fn lock_index_answers(ctx: &Context, url: &str) -> bool {
    let Ok(client) = crate::index::client::IndexClient::new(url) else {
        return true;
    };
    match client.project("rocm") {
        Err(crate::index::Error::Transfer { message, .. }) => {
            ctx.ui.warn(format!(
                "the SDK's index the lock names, {}, cannot be read ({message}): the set is \
                 verified without it (its SDK wheels and pins outside the set are not looked \
                 up); pass --index-url to require it",
                crate::redact::redact_url(url)
            ));
            false
        }
        _ => true,
    }
}

/// What a set is verified against: the lock's build record (targets, versions, the SDK's
/// index), `--targets` over the lock's targets (with a warning), `--index-url` over the
/// lock's index. Also says where the targets came from, when there are any.
pub fn expectations(
    ctx: &Context,
    recipes: &Recipes,
    stack: &Stack,
    table: &FamilyTable,
    lock: Option<&Path>,
    targets: Option<&str>,
    index_url: Option<String>,
) -> anyhow::Result<(Expectations, Option<Sourced<Vec<Target>>>)> {
    let mut expect = Expectations::for_stack(stack, recipes.wheel_expectations(stack)?);
    let mut targets_from = None;
    let mut lock_index = None;
    if let Some(lock_path) = lock {
        let lock_path = ctx.absolute(lock_path);
        let lock = Lock::read(&lock_path)?;
        expect_lock(&mut expect, &lock, &lock_path, stack)?;
        expect_devices(&mut expect, &lock, recipes, stack)?;
        if let Some(build) = &lock.build {
            targets_from = Some(Source::Lock(lock_path.display().to_string()));
            lock_index = lock.sdk_index_url();
            if let (Some(url), Some(mode)) = (&index_url, build.recorded_mode()) {
                ModeChoice::resolve(false, false, Some(mode)).with_index(
                    table,
                    "--index-url",
                    url,
                    "the set the lock records",
                )?;
            }
        }
    }
    if let Some(list) = targets {
        let given = table.targets(list).map_err(verify::Error::Targets)?;
        if !expect.wheels.targets.is_empty() && expect.wheels.targets != given {
            ctx.ui.warn(format!(
                "--targets {} replaces the lock's targets {}",
                stack::families::join(&given),
                stack::families::join(&expect.wheels.targets)
            ));
        }
        expect.wheels.targets = given;
        targets_from = Some(Source::Flag("--targets".into()));
    }
    expect.index_url = index_url.or(lock_index);
    let targets = targets_from.map(|source| Sourced {
        value: expect.wheels.targets.clone(),
        source,
    });
    Ok((expect, targets))
}

/// A multi-arch lock's record: a device wheel of every split project for every target it
/// records, at the project's version (`amd-torch-device-gfx906`).
fn expect_devices(
    expect: &mut Expectations,
    lock: &Lock,
    recipes: &Recipes,
    stack: &Stack,
) -> anyhow::Result<()> {
    let Some(build) = lock.build.as_ref().filter(|b| !b.mode.is_per_family()) else {
        return Ok(());
    };
    for project in recipes.split_projects(stack)? {
        let Some(wheel) = &project.wheel else {
            continue;
        };
        let Some(expected) = expect.wheels.versions.get(&normalize_name(wheel)) else {
            continue;
        };
        for target in &build.targets {
            let name = format!("{}-{target}", device_prefix(wheel));
            expect.devices.insert(
                normalize_name(&name),
                ExpectedDevice {
                    project: expected.project.clone(),
                    target: target.to_string(),
                    version: expected.version.clone(),
                },
            );
        }
    }
    Ok(())
}

/// Takes the targets and per-project versions of the lock's build record as the
/// expectation. A lock without a build record changes nothing.
fn expect_lock(
    expect: &mut Expectations,
    lock: &Lock,
    lock_path: &Path,
    stack: &Stack,
) -> Result<(), verify::Error> {
    let Some(build) = &lock.build else {
        return Ok(());
    };
    expect.wheels.targets = build.targets.clone();
    for (project, version) in &build.versions {
        // The lock names the versions of wheels only: a project of the stack that makes none
        // has no version there (an old lock's entry for one is passed by).
        let wheel = match stack.projects.get(project) {
            Some(p) => match &p.wheel {
                Some(wheel) => normalize_name(wheel),
                None => continue,
            },
            None => {
                return Err(verify::Error::LockProject {
                    lock: lock_path.to_path_buf(),
                    project: project.clone(),
                    stack: stack.source_name.clone(),
                });
            }
        };
        let version = Version::from_str(version).map_err(|e| verify::Error::LockVersion {
            lock: lock_path.to_path_buf(),
            project: project.clone(),
            version: version.clone(),
            reason: e.to_string(),
        })?;
        expect.wheels.versions.insert(
            wheel,
            ExpectedVersion {
                project: project.clone(),
                version,
            },
        );
    }
    Ok(())
}
