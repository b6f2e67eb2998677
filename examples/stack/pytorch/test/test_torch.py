"""Sample of PyTorch's test/test_torch.py."""

import os

import torch


def test_version_is_pep440():
    assert torch.__version__[0].isdigit()


def test_inductor_flag_matches_the_config():
    # run_test.py --inductor sets it for the inductor config's generic tests, and only there.
    expected = "1" if os.environ.get("TEST_CONFIG") == "inductor" else None
    assert os.environ.get("PYTORCH_TEST_WITH_INDUCTOR") == expected


def test_print():
    # Stands for the upstream test TheRock skips as flaky (generic skip list, common/torch).
    assert repr(2.3) == "2.30000", "'tensor([2.3000+4.j])' != 'tensor([2.30000+4.j])'"
