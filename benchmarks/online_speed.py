"""Simulator speed (issue: online simulator): HLAS on the Hare setting and on Philly.

Usage: python benchmarks/online_speed.py [--repeats 3] [--skip-philly] --out FILE.jsonl

1. 300 jobs on 160 GPUs (``optsched gen --family hare --seed 0``: ~50,000 one-batch tasks).
2. Pollux's philly.csv (82,247 jobs, from ../shared/peer-data) on 2,000 GPUs
   (V100:1000, T4:500, K80:250, M60:250), rounds of 3,600 s of work on a K80
   (``TraceMapping(quantum=3600)``), schedule not recorded (metrics streamed).

One JSON line per run: wall time of the simulation, events, events per second, objective.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from optsched.generate import HareSpec, generate_hare
from optsched.online.run import run_policy
from optsched.traces import TraceMapping, parse_cluster, read_trace, trace_instance

PHILLY = Path(__file__).resolve().parents[2] / "shared" / "peer-data" / "pollux" / "traces" \
    / "philly.csv"
CLUSTER = "V100:1000,T4:500,K80:250,M60:250"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-philly", action="store_true")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    cases = [("hare-s0-j300-g160", lambda: generate_hare(HareSpec(), 0), True)]
    if not args.skip_philly and PHILLY.exists():
        cases.append(("philly-g2000", lambda: trace_instance(
            read_trace(PHILLY), parse_cluster(CLUSTER), TraceMapping(quantum=3600)), False))
    for name, build, record in cases:
        started = time.perf_counter()
        inst = build()
        load = time.perf_counter() - started
        walls = []
        for repeat in range(args.repeats):
            result, sim = run_policy(inst, "hlas", record=record)
            walls.append(sim.runtime_s)
            row = {"case": name, "repeat": repeat, "jobs": inst.n_jobs, "gpus": inst.n_gpus,
                   "tasks": inst.n_tasks, "load_s": load, "simulation_s": sim.runtime_s,
                   "total_s": result.runtime_s, "events": sim.events,
                   "events_per_s": sim.events_per_s, "objective": result.objective,
                   "checked": record}
            with args.out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{name} #{repeat}: {sim.runtime_s:.2f} s, {sim.events} events "
                  f"({sim.events_per_s:,.0f}/s)", file=sys.stderr)
        print(f"{name}: median {statistics.median(walls):.2f} s over {len(walls)} runs",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
