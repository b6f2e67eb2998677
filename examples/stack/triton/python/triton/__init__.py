"""The rockbuild sample triton."""

import ctypes
import os

# The base version, as upstream keeps it here; the wheel's version carries the suffixes.
__version__ = "3.5.0"

_LIB = os.path.join(os.path.dirname(__file__), "_C", "libtriton.so")


def native_library():
    """The compiled part of triton (host code only: triton compiles GPU code at run time)."""
    return ctypes.CDLL(_LIB)
