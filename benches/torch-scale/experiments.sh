#!/usr/bin/env bash
# Benchmark (not a test): what the torch path's phases could cost with the engine changes
# docs/performance.md discusses, measured with plain git on the torch-scale origins
# (make-origins.py) — the evidence behind its "where the time goes" analysis.
#
#   benches/torch-scale/experiments.sh [REPS]      (default 3; each variant once per rep,
#                                                   variants interleaved)
#
# Variants:
#   checkout/plain          git checkout --force --detach of torch's commit (rockbuild today)
#   checkout/workers=N      the same with checkout.workers=N (parallel worktree writes)
#   submodules/clone-jN     submodule update --init --recursive --jobs=N from the origins
#                           (rockbuild today: N=8)
#   submodules/warm-pN      every submodule cloned --shared from a local bare mirror (objects
#                           borrowed, nothing transferred) and checked out, N at a time: what a
#                           warm mirror cache leaves of the phase
#   hipify/run              tools/amd_build/build_amd.py on the fresh tree
#   hipify/cached           checking out the hipified tree over the upstream one (a hipify
#                           cache hit: only the 692 changed files are written)
#   status/git              git status of torch and every submodule (an up-to-date check)
# Results: target/bench/torch-scale/experiments.md (medians).
set -euo pipefail
reps=${1:-3}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
origins="$world/origins"
work="$cache/experiments"
mkdir -p "$out"
rm -rf "$work" && mkdir -p "$work/mirrors"
results="$out/experiments.tsv"
: >"$results"
git_() { git -c protocol.file.allow=always -c advice.detachedHead=false "$@"; }
timed() { # name command...
  local name=$1 start=$EPOCHREALTIME
  shift
  "$@" >/dev/null 2>&1
  echo "$name $start $EPOCHREALTIME" >>"$results"
}
commit=$(git --git-dir="$origins/pytorch.git" rev-parse release/2.6)

# Local bare mirrors of every origin: the state a warm cache would be in.
for bare in "$origins"/*.git; do
  git clone -q --mirror "$bare" "$work/mirrors/$(basename "$bare")"
done

fresh() { # dir: torch's commit fetched, nothing checked out
  rm -rf "$1" && git init -q "$1"
  git_ -C "$1" fetch -q --no-recurse-submodules "file://$origins/pytorch.git" "$commit"
}
checked_out() { # dir: torch's worktree, no submodules
  fresh "$1"
  git_ -C "$1" checkout -q --force --detach "$commit"
}
warm_submodules() { # dir parallelism: clone --shared from the mirrors, check out, recursively
  local dir=$1 p=$2 links
  git -C "$dir" submodule init -q
  links=$(git -C "$dir" config --get-regexp '^submodule\..*\.url$' | while read -r key url; do
    name=${key#submodule.}
    name=${name%.url}
    path=$(git -C "$dir" config -f .gitmodules "submodule.$name.path")
    echo "$work/mirrors/$(basename "$url") $dir/$path $(git -C "$dir" rev-parse "HEAD:$path")"
  done)
  echo "$links" | xargs -P "$p" -L 1 sh -c \
    'git clone -q --shared --no-checkout "$0" "$1" && git -C "$1" -c advice.detachedHead=false checkout -q --detach "$2"'
  echo "$links" | while read -r _ path _; do
    if [ -f "$path/.gitmodules" ]; then warm_submodules "$path" "$p"; fi
  done
}

for rep in $(seq 1 "$reps"); do
  for workers in 0 2 8; do
    fresh "$work/t"
    name=checkout/plain
    [ "$workers" -gt 0 ] && name="checkout/workers=$workers"
    timed "$name" git_ -C "$work/t" -c checkout.workers=$((workers > 0 ? workers : 1)) \
      -c checkout.thresholdForParallelism=1 checkout -q --force --detach "$commit"
  done
  for jobs in 8 2; do
    checked_out "$work/t"
    timed "submodules/clone-j$jobs" git_ -C "$work/t" submodule update -q --init --recursive --jobs=$jobs
  done
  for p in 1 4; do
    checked_out "$work/t"
    timed "submodules/warm-p$p" warm_submodules "$work/t" "$p"
  done
  # hipify on a full tree (it edits files in gloo, kineto and tensorpipe too)
  checked_out "$work/t"
  git_ -C "$work/t" submodule update -q --init --recursive --jobs=8
  timed hipify/run sh -c 'cd "$1" && python3 tools/amd_build/build_amd.py' sh "$work/t"
  git -C "$work/t" add -A && git -C "$work/t" -c user.name=b -c user.email=b@b commit -qm hipified --no-gpg-sign
  hipified=$(git -C "$work/t" rev-parse HEAD)
  git -C "$work/t" checkout -q --force --detach "$commit"
  timed hipify/cached git -C "$work/t" checkout -q --force --detach "$hipified"
  timed status/git sh -c 'git -C "$1" status --porcelain --ignore-submodules=all && git -C "$1" submodule foreach -q --recursive git status --porcelain' sh "$work/t"
done

python3 - "$results" <<'PY' | tee "$out/experiments.md"
import collections, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, start, end = line.split()
    times[name].append(float(end) - float(start))
print("| variant | median | min | max | runs |")
print("|---|---|---|---|---|")
for name, values in times.items():
    print(f"| {name} | {statistics.median(values):.2f} s | {min(values):.2f} s | {max(values):.2f} s | {len(values)} |")
PY
rm -rf "$work"
