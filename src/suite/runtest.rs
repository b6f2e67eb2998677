//! The command lines of PyTorch's test/run_test.py for one shard of a test config, in the shape
//! TheRock's run_pytorch_tests_full.py gives them (F39), which mirrors upstream's
//! .ci/pytorch/test.sh. Pure: the plan prints exactly these.
//!
//! run_test.py (pytorch/pytorch test/run_test.py, `parse_args`) takes `--include`/`--exclude`
//! (module names it discovered; `--exclude` values must be among them), `--shard N M`,
//! `--keep-going`, `--verbose`, `-k` (handed to pytest), `--inductor`, `--distributed-tests`,
//! `--exclude-*-tests`; every argument it does not know goes on to each test file's pytest
//! (that is how `--timeout` reaches pytest-timeout).

use serde::Serialize;

use super::catalog::{Inductor, Quick, TestConfig};

/// Which shard of a config a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Shard {
    pub number: u32,
    pub total: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.number, self.total)
    }
}

/// What decides a shard's run_test.py command lines.
#[derive(Clone, Debug)]
pub struct RunTestInputs<'a> {
    pub config: TestConfig,
    pub shard: Shard,
    /// The user's `--include` (empty: everything the config selects).
    pub include: &'a [String],
    /// The user's `--exclude` followed by the hang-listed modules the checkout has.
    pub exclude: &'a [String],
    pub k: Option<&'a str>,
    pub passthrough: &'a [String],
    /// Per-test limit for pytest-timeout; 0 passes none.
    pub timeout_secs: u64,
    pub keep_going: bool,
    pub exclude_jit_executor: bool,
    pub exclude_distributed: bool,
    pub exclude_quantization: bool,
    pub quick: &'a Quick,
    pub inductor: &'a Inductor,
}

/// One run_test.py invocation: its arguments after `python test/run_test.py`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Invocation {
    pub label: String,
    pub args: Vec<String>,
}

