"""The rockbuild sample apex."""

import ctypes
import os

import torch  # noqa: F401  (torch first: its _rocm_init preloads the ROCm libraries)

_LIB = os.path.join(os.path.dirname(__file__), "lib", "libapex_hip.so")


def hip_library():
    """The HIP kernels of this build (None unless built with --cuda_ext)."""
    return ctypes.CDLL(_LIB) if os.path.exists(_LIB) else None
