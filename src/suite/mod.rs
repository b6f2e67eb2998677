//! The test stage: PyTorch's own test suite (test/run_test.py of a torch checkout at the tested
//! version) and the built-in GPU smoke suite, against the wheels installed from the index under
//! test — one shard at a time, combined afterwards into the report `promote` reads.
//!
//! * [`skips`]: skip lists and the hang list as data, selected per run, the `-k` filter;
//! * [`gpu`]: the device query and the choice of GPUs before torch is imported;
//! * [`catalog`]: test configs, shard counts, `BUILD_ENVIRONMENT`, requirements;
//! * [`runtest`]: run_test.py's command lines;
//! * [`times`]: the test times run_test.py balances shards with, exported once per ref;
//! * [`shards`]: run_test.py's sharding rule, so a plan shows a shard's tests;
//! * [`sdk_env`]: the ROCm SDK's test environment (`rocm-sdk init`, ROCM_HOME, its clang);
//! * [`input`]: what a shard is asked to do (`settings::test` resolves it);
//! * [`inspect`]: the test sources and the torch to install, as found;
//! * [`preflight`]: the runner's GPUs and driver before anything is installed;
//! * [`plan`]: the plan of a shard, a pure function of settings and the inspected world;
//! * [`run`]: its walk (venv, install with pip's report, query, runs, JUnit);
//! * [`report`]: what a shard leaves behind; [`summary`]: shards combined.

pub mod catalog;
pub mod gpu;
pub mod input;
pub mod inspect;
pub mod plan;
pub mod preflight;
pub mod report;
pub mod requirements_ci;
pub mod run;
pub mod runtest;
pub mod sdk_env;
pub mod shards;
pub mod skips;
pub mod summary;
pub mod times;

use crate::exit::{ExitStatus, HasExitStatus};
use crate::stack::ConfigError;

/// Everything that can go wrong in `rockbuild test` and `rockbuild test-report`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{flag}: {message}")]
    Flag { flag: &'static str, message: String },
    #[error("the torch checkout {}: {bad}", dir.display())]
    RequirementsCi {
        dir: std::path::PathBuf,
        bad: requirements_ci::BadLine,
    },
    #[error(
        "{dir} has no test/run_test.py: --pytorch-dir must be a PyTorch checkout (`rockbuild checkout --project torch --no-hipify --no-submodules --from-lock LOCK --checkout-dir DIR`)"
    )]
    NoRunTest { dir: String },
    #[error(
        "the test sources are PyTorch {source_version} ({file}) but the wheel under test is torch {wheel_version}: tests from another release fail for reasons that are not bugs. Check out matching sources, or pass --allow-version-mismatch"
    )]
    VersionMismatch {
        source_version: String,
        file: String,
        wheel_version: String,
    },
    #[error(
        "{dir} is at commit {head}, but {lock} pins torch at {locked}: check out the locked commit (`rockbuild checkout --project torch --no-hipify --no-submodules --from-lock {lock} --checkout-dir {dir}`), or pass --allow-version-mismatch"
    )]
    CommitMismatch {
        dir: String,
        head: String,
        lock: String,
        locked: String,
    },
    #[error(
        "{0}; run on a GPU runner, or pass --allow-no-gpu to run with the GPU checks reported as skipped"
    )]
    NoGpu(gpu::GpuError),
    #[error("GPU selection: {0}")]
    Gpu(gpu::GpuError),
    #[error("{file}: {message}")]
    BadShard { file: String, message: String },
    #[error("no shard results ({}) under {dirs}", report::SHARD_FILE)]
    NoShards { dirs: String },
    #[error("{config} shard {shard} is in both {first} and {second}")]
    DuplicateShard {
        config: String,
        shard: String,
        first: String,
        second: String,
    },
    #[error(
        "the {config} config has {first_count} shards according to {first} but {second_count} according to {second}"
    )]
    ShardCountsDisagree {
        config: String,
        first: String,
        first_count: u32,
        second: String,
        second_count: u32,
    },
    #[error(
        "shards tested different indexes: {first_url} ({first}) and {second_url} ({second}); combine the results of one index at a time"
    )]
    IndexesDisagree {
        first: String,
        first_url: String,
        second: String,
        second_url: String,
    },
    #[error("{summary}")]
    TestsFailed { summary: String },
    #[error("runner unfit: {reason}; nothing was tested ({report})")]
    RunnerUnfit { reason: String, report: String },
    #[error("interrupted by signal {signal}; {report} records the run as cancelled")]
    Interrupted { signal: i32, report: String },
}

impl HasExitStatus for Error {
    fn exit_status(&self) -> ExitStatus {
        match self {
            Error::NoGpu(_) | Error::Gpu(_) | Error::TestsFailed { .. } => ExitStatus::Failure,
            Error::Interrupted { signal, .. } => ExitStatus::Signal(*signal),
            Error::RunnerUnfit { .. } => ExitStatus::RunnerUnfit,
            _ => ExitStatus::Usage,
        }
    }
}
