//! What a shard is asked to do: the test stage's input, resolved by `settings::test` (flags,
//! the lock, the family table, the skip lists, configs/pytorch-tests.yaml and the environment)
//! and owned here, so the stage never names the settings layer.

use std::path::PathBuf;
use std::time::Duration;

use super::catalog::{Catalog, TestConfig};
use super::gpu::{DeviceQueryMode, GpuPolicy};
use super::runtest::Shard;
use super::skips::{KMode, MajorMinor, Platform, SkipLists};
use crate::sourced::{Source, Sourced};

/// What the lock says about the torch under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockFacts {
    pub path: PathBuf,
    /// torch's version in the lock's build record.
    pub torch_version: Option<String>,
    /// torch's commit.
    pub torch_commit: Option<String>,
    /// A multi-arch record's targets, whose device wheels the set has (empty: per-family).
    pub device_targets: Vec<String>,
}

/// What the test venv gets besides the wheels under test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirements {
    /// Requirement lines from configs/pytorch-tests.yaml.
    Lines(Vec<String>),
    /// A pip requirements file (`--test-requirements`).
    File(PathBuf),
}

#[derive(Debug)]
pub struct TestSettings {
    pub config: TestConfig,
    pub shard: Shard,
    /// `None` only for --print-skips.
    pub index_url: Option<String>,
    pub extra_index_urls: Vec<String>,
    pub find_links: Vec<String>,
    pub lock: Option<LockFacts>,
    pub pytorch_dir: Option<PathBuf>,
    pub include: Vec<String>,
    pub exclude: Vec<String>,
    pub passthrough: Vec<String>,
    pub timeout_secs: u64,
    pub run_timeout: Duration,
    pub keep_going: bool,
    pub allow_version_mismatch: bool,
    pub family: Option<String>,
    /// The targets `--amdgpu-family` names (for the skip lists while no GPU was queried).
    pub family_targets: Option<Vec<String>>,
    pub pytorch_version: Option<MajorMinor>,
    pub platform: Sourced<Platform>,
    pub device_query: Sourced<DeviceQueryMode>,
    pub gpu_policy: Sourced<GpuPolicy>,
    pub allow_no_gpu: bool,
    /// The job's own HIP_VISIBLE_DEVICES.
    pub preset_visible_devices: Option<String>,
    /// The job's GPU_DEVICE_ORDINAL (dropped for the tests).
    pub gpu_device_ordinal: Option<String>,
    pub skip_lists: SkipLists,
    pub skip_lists_source: Source,
    pub k_mode: KMode,
    pub exclude_jit_executor: bool,
    pub exclude_distributed: bool,
    pub exclude_quantization: bool,
    pub requirements: Requirements,
    /// PyTorch's test environment; a value the job already set wins.
    pub test_env: Vec<(&'static str, Sourced<String>)>,
    pub catalog: Catalog,
    /// The runner's GPUs and driver, as `detect` reads them.
    pub runner: super::preflight::RunnerFacts,
    pub output_dir: PathBuf,
    pub venv: Option<PathBuf>,
    pub python: PathBuf,
    pub print_skips: bool,
    pub dry_run: bool,
    pub json: bool,
}
