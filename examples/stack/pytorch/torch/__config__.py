"""torch.__config__ of the sample torch: show() prints what the build recorded, in the layout of
real torch's at::show_config() (aten/src/ATen/Version.cpp): the compiler, then the HIP runtime
and libraries when a GPU is present (hasCUDA()), then the build settings with empty values left
out. The sample has no MKL, OpenMP, NNPACK or CPU kernels, so those lines are absent, and no
MIOpen or Magma, so the GPU part is the HIP runtime line only; a build with a BLAS (OpenBLAS,
which carries LAPACK) prints the LAPACK line and BLAS_INFO/LAPACK_INFO=open."""

from . import _build_settings


def show():
    """A human-readable description of how this torch was built."""
    lines = ["PyTorch built with:"]
    if _build_settings.COMPILER is not None:
        name, version = _build_settings.COMPILER
        lines.append(f"  - {name} {version}")
    lines.append(f"  - C++ Version: {_build_settings.CPLUSPLUS}")
    if _build_settings.LAPACK:
        # at::show_config() prints this for any LAPACK (AT_BUILD_WITH_LAPACK), MKL or not.
        lines.append("  - LAPACK is enabled (usually provided by MKL)")
    from . import cuda

    if cuda.is_available():
        lines.append(f"  - HIP Runtime {cuda._runtime_version()}")
    settings = ", ".join(f"{key}={value}" for key, value in _build_settings.BUILD_OPTIONS if value)
    lines.append(f"  - Build settings: {settings}, ")
    return "\n".join(lines) + "\n"
