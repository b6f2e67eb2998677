#!/usr/bin/env python3
"""The sample torch's test runner, with the command line of PyTorch's test/run_test.py
(pytorch/pytorch test/run_test.py, `parse_args`) at the scale of the sample.

Like the real one:
  * the test modules are every test_*.py under test/, named by their path without `.py`
    (`test_torch`, `nn/test_convolution`), as tools/testing/discover_tests.py names them;
  * --include (default: every module) and --exclude take module names and refuse unknown ones
    (argparse choices); an --exclude entry also drops the modules under it (`inductor` drops
    `inductor/...`), as `exclude_tests` does;
  * --exclude-jit-executor, --exclude-distributed-tests, --exclude-inductor-tests,
    --exclude-quantization-tests, --distributed-tests (only distributed/...), --inductor and
    --dynamo (PYTORCH_TEST_WITH_INDUCTOR=1 / PYTORCH_TEST_WITH_DYNAMO=1 for the tests),
    -k/--pytest-k-expr (handed to pytest), --shard N M, --keep-going (alias
    --continue-through-error), -v/--verbose, --dry-run (list the shard's modules, run nothing);
  * arguments it does not know go to every module's pytest (`parse_known_args`), which is how
    `--timeout 900` reaches pytest-timeout;
  * each module runs in its own process from the test directory; pytest's exit code 5 (nothing
    collected, e.g. everything deselected by -k) counts as success;
  * with CI set, each module writes JUnit XML to
    test-reports/python-pytest/<module with dots>/<module with dots>-<random hex>.xml, as
    torch.testing._internal.common_utils.get_report_path does;
  * without --keep-going the run stops at the first failing module; exit status 1 when any
    module failed.

  * --shard N M follows run_test.py's sharding (`load_test_times_from_file`, then
    tools/testing/test_selections.py `calculate_shards` with sort_by_time=False, as for its
    "tests to run" batch): the times are <root>/.additional_ci_files/test-times.json's
    [BUILD_ENVIRONMENT][TEST_CONFIG] entry, else ["default"][TEST_CONFIG], else
    ["default"]["default"]; without the file it warns and every test has no time. The tests
    are taken in name order; a test longer than 600 s becomes ceil(t / 600) pytest shards;
    a test with a time goes to the shard with the least estimated time (the first on ties),
    one without goes round-robin; serial tests fill the first shards and leave the last one
    once it is over the estimated limit.

Simplified: failed tests are not retried, modules run one after another (every test is serial,
as with PYTORCH_TEST_RUN_EVERYTHING_IN_SERIAL=1), a pytest shard of a long module runs the
whole module, and there are no platform blocklists.
"""

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

TEST_DIR = Path(__file__).resolve().parent
REPO_ROOT = TEST_DIR.parent
TEST_TIMES = REPO_ROOT / ".additional_ci_files" / "test-times.json"
THRESHOLD = 600
JIT_EXECUTOR_TESTS = ["test_jit_profiling", "test_jit_legacy", "test_jit_fuser_legacy"]


def discover_tests():
    return sorted(
        path.relative_to(TEST_DIR).with_suffix("").as_posix()
        for path in TEST_DIR.rglob("test_*.py")
        if "test-reports" not in path.parts and "__pycache__" not in path.parts
    )


TESTS = discover_tests()
DISTRIBUTED_TESTS = [t for t in TESTS if t.startswith("distributed")]
INDUCTOR_TESTS = [t for t in TESTS if t.startswith("inductor")]
QUANTIZATION_TESTS = [t for t in TESTS if "quantization" in t]


def parse_args():
    parser = argparse.ArgumentParser(description="Run the PyTorch unit test suite (sample)")
    parser.add_argument("-v", "--verbose", action="count", default=0)
    parser.add_argument("--distributed-tests", action="store_true")
    parser.add_argument("-k", "--pytest-k-expr", default="")
    parser.add_argument("-i", "--include", nargs="+", choices=TESTS, default=TESTS, metavar="TESTS")
    parser.add_argument("-x", "--exclude", nargs="+", choices=TESTS + ["distributed", "inductor"], default=[], metavar="TESTS")
    parser.add_argument("--continue-through-error", "--keep-going", action="store_true")
    parser.add_argument("--shard", nargs=2, type=int)
    parser.add_argument("--exclude-jit-executor", action="store_true")
    parser.add_argument("--exclude-distributed-tests", action="store_true")
    parser.add_argument("--exclude-inductor-tests", action="store_true")
    parser.add_argument("--exclude-quantization-tests", action="store_true")
    parser.add_argument("--dry-run", action="store_true")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--dynamo", action="store_true")
    group.add_argument("--inductor", action="store_true")
    args, extra = parser.parse_known_args()
    if "--" in extra:
        extra.remove("--")
    args.additional_args = extra
    return args


