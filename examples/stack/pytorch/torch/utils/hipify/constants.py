"""States of a file in HIPIFY_FINAL_RESULT."""

INITIALIZED = 1
DONE = 2
