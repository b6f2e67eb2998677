//! `rockbuild build` and `rockbuild plan`: resolve the settings, (install and) ask the SDK,
//! compute the plan, print it or run it, then report.

use std::path::Path;

use crate::build::plan::{self, PlanInputs};
use crate::build::recipes::SdkFacts;
use crate::build::report::{BuildReport, SUMMARY_FILE, Status};
use crate::build::select::Choice;
use crate::build::targets::{self, TargetInputs};
use crate::build::{self, BuildFailed, compilers::CompilerCache, execute};
use crate::cli::{BuildArgs, flag};
use crate::context::Context;
use crate::env_vars;
use crate::exit::{self, ExitStatus};
use crate::lock::{self, Lock};
use crate::sdk;
use crate::stack::{self, RecipeKind};

use super::install_rocm::{expect_locked_sdk, install_settings, resolve_venv};

pub fn run(args: BuildArgs, ctx: &Context, plan_only: bool) -> anyhow::Result<ExitStatus> {
    let BuildArgs {
        config,
        output_dir,
        install_rocm,
        sdk: sdk_args,
        root_checkout_dir,
        pytorch_dir,
        pytorch_audio_dir,
        pytorch_vision_dir,
        triton_dir,
        apex_dir,
        lock: lock_arg,
        pytorch_rocm_arch,
        amdgpu_family,
        arch_from_sdk,
        max_targets,
        allow_many_targets,
        pytorch_build_number,
        build_triton,
        no_build_triton,
        build_pytorch_audio,
        no_build_pytorch_audio,
        build_pytorch_vision,
        no_build_pytorch_vision,
        build_apex,
        no_build_apex,
        enable_pytorch_flash_attention,
        no_enable_pytorch_flash_attention,
        version_suffix,
        release_type,
        use_ccache,
        use_sccache,
        sccache_no_wrap,
        clean,
        jobs,
        dry_run,
        json,
    } = args;
    let dry_run = dry_run || plan_only;
    if jobs == 0 {
        return Err(exit::usage("--jobs must be at least 1"));
    }
    let output_dir = ctx.absolute(&output_dir);
    let stack = config.stack(ctx)?;
    let families = config.family_table(ctx)?;

    // The lock: explicit, or <root>/rockbuild.lock.json when it exists.
    let explicit_root = root_checkout_dir.map(|d| ctx.absolute(&d));
    let default_lock = explicit_root
        .as_ref()
        .unwrap_or(&ctx.cwd)
        .join(lock::DEFAULT_FILE_NAME);
    let lock_path = match lock_arg {
        Some(path) => Some(ctx.absolute(&path)),
        None => default_lock.is_file().then_some(default_lock),
    };
    let mut lock = lock_path.as_deref().map(Lock::read).transpose()?;
    let root = explicit_root
        .or_else(|| {
            lock_path
                .as_ref()
                .and_then(|p| p.parent().map(Path::to_path_buf))
        })
        .unwrap_or_else(|| ctx.cwd.clone());

    let selected = build::select::select(&stack, &root, lock.as_ref(), |recipe| {
        let (dir, dir_flag, build, build_flag) = match recipe {
            RecipeKind::Torch => (&pytorch_dir, "--pytorch-dir", None, "--pytorch-dir"),
            RecipeKind::Audio => (
                &pytorch_audio_dir,
                "--pytorch-audio-dir",
                flag(build_pytorch_audio, no_build_pytorch_audio),
                "--build-pytorch-audio",
            ),
            RecipeKind::Vision => (
                &pytorch_vision_dir,
                "--pytorch-vision-dir",
                flag(build_pytorch_vision, no_build_pytorch_vision),
                "--build-pytorch-vision",
            ),
            RecipeKind::Triton => (
                &triton_dir,
                "--triton-dir",
                flag(build_triton, no_build_triton),
                "--build-triton",
            ),
            RecipeKind::Apex => (
                &apex_dir,
                "--apex-dir",
                flag(build_apex, no_build_apex),
                "--build-apex",
            ),
        };
        Choice {
            dir: dir.as_deref().map(|d| ctx.absolute(d)),
            dir_flag,
            build,
            build_flag,
        }
    })?;
    let builds_triton = selected
        .iter()
        .any(|s| s.project.recipe == RecipeKind::Triton);
    let flash_attention = flag(
        enable_pytorch_flash_attention,
        no_enable_pytorch_flash_attention,
    );
    if flash_attention == Some(true) && !builds_triton {
        return Err(exit::usage(
            "--enable-pytorch-flash-attention needs triton in the same build on Linux (aotriton builds its kernels with it): add --build-triton or drop the flag",
        ));
    }

    // The SDK: installed (and asked) for a build; for a plan, what can be known without
    // running anything.
    let venv = resolve_venv(ctx, sdk_args.venv.as_deref(), Some(&output_dir))?;
    if let (Some(lock), Some(path)) = (&lock, &lock_path) {
        expect_locked_sdk(lock, path, &sdk_args)?;
    }
    let locked_sdk = lock.as_ref().map(Lock::sdk_version).transpose()?.flatten();
    let install = if install_rocm {
        Some(install_settings(
            ctx,
            &sdk_args,
            venv.clone(),
            output_dir.join("logs/install-rocm.log"),
            locked_sdk.clone(),
        )?)
    } else {
        None
    };
    let mut notes = Vec::new();
    let mut index_url = lock
        .as_ref()
        .and_then(|l| l.build.as_ref())
        .and_then(|b| b.index_url.clone());
    let sdk = if dry_run {
        build::sdk_facts::planned(
            &venv,
            locked_sdk.as_ref().map(ToString::to_string),
            &sdk_args.rocm_sdk_version,
            install.is_some(),
            &mut notes,
        )?
    } else {
        let info = match &install {
            Some(settings) => {
                let installed =
                    sdk::install::install(&ctx.runner, settings, &|line| ctx.ui.status(line))?;
                ctx.ui.status(format!(
                    "installed rocm {} in {:.0}s",
                    installed.sdk.version,
                    installed.duration.as_secs_f64()
                ));
                index_url = settings
                    .index_url
                    .as_deref()
                    .map(crate::redact::redact_url)
                    .or(index_url);
                installed.sdk
            }
            None => sdk::query(&ctx.runner, &venv)?,
        };
        build::sdk_facts::check_installed(
            &info,
            locked_sdk.as_ref().map(ToString::to_string),
            &sdk_args.rocm_sdk_version,
            install.is_some(),
            &venv,
        )?;
        SdkFacts { info, known: true }
    };

    let from_sdk = if arch_from_sdk {
        if !sdk.known {
            return Err(exit::usage(
                "--arch-from-sdk needs the installed SDK to ask, and none is installed in the venv: install it first (`rockbuild install-rocm`)",
            ));
        }
        Some(sdk.info.targets.as_slice())
    } else {
        None
    };
    let target_choice = targets::resolve(
        &families,
        &TargetInputs {
            flag: pytorch_rocm_arch.as_deref(),
            env: ctx.env().get(env_vars::PYTORCH_ROCM_ARCH),
            family: amdgpu_family.as_deref(),
            from_sdk,
            lock: lock
                .as_ref()
                .and_then(|l| l.build.as_ref())
                .map(|b| b.targets.as_slice()),
            max: max_targets,
            allow_many: allow_many_targets,
        },
    )
    .map_err(|e| exit::usage(e.to_string()))?;
    let missing = targets::missing_from_sdk(&target_choice.targets, &sdk.info.targets);
    if sdk.known && !missing.is_empty() {
        return Err(exit::usage(format!(
            "the installed ROCm SDK does not list {} among its targets ({}, from `rocm-sdk targets`): install its device packages (e.g. --rocm-extras {}) or build for targets it has",
            stack::families::join(&missing),
            sdk.info.targets.join(";"),
            missing
                .iter()
                .map(|t| format!("device-{t}"))
                .collect::<Vec<_>>()
                .join(",")
        )));
    }
    if let (Some(lock), Some(path)) = (&lock, &lock_path) {
        lock.expect_targets(
            path,
            &target_choice.source.to_string(),
            &target_choice.targets,
        )?;
    }
    ctx.ui
        .status(format!("targets: {}", target_choice.describe()));

    let installer = sdk_args.installer;
    let cache_dir = sdk_args.cache_dir(ctx);
    let sdk_version = sdk.info.version.clone();
    let compiler_cache =
        CompilerCache::locate(use_ccache, use_sccache, sccache_no_wrap, ctx.env())?;
    let plan = plan::assemble(PlanInputs {
        projects: selected,
        families: &families,
        sdk,
        sdk_install: install
            .as_ref()
            .map(|s| vec![s.install_cmd(&sdk_version)])
            .unwrap_or_default(),
        venv,
        installer,
        cache_dir,
        output_dir: output_dir.clone(),
        targets: target_choice,
        release_type,
        version_suffix,
        build_number: pytorch_build_number,
        flash_attention,
        compiler_cache,
        clean,
        jobs,
        base_env: ctx.env(),
        notes,
    })?;

    // `rockbuild lock` named every wheel up front: the plan must name them the same.
    if let (Some(lock), Some(path)) = (&lock, &lock_path) {
        lock.expect_versions(
            path,
            "the build plan",
            plan.projects
                .iter()
                .map(|p| (p.name.as_str(), p.version.as_str())),
        )?;
    }
    if dry_run {
        ctx.ui.data(&if json {
            plan.to_json()?
        } else {
            plan.to_text()
        });
        return Ok(ExitStatus::Success);
    }

    // Every computed version goes into the lock before anything is compiled.
    if let (Some(lock), Some(path)) = (lock.as_mut(), lock_path.as_deref()) {
        lock.build = Some(build::build_record(&plan, index_url));
        lock.write(path)?;
    }
    run_plan(ctx, &plan)
}

