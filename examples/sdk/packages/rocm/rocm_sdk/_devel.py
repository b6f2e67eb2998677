"""The development tree (`rocm-sdk path --root`), expanded on first use.

Wheels cannot hold symlinks, and the SDK root is mostly links: in the real SDK to files of
the runtime packages, in the stand-in also to Debian's ROCm 5.2 toolchain (headers, device
libraries, libamdhip64, CMake configs). So, like the real rocm-sdk-devel (which ships a
`_devel.tar` and expands it into a sibling package `_rocm_sdk_devel`), the stand-in ships a
manifest (`rocm_sdk_devel/_devel_manifest.json`) and creates the tree on first use:

* under an exclusive lock, so concurrent first uses (parallel builds) are safe;
* built in a temporary directory and renamed into place, so no one sees half a tree;
* every created path is added to the package's RECORD (rewritten, never appended in place:
  uv hardlinks installed files from its cache), so `pip uninstall` removes the tree;
* a stamp holds the manifest's hash: a reinstalled package with another manifest is
  expanded again.
"""

import base64
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
from pathlib import Path

ROOT_PACKAGE = "_rocm_sdk_devel"
STAMP = ".rocm_sdk_devel_stamp"


def get_devel_root(force_initialize=False):
    try:
        import rocm_sdk_devel
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            "rocm_sdk_devel module for the ROCm SDK development package is not installed. "
            "This can typically be obtained by installing `rocm[devel]` from your package manager"
        ) from e
    pure = Path(rocm_sdk_devel.__file__).parent
    site = pure.parent
    root = site / ROOT_PACKAGE
    manifest_bytes = (pure / "_devel_manifest.json").read_bytes()
    stamp = hashlib.sha256(manifest_bytes).hexdigest()
    if not force_initialize and _stamp_of(root) == stamp:
        return root
    with _locked(site / f"{ROOT_PACKAGE}.lock"):
        if force_initialize or _stamp_of(root) != stamp:
            created = _expand(json.loads(manifest_bytes), site, root, stamp)
            _record(created, site)
    return root


def _stamp_of(root):
    try:
        return (root / STAMP).read_text().strip()
    except OSError:
        return None


@contextlib.contextmanager
def _locked(path):
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _expand(manifest, site, root, stamp):
    """Builds the tree beside `root`, then swaps it in. Returns the paths created."""
    staging = site / f"{ROOT_PACKAGE}.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    created = []
    for rel, spec in manifest["files"].items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spec["text"])
        os.chmod(path, int(spec["mode"], 8))
        created.append(rel)
    for rel, target in manifest["symlinks"].items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, path)
        created.append(rel)
    (staging / STAMP).write_text(stamp + "\n")
    created.append(STAMP)
    if root.exists() or root.is_symlink():
        old = site / f"{ROOT_PACKAGE}.old-{os.getpid()}"
        os.rename(root, old)
        os.rename(staging, root)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(staging, root)
    return [f"{ROOT_PACKAGE}/{rel}" for rel in created] + [f"{ROOT_PACKAGE}.lock"]


def _record(created, site):
    """Adds the created paths to rocm-sdk-devel's RECORD so uninstalling removes them."""
    try:
        dist = importlib.metadata.distribution("rocm-sdk-devel")
    except importlib.metadata.PackageNotFoundError:
        return
    record = next(
        (f for f in (dist.files or []) if f.name == "RECORD" and f.parent.name.endswith(".dist-info")),
        None,
    )
    if record is None:
        return
    record_path = Path(record.locate())
    lines = record_path.read_text().splitlines()
    known = {line.split(",", 1)[0] for line in lines}
    for rel in created:
        if rel in known:
            continue
        path = site / rel
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            lines.append(f"{rel},sha256={digest},{len(data)}")
        else:
            lines.append(f"{rel},,")
    temp = record_path.with_name(f"RECORD.tmp-{os.getpid()}")
    temp.write_text("\n".join(lines) + "\n")
    os.replace(temp, record_path)
