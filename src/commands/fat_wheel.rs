//! `rockbuild fat-wheel`: verify a Windows torch wheel, put the ROCm SDK into it
//! (`multiarch::fat`), then verify the result on its own: a sound wheel whose every DLL import
//! resolves inside it or on Windows. A result that fails is removed, never left beside the
//! input.

use crate::cli::FatWheelArgs;
use crate::context::Context;
use crate::exit::ExitStatus;
use crate::multiarch::fat::{FatError, make_fat};
use crate::ui::human_bytes;
use crate::wheel::verify::{DEFAULT_MEMORY_BUDGET, WheelExpectations, verify_wheels};

pub fn run(args: FatWheelArgs, ctx: &Context) -> anyhow::Result<ExitStatus> {
    let wheel = ctx.absolute(&args.wheel);
    let sdk_root = ctx.absolute(&args.rocm);
    let out_dir = match &args.output_dir {
        Some(dir) => ctx.absolute(dir),
        None => wheel
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_else(|| ctx.absolute(std::path::Path::new("."))),
    };
    // The container, RECORD and metadata of the input must be sound: its RECORD lines are
    // carried over, not recomputed. Targets, tags and the set are `verify`'s to judge.
    let expect = WheelExpectations {
        allow_linux_tag: true,
        ..WheelExpectations::default()
    };
    let input = verify_wheels(std::slice::from_ref(&wheel), &expect, DEFAULT_MEMORY_BUDGET);
    if let Some(report) = input.iter().find(|r| !r.ok()) {
        return Err(FatError::Unsound {
            wheel: wheel.clone(),
            problems: report.problems.iter().map(ToString::to_string).collect(),
        }
        .into());
    }
    let fat = make_fat(&wheel, &sdk_root, &out_dir)?;
    let mut reports = verify_wheels(
        std::slice::from_ref(&fat.path),
        &expect,
        DEFAULT_MEMORY_BUDGET,
    );
    crate::verify::check_imports(&mut reports);
    if let Some(report) = reports.iter().find(|r| !r.ok()) {
        let problems = report.problems.iter().map(ToString::to_string).collect();
        fs_err::remove_file(&fat.path)?;
        return Err(FatError::Unsound {
            wheel: fat.path.clone(),
            problems,
        }
        .into());
    }
    let images = reports
        .iter()
        .flat_map(|r| &r.libraries)
        .filter(|l| l.format == crate::wheel::verify::NativeFormat::Pe)
        .count();
    ctx.ui.status(format!(
        "fat-wheel: {} → {} ({} SDK files, {}; {} left out by the rule; every import of its {images} PE images resolves)",
        fat.old_version,
        fat.path.display(),
        fat.sdk_files,
        human_bytes(fat.sdk_bytes),
        fat.sdk_excluded,
    ));
    if args.json {
        ctx.ui.data(&serde_json::to_string_pretty(&fat)?)?;
    }
    Ok(ExitStatus::Success)
}
