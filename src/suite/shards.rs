//! Which test modules a shard of run_test.py runs, from the test times PyTorch's
//! tools/stats/export_test_times.py exports, computed the way run_test.py computes it, so that
//! `--dry-run` shows a shard's list before anything runs. Pure.
//!
//! Upstream (pytorch/pytorch, as of PyTorch 2.6.0; read from Debian's pytorch 2.6.0+dfsg-7
//! source):
//! * tools/stats/import_test_stats.py writes the whole test-times.json of test-infra's
//!   generated stats (build environment → test config → test file → seconds) to
//!   `.additional_ci_files/test-times.json` at the checkout's root, test-class-times.json
//!   beside it; a failed download writes nothing (and leaves an earlier file in place);
//! * test/run_test.py `load_test_times_from_file` picks `[BUILD_ENVIRONMENT][TEST_CONFIG]`,
//!   else `["default"][TEST_CONFIG]`, else `["default"]["default"]`; without the file it
//!   warns "Using round robin sharding" and shards with no times at all;
//! * run_test.py shards its selected tests (sorted by name: without target-determination
//!   results every test scores 0 and `_traverse_scores` orders them by name) with
//!   tools/testing/test_selections.py `calculate_shards(..., sort_by_time=False)` — the "tests
//!   to run" batch is never sorted by time —, which [`calculate_shards`] follows.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// The directory under the checkout's root run_test.py reads the times from
/// (import_test_stats.py `ADDITIONAL_CI_FILES_FOLDER`).
pub const TIMES_DIR: &str = ".additional_ci_files";
/// Test file times (import_test_stats.py `TEST_TIMES_FILE`).
pub const TEST_TIMES_FILE: &str = "test-times.json";
/// Test class times (import_test_stats.py `TEST_CLASS_TIMES_FILE`).
pub const TEST_CLASS_TIMES_FILE: &str = "test-class-times.json";
/// A test file longer than this is split into pytest shards (test_selections.py `THRESHOLD`).
const THRESHOLD_SECS: f64 = 600.0;

/// Which entry of a times file run_test.py uses (`load_test_times_from_file`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pick {
    /// `[BUILD_ENVIRONMENT][TEST_CONFIG]`.
    Exact,
    /// `["default"][TEST_CONFIG]`: no stats for the build environment.
    DefaultEnvironment,
    /// `["default"]["default"]`: no stats for the test config either.
    DefaultDefault,
}

impl Pick {
    pub fn describe(self, build_environment: &str, test_config: &str) -> String {
        match self {
            Pick::Exact => format!("{build_environment} / {test_config}"),
            Pick::DefaultEnvironment => format!(
                "default / {test_config} (the file has no {test_config} times for {build_environment})"
            ),
            Pick::DefaultDefault => format!(
                "default / default (the file has no {test_config} times for {build_environment} or default)"
            ),
        }
    }
}

/// The file times of one build environment and test config.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FileTimes {
    pub pick: Option<Pick>,
    pub seconds: BTreeMap<String, f64>,
}

/// Picks the entry run_test.py would use and checks it is what run_test.py can use (a map of
/// test file to seconds); anything else is an error saying why, as run_test.py would crash on
/// it (a KeyError when `default` is missing) or shard with nonsense.
pub fn file_times(
    text: &str,
    build_environment: &str,
    test_config: &str,
) -> Result<FileTimes, String> {
    let file: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let (entry, pick) = pick(&file, build_environment, test_config)?;
    let object = entry
        .as_object()
        .ok_or_else(|| "the picked entry is not an object of test file times".to_string())?;
    let mut seconds = BTreeMap::new();
    for (test, value) in object {
        let time = value
            .as_f64()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| format!("{test}: {value} is not a number of seconds"))?;
        seconds.insert(test.clone(), time);
    }
    Ok(FileTimes {
        pick: Some(pick),
        seconds,
    })
}

