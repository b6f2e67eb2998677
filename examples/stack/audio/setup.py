"""The rockbuild sample torchaudio: upstream torchaudio's build contract, small scale.

Entry point, as TheRock runs it:  python setup.py bdist_wheel

    BUILD_VERSION        wheel version; unset: version.txt + "+<sha7>" of the git checkout
    BUILD_NUMBER         recorded (upstream uses it for conda packages only)
    USE_ROCM, USE_CUDA   default: what the installed torch was built with; with USE_ROCM the
                         HIP kernel is compiled for PYTORCH_ROCM_ARCH (else the installed
                         torch's targets) with $ROCM_HOME/bin/hipcc
    USE_FFMPEG, USE_OPENMP, BUILD_SOX   recorded
    PYTORCH_VERSION      when set, Requires-Dist `torch==<it>`; otherwise `torch` (upstream)

It imports the torch installed in the running environment (it builds against it) and fails
when there is none. Output: dist/torchaudio-<version>-cp3XY-cp3XY-linux_x86_64.whl with
torchaudio/lib/libtorchaudio_hip.so, plus the build record (tools/sample_build_record.py).
"""

import os
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = Path(__file__).parent.resolve()
sys.path.insert(0, str(ROOT / "tools"))

from sample_build_record import WHEEL_RECORD_NAME, BuildRecord  # noqa: E402

record = BuildRecord("torchaudio", ROOT)


def _run_cmd(cmd):
    try:
        return subprocess.check_output(cmd, cwd=ROOT, stderr=subprocess.DEVNULL).decode("ascii").strip()
    except Exception:
        return None


def _get_version(sha):
    version = (ROOT / "version.txt").read_text().strip()
    if os.getenv("BUILD_VERSION"):
        version = os.getenv("BUILD_VERSION")
    elif sha is not None:
        version += "+" + sha[:7]
    return version


def _get_build(var, default=False):
    if var not in os.environ:
        return default
    val = os.environ.get(var, "0")
    trues = ["1", "true", "TRUE", "on", "ON", "yes", "YES"]
    falses = ["0", "false", "FALSE", "off", "OFF", "no", "NO"]
    if val in trues:
        return True
    if val not in falses:
        print(f"WARNING: Unexpected environment variable value `{var}={val}`. Expected one of {trues + falses}")
    return False


def _get_pytorch_version():
    if "PYTORCH_VERSION" in os.environ:
        return f"torch=={os.environ['PYTORCH_VERSION']}"
    return "torch"


class BinaryDistribution(Distribution):
    """The wheel carries a native library: tag it for this interpreter and platform."""

    def has_ext_modules(self):
        return True


def main():
    try:
        import torch
    except ImportError as e:
        raise RuntimeError(
            f"torchaudio builds against an installed torch; install the torch wheel first ({e})"
        ) from None
    from torch.utils import cpp_extension

    sha = _run_cmd(["git", "rev-parse", "HEAD"])
    version = _get_version(sha)
    use_rocm = _get_build("USE_ROCM", torch.version.hip is not None)
    use_cuda = _get_build("USE_CUDA", torch.cuda.is_available() and torch.version.hip is None)
    flags = {name: _get_build(name) for name in ("USE_FFMPEG", "USE_OPENMP", "BUILD_SOX")}
    record.set(
        version=version,
        git_version=sha or "Unknown",
        torch_version=torch.__version__,
        use_rocm=use_rocm,
        use_cuda=use_cuda,
        build_number=os.getenv("BUILD_NUMBER"),
        **{name.lower(): value for name, value in flags.items()},
    )

    class BuildPy(build_py):
        def run(self):
            super().run()
            package = Path(self.build_lib) / "torchaudio"
            (package / "version.py").write_text(f"__version__ = '{version}'\ngit_version = '{sha or 'Unknown'}'\n")
            if use_rocm:
                targets = cpp_extension.build_hip_library(
                    [ROOT / "src/libtorchaudio/cuda/lfilter.cu"], package / "lib" / "libtorchaudio_hip.so"
                )
                record.set(targets=targets, rocm_home=cpp_extension.ROCM_HOME)
            (package / WHEEL_RECORD_NAME).write_text(record.wheel_json())

    dist = setup(
        name="torchaudio",
        version=version,
        description="An audio package for PyTorch (rockbuild sample)",
        package_dir={"": "src"},
        packages=["torchaudio"],
        install_requires=[_get_pytorch_version()],
        python_requires=">=3.9",
        distclass=BinaryDistribution,
        cmdclass={"build_py": BuildPy},
        zip_safe=False,
    )
    wheels = [os.path.basename(f[2]) for f in dist.dist_files if f[0] == "bdist_wheel"]
    record.finish(wheel=wheels[0] if wheels else None)


if __name__ == "__main__":
    record.run(main, "torchaudio")