def selected_tests(options):
    tests = list(options.include)
    if options.distributed_tests:
        tests = [t for t in tests if t in DISTRIBUTED_TESTS]
    exclude = list(options.exclude)
    if options.exclude_jit_executor:
        exclude += JIT_EXECUTOR_TESTS
    if options.exclude_distributed_tests:
        exclude += DISTRIBUTED_TESTS
    if options.exclude_inductor_tests:
        exclude += INDUCTOR_TESTS
    if options.exclude_quantization_tests:
        exclude += QUANTIZATION_TESTS
    for excluded in exclude:
        tests = [t for t in tests if not t.startswith(excluded)]
    if options.shard:
        which, total = options.shard
        assert 0 < which <= total, "Selected shard must be less than or equal to total number of shards"
        shards = shard_tests(sorted(tests), total, load_test_times())
        tests = [name for name, _, _ in shards[which - 1]]
        listed = " ".join(f"{name} {part}/{parts}" for name, part, parts in shards[which - 1])
        print(f"Shard {which}/{total}: {listed}", file=sys.stderr, flush=True)
        # A module split into pytest shards runs once here.
        tests = list(dict.fromkeys(tests))
    return tests


def load_test_times():
    if not TEST_TIMES.exists():
        print(f"::warning:: Failed to find test times file `{TEST_TIMES}`. Using round robin sharding.", file=sys.stderr)
        return {}
    stats = json.loads(TEST_TIMES.read_text())
    environment = stats.get(os.environ.get("BUILD_ENVIRONMENT"), {})
    config = os.environ.get("TEST_CONFIG")
    if config in environment:
        print("Found test times from artifacts", file=sys.stderr)
        return environment[config]
    if config in stats["default"]:
        return stats["default"][config]
    return stats["default"]["default"]


def shard_tests(tests, count, times):
    # Every test is serial here, so a shard's estimate is the sum of its tests' times.
    pieces = []
    for name in tests:
        seconds = times.get(name)
        parts = math.ceil(seconds / THRESHOLD) if seconds is not None and seconds > THRESHOLD else 1
        for part in range(parts):
            pieces.append((name, part + 1, parts, None if seconds is None else seconds / parts))
    total = sum(seconds or 0 for *_, seconds in pieces)
    per_shard = total / count
    limit = total % per_shard if per_shard else 0.0
    if limit <= 0.01:
        limit = per_shard
    shards = [[] for _ in range(count)]
    loads = [0.0] * count
    usable = count
    next_round_robin = 0
    for name, part, parts, seconds in pieces:
        if count > 1 and loads[-1] > limit:
            usable = count - 1
        if seconds is None:
            target = next_round_robin % usable
            next_round_robin += 1
        else:
            target = min(range(usable), key=lambda index: loads[index])
        shards[target].append((name, part, parts))
        loads[target] += seconds or 0
    return shards


def report_path(test):
    name = test.replace("/", ".")
    directory = TEST_DIR / "test-reports" / "python-pytest" / name
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"{name}-{os.urandom(8).hex()}.xml"


def run_test(test, options):
    command = [sys.executable, "-m", "pytest", f"{test}.py", "-rfEX", "-p", "no:cacheprovider"]
    if options.verbose:
        command.append("-" + "v" * options.verbose)
    if options.pytest_k_expr:
        command += ["-k", options.pytest_k_expr]
    if os.environ.get("CI", "").lower() not in ("", "0", "false", "off"):
        command.append(f"--junit-xml={report_path(test)}")
    command += options.additional_args
    print(f"Running {test} ... {command}", file=sys.stderr, flush=True)
    code = subprocess.call(command, cwd=TEST_DIR)
    return 0 if code == 5 else code


def main():
    options = parse_args()
    tests = selected_tests(options)
    print(f"Running {len(tests)} test modules: {' '.join(tests)}", file=sys.stderr, flush=True)
    if options.dry_run:
        return 0
    if options.dynamo:
        os.environ["PYTORCH_TEST_WITH_DYNAMO"] = "1"
    elif options.inductor:
        os.environ["PYTORCH_TEST_WITH_INDUCTOR"] = "1"
    failures = []
    for test in tests:
        code = run_test(test, options)
        if code != 0:
            failures.append(f"{test} failed! (exit status {code})")
            if not options.continue_through_error:
                print(failures[-1] + "\n\nTip: You can keep running tests even on failure by passing --keep-going to run_test.py.", file=sys.stderr)
                return 1
    for failure in failures:
        print(failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
