#!/usr/bin/env bash
# Benchmark (not a test): the floor of a new root at torch scale — what writing the working
# trees alone costs on this disk, with plain tools and no rockbuild. Given a checked-out torch
# tree (e.g. from benches/torch-scale/bench.sh's warm side, or any `rockbuild checkout` of
# the torch-scale stack), it times, into fresh directories:
#   git-serial   every repository's HEAD (torch and its 32 submodules) written by
#                `git read-tree` + `git checkout-index -a` into its own directory, one after
#                another (objects inflated from the packs, as any checkout does)
#   git-8way     the same, 8 repositories at a time
#   tar          the same files copied from the existing tree (no inflation: pure file writes)
# and prints each with the load at its start (1-minute load average, CPU and IO PSI avg10).
#
#   benches/torch-scale/floor.sh TORCH_TREE [SCRATCH_DIR]
set -euo pipefail
src=$(cd "$1" && pwd)
scratch=${2:-$(mktemp -d)}
mkdir -p "$scratch"
repos=$(cd "$src" && { echo .; git submodule foreach --quiet --recursive 'echo "$displaypath"'; })
load() { # 1-minute load average, CPU and IO pressure (PSI 'some' avg10, %)
  printf 'load %s, CPU PSI %s %%, IO PSI %s %%' "$(cut -d' ' -f1 /proc/loadavg)" \
    "$(sed -n '1s/.*avg10=\([0-9.]*\).*/\1/p' /proc/pressure/cpu)" \
    "$(sed -n '1s/.*avg10=\([0-9.]*\).*/\1/p' /proc/pressure/io)"
}
one() { # repository-path destination: its HEAD's files into destination/repository-path
  local index
  index="$2/.index-$(echo "$1" | tr / _)"
  mkdir -p "$2/$1"
  GIT_INDEX_FILE=$index git -C "$src/$1" read-tree HEAD
  GIT_INDEX_FILE=$index git -C "$src/$1" --work-tree="$2/$1" checkout-index -a -f
  rm -f "$index"
}
export -f one
export src
timed() { # name command...
  local name=$1 start
  shift
  sync
  local at
  at=$(load)
  start=$EPOCHREALTIME
  "$@"
  printf '%-10s %6.2f s  (%s)\n' "$name" "$(awk "BEGIN { print $EPOCHREALTIME - $start }")" "$at"
}
serial() { for r in $repos; do one "$r" "$scratch/serial"; done; }
eightway() { echo "$repos" | xargs -P 8 -I{} bash -c 'one "$1" "$2"' _ {} "$scratch/8way"; }
copy() { mkdir -p "$scratch/tar" && tar -C "$src" --exclude=.git -cf - . | tar -C "$scratch/tar" -xf -; }
timed git-serial serial
timed git-8way eightway
timed tar copy
echo "files: $(find "$scratch/tar" -type f | wc -l), $(du -sh "$scratch/tar" | cut -f1)"
rm -rf "$scratch"
