#!/usr/bin/env bash
# Benchmark (not a test): a whole-stack checkout of the sample origins (examples/) with
#   rockbuild checkout                        (concurrent, one command)
# next to
#   benches/reference-checkout.sh             (the reference's git steps, one repo at a time)
# measured side by side in the same run, in alternating pairs, plus rockbuild's no-op re-run
# and `rockbuild lock`. Results: target/bench/checkout*.{md,json}; ratios go to
# docs/performance.md.
#
#   benches/checkout.sh [RUNS]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=${1:-10}
if ! command -v hyperfine >/dev/null; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get install -y -qq hyperfine >/dev/null
fi
cd "$repo"
cargo build --release --locked --quiet
rb="${CARGO_TARGET_DIR:-$repo/target}/release/rockbuild"
out="$repo/target/bench"
work="$out/checkout-world"
rm -rf "$work" && mkdir -p "$work"
python3 examples/make_origins.py "$work" >/dev/null
ref=release/2.9

# The machine's load drifts over minutes (shared CI hosts), so the two checkouts are measured
# in alternating pairs, not one batch after the other: each pair sees the same conditions,
# and the figure reported is the median of the per-pair ratios.
reference_cmd="benches/reference-checkout.sh $work/origins $work/ref $ref"
rockbuild_cmd="$rb checkout --quiet --config $work/stack.yaml --root-checkout-dir $work/rb --repo-hashtag $ref"
for i in $(seq 0 "$runs"); do  # pair 0 is the warm-up, dropped below
  for side in reference rockbuild; do
    cmd=reference_cmd; [ "$side" = rockbuild ] && cmd=rockbuild_cmd
    hyperfine --runs 1 --style none --prepare "rm -rf $work/ref $work/rb" \
      --export-json "$out/checkout-$side-$i.json" -n "$side" "${!cmd}" >/dev/null
  done
done
python3 - "$out" "$runs" <<'PY' | tee "$out/checkout.md"
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def time(side, i):
    return json.load(open(f"{out}/checkout-{side}-{i}.json"))["results"][0]["mean"]
ref = [time("reference", i) for i in range(1, runs + 1)]
rb = [time("rockbuild", i) for i in range(1, runs + 1)]
ratios = [r / b for r, b in zip(ref, rb)]
print("| measurement | median | min | max |")
print("|---|---|---|---|")
print(f"| reference (serial git steps) | {statistics.median(ref):.2f} s | {min(ref):.2f} s | {max(ref):.2f} s |")
print(f"| rockbuild checkout | {statistics.median(rb):.2f} s | {min(rb):.2f} s | {max(rb):.2f} s |")
print(f"| reference / rockbuild, per pair | **{statistics.median(ratios):.2f}×** | {min(ratios):.2f}× | {max(ratios):.2f}× |")
PY

"$rb" checkout --quiet --config "$work/stack.yaml" --root-checkout-dir "$work/rb" --repo-hashtag "$ref"
hyperfine --warmup 1 --runs "$runs" --style basic \
  --export-json "$out/checkout-rerun.json" --export-markdown "$out/checkout-rerun.md" \
  --prepare "rm -rf $work/cache" \
  -n "rockbuild checkout (up to date)" "$rb checkout --quiet --config $work/stack.yaml --root-checkout-dir $work/rb --repo-hashtag $ref" \
  -n "rockbuild lock (cold cache)" "$rb lock --quiet --config $work/stack.yaml --cache-dir $work/cache --lock $work/lock.json --repo-hashtag $ref"

cat "$out/checkout-rerun.md"
