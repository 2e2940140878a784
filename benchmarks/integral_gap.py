"""The per-round certified gap of the integral allocation (``integral-allocation``) at 256
and 2,048 GPUs.

Usage: python benchmarks/integral_gap.py [--gpus 256 2048] [--periods 0 360] [--time-limit 0.2]
       [--wall-limit S] [--out DIR] [--render]

Cluster: hosts of 8 GPUs of one type, V100, P100 and K80 hosts in turn (256 GPUs: 32 hosts;
2,048: 256). Jobs: copies of Gavel's heavy trace (``gen300_lam120_a2_b4_seed1``: 300 jobs),
one copy per 128 GPUs, their arrivals compressed so that jobs arrive per GPU as fast as in
the trace on its 36 GPUs; tasks of 360 s on the V100 (as benchmarks/allocation_gavel.py maps
it). The trace's jobs all take one GPU, so each job's GPU count is drawn (seed 0) from
Gavel's own Philly distribution (:func:`scale_factor`), its steps kept. A multi-GPU job
spread over hosts runs at Gavel's measured unconsolidated throughput on each type (the
catalog's spread cells, as ``optsched.traces`` maps a trace onto hosts).

Each size runs with the policy's default (a solve at every decision) and with 360 s rounds,
GPUs freed between boundaries waiting for the next solve (``period=360 backfill=0``: fewer,
larger solves). Every schedule goes through the checker; the solves' certified gaps (upper
bound − value) / upper bound, their wall seconds and how each ended are reported.
``--wall-limit`` bounds each solve's wall time (the policy's ``wall_limit``). A run replaces
the earlier record of the same (GPUs, period, wall limit, time limit) and keeps the others.

Needs ../shared/peer-data/gavel (Gavel's trace). Writes
``benchmarks/results/allocation/integral-gap.{jsonl,md}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import time
from pathlib import Path

import numpy as np

from optsched.instance import GPU, Instance
from optsched.online.run import simulate
from optsched.output import write_file
from optsched.traces import Trace, TraceMapping, read_trace, trace_instance

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer-data" / "gavel"
TRACE = PEER / "generated" / "gen300_lam120_a2_b4_seed1.trace"
OUT = ROOT / "benchmarks" / "results" / "allocation"
TYPES = ("V100", "P100", "K80")
PER_HOST = 8


def scale_factor(rng: np.random.Generator) -> int:
    """A job's GPU count from Gavel's Philly distribution (its trace generator's
    ``_generate_scale_factor``): 1 with probability 0.7, 2: 0.1, 4: 0.15, 8: 0.05."""
    r = rng.uniform(0, 1)
    return 1 if r < 0.7 else 2 if r < 0.8 else 4 if r < 0.95 else 8


def cluster(gpus: int) -> tuple[GPU, ...]:
    return tuple(
        GPU(f"h{h}/g{i}", TYPES[h % 3], host=f"h{h}")
        for h in range(gpus // PER_HOST)
        for i in range(PER_HOST)
    )


def instance(gpus: int) -> Instance:
    """The heavy trace scaled to ``gpus`` (module docstring)."""
    base = read_trace(TRACE)
    copies = max(1, gpus // 128)
    compress = gpus / 36 / copies
    rng = np.random.default_rng(0)
    jobs = [
        dataclasses.replace(
            tj, id=f"{c}-{tj.id}", arrival=tj.arrival / compress, gpus=scale_factor(rng)
        )
        for c in range(copies)
        for tj in base.jobs
    ]
    jobs.sort(key=lambda tj: tj.arrival)
    trace = Trace(f"heavy-x{copies}-{gpus}gpus", tuple(jobs))
    # on hosts, in gang mode: each multi-GPU job's spread factors from Gavel's throughputs
    return trace_instance(
        trace, cluster(gpus), TraceMapping(quantum=360.0, reference_type="V100"), mode="gang"
    )


def run(gpus: int, period: int, time_limit: float, wall_limit: float = 0.0) -> dict[str, object]:
    """One run's row: the instance, the result's metrics and the policy's report."""
    inst = instance(gpus)
    params = {
        "time_limit": time_limit,
        "wall_limit": wall_limit,
        "period": period,
        "backfill": 0 if period else 1,
    }
    before = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter()
    result = simulate(inst, "integral-allocation", params=params, record=True)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "gpus": gpus,
        "jobs": inst.n_jobs,
        "period": period,
        "time_limit": time_limit,
        "wall_limit": wall_limit,
        "checked": result.extra.get("checked"),
        "mean_jct_h": result.metrics["mean_jct"] / 3600,
        "makespan_h": result.metrics["makespan"] / 3600,
        "cpu_s": after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime,
        "wall_s": time.perf_counter() - wall,
        **result.extra["policy"],
    }


def render(rows: list[dict]) -> str:
    lines = [
        "Integral allocation, α = 1, CP-SAT limit 0.2 deterministic s per solve; period 0: a "
        "solve at every decision, 360: at 360 s boundaries only, GPUs freed in between idle; "
        "wall limit: seconds per solve, the LP and the model's construction included (–: "
        "none) (benchmarks/integral_gap.py).",
        "",
        "| GPUs | jobs | period | wall limit s | solves | gap median | gap max | ended optimal "
        "/ feasible / greedy | solve s (longest) | mean JCT h | makespan h | run CPU s | "
        "checked |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ended = r["found_by"]
        limit = r.get("wall_limit") or "–"
        lines.append(
            f"| {r['gpus']} | {r['jobs']} | {r['period']} | {limit} | {r['solves']} | "
            f"{r['gap_median']:.1e} | {r['gap_max']:.1e} | {ended.get('optimal', 0)} / "
            f"{ended.get('feasible', 0)} / {ended.get('greedy', 0)} | "
            f"{r['solve_seconds']:.1f} ({r['solve_max_s']:.2f}) | {r['mean_jct_h']:.2f} | "
            f"{r['makespan_h']:.2f} | {r['cpu_s']:.0f} | {r['checked']} |"
        )
    return "\n".join(lines) + "\n"


def _key(row: dict) -> tuple[int, int, float, float]:
    return row["gpus"], row["period"], row.get("wall_limit") or 0.0, row.get("time_limit", 0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", nargs="*", type=int, default=[256, 2048])
    parser.add_argument("--periods", nargs="*", type=int, default=[0, 360])
    parser.add_argument("--time-limit", type=float, default=0.2)
    parser.add_argument(
        "--wall-limit", type=float, default=0.0, help="seconds per solve (default 0: none)"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--render", action="store_true", help="only write the .md again from the .jsonl"
    )
    args = parser.parse_args()
    jsonl = args.out / "integral-gap.jsonl"
    if args.render:
        rows = [json.loads(line) for line in jsonl.read_text().splitlines() if line]
    else:
        # the runs made before, less those made again now
        rows = [json.loads(line) for line in jsonl.read_text().splitlines() if line]
        for gpus in args.gpus:
            for period in args.periods:
                new = run(gpus, period, args.time_limit, args.wall_limit)
                rows = [r for r in rows if _key(r) != _key(new)] + [new]
                print(json.dumps(new), flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        write_file(jsonl, "".join(json.dumps(r) + "\n" for r in rows))
    rows.sort(key=_key)
    write_file(args.out / "integral-gap.md", render(rows))
    print(render(rows))


if __name__ == "__main__":
    main()
