//! rockbuild's shard lists against upstream PyTorch's own `calculate_shards`
//! (tools/testing/test_selections.py of PyTorch 2.6.0, from Debian's pytorch 2.6.0+dfsg-7
//! source package, which scripts/setup unpacks into .tools/upstream/), run on the same inputs:
//! test lists with and without times, files long enough to be split into pytest shards,
//! serial and parallel tests, worker counts, both orders.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::Stdio;

use rockbuild::shards::{Sharding, calculate_shards};
use serde_json::{Value, json};

use crate::common::repo_root;

/// A small deterministic generator (xorshift64*), so every run checks the same cases.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

struct Case {
    num_shards: usize,
    tests: Vec<String>,
    times: BTreeMap<String, f64>,
    /// `None`: every test is serial (rockbuild's runs).
    serial: Option<Vec<String>>,
    procs: usize,
    sort_by_time: bool,
}

fn cases() -> Vec<Case> {
    let mut random = Cases(0x5eed_cafe_f00d_1234);
    let mut out = Vec::new();
    for index in 0..300 {
        let count = random.below(40) as usize;
        let mut tests: Vec<String> = (0..count)
            .map(|i| match random.below(4) {
                0 => format!("nn/test_module_{i}"),
                1 => format!("distributed/test_c10d_{i}"),
                _ => format!("test_{i:02}"),
            })
            .collect();
        tests.sort();
        let mut times = BTreeMap::new();
        let known = random.below(4); // 0: no times at all (no file), else some
        for test in &tests {
            if known != 0 && random.below(4) != 0 {
                // Seconds with fractions as test-infra's stats have them; some above the
                // 600 s threshold, some equal, a few zero.
                let time = match random.below(10) {
                    0 => 0.0,
                    1 => 600.0,
                    2 | 3 => 600.0 + random.below(3_000_000) as f64 / 1000.0,
                    4 => (random.below(20) * 30) as f64,
                    _ => random.below(600_000) as f64 / 1000.0,
                };
                times.insert(test.clone(), time);
            }
        }
        let serial = match index % 3 {
            0 => None,
            1 => Some(Vec::new()),
            _ => Some(
                tests
                    .iter()
                    .filter(|t| t.starts_with("distributed") || random.below(3) == 0)
                    .cloned()
                    .collect(),
            ),
        };
        out.push(Case {
            num_shards: 1 + random.below(7) as usize,
            tests,
            times,
            serial,
            procs: 1 + random.below(4) as usize,
            sort_by_time: index % 2 == 1,
        });
    }
    out
}

/// What upstream's calculate_shards answers, through tests/fixtures/sharding/upstream_shards.py.
fn upstream(cases: &[Case]) -> Vec<Value> {
    let root = repo_root().join(".tools/upstream/pytorch-2.6.0");
    assert!(
        root.join("tools/testing/test_selections.py").is_file(),
        "{} has no tools/testing/test_selections.py: run scripts/setup (it unpacks PyTorch's tools/ from Debian's pytorch source package)",
        root.display()
    );
    let input: Vec<Value> = cases
        .iter()
        .map(|c| {
            json!({
                "num_shards": c.num_shards,
                "tests": c.tests,
                "times": c.times,
                "serial": c.serial,
                "procs": c.procs,
                "sort_by_time": c.sort_by_time,
            })
        })
        .collect();
    let mut child = std::process::Command::new("python3")
        .arg(repo_root().join("tests/fixtures/sharding/upstream_shards.py"))
        .arg(&root)
        .env_remove("BUILD_ENVIRONMENT")
        .env_remove("PYTORCH_TEST_CUDA_MEM_LEAK_CHECK")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(serde_json::to_string(&input).expect("json").as_bytes())
        .expect("write cases");
    let output = child
        .wait_with_output()
        .expect("upstream's calculate_shards");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("upstream's answer")
}

#[test]
fn shard_lists_match_upstreams_calculate_shards_on_the_same_input() {
    let cases = cases();
    let answers = upstream(&cases);
    assert_eq!(answers.len(), cases.len());
    // Upstream's estimates are Python's shortest text of the double; read them back exactly
    // (std's parser rounds correctly) and print them as Rust does.
    let answers: Vec<Value> = answers
        .into_iter()
        .map(|mut answer| {
            for shard in answer.as_array_mut().expect("shards") {
                let text = shard["time"].as_str().expect("time as text");
                let time: f64 = text.parse().expect("a float");
                shard["time"] = Value::from(time.to_string());
            }
            answer
        })
        .collect();
    let mut with_times = 0;
    let mut split = 0;
    for (index, (case, answer)) in cases.iter().zip(&answers).enumerate() {
        let serial = |name: &str| {
            case.serial
                .as_ref()
                .is_none_or(|s| s.iter().any(|t| t == name))
        };
        let ours = calculate_shards(
            case.num_shards,
            &case.tests,
            &case.times,
            Sharding {
                procs: case.procs,
                sort_by_time: case.sort_by_time,
                must_serial: &serial,
            },
        );
        let ours: Vec<Value> = ours
            .iter()
            .map(|(time, tests)| {
                json!({
                    "time": time.to_string(),
                    "tests": tests
                        .iter()
                        .map(|t| json!([t.name, t.shard, t.num_shards]))
                        .collect::<Vec<_>>(),
                })
            })
            .collect();
        assert_eq!(
            Value::from(ours),
            *answer,
            "case {index}: {} shards, procs {}, sort_by_time {}, tests {:?}, times {:?}, serial {:?}",
            case.num_shards,
            case.procs,
            case.sort_by_time,
            case.tests,
            case.times,
            case.serial
        );
        with_times += usize::from(!case.times.is_empty());
        split += usize::from(case.times.values().any(|t| *t > 600.0));
    }
    // The cases cover what they are meant to.
    assert!(with_times > 150 && split > 100, "{with_times} {split}");
}
