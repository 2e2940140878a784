"""Hare at the paper's simulation scale (HPDC'22 §7; issue: Hare offline heuristic).

Usage: python benchmarks/hare_scale.py [--seeds 0 1 2] [--repeats 3] --out FILE.jsonl

Instances: ``optsched gen --family hare`` (160 GPUs: 85 V100, 43 T4, 11 K80, 21 M60; 300 jobs
of Hare's eight workloads in equal shares; K ~ U{1,2,4,8}; about 50,000 tasks of one
mini-batch each, ``iters_per_task`` = 1). Each method runs ``repeats`` times per instance in this
process; one JSON line per run (runtime, step-2 time, objective, bounds). Resumable: runs
already in the file are skipped.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

from optsched import solve
from optsched.generate import HareSpec, generate_hare

METHODS = ("hare-lp", "hare-lp-ect", "ect")


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
                result = solve(inst, method)
                extra = result.extra
                relaxation = extra.get("relaxation") or {}
                record = {
                    "instance": inst.name, "instance_seed": seed, "method": method,
                    "repeat": repeat, "jobs": inst.n_jobs, "gpus": inst.n_gpus,
                    "tasks": inst.n_tasks, "iters_per_task": spec.iters_per_task,
                    "objective": result.objective, "bound": result.bound,
                    "bound_critical_path": extra["bound_critical_path"],
                    "bound_method": extra["bound_method"], "runtime_s": result.runtime_s,
                    "relaxation_s": relaxation.get("runtime_s"),
                    "list_scheduling_s": extra.get("list_scheduling_s"),
                    "lp_intervals": relaxation.get("intervals"),
                    "lp_variables": relaxation.get("variables"),
                    "guarantee": extra.get("guarantee"), "machine": platform.node(),
                }
                with args.out.open("a") as fh:
                    fh.write(json.dumps(record) + "\n")
                print(f"{inst.name} {method} #{repeat}: obj {result.objective:.1f} bound "
                      f"{result.bound:.1f} in {result.runtime_s:.2f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
