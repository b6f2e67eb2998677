"""The rockbuild sample torchvision."""

import ctypes
import os

import torch  # noqa: F401  (torch first: its _rocm_init preloads the ROCm libraries)

from .version import __version__, git_version  # noqa: F401

_LIB = os.path.join(os.path.dirname(__file__), "_C_hip.so")


def hip_library():
    """The HIP kernels of this build (None for a CPU-only build)."""
    return ctypes.CDLL(_LIB) if os.path.exists(_LIB) else None
