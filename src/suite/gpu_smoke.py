"""rockbuild's GPU smoke suite: does the installed torch work on this GPU?

`rockbuild test --test-config gpu-smoke` writes this file into its work directory and runs it with
pytest once per selected device (HIP_VISIBLE_DEVICES set to that device). The checks follow
TheRock's external-builds/pytorch/smoke-tests/pytorch_smoke_test.py: ROCm is available; the
matrix products (mm, bmm, @, matmul, mv, dot), elementwise and transpose on the GPU; MIOpen
through conv_transpose2d and a channels-last convolution; OpenBLAS and LAPACK on the CPU; and,
on Linux, that `import torch` preloaded the ROCm libraries with RTLD_GLOBAL (torch/_rocm_init.py
through rocm_sdk), checked by resolving their symbols with dlsym(RTLD_DEFAULT).

Without a GPU (rockbuild ran with --allow-no-gpu and the device query found none,
ROCKBUILD_GPU_EXPECTED=0) the GPU checks are skipped with the reason, never passed; the CPU and
preload checks still run. With a GPU expected, a torch that cannot see it fails.
"""

import ctypes
import importlib.util
import os
import platform
import re

import pytest
import torch

GPU_EXPECTED = os.environ.get("ROCKBUILD_GPU_EXPECTED", "1") != "0"
NO_GPU_REASON = "no GPU: " + os.environ.get(
    "ROCKBUILD_NO_GPU_REASON", "the device query found none"
) + " (rockbuild test --allow-no-gpu)"

requires_gpu = pytest.mark.skipif(not GPU_EXPECTED, reason=NO_GPU_REASON)

MATRIX_A = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
MATRIX_B = [[7.0, 8.0, 9.0, 10.0], [11.0, 12.0, 13.0, 14.0], [15.0, 16.0, 17.0, 18.0]]
PRODUCT = [[74.0, 80.0, 86.0, 92.0], [173.0, 188.0, 203.0, 218.0]]


def on_gpu(values):
    return torch.tensor(values, device="cuda")


@requires_gpu
class TestROCmAvailability:
    def test_rocm_available(self):
        assert torch.cuda.is_available(), "ROCm is not available or not detected by PyTorch"
        assert torch.version.hip, "this torch is not a ROCm build"
        for index in range(torch.cuda.device_count()):
            print(f"GPU[{index}]: {torch.cuda.get_device_name(index)}")


