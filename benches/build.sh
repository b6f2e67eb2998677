#!/usr/bin/env bash
# Benchmark of `rockbuild build` on the sample stack (a benchmark, not a test: nothing here
# asserts a time). In one run, side by side, for ROUNDS rounds:
#
#   serial     build --clean --jobs 1      the same steps one project at a time
#   parallel   build --clean --jobs 3      the DAG: triton, torch (each has the venv to itself),
#                                          then audio ∥ vision ∥ apex
#   unchanged  build                       same inputs again: every project a cache hit
#
# and prints, as a Markdown table for docs/performance.md, the median wall times and the
# ratios parallel/serial, parallel/critical path (from build-report.json: the longest chain
# of project durations along the DAG, the best any schedule could do; taken from the serial
# run too, where every project ran alone) and unchanged/parallel.
#
#   benches/build.sh            (ROUNDS=3 by default; KEEP=1 keeps the work directory)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${ROUNDS:-3}
sdk_version=7.10.0a20251124
targets=gfx906,gfx1030

cd "$repo"
# shellcheck source=benches/sample-world.sh
source "$repo/benches/sample-world.sh"

run "$rockbuild" -q install-rocm --output-dir "$work/out" --index-url "http://127.0.0.1:$port/simple/"

build() {
  run "$rockbuild" -q build --config "$work/sample/stack.yaml" --root-checkout-dir "$work/root" \
    --output-dir "$work/out" --pytorch-rocm-arch "$targets" "$@"
}
seconds() { python3 -c 'import time; print(time.monotonic())'; }
results="$work/results.tsv"
for round in $(seq "$rounds"); do
  for kind in serial parallel unchanged; do
    case $kind in
      serial) args=(--clean --jobs 1) ;;
      parallel) args=(--clean --jobs 3) ;;
      unchanged) args=(--jobs 3) ;;
    esac
    start=$(seconds)
    build "${args[@]}"
    end=$(seconds)
    critical=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["critical_path_seconds"])' "$work/out/build-report.json")
    printf '%s\t%s\t%s\n' "$kind" "$(python3 -c "print($end - $start)")" "$critical" >>"$results"
    echo "bench: round $round $kind done" >&2
  done
done

python3 - "$results" "$rounds" "$(nproc)" <<'EOF'
import statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
wall = {k: statistics.median(float(r[1]) for r in rows if r[0] == k) for k in ("serial", "parallel", "unchanged")}
critical = statistics.median(float(r[2]) for r in rows if r[0] == "parallel")
# The serial run's projects ran alone, so its critical path (those durations along the DAG) is
# what the parallel build would take with a free CPU per project.
ideal = statistics.median(float(r[2]) for r in rows if r[0] == "serial")
print(f"sample stack, targets gfx906,gfx1030, {sys.argv[2]} rounds, median wall times, {sys.argv[3]} CPUs\n")
print("| measurement | wall | ratio |")
print("|---|---|---|")
print(f"| serial build (`--jobs 1 --clean`) | {wall['serial']:.1f}s | 1.00 (baseline) |")
print(f"| parallel build (`--jobs 3 --clean`) | {wall['parallel']:.1f}s | {wall['parallel'] / wall['serial']:.2f} of serial |")
print(f"| critical path of the parallel build (its own durations) | {critical:.1f}s | parallel wall = {wall['parallel'] / critical:.2f} × critical path |")
print(f"| critical path with the serial run's durations (a CPU per project) | {ideal:.1f}s | {ideal / wall['serial']:.2f} of serial; parallel wall = {wall['parallel'] / ideal:.2f} × this |")
print(f"| unchanged rebuild (all cache hits) | {wall['unchanged']:.2f}s | {wall['unchanged'] / wall['parallel']:.3f} of a full build |")
EOF
