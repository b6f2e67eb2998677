"""Extension-build helpers of the sample torch: the part of torch.utils.cpp_extension's
contract that ROCm extension builds (torchaudio, torchvision, apex) depend on.

* ROCM_HOME: $ROCM_HOME, else $ROCM_PATH, else two levels above the real path of `hipcc` on
  PATH, else /opt/rocm if it exists; None when this torch was built without ROCm.
* Targets: $PYTORCH_ROCM_ARCH (`;` or space separated), else the targets this torch was
  built for (`torch.cuda.get_arch_list()`).
* build_hip_library(): compiles HIP sources with $ROCM_HOME/bin/hipcc for every target into
  a shared library linked against libamdhip64; raises with the command on failure.
"""

import os
import re
import shlex
import shutil
import subprocess

from .. import version


def _find_rocm_home():
    rocm_home = os.environ.get("ROCM_HOME") or os.environ.get("ROCM_PATH")
    if rocm_home is None:
        hipcc = shutil.which("hipcc")
        if hipcc is not None:
            rocm_home = os.path.dirname(os.path.dirname(os.path.realpath(hipcc)))
            if os.path.basename(rocm_home) == "hip":
                rocm_home = os.path.dirname(rocm_home)
        elif os.path.exists("/opt/rocm"):
            rocm_home = "/opt/rocm"
    return rocm_home


ROCM_HOME = _find_rocm_home() if version.hip is not None else None
IS_HIP_EXTENSION = version.hip is not None


def _get_rocm_arch_list():
    archs = os.environ.get("PYTORCH_ROCM_ARCH")
    if archs:
        return [a for a in re.split(r"[;\s]+", archs.strip()) if a]
    return list(version.rocm_arch)


def _get_rocm_arch_flags():
    return [f"--offload-arch={arch}" for arch in _get_rocm_arch_list()] + ["-fno-gpu-rdc"]


def build_hip_library(sources, output, include_dirs=(), defines=(), cwd=None):
    """Compiles `sources` (HIP) into the shared library `output`; returns the targets."""
    if ROCM_HOME is None:
        raise RuntimeError(
            "cannot build a HIP extension: this torch has no ROCm support"
            if version.hip is None
            else "cannot build a HIP extension: ROCm not found; set ROCM_HOME to the SDK root"
        )
    hipcc = os.path.join(ROCM_HOME, "bin", "hipcc")
    if not os.access(hipcc, os.X_OK):
        raise RuntimeError(f"{hipcc} not found or not executable (ROCM_HOME={ROCM_HOME})")
    archs = _get_rocm_arch_list()
    if not archs:
        raise RuntimeError("no ROCm targets: set PYTORCH_ROCM_ARCH (e.g. 'gfx906;gfx1030')")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    cmd = [hipcc, "-std=c++17", "-O2", "-fPIC", "-shared", "-DUSE_ROCM"]
    cmd += _get_rocm_arch_flags()
    cmd += [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines]
    cmd += ["-x", "hip", *[str(s) for s in sources], "-x", "none"]
    cmd += ["-o", str(output), f"-L{ROCM_HOME}/lib", "-lamdhip64"]
    cmd += shlex.split(os.environ.get("LDFLAGS", ""))
    print("+ " + shlex.join(cmd), flush=True)
    result = subprocess.run(cmd, cwd=cwd)
    if result.returncode != 0:
        raise RuntimeError(f"hipcc failed with exit status {result.returncode}: {shlex.join(cmd)}")
    return archs
