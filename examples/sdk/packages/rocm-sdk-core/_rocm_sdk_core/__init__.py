"""Platform files of the stand-in rocm-sdk-core."""
