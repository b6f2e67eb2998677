//! `rockbuild detect` settings: where sysfs is, which tables, and the runtime's variables.

use std::path::PathBuf;

use anyhow::Context as _;

use crate::cli::DetectArgs;
use crate::context::Context;
use crate::detect::{self, DeviceTable, RuntimeEnv, Selection, Tables};
use crate::env_vars::{self, Environment};
use crate::lock::BuildMode;
use crate::settings::{Source, Sourced};
use crate::stack::FamilyTable;

/// The value that asks a flag to take its answer from this machine's GPUs.
pub const AUTO: &str = "auto";

pub struct DetectSettings {
    /// `/` on a real machine; a fake tree in tests.
    pub sysfs_root: PathBuf,
    pub families: FamilyTable,
    pub devices: DeviceTable,
    pub runtime: RuntimeEnv,
    pub json: bool,
}

impl DetectSettings {
    pub fn resolve(args: DetectArgs, ctx: &Context) -> anyhow::Result<Self> {
        let DetectArgs {
            sysfs_root,
            families,
            json,
        } = args;
        Ok(DetectSettings {
            sysfs_root: ctx.absolute(&sysfs_root),
            families: crate::stack::load_families(families.map(|p| ctx.absolute(&p)).as_deref())?,
            devices: device_table()?,
            runtime: runtime_env(ctx.env()),
            json,
        })
    }

    pub fn tables(&self) -> Tables<'_> {
        Tables {
            families: &self.families,
            devices: &self.devices,
        }
    }
}

/// The shipped device table (validated by a unit test; an error here is a broken build).
pub fn device_table() -> anyhow::Result<DeviceTable> {
    DeviceTable::builtin()
        .map_err(crate::detect::Error::DeviceTable)
        .context("loading the built-in GPU device table")
}

/// The runtime variables that change what a build targets; empty values count as unset.
pub fn runtime_env(env: &Environment) -> RuntimeEnv {
    let get = |name: &str| env.non_empty(name).map(str::to_string);
    RuntimeEnv {
        hsa_override_gfx_version: get(env_vars::HSA_OVERRIDE_GFX_VERSION),
        hip_visible_devices: get(env_vars::HIP_VISIBLE_DEVICES),
        pytorch_rocm_arch: get(env_vars::PYTORCH_ROCM_ARCH),
    }
}

pub fn is_auto(value: Option<&str>) -> bool {
    value.is_some_and(|v| v.trim().eq_ignore_ascii_case(AUTO))
}

/// Detection on this machine (or under `$ROCKBUILD_SYSFS_ROOT`), for the `auto` values.
fn detect_here(ctx: &Context, families: &FamilyTable) -> anyhow::Result<Selection> {
    let root = ctx
        .env()
        .non_empty(env_vars::ROCKBUILD_SYSFS_ROOT)
        .map_or_else(|| PathBuf::from("/"), PathBuf::from);
    let devices = device_table()?;
    let snapshot = detect::sysfs::read(&root)?;
    let tables = Tables {
        families,
        devices: &devices,
    };
    let detection = detect::resolve(&snapshot, &tables, &runtime_env(ctx.env()))?;
    let selection = detection.selection().map_err(detect::Error::from)?;
    Ok(selection.clone())
}

/// `--pytorch-rocm-arch auto` and `--amdgpu-family auto`: the targets, or the families, of
/// this machine's GPUs; other values pass through (the family as given by its flag).
pub fn auto_targets(
    ctx: &Context,
    families: &FamilyTable,
    arch: Option<String>,
    family: Option<String>,
) -> anyhow::Result<(Option<String>, Option<Sourced<String>>)> {
    let flag = |value: String| Sourced {
        value,
        source: Source::Flag("--amdgpu-family".into()),
    };
    if !is_auto(arch.as_deref()) && !is_auto(family.as_deref()) {
        return Ok((arch, family.map(flag)));
    }
    let selection = detect_here(ctx, families)?;
    let found = selection.summary();
    let arch = if is_auto(arch.as_deref()) {
        ctx.ui.status(format!("--pytorch-rocm-arch auto: {found}"));
        Some(selection.target_list())
    } else {
        arch
    };
    let family = match family {
        Some(value) if is_auto(Some(&value)) => {
            ctx.ui.status(format!("--amdgpu-family auto: {found}"));
            Some(Sourced {
                value: selection.families.join(";"),
                source: Source::Inferred(format!(
                    "--amdgpu-family auto (this machine's {})",
                    selection.target_list()
                )),
            })
        }
        other => other.map(flag),
    };
    Ok((arch, family))
}

/// `--index-url auto` for a set of `mode`: the family table's multi-arch index for a
/// multi-arch one (it serves every family, whatever this machine holds), else
/// [`auto_index_url`].
pub fn auto_index_url_for(
    ctx: &Context,
    index_url: Option<String>,
    families: &FamilyTable,
    mode: BuildMode,
) -> anyhow::Result<Option<String>> {
    if !is_auto(index_url.as_deref()) || mode.is_per_family() {
        return auto_index_url(ctx, index_url);
    }
    let url = families
        .multi_arch_index_url()
        .ok_or(detect::Error::NoMultiArchIndex)?
        .to_string();
    ctx.ui.status(format!(
        "--index-url auto: {url} (the multi-arch index, one for every family)"
    ));
    Ok(Some(url))
}

/// `--index-url auto`: the index of the family of this machine's GPUs (one family only);
/// other values pass through.
pub fn auto_index_url(ctx: &Context, index_url: Option<String>) -> anyhow::Result<Option<String>> {
    if !is_auto(index_url.as_deref()) {
        return Ok(index_url);
    }
    let families = crate::stack::load_families(None)?;
    let selection = detect_here(ctx, &families)?;
    let url = selection
        .index_url()
        .map_err(detect::Error::from)?
        .to_string();
    let layout = families.index_layout();
    ctx.ui.status(format!(
        "--index-url auto: {url} (the {} of family {}, this machine's {}, decided by {})",
        layout.label(),
        selection.families.join(";"),
        selection.target_list(),
        selection.decided_by
    ));
    if let Some(note) = layout.note() {
        ctx.ui.status(format!("note: {note}"));
    }
    Ok(Some(url))
}
