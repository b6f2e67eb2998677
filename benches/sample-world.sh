# Sourced by the benches that run rockbuild on the sample stack (benches/build.sh,
# benches/kpack-reference.sh): with `repo`, `sdk_version` and `targets` set and the working
# directory the repository, it builds rockbuild (release), makes a work directory (removed at
# exit unless KEEP=1), serves the stand-in SDK's index on a local port and checks out the
# sample's five projects, hipified, under $work/root. It sets `rockbuild`, `work`, `port`,
# and `run` (a hermetic environment: build steps install offline from the wheelhouse).
cargo build --release --locked -q
rockbuild="${CARGO_TARGET_DIR:-$repo/target}/release/rockbuild"

work=$(mktemp -d -t rockbuild-bench-XXXXXX)
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  [ "${KEEP:-0}" = 1 ] && echo "kept $work" >&2 || rm -rf "$work"
}
trap cleanup EXIT

run() {
  env -i PATH="$repo/.tools/venv/bin:/usr/local/bin:/usr/bin:/bin" HOME="$work/home" \
    ROCKBUILD_CACHE_DIR="$work/cache" PIP_NO_INDEX=1 PIP_FIND_LINKS="$repo/.tools/wheelhouse" \
    PYTHONDONTWRITEBYTECODE=1 NO_COLOR=1 LANG=C.UTF-8 "$@"
}

echo "bench: stand-in SDK index, sample origins, checkouts" >&2
python3 examples/sdk/build_sdk.py --version "$sdk_version" --targets "$targets" --out "$work/sdk" >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work/sdk" "$port" >/dev/null 2>&1 &
server=$!
python3 examples/make_origins.py "$work/sample" >/dev/null
for pair in torch:pytorch audio:pytorch_audio vision:pytorch_vision triton:triton apex:apex; do
  origin=${pair%%:*}; [ "$origin" = torch ] && origin=pytorch
  dir="$work/root/${pair##*:}"
  git clone -q "file://$work/sample/origins/$origin.git" "$dir"
  git -C "$dir" -c protocol.file.allow=always submodule update -q --init --recursive
  git -C "$dir" checkout -q --detach
done
(cd "$work/root/pytorch" && python3 tools/amd_build/build_amd.py >/dev/null)
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$port/simple/" >/dev/null && break; sleep 0.1; done
