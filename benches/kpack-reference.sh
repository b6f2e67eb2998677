#!/usr/bin/env bash
# The multi-arch split against the reference's splitter, on the sample stack's fat torch and
# torchvision wheels built multi-arch for gfx906 and gfx1030 with Debian's hipcc (a benchmark,
# not a test: nothing here asserts a time).
#
# 1. The reference, pinned and installed as TheRock's multi-arch workflow installs it
#    (`pip install rocm-systems/python/rocm-bootstrap rocm-systems/shared/kpack`), in a venv
#    under target/kpack-bench/, never in the repo:
#    - rocm-kpack's Python package at KPACK_COMMIT (ROCm/rocm-kpack; the package moved into
#      rocm-systems `shared/kpack` in 2026),
#    - the wheel splitter `rocm_kpack/wheel_splitter.py` of rocm-systems at SPLITTER_COMMIT,
#      downloaded from SPLITTER_URL (or the file KPACK_SPLITTER names), its SHA-256 printed,
#    - rocm-bootstrap (the target hierarchy the splitter names device wheels by) from PyPI.
# 2. The fat wheels: `rockbuild build --multi-arch` of the sample stack for gfx906,gfx1030;
#    its fat torch and torchvision wheels are kept in out/fat/.
# 3. `cargo bench --bench kpack` on those wheels and on two it makes itself: a Linux torch
#    wheel for Debian's 14 hipcc targets and a Windows one whose DLL (MinGW-w64) carries the
#    same targets' code objects (see benches/kpack.rs for what it compares).
#
#   benches/kpack-reference.sh
#   KPACK_GIT=/path/to/rocm-kpack.git KPACK_SPLITTER=/path/to/wheel_splitter.py benches/kpack-reference.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kpack_git=${KPACK_GIT:-https://github.com/ROCm/rocm-kpack.git}
# rocm-kpack main, 2026-02-20 ("Stop probing ISAs after archive with matching arch is found").
kpack_commit=${KPACK_COMMIT:-e3483286e751060b3a70b792792cc122632c66e8}
splitter_commit=${SPLITTER_COMMIT:-2d9bbf453473e02359187472859c5e3e3d07489e}
splitter_url=${SPLITTER_URL:-https://raw.githubusercontent.com/ROCm/rocm-systems/$splitter_commit/shared/kpack/python/rocm_kpack/wheel_splitter.py}
bootstrap_version=0.3.0
sdk_version=7.10.0a20251124
targets=gfx906,gfx1030

cd "$repo"
bench="${CARGO_TARGET_DIR:-$repo/target}/kpack-bench"
reference="$bench/reference-${kpack_commit:0:12}-${splitter_commit:0:12}"
if [ ! -x "$reference/venv/bin/python" ]; then
  echo "bench: rocm-kpack $kpack_commit from $kpack_git" >&2
  rm -rf "$reference"
  git clone -q --no-checkout "$kpack_git" "$reference/src"
  git -C "$reference/src" -c advice.detachedHead=false checkout -q "$kpack_commit"
  mkdir -p "$reference/lib"
  cp -r "$reference/src/python/rocm_kpack" "$reference/lib/"
  if [ -n "${KPACK_SPLITTER:-}" ]; then
    cp "$KPACK_SPLITTER" "$reference/lib/rocm_kpack/wheel_splitter.py"
  else
    curl -fsSL "$splitter_url" -o "$reference/lib/rocm_kpack/wheel_splitter.py"
  fi
  python3 -m venv "$reference/venv"
  # rocm-kpack declares zstandard only; its kpack module imports msgpack too.
  "$reference/venv/bin/pip" install --isolated --disable-pip-version-check -q \
    "zstandard==0.25.0" "msgpack==1.2.4" "rocm-bootstrap==$bootstrap_version"
  # The package as an editable install puts it (with its elf/ and coff/ subpackages) on the path.
  site=$("$reference/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$reference/lib" > "$site/rocm-kpack-reference.pth"
fi
[ "$(git -C "$reference/src" rev-parse HEAD)" = "$kpack_commit" ] || {
  echo "bench: $reference/src is not at $kpack_commit" >&2
  exit 1
}
splitter_sha=$(sha256sum "$reference/lib/rocm_kpack/wheel_splitter.py" | cut -d' ' -f1)
reference_label="rocm-kpack $kpack_commit, rocm-systems wheel_splitter.py $splitter_commit (sha256 $splitter_sha), rocm-bootstrap $bootstrap_version"

# shellcheck source=benches/sample-world.sh
source "$repo/benches/sample-world.sh"
echo "bench: the sample stack built multi-arch for $targets" >&2
run "$rockbuild" -q build --install-rocm --index-url "http://127.0.0.1:$port/simple/" \
  --config "$work/sample/stack.yaml" --root-checkout-dir "$work/root" --output-dir "$work/out" \
  --pytorch-rocm-arch "$targets" --multi-arch
wheels=$(ls "$work"/out/fat/torch-*.whl "$work"/out/fat/torchvision-*.whl)

# The reference unbundles with clang-offload-bundler from PATH (Debian: clang-tools-15).
bundler=$(command -v clang-offload-bundler || ls /usr/lib/llvm-*/bin/clang-offload-bundler | tail -1)
PATH="$(dirname "$bundler"):$PATH" ROCKBUILD_BENCH_PYTHON="$reference/venv/bin/python" \
  ROCKBUILD_BENCH_WHEELS="$(echo $wheels)" ROCKBUILD_KPACK_REFERENCE="$reference_label" \
  ROCKBUILD_BENCH_SDK="$sdk_version" cargo bench --locked -q --bench kpack
