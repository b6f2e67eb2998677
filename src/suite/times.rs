//! Test times for balancing shards, exported the way the reference does it: TheRock's
//! test_pytorch_wheels_full.yml runs the checkout's own tools/stats/export_test_times.py
//! (from the checkout's root, `PYTHONPATH=.`, with `BUILD_ENVIRONMENT` set) before
//! `run_test.py --shard N M`, which reads `.additional_ci_files/test-times.json` (see
//! [`shards`](super::shards) for upstream's rules).
//!
//! rockbuild runs the export once per ref: the files it wrote are kept in the cache under the
//! torch commit and handed to later shards of that commit. When the export writes nothing
//! usable (no network: upstream prints "Couldn't download test times..." and exits 0),
//! run_test.py's default sharding applies (round robin) and the plan, the shard report and
//! the summary say so; it is never a failure.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::catalog::TestConfig;
use super::plan::{Step, StepKind};
use super::runtest::{Invocation, Shard};
use super::shards::{self, FileTimes, Sharding, TEST_CLASS_TIMES_FILE, TEST_TIMES_FILE};

/// The export script, relative to the checkout's root.
pub const EXPORT_SCRIPT: &str = "tools/stats/export_test_times.py";

/// What the run found about the test times before planning.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TimesFacts {
    /// This ref's directory in the cache; `None` when the sources' commit is unknown.
    pub cache_dir: Option<PathBuf>,
    /// The times run_test.py will read: from the cache (before the run), or exported.
    pub file: Option<Loaded>,
    /// Why there are no times to use (after an export, or a cached file that is unusable).
    pub unavailable: Option<String>,
    /// The test modules of the checkout (test_*.py under test/, named as run_test.py names
    /// them).
    pub tests: Vec<String>,
    pub has_export_script: bool,
}

/// A times file and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    pub times: FileTimes,
    pub from: String,
}

/// The times of a shard, as planned.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimesPlan {
    pub build_environment: String,
    pub test_config: String,
    /// The export; it runs when the cache has nothing for this ref.
    pub export: Step,
    pub will_export: bool,
    /// Where run_test.py reads the files (`<checkout>/.additional_ci_files`).
    pub into: PathBuf,
    pub cache_dir: Option<PathBuf>,
    /// Where the times come from, as printed.
    pub source: String,
    /// Why run_test.py's default sharding applies.
    pub note: Option<String>,
    /// The shard's tests per run_test.py invocation, as run_test.py will compute them.
    pub shards: Vec<ShardTests>,
}

/// One invocation's share of the tests.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardTests {
    pub label: String,
    /// Estimated seconds, when there are times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_secs: Option<f64>,
    /// `test_nn 1/1` per test file or pytest shard, in run order.
    pub tests: Vec<String>,
    /// How many tests the invocation selects over all shards.
    pub of: usize,
}

/// What a shard report records about its times.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TimesRecord {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub shards: Vec<ShardTests>,
}

/// The test modules under `<checkout>/test`, as tools/testing/discover_tests.py names them
/// (`nn/test_convolution`), sorted.
pub fn discover(checkout: &Path) -> Vec<String> {
    let test_dir = checkout.join("test");
    let mut tests: Vec<String> = walkdir::WalkDir::new(&test_dir)
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            name != "test-reports" && name != "__pycache__"
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if !(name.starts_with("test_") && name.ends_with(".py")) {
                return None;
            }
            let relative = e.path().strip_prefix(&test_dir).ok()?.with_extension("");
            Some(
                relative
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/"),
            )
        })
        .collect();
    tests.sort();
    tests
}

/// Reads a times directory (the cache's or the checkout's): the file times run_test.py will
/// use, or why it cannot use them.
pub fn load(
    dir: &Path,
    build_environment: &str,
    test_config: &str,
) -> Result<Option<FileTimes>, String> {
    let times_path = dir.join(TEST_TIMES_FILE);
    if !times_path.is_file() {
        return Ok(None);
    }
    let read = |path: &Path| {
        crate::input::read_text(path, crate::input::REPORT).map_err(|e| e.to_string())
    };
    let times = shards::file_times(&read(&times_path)?, build_environment, test_config)
        .map_err(|e| format!("{}: {e}", times_path.display()))?;
    let class_path = dir.join(TEST_CLASS_TIMES_FILE);
    if class_path.is_file() {
        shards::check_class_times(&read(&class_path)?, build_environment, test_config)
            .map_err(|e| format!("{}: {e}", class_path.display()))?;
    }
    Ok(Some(times))
}

