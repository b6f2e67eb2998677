#!/usr/bin/env python3
"""Builds the stand-in ROCm SDK: wheels with the real package names and a static PEP 503 index.

    build_sdk.py --version 7.10.0a20251124 --targets gfx906,gfx1030 --out DIR

writes

    DIR/wheels/*.whl                      the wheels (and DIR/wheels/index.html, a flat
                                          --find-links page)
    DIR/simple/index.html                 PEP 503 root page
    DIR/simple/<name>/index.html          one page per project, links with #sha256=

so `python3 -m http.server -d DIR` serves `--index-url http://HOST:PORT/simple/`.

Packages (TheRock's multi-arch, kpack-split layout):

    rocm                        meta package with the `rocm_sdk` module and the `rocm-sdk`
                                command; requires rocm-sdk-core; extras `libraries`,
                                `devel`, `device-<target>` per target and `device-all`
    rocm-sdk-core               runtime: _rocm_sdk_core/bin/hipcc (wraps Debian's ROCm 5.2
                                hipcc), share/therock/dist_info.json (the targets),
                                lib/host-math/lib/librocm-openblas.so.0 (Debian's OpenBLAS),
                                lib/libamd_smi.so.26 and share/amd_smi/amdsmi (stand-ins)
    rocm-sdk-libraries          arch-neutral libraries package: lib/libhipblas.so.3 (stand-in)
    rocm-sdk-device-<target>    per-target files overlaid into _rocm_sdk_libraries
    rocm-sdk-devel              the development tree (`rocm-sdk path --root`), created on
                                first use from a manifest of links (wheels cannot hold links)
    rocm-bootstrap              GPU detection without ROCm userspace (the host wheels of a
                                kpack split require it)

The real `rocm` is an sdist; the stand-in ships it as a wheel with the extras that sdist
would compute, so installing needs no build backend. The builder uses the Python standard
library, the C compiler (the stand-in libraries of native/) and patchelf (OpenBLAS's soname);
the output is byte-identical for the same inputs (fixed timestamps and order).
"""

import argparse
import base64
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = HERE / "packages"

# Fixed zip timestamp: identical bytes on every run.
ZIP_DATE = (2025, 1, 1, 0, 0, 0)
PLATFORM_TAG = "py3-none-linux_x86_64"
GENERATOR = "rockbuild-stand-in-sdk (examples/sdk/build_sdk.py)"

# Canonical PEP 440 (what the real SDK publishes); non-canonical spellings are refused rather
# than silently renamed, so the version asked for is the version served.
CANONICAL_VERSION = re.compile(
    r"^([1-9][0-9]*!)?(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*"
    r"((a|b|rc)(0|[1-9][0-9]*))?(\.post(0|[1-9][0-9]*))?(\.dev(0|[1-9][0-9]*))?"
    r"(\+[a-z0-9]+(\.[a-z0-9]+)*)?$"
)
TARGET = re.compile(r"^gfx[0-9a-f]{3,5}$")

# Where Debian's ROCm 5.2 toolchain lives; the development tree links to it.
DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu"
NATIVE = HERE / "native"

