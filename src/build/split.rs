//! The multi-arch build's last step: each fat wheel its plan names ([`Plan::splits`]) is moved
//! to `fat/` in the output directory and split there into the host wheel (under the fat
//! wheel's name, in the output directory) and one device wheel per target, as the reference's
//! workflow relocates each fat wheel before its splitter writes the host wheel in its place.
//! The fat wheels stay in `fat/`: the next build puts them back first ([`restore_fat`]), so
//! the build cache finds the wheels it built and a cached project is split again, never
//! rebuilt.

use std::path::Path;

use super::error::Error;
use super::execute::ProjectOutcome;
use super::plan::Plan;
use super::report::{DeviceReport, SplitReport, Status, WheelFile};
use crate::context::Context;
use crate::multiarch::device;
use crate::multiarch::split::{Split, split_wheel};

/// Where, under the output directory, the fat wheels of a multi-arch build are kept.
pub const FAT_DIR: &str = "fat";

/// Moves the fat wheels an earlier multi-arch build kept in `fat/` back where the build cache
/// looks for them (replacing the host wheels split from them).
pub fn restore_fat(plan: &Plan) -> Result<(), Error> {
    if plan.splits.is_empty() || !plan.fat_dir.is_dir() {
        return Ok(());
    }
    for entry in fs_err::read_dir(&plan.fat_dir).map_err(io(&plan.fat_dir))? {
        let path = entry.map_err(io(&plan.fat_dir))?.path();
        if path.extension().is_some_and(|e| e == "whl")
            && let Some(name) = path.file_name()
        {
            let target = plan.output_dir.join(name);
            fs_err::rename(&path, &target).map_err(io(&target))?;
        }
    }
    Ok(())
}

/// Splits the fat wheel of every project of [`Plan::splits`] that was built or reused, and
/// says what each split wrote, by project. Projects that failed or were skipped have no
/// wheel: nothing to split (their failure is reported already).
pub fn split_built(
    ctx: &Context,
    plan: &Plan,
    outcomes: &[ProjectOutcome],
) -> Result<Vec<(String, SplitReport)>, Error> {
    let mut reports = Vec::new();
    for split in &plan.splits {
        let Some(wheel) = outcomes
            .iter()
            .find(|o| {
                o.name == split.project
                    && matches!(o.status, Status::Built | Status::Cached | Status::Reused)
            })
            .and_then(|o| o.wheel.as_ref())
        else {
            continue;
        };
        fs_err::create_dir_all(&plan.fat_dir).map_err(io(&plan.fat_dir))?;
        let fat = plan.fat_dir.join(&wheel.name);
        fs_err::rename(&wheel.path, &fat).map_err(io(&fat))?;
        remove_device_wheels(&plan.output_dir, &split.spec.device_prefix)?;
        let result =
            split_wheel(&fat, &plan.output_dir, &split.spec).map_err(|error| Error::Split {
                project: split.project.clone(),
                wheel: fat.clone(),
                message: error.to_string(),
            })?;
        ctx.ui.status(format!(
            "split {}: host {} ({} fat binar{}, {} bytes of device code out) + {}",
            split.project,
            wheel.name,
            result.fat_binaries.len(),
            if result.fat_binaries.len() == 1 {
                "y"
            } else {
                "ies"
            },
            result.bytes_removed,
            result
                .devices
                .iter()
                .map(|d| format!("{} ({} code objects)", d.name, d.code_objects))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        reports.push((
            split.project.clone(),
            report_of(&plan.output_dir, &fat, &result)?,
        ));
    }
    Ok(reports)
}

/// The report of one split: names relative to the output directory, each wheel's digest.
fn report_of(output_dir: &Path, fat: &Path, split: &Split) -> Result<SplitReport, Error> {
    let file = |path: &Path| -> Result<WheelFile, Error> {
        let (sha256, size) = crate::fsutil::sha256_file(path)
            .map_err(|error| io(path)(std::io::Error::other(error)))?;
        Ok(WheelFile {
            wheel: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            sha256,
            size,
        })
    };
    let relative = fat.strip_prefix(output_dir).unwrap_or(fat);
    Ok(SplitReport {
        fat_wheel: relative.to_string_lossy().into_owned(),
        host: file(&split.host)?,
        fat_binaries: split.fat_binaries.clone(),
        bytes_removed: split.bytes_removed,
        devices: split
            .devices
            .iter()
            .map(|device| {
                Ok(DeviceReport {
                    name: device.name.clone(),
                    target: device.processor.clone(),
                    file: file(&device.path)?,
                    code_objects: device.code_objects,
                })
            })
            .collect::<Result<_, Error>>()?,
    })
}

/// The device wheels an earlier split of this prefix left (`amd_torch_device_gfx906-…`): a
/// target dropped since, or another version, must not stay beside the new set.
fn remove_device_wheels(dir: &Path, prefix: &str) -> Result<(), Error> {
    for entry in fs_err::read_dir(dir).map_err(io(dir))? {
        let path = entry.map_err(io(dir))?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if device::is_device_wheel(prefix, &name) {
            fs_err::remove_file(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |source| Error::OutputFile {
        project: "multi-arch split".into(),
        path: path.to_path_buf(),
        source,
    }
}