/// The tests an invocation selects among the checkout's modules, by the options rockbuild
/// passes (run_test.py `get_selected_tests`: `--include`, `--distributed-tests`, `--exclude`
/// and the `--exclude-*` groups, an exclude entry dropping the modules under it).
/// run_test.py's own platform blocklists are not known here.
fn selected(tests: &[String], args: &[String]) -> Vec<String> {
    let values = |flag: &str| -> Vec<String> {
        args.iter()
            .skip_while(|a| *a != flag)
            .skip(1)
            .take_while(|a| !a.starts_with('-'))
            .cloned()
            .collect()
    };
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let include = values("--include");
    let mut exclude = values("--exclude");
    if has("--exclude-jit-executor") {
        exclude.extend(
            [
                "test_jit_profiling",
                "test_jit_legacy",
                "test_jit_fuser_legacy",
            ]
            .map(String::from),
        );
    }
    if has("--exclude-distributed-tests") {
        exclude.push("distributed".into());
    }
    let distributed_only = has("--distributed-tests");
    let quantization = has("--exclude-quantization-tests");
    tests
        .iter()
        .filter(|t| include.is_empty() || include.contains(t))
        .filter(|t| !distributed_only || t.starts_with("distributed"))
        .filter(|t| !quantization || !t.contains("quantization"))
        .filter(|t| !exclude.iter().any(|e| t.starts_with(e.as_str())))
        .cloned()
        .collect()
}

/// The times part of a shard's plan.
pub fn plan(
    facts: &TimesFacts,
    checkout: &Path,
    python: &Path,
    build_environment: &str,
    config: TestConfig,
    shard: Shard,
    invocations: &[Invocation],
) -> TimesPlan {
    let test_config = config.run_test_config().to_string();
    let export = Step {
        label: "export test times".into(),
        kind: StepKind::Times,
        program: python.to_path_buf(),
        args: vec![EXPORT_SCRIPT.into()],
        cwd: checkout.to_path_buf(),
        // As the reference's "Export test times for sharding" step.
        env: vec![
            ("PYTHONPATH".into(), Some(".".into())),
            (
                crate::env_vars::BUILD_ENVIRONMENT.into(),
                Some(build_environment.to_string()),
            ),
        ],
        log: "export_test_times.log".into(),
        // import_test_stats.py tries each file 3 times with a 5 s timeout.
        timeout_secs: Some(300),
        installer: false,
        capture_stdout: false,
    };
    let sharded = shard.total > 1;
    let (source, note) = match (&facts.file, &facts.unavailable) {
        // One shard runs every selected test whatever the times say: nothing to export.
        _ if !sharded => (
            "not needed (one shard runs every selected test)".to_string(),
            None,
        ),
        (Some(loaded), _) => (
            format!(
                "{} (entry {})",
                loaded.from,
                loaded
                    .times
                    .pick
                    .map(|p| p.describe(build_environment, &test_config))
                    .unwrap_or_default()
            ),
            None,
        ),
        (None, Some(why)) => (
            "none".to_string(),
            Some(format!(
                "no test times: {why}; run_test.py's default sharding applies (round robin, as \
                 upstream's without test-times.json)"
            )),
        ),
        (None, None) if !facts.has_export_script => (
            "none".to_string(),
            Some(format!(
                "the checkout has no {EXPORT_SCRIPT}: run_test.py's default sharding applies \
                 (round robin)"
            )),
        ),
        (None, None) => (
            format!(
                "exported when the run starts{}; until then the lists below are run_test.py's \
                 default sharding (round robin), which also applies if the export writes nothing",
                match &facts.cache_dir {
                    Some(dir) => format!(", then cached in {}", dir.display()),
                    None => " (not cached: the sources' commit is unknown)".to_string(),
                }
            ),
            None,
        ),
    };
    let empty = FileTimes::default();
    let times = facts.file.as_ref().map_or(&empty, |l| &l.times);
    // rockbuild's runs set PYTORCH_TEST_RUN_EVERYTHING_IN_SERIAL=1 or TEST_CONFIG=distributed,
    // so run_test.py's `must_serial` holds for every test, and the worker count does not
    // matter.
    let every_test = |_: &str| true;
    let shards = invocations
        .iter()
        .map(|invocation| {
            let tests = selected(&facts.tests, &invocation.args);
            let mut all = shards::calculate_shards(
                shard.total.max(1) as usize,
                &tests,
                &times.seconds,
                Sharding {
                    procs: 1,
                    sort_by_time: false,
                    must_serial: &every_test,
                },
            );
            let index = (shard.number.max(1) - 1) as usize;
            let (estimate_secs, list) = if index < all.len() {
                all.swap_remove(index)
            } else {
                (0.0, Vec::new())
            };
            ShardTests {
                label: invocation.label.clone(),
                estimate_secs: (sharded && facts.file.is_some()).then_some(estimate_secs),
                tests: list.iter().map(ToString::to_string).collect(),
                of: tests.len(),
            }
        })
        .collect();
    TimesPlan {
        build_environment: build_environment.to_string(),
        test_config,
        export,
        will_export: sharded
            && facts.file.is_none()
            && facts.unavailable.is_none()
            && facts.has_export_script,
        into: checkout.join(shards::TIMES_DIR),
        cache_dir: facts.cache_dir.clone(),
        source,
        note,
        shards,
    }
}

