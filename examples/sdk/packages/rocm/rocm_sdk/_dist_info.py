"""Distribution information of the stand-in ROCm SDK.

The static part below names the packages and libraries of the real SDK (TheRock's
`rocm_sdk/_dist_info.py`, kpack-split multi-arch layout). `build_sdk.py` appends the
per-build values at the end of this file, as TheRock's packaging does: `__version__` and
`DIST_AMDGPU_TARGETS` (the targets the SDK was built for).
"""

import importlib.util


class PackageEntry:
    """A distribution package of the SDK and the Python packages it installs."""

    def __init__(self, logical_name, dist_name, pure_py_package, platform_py_package):
        self.logical_name = logical_name
        self.dist_name = dist_name
        self.pure_py_package = pure_py_package
        # The package holding the platform files (bin/, lib/, share/), a sibling of the
        # pure package in site-packages.
        self.platform_py_package = platform_py_package
        ALL_PACKAGES[logical_name] = self

    def is_installed(self):
        return importlib.util.find_spec(self.pure_py_package) is not None

    def __repr__(self):
        return self.dist_name


class LibraryEntry:
    """A public library, found by short name under its package's platform directory.

    `standin_system_path` is how the stand-in provides a library the real SDK ships
    inside its wheel: Debian's ROCm 5.2 build of the same library. Libraries without one
    are known to the stand-in (the name is valid) but not shipped by it.
    """

    def __init__(
        self,
        shortname,
        package,
        so_pattern,
        posix_relpath="lib",
        optional=False,
        standin_system_path=None,
    ):
        self.shortname = shortname
        self.package = ALL_PACKAGES[package]
        self.so_pattern = so_pattern
        self.posix_relpath = posix_relpath
        self.optional = optional
        self.standin_system_path = standin_system_path
        ALL_LIBRARIES[shortname] = self

    def __repr__(self):
        return f"{self.shortname}({self.package}/{self.posix_relpath}/{self.so_pattern})"


ALL_PACKAGES = {}
ALL_LIBRARIES = {}

PackageEntry("meta", "rocm", "rocm_sdk", "rocm_sdk")
PackageEntry("core", "rocm-sdk-core", "rocm_sdk_core", "_rocm_sdk_core")
# Multi-arch (kpack-split) layout: one arch-neutral libraries package; per-target device
# packages (rocm-sdk-device-gfxNNN) overlay their files into its platform directory.
PackageEntry("libraries", "rocm-sdk-libraries", "rocm_sdk_libraries", "_rocm_sdk_libraries")
PackageEntry("devel", "rocm-sdk-devel", "rocm_sdk_devel", "_rocm_sdk_devel")

_DEBIAN_LIB = "/usr/lib/x86_64-linux-gnu"

LibraryEntry("amdhip64", "core", "libamdhip64.so*", standin_system_path=f"{_DEBIAN_LIB}/libamdhip64.so.5")
LibraryEntry("amd_comgr", "core", "libamd_comgr.so*", standin_system_path=f"{_DEBIAN_LIB}/libamd_comgr.so.2")
LibraryEntry("hipfile", "core", "libhipfile.so*")
LibraryEntry("hiprtc", "core", "libhiprtc.so*")
LibraryEntry("roctx64", "core", "libroctx64.so*")
LibraryEntry("rocprofiler-sdk", "core", "librocprofiler-sdk.so*")
LibraryEntry("rocprofiler-sdk-roctx", "core", "librocprofiler-sdk-roctx.so*")
LibraryEntry("roctracer64", "core", "libroctracer64.so*")
LibraryEntry("rocm_sysdeps_liblzma", "core", "librocm_sysdeps_liblzma.so.*", "lib/rocm_sysdeps/lib")
LibraryEntry("rocm-openblas", "core", "librocm-openblas.so.*", "lib/host-math/lib")
LibraryEntry("rocm_kpack", "core", "librocm_kpack.so*")
LibraryEntry("rocm_smi64", "core", "librocm_smi64.so*")
LibraryEntry("rocdecode", "core", "librocdecode.so*")
LibraryEntry("rocjpeg", "core", "librocjpeg.so*")
LibraryEntry("amd_smi", "core", "libamd_smi.so*")
LibraryEntry("rocdxg", "core", "librocdxg*.so*", optional=True)
LibraryEntry("rpp", "libraries", "librpp.so*")
LibraryEntry("hipblas", "libraries", "libhipblas.so*")
LibraryEntry("hipblaslt", "libraries", "libhipblaslt.so*")
LibraryEntry("hipfft", "libraries", "libhipfft.so*")
LibraryEntry("hiprand", "libraries", "libhiprand.so*")
LibraryEntry("hipsparse", "libraries", "libhipsparse.so*")
LibraryEntry("hipsparselt", "libraries", "libhipsparselt.so*")
LibraryEntry("hipsolver", "libraries", "libhipsolver.so*")
LibraryEntry("rccl", "libraries", "librccl.so*")
LibraryEntry("miopen", "libraries", "libMIOpen.so*")
LibraryEntry("origami", "libraries", "liborigami.so*")
LibraryEntry("hipdnn", "libraries", "libhipdnn_backend.so*")

# ---- per-build values, appended by build_sdk.py ----
