"""Test instrumentation shared by the sample projects (not part of the real build contracts).

Each sample build records what it saw, so rockbuild's tests can check the environment a
project was given and when its build ran (audio and vision must overlap):

* inside the wheel, `<package>/_sample_build_record.json`;
* next to the build tree, `<source>/build/sample-build-record.json` (also written when the
  build fails, with "ok": false and the error).

Both hold: project, start and end (Unix time, float seconds), pid, argv, cwd, python, the
whole environment (values of names that look like secrets are replaced by "<redacted>"),
what was installed where the build's Python looks when the build started ("installed": name
-> version) and project facts (version, targets, wheel, ...). The copy in the wheel is written
before the wheel is closed, so its "end" is null; the copy beside the build tree also has
"installed_at_end", read when the build is over (the two differ when something changed the
venv under the running build).
"""

import json
import os
import re
import sys
import sysconfig
import time
from importlib import metadata

RECORD_NAME = "sample-build-record.json"
WHEEL_RECORD_NAME = "_sample_build_record.json"
_SECRET = re.compile(r"SECRET|TOKEN|PASSWORD|CREDENTIAL|_KEY$", re.IGNORECASE)


def installed():
    """Distributions installed in this interpreter's environment (its site-packages, not the
    source tree's egg-info): normalized name -> version."""
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    found = {}
    for dist in metadata.distributions(path=paths):
        name = re.sub(r"[-_.]+", "-", (dist.metadata["Name"] or "")).lower()
        if name:
            found.setdefault(name, dist.version)
    return dict(sorted(found.items()))


class BuildRecord:
    def __init__(self, project, source_dir):
        self.project = project
        self.source_dir = os.path.abspath(source_dir)
        self.start = time.time()
        self.argv = list(sys.argv)
        self.env = {k: ("<redacted>" if _SECRET.search(k) else v) for k, v in sorted(os.environ.items())}
        self.installed = installed()
        self.facts = {}

    def set(self, **facts):
        self.facts.update(facts)

    def as_dict(self, end=None):
        record = {
            "project": self.project,
            "start": self.start,
            "end": end,
            "pid": os.getpid(),
            "argv": self.argv,
            "cwd": os.getcwd(),
            "python": sys.executable,
            "env": self.env,
            "installed": self.installed,
        }
        record.update(self.facts)
        return record

    def wheel_json(self):
        """The copy for the wheel. With SOURCE_DATE_EPOCH set it carries no clock time and no
        pid, so unchanged sources give unchanged wheel bytes (reproducible-builds.org's
        SOURCE_DATE_EPOCH: embedded times come from it); the copy beside the build tree keeps
        the real ones."""
        record = self.as_dict()
        epoch = os.environ.get("SOURCE_DATE_EPOCH")
        if epoch:
            record["start"] = float(int(epoch))
            record.pop("pid")
        return json.dumps(record, indent=2, sort_keys=True) + "\n"

    def finish(self, **facts):
        """Writes the record beside the build tree; returns its path."""
        self.facts.update(facts)
        self.facts.setdefault("ok", True)
        self.facts["installed_at_end"] = installed()
        path = os.path.join(self.source_dir, "build", RECORD_NAME)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temp = f"{path}.tmp-{os.getpid()}"
        with open(temp, "w") as f:
            f.write(json.dumps(self.as_dict(end=time.time()), indent=2, sort_keys=True) + "\n")
        os.replace(temp, path)
        return path

    def fail(self, error):
        return self.finish(ok=False, error=str(error))

    def run(self, main, what):
        """Runs a setup script's main(): a RuntimeError (a broken build contract) is recorded
        and reported as `error: <what> build failed: …` with exit 1; a failing setup() exit
        is recorded and passed on."""
        try:
            main()
        except RuntimeError as e:
            self.fail(e)
            print(f"error: {what} build failed: {e}", file=sys.stderr)
            sys.exit(1)
        except SystemExit as e:
            if e.code not in (None, 0):
                self.fail(f"setup exited with {e.code}")
            raise