# The SDK's host math library is OpenBLAS with LAPACK, built by TheRock as librocm-openblas
# (third-party/host-blas) into lib/host-math of rocm-sdk-core. The stand-in carries Debian's
# OpenBLAS build (the pthread variant, LAPACK included) under that name, its soname set to
# the real one so that torch links and the preload finds it as it would the real one.
OPENBLAS = f"{DEBIAN_LIB}/openblas-pthread/libopenblas.so.0"
OPENBLAS_HEADERS = "/usr/include/x86_64-linux-gnu/openblas-pthread"
OPENBLAS_FILE = "librocm-openblas.so.0"
# The stand-in libraries built from native/, named as the real SDK names its files.
AMD_SMI_FILE = "libamd_smi.so.26"
HIPBLAS_FILE = "libhipblas.so.3"
DEVEL_SYMLINKS = {
    "bin/hipcc": "../../_rocm_sdk_core/bin/hipcc",
    "share/therock/dist_info.json": "../../../_rocm_sdk_core/share/therock/dist_info.json",
    "include/hip": "/usr/include/hip",
    "lib/libamdhip64.so": f"{DEBIAN_LIB}/libamdhip64.so.5",
    "lib/libamdhip64.so.5": f"{DEBIAN_LIB}/libamdhip64.so.5",
    "lib/libamd_comgr.so": f"{DEBIAN_LIB}/libamd_comgr.so.2",
    "lib/libamd_comgr.so.2": f"{DEBIAN_LIB}/libamd_comgr.so.2",
    "lib/libhsa-runtime64.so": f"{DEBIAN_LIB}/libhsa-runtime64.so.1",
    "lib/libhsa-runtime64.so.1": f"{DEBIAN_LIB}/libhsa-runtime64.so.1",
    "lib/llvm/amdgcn/bitcode": f"{DEBIAN_LIB}/amdgcn/bitcode",
    # The SDK's clang (CC/CXX of the tests that compile): Debian's clang 15, which its hipcc
    # drives (a dependency of the hipcc package).
    "lib/llvm/bin/clang": "/usr/bin/clang-15",
    "lib/llvm/bin/clang++": "/usr/bin/clang++-15",
    "lib/cmake/hip": f"{DEBIAN_LIB}/cmake/hip",
    "lib/cmake/hip-lang": f"{DEBIAN_LIB}/cmake/hip-lang",
    "lib/cmake/amd_comgr": f"{DEBIAN_LIB}/cmake/amd_comgr",
    "lib/cmake/hsa-runtime64": f"{DEBIAN_LIB}/cmake/hsa-runtime64",
    # The runtime packages' libraries under their development names, as in the real tree.
    "lib/libamd_smi.so": f"../../_rocm_sdk_core/lib/{AMD_SMI_FILE}",
    # OpenBLAS_HOME of the torch build: -lrocm-openblas and the CBLAS headers.
    "lib/host-math/lib/librocm-openblas.so": f"../../../../_rocm_sdk_core/lib/host-math/lib/{OPENBLAS_FILE}",
    "lib/host-math/include/cblas.h": f"{OPENBLAS_HEADERS}/cblas.h",
    "lib/host-math/include/f77blas.h": f"{OPENBLAS_HEADERS}/f77blas.h",
    "lib/host-math/include/openblas_config.h": f"{OPENBLAS_HEADERS}/openblas_config.h",
}
# Present in the real tree and read by the torch build (include paths, PKG_CONFIG_PATH);
# empty in the stand-in but for a note.
DEVEL_DIRS = [
    "include/roctracer",
    "lib/rocm_sysdeps/include",
    "lib/rocm_sysdeps/lib/pkgconfig",
]


class UsageError(Exception):
    pass


class BuildError(Exception):
    pass


