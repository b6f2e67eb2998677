#!/usr/bin/env python3
"""Turns examples/stack into local git origins for the quickstart and the tests.

    examples/make_origins.py DIR

creates (replacing what a previous run made there)

    DIR/origins/<repo>.git   bare repositories, served as file:// URLs
    DIR/stack.yaml           a rockbuild stack config whose origins point at them
                             (examples/stack.yaml.in with the origins' URL filled in)
    DIR/origins.json         every repository's URL, branches and tags with their SHAs

Repositories (project -> origin, branches, what the pins say):

    torch  pytorch.git  main (2.10.0a0), release/2.9 (2.9.0); tags v2.9.0-rc1 (lightweight)
                        and v2.9.0 (annotated); submodule third_party/kineto, which has its
                        own submodule third_party/fmt (relative URLs ../kineto.git,
                        ../fmt.git); related_commits, .ci/docker/ci_commit_pins/triton.txt
                        and .ci/docker/triton_version.txt on both branches, naming the
                        matching commits of the other origins
    audio  audio.git    main (2.10.0a0), release/2.9 (2.9.0); an empty .gitmodules
    vision vision.git   main (0.25.0a0), release/0.24 (0.24.0)
    triton triton.git   main (3.5.0), release/3.4.x (3.4.0)
    apex   apex.git     master (1.10.0), release/1.9.0 (1.9.0)
           kineto.git, fmt.git   the submodules

Commits have a fixed author, committer and dates and git runs without the user's or the
system's configuration, so the SHAs depend only on the sources and on DIR (the pins carry
file:// URLs). The bare repositories allow fetching any commit by SHA and partial clones,
as GitHub does. Cloning with submodules from file:// URLs needs
`git -c protocol.file.allow=always ...` (git refuses file transport for submodules by default).

Only the Python standard library and the git command line are used.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
STACK = HERE / "stack"

IDENTITY = {
    "GIT_AUTHOR_NAME": "rockbuild sample",
    "GIT_AUTHOR_EMAIL": "sample@rockbuild.invalid",
    "GIT_COMMITTER_NAME": "rockbuild sample",
    "GIT_COMMITTER_EMAIL": "sample@rockbuild.invalid",
}
# 2025-01-01T00:00:00Z; every commit and tag is one minute after the previous one.
EPOCH = 1735689600

IGNORED_NAMES = {"__pycache__", "build", "dist", ".git"}
IGNORED_SUFFIXES = (".pyc", ".egg-info", ".whl")


class Git:
    """git with a controlled environment: no user/system config, fixed identity and clock."""

    def __init__(self, home):
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            **IDENTITY,
        }
        self.clock = EPOCH

    def tick(self):
        self.clock += 60
        stamp = f"{self.clock} +0000"
        return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}

    def __call__(self, cwd, *args, dated=False):
        env = dict(self.env, **(self.tick() if dated else {}))
        result = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
        if result.returncode != 0:
            raise SystemExit(f"make_origins.py: git {' '.join(args)} failed in {cwd}:\n{result.stderr.strip()}")
        return result.stdout.strip()


def copy_tree(source, destination):
    """Copies a sample project, following symlinks (shared files become real files)."""
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if any(part in IGNORED_NAMES or part.endswith(IGNORED_SUFFIXES) for part in rel.parts):
            continue
        target = destination / rel
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            os.chmod(target, 0o755 if os.access(path, os.X_OK) else 0o644)


class Repo:
    def __init__(self, git, work, origins, name, default_branch="main"):
        self.git = git
        self.name = name
        self.work = work / name
        self.bare = origins / f"{name}.git"
        self.default_branch = default_branch
        self.gitlinks = {}
        self.work.mkdir(parents=True)
        git(self.work, "init", "-q", "-b", default_branch)

    @property
    def url(self):
        return self.bare.as_uri()

    def commit(self, source, message, overrides=None, gitlinks=None):
        """Replaces the work tree with `source` plus `overrides` ({path: text}); commits."""
        for entry in self.work.iterdir():
            if entry.name == ".git":
                continue
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        copy_tree(source, self.work)
        for rel, text in (overrides or {}).items():
            path = self.work / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        self.git(self.work, "add", "-A")
        self.gitlinks.update(gitlinks or {})
        for path, sha in self.gitlinks.items():
            self.git(self.work, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}")
        self.git(self.work, "commit", "-q", "--no-gpg-sign", "-m", message, dated=True)
        return self.git(self.work, "rev-parse", "HEAD")

    def branch(self, name, commit):
        self.git(self.work, "branch", "-f", name, commit)

    def lightweight_tag(self, name, commit):
        self.git(self.work, "tag", name, commit)

    def annotated_tag(self, name, commit, message):
        self.git(self.work, "tag", "-a", "--no-sign", "-m", message, name, commit, dated=True)

    def publish(self):
        """Creates the bare origin and pushes every branch and tag to it."""
        self.git(self.bare.parent, "init", "-q", "--bare", "-b", self.default_branch, str(self.bare))
        for key, value in [
            ("uploadpack.allowAnySHA1InWant", "true"),
            ("uploadpack.allowReachableSHA1InWant", "true"),
            ("uploadpack.allowFilter", "true"),
        ]:
            self.git(self.bare, "config", key, value)
        self.git(self.work, "push", "-q", "--mirror", str(self.bare))

    def describe(self):
        branches = {}
        for line in self.git(
            self.bare, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads"
        ).splitlines():
            name, sha = line.split()
            branches[name] = sha
        tags = {}
        fmt = "%(refname:short) %(objectname) %(objecttype) %(*objectname)"
        for line in self.git(self.bare, "for-each-ref", f"--format={fmt}", "refs/tags").splitlines():
            parts = line.split()
            annotated = parts[2] == "tag"
            tags[parts[0]] = {"commit": parts[3] if annotated else parts[1], "object": parts[1], "annotated": annotated}
        return {
            "path": str(self.bare),
            "url": self.url,
            "default_branch": self.default_branch,
            "branches": branches,
            "tags": tags,
        }


def gitmodules(entries):
    return "".join(f'[submodule "{path}"]\n\tpath = {path}\n\turl = {url}\n' for path, url in entries)


def stack_yaml(origins):
    """examples/stack.yaml.in with @ORIGINS@ replaced (escaped for a double-quoted YAML string)."""
    url = json.dumps(origins.as_uri())[1:-1]
    return (HERE / "stack.yaml.in").read_text().replace("@ORIGINS@", url)


def related_commits(pins):
    """pins: {project key: (branch, sha)} for os ubuntu; centos rows pin other commits so a
    reader that ignores the os column picks the wrong one."""
    lines = [
        "# ROCm/pytorch pins of the rockbuild sample stack.",
        "# os|source|project|branch|commit|origin",
        "",
    ]
    for key, (branch, sha, url) in pins["ubuntu"].items():
        lines.append(f"ubuntu|pytorch|{key}|{branch}|{sha}|{url}")
    lines.append("")
    for key, (branch, sha, url) in pins["centos"].items():
        lines.append(f"centos|pytorch|{key}|{branch}|{sha}|{url}")
    return "\n".join(lines) + "\n"


def build(out):
    origins = out / "origins"
    with tempfile.TemporaryDirectory(prefix="make-origins-", dir=out) as scratch:
        scratch = Path(scratch)
        staging = scratch / "origins"
        staging.mkdir()
        work = scratch / "work"
        git = Git(scratch)
        repos = {}

        def repo(name, default_branch="main"):
            repos[name] = Repo(git, work, staging, name, default_branch)
            return repos[name]

        final_url = {
            name: (origins / f"{name}.git").as_uri()
            for name in ("pytorch", "audio", "vision", "triton", "apex", "kineto", "fmt")
        }

        fmt = repo("fmt")
        fmt_sha = fmt.commit(STACK / "submodules" / "fmt", "fmt 11.0.0 (sample)")

        kineto = repo("kineto")
        kineto_sha = kineto.commit(
            STACK / "submodules" / "kineto",
            "kineto (sample) with fmt as a submodule",
            overrides={".gitmodules": gitmodules([("third_party/fmt", "../fmt.git")])},
            gitlinks={"third_party/fmt": fmt_sha},
        )

        def versioned(name, source, release_branch, release_files, main_files, default_branch="main"):
            r = repo(name, default_branch)
            release = r.commit(source, f"{name} {release_branch} (sample)", overrides=release_files)
            r.branch(release_branch, release)
            head = r.commit(source, f"{name}: start the next release (sample)", overrides=main_files)
            return r, release, head

        audio, audio_rel, audio_main = versioned(
            "audio", STACK / "audio", "release/2.9", {"version.txt": "2.9.0\n"}, {"version.txt": "2.10.0a0\n"}
        )
        vision, vision_rel, vision_main = versioned(
            "vision", STACK / "vision", "release/0.24", {"version.txt": "0.24.0\n"}, {"version.txt": "0.25.0a0\n"}
        )
        triton_setup = (STACK / "triton" / "setup.py").read_text()
        triton_init = (STACK / "triton" / "python" / "triton" / "__init__.py").read_text()
        for text, needle in ((triton_setup, 'TRITON_VERSION = "3.5.0"'), (triton_init, '__version__ = "3.5.0"')):
            if needle not in text:
                raise SystemExit(
                    f"make_origins.py: examples/stack/triton no longer contains {needle!r}; update make_origins.py"
                )
        triton, triton_rel, triton_main = versioned(
            "triton",
            STACK / "triton",
            "release/3.4.x",
            {
                "setup.py": triton_setup.replace('TRITON_VERSION = "3.5.0"', 'TRITON_VERSION = "3.4.0"'),
                "python/triton/__init__.py": triton_init.replace('__version__ = "3.5.0"', '__version__ = "3.4.0"'),
            },
            {},
        )
        apex, apex_rel, apex_main = versioned(
            "apex",
            STACK / "apex",
            "release/1.9.0",
            {"version.txt": "1.9.0\n"},
            {"version.txt": "1.10.0\n"},
            default_branch="master",
        )

        def torch_pins(version, audio_pin, vision_pin, apex_pin, triton_sha, triton_version, other):
            pins = {
                "ubuntu": {"torchaudio": audio_pin, "torchvision": vision_pin, "apex": apex_pin},
                "centos": other,
            }
            return {
                "version.txt": f"{version}\n",
                "related_commits": related_commits(pins),
                ".ci/docker/ci_commit_pins/triton.txt": f"{triton_sha}\n",
                ".ci/docker/triton_version.txt": f"{triton_version}\n",
                ".gitmodules": gitmodules([("third_party/kineto", "../kineto.git")]),
            }

        release_files = torch_pins(
            "2.9.0",
            ("release/2.9", audio_rel, final_url["audio"]),
            ("release/0.24", vision_rel, final_url["vision"]),
            ("release/1.9.0", apex_rel, final_url["apex"]),
            triton_rel,
            "3.4.0",
            {"torchaudio": ("main", audio_main, final_url["audio"])},
        )
        main_files = torch_pins(
            "2.10.0a0",
            ("main", audio_main, final_url["audio"]),
            ("main", vision_main, final_url["vision"]),
            ("master", apex_main, final_url["apex"]),
            triton_main,
            "3.5.0",
            {"torchaudio": ("release/2.9", audio_rel, final_url["audio"])},
        )
        torch = repo("pytorch")
        rc1 = torch.commit(
            STACK / "pytorch",
            "pytorch 2.9.0-rc1 (sample)",
            overrides=release_files,
            gitlinks={"third_party/kineto": kineto_sha},
        )
        torch.lightweight_tag("v2.9.0-rc1", rc1)
        release_notes = dict(release_files, **{"RELEASE.md": "# 2.9.0\n\nThe sample's 2.9.0 release.\n"})
        final = torch.commit(STACK / "pytorch", "pytorch 2.9.0 (sample)", overrides=release_notes)
        torch.annotated_tag("v2.9.0", final, "PyTorch 2.9.0 (sample)")
        torch.branch("release/2.9", final)
        torch.commit(STACK / "pytorch", "pytorch: start 2.10 (sample)", overrides=main_files)

        for r in repos.values():
            r.publish()

        # Swap the new origins in.
        if origins.exists():
            shutil.rmtree(origins)
        os.rename(staging, origins)

    names = {
        "torch": "pytorch",
        "audio": "audio",
        "vision": "vision",
        "triton": "triton",
        "apex": "apex",
        "kineto": "kineto",
        "fmt": "fmt",
    }
    manifest = {"dir": str(out), "stack_yaml": str(out / "stack.yaml"), "repos": {}}
    for project, name in names.items():
        r = repos[name]
        r.bare = origins / f"{name}.git"
        manifest["repos"][project] = r.describe()
    write_atomic(out / "stack.yaml", stack_yaml(origins))
    write_atomic(out / "origins.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def write_atomic(path, text):
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temp.write_text(text)
    os.replace(temp, path)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="output directory (origins/, stack.yaml, origins.json)")
    args = parser.parse_args(argv)
    if shutil.which("git") is None:
        print("make_origins.py: error: git is not on PATH", file=sys.stderr)
        return 1
    out = args.dir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    manifest = build(out)
    for project, info in manifest["repos"].items():
        print(f"{project:7} {info['url']}  {info['default_branch']} {info['branches'][info['default_branch']]}")
    print(f"stack config: {out / 'stack.yaml'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
