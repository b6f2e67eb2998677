"""The sample torch's tools/stats/export_test_times.py, as PyTorch's (pytorch/pytorch
tools/stats/export_test_times.py): run from the checkout's root with PYTHONPATH=., it writes
test-infra's test-times.json and test-class-times.json to .additional_ci_files/."""

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.append(str(REPO_ROOT))
from tools.stats.import_test_stats import get_test_class_times, get_test_times  # noqa: E402


def main():
    print("Exporting test times from test-infra")
    get_test_times()
    get_test_class_times()


if __name__ == "__main__":
    main()