def normalize_name(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


class Wheel:
    """A wheel assembled in memory, written deterministically."""

    def __init__(self, name, version, tag, purelib):
        self.name = name
        self.version = version
        self.tag = tag
        self.purelib = purelib
        self.files = {}
        self.requires = []
        self.extras = []
        self.entry_points = {}
        self.summary = ""

    @property
    def filename(self):
        return f"{self.name.replace('-', '_')}-{self.version}-{self.tag}.whl"

    def add(self, arcname, data, mode=0o644):
        if isinstance(data, str):
            data = data.encode()
        self.files[arcname] = (data, mode)

    def add_tree(self, source, prefix=""):
        for path in sorted(source.rglob("*")):
            if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            mode = 0o755 if os.access(path, os.X_OK) else 0o644
            self.add(prefix + path.relative_to(source).as_posix(), path.read_bytes(), mode)

    def _metadata(self):
        lines = [
            "Metadata-Version: 2.1",
            f"Name: {self.name}",
            f"Version: {self.version}",
            f"Summary: {self.summary}",
            "Requires-Python: >=3.9",
        ]
        lines += [f"Requires-Dist: {r}" for r in self.requires]
        for extra, requires in self.extras:
            lines.append(f"Provides-Extra: {extra}")
            lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in requires]
        return "\n".join(lines) + "\n"

    def build(self):
        dist_info = f"{self.name.replace('-', '_')}-{self.version}.dist-info"
        files = dict(sorted(self.files.items()))
        files[f"{dist_info}/METADATA"] = (self._metadata().encode(), 0o644)
        wheel_file = (
            f"Wheel-Version: 1.0\nGenerator: {GENERATOR}\n"
            f"Root-Is-Purelib: {'true' if self.purelib else 'false'}\nTag: {self.tag}\n"
        )
        files[f"{dist_info}/WHEEL"] = (wheel_file.encode(), 0o644)
        if self.entry_points:
            text = "".join(
                f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(entries.items())) + "\n"
                for group, entries in sorted(self.entry_points.items())
            )
            files[f"{dist_info}/entry_points.txt"] = (text.encode(), 0o644)
        record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, (data, _) in files.items())
        record += f"{dist_info}/RECORD,,\n"
        files[f"{dist_info}/RECORD"] = (record.encode(), 0o644)

        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, (data, mode) in files.items():
                info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
                info.create_system = 3
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, data, compresslevel=compress_level(name))
        return buffer.getvalue()


def compress_level(name):
    """Shared libraries deflate at level 1: OpenBLAS (36 MB) takes seconds at level 6 and is
    only 15% larger at level 1; everything else at pip's usual level 6."""
    return 1 if ".so" in name.rsplit("/", 1)[-1] else 6


def run_tool(cmd, what):
    try:
        result = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        raise BuildError(f"{what}: cannot run {cmd[0]}: {e}") from None
    if result.returncode != 0:
        raise BuildError(f"{what} failed (exit {result.returncode}): {' '.join(cmd)}\n{result.stderr.strip()}")


def native_libraries():
    """{arcname-relative name: bytes} of the shared libraries the SDK carries: the stand-ins
    compiled from native/ and Debian's OpenBLAS under the SDK's name."""
    if not os.path.exists(OPENBLAS):
        raise BuildError(
            f"Debian's OpenBLAS is missing ({OPENBLAS}); the stand-in SDK carries it as its host "
            "math library: apt-get install libopenblas0-pthread libopenblas-pthread-dev (scripts/setup)"
        )
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory(prefix="build_sdk-") as work:
        work = Path(work)
        built = {}
        for source, name, libs in [
            ("amd_smi.c", AMD_SMI_FILE, []),
            # hipBLAS asks the HIP runtime for the current device: Debian's libamdhip64.
            ("hipblas.c", HIPBLAS_FILE, [f"-L{DEBIAN_LIB}", "-l:libamdhip64.so.5"]),
        ]:
            output = work / name
            # The file name is the soname (lib<name>.so.<major>), as the real files are named.
            run_tool(
                [cc, "-O2", "-fPIC", "-shared", "-Wall", "-o", str(output), str(NATIVE / source),
                 f"-Wl,-soname,{name}", *libs],
                f"compiling the stand-in {name}",
            )
            built[name] = output.read_bytes()
        openblas = work / OPENBLAS_FILE
        shutil.copyfile(OPENBLAS, openblas)
        run_tool(["patchelf", "--set-soname", OPENBLAS_FILE, str(openblas)], f"renaming {OPENBLAS}")
        built[OPENBLAS_FILE] = openblas.read_bytes()
    return built


def dist_info_module(version, targets):
    template = (PACKAGES / "rocm" / "rocm_sdk" / "_dist_info.py").read_text()
    return template + f"__version__ = {version!r}\n" + f"DIST_AMDGPU_TARGETS = {targets!r}\n"


