"""Sample of PyTorch's test/test_binary_ufuncs.py (one of the quick config's modules)."""

import torch


def test_device_equality():
    assert torch.device("cpu") == torch.device("cpu")
    assert torch.device("cuda:0") != torch.device("cuda:1")
