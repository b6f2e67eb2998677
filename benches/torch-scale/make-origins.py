#!/usr/bin/env python3
"""Builds a torch-scale stack of local git origins from PyTorch's real source (benchmarks only).

    benches/torch-scale/make-origins.py [--cache-dir DIR]

prints the directory it built (CACHE/world) and leaves there

    origins/pytorch.git        PyTorch 2.6.0's real source tree (Debian's upstream tarball) with
                               32 submodules (24 top level + 8 nested) as gitlinks, branches
                               `main` (upstream v2.6.0, annotated tag v2.6.0) and `release/2.6`
                               (the ROCm fork's shape: + related_commits, CI pin files)
    origins/<lib>.git          one origin per third-party library, each the library's real
                               source (Debian's upstream tarball), one commit on `main`
    origins/{audio,vision,triton,apex}.git
                               the sample stack's small origins (examples/make_origins.py)
    stack.yaml                 the sample stack config (examples/stack.yaml.in) pointing at them
    world.json                 every origin's URL and commits, the submodule list, sizes

Why Debian: it is the one reachable source of PyTorch's code here (pypi wheels carry no C++
sources, GitHub is not reachable). Debian sid lists pytorch 2.14.1, but its archive files are
not downloadable from the mirror this machine reaches (404); 2.6.0+dfsg-7 (trixie) is the newest
that downloads, so that is the version built. Debian's `+dfsg` repack drops third_party/*
(debian/copyright Files-Excluded); the submodules are rebuilt from the Debian source packages
of those same libraries, at the versions below (ones the mirror serves; rows marked "build-dep"
are the minimum versions Debian's pytorch 2.6.0 package builds against). Of the 36 trees the
repack removes (35 under third_party/ plus android/libs/fbjni), the 12 Debian does not ship in
main or the mirror does not serve (fbgemm, NNPACK, python-peachpy, cudnn_frontend, cutlass,
ittapi, NVTX, composable_kernel, eigen, nccl, opentelemetry-cpp, fbjni) are left out: 24
top-level submodules, every one real code.

The shape follows the real repositories:
  - pytorch's .gitmodules as upstream writes it (`ignore = dirty`, absolute URLs: here file://);
  - nested submodules where the library's own .gitmodules has them and the target library is
    one of ours (protobuf: googletest, benchmark; onnx: pybind11; tensorpipe: pybind11,
    googletest; gloo: googletest; kineto: fmt, googletest, as upstream kineto's .gitmodules);
  - `related_commits` in ROCm/pytorch's format (ROCm/pytorch release branches: one
    `os|source|project|branch|commit|origin` row per os and project, ubuntu and centos, no
    header; rows for projects outside the stack, torchdata and ao, kept as the real file has
    them), `.ci/docker/ci_commit_pins/triton.txt` (a bare commit SHA, as ROCm/pytorch has it)
    and `.ci/docker/triton_version.txt`;
  - tools/amd_build/build_amd.py and torch/utils/hipify/ are the source's own (PyTorch's real
    hipify);
  - origins are packed with bitmaps and allow fetching any SHA, as a GitHub server does.
History is one commit per library and two on torch (a real clone fetches years of history: the
fetch phase here is the packfile of one tree, a lower bound).

The download goes through apt-get with a private configuration under the cache directory
(its own sources.list with deb-src lines, lists and archives): nothing on the system changes
and no root is needed beyond what apt-get itself needs to write the cache. apt-get verifies
every file against the signed Sources index. When a revision's .dsc or .debian.tar is gone
from the mirror apt exits non-zero although the .orig tarball (all we use) downloaded and
verified; the script accepts that and checks the tarball is there.

Everything is done once: downloads, unpacked trees and the origins are kept in the cache
directory (default ${XDG_CACHE_HOME:-~/.cache}/rockbuild-bench/torch-scale; not the repo) and
reused while this script's inputs are unchanged. Commits have a fixed identity and dates, so
the SHAs depend only on the sources and on the cache path. Only the Python standard library,
git, tar and apt-get are used.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.dont_write_bytecode = True  # nothing written into examples/
sys.path.insert(0, str(REPO / "examples"))
from make_origins import IDENTITY, Git as SampleGit  # noqa: E402  (the sample's git environment)

SUITES = ["trixie", "sid", "bookworm", "experimental"]
MIRROR = "http://deb.debian.org/debian"

PYTORCH = ("pytorch", "2.6.0+dfsg-7")
# Trees PyTorch's own Debian packaging carries in debian/ at the exact commits 2.6.0 pins.
FROM_PYTORCH_DEBIAN_DIR = {
    "third_party/kineto": "debian/kineto-338140f58a28d599da3434ced4fd2d75dd1a213d",
    "third_party/pocketfft": "debian/pocketfft-9d3ab05a7fffbc71a492bc6a17be034e83e8f0fe",
}
# submodule path -> (origin name, Debian source package, version): the newest version the mirror
# serves; "build-dep": the minimum debian/control of pytorch 2.6.0+dfsg-7 asks for.
THIRD_PARTY = {
    "third_party/pybind11": ("pybind11", "pybind11", "2.10.3-1"),
    "third_party/googletest": ("googletest", "googletest", "1.18.0-1"),
    "third_party/benchmark": ("benchmark", "benchmark", "1.9.5-1~exp1"),
    "third_party/protobuf": ("protobuf", "protobuf", "3.21.12-3+deb12u1"),
    "third_party/gloo": ("gloo", "gloo", "0.0~git20250912.d97133a-2"),
    "third_party/pthreadpool": ("pthreadpool", "pthreadpool", "0.0~git20240616.560c60d-1"),
    "third_party/FXdiv": ("FXdiv", "fxdiv", "0.0~git20200417.b408327-3"),  # build-dep
    "third_party/FP16": ("FP16", "fp16", "0.0~git20200514.4dfe081-3"),  # build-dep
    "third_party/psimd": ("psimd", "psimd", "0.0~git20200517.072586a-2"),  # build-dep
    "third_party/cpuinfo": ("cpuinfo", "cpuinfo", "0.0~git20250905.877328f-1"),
    "third_party/onnx": ("onnx", "onnx", "1.17.0-3"),
    "third_party/sleef": ("sleef", "sleef", "3.9.0-1"),
    "third_party/ideep": ("ideep", "ideep", "0.0~git20251020.9275706-1.1"),
    "third_party/gemmlowp/gemmlowp": ("gemmlowp", "gemmlowp", "0.0~git20211220.e844ffd-1"),
    "third_party/XNNPACK": ("XNNPACK", "xnnpack", "0.0~git20241108.4ea82e5-2"),  # build-dep
    "third_party/fmt": ("fmt", "fmtlib", "11.1.1+ds1-2"),
    "third_party/tensorpipe": ("tensorpipe", "tensorpipe", "0.0~git20250815.af0118d-1"),
    "third_party/flatbuffers": ("flatbuffers", "flatbuffers", "23.5.26+dfsg-4"),
    "third_party/nlohmann": ("nlohmann", "nlohmann-json3", "3.12.0.really.3.12.0.really.3.12.0-2"),
    "third_party/VulkanMemoryAllocator": ("VulkanMemoryAllocator", "vulkan-memory-allocator", "3.4.0+dfsg-1"),
    "third_party/mimalloc": ("mimalloc", "mimalloc", "2.0.9+ds-2"),
    "third_party/cpp-httplib": ("cpp-httplib", "cpp-httplib", "0.41.0+ds-3"),
}
ORIGIN_OF_DEBIAN_DIR = {"third_party/kineto": "kineto", "third_party/pocketfft": "pocketfft"}
# Nested submodules: library origin -> {path inside it: origin it points at}.
NESTED = {
    "protobuf": {"third_party/googletest": "googletest", "third_party/benchmark": "benchmark"},
    "onnx": {"third_party/pybind11": "pybind11"},
    "tensorpipe": {"third_party/pybind11": "pybind11", "third_party/googletest": "googletest"},
    "gloo": {"third-party/googletest": "googletest"},
    "kineto": {"libkineto/third_party/fmt": "fmt", "libkineto/third_party/googletest": "googletest"},
}
# ROCm/pytorch's related_commits rows for projects outside the stack, verbatim (ROCm/pytorch
# related_commits); the reader must skip them.
OTHER_RELATED_ROWS = [
    "ubuntu|pytorch|torchdata|main|92950795e0790eb74df995daf40b658e85fd2c9f|https://github.com/pytorch/data",
    "centos|pytorch|torchdata|main|92950795e0790eb74df995daf40b658e85fd2c9f|https://github.com/pytorch/data",
    "ubuntu|pytorch|ao|main|5e90c477f6d49a17540bd7431728bfb2457610ee|https://github.com/pytorch/ao",
    "centos|pytorch|ao|main|5e90c477f6d49a17540bd7431728bfb2457610ee|https://github.com/pytorch/ao",
]

def fail(message):
    raise SystemExit(f"make-origins.py: {message}")


def run(argv, cwd=None, env=None, check=True):
    result = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if check and result.returncode != 0:
        fail(f"{' '.join(map(str, argv))} failed (exit {result.returncode}):\n{result.stderr.strip()}")
    return result


class Apt:
    """apt-get with a private configuration: deb-src lines, lists and archives in the cache."""

    def __init__(self, root):
        self.root = root
        self.options = [
            f"-o=Dir::Etc::SourceList={root / 'sources.list'}",
            "-o=Dir::Etc::SourceParts=/dev/null",
            f"-o=Dir::State::Lists={root / 'lists'}",
            f"-o=Dir::Cache={root / 'cache'}",
            # The private dirs belong to the invoking user; apt's sandbox user could not write them.
            "-o=APT::Sandbox::User=root" if os.geteuid() == 0 else "-o=Debug::NoDropPrivs=true",
        ]

    def update(self):
        if shutil.which("apt-get") is None:
            fail("apt-get is not on PATH (this bench needs a Debian-based machine)")
        for sub in ("lists/partial", "cache/archives/partial"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        sources = "".join(f"deb-src {MIRROR} {suite} main\n" for suite in SUITES)
        stamp = self.root / "lists" / ".updated"
        if (self.root / "sources.list").exists() and (self.root / "sources.list").read_text() == sources and stamp.exists():
            return
        (self.root / "sources.list").write_text(sources)
        print(f"apt-get update (private lists: {self.root})", file=sys.stderr)
        run(["apt-get", *self.options, "update"])
        stamp.write_text("")

    def orig_tarball(self, package, version, into):
        """Downloads `package=version`'s source into `into`; returns the .orig tarball's path."""
        uris = run(["apt-get", *self.options, "source", "--print-uris", f"{package}={version}"]).stdout
        names = [line.split()[1] for line in uris.splitlines() if line.startswith("'")]
        origs = [n for n in names if ".orig.tar." in n]
        if len(origs) != 1:
            fail(f"{package}={version}: expected one .orig tarball in the Sources index, got {origs}")
        path = into / origs[0]
        if not path.exists():
            print(f"apt-get source --download-only {package}={version}", file=sys.stderr)
            result = run(["apt-get", *self.options, "source", "--download-only", f"{package}={version}"], cwd=into, check=False)
            if not path.exists():
                fail(
                    f"{package}={version}: {origs[0]} did not download (apt-get exit {result.returncode}):\n"
                    f"{result.stderr.strip()}\nthe mirror may have dropped it: pick a version `apt-get "
                    f"{' '.join(self.options)} source --print-uris {package}` lists and edit THIRD_PARTY"
                )
        return path


def unpack(tarball, dest):
    """Unpacks once; strips the single top-level directory when there is one."""
    if dest.exists():
        return dest
    temp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent))
    run(["tar", "--no-same-owner", "-C", str(temp), "-xf", str(tarball)])
    entries = list(temp.iterdir())
    top = entries[0] if len(entries) == 1 and entries[0].is_dir() else temp
    os.rename(top, dest)
    shutil.rmtree(temp, ignore_errors=True)
    return dest


class PlumbingGit(SampleGit):
    """The sample's controlled git environment (no user/system config, fixed identity and
    clock), called with an explicit git dir, work tree and index."""

    def __call__(self, git_dir, *args, work_tree=None, index=None, stdin=None, dated=False):
        env = dict(self.env, **(self.tick() if dated else {}))
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        argv = ["git", f"--git-dir={git_dir}"]
        if work_tree is not None:
            argv.append(f"--work-tree={work_tree}")
        result = subprocess.run([*argv, *args], env=env, input=stdin, capture_output=True, text=True)
        if result.returncode != 0:
            fail(f"git {' '.join(args)} failed in {git_dir}:\n{result.stderr.strip()}")
        return result.stdout.strip()


class Origin:
    """A bare origin whose commits are written with plumbing straight from an unpacked tree
    (the tree in the cache is never modified)."""

    def __init__(self, git, origins, name):
        self.git, self.name = git, name
        self.bare = origins / f"{name}.git"
        git(self.bare, "init", "-q", "--bare", "-b", "main")
        for key, value in [
            ("uploadpack.allowAnySHA1InWant", "true"),
            ("uploadpack.allowReachableSHA1InWant", "true"),
            ("uploadpack.allowFilter", "true"),
            ("repack.writeBitmaps", "true"),
        ]:
            git(self.bare, "config", key, value)

    @property
    def url(self):
        return self.bare.as_uri()

    def commit(self, tree_dir, message, files=None, gitlinks=None, drop=(), parent=None):
        """Commits `tree_dir` (every file, ignored ones too: a release tarball is what was
        tracked) plus `files` ({path: text}) and `gitlinks` ({path: sha}), minus `drop` paths."""
        with tempfile.TemporaryDirectory(prefix="index-") as scratch:
            index = Path(scratch) / "index"
            self.git(self.bare, "add", "-A", "-f", ".", work_tree=tree_dir, index=index)
            for path in [*drop, *(gitlinks or {})]:
                self.git(self.bare, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", path, index=index)
            for path, text in (files or {}).items():
                blob = self.git(self.bare, "hash-object", "-w", "--stdin", stdin=text)
                self.git(self.bare, "update-index", "--add", "--cacheinfo", f"100644,{blob},{path}", index=index)
            for path, sha in (gitlinks or {}).items():
                self.git(self.bare, "update-index", "--add", "--cacheinfo", f"160000,{sha},{path}", index=index)
            tree = self.git(self.bare, "write-tree", index=index)
        args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
        return self.git(self.bare, *args, dated=True)

    def branch(self, name, sha):
        self.git(self.bare, "update-ref", f"refs/heads/{name}", sha)

    def annotated_tag(self, name, sha, message):
        tag = self.git(
            self.bare, "mktag", dated=True,
            stdin=f"object {sha}\ntype commit\ntag {name}\ntagger {IDENTITY['GIT_COMMITTER_NAME']} "
            f"<{IDENTITY['GIT_COMMITTER_EMAIL']}> {self.git.clock} +0000\n\n{message}\n",
        )
        self.git(self.bare, "update-ref", f"refs/tags/{name}", tag)

    def pack(self):
        self.git(self.bare, "repack", "-a", "-d", "-q", "--write-bitmap-index")
        self.git(self.bare, "prune-packed")


def gitmodules(entries):
    """entries: [(path, url)] in upstream's layout (`ignore = dirty` on each, as pytorch's)."""
    return "".join(f'[submodule "{p}"]\n    ignore = dirty\n    path = {p}\n    url = {u}\n' for p, u in entries)


def related_commits(pins):
    """ROCm/pytorch's format: ubuntu and centos rows per project, no header."""
    rows = []
    for key, (branch, sha, url) in pins.items():
        for os_name in ("ubuntu", "centos"):
            rows.append(f"{os_name}|pytorch|{key}|{branch}|{sha}|{url}")
    return "\n".join(rows + OTHER_RELATED_ROWS) + "\n"


