"""Tensors of the sample torch: float32 values on the CPU, enough for what the smoke checks do
on the CPU (torch.randn, torch.linalg.svd, .device). Tensors on a GPU are refused as torch
refuses them without one; with one, the sample has no kernels for them."""

import random


class device:
    """torch.device: a type ('cpu', 'cuda') and an optional index."""

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif ":" in type:
            type, _, text = type.partition(":")
            if not text.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}:{text}'")
            index = int(text)
        if type not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"


def _device(value):
    where = device(value if value is not None else "cpu")
    if where.type == "cuda":
        from . import cuda

        if not cuda.is_available():
            raise RuntimeError("No HIP GPUs are available")
        raise NotImplementedError("the sample torch keeps tensors on the CPU only")
    return where


class Tensor:
    """A dense float32 tensor, row-major."""

    def __init__(self, values, shape, device=None):
        size = 1
        for extent in shape:
            size *= extent
        if len(values) != size:
            raise RuntimeError(f"shape {list(shape)} is invalid for input of size {len(values)}")
        self._values = [float(v) for v in values]
        self.shape = tuple(shape)
        self.device = _device(device)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self):
        return len(self.shape)

    def tolist(self):
        def nest(values, shape):
            if not shape:
                return values[0]
            if len(shape) == 1:
                return list(values)
            step = len(values) // shape[0]
            return [nest(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]

        return nest(self._values, self.shape)

    def __repr__(self):
        return f"tensor({self.tolist()})"


def randn(*size, device=None, dtype=None, requires_grad=False):
    """Values from the standard normal distribution."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    count = 1
    for extent in size:
        count *= extent
    return Tensor([random.gauss(0.0, 1.0) for _ in range(count)], size, device)
