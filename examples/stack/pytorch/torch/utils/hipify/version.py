# The engine generation this sample mirrors: v1 (torch <= 2.10).
__version__ = "1.0.0"