def tree_stats(path):
    files = size = 0
    for root, dirs, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            if not os.path.islink(full):
                files += 1
                size += os.path.getsize(full)
    return files, size


def inputs_fingerprint():
    digest = hashlib.sha256(Path(__file__).read_bytes())
    # The stack config is not an input of the origins: write_stack rewrites it on every run.
    digest.update((REPO / "examples" / "make_origins.py").read_bytes())
    for root, dirs, names in sorted(os.walk(REPO / "examples" / "stack")):
        dirs.sort()
        for name in sorted(names):
            path = Path(root) / name
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(REPO)).encode() + path.read_bytes())
    return digest.hexdigest()


def sources(cache):
    """Downloads and unpacks every tree; returns {origin name: unpacked dir} and pytorch's."""
    apt = Apt(cache / "apt")
    apt.update()
    debsrc, src = cache / "debsrc", cache / "src"
    debsrc.mkdir(exist_ok=True)
    src.mkdir(exist_ok=True)
    package, version = PYTORCH
    pytorch = unpack(apt.orig_tarball(package, version, debsrc), src / f"pytorch-{version}")
    debian_tar = debsrc / f"{package}_{version}.debian.tar.xz"
    if not debian_tar.exists():
        fail(f"{debian_tar.name} is missing (it carries kineto and pocketfft at 2.6.0's pins)")
    debian = unpack(debian_tar, src / f"pytorch-{version}-debian")
    trees = {}
    for path, origin in ORIGIN_OF_DEBIAN_DIR.items():
        trees[origin] = debian / FROM_PYTORCH_DEBIAN_DIR[path].removeprefix("debian/")
    for origin, package, version in THIRD_PARTY.values():
        trees[origin] = unpack(apt.orig_tarball(package, version, debsrc), src / f"{package}-{version}")
    return pytorch, trees


