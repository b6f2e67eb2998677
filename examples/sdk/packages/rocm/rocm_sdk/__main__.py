"""`rocm-sdk` / `python -m rocm_sdk`: the ROCm SDK command line, as the real one prints it
(TheRock build_tools/packaging/python/templates/rocm/src/rocm_sdk/__main__.py: the same
commands, flags and output; `test` runs a smaller self-check than its unittest suite).

version          the SDK version (`7.10.0a20251124`)
targets          the targets the SDK was built for, `;`-separated (`gfx906;gfx1030`):
                 the real CLI prints `dist_amdgpu_targets` from dist_info.json, a CMake list
path --root      the development tree (needs rocm[devel]; expanded on first use)
path --bin       <root>/bin
path --cmake     <root>/lib/cmake
init [--quiet]   expands the development tree now
test             a quick self-check of the installation
"""

import argparse
import importlib
import json
import sys
from pathlib import Path

from . import _dist_info


def _devel_root_or_exit():
    from . import _devel

    try:
        return _devel.get_devel_root()
    except ModuleNotFoundError as e:
        print(
            "ERROR: Could not load the `rocm[devel]` package, which is required to access "
            "runtime tools and development files. Please install it with your package "
            "manager (pip, uv, etc)",
            file=sys.stderr,
        )
        print(f"ERROR: {e}", file=sys.stderr)
        sys.exit(1)


def _do_path(args):
    root = _devel_root_or_exit()
    if args.cmake:
        print(root / "lib" / "cmake")
    elif args.bin:
        print(root / "bin")
    else:
        print(root)


def _do_version(args):
    print(_dist_info.__version__)


def _core_dir():
    core = importlib.import_module(_dist_info.ALL_PACKAGES["core"].platform_py_package)
    return Path(core.__file__).parent


def _do_targets(args):
    with open(_core_dir() / "share" / "therock" / "dist_info.json", "rb") as f:
        print(json.load(f)["dist_amdgpu_targets"])


def _do_init(args):
    from . import _devel

    try:
        root = _devel.get_devel_root(force_initialize=True)
    except ModuleNotFoundError as e:
        print(f"ERROR running init: {e}", file=sys.stderr)
        sys.exit(1)
    if not args.quiet:
        print(f"Devel contents expanded to '{root}'")


def _do_test(args):
    import rocm_sdk

    failures = []

    def check(name, ok, detail=""):
        print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")
        if not ok:
            failures.append(name)

    check("version", bool(rocm_sdk.__version__), rocm_sdk.__version__)
    targets = json.loads((_core_dir() / "share" / "therock" / "dist_info.json").read_text())
    check("targets", "gfx" in targets["dist_amdgpu_targets"], targets["dist_amdgpu_targets"])
    # The core libraries the stand-in ships (the real test loads every one of the package).
    shortnames = ["amdhip64", "amd_comgr", "amd_smi", "rocm-openblas"]
    if _dist_info.ALL_PACKAGES["libraries"].is_installed():
        shortnames.append("hipblas")
    for shortname in shortnames:
        try:
            rocm_sdk.preload_libraries(shortname)
            check(f"preload {shortname}", shortname in rocm_sdk._ALL_CDLLS)
        except Exception as e:
            check(f"preload {shortname}", False, str(e))
    _amd_smi_facts()
    if _dist_info.ALL_PACKAGES["devel"].is_installed():
        root = _devel_root_or_exit()
        hipcc = root / "bin" / "hipcc"
        check("devel bin/hipcc", hipcc.exists(), str(hipcc))
        hip_config = root / "lib" / "cmake" / "hip" / "hip-config.cmake"
        check("devel hip-config.cmake", hip_config.exists(), str(hip_config))
        clang = root / "lib" / "llvm" / "bin" / "clang"
        check("devel lib/llvm/bin/clang", clang.exists(), str(clang))
    if failures:
        sys.exit(1)


def _amd_smi_facts():
    """What AMD SMI (the SDK's own) sees: informational, a host without a GPU is no failure."""
    sys.path.insert(0, str(_core_dir() / "share" / "amd_smi"))
    try:
        import amdsmi
    finally:
        sys.path.pop(0)
    try:
        amdsmi.amdsmi_init()
    except amdsmi.AmdSmiLibraryException as e:
        print(f"info amd_smi: {e.get_error_info()}")
        return
    try:
        gpus = amdsmi.amdsmi_get_processor_handles()
        print(f"info amd_smi: {len(gpus)} GPU{'' if len(gpus) == 1 else 's'}")
    finally:
        amdsmi.amdsmi_shut_down()


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    p = argparse.ArgumentParser(prog="rocm-sdk", usage="rocm-sdk {command} ...", description="ROCm SDK Python CLI")
    sub = p.add_subparsers(required=True)

    path_p = sub.add_parser("path", help="Print various paths to ROCm installation")
    group = path_p.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--cmake", action="store_true", help="Print the CMAKE_PREFIX_PATH for the ROCm development package"
    )
    group.add_argument("--bin", action="store_true", help="Print the ROCm development package binary directory")
    group.add_argument("--root", action="store_true", help="Print the ROCm development package root directory")
    path_p.set_defaults(func=_do_path)

    sub.add_parser("test", help="Run installation tests to verify integrity").set_defaults(func=_do_test)
    sub.add_parser("version", help="Print version information").set_defaults(func=_do_version)
    sub.add_parser("targets", help="Print information about the GPU targets that are supported").set_defaults(
        func=_do_targets
    )
    init_p = sub.add_parser("init", help="Initialize rocm[devel] links")
    init_p.add_argument("--quiet", action="store_true", help="Run without producing output")
    init_p.set_defaults(func=_do_init)

    args = p.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
