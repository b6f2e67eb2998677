"""Sample of PyTorch's tools/dynamo/verify_dynamo.py: checks the installed torch before the
inductor tests (upstream runs it first in test_inductor_shard)."""

import torch

print(f"torch {torch.__version__}: ok")