@requires_gpu
class TestMatrixOperations:
    def test_matrix_multiplication(self):
        result = torch.mm(on_gpu(MATRIX_A), on_gpu(MATRIX_B))
        assert torch.allclose(result, on_gpu(PRODUCT))
        assert result.device.type == "cuda"

    def test_batch_matrix_multiplication(self):
        result = torch.bmm(torch.ones(10, 2, 3, device="cuda"), torch.ones(10, 3, 4, device="cuda"))
        assert torch.allclose(result, torch.full((10, 2, 4), 3.0, device="cuda"))

    def test_matrix_multiplication_at_operator(self):
        result = on_gpu(MATRIX_A) @ on_gpu(MATRIX_B)
        assert torch.allclose(result, on_gpu(PRODUCT))

    def test_matrix_multiplication_matmul(self):
        result = torch.matmul(on_gpu(MATRIX_A), on_gpu(MATRIX_B))
        assert torch.allclose(result, on_gpu(PRODUCT))

    def test_elementwise_multiplication(self):
        result = on_gpu(MATRIX_A) * on_gpu([[7.0, 8.0, 9.0], [10.0, 11.0, 12.0]])
        assert torch.allclose(result, on_gpu([[7.0, 16.0, 27.0], [40.0, 55.0, 72.0]]))

    def test_transpose(self):
        result = torch.t(on_gpu(MATRIX_A))
        assert torch.allclose(result, on_gpu([[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]))

    def test_dot_product(self):
        result = torch.dot(on_gpu([1.0, 2.0, 3.0]), on_gpu([4.0, 5.0, 6.0]))
        assert torch.allclose(result, on_gpu(32.0))

    def test_matrix_vector_multiplication(self):
        result = torch.mv(on_gpu(MATRIX_A), on_gpu([7.0, 8.0, 9.0]))
        assert torch.allclose(result, on_gpu([50.0, 122.0]))


@requires_gpu
class TestConvolutions:
    def teardown_method(self):
        # TheRock#999: without it the process can stall on exit.
        torch.cuda.synchronize()

    def test_conv_transpose2d(self):
        # Any convolution exercises MIOpen and the loading of its libraries.
        inputs = torch.ones(1, 4, 5, 5, device="cuda")
        weights = torch.ones(4, 8, 3, 3, device="cuda")
        result = torch.nn.functional.conv_transpose2d(inputs, weights, padding=1)
        assert result.device.type == "cuda"
        assert tuple(result.shape) == (1, 8, 5, 5)
        # The centre output sums 4 input channels over a full 3x3 window of ones.
        assert result[0, 0, 2, 2].item() == 36.0

    def test_conv_cudnn_nhwc_support(self):
        # From pytorch test/nn/test_convolution.py.
        inputs = torch.randn((1, 16, 1, 1), dtype=torch.float, device="cuda", requires_grad=True)
        weight = torch.randn((8, 16, 3, 3), dtype=torch.float, device="cuda", requires_grad=True)
        weight = weight.to(memory_format=torch.channels_last)
        output = torch.conv2d(inputs, weight, None, (2, 1), (1, 1), (1, 1), 1)
        assert output.is_contiguous(memory_format=torch.channels_last)


class TestOpenBLASAvailability:
    def test_openblas_is_selected_blas(self):
        assert re.search(r"blas_info=open", torch.__config__.show().lower()), (
            "OpenBLAS is not available or not detected by PyTorch"
        )

    def test_config_indicates_lapack_enabled(self):
        assert re.search(r"lapack is enabled", torch.__config__.show().lower()), (
            "LAPACK is not available or not detected by PyTorch"
        )

    def test_lapack_available_svd(self):
        # svd on the CPU is LAPACK's.
        u, s, vh = torch.linalg.svd(torch.randn(50, 50, device="cpu"))
        assert u.device == s.device == vh.device == torch.device("cpu")


def resolvable(symbol):
    """dlsym(RTLD_DEFAULT, symbol): found only when a library holding it was loaded globally."""
    function = getattr(ctypes.CDLL(None), symbol, None)
    return bool(function is not None and ctypes.cast(function, ctypes.c_void_p).value)


@pytest.mark.skipif(platform.system() != "Linux", reason="Linux only")
class TestRocmSdkLibraries:
    """`import torch` preloads the ROCm libraries with RTLD_GLOBAL (torch/_rocm_init.py)."""

    @pytest.mark.parametrize(
        "library,symbol",
        [
            ("amd_smi", "amdsmi_init"),
            ("amd_smi", "amdsmi_get_socket_handles"),
            ("amd_smi", "amdsmi_get_processor_handles"),
            ("amd_smi", "amdsmi_is_P2P_accessible"),
            ("amdhip64", "hipGetDeviceCount"),
        ],
    )
    def test_core_preloaded_symbol_resolvable(self, library, symbol):
        assert resolvable(symbol), (
            f"dlsym(RTLD_DEFAULT, '{symbol}') is NULL: '{library}' was not preloaded with "
            "RTLD_GLOBAL by torch/_rocm_init.py"
        )

    @pytest.mark.skipif(
        importlib.util.find_spec("rocm_sdk_libraries") is None,
        reason="rocm-sdk-libraries is not installed (a narrow rocm[core] install)",
    )
    def test_libraries_preloaded_symbol_resolvable(self):
        assert resolvable("hipblasCreate"), (
            "dlsym(RTLD_DEFAULT, 'hipblasCreate') is NULL: 'hipblas' was not preloaded with "
            "RTLD_GLOBAL by torch/_rocm_init.py"
        )
