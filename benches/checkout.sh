#!/usr/bin/env bash
# Benchmark (not a test): a whole-stack checkout of the sample origins (examples/) at
# release/2.9, next to benches/reference-checkout.sh (the reference's git steps, one
# repository after another), measured side by side in alternating triples:
#   reference      the reference's steps into a new root
#   cold           rockbuild checkout into a new root with an empty cache (--cache-dir)
#   warm           rockbuild checkout into another new root, the cache left by `cold`
# then rockbuild's up-to-date re-run and `rockbuild lock` (cold cache), and the per-phase
# times of a cold and a warm run (`checkout --report`). Results: target/bench/checkout*;
# ratios go to docs/performance.md.
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
checkout="$rb checkout --quiet --config $work/stack.yaml --cache-dir $work/cache --repo-hashtag $ref"

# The machine's load drifts over minutes (shared CI hosts), so the sides are measured in
# alternating triples, not one batch after another: each triple sees the same conditions,
# and the figure reported is the median of the per-triple ratios.
declare -A cmd prepare
cmd[reference]="benches/reference-checkout.sh $work/origins $work/ref $ref"
prepare[reference]="rm -rf $work/ref"
cmd[cold]="$checkout --root-checkout-dir $work/cold"
prepare[cold]="rm -rf $work/cold $work/cache"
cmd[warm]="$checkout --root-checkout-dir $work/warm"
prepare[warm]="rm -rf $work/warm"
for i in $(seq 0 "$runs"); do  # triple 0 is the warm-up, dropped below
  for side in reference cold warm; do
    hyperfine --runs 1 --style none --prepare "${prepare[$side]}" \
      --export-json "$out/checkout-$side-$i.json" -n "$side" "${cmd[$side]}" >/dev/null
  done
done
python3 - "$out" "$runs" <<'PY' | tee "$out/checkout.md"
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def time(side, i):
    return json.load(open(f"{out}/checkout-{side}-{i}.json"))["results"][0]["mean"]
sides = {s: [time(s, i) for i in range(1, runs + 1)] for s in ("reference", "cold", "warm")}
print("| measurement | median | min | max | ratio to the reference, per triple (median, range) |")
print("|---|---|---|---|---|")
for side, label in (("reference", "reference (serial git steps)"),
                    ("cold", "rockbuild checkout, empty cache"),
                    ("warm", "rockbuild checkout, new root, warm cache")):
    times = sides[side]
    ratios = [b / r for b, r in zip(times, sides["reference"])]
    print(f"| {label} | {statistics.median(times):.2f} s | {min(times):.2f} s | {max(times):.2f} s | "
          f"**{statistics.median(ratios):.2f}×** ({min(ratios):.2f}–{max(ratios):.2f}) |")
PY

# Per-phase times of one cold and one warm run (seconds, per project).
rm -rf "$work/cold" "$work/warm" "$work/cache"
$checkout --root-checkout-dir "$work/cold" --report "$out/checkout-phases-cold.json"
$checkout --root-checkout-dir "$work/warm" --report "$out/checkout-phases-warm.json"
python3 - "$out" <<'PY' | tee "$out/checkout-phases.md"
import json, sys
out = sys.argv[1]
print("| run | project | fetch | tree | submodules | hipify | tags/commits | total | hipify result |")
print("|---|---|---|---|---|---|---|---|---|")
for run in ("cold", "warm"):
    for row in json.load(open(f"{out}/checkout-phases-{run}.json")):
        p = row["phases"]
        print(f"| {run} | {row['project']} | {p['fetch']:.2f} | {p['tree']:.2f} | {p['submodules']:.2f} | "
              f"{p['hipify']:.2f} | {p['tags']:.2f} | {row['seconds']:.2f} | {row['hipify']} |")
PY

hyperfine --warmup 1 --runs "$runs" --style basic \
  --export-json "$out/checkout-rerun.json" --export-markdown "$out/checkout-rerun.md" \
  -n "rockbuild checkout (up to date)" "$checkout --root-checkout-dir $work/warm" \
  -n "rockbuild lock (cold cache)" --prepare "rm -rf $work/lock-cache" \
  "$rb lock --quiet --config $work/stack.yaml --cache-dir $work/lock-cache --lock $work/lock.json --repo-hashtag $ref"
cat "$out/checkout-rerun.md"
