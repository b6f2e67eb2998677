"""Stand-in for the ROCm SDK's `rocm_sdk` module (the `rocm` distribution).

Same public API as the real one: `__version__`, `find_libraries`, `preload_libraries`,
`initialize_process`. What differs, and why, is written next to the code:

* Libraries the real SDK ships inside rocm-sdk-core are, for amdhip64 and amd_comgr,
  Debian's ROCm 5.2 builds (`LibraryEntry.standin_system_path`). The wheels themselves carry
  rocm-openblas (Debian's OpenBLAS), amd_smi and hipblas (stand-ins built from native/), found
  as the real SDK finds its files.
* Libraries the stand-in does not ship (miopen, hipblaslt, ...) are skipped when preloading
  and listed in `STANDIN_SKIPPED_LIBRARIES`, so a framework's preload list written for the
  real SDK still initialises. Everything the real SDK rejects is rejected the same way: an
  unknown short name, a missing `rocm[libraries]` package, a version mismatch.
"""

import os
import re
import warnings
from pathlib import Path

from ._dist_info import ALL_LIBRARIES, __version__

__all__ = [
    "__version__",
    "find_libraries",
    "preload_libraries",
    "initialize_process",
]

# Short names asked for that the stand-in does not ship (the real SDK would have loaded them).
STANDIN_SKIPPED_LIBRARIES = []

_ALL_CDLLS = {}


def _verbose(message):
    if os.getenv("ROCM_SDK_VERBOSE", "0") == "1":
        import sys

        print(f"[rocm_sdk] {message}", file=sys.stderr)


def _platform_dir(package):
    import importlib

    module = importlib.import_module(package.platform_py_package)
    return Path(module.__file__).parent


def _resolve(shortnames):
    """(shortname, path) for every library found; raises as the real SDK does."""
    found = []
    missing_extras = []
    for shortname in shortnames:
        try:
            entry = ALL_LIBRARIES[shortname]
        except KeyError:
            raise ModuleNotFoundError(f"Unknown rocm library '{shortname}'") from None
        package = entry.package
        if not package.is_installed():
            if package.logical_name not in missing_extras:
                missing_extras.append(package.logical_name)
            continue
        relpath = _platform_dir(package) / entry.posix_relpath
        matches = sorted(relpath.glob(entry.so_pattern))
        if matches:
            found.append((shortname, matches[0]))
        elif entry.standin_system_path and Path(entry.standin_system_path).exists():
            found.append((shortname, Path(entry.standin_system_path)))
        elif entry.optional:
            continue
        elif entry.standin_system_path:
            raise FileNotFoundError(
                f"Could not find rocm library '{shortname}': the stand-in SDK uses "
                f"'{entry.standin_system_path}', which is missing (apt-get install hipcc)"
            )
        else:
            if shortname not in STANDIN_SKIPPED_LIBRARIES:
                STANDIN_SKIPPED_LIBRARIES.append(shortname)
            _verbose(f"stand-in SDK does not ship '{shortname}'; not preloaded")
    if missing_extras:
        raise ModuleNotFoundError(
            "Missing required rocm libraries. Please refer to Python setup instructions, "
            "reinstall your virtual environment, or attempt to install manually via "
            f"`pip install rocm[{','.join(missing_extras)}]`"
        )
    return found


def find_libraries(*shortnames):
    """Absolute paths of the libraries the SDK provides for these short names."""
    return [path for _, path in _resolve(shortnames)]


def preload_libraries(*shortnames, rtld_global=True):
    """Loads libraries into the process so later loads resolve them by soname."""
    import ctypes

    mode = ctypes.RTLD_GLOBAL if rtld_global else ctypes.RTLD_LOCAL
    for shortname, path in _resolve(shortnames):
        if shortname in _ALL_CDLLS:
            continue
        _ALL_CDLLS[shortname] = ctypes.CDLL(str(path), mode=mode)


def initialize_process(
    *,
    preload_shortnames=None,
    rtld_global=True,
    env_override=True,
    check_version=None,
    fail_on_version_mismatch=False,
    **kwargs,
):
    """Global initialisation for a framework built against this SDK (torch's _rocm_init.py).

    As in the real SDK, a version mismatch is a warning unless `fail_on_version_mismatch`;
    `check_version` may contain `*` wildcards or be a compiled pattern.
    """
    if preload_shortnames:
        preload_libraries(*preload_shortnames, rtld_global=rtld_global)

    if env_override:
        extra = os.getenv("ROCM_SDK_PRELOAD_LIBRARIES")
        if extra is not None:
            names = [s.strip() for s in re.split("[,;]", extra) if s.strip()]
            if names:
                try:
                    preload_libraries(*names, rtld_global=rtld_global)
                except Exception as e:
                    raise RuntimeError(
                        "Could not preload libraries from environment variable "
                        f"ROCM_SDK_PRELOAD_LIBRARIES='{extra}'. Check this environment "
                        "variable and unset it if not correct/needed."
                    ) from e

    if check_version:
        if isinstance(check_version, re.Pattern):
            pattern = check_version
        else:
            pattern = re.compile("^" + re.escape(check_version).replace("\\*", ".*") + "$")
        if not pattern.match(__version__):
            message = (
                "The program was compiled against a ROCm version matching "
                f"'{pattern.pattern}' but the installed ROCm version in this Python "
                f"environment is {__version__}."
            )
            if fail_on_version_mismatch:
                raise RuntimeError(message)
            warnings.warn(f"{message} This incompatibility may result in unexpected behavior", stacklevel=2)
