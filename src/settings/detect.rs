//! `rockbuild detect` settings: where sysfs is, which tables, and the runtime's variables.

use std::path::PathBuf;

use anyhow::Context as _;

use crate::cli::DetectArgs;
use crate::context::Context;
use crate::detect::{DeviceTable, RuntimeEnv, Tables};
use crate::env_vars::{self, Environment};
use crate::stack::FamilyTable;

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
