"""Add one run of Gavel's own simulator to benchmarks/results/allocation/gavel-reference.json.

Usage: python benchmarks/gavel_reference_add.py LABEL POLICY STDOUT CPU_S [--note TEXT]

STDOUT is what Gavel's ``scripts/drivers/simulate_scheduler_with_trace.py`` printed for the
trace ``LABEL`` (a key of benchmarks/allocation_gavel.py's TRACES) under ``POLICY``:
"Total duration: S seconds", one "Job i: JCT" line per trace line and "Average job
completion time: S seconds". The entry keeps the mean JCT and makespan in hours, the per-job
completion times (the trace line's arrival plus its JCT, seconds from the first arrival),
``CPU_S`` (the process's user + system seconds, e.g. from /usr/bin/time) and ``note`` (how
the run differed from the file's ``source``, e.g. another environment).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from optsched.output import write_file
from optsched.traces import read_trace

sys.path.insert(0, str(Path(__file__).resolve().parent))
from allocation_gavel import OUT, TRACES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("label", choices=sorted(TRACES))
    parser.add_argument("policy")
    parser.add_argument("stdout", type=Path)
    parser.add_argument("cpu_s", type=float)
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    text = args.stdout.read_text()
    makespan = float(re.search(r"Total duration: ([\d.]+) seconds", text).group(1))  # type: ignore[union-attr]
    mean = float(re.search(r"Average job completion time: ([\d.]+) seconds", text).group(1))  # type: ignore[union-attr]
    jct = {int(i): float(s) for i, s in re.findall(r"^Job (\d+): ([\d.]+)$", text, re.M)}
    trace = read_trace(TRACES[args.label])
    first = min(job.arrival for job in trace.jobs)
    completion = [
        None if i not in jct else job.arrival - first + jct[i] for i, job in enumerate(trace.jobs)
    ]
    path = OUT / "gavel-reference.json"
    data = json.loads(path.read_text())
    entry = {
        "mean_jct_h": round(mean / 3600, 4),
        "makespan_h": round(makespan / 3600, 4),
        "cpu_s": args.cpu_s,
        "completion_s": completion,
    }
    if args.note:
        entry["note"] = args.note
    data["traces"].setdefault(args.label, {})[args.policy] = entry
    write_file(path, json.dumps(data, separators=(",", ":")) + "\n")
    print(f"{args.label} {args.policy}: mean JCT {mean / 3600:.2f} h, {len(jct)} jobs")


if __name__ == "__main__":
    main()