/// The run_test.py invocations of a shard: one, or the inductor config's two. The quick
/// config is the default config's command line with its modules as `--include` (narrowed by
/// the user's). An inductor invocation whose list the user's `--include` leaves empty is
/// dropped.
pub fn invocations(inputs: &RunTestInputs<'_>) -> Vec<Invocation> {
    let head = |args: &mut Vec<String>| {
        if inputs.keep_going {
            args.push("--keep-going".into());
        }
        args.push("--verbose".into());
        if inputs.shard.total > 1 {
            args.extend([
                "--shard".to_string(),
                inputs.shard.number.to_string(),
                inputs.shard.total.to_string(),
            ]);
        }
    };
    let tail = |args: &mut Vec<String>| {
        if !inputs.exclude.is_empty() {
            args.push("--exclude".into());
            args.extend(inputs.exclude.iter().cloned());
        }
        if let Some(k) = inputs.k {
            args.extend(["-k".to_string(), k.to_string()]);
        }
        args.extend(inputs.passthrough.iter().cloned());
        if inputs.timeout_secs > 0 {
            args.extend(["--timeout".to_string(), inputs.timeout_secs.to_string()]);
        }
    };
    let narrowed = |tests: &[String]| -> Vec<String> {
        tests
            .iter()
            .filter(|t| inputs.include.is_empty() || inputs.include.contains(t))
            .cloned()
            .collect()
    };
    match inputs.config {
        TestConfig::Default | TestConfig::Quick | TestConfig::Distributed => {
            let distributed = inputs.config == TestConfig::Distributed;
            let include = if inputs.config == TestConfig::Quick {
                let include = narrowed(&inputs.quick.include);
                if include.is_empty() {
                    // Without `--include` run_test.py would run the whole default config.
                    return Vec::new();
                }
                include
            } else {
                inputs.include.to_vec()
            };
            let mut args = Vec::new();
            if inputs.exclude_jit_executor {
                args.push("--exclude-jit-executor".into());
            }
            if distributed {
                args.push("--distributed-tests".into());
            } else if inputs.exclude_distributed {
                args.push("--exclude-distributed-tests".into());
            }
            if inputs.exclude_quantization {
                args.push("--exclude-quantization-tests".into());
            }
            head(&mut args);
            if !include.is_empty() {
                args.push("--include".into());
                args.extend(include);
            }
            tail(&mut args);
            vec![Invocation {
                label: format!("run_test.py ({})", inputs.config),
                args,
            }]
        }
        TestConfig::Inductor => {
            let lists = [
                (
                    "run_test.py (inductor: generic tests with --inductor)",
                    true,
                    &inputs.inductor.generic_tests,
                ),
                (
                    "run_test.py (inductor: unit tests)",
                    false,
                    &inputs.inductor.unit_tests,
                ),
            ];
            lists
                .into_iter()
                .filter_map(|(label, with_inductor, tests)| {
                    let tests = narrowed(tests);
                    if tests.is_empty() {
                        return None;
                    }
                    let mut args = Vec::new();
                    head(&mut args);
                    if with_inductor {
                        args.push("--inductor".into());
                    }
                    args.push("--include".into());
                    args.extend(tests);
                    tail(&mut args);
                    Some(Invocation {
                        label: label.to_string(),
                        args,
                    })
                })
                .collect()
        }
        // The GPU smoke suite runs pytest directly (see the plan).
        TestConfig::GpuSmoke => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inductor() -> Inductor {
        Inductor {
            generic_tests: vec!["test_modules".into(), "test_torch".into()],
            unit_tests: vec!["inductor/test_torchinductor".into()],
        }
    }

    fn quick() -> Quick {
        Quick {
            include: vec!["test_nn".into(), "test_torch".into()],
        }
    }

    fn inputs<'a>(
        config: TestConfig,
        include: &'a [String],
        exclude: &'a [String],
        lists: &'a (Quick, Inductor),
    ) -> RunTestInputs<'a> {
        RunTestInputs {
            config,
            shard: Shard {
                number: 2,
                total: 6,
            },
            include,
            exclude,
            k: Some("not test_a and not test_b"),
            passthrough: &[],
            timeout_secs: 900,
            keep_going: true,
            exclude_jit_executor: true,
            exclude_distributed: true,
            exclude_quantization: true,
            quick: &lists.0,
            inductor: &lists.1,
        }
    }

    fn lines(invocations: &[Invocation]) -> Vec<String> {
        invocations
            .iter()
            .map(|i| format!("{}: {}", i.label, i.args.join(" ")))
            .collect()
    }

    #[test]
    fn default_and_distributed_follow_therock() {
        let lists = (quick(), inductor());
        let exclude = vec!["nn/test_convolution".to_string()];
        assert_eq!(
            lines(&invocations(&inputs(
                TestConfig::Default,
                &[],
                &exclude,
                &lists
            ))),
            [
                "run_test.py (default): --exclude-jit-executor --exclude-distributed-tests --exclude-quantization-tests --keep-going --verbose --shard 2 6 --exclude nn/test_convolution -k not test_a and not test_b --timeout 900"
            ]
        );
        let mut distributed = inputs(TestConfig::Distributed, &[], &[], &lists);
        distributed.shard = Shard {
            number: 1,
            total: 1,
        };
        distributed.k = None;
        distributed.keep_going = false;
        distributed.timeout_secs = 0;
        let passthrough = vec!["-x".to_string()];
        distributed.passthrough = &passthrough;
        assert_eq!(
            lines(&invocations(&distributed)),
            [
                "run_test.py (distributed): --exclude-jit-executor --distributed-tests --exclude-quantization-tests --verbose -x"
            ],
            "no -k without names, no --shard for one shard, no --keep-going when asked"
        );
    }

    #[test]
    fn quick_is_default_with_its_modules() {
        let lists = (quick(), inductor());
        assert_eq!(
            lines(&invocations(&inputs(TestConfig::Quick, &[], &[], &lists))),
            [
                "run_test.py (quick): --exclude-jit-executor --exclude-distributed-tests --exclude-quantization-tests --keep-going --verbose --shard 2 6 --include test_nn test_torch -k not test_a and not test_b --timeout 900"
            ]
        );
        let include = vec!["test_torch".to_string()];
        assert_eq!(
            lines(&invocations(&inputs(
                TestConfig::Quick,
                &include,
                &[],
                &lists
            ))),
            [
                "run_test.py (quick): --exclude-jit-executor --exclude-distributed-tests --exclude-quantization-tests --keep-going --verbose --shard 2 6 --include test_torch -k not test_a and not test_b --timeout 900"
            ],
            "the user's --include narrows the quick modules"
        );
        let elsewhere = vec!["test_ops".to_string()];
        assert!(
            invocations(&inputs(TestConfig::Quick, &elsewhere, &[], &lists)).is_empty(),
            "never the whole default config under the quick name"
        );
    }

    #[test]
    fn inductor_runs_twice_and_include_narrows_both() {
        let lists = (quick(), inductor());
        assert_eq!(
            lines(&invocations(&inputs(
                TestConfig::Inductor,
                &[],
                &[],
                &lists
            ))),
            [
                "run_test.py (inductor: generic tests with --inductor): --keep-going --verbose --shard 2 6 --inductor --include test_modules test_torch -k not test_a and not test_b --timeout 900",
                "run_test.py (inductor: unit tests): --keep-going --verbose --shard 2 6 --include inductor/test_torchinductor -k not test_a and not test_b --timeout 900",
            ]
        );
        let include = vec!["test_torch".to_string()];
        assert_eq!(
            lines(&invocations(&inputs(
                TestConfig::Inductor,
                &include,
                &[],
                &lists
            ))),
            [
                "run_test.py (inductor: generic tests with --inductor): --keep-going --verbose --shard 2 6 --inductor --include test_torch -k not test_a and not test_b --timeout 900"
            ]
        );
    }
}
