"""The rockbuild sample torchvision: upstream torchvision's build contract, small scale.

Entry point, as TheRock runs it:  python setup.py bdist_wheel

    BUILD_VERSION        wheel version; unset: version.txt + "+<sha7>" of the git checkout
    VERSION_NAME, BUILD_NUMBER   recorded
    FORCE_CUDA=1         build the GPU library even though no GPU is visible (without it, and
                         without a GPU, the wheel is CPU-only, as upstream)
    TORCHVISION_USE_NVJPEG, TORCHVISION_USE_VIDEO_CODEC   recorded
    PYTORCH_ROCM_ARCH    targets (else the installed torch's); ROCM_HOME: the SDK root
    PYTORCH_VERSION      when set, Requires-Dist `torch==<it>`; otherwise `torch` (upstream)

On a ROCm torch the GPU sources are hipified first with the installed torch's hipify, in
extension mode and with `includes` given as a str, exactly as upstream's setup.py calls it
(writes torchvision/csrc/ops/hip/nms_kernel.hip and torchvision/csrc/vision_hip.cpp), then
compiled with $ROCM_HOME/bin/hipcc into torchvision/_C_hip.so.
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

record = BuildRecord("torchvision", ROOT)


def _sha():
    try:
        return (
            subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=ROOT, stderr=subprocess.DEVNULL)
            .decode("ascii")
            .strip()
        )
    except Exception:
        return "Unknown"


def get_version(sha):
    version = (ROOT / "version.txt").read_text().strip()
    if os.getenv("BUILD_VERSION"):
        version = os.getenv("BUILD_VERSION")
    elif sha != "Unknown":
        version += "+" + sha[:7]
    return version


def get_requirements():
    pytorch_dep = os.getenv("TORCH_PACKAGE_NAME", "torch")
    if os.getenv("PYTORCH_VERSION"):
        pytorch_dep += "==" + os.getenv("PYTORCH_VERSION")
    return [pytorch_dep]


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


def main():
    try:
        import torch
    except ImportError as e:
        raise RuntimeError(
            f"torchvision builds against an installed torch; install the torch wheel first ({e})"
        ) from None
    from torch.utils import cpp_extension
    from torch.utils.hipify import hipify_python

    sha = _sha()
    version = get_version(sha)
    force_cuda = os.getenv("FORCE_CUDA", "0") == "1"
    is_rocm_pytorch = torch.version.hip is not None
    use_gpu = (torch.cuda.is_available() and (cpp_extension.ROCM_HOME is not None)) or force_cuda
    record.set(
        version=version,
        git_version=sha,
        torch_version=torch.__version__,
        force_cuda=force_cuda,
        gpu_build=use_gpu,
        version_name=os.getenv("VERSION_NAME"),
        build_number=os.getenv("BUILD_NUMBER"),
        use_nvjpeg=os.getenv("TORCHVISION_USE_NVJPEG", "1") == "1",
        use_video_codec=os.getenv("TORCHVISION_USE_VIDEO_CODEC", "1") == "1",
    )
    if use_gpu and not is_rocm_pytorch:
        raise RuntimeError(
            "a GPU build was requested but the installed torch has no ROCm support (and the sample has no CUDA path)"
        )

    class BuildPy(build_py):
        def run(self):
            super().run()
            package = Path(self.build_lib) / "torchvision"
            (package / "version.py").write_text(f"__version__ = '{version}'\ngit_version = '{sha}'\n")
            if use_gpu:
                hipify_python.hipify(
                    project_directory=str(ROOT),
                    output_directory=str(ROOT),
                    includes="torchvision/csrc/ops/cuda/*",
                    show_detailed=True,
                    is_pytorch_extension=True,
                )
                sources = [ROOT / "torchvision/csrc/ops/hip/nms_kernel.hip", ROOT / "torchvision/csrc/vision_hip.cpp"]
                targets = cpp_extension.build_hip_library(sources, package / "_C_hip.so", defines=["WITH_HIP"])
                record.set(targets=targets, rocm_home=cpp_extension.ROCM_HOME)
            (package / WHEEL_RECORD_NAME).write_text(record.wheel_json())

    dist = setup(
        name="torchvision",
        version=version,
        description="image and video datasets and models for torch deep learning (rockbuild sample)",
        packages=["torchvision"],
        install_requires=get_requirements(),
        python_requires=">=3.9",
        distclass=BinaryDistribution,
        cmdclass={"build_py": BuildPy},
        zip_safe=False,
    )
    wheels = [os.path.basename(f[2]) for f in dist.dist_files if f[0] == "bdist_wheel"]
    record.finish(wheel=wheels[0] if wheels else None)


if __name__ == "__main__":
    record.run(main, "torchvision")
