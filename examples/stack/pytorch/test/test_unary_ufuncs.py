"""Sample of PyTorch's test/test_unary_ufuncs.py (one of the quick config's modules)."""

import torch


def test_randn_is_float_on_the_cpu():
    values = torch.randn(3, 4)
    assert values.shape == (3, 4)
    assert values.device == torch.device("cpu")
    assert all(isinstance(v, float) for row in values.tolist() for v in row)