/// Checks that run_test.py can load a class times file (it picks its entry with the same rule;
/// rockbuild's runs select whole files, whose durations come from the file times alone).
pub fn check_class_times(
    text: &str,
    build_environment: &str,
    test_config: &str,
) -> Result<(), String> {
    let file: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let (entry, _) = pick(&file, build_environment, test_config)?;
    let object = entry
        .as_object()
        .ok_or_else(|| "the picked entry is not an object of test files".to_string())?;
    for (test, classes) in object {
        let classes = classes
            .as_object()
            .ok_or_else(|| format!("{test}: not an object of class times"))?;
        if let Some((class, value)) = classes.iter().find(|(_, v)| !v.is_number()) {
            return Err(format!(
                "{test}: {class}: {value} is not a number of seconds"
            ));
        }
    }
    Ok(())
}

/// run_test.py's `load_test_times_from_file` rule.
fn pick<'a>(
    file: &'a Value,
    build_environment: &str,
    test_config: &str,
) -> Result<(&'a Value, Pick), String> {
    let file = file
        .as_object()
        .ok_or_else(|| "not an object keyed by build environment".to_string())?;
    if let Some(entry) = file
        .get(build_environment)
        .and_then(Value::as_object)
        .and_then(|configs| configs.get(test_config))
    {
        return Ok((entry, Pick::Exact));
    }
    let default = file
        .get("default")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            format!(
                "no {test_config} times for {build_environment} and no `default` entry (run_test.py would stop with a KeyError)"
            )
        })?;
    if let Some(entry) = default.get(test_config) {
        return Ok((entry, Pick::DefaultEnvironment));
    }
    default
        .get("default")
        .map(|entry| (entry, Pick::DefaultDefault))
        .ok_or_else(|| {
            format!(
                "no {test_config} times for {build_environment} or default, and no default/default entry (run_test.py would stop with a KeyError)"
            )
        })
}

/// A test file, or one of the pytest shards a long one is split into (test_run.py
/// `ShardedTest`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShardedTest {
    pub name: String,
    pub shard: u32,
    pub num_shards: u32,
    /// Seconds; `None`: no time known.
    pub time: Option<f64>,
}

impl ShardedTest {
    fn get_time(&self) -> f64 {
        self.time.unwrap_or(0.0)
    }
}

impl std::fmt::Display for ShardedTest {
    /// As upstream's `ShardedTest.__str__`: `test_nn 1/1`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}", self.name, self.shard, self.num_shards)
    }
}

/// A shard being filled (test_selections.py `ShardJob`).
#[derive(Default)]
struct Job {
    serial: Vec<ShardedTest>,
    parallel: Vec<ShardedTest>,
}

impl Job {
    /// `ShardJob.get_total_time`: the parallel tests spread over `procs` workers, each to the
    /// least loaded (the first on ties), then the serial ones after them.
    fn total(&self, procs: usize) -> f64 {
        let mut loads = vec![0.0_f64; procs.max(1)];
        for test in &self.parallel {
            let least = first_min(&loads);
            loads[least] += test.get_time();
        }
        let busiest = loads.iter().copied().fold(f64::MIN, f64::max);
        busiest + sum(self.serial.iter().map(ShardedTest::get_time))
    }
}

/// Left to right, as Python's `sum` over floats (before 3.12's compensated summation).
fn sum(values: impl Iterator<Item = f64>) -> f64 {
    values.fold(0.0, |total, value| total + value)
}

/// The index of the first smallest value (Python's `list.index(min(list))`).
fn first_min(values: &[f64]) -> usize {
    let mut best = 0;
    for (index, value) in values.iter().enumerate() {
        if *value < values[best] {
            best = index;
        }
    }
    best
}

/// The first job with the smallest total (Python's `min(jobs, key=...)`).
fn least_loaded(jobs: &[Job], procs: usize) -> usize {
    let totals: Vec<f64> = jobs.iter().map(|j| j.total(procs)).collect();
    first_min(&totals)
}

