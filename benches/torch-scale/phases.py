#!/usr/bin/env python3
"""Phase breakdown of one checkout of the torch-scale bench (benches/torch-scale/bench.sh).

    phases.py rockbuild REPORT       # the JSON `rockbuild checkout --report FILE` writes
    phases.py reference TIMINGS      # the file reference-checkout.sh writes with REFERENCE_TIMINGS
    phases.py report RESULTS_DIR     # the tables of docs/performance.md from a bench run

Phases of the torch path: fetch (into the mirror cache, submodules included), checkout (torch's
worktree), submodules (every submodule's worktree and marking them skip-worktree), hipify
(build_amd.py, or taking its result from the cache), commits and tags (the hipify commits,
tags, stamps and the hipify cache), checkout packs (rockbuild only: the uncompressed packs it
keeps in the cache for the next new tree). rockbuild's figures are its own phase clock (the torch row
of --report); the reference's are its torch steps.
"""

import json
import statistics
import sys
from pathlib import Path

PHASES = ["fetch", "checkout", "submodules", "hipify", "commits and tags", "checkout packs"]
# rockbuild's --report phase names, and the reference's step names, per phase above.
ROCKBUILD = {"fetch": "fetch", "tree": "checkout", "submodules": "submodules", "hipify": "hipify", "tags": "commits and tags", "cache": "checkout packs"}
REFERENCE = {"fetch": "fetch", "checkout": "checkout", "submodules": "submodules", "hipify": "hipify", "commits": "commits and tags", "tags": "commits and tags"}


def parse_rockbuild(report):
    """The torch row of a checkout report."""
    row = next(r for r in json.loads(Path(report).read_text()) if r["project"] == "torch")
    phases = dict.fromkeys(PHASES, 0.0)
    for name, seconds in row["phases"].items():
        phases[ROCKBUILD[name]] += seconds
    return {"span": row["seconds"], "phases": phases}


def parse_reference(timings):
    """Sums the torch project's steps by phase."""
    phases = dict.fromkeys(PHASES, 0.0)
    first = last = None
    for line in Path(timings).read_text().splitlines():
        project, phase, start, end = line.split()
        start, end = float(start), float(end)
        if project != "torch":
            continue
        phases[REFERENCE[phase]] += end - start
        first = start if first is None else min(first, start)
        last = end if last is None else max(last, end)
    return {"span": (last - first) if first is not None else 0.0, "phases": phases}


def fmt(seconds):
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


def load(samples):
    """Median load average, CPU and IO pressure (PSI 'some' avg10, %) and the time to create
    2,000 files (bench.sh's settle probe) of the samples."""
    med = lambda key: statistics.median(s.get(key, 0) for s in samples)
    return f"{med('load'):.1f} / {med('cpu'):.0f} % / {med('io'):.0f} % / {med('create_2000_files_ms'):.0f} ms"


def report(results):
    """results/run-N.json: {"reference": {...}, "cold": {...}, "warm": {...}} per pair."""
    runs = [json.loads(p.read_text()) for p in sorted(Path(results).glob("run-*.json"))]
    extra = json.loads((Path(results) / "extra.json").read_text())
    sides = ["reference", "cold", "warm"]
    names = {
        "reference": "reference's git steps, serial (baseline)",
        "cold": "`rockbuild checkout`, cold",
        "warm": "`rockbuild checkout`, new root, warm cache",
    }
    out = [f"{len(runs)} alternating rounds (reference, cold, warm).", ""]
    out += ["| measurement | median | min | max | ratio to the reference (median of per-round ratios) | load average / CPU PSI / IO PSI / 2,000 files created, at start (median) |", "|---|---|---|---|---|---|"]
    for side in sides:
        walls = [r[side]["wall"] for r in runs]
        ratios = [r[side]["wall"] / r["reference"]["wall"] for r in runs]
        ratio = "1.00" if side == "reference" else f"**{statistics.median(ratios):.2f}×** ({min(ratios):.2f}–{max(ratios):.2f})"
        out.append(f"| {names[side]} | {fmt(statistics.median(walls))} | {fmt(min(walls))} | {fmt(max(walls))} | {ratio} | {load([r[side]['load'] for r in runs])} |")
    up = extra["up_to_date"]
    out.append(f"| `rockbuild checkout` again, same pins (up to date) | {fmt(statistics.median(up))} | {fmt(min(up))} | {fmt(max(up))} | goal ≤ 1 s | {load(extra['up_to_date_load'])} |")
    out += ["", "Torch path by phase (medians; reference: its torch steps; rockbuild: the torch row of `--report`):", ""]
    out += ["| phase | reference | rockbuild cold | rockbuild warm |", "|---|---|---|---|"]
    for phase in PHASES + ["span"]:
        cells = []
        for side in sides:
            if phase == "span":
                values = [r[side]["torch"]["span"] for r in runs]
            else:
                values = [r[side]["torch"]["phases"][phase] for r in runs]
            cells.append(fmt(statistics.median(values)))
        label = "torch path total" if phase == "span" else phase
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv):
    if len(argv) != 3 or argv[1] not in ("rockbuild", "reference", "report"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, path = argv[1], argv[2]
    if kind == "report":
        print(report(path))
    else:
        parsed = parse_rockbuild(path) if kind == "rockbuild" else parse_reference(path)
        print(json.dumps(parsed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
