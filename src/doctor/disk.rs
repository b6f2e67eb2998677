//! Free space and file-system limits where a build writes, and what a build needs there.
//!
//! The needs, per location (docs/local.md lists them with their sources):
//!
//! | location | fail below | warn below | basis |
//! |---|---|---|---|
//! | checkout root (sources + build trees) | 30 GiB | 128 GiB | TheRock's env_check (`build_tools/hack/env_check/check_tools.py`, CheckDisk) warns below 128 GB for "TheRock (and PyTorch)" builds; its environment guide puts fetched sources alone at ~30 GB |
//! | output dir (wheels, logs, default venv) | 10 GiB | 20 GiB | a multi-target torch wheel passes 4 GiB (the reason for ZIP64 in wheels, pain-points §F; docs/performance.md's torch-shaped wheel is 4.93 GiB), plus the SDK venv |
//! | cache dir (pip/uv cache, compiler cache) | 5 GiB | 10 GiB | ccache's default max_size is 5 GiB; sccache's default SCCACHE_CACHE_SIZE is 10 GiB (docs/Local.md) |
//!
//! Locations on one file system add their needs up.

use std::path::{Path, PathBuf};

const GIB: u64 = 1 << 30;

/// Which directory a need belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    CheckoutRoot,
    OutputDir,
    CacheDir,
}

impl Role {
    pub fn label(self) -> &'static str {
        match self {
            Role::CheckoutRoot => "checkout root",
            Role::OutputDir => "output dir",
            Role::CacheDir => "cache dir",
        }
    }

    /// (fail below, warn below) in bytes.
    pub fn needs(self) -> (u64, u64) {
        match self {
            Role::CheckoutRoot => (30 * GIB, 128 * GIB),
            Role::OutputDir => (10 * GIB, 20 * GIB),
            Role::CacheDir => (5 * GIB, 10 * GIB),
        }
    }
}

/// What the file system under a path says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsFacts {
    /// The path itself, or its nearest existing ancestor when it does not exist yet.
    pub existing: PathBuf,
    /// `st_dev`: locations with the same one share free space.
    pub device: u64,
    /// Bytes an unprivileged user may still write (`f_bavail * f_frsize`).
    pub available: u64,
    /// The longest file name the file system accepts (`f_namemax`; 255 on ext4, 143 on eCryptfs).
    pub name_max: u64,
}

/// The nearest ancestor of `path` (itself included) that exists.
pub fn existing_ancestor(path: &Path) -> Option<&Path> {
    path.ancestors().find(|p| p.exists())
}

/// The file system of the nearest existing ancestor of `path` (statvfs(3) on Linux).
pub fn inspect(path: &Path) -> std::io::Result<FsFacts> {
    let existing = existing_ancestor(path)
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "no existing ancestor"))?
        .to_path_buf();
    let space = crate::platform::host::disk_space(&existing)?;
    Ok(FsFacts {
        existing,
        device: space.device,
        available: space.available,
        name_max: space.name_max,
    })
}
