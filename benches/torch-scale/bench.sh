#!/usr/bin/env bash
# Benchmark (not a test; not part of scripts/test): the whole-stack checkout at torch scale —
# PyTorch 2.6.0's real source with 32 submodules (benches/torch-scale/make-origins.py builds
# the local origins once, in a cache directory outside the repo) — measured in alternating
# rounds of
#   benches/reference-checkout.sh    the reference's git steps (TheRock repo_management.py,
#                                    F3/F4), one repository after another, build_amd.py and the
#                                    hipify commit per changed submodule included
#   rockbuild checkout, cold         new root, empty --cache-dir
#   rockbuild checkout, warm         new root, the --cache-dir the cold run just filled
# then the up-to-date re-run and the floor (floor.sh: the same trees written by plain git).
# The torch path is broken into phases (phases.py) from the reference's step timings and
# rockbuild's own phase clock (--report). Each measurement starts after a `sync` and records the
# machine's load at its start (load average, CPU and IO pressure). Results:
# target/bench/torch-scale/; docs/performance.md quotes torch-scale.md.
#
#   benches/torch-scale/bench.sh [ROUNDS]        (default 5, after one warm-up round)
#
# ROCKBUILD_BENCH_CACHE sets the cache directory (default ~/.cache/rockbuild-bench/torch-scale);
# checkouts go to its runs/ (about 3.5 GB per round, all kept until the end: see settle). A round
# takes about 1-2 minutes on 2 cores, plus the settling after the previous run's deletion.
set -euo pipefail
rounds=${1:-5}
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cargo build --release --locked --quiet
rb="${CARGO_TARGET_DIR:-$repo/target}/release/rockbuild"
work="$cache/runs"
rm -rf "$out" "$work" && mkdir -p "$out" "$work"
ref=release/2.6
# This machine's root file system is ext4 without a journal, where creating an inode walks
# past every recently deleted one (the kernel's `recently_deleted` check in ialloc.c, made only
# when there is no journal): for a minute or two after a few tens of thousands of files are
# deleted, creating files is up to 40 times slower (20,000 empty files: 10.5 s right after a
# deletion of 40,000, 3.5 s 30 s later, 0.25 s from 90 s on). The reference creates more inodes
# than rockbuild, so it suffers more: ratios taken in that shadow flatter rockbuild. Hence no
# round's trees are deleted before the end, and every measurement waits until creating files
# runs at the settled rate (settle) and records that rate.
probe() { # milliseconds to create 2,000 empty files in a directory of its own (kept: deleting
  # them would be a deletion)
  python3 - "$work/.probe" <<'PY'
import os, sys, time, uuid
d = os.path.join(sys.argv[1], uuid.uuid4().hex)
os.makedirs(d)
start = time.perf_counter()
for i in range(2000):
    os.close(os.open(os.path.join(d, str(i)), os.O_CREAT | os.O_WRONLY, 0o644))
print(round((time.perf_counter() - start) * 1000))
PY
}
settle() { # waits (up to 10 minutes) until creating files runs at the settled rate
  local waited=0 ms
  while ms=$(probe) && [ "$ms" -gt "${ROCKBUILD_BENCH_SETTLED_MS:-100}" ] && [ "$waited" -lt 600 ]; do
    sleep 15
    waited=$((waited + 15))
  done
  echo "$ms"
}
load() { # the 1-minute load average, PSI 'some' avg10 (CPU, IO) and the create probe as JSON
  local create_ms
  create_ms=$(settle)
  python3 -c 'import json, sys
some = lambda kind: float(open(f"/proc/pressure/{kind}").read().split()[1].split("=")[1])
print(json.dumps({"load": float(open("/proc/loadavg").read().split()[0]), "cpu": some("cpu"), "io": some("io"), "create_2000_files_ms": int(sys.argv[1])}))' "$create_ms"
}
timed() { # name command...: wall seconds to $out/name.time, load at the start to $out/name.load
  local name=$1
  shift
  sync # the previous step's write-back (a deleted tree is 2 GB of it) is not this one's
  load >"$out/$name.load"
  if ! /usr/bin/time -f %e -o "$out/$name.time" "$@" >"$out/$name.out" 2>&1; then
    echo "bench: $name failed:" >&2
    tail -20 "$out/$name.out" >&2
    exit 1
  fi
}
reference() { REFERENCE_TIMINGS="$out/reference-$1.timings" timed "reference-$1" benches/reference-checkout.sh "$world/origins" "$work/$1/ref" "$ref"; }
rockbuild() { # side round
  timed "$1-$2" "$rb" checkout --quiet --config "$world/stack.yaml" --cache-dir "$work/$2/cache" \
    --root-checkout-dir "$work/$2/$1" --repo-hashtag "$ref" --report "$out/$1-$2.report.json"
}

