"""Sample of PyTorch's test/distributed/test_c10d_common.py."""

import os


def test_runs_in_the_distributed_config_only():
    # The default config excludes distributed tests; the distributed config does not force
    # everything serial (its tests use every selected GPU at once).
    assert os.environ.get("TEST_CONFIG") == "distributed"
    assert os.environ.get("PYTORCH_TEST_RUN_EVERYTHING_IN_SERIAL") is None