def devel_manifest():
    init = '"""The stand-in ROCm SDK development tree (created by rocm_sdk._devel)."""\n'
    files = {"__init__.py": {"text": init, "mode": "644"}}
    # A file in each otherwise empty directory: RECORD lists files only, so this is what lets
    # pip and uv remove the directories again on uninstall.
    for directory in DEVEL_DIRS:
        files[f"{directory}/README.stand-in"] = {
            "text": "Empty in the stand-in ROCm SDK; the real SDK ships files here.\n",
            "mode": "644",
        }
    return {"files": files, "symlinks": DEVEL_SYMLINKS}


def build_wheels(version, targets, native):
    pin = f"=={version}"
    wheels = []

    meta = Wheel("rocm", version, "py3-none-any", purelib=True)
    meta.summary = "ROCm SDK meta package (rockbuild stand-in)"
    meta.add_tree(PACKAGES / "rocm")
    meta.add("rocm_sdk/_dist_info.py", dist_info_module(version, targets))
    meta.requires = [f"rocm-sdk-core{pin}"]
    meta.extras = [("libraries", [f"rocm-sdk-libraries{pin}"]), ("devel", [f"rocm-sdk-devel{pin}"])]
    meta.extras += [(f"device-{t}", [f"rocm-sdk-device-{t}{pin}"]) for t in targets]
    meta.extras.append(("device-all", [f"rocm-sdk-device-{t}{pin}" for t in targets]))
    meta.entry_points = {"console_scripts": {"rocm-sdk": "rocm_sdk.__main__:main"}}
    wheels.append(meta)

    core = Wheel("rocm-sdk-core", version, PLATFORM_TAG, purelib=False)
    core.summary = "ROCm SDK core runtime (rockbuild stand-in wrapping Debian's ROCm 5.2 hipcc)"
    core.add_tree(PACKAGES / "rocm-sdk-core")
    core.add(
        "_rocm_sdk_core/share/therock/dist_info.json",
        json.dumps({"dist_amdgpu_targets": ";".join(targets)}, indent=2) + "\n",
    )
    core.add(f"_rocm_sdk_core/lib/{AMD_SMI_FILE}", native[AMD_SMI_FILE], 0o755)
    core.add(f"_rocm_sdk_core/lib/host-math/lib/{OPENBLAS_FILE}", native[OPENBLAS_FILE], 0o755)
    core.entry_points = {"console_scripts": {"hipcc": "rocm_sdk_core._cli:hipcc"}}
    wheels.append(core)

    libraries = Wheel("rocm-sdk-libraries", version, PLATFORM_TAG, purelib=False)
    libraries.summary = "ROCm SDK libraries, arch-neutral part (rockbuild stand-in)"
    libraries.add_tree(PACKAGES / "rocm-sdk-libraries")
    libraries.add("_rocm_sdk_libraries/__init__.py", '"""Platform files of rocm-sdk-libraries."""\n')
    libraries.add(f"_rocm_sdk_libraries/lib/{HIPBLAS_FILE}", native[HIPBLAS_FILE], 0o755)
    libraries.requires = [f"rocm-sdk-core{pin}"]
    wheels.append(libraries)

    for target in targets:
        device = Wheel(f"rocm-sdk-device-{target}", version, PLATFORM_TAG, purelib=False)
        device.summary = f"ROCm SDK device files for {target} (rockbuild stand-in)"
        device.add(
            f"_rocm_sdk_libraries/share/therock/device/{target}.json",
            json.dumps({"target": target, "version": version}, indent=2) + "\n",
        )
        device.requires = [f"rocm-sdk-libraries{pin}"]
        wheels.append(device)

    devel = Wheel("rocm-sdk-devel", version, PLATFORM_TAG, purelib=False)
    devel.summary = "ROCm SDK development tree (rockbuild stand-in)"
    devel.add_tree(PACKAGES / "rocm-sdk-devel")
    devel.add("rocm_sdk_devel/_devel_manifest.json", json.dumps(devel_manifest(), indent=2, sort_keys=True) + "\n")
    devel.requires = [f"rocm-sdk-core{pin}"]
    wheels.append(devel)

    bootstrap = Wheel("rocm-bootstrap", version, "py3-none-any", purelib=True)
    bootstrap.summary = "GPU detection before ROCm is installed (rockbuild stand-in)"
    bootstrap.add_tree(PACKAGES / "rocm-bootstrap")
    wheels.append(bootstrap)
    return wheels