trees() { # ROOT: the HEAD tree of every repository of a checkout root, by path
  local project
  for project in pytorch pytorch_audio pytorch_vision triton apex; do
    echo "$project $(git -C "$1/$project" rev-parse 'HEAD^{tree}')"
  done
  git -C "$1/pytorch" submodule foreach --quiet --recursive 'echo "pytorch/$displaypath $(git rev-parse "HEAD^{tree}")"'
}
same_trees() { # round: the three sides must have written the same trees (hipify included)
  trees "$work/$1/ref" >"$out/trees-$1-reference.txt"
  for side in cold warm; do
    trees "$work/$1/$side" >"$out/trees-$1-$side.txt"
    if ! diff -u "$out/trees-$1-reference.txt" "$out/trees-$1-$side.txt" >&2; then
      echo "bench: round $1: rockbuild's $side checkout differs from the reference's" >&2
      exit 1
    fi
  done
}


for i in $(seq 0 "$rounds"); do # round 0 warms up and is dropped
  # Every round in directories of its own, all kept until the end (about 3.5 GB each).
  # Alternate which side goes first; warm follows cold (it uses cold's cache).
  if [ $((i % 2)) -eq 0 ]; then
    reference "$i"
    rockbuild cold "$i"
    rockbuild warm "$i"
  else
    rockbuild cold "$i"
    rockbuild warm "$i"
    reference "$i"
  fi
  same_trees "$i"
  if [ "$i" -eq 0 ]; then
    continue
  fi
  python3 - "$out" "$work" "$i" <<'PY'
import json, subprocess, sys
out, work, i = sys.argv[1:]
def phases(kind, path):
    return json.loads(subprocess.run([sys.executable, "benches/torch-scale/phases.py", kind, path], check=True, capture_output=True, text=True).stdout)
def wall(name):
    return float(open(f"{out}/{name}.time").read().split()[-1])
def load(name):
    return json.load(open(f"{out}/{name}.load"))
run = {"reference": {"wall": wall(f"reference-{i}"), "load": load(f"reference-{i}"), "torch": phases("reference", f"{out}/reference-{i}.timings")}}
for side in ("cold", "warm"):
    run[side] = {"wall": wall(f"{side}-{i}"), "load": load(f"{side}-{i}"), "torch": phases("rockbuild", f"{out}/{side}-{i}.report.json")}
json.dump(run, open(f"{out}/run-{i}.json", "w"), indent=1)
PY
done

# Up to date: the same pins again on the last warm tree.
for i in 1 2 3 4 5; do
  timed "up-to-date-$i" "$rb" checkout --quiet --config "$world/stack.yaml" --cache-dir "$work/$rounds/cache" \
    --root-checkout-dir "$work/$rounds/warm" --repo-hashtag "$ref"
done
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
runs = range(1, 6)
json.dump({
    "up_to_date": [float(open(f"{out}/up-to-date-{i}.time").read().split()[-1]) for i in runs],
    "up_to_date_load": [json.load(open(f"{out}/up-to-date-{i}.load")) for i in runs],
}, open(f"{out}/extra.json", "w"))
PY
# The floor: the same trees written with plain git and tar (floor.sh), on the last warm tree.
benches/torch-scale/floor.sh "$work/$rounds/warm/pytorch" "$work/floor" | tee "$out/floor.txt"
python3 benches/torch-scale/phases.py report "$out" | tee "$out/torch-scale.md"
rm -rf "$work"
