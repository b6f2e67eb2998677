"""torch.linalg of the sample torch: svd, computed by LAPACK (sgesdd) in torch/lib/libtorch_cpu.so,
which a build with a BLAS (BLAS=OpenBLAS, OpenBLAS_HOME) links against the SDK's OpenBLAS."""

import collections
import ctypes
import os

from .._tensor import Tensor

# torch.return_types.linalg_svd
linalg_svd = collections.namedtuple("linalg_svd", ["U", "S", "Vh"])

_library = None


def _lapack():
    """libtorch_cpu (loads the BLAS through its DT_NEEDED: on a ROCm build the SDK's
    librocm-openblas, which torch/_rocm_init.py preloaded)."""
    global _library
    if _library is None:
        path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "lib", "libtorch_cpu.so")
        if not os.path.exists(path):
            # ATen's message when built without LAPACK (BatchLinearAlgebra.cpp).
            raise RuntimeError(
                "Calling torch.linalg.svd on a CPU tensor requires compiling PyTorch with LAPACK. "
                "Please use PyTorch built with LAPACK support."
            )
        _library = ctypes.CDLL(path)
    return _library


def svd(A, full_matrices=True, *, driver=None):
    """U, S, Vh with A = U diag(S) Vh, for a 2-D tensor (full_matrices only)."""
    if not isinstance(A, Tensor) or A.dim() != 2:
        raise RuntimeError("linalg.svd: the sample supports 2-D tensors only")
    if not full_matrices:
        raise NotImplementedError("linalg.svd: the sample computes full matrices only")
    m, n = A.shape
    floats = lambda count: (ctypes.c_float * max(count, 1))()  # noqa: E731
    # LAPACK is column-major: element (i, j) at j * rows + i.
    a = floats(m * n)
    for i in range(m):
        for j in range(n):
            a[j * m + i] = A._values[i * n + j]
    s, u, vt = floats(min(m, n)), floats(m * m), floats(n * n)
    info = _lapack().torch_sample_svd(m, n, a, s, u, vt)
    if info != 0:
        raise RuntimeError(f"linalg.svd: the algorithm failed to converge (LAPACK info {info})")

    def row_major(values, rows, cols):
        return [values[j * rows + i] for i in range(rows) for j in range(cols)]

    return linalg_svd(
        Tensor(row_major(u, m, m), (m, m), A.device),
        Tensor(list(s)[: min(m, n)], (min(m, n),), A.device),
        Tensor(row_major(vt, n, n), (n, n), A.device),
    )
