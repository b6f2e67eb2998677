#!/usr/bin/env python3
"""Phase breakdown of one checkout of the torch-scale bench (benches/torch-scale/bench.sh).

    phases.py rockbuild LOG          # torch's .git/rockbuild/checkout.log (rockbuild's runner log)
    phases.py reference TIMINGS      # the file reference-checkout.sh writes with REFERENCE_TIMINGS
    phases.py report RESULTS_DIR     # the tables of docs/performance.md from a bench run

Phases of the torch path: fetch, checkout (the 37k-file worktree), submodules (update --init
--recursive and marking them skip-worktree), hipify (build_amd.py), hipify-check (rockbuild
only: the working trees' tree ids and the leftover-CUDA scan), commits (the hipify commits
and their status walks), tags. rockbuild does tags and submodule config in-process (libgit2),
so they are not in its log: what the log does not cover is reported as `in-process`.
"""

import json
import re
import statistics
import sys
from datetime import datetime
from pathlib import Path

PHASES = ["fetch", "checkout", "submodules", "hipify", "hipify-check", "commits", "tags", "in-process"]

STEP = re.compile(r"^==> (\S+Z) (.*) \(attempt \d+\)$")
COMMAND = re.compile(r"^\$ ")
END = re.compile(r"^==> .* after ([0-9.]+)s$")


def timestamp(text):
    # The runner writes RFC 3339 with nanoseconds; Python reads up to microseconds.
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", text).replace("Z", "+00:00")).timestamp()


def rockbuild_phase(label, command):
    if label.startswith("hipify ("):
        return "hipify"
    if "GIT_INDEX_FILE=" in command:
        return "hipify-check"  # tree ids in a temporary index (elsewhere the runner unsets it)
    if ": git fetch" in label:
        return "fetch"
    if ": git checkout" in label:
        return "checkout"
    if ": git submodule" in label or ": git update-index" in label:
        return "submodules"
    if ": git add" in label or ": git commit" in label:
        return "commits"
    if ": git tag" in label:
        return "tags"
    return "in-process"


def parse_rockbuild(log):
    """Sums the runner's steps by phase; the rest of the span is rockbuild's own work."""
    phases = dict.fromkeys(PHASES, 0.0)
    lines = Path(log).read_text(errors="replace").splitlines()
    first = last = None
    i = 0
    while i < len(lines):
        m = STEP.match(lines[i])
        if not m:
            i += 1
            continue
        start = timestamp(m.group(1))
        label = m.group(2)
        command = lines[i + 1] if i + 1 < len(lines) and COMMAND.match(lines[i + 1]) else ""
        j = i + 1
        while j < len(lines) and not END.match(lines[j]) and not STEP.match(lines[j]):
            j += 1
        if j < len(lines) and END.match(lines[j]):
            seconds = float(END.match(lines[j]).group(1))
            phases[rockbuild_phase(label, command)] += seconds
            first = start if first is None else min(first, start)
            last = start + seconds if last is None else max(last, start + seconds)
        i = j + 1
    span = (last - first) if first is not None else 0.0
    phases["in-process"] += max(0.0, span - sum(phases.values()))
    return {"span": span, "phases": phases}


def parse_reference(timings):
    """Sums the torch project's steps by phase."""
    phases = dict.fromkeys(PHASES, 0.0)
    first = last = None
    for line in Path(timings).read_text().splitlines():
        project, phase, start, end = line.split()
        start, end = float(start), float(end)
        if project != "torch":
            continue
        phases[phase] += end - start
        first = start if first is None else min(first, start)
        last = end if last is None else max(last, end)
    return {"span": (last - first) if first is not None else 0.0, "phases": phases}


def fmt(seconds):
    return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"


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
    out = [f"{len(runs)} alternating rounds (reference, cold, warm); load average {extra['load']}.", ""]
    out += ["| measurement | median | min | max | ratio to the reference (median of per-round ratios) |", "|---|---|---|---|---|"]
    for side in sides:
        walls = [r[side]["wall"] for r in runs]
        ratios = [r[side]["wall"] / r["reference"]["wall"] for r in runs]
        ratio = "1.00" if side == "reference" else f"**{statistics.median(ratios):.2f}×** ({min(ratios):.2f}–{max(ratios):.2f})"
        out.append(f"| {names[side]} | {fmt(statistics.median(walls))} | {fmt(min(walls))} | {fmt(max(walls))} | {ratio} |")
    up = extra["up_to_date"]
    out.append(f"| `rockbuild checkout` again, same pins (up to date) | {fmt(statistics.median(up))} | {fmt(min(up))} | {fmt(max(up))} | goal ≤ 1 s |")
    out += ["", "Torch path by phase (medians; reference: its torch steps; rockbuild: torch's runner log):", ""]
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
