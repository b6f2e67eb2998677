"""The part of PyTorch's tools/stats/import_test_stats.py the export uses, behaving as it does:
each file is downloaded from test-infra's generated stats (three tries, 5 s each) into
<root>/.additional_ci_files/ unchanged (keyed by build environment, then test config); a file
there younger than three hours is used instead of downloading; when every try fails it prints
why and returns {} without writing anything, and the export still exits 0."""

import json
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
ADDITIONAL_CI_FILES_FOLDER = Path(".additional_ci_files")
TEST_TIMES_FILE = "test-times.json"
TEST_CLASS_TIMES_FILE = "test-class-times.json"
STATS_URL = "https://raw.githubusercontent.com/pytorch/test-infra/generated-stats/stats/"
FRESH_FOR_SECONDS = 3 * 60 * 60


def fetch_and_cache(directory, name, url):
    directory.mkdir(exist_ok=True)
    path = directory / name
    print(f"Downloading {url} to {path}")
    if path.exists() and time.time() - path.stat().st_mtime < FRESH_FOR_SECONDS:
        return json.loads(path.read_text())
    for _ in range(3):
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                contents = json.loads(response.read().decode("utf-8"))
            path.write_text(json.dumps(contents))
            return contents
        except Exception as error:  # as upstream: any failure is retried, then reported
            print(f"Could not download {url} because: {error}.")
    print(f"All retries exhausted, downloading {url} failed.")
    return {}


def from_generated_stats(from_file, to_file):
    try:
        return fetch_and_cache(REPO_ROOT / ADDITIONAL_CI_FILES_FOLDER, to_file, STATS_URL + from_file)
    except Exception:
        print("Couldn't download test times...")
        return {}


def get_test_times():
    return from_generated_stats("test-times.json", TEST_TIMES_FILE)


def get_test_class_times():
    return from_generated_stats("test-class-times.json", TEST_CLASS_TIMES_FILE)
