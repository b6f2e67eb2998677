"""torch.backends.cuda of the sample torch."""

from ... import _build_settings


def is_flash_attention_available():
    """Whether this torch was built with flash attention (USE_FLASH_ATTENTION), as real torch
    answers from the compile-time flag (torch._C._is_flash_attention_available)."""
    return _build_settings.USE_FLASH_ATTENTION