/// `get_with_pytest_shard`: a file longer than the threshold becomes ceil(t / 600) pytest
/// shards of equal time.
fn with_pytest_shard(tests: &[&String], times: &BTreeMap<String, f64>) -> Vec<ShardedTest> {
    let mut out = Vec::new();
    for test in tests {
        let duration = times.get(*test).copied();
        match duration {
            Some(time) if time > THRESHOLD_SECS => {
                let count = (time / THRESHOLD_SECS).ceil();
                for index in 0..count as u32 {
                    out.push(ShardedTest {
                        name: (*test).clone(),
                        shard: index + 1,
                        num_shards: count as u32,
                        time: Some(time / count),
                    });
                }
            }
            _ => out.push(ShardedTest {
                name: (*test).clone(),
                shard: 1,
                num_shards: 1,
                time: duration,
            }),
        }
    }
    out
}

/// How run_test.py runs the tests it shards.
#[derive(Clone, Copy)]
pub struct Sharding<'a> {
    /// `NUM_PROCS_FOR_SHARDING_CALC`: the workers parallel tests are spread over.
    pub procs: usize,
    /// False for run_test.py's "tests to run" batch.
    pub sort_by_time: bool,
    /// run_test.py's `must_serial`.
    pub must_serial: &'a dyn Fn(&str) -> bool,
}

/// The shards of `tests` with their estimated times, as upstream's
/// tools/testing/test_selections.py `calculate_shards` (and its `shard`) computes them for
/// whole test files: tests without a time go round-robin (a counter per call of `shard`), the
/// others each to the least loaded shard; the serial tests fill the first shards, moving off
/// the last one once it is over the estimated limit; a shard lists its serial tests, then its
/// parallel ones.
pub fn calculate_shards(
    num_shards: usize,
    tests: &[String],
    times: &BTreeMap<String, f64>,
    how: Sharding<'_>,
) -> Vec<(f64, Vec<ShardedTest>)> {
    let sharded: Vec<ShardedTest> = if how.sort_by_time {
        let (known, unknown): (Vec<&String>, Vec<&String>) =
            tests.iter().partition(|t| times.contains_key(*t));
        let mut known = with_pytest_shard(&known, times);
        // Python's sort is stable: equal times keep their order.
        known.sort_by(|a, b| b.get_time().total_cmp(&a.get_time()));
        known.extend(with_pytest_shard(&unknown, times));
        known
    } else {
        with_pytest_shard(&tests.iter().collect::<Vec<_>>(), times)
    };
    let (serial, parallel): (Vec<ShardedTest>, Vec<ShardedTest>) = sharded
        .into_iter()
        .partition(|t| (how.must_serial)(&t.name));

    let serial_time = sum(serial.iter().map(ShardedTest::get_time));
    let parallel_time = sum(parallel.iter().map(ShardedTest::get_time));
    let total_time = serial_time + parallel_time / how.procs as f64;
    let per_shard = total_time / num_shards as f64;
    let mut limit = 0.0;
    if per_shard != 0.0 {
        limit = serial_time % per_shard;
    }
    if limit <= 0.01 {
        limit = per_shard;
    }
    let serial_shards = if total_time == 0.0 {
        num_shards
    } else {
        ((serial_time / total_time * num_shards as f64).ceil() as usize).max(1)
    };

    let mut jobs: Vec<Job> = (0..num_shards).map(|_| Job::default()).collect();
    // `_shard_serial`: once the last of the serial shards is over the limit, the rest go to
    // the ones before it.
    let serial_jobs = serial_shards.min(num_shards);
    let mut round_robin = 0;
    for test in serial {
        let over = serial_jobs > 1 && jobs[serial_jobs - 1].total(how.procs) > limit;
        let candidates = if over { serial_jobs - 1 } else { serial_jobs };
        let index = pick_job(&jobs[..candidates], &test, &mut round_robin, how.procs);
        jobs[index].serial.push(test);
    }
    let mut round_robin = 0;
    for test in parallel {
        let index = pick_job(&jobs, &test, &mut round_robin, how.procs);
        jobs[index].parallel.push(test);
    }
    jobs.into_iter()
        .map(|job| {
            let total = job.total(how.procs);
            let mut tests = job.serial;
            tests.extend(job.parallel);
            (total, tests)
        })
        .collect()
}

