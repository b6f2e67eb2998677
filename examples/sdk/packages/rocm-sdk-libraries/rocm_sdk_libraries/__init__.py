"""Stand-in rocm-sdk-libraries (multi-arch, kpack-split layout).

Platform files live in `_rocm_sdk_libraries`; each rocm-sdk-device-gfxNNN package adds its
per-target files there. The stand-in ships none of the math libraries (hipblas, miopen, ...);
`rocm_sdk` knows their names and skips them when preloading.
"""
