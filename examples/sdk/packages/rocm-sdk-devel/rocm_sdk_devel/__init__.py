"""Stand-in rocm-sdk-devel: the development tree, created on first use from
`_devel_manifest.json` by `rocm_sdk._devel` (see there why)."""