def write_stack(world):
    """The sample stack config (examples/stack.yaml.in) pointing at the origins."""
    origins = world / "origins"
    stack = (REPO / "examples" / "stack.yaml.in").read_text().replace("@ORIGINS@", json.dumps(origins.as_uri())[1:-1])
    (world / "stack.yaml").write_text(stack)


def build(cache, world):
    pytorch_src, trees = sources(cache)
    if world.exists():
        shutil.rmtree(world)
    world.mkdir(parents=True)
    origins = world / "origins"
    origins.mkdir()
    git = PlumbingGit(world)

    # The sample's audio, vision, triton and apex, moved next to torch.
    sample = world / "sample"
    run([sys.executable, str(REPO / "examples" / "make_origins.py"), str(sample)])
    sample_info = json.loads((sample / "origins.json").read_text())["repos"]
    small = {}
    for project in ("audio", "vision", "triton", "apex"):
        info = sample_info[project]
        os.rename(info["path"], origins / f"{project}.git")
        small[project] = info
    shutil.rmtree(sample)
    url_of = {project: (origins / f"{project}.git").as_uri() for project in small}

    # Libraries: leaves first, then the ones with nested submodules.
    libs = {}
    submodules = {}  # origin name -> {path: sha}
    order = sorted(trees, key=lambda name: name in NESTED)
    for name in order:
        origin = Origin(git, origins, name)
        nested = NESTED.get(name, {})
        links = {path: libs[target][1] for path, target in nested.items()}
        modules = gitmodules([(path, (origins / f"{target}.git").as_uri()) for path, target in nested.items()])
        files = {".gitmodules": modules} if nested else {}
        drop = [] if nested else [".gitmodules"]  # upstream entries for trees we do not provide
        sha = origin.commit(trees[name], f"{name} (Debian upstream source)", files=files, gitlinks=links, drop=drop)
        origin.branch("main", sha)
        origin.pack()
        libs[name] = (origin, sha)
        submodules[name] = links

    # PyTorch: upstream v2.6.0 on main, the ROCm fork's release/2.6 on top.
    torch = Origin(git, origins, "pytorch")
    top = {**{p: o for p, (o, _, _) in THIRD_PARTY.items()}, **ORIGIN_OF_DEBIAN_DIR}
    top = dict(sorted(top.items()))
    links = {path: libs[origin][1] for path, origin in top.items()}
    modules = gitmodules([(path, libs[origin][0].url) for path, origin in top.items()])
    upstream = torch.commit(pytorch_src, "PyTorch v2.6.0 (Debian's upstream source)", files={".gitmodules": modules}, gitlinks=links)
    torch.branch("main", upstream)
    torch.annotated_tag("v2.6.0", upstream, "PyTorch 2.6.0")
    pins = {
        "apex": ("release/1.9.0", small["apex"]["branches"]["release/1.9.0"], url_of["apex"]),
        "torchvision": ("release/0.24", small["vision"]["branches"]["release/0.24"], url_of["vision"]),
        "torchaudio": ("release/2.9", small["audio"]["branches"]["release/2.9"], url_of["audio"]),
    }
    rocm = {
        ".gitmodules": modules,
        "version.txt": "2.6.0\n",
        "related_commits": related_commits(pins),
        ".ci/docker/ci_commit_pins/triton.txt": small["triton"]["branches"]["release/3.4.x"] + "\n",
        ".ci/docker/triton_version.txt": "3.4.0\n",
    }
    release = torch.commit(pytorch_src, "[ROCm] release/2.6: related_commits and CI pins", files=rocm, gitlinks=links, parent=upstream)
    torch.branch("release/2.6", release)
    torch.pack()

    write_stack(world)

    files, size = tree_stats(pytorch_src)
    nested_count = sum(len(v) for v in submodules.values())
    for name in trees:
        f, s = tree_stats(trees[name])
        counts = 1 + sum(1 for nest in NESTED.values() for target in nest.values() if target == name)
        files += f * counts
        size += s * counts
    summary = {
        "pytorch": {"url": torch.url, "main": upstream, "release/2.6": release, "tag": "v2.6.0", "source": f"{PYTORCH[0]}={PYTORCH[1]}"},
        "libraries": {name: {"url": o.url, "commit": sha, "submodules": submodules[name]} for name, (o, sha) in libs.items()},
        "sample": {project: url_of[project] for project in small},
        "submodules": {"top_level": len(top), "nested": nested_count},
        "working_tree": {"files": files, "bytes": size},
        "stack_yaml": str(world / "stack.yaml"),
    }
    (world / "world.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rockbuild-bench" / "torch-scale"
    parser.add_argument("--cache-dir", type=Path, default=default, help=f"downloads, trees and origins (default {default})")
    args = parser.parse_args(argv)
    for tool in ("git", "tar"):
        if shutil.which(tool) is None:
            fail(f"{tool} is not on PATH")
    cache = args.cache_dir.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    world = cache / "world"
    stamp = world / ".inputs"
    fingerprint = inputs_fingerprint()
    if stamp.exists() and stamp.read_text() == fingerprint and (world / "world.json").exists():
        write_stack(world)
        print(world)
        return 0
    summary = build(cache, world)
    stamp.write_text(fingerprint)
    tree = summary["working_tree"]
    print(
        f"torch-scale origins: {summary['submodules']['top_level']} + {summary['submodules']['nested']} submodules, "
        f"{tree['files']} files, {tree['bytes'] / 1e6:.0f} MB of working tree",
        file=sys.stderr,
    )
    print(world)
    return 0


if __name__ == "__main__":
    sys.exit(main())