def page(title, links):
    body = "".join(f'    <a href="{href}">{text}</a><br/>\n' for href, text in links)
    return (
        '<!DOCTYPE html>\n<html>\n  <head>\n    <meta name="pypi:repository-version" content="1.0">\n'
        f"    <title>{title}</title>\n  </head>\n  <body>\n    <h1>{title}</h1>\n{body}  </body>\n</html>\n"
    )


def write_index(out, built):
    """built: [(Wheel, bytes)]. Replaces out/wheels and out/simple (built beside, then renamed)."""
    staging = out / ".build_sdk.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "wheels").mkdir(parents=True)
    by_project = {}
    for wheel, data in built:
        (staging / "wheels" / wheel.filename).write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        by_project.setdefault(normalize_name(wheel.name), []).append((wheel.filename, digest))
    flat = [(f"{urllib.parse.quote(f)}#sha256={d}", f) for files in by_project.values() for f, d in files]
    (staging / "wheels" / "index.html").write_text(
        page("Links for the stand-in ROCm SDK", sorted(flat, key=lambda l: l[1]))
    )
    root_links = []
    for project in sorted(by_project):
        (staging / "simple" / project).mkdir(parents=True)
        links = [(f"../../wheels/{urllib.parse.quote(f)}#sha256={d}", f) for f, d in sorted(by_project[project])]
        (staging / "simple" / project / "index.html").write_text(page(f"Links for {project}", links))
        root_links.append((f"{project}/", project))
    (staging / "simple" / "index.html").write_text(page("Simple index", root_links))
    for part in ("wheels", "simple"):
        shutil.rmtree(out / part, ignore_errors=True)
        os.rename(staging / part, out / part)
    staging.rmdir()


def parse_targets(text):
    targets = []
    for token in re.split(r"[,;\s]+", text.strip()):
        if not token:
            continue
        if not TARGET.match(token):
            raise UsageError(f"'{token}' is not a gfx target (expected e.g. gfx906, gfx1030, gfx90a)")
        if token not in targets:
            targets.append(token)
    if not targets:
        raise UsageError("--targets is empty; give at least one target, e.g. --targets gfx906,gfx1030")
    return targets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--version", required=True, help="SDK version, canonical PEP 440 (e.g. 7.10.0a20251124)")
    parser.add_argument("--targets", required=True, help="gfx targets the SDK supports, comma-separated")
    parser.add_argument("--out", required=True, type=Path, help="output directory (wheels/ and simple/ are replaced)")
    args = parser.parse_args(argv)
    try:
        if not CANONICAL_VERSION.match(args.version):
            raise UsageError(
                f"version '{args.version}' is not a canonical PEP 440 version "
                "(e.g. 7.10.0a20251124, 7.10.0rc2, 7.10.0, 7.10.0.dev0+efed3c0123)"
            )
        targets = parse_targets(args.targets)
    except UsageError as e:
        print(f"build_sdk.py: error: {e}", file=sys.stderr)
        return 2
    missing = sorted({t for t in DEVEL_SYMLINKS.values() if t.startswith("/") and not os.path.exists(t)})
    if missing:
        print(
            "build_sdk.py: warning: Debian's ROCm 5.2 toolchain is incomplete here (missing "
            + ", ".join(missing)
            + "); the SDK's hipcc will not work until `apt-get install hipcc` is done",
            file=sys.stderr,
        )
    try:
        native = native_libraries()
    except BuildError as e:
        print(f"build_sdk.py: error: {e}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    built = [(wheel, wheel.build()) for wheel in build_wheels(args.version, targets, native)]
    write_index(args.out, built)
    for wheel, data in built:
        print(f"{args.out / 'wheels' / wheel.filename}  {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
