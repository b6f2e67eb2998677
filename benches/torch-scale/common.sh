# Sourced by bench.sh: the repo root (made the working directory), the cache
# directory (ROCKBUILD_BENCH_CACHE, default ~/.cache/rockbuild-bench/torch-scale), the
# torch-scale origins built there once ($world) and the results directory ($out).
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${ROCKBUILD_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rockbuild-bench/torch-scale}
cd "$repo"
world=$(python3 benches/torch-scale/make-origins.py --cache-dir "$cache")
out="$repo/target/bench/torch-scale"
