"""Sample of PyTorch's test/test_ops_gradients.py (in the inductor config's generic list)."""

import os

import torch


def test_runs_with_the_installed_torch():
    assert torch.__file__ and "site-packages" in torch.__file__


def test_inductor_flag_matches_the_config():
    # run_test.py --inductor sets it for the inductor config's generic tests, and only there.
    expected = "1" if os.environ.get("TEST_CONFIG") == "inductor" else None
    assert os.environ.get("PYTORCH_TEST_WITH_INDUCTOR") == expected
