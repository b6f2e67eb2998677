//! The kpack split of a fat wheel: one host wheel without device code and one device wheel per
//! GPU target, as TheRock's multi-arch builds make them with rocm-systems' `shared/kpack`
//! splitter (`python -m rocm_kpack.tools.split_python_wheels --device-package-prefix
//! amd-torch-device --overlay-root torch/ --device-requires-dist "rocm-sdk-device-@GFXARCH@ ==
//! <SDK>" --compression zstd`):
//!
//! - every ELF file under the overlay root with a `.hip_fatbin` section, and every PE image
//!   (Windows DLL, `.pyd`) with a `.hip_fat` section, is a fat binary; its code objects (host
//!   entries left out) go to the kernel pack of their target, under the key `<path under the
//!   overlay root>#<n>` (n counts that target's code objects in the binary);
//! - the binary itself is transformed ([`crate::binary::elf::transform`],
//!   [`crate::binary::pe::transform`]) to find them at
//!   `../…/.kpack/<group>_@GFXARCH@.kpack` under the kernel name `<path>`; both formats give
//!   the same pack names, keys and device wheels;
//! - the host wheel keeps the fat wheel's file name and every other entry, byte for byte; its
//!   METADATA gains the device extras ([`device::host_metadata`]);
//! - the device wheel of a target holds `<overlay>/.kpack/<group>_<target>.kpack` (the group
//!   is the host's name, lowercase, `-` → `_`) and its own `.dist-info`.
//!
//! The steps: [`read`] opens the fat wheel and reads, unbundles and transforms its fat
//! binaries (in parallel); [`plan`] decides, without writing anything, what the host and
//! device wheels hold and are called ([`SplitPlan`]); [`write`] compresses the packs (in
//! parallel) and writes every wheel. Unchanged entries of the host wheel are copied without
//! inflating them.

mod plan;
mod read;
mod write;

use std::path::{Path, PathBuf};

use crate::binary::kpack::archive::Compression;

pub use plan::{DevicePlan, PackPlan, SplitPlan};

/// What a split is told: how the project names its device packages and where its files are.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SplitSpec {
    /// `amd-torch-device`.
    pub device_prefix: String,
    /// The package directory the packs overlay (`torch`): its `.kpack/` is where they go.
    pub overlay_root: String,
    /// `Requires-Dist` of every device wheel, `@GFXARCH@` for its target.
    pub device_requires: Vec<String>,
    pub compression: Compression,
}

/// Why a wheel cannot be split. Each variant names the wheel and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    #[error("{0}")]
    Wheel(String),
    #[error("{}: no '{overlay}/' directory to split (the overlay root of its device packages)", wheel.display())]
    NoOverlay { wheel: PathBuf, overlay: String },
    #[error("{}: no fat binary under '{overlay}/' (no ELF file with a .hip_fatbin section, no PE image with a .hip_fat section): nothing to split; was it built for GPU targets, or split already?", wheel.display())]
    NoFatBinaries { wheel: PathBuf, overlay: String },
    #[error("{}: '{path}': {detail}", wheel.display())]
    Binary {
        wheel: PathBuf,
        path: String,
        detail: String,
    },
    #[error("{0}")]
    Metadata(String),
    #[error("the host wheel would replace its input {}: split into another directory", .0.display())]
    SameFile(PathBuf),
    #[error("writing {}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
}

/// A device wheel written by a split.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeviceWheel {
    pub processor: String,
    pub name: String,
    pub path: PathBuf,
    pub code_objects: usize,
}

/// What a split wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Split {
    pub host: PathBuf,
    pub devices: Vec<DeviceWheel>,
    /// Fat binaries transformed, by path in the wheel.
    pub fat_binaries: Vec<String>,
    /// Bytes the host wheel's binaries lost.
    pub bytes_removed: u64,
}

/// Splits the fat wheel `wheel` into `out_dir`: the host wheel under the same file name, one
/// device wheel per target. Every output is written to a temporary file and renamed into
/// place, so an interrupted split leaves no half-written wheel.
pub fn split_wheel(wheel: &Path, out_dir: &Path, spec: &SplitSpec) -> Result<Split, SplitError> {
    let fat = read::read(wheel, out_dir, spec)?;
    let plan = plan::plan(&fat.facts, &fat.binaries, spec)?;
    write::write(&fat, &plan, spec, out_dir)
}