impl TimesPlan {
    /// The plan's text.
    pub fn to_text(&self, out: &mut String, shard: Shard) {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "\ntest times for shard {shard} (BUILD_ENVIRONMENT={}, TEST_CONFIG={}; run_test.py reads {}): {}",
            self.build_environment,
            self.test_config,
            self.into.join(TEST_TIMES_FILE).display(),
            self.source
        );
        if let Some(note) = &self.note {
            let _ = writeln!(out, "  NOTE: {note}");
        }
        for tests in &self.shards {
            let estimate = tests
                .estimate_secs
                .map(|secs| format!(", est. {:.1} min", secs / 60.0))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {}: {} of {} test{}{estimate} (run_test.py's own blocklists may drop some)",
                tests.label,
                tests.tests.len(),
                tests.of,
                crate::ui::plural(tests.of),
            );
            for test in &tests.tests {
                let _ = writeln!(out, "    {test}");
            }
        }
    }

    pub fn record(&self) -> TimesRecord {
        TimesRecord {
            source: self.source.clone(),
            note: self.note.clone(),
            shards: self.shards.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn an_invocation_selects_as_run_test_py_does() {
        let tests = strings(&[
            "distributed/test_c10d_common",
            "inductor/test_torchinductor",
            "nn/test_convolution",
            "test_jit_legacy",
            "test_nn",
            "test_quantization",
            "test_torch",
        ]);
        let default = strings(&[
            "--exclude-jit-executor",
            "--exclude-distributed-tests",
            "--exclude-quantization-tests",
            "--keep-going",
            "--shard",
            "1",
            "2",
            "--exclude",
            "nn/test_convolution",
            "-k",
            "not test_a",
        ]);
        assert_eq!(
            selected(&tests, &default),
            ["inductor/test_torchinductor", "test_nn", "test_torch"]
        );
        let distributed = strings(&["--distributed-tests", "--verbose"]);
        assert_eq!(
            selected(&tests, &distributed),
            ["distributed/test_c10d_common"]
        );
        let inductor = strings(&[
            "--include",
            "test_torch",
            "test_nn",
            "--exclude",
            "inductor",
        ]);
        assert_eq!(selected(&tests, &inductor), ["test_nn", "test_torch"]);
    }

    #[test]
    fn the_checkouts_modules_are_named_as_discover_tests_names_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        for file in [
            "test/test_nn.py",
            "test/nn/test_pooling.py",
            "test/run_test.py",
            "test/test-reports/test_old.py",
            "test/__pycache__/test_nn.py",
            "test/helper_test_x.py",
        ] {
            let path = dir.path().join(file);
            fs_err::create_dir_all(path.parent().expect("parent")).expect("dir");
            fs_err::write(&path, "").expect("file");
        }
        assert_eq!(discover(dir.path()), ["nn/test_pooling", "test_nn"]);
    }
}
