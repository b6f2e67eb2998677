#!/usr/bin/env bash
# Benchmark (not a test): a whole-stack checkout of the sample origins (examples/) with
#   rockbuild checkout                        (concurrent, one command)
# next to
#   benches/reference-checkout.sh             (the reference's git steps, one repo at a time)
# measured side by side with hyperfine in the same run, plus rockbuild's no-op re-run and
# `rockbuild lock`. Results: target/bench/checkout.{md,json}; ratios go to docs/performance.md.
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

hyperfine --warmup 1 --runs "$runs" --style basic \
  --prepare "rm -rf $work/ref $work/rb" \
  --export-json "$out/checkout.json" --export-markdown "$out/checkout.md" \
  -n "reference (serial git steps)" "benches/reference-checkout.sh $work/origins $work/ref $ref" \
  -n "rockbuild checkout" "$rb checkout --quiet --config $work/stack.yaml --root-checkout-dir $work/rb --repo-hashtag $ref"

"$rb" checkout --quiet --config "$work/stack.yaml" --root-checkout-dir "$work/rb" --repo-hashtag "$ref"
hyperfine --warmup 1 --runs "$runs" --style basic \
  --export-json "$out/checkout-rerun.json" --export-markdown "$out/checkout-rerun.md" \
  --prepare "rm -rf $work/cache" \
  -n "rockbuild checkout (up to date)" "$rb checkout --quiet --config $work/stack.yaml --root-checkout-dir $work/rb --repo-hashtag $ref" \
  -n "rockbuild lock (cold cache)" "$rb lock --quiet --config $work/stack.yaml --cache-dir $work/cache --lock $work/lock.json --repo-hashtag $ref"

cat "$out/checkout.md" "$out/checkout-rerun.md"