/// `_get_min_sharded_job`: round-robin for a test without a time, else the least loaded.
fn pick_job(jobs: &[Job], test: &ShardedTest, round_robin: &mut usize, procs: usize) -> usize {
    if test.time.is_none() {
        let index = *round_robin % jobs.len();
        *round_robin += 1;
        return index;
    }
    least_loaded(jobs, procs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[ShardedTest]) -> Vec<String> {
        list.iter().map(ToString::to_string).collect()
    }

    fn all_serial(_: &str) -> bool {
        true
    }

    fn times(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
        pairs.iter().map(|(n, t)| (n.to_string(), *t)).collect()
    }

    fn tests(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn without_times_the_tests_go_round_robin_in_order() {
        let shards = calculate_shards(
            3,
            &tests(&["a", "b", "c", "d", "e"]),
            &BTreeMap::new(),
            Sharding {
                procs: 2,
                sort_by_time: false,
                must_serial: &all_serial,
            },
        );
        let lists: Vec<Vec<String>> = shards.iter().map(|(_, l)| names(l)).collect();
        assert_eq!(
            lists,
            [
                vec!["a 1/1", "d 1/1"],
                vec!["b 1/1", "e 1/1"],
                vec!["c 1/1"]
            ]
        );
    }

    #[test]
    fn times_balance_and_long_files_split_into_pytest_shards() {
        let shards = calculate_shards(
            2,
            &tests(&["a", "b", "c", "d"]),
            &times(&[("a", 1300.0), ("b", 100.0), ("c", 500.0)]),
            Sharding {
                procs: 2,
                sort_by_time: false,
                must_serial: &all_serial,
            },
        );
        let lists: Vec<Vec<String>> = shards.iter().map(|(_, l)| names(l)).collect();
        // a: 3 pytest shards of 433.3 s, each to the least loaded shard (the first on ties),
        // then b and c; once shard 2 is over the limit (1900 % 950 = 0, so 950 s), d (no
        // time: round-robin) may only go to shard 1.
        assert_eq!(
            lists,
            [
                vec!["a 1/3", "a 3/3", "d 1/1"],
                vec!["a 2/3", "b 1/1", "c 1/1"]
            ]
        );
    }

    #[test]
    fn the_times_file_entry_follows_run_test_py() {
        let text = r#"{"env": {"default": {"x": 1}}, "default": {"inductor": {"y": 2}, "default": {"z": 3.5}}}"#;
        let exact = file_times(text, "env", "default").expect("times");
        assert_eq!(
            (exact.pick, exact.seconds),
            (Some(Pick::Exact), times(&[("x", 1.0)]))
        );
        let config = file_times(text, "other", "inductor").expect("times");
        assert_eq!(config.pick, Some(Pick::DefaultEnvironment));
        let fallback = file_times(text, "other", "distributed").expect("times");
        assert_eq!(
            (fallback.pick, fallback.seconds),
            (Some(Pick::DefaultDefault), times(&[("z", 3.5)]))
        );
        assert!(
            file_times(r#"{"env": {}}"#, "other", "default")
                .expect_err("an error")
                .contains("KeyError")
        );
        assert!(
            file_times(r#"{"default": {"default": {"x": "slow"}}}"#, "e", "default")
                .expect_err("an error")
                .contains("x: \"slow\" is not a number")
        );
        assert!(
            check_class_times(r#"{"default": {"default": {"x": {"C": 1}}}}"#, "e", "d").is_ok()
        );
        assert!(check_class_times(r#"{"default": {"default": {"x": 1}}}"#, "e", "d").is_err());
    }
}
