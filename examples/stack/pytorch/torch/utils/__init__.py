"""torch.utils of the sample torch: hipify and the extension-build helpers."""
