"""torch.backends of the sample torch."""

from . import cuda, cudnn  # noqa: F401
