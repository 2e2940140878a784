"""How long a work-second takes: each anytime method that counts its own work
(priority-search with each of its engines, task-search, lagrangian-bound, column-bound, gga;
cpsat and lns: CP-SAT's deterministic time, scaled) runs for ``--seconds`` of wall clock
without a work budget on instances of several sizes, and the table gives the work-seconds it
counted per second of CPU time, for the runs that the time limit ended (1.0: a work-second
takes a CPU second here, as on the 2-core reference machine the rates were fitted on). The
rates (``WORK_PER_SECOND`` and the per-unit weights of each module) were fitted on the
reference machine; the spread between sizes says how far a work-second strays from a second.

    python benchmarks/work_rates.py [--seconds 5] [--out benchmarks/results/work-rates.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from optsched import solve
from optsched.errors import InputError
from optsched.generate import GeneratorSpec, HareSpec, generate, generate_hare
from optsched.io import load_instance
from optsched.output import write_file
from optsched.placement import place
from optsched.placement.generate import PlacementSpec, generate_placement

#: (row label, method, parameters that keep it searching until the time limit)
SCHEDULING: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("priority-search", "priority-search", {"patience": 10**9, "engine": "python"}),
    ("priority-search (compiled)", "priority-search", {"patience": 10**9, "engine": "compiled"}),
    ("task-search", "task-search", {"patience": 10**9}),
    ("lagrangian-bound", "lagrangian-bound", {}),
    ("column-bound", "column-bound", {}),
    ("cpsat", "cpsat", {"lp_bound": 0}),
    ("lns", "lns", {}),
)


#: The label of the paper-scale instance (priority-search only).
PAPER = "hare-gpus-gpus140-s1"


def instances() -> list[tuple[str, Any]]:
    """(label, instance) of the sizes measured: exact-family 3, 10, 30 and 100 jobs (1-3
    rounds), 30 jobs of 10-30 rounds, a Hare-setting instance of 20 jobs on 15 GPUs, one
    instance at the Hare paper's scale (200 jobs on 140 GPUs, both modes: priority-search
    only), and placement batches on 8 and 20 hosts for gga."""
    out: list[tuple[str, Any]] = [
        (f"exact {n} jobs", generate(GeneratorSpec(jobs=n, gpus=8, gpu_types=2, hosts=2), 0))
        for n in (3, 10, 30, 100)
    ]
    long = GeneratorSpec(jobs=30, gpus=8, gpu_types=2, hosts=2, rounds=(10, 30))
    out.append(("exact 30 jobs × 10-30 rounds", generate(long, 0)))
    hare = HareSpec(jobs=20, gpus=15, total_tasks=2000)
    out.append(("hare 20 jobs, 2000 tasks", generate_hare(hare, 0)))
    paper = load_instance(
        Path(__file__).parents[1] / "instances/hare-gpus/hare-gpus-gpus140-s1.json"
    )
    out += [(f"{PAPER} {mode}", paper.with_mode(mode)) for mode in ("relaxed", "gang")]
    for hosts in (8, 20):
        spec = PlacementSpec(
            jobs_per_host=0.5,
            hosts=hosts,
            gpus_per_host=2,
            gpu_type="T4",
            gpu_memory=16384,
            cpus=48,
            memory=190464,
            hosts_per_rack=4,
            racks_per_domain=2,
        )
        out.append((f"placement {hosts} hosts", generate_placement(spec, 0)))
    return out


def measure(seconds: float) -> list[tuple[str, str, float, float, float]]:
    """(method, instance, work-seconds counted, CPU s, wall s) per run."""
    rows = []
    for label, inst in instances():
        placing = label.startswith("placement")
        for name, method, params in (("gga", "gga", {}),) if placing else SCHEDULING:
            if label.startswith(PAPER) and method != "priority-search":
                continue
            cpu, wall = time.process_time(), time.perf_counter()
            if method == "gga":
                result = place(inst, method, time_limit=seconds, params={"patience": 10**9})
            else:
                try:
                    result = solve(inst, method, time_limit=seconds, params=params)
                except InputError as exc:  # too large for the method, or no C compiler
                    print(f"{name:17} {label:18} skipped: {exc}", flush=True)
                    continue
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            if result.extra.get("stopped") != "time limit":  # it ended on its own first
                print(f"{name:17} {label:18} skipped: {result.extra.get('stopped')}")
                continue
            rows.append((name, label, float(result.extra.get("work") or 0.0), cpu, wall))
            print(f"{name:17} {label:18} {rows[-1][2] / cpu:6.2f} work-s per CPU s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--out", default="benchmarks/results/work-rates.md")
    args = parser.parse_args(argv)
    rows = measure(args.seconds)
    lines = [
        "# Work-seconds per CPU second",
        "",
        f"`python benchmarks/work_rates.py --seconds {args.seconds:g}` on {platform.node()} "
        f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, Python "
        f"{sys.version.split()[0]}). 1.0: a work-second takes a CPU second here.",
        "",
        "| method | instance | work-s | CPU s | work-s per CPU s |",
        "|---|---|---|---|---|",
    ]
    for method, label, work, cpu, _ in rows:
        lines.append(f"| {method} | {label} | {work:.2f} | {cpu:.2f} | {work / cpu:.2f} |")
    lines.append("")
    for method in dict.fromkeys(r[0] for r in rows):
        ratios = [r[2] / r[3] for r in rows if r[0] == method]
        lines.append(
            f"- {method}: median {statistics.median(ratios):.2f}, "
            f"range {min(ratios):.2f}–{max(ratios):.2f}"
        )
    write_file(Path(args.out), "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
