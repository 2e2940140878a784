"""Hare at the paper's simulation scale (HPDC'22 §7; issue: Hare offline heuristic).

Usage: python benchmarks/hare_scale.py [--seeds 0 1 2] [--repeats 3] --out FILE.jsonl

Instances: ``optsched gen --family hare`` (160 GPUs: 85 V100, 43 T4, 11 K80, 21 M60; 300 jobs
of Hare's eight workloads in equal shares; K ~ U{1,2,4,8}; about 50,000 tasks of one
mini-batch each, ``iters_per_task`` = 1). Each method runs ``repeats`` times per instance in this
process; one JSON line per run (runtime, step-2 time, objective, bounds). Resumable: runs
already in the file are skipped.

``hare-rl-lp`` is Hare's step 1 at this scale (:func:`optsched.exact.hare_lp.solve_hare_lp`, the
LP relaxation of Hare_Sched_RL with lazily separated Queyranne cuts, models/hare-rl-lp.md)
followed by Algorithm 1's step 2 with both GPU tie rules, run here directly (not through
``solve``) and checked with :func:`optsched.check`; its record adds the cut loop's statistics,
the old interval-LP bound and the load average of the machine while it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from optsched import check, solve
from optsched.critical_path import critical_path_bound
from optsched.exact.bounds import interval_lp
from optsched.exact.hare_lp import solve_hare_lp
from optsched.exact.hare_relaxation import heterogeneity_degree
from optsched.generate import HareSpec, generate_hare
from optsched.heuristics.hare import GPU_TIES, hare_list_schedule
from optsched.instance import Instance

METHODS = ("hare-rl-lp", "hare-lp", "hare-lp-ect", "ect")


def rl_lp_record(inst: Instance) -> dict[str, Any]:
    """Step 1 (the LP of Hare_Sched_RL) and step 2 (both tie rules), checked."""
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    lp = solve_hare_lp(inst, time_limit=600)
    lp_s = time.perf_counter() - started
    if lp.round_starts is None or lp.bound is None:
        raise SystemExit(f"{inst.name}: the LP was not solved ({lp.status})")
    starts = lp.round_starts
    objectives = {}
    step2 = {}
    for tie in GPU_TIES:
        t0 = time.perf_counter()
        schedule, objective = hare_list_schedule(
            inst, lambda j, r, k: float(starts[j][r]), "earliest-free", tie
        )
        step2[tie] = time.perf_counter() - t0
        report = check(inst, schedule)
        assert report.feasible and report.objective is not None
        assert abs(report.objective - objective) <= 1e-6 * objective
        objectives[tie] = report.objective
    old = interval_lp(inst)
    alpha = heterogeneity_degree(inst)
    factor = None if alpha is None else alpha * (2 + alpha)
    return {
        "objective": objectives[GPU_TIES[0]],
        "tie_objectives": objectives,
        "bound": lp.bound,
        "bound_critical_path": critical_path_bound(inst),
        "bound_interval_lp": old.bound,
        "runtime_s": lp_s + step2[GPU_TIES[0]],
        "relaxation_s": lp_s,
        "list_scheduling_s": step2[GPU_TIES[0]],
        "lp_intervals": None,
        "lp_variables": None,  # interval-LP fields (hare_summary.py)
        "lp": {
            "status": lp.status,
            "iterations": lp.iterations,
            "cuts": lp.cuts,
            "chains": lp.chains,
            "max_violation": lp.max_violation,
            "columns": lp.columns,
            "rows": lp.rows,
            "nonzeros": lp.nonzeros,
            "history": lp.history,
        },
        "guarantee": None
        if factor is None
        else {
            "alpha": alpha,
            "factor": factor,
            "covered": False,
            "ratio": {tie: v / lp.bound for tie, v in objectives.items()},
        },
        "loadavg": [load_before, os.getloadavg()[0]],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    done = set()
    if args.out.exists():
        for line in args.out.read_text().splitlines():
            r = json.loads(line)
            done.add((r["instance_seed"], r["method"], r["repeat"]))
    spec = HareSpec()
    for seed in args.seeds:
        inst = generate_hare(spec, seed)
        for method in METHODS:
            for repeat in range(args.repeats):
                if (seed, method, repeat) in done:
                    continue
                base = {
                    "instance": inst.name,
                    "instance_seed": seed,
                    "method": method,
                    "repeat": repeat,
                    "jobs": inst.n_jobs,
                    "gpus": inst.n_gpus,
                    "tasks": inst.n_tasks,
                    "rounds": sum(j.rounds for j in inst.jobs),
                    "spec": repr(spec),
                    "machine": platform.node(),
                    "cpus": os.cpu_count(),
                }
                if method == "hare-rl-lp":
                    record = {**base, **rl_lp_record(inst)}
                else:
                    result = solve(inst, method)
                    extra = result.extra
                    relaxation = extra.get("relaxation") or {}
                    record = {
                        **base,
                        "objective": result.objective,
                        "bound": result.bound,
                        "bound_critical_path": extra["bound_critical_path"],
                        "bound_method": extra["bound_method"],
                        "runtime_s": result.runtime_s,
                        "relaxation_s": relaxation.get("runtime_s"),
                        "list_scheduling_s": extra.get("list_scheduling_s"),
                        "lp_intervals": relaxation.get("intervals"),
                        "lp_variables": relaxation.get("variables"),
                        "guarantee": extra.get("guarantee"),
                        "loadavg": [os.getloadavg()[0]],
                    }
                with args.out.open("a") as fh:
                    fh.write(json.dumps(record) + "\n")
                print(
                    f"{inst.name} {method} #{repeat}: obj {record['objective']:.1f} bound "
                    f"{record['bound']:.1f} in {record['runtime_s']:.2f} s",
                    file=sys.stderr,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
