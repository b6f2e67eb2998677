"""Stand-in for AMD SMI's Python package (ROCm/amdsmi py-interface: amdsmi_interface.py over
amdsmi_wrapper.py), which the real SDK installs as share/amd_smi/amdsmi next to
lib/libamd_smi.so. The calls the smoke checks and `rocm-sdk test` make, with the real names:
a ctypes binding of the SDK's own libamd_smi, errors raised as AmdSmiLibraryException with the
library's status code.
"""

import ctypes
import enum
from pathlib import Path

# share/amd_smi/amdsmi -> lib/, as the real package finds the library of its own install.
_LIBRARY_DIR = Path(__file__).resolve().parents[3] / "lib"


class AmdSmiInitFlags(enum.IntEnum):
    INIT_ALL_PROCESSORS = 0xFFFFFFFF
    INIT_AMD_CPUS = 1 << 0
    INIT_AMD_GPUS = 1 << 1
    INIT_NON_AMD_CPUS = 1 << 2
    INIT_NON_AMD_GPUS = 1 << 3
    INIT_AMD_APUS = (1 << 0) | (1 << 1)


class AmdSmiRetCode(enum.IntEnum):
    SUCCESS = 0
    STATUS_INVAL = 1
    STATUS_NOT_SUPPORTED = 2
    STATUS_NOT_FOUND = 31
    STATUS_NOT_INIT = 32
    STATUS_DRIVER_NOT_LOADED = 34
    STATUS_INSUFFICIENT_SIZE = 41


_DESCRIPTIONS = {
    AmdSmiRetCode.STATUS_INVAL: "AMDSMI_STATUS_INVAL - Invalid parameters",
    AmdSmiRetCode.STATUS_NOT_SUPPORTED: "AMDSMI_STATUS_NOT_SUPPORTED - Feature not supported",
    AmdSmiRetCode.STATUS_NOT_FOUND: "AMDSMI_STATUS_NOT_FOUND - Device Not found",
    AmdSmiRetCode.STATUS_NOT_INIT: "AMDSMI_STATUS_NOT_INIT - Device not initialized",
    AmdSmiRetCode.STATUS_DRIVER_NOT_LOADED: "AMDSMI_STATUS_DRIVER_NOT_LOADED - Driver not loaded",
    AmdSmiRetCode.STATUS_INSUFFICIENT_SIZE: "AMDSMI_STATUS_INSUFFICIENT_SIZE - Not enough resources",
}


class AmdSmiException(Exception):
    pass


class AmdSmiLibraryException(AmdSmiException):
    def __init__(self, err_code):
        super().__init__(err_code)
        self.err_code = err_code
        self.err_info = _DESCRIPTIONS.get(err_code, f"Unknown error {err_code}")

    def get_error_code(self):
        return self.err_code

    def get_error_info(self):
        return self.err_info

    def __str__(self):
        return f"Error code:\n\t{self.err_code} | {self.err_info}"


_library = None


def _lib():
    global _library
    if _library is None:
        candidates = sorted(_LIBRARY_DIR.glob("libamd_smi.so*"))
        if not candidates:
            raise AmdSmiException(f"libamd_smi.so not found in {_LIBRARY_DIR}")
        _library = ctypes.CDLL(str(candidates[0]))
    return _library


def _check(status):
    if status != AmdSmiRetCode.SUCCESS:
        raise AmdSmiLibraryException(status)


def amdsmi_init(flag=AmdSmiInitFlags.INIT_AMD_GPUS):
    _check(_lib().amdsmi_init(ctypes.c_uint64(int(flag))))


def amdsmi_shut_down():
    _check(_lib().amdsmi_shut_down())


def amdsmi_get_lib_version():
    class Version(ctypes.Structure):
        _fields_ = [
            ("major", ctypes.c_uint32),
            ("minor", ctypes.c_uint32),
            ("release", ctypes.c_uint32),
            ("build", ctypes.c_char_p),
        ]

    version = Version()
    _check(_lib().amdsmi_get_lib_version(ctypes.byref(version)))
    return {
        "major": version.major,
        "minor": version.minor,
        "release": version.release,
        "build": (version.build or b"").decode(),
    }


def _handles(function, *leading):
    count = ctypes.c_uint32(0)
    _check(function(*leading, ctypes.byref(count), None))
    array = (ctypes.c_void_p * max(count.value, 1))()
    _check(function(*leading, ctypes.byref(count), array))
    return [ctypes.c_void_p(array[i]) for i in range(count.value)]


def amdsmi_get_socket_handles():
    return _handles(_lib().amdsmi_get_socket_handles)


def amdsmi_get_processor_handles():
    """Every GPU of every socket (an empty list on a host without one)."""
    handles = []
    for socket in amdsmi_get_socket_handles():
        handles += _handles(_lib().amdsmi_get_processor_handles, socket)
    return handles


def amdsmi_is_P2P_accessible(processor_handle_src, processor_handle_dst):
    accessible = ctypes.c_bool(False)
    _check(_lib().amdsmi_is_P2P_accessible(processor_handle_src, processor_handle_dst, ctypes.byref(accessible)))
    return accessible.value
