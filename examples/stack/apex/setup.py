"""The rockbuild sample apex: ROCm/apex's build contract, small scale.

Entry point, as TheRock runs it (setuptools' PEP 517 backend passes the options on to this
script, which takes them out of sys.argv as upstream does):

    python -m build --wheel --no-isolation -C--build-option=--cpp_ext -C--build-option=--cuda_ext

    BUILD_VERSION      wheel version (TheRock: version.txt + suffix); unset: version.txt
    BUILD_NUMBER       recorded
    --cpp_ext          build the apex_C CPython extension (host C++, setuptools' compiler)
    --cuda_ext         hipify csrc/ with the installed torch's hipify (extension mode) and
                       compile the kernel for PYTORCH_ROCM_ARCH (else the installed torch's
                       targets) with $ROCM_HOME/bin/hipcc into apex/lib/libapex_hip.so

It imports the installed torch (fails without one). Output:
dist/apex-<version>-cp3XY-cp3XY-linux_x86_64.whl (py3-none-any without --cpp_ext).
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent.resolve()
sys.path.insert(0, str(ROOT / "tools"))

from sample_build_record import WHEEL_RECORD_NAME, BuildRecord  # noqa: E402

record = BuildRecord("apex", ROOT)


def take_flag(flag):
    if flag in sys.argv:
        sys.argv.remove(flag)
        return True
    return False


def main():
    cpp_ext = take_flag("--cpp_ext")
    cuda_ext = take_flag("--cuda_ext")
    try:
        import torch
    except ImportError as e:
        raise RuntimeError(f"apex builds against an installed torch; install the torch wheel first ({e})") from None
    from torch.utils import cpp_extension
    from torch.utils.hipify import hipify_python

    version = os.getenv("BUILD_VERSION") or (ROOT / "version.txt").read_text().strip()
    record.set(
        version=version,
        torch_version=torch.__version__,
        cpp_ext=cpp_ext,
        cuda_ext=cuda_ext,
        build_number=os.getenv("BUILD_NUMBER"),
    )
    if cuda_ext and cpp_extension.ROCM_HOME is None:
        raise RuntimeError(
            "--cuda_ext was requested, but ROCm was not found (is the installed torch a ROCm build? is ROCM_HOME set?)"
        )

    class BuildPy(build_py):
        def run(self):
            super().run()
            package = Path(self.build_lib) / "apex"
            if cuda_ext:
                hipify_python.hipify(
                    project_directory=str(ROOT),
                    output_directory=str(ROOT),
                    includes=[os.path.join(str(ROOT), "csrc", "*")],
                    is_pytorch_extension=True,
                )
                targets = cpp_extension.build_hip_library(
                    [ROOT / "csrc/scale_kernel.hip"], package / "lib" / "libapex_hip.so"
                )
                record.set(targets=targets, rocm_home=cpp_extension.ROCM_HOME)
            (package / WHEEL_RECORD_NAME).write_text(record.wheel_json())

    class BuildExt(build_ext):
        """Links without the interpreter's own `-Wl,-rpath,<abs dir>`.

        A Python built with a shared libpython (pyenv, many distro builds) puts its library
        directory into LDSHARED as an rpath, and setuptools links every extension with it: the
        wheel would carry a build-machine path, which `rockbuild verify` rightly refuses. The
        manylinux interpreters the release builds use have no such rpath; this keeps the sample
        equally clean on any machine.
        """

        def build_extensions(self):
            linker = self.compiler.linker_so
            self.compiler.linker_so = [
                arg for arg in linker if not (arg.startswith("-Wl,-rpath,/") or arg.startswith("-Wl,-rpath=/"))
            ]
            super().build_extensions()

    ext_modules = [Extension("apex_C", ["csrc/flatten_unflatten.cpp"])] if cpp_ext else []
    dist = setup(
        name="apex",
        version=version,
        description="PyTorch Extensions written by NVIDIA, ROCm port (rockbuild sample)",
        packages=["apex"],
        ext_modules=ext_modules,
        python_requires=">=3.9",
        cmdclass={"build_py": BuildPy, "build_ext": BuildExt},
        zip_safe=False,
    )
    wheels = [os.path.basename(f[2]) for f in dist.dist_files if f[0] == "bdist_wheel"]
    record.finish(wheel=wheels[0] if wheels else None)


if __name__ == "__main__":
    record.run(main, "apex")
