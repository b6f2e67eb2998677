"""Sample of PyTorch's test/test_autograd.py (one of the quick config's modules)."""

import pytest
import torch


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU visible to torch")
def test_scale_kernel_is_linear():
    assert torch.cuda.scale([1.0, -2.0], 3.0) == [3.0, -6.0]


def test_version_has_a_release():
    assert torch.__version__.split("+")[0].count(".") >= 1
