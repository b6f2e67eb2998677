"""Console scripts of rocm-sdk-core (the real package has one per tool; the stand-in ships hipcc)."""

import os
import sys
from pathlib import Path


def _exec(tool):
    import _rocm_sdk_core

    path = Path(_rocm_sdk_core.__file__).parent / "bin" / tool
    os.execv(path, [str(path)] + sys.argv[1:])


def hipcc():
    _exec("hipcc")
