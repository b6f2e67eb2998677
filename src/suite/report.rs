//! What one shard leaves behind (`<output-dir>/shard.json`, next to `junit/` and `logs/`): the
//! facts of the run, the wheels it installed from the index under test, its steps, and the
//! JUnit files `rockbuild test-report` combines. A shard is not evidence on its own: only the
//! combined report, which checks that every expected shard is there, is.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Error;
use super::catalog::TestConfig;
use super::skips::Platform;
use crate::promote::evidence::{Check, Outcome, TestedWheel};

pub const SHARD_SCHEMA: u32 = 1;
pub const SHARD_KIND: &str = "pytorch-test-shard";
/// The file name of a shard report inside its output directory.
pub const SHARD_FILE: &str = "shard.json";

/// The test sources a shard ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceRecord {
    pub version: Option<String>,
    pub commit: Option<String>,
}

/// The GPUs a shard ran on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuRecord {
    /// What the test processes saw; `None` when no GPU was used.
    pub hip_visible_devices: Option<String>,
    pub archs: Vec<String>,
    /// Why no GPU was used, or what was dropped (GPU_DEVICE_ORDINAL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The skip lists applied to a shard.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkipRecord {
    /// The skip-list files that applied.
    pub files: Vec<String>,
    /// How many test names were filtered.
    pub names: usize,
    /// The `-k` expression handed to run_test.py.
    pub k: Option<String>,
    /// Hang-listed modules excluded (`--exclude`).
    pub excluded_modules: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardReport {
    pub schema: u32,
    pub kind: String,
    pub generated_by: String,
    pub config: TestConfig,
    pub shard: u32,
    pub num_shards: u32,
    /// The index under test (credentials masked).
    pub index_url: String,
    pub python: Option<String>,
    /// The installed torch's version.
    pub torch: Option<String>,
    pub source: Option<SourceRecord>,
    pub platform: Platform,
    pub amdgpu_family: Option<String>,
    pub gpus: GpuRecord,
    pub skips: SkipRecord,
    pub started: jiff::Timestamp,
    pub finished: jiff::Timestamp,
    pub result: Outcome,
    /// Every distribution installed from the index under test, with its file's SHA-256.
    pub wheels: Vec<TestedWheel>,
    /// The ROCm SDK's test environment the tests ran in (configs that compile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sdk_env: Option<super::sdk_env::SdkEnvRecord>,
    /// The runner's GPUs and driver, read before anything was installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<super::preflight::RunnerFacts>,
    /// Why the runner could not run the suite: nothing was tested (not a test failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfit: Option<String>,
    /// Where the test times came from and the shard's tests as run_test.py computes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<super::times::TimesRecord>,
    pub steps: Vec<Check>,
    /// JUnit files of the run, relative to the shard's directory.
    pub junit: Vec<String>,
}

impl ShardReport {
    /// Reads `<dir>/shard.json`.
    pub fn read(path: &Path) -> Result<ShardReport, String> {
        let text =
            crate::input::read_text(path, crate::input::REPORT).map_err(|e| e.to_string())?;
        let value: serde_json::Value = crate::input::strict::json(&text)
            .map_err(|e| format!("{}:{}: not JSON: {e}", e.line(), e.column()))?;
        match (
            value.get("kind").and_then(serde_json::Value::as_str),
            value.get("schema").and_then(serde_json::Value::as_u64),
        ) {
            (Some(SHARD_KIND), Some(schema)) if schema == u64::from(SHARD_SCHEMA) => {}
            (Some(SHARD_KIND), schema) => {
                return Err(format!(
                    "shard report schema {} is not supported (this rockbuild reads {SHARD_SCHEMA})",
                    schema.map_or_else(|| "(none)".to_string(), |s| s.to_string())
                ));
            }
            _ => return Err(format!("not a {SHARD_KIND} report (`kind`)")),
        }
        serde_json::from_value(value).map_err(|e| format!("not a valid shard report: {e}"))
    }
}

/// One JUnit file of a shard, parsed or not.
#[derive(Clone, Debug)]
pub struct JunitFile {
    pub path: String,
    pub report: Result<crate::junit::Report, String>,
}

/// A shard report as read from disk, with its JUnit files.
#[derive(Clone, Debug)]
pub struct LoadedShard {
    /// Where it was found (for messages).
    pub file: String,
    pub report: ShardReport,
    pub junit: Vec<JunitFile>,
}

/// Every shard report (`shard.json`) under the given directories, with its JUnit files.
pub fn load_shards(dirs: &[PathBuf]) -> Result<Vec<LoadedShard>, Error> {
    let mut shards = Vec::new();
    for dir in dirs {
        if !dir.is_dir() {
            return Err(Error::BadShard {
                file: dir.display().to_string(),
                message: "not a directory".into(),
            });
        }
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(dir)
            .max_depth(4)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file() && e.file_name() == SHARD_FILE)
            .map(|e| e.into_path())
            .collect();
        found.sort();
        for path in found {
            let file = path.display().to_string();
            let report = ShardReport::read(&path).map_err(|message| Error::BadShard {
                file: file.clone(),
                message,
            })?;
            let base = path.parent().unwrap_or(dir);
            let junit = report
                .junit
                .iter()
                .map(|relative| JunitFile {
                    path: relative.clone(),
                    // A path the report names stays inside the shard's directory.
                    report: crate::input::read_tree_text(base, relative, crate::input::REPORT)
                        .map_err(|e| e.to_string())
                        .and_then(|text| text.ok_or_else(|| format!("{relative}: no such file")))
                        .and_then(|text| crate::junit::parse(&text).map_err(|e| e.to_string())),
                })
                .collect();
            shards.push(LoadedShard {
                file,
                report,
                junit,
            });
        }
    }
    if shards.is_empty() {
        return Err(Error::NoShards {
            dirs: dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(shards)
}
