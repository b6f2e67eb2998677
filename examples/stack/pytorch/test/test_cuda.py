"""Sample of PyTorch's test/test_cuda.py."""

import pytest
import torch


def test_device_count_is_consistent():
    assert torch.cuda.is_available() == (torch.cuda.device_count() > 0)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU visible to torch")
def test_scale_kernel():
    assert torch.cuda.scale([1.0, 2.0], 2.0) == [2.0, 4.0]


def test_host_memory_stats():
    # Stands for the upstream test TheRock skips (generic skip list, common/cuda).
    assert {} == {"allocated_bytes.current": 0}