/// Runs the plan, writes the report and the summary, and turns failures into the error the
/// user reads.
fn run_plan(ctx: &Context, plan: &plan::Plan) -> anyhow::Result<ExitStatus> {
    ctx.ui.status(format!(
        "building {} for {} with rocm {} ({} at a time)",
        plan.projects
            .iter()
            .map(|p| format!("{} {}", p.name, p.version))
            .collect::<Vec<_>>()
            .join(", "),
        plan.targets.cmake_list(),
        plan.sdk.info.version,
        plan.jobs
    ));
    let previous = if plan.clean {
        None
    } else {
        BuildReport::read(&plan.output_dir)
    };
    fs_err::create_dir_all(&plan.logs_dir)?;
    let cache_log = plan.logs_dir.join("compiler-cache.log");
    for (cmd, tolerate) in plan.compiler_cache.before(&cache_log) {
        if let Err(error) = ctx.runner.run(&cmd)
            && !tolerate
        {
            return Err(error.into());
        }
    }
    let started_at = jiff::Timestamp::now();
    let clock = std::time::Instant::now();
    let outcomes = execute::execute(ctx, plan, previous.as_ref())?;
    let wall = clock.elapsed();
    let stats = match plan.compiler_cache.stats(&cache_log) {
        Some(cmd) => match ctx.runner.run(&cmd) {
            Ok(output) => {
                ctx.ui.group(
                    &format!(
                        "{} statistics",
                        plan.compiler_cache.name().unwrap_or_default()
                    ),
                    output.stdout.trim_end(),
                );
                Some(output.stdout)
            }
            Err(error) => {
                ctx.ui.warn(format!(
                    "could not read the compiler cache statistics: {error}"
                ));
                None
            }
        },
        None => None,
    };
    let report = build::report(plan, &outcomes, started_at, wall, stats);
    let report_path = report.write(&plan.output_dir)?;
    let markdown = report.markdown();
    crate::fsutil::write_atomic(&plan.output_dir.join(SUMMARY_FILE), markdown.as_bytes())?;
    ctx.ui.step_summary(&markdown);
    let rows: Vec<Vec<String>> = report
        .projects
        .iter()
        .map(|(name, p)| {
            vec![
                name.clone(),
                p.status.as_str().into(),
                p.version.clone(),
                p.wheel.clone().unwrap_or_else(|| "-".into()),
                format!("{:.1}s", p.duration_seconds),
            ]
        })
        .collect();
    ctx.ui.status(crate::ui::text_table(
        &["project", "status", "version", "wheel", "time"],
        &rows,
    ));
    ctx.ui.status(format!(
        "wall {:.1}s (critical path {:.1}s, serial {:.1}s); report {}; wheels in {}",
        report.wall_seconds,
        report.critical_path_seconds,
        report.serial_seconds,
        report_path.display(),
        plan.output_dir.display()
    ));

    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    for outcome in outcomes {
        match (outcome.status, outcome.error) {
            (Status::Failed, Some(error)) => {
                if execute::interrupted(&error) {
                    return Err(error);
                }
                failures.push((outcome.name, crate::diagnostics::render(&error)));
            }
            (Status::Skipped, _) => skipped.push(outcome.name),
            _ => {}
        }
    }
    if let Some(signal) = ctx.runner.interrupted() {
        return Ok(ExitStatus::Signal(signal));
    }
    if !failures.is_empty() {
        return Err(BuildFailed {
            failures,
            skipped,
            total: plan.projects.len(),
        }
        .into());
    }
    Ok(ExitStatus::Success)
}
