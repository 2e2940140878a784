"""How long one allocation LP takes at scale: n active jobs × 3 GPU types, n/4 GPUs of each
type (the cluster Gavel's scalability study uses), the jobs' speeds drawn from the Gavel
workloads of the catalog (scale factors 1, 2, 4, 8 at Gavel's trace mix).

Usage: python benchmarks/allocation_lp_speed.py [--jobs 256 2048 8192] [--repeat 3]
           [--gavel GAVEL/scheduler --gavel-python VENV/bin/python]

With ``--gavel`` (a checkout of Gavel's repository, its ``scheduler`` folder, and a Python
with its simulator's packages: cvxpy, ecos, numpy), Gavel's own ``max_min_fairness_perf``
policy (cvxpy + ECOS) is timed on the same problems in the same run, in a subprocess.

The jobs come from about a hundred kinds (workload × scale factor), as in a trace, and the
max-min and throughput LPs group identical jobs (exact: optsched.exact.allocation); the
column "no two jobs alike" perturbs every rate by under 1 % so nothing groups.

Prints, per size and objective, the median wall time of ``--repeat`` solves (HiGHS through
optsched.exact.allocation: a vertex by the primal simplex, or by interior point and
crossover from 3,000 columns; ``central``: interior point without crossover) and writes
benchmarks/results/allocation/lp-speed.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from optsched.exact.allocation import (
    AllocationProblem,
    max_min_partitioned,
    max_min_share,
    max_total_share,
    min_makespan,
    min_max_rho,
)
from optsched.output import write_file
from optsched.workloads import default_catalog

OUT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "allocation"
TYPES = ("V100", "P100", "K80")


def problem(n: int, seed: int = 0) -> tuple[AllocationProblem, np.ndarray, np.ndarray]:
    """n jobs drawn from the catalog's Gavel workloads (single-GPU 70 %, else 2/4/8 GPUs,
    as Gavel's trace generator), their rates per type, n/4 GPUs of each type, and the
    reference (equal split) throughput and remaining rounds."""
    rng = np.random.default_rng(seed)
    catalog = default_catalog()
    pool = [
        w
        for w in catalog.workloads.values()
        if "(scale factor" not in w.name and all(t in w.cells for t in TYPES)
    ]
    scale = rng.choice([1, 2, 4, 8], size=n, p=[0.7, 0.1, 0.15, 0.05])
    rates = np.empty((n, 3))
    for j in range(n):
        w = pool[rng.integers(len(pool))]
        rates[j] = [1.0 / w.cells[t].seconds for t in TYPES]
    capacity = np.full(3, max(8, n // 4), dtype=float)
    p = AllocationProblem(rates, scale.astype(float), capacity, np.ones(n))
    reference = p.reference()
    remaining = rng.uniform(10, 1000, size=n)
    return p, reference, remaining


def timed(solve: Any, *args: Any, **kwargs: Any) -> float:
    started = time.perf_counter()
    solve(*args, **kwargs)
    return time.perf_counter() - started


#: Run by Gavel's Python: time Gavel's own max-min policy on the problems in argv[2].
GAVEL_TIMER = """
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from policies.max_min_fairness import MaxMinFairnessPolicyWithPerf
for n, p in json.load(open(sys.argv[2])).items():
    types = ("v100", "p100", "k80")
    tput = {j: dict(zip(types, row)) for j, row in enumerate(p["rates"])}
    sf = {j: int(k) for j, k in enumerate(p["scale"])}
    spec = dict(zip(types, map(int, p["capacity"])))
    times = []
    for _ in range(int(sys.argv[3])):
        policy = MaxMinFairnessPolicyWithPerf(solver="ECOS")
        started = time.perf_counter()
        policy.get_allocation(tput, sf, dict.fromkeys(sf, 1.0), spec)
        times.append(time.perf_counter() - started)
    print(n, statistics.median(times), flush=True)
"""


def gavel_times(sizes: list[int], scheduler: str, python: str, repeat: int) -> dict[int, float]:
    """Gavel's max-min LP time (median of ``repeat``) per size, on :func:`problem`'s data."""
    import json
    import subprocess
    import tempfile

    data = {}
    for n in sizes:
        p, _, _ = problem(n)
        data[n] = {
            "rates": p.rates.tolist(),
            "scale": p.scale.tolist(),
            "capacity": p.capacity.tolist(),
        }
    with tempfile.NamedTemporaryFile("w", suffix=".json") as fh:
        json.dump(data, fh)
        fh.flush()
        out = subprocess.run(
            [python, "-c", GAVEL_TIMER, scheduler, fh.name, str(repeat)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return {int(n): float(t) for n, t in (line.split() for line in out.splitlines())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, nargs="*", default=[256, 2048, 8192])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gavel", help="Gavel's scheduler folder, to time its LP too")
    parser.add_argument("--gavel-python", default=sys.executable, help="Python for Gavel")
    args = parser.parse_args()
    gavel = (
        gavel_times(args.jobs, args.gavel, args.gavel_python, args.repeat) if args.gavel else {}
    )
    lines = [
        "# Allocation LP speed",
        "",
        f"Median of {args.repeat} solves (wall s), n jobs × 3 types, n/4 GPUs per type. "
        "Generated by `benchmarks/allocation_lp_speed.py`.",
        "",
        "| jobs | max-min | max-min, no two jobs alike | the same in 2 pieces (certified gap) "
        "| max-min central "
        "| Gavel's max-min (cvxpy, ECOS) "
        "| max-min fill=throughput | max-throughput | min-makespan "
        "| finish-time (bisection, LPs) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in args.jobs:
        p, reference, remaining = problem(n)
        elapsed = np.zeros(n)
        ideal = remaining / p.throughput(p.equal_share())
        cells = []
        for solve, extra in (
            (max_min_share, {}),
            (max_min_share, {"central": True}),
            (max_min_share, {"fill": "throughput"}),
            (max_total_share, {}),
            (min_makespan, None),
        ):
            second = remaining if extra is None else reference
            times = [timed(solve, p, second, **(extra or {})) for _ in range(args.repeat)]
            cells.append(f"{statistics.median(times):.3f}")
        cells.insert(2, f"{gavel[n]:.3f}" if n in gavel else "–")
        # no two jobs alike (rates perturbed by under 1 %): nothing to group
        rng = np.random.default_rng(n)
        distinct = dataclasses.replace(p, rates=p.rates * rng.uniform(0.99, 1.01, p.rates.shape))
        times = [timed(max_min_share, distinct, reference) for _ in range(args.repeat)]
        cells.insert(1, f"{statistics.median(times):.3f}")
        # the same in POP-style pieces, with the gap their duals certify
        times = [timed(max_min_partitioned, distinct, reference, 2) for _ in range(args.repeat)]
        pop = max_min_partitioned(distinct, reference, 2)
        gap = (pop.upper - pop.lower) / pop.upper
        cells.insert(2, f"{statistics.median(times):.3f} ({100 * gap:.2f} %)")
        rho = min_max_rho(p, elapsed, remaining, ideal)
        cells.append(f"{rho.seconds:.2f} ({rho.solves})")
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    write_file(OUT / "lp-speed.md", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
