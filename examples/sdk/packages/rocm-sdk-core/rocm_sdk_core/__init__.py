"""Stand-in rocm-sdk-core: the runtime part of the ROCm SDK.

Its platform files live in the sibling package `_rocm_sdk_core` (bin/hipcc,
share/therock/dist_info.json), as in the real SDK.
"""
