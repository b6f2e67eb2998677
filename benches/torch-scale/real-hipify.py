#!/usr/bin/env python3
"""Checks out and hipifies PyTorch's real source with the built-in stack config (benches only).

    benches/torch-scale/real-hipify.py [--cache-dir DIR] [--rockbuild PATH] [VERSION ...]

For each Debian `pytorch` source version (default: 1.13.1+dfsg-4, Debian 12's, and
2.6.0+dfsg-7), downloads the upstream tarball the way make-origins.py does (apt-get with a
private configuration under the cache directory, every file verified against the signed Sources
index), commits it into a local origin, and runs

    rockbuild checkout --project torch --gitrepo-origin file://ORIGIN --repo-hashtag main

with the built-in configs (stack, presets, leftover rules): the source's own
tools/amd_build/build_amd.py hipifies it, then the leftover-CUDA check runs. Prints one line
per version (exit status, files hipify changed, the leftovers the lock records) and exits
non-zero when a checkout failed. The reference has no leftover check, so a real source must
check out: the leftovers are reported, not refused (docs/testing.md has the last results).

Debian's `+dfsg` repack drops third_party/ (no submodules here), which hipify's own lists
guard with `os.path.exists`. The tarballs, trees and origins stay in the cache directory
(default ${XDG_CACHE_HOME:-~/.cache}/rockbuild-bench/real-hipify); each checkout starts from
an empty root and hipify cache.
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.dont_write_bytecode = True
_spec = importlib.util.spec_from_file_location("make_origins_torch_scale", HERE / "make-origins.py")
make_origins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_origins)

DEFAULT_VERSIONS = ["1.13.1+dfsg-4", "2.6.0+dfsg-7"]


def origin_of(cache, apt, version):
    """A bare origin whose `main` is the version's upstream tarball, one commit."""
    bare = cache / "origins" / f"pytorch-{version}.git"
    if (bare / "refs" / "heads" / "main").exists():
        return bare
    debsrc, src = cache / "debsrc", cache / "src"
    debsrc.mkdir(parents=True, exist_ok=True)
    src.mkdir(parents=True, exist_ok=True)
    tree = make_origins.unpack(apt.orig_tarball("pytorch", version, debsrc), src / f"pytorch-{version}")
    git = make_origins.PlumbingGit(cache)
    shutil.rmtree(bare, ignore_errors=True)
    bare.mkdir(parents=True)
    origin = make_origins.Origin(git, cache / "origins", f"pytorch-{version}")
    origin.branch("main", origin.commit(tree, f"pytorch {version} (Debian's upstream tarball)"))
    return bare


def check_out(rockbuild, cache, version, bare):
    root = cache / "work" / version
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCKBUILD_")}
    argv = [
        rockbuild, "checkout", "--project", "torch",
        "--gitrepo-origin", bare.as_uri(), "--repo-hashtag", "main",
        "--root-checkout-dir", str(root / "src"), "--cache-dir", str(root / "cache"),
        "--report", str(root / "report.json"),
    ]
    result = subprocess.run(argv, env=env, capture_output=True, text=True)
    lock = root / "src" / "rockbuild.lock.json"
    hipify = json.loads(lock.read_text())["projects"]["torch"].get("hipify", {}) if lock.exists() else {}
    return result, hipify


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rockbuild-bench" / "real-hipify"
    parser.add_argument("--cache-dir", type=Path, default=default)
    parser.add_argument("--rockbuild", default=str(REPO / "target" / "release" / "rockbuild"))
    parser.add_argument("versions", nargs="*", default=DEFAULT_VERSIONS)
    args = parser.parse_args(argv)
    if not Path(args.rockbuild).exists():
        make_origins.fail(f"{args.rockbuild} does not exist: run `cargo build --release` first")
    cache = args.cache_dir.resolve()
    apt = make_origins.Apt(cache / "apt")
    apt.update()
    failed = False
    for version in args.versions:
        bare = origin_of(cache, apt, version)
        result, hipify = check_out(args.rockbuild, cache, version, bare)
        failed |= result.returncode != 0
        leftovers = hipify.get("leftovers", [])
        print(f"pytorch {version}: exit {result.returncode}, {hipify.get('changed_files', 0)} files changed by hipify, {len(leftovers)} leftover(s) reported")
        for leftover in leftovers:
            print(f"    {leftover}")
        if result.returncode != 0:
            print(result.stderr, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
