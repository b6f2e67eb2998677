"""Sample of PyTorch's test/inductor/test_torchinductor.py."""

import os


def test_runs_without_the_inductor_flag():
    # The inductor unit tests run without --inductor (nested dynamo state, upstream test.sh).
    assert os.environ.get("PYTORCH_TEST_WITH_INDUCTOR") is None
