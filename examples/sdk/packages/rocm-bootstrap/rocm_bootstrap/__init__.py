"""GPU detection before ROCm is installed (stand-in for the ROCm index's rocm-bootstrap).

The real package (rocm-systems python/rocm-bootstrap) reads the kernel driver's KFD topology
so that installers and the kpack runtime can pick device packages without ROCm userspace; the
host wheels of a kpack split require it. This stand-in keeps the same entry point and
override variable.
"""

import os
from pathlib import Path

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")


def detect_amd_gpus():
    """gfx targets of the GPUs the driver reports (`gfx_target_version` major*10000 +
    minor*100 + stepping), or those ROCM_BOOTSTRAP_FORCE_GFX_ARCH names (comma-separated)."""
    forced = os.environ.get("ROCM_BOOTSTRAP_FORCE_GFX_ARCH", "").strip()
    if forced:
        return sorted({t.strip() for t in forced.split(",") if t.strip()})
    found = set()
    if KFD_NODES.is_dir():
        for node in sorted(KFD_NODES.iterdir()):
            try:
                text = (node / "properties").read_text()
            except OSError:
                continue
            props = dict(line.split(" ", 1) for line in text.splitlines() if " " in line)
            version = int(props.get("gfx_target_version", "0") or 0)
            if int(props.get("simd_count", "0") or 0) == 0 or version == 0:
                continue
            major, minor, stepping = version // 10000, (version % 10000) // 100, version % 100
            found.add(f"gfx{major}{minor:x}{stepping:x}")
    return sorted(found)
