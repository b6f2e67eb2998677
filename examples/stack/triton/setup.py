"""The rockbuild sample triton: ROCm/triton's build contract, small scale.

setup.py is at the repository root (triton moved it there from python/ around torch 2.9;
build_prod_wheels.py looks in python/ first, then the root). Entry point:

    python setup.py bdist_wheel

Version: TRITON_VERSION below + suffixes joined as upstream's get_triton_version_suffix():
`+git<sha8>` from the checkout unless the current branch name starts with "release" (a
detached HEAD is not a branch), then TRITON_WHEEL_VERSION_SUFFIX with its `+` turned into
`-` when both carry one, so one `+` survives: 3.5.0+git12345678-rocm7.0.0rc20250728
(PEP 440 normalises the wheel's version to 3.5.0+git12345678.rocm7.0.0rc20250728).

    TRITON_WHEEL_NAME         distribution name (default triton)
    TRITON_APPEND_CMAKE_ARGS  extra CMake arguments: parsed and recorded (no CMake here)
    CXX, CMAKE_CXX_COMPILER_LAUNCHER   host compiler of the native library

Output: dist/triton-<version>-cp3XY-cp3XY-linux_x86_64.whl with triton/_C/libtriton.so (host
code only: triton generates GPU code at run time, so no gfx target is compiled in).
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).parent.resolve()
sys.path.insert(0, str(ROOT / "tools"))

from sample_build_record import WHEEL_RECORD_NAME, BuildRecord  # noqa: E402

record = BuildRecord("triton", ROOT)


def _git(*args):
    return subprocess.check_output(["git", *args], cwd=ROOT, stderr=subprocess.DEVNULL).strip().decode("utf-8")


def is_git_repo():
    return (ROOT / ".git").exists()


def get_git_commit_hash(length=8):
    try:
        return "+git{}".format(_git("rev-parse", f"--short={length}", "HEAD"))
    except Exception:
        return ""


def get_git_branch():
    try:
        return _git("rev-parse", "--abbrev-ref", "HEAD")
    except Exception:
        return ""


def get_git_version_suffix():
    if not is_git_repo():
        return ""
    if get_git_branch().startswith("release"):
        return ""
    return get_git_commit_hash()


def get_triton_version_suffix():
    # "" or "+git<hash>"; the hash itself has no "+".
    git_sfx = get_git_version_suffix()
    env_sfx = os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", "")
    # A version has at most one "+".
    if "+" in git_sfx and "+" in env_sfx:
        env_sfx = env_sfx.replace("+", "-")
    return git_sfx + env_sfx


TRITON_VERSION = "3.5.0" + get_triton_version_suffix()


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


class BuildPy(build_py):
    def run(self):
        super().run()
        package = Path(self.build_lib) / "triton"
        output = package / "_C" / "libtriton.so"
        output.parent.mkdir(parents=True, exist_ok=True)
        launcher = shlex.split(os.environ.get("CMAKE_CXX_COMPILER_LAUNCHER", "").replace(";", " "))
        cxx = shlex.split(os.environ.get("CXX") or "c++")
        cmd = launcher + cxx + ["-O2", "-fPIC", "-shared", str(ROOT / "python/src/main.cc"), "-o", str(output)]
        print("+ " + shlex.join(cmd), flush=True)
        if subprocess.run(cmd).returncode != 0:
            raise RuntimeError(f"host compile failed: {shlex.join(cmd)}")
        (package / WHEEL_RECORD_NAME).write_text(record.wheel_json())


def main():
    cmake_args = shlex.split(os.environ.get("TRITON_APPEND_CMAKE_ARGS", ""))
    record.set(
        version=TRITON_VERSION,
        git_version_suffix=get_git_version_suffix(),
        wheel_version_suffix=os.environ.get("TRITON_WHEEL_VERSION_SUFFIX", ""),
        cmake_args=cmake_args,
    )
    dist = setup(
        name=os.environ.get("TRITON_WHEEL_NAME", "triton"),
        version=TRITON_VERSION,
        description="A language and compiler for custom Deep Learning operations (rockbuild sample)",
        package_dir={"triton": "python/triton"},
        packages=["triton"],
        python_requires=">=3.9",
        distclass=BinaryDistribution,
        cmdclass={"build_py": BuildPy},
        zip_safe=False,
    )
    wheels = [os.path.basename(f[2]) for f in dist.dist_files if f[0] == "bdist_wheel"]
    record.finish(wheel=wheels[0] if wheels else None)


if __name__ == "__main__":
    record.run(main, "triton")
