"""The rockbuild sample torch: version information, ROCm initialisation, a HIP kernel."""

from . import version  # noqa: F401
from .version import __version__  # noqa: F401

# As PyTorch does for TheRock's ROCm wheels: when the build placed a _rocm_init module in the
# package, run it before anything loads the HIP libraries (it preloads them through rocm_sdk
# and checks the SDK version).
try:
    from . import _rocm_init  # type: ignore[attr-defined]
except ImportError:
    pass
else:
    _rocm_init.initialize()
    del _rocm_init

from . import __config__, backends, cuda, distributed, linalg, utils  # noqa: E402,F401
from ._tensor import Tensor, device, randn  # noqa: E402,F401
