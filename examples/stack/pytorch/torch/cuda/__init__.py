"""torch.cuda of the sample torch, backed by torch/lib/libtorch_hip.so on ROCm builds."""

import ctypes
import os

from .. import version

_library = None


def _lib():
    """The HIP library (loads libamdhip64 through its DT_NEEDED), or None on CPU-only builds."""
    global _library
    if _library is None and version.hip is not None:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "lib", "libtorch_hip.so")
        _library = ctypes.CDLL(path)
    return _library


def device_count():
    lib = _lib()
    return int(lib.torch_sample_device_count()) if lib is not None else 0


def is_available():
    return device_count() > 0


def _runtime_version():
    """hipRuntimeGetVersion(), formatted as real torch's showConfig() does for ROCm builds
    (major.minor.patch from major*10000000 + minor*100000 + patch)."""
    lib = _lib()
    value = ctypes.c_int(0)
    # libamdhip64 is a dependency of libtorch_hip, so the symbol resolves through its handle.
    if lib is None or lib.hipRuntimeGetVersion(ctypes.byref(value)) != 0:
        return "unknown"
    v = value.value
    return f"{v // 10000000}.{v // 100000 % 100}.{v % 100000}"


def get_arch_list():
    """The targets this build has code for (PYTORCH_ROCM_ARCH at build time)."""
    return list(version.rocm_arch)


def scale(values, factor):
    """Runs the sample kernel on a list of floats; needs a GPU."""
    lib = _lib()
    if lib is None:
        raise RuntimeError("this torch was built without ROCm")
    buffer = (ctypes.c_float * len(values))(*values)
    status = lib.torch_sample_scale(buffer, ctypes.c_float(factor), len(values))
    if status != 0:
        raise RuntimeError(f"HIP error {status}")
    return list(buffer)
