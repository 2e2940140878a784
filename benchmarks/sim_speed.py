"""The online simulator's speed and memory: every policy on the shared Gavel traces and Philly.

Usage: python benchmarks/sim_speed.py [--repeats 3] [--cases heavy,heavy-x10,light,philly]
       [--policies fifo-perf,...] [--out benchmarks/results/online/sim-speed.jsonl]

Cases (schedules not recorded: metrics streamed, as for any large trace):

- ``heavy``: Gavel's gen300_lam120_a2_b4_seed1.trace (300 single-GPU jobs) on 12 V100 +
  12 P100 + 12 K80, 360 s quanta (Gavel's round length);
- ``heavy-x10``: the same trace ten times in a row (each copy shifted by the trace's arrival
  span plus its mean inter-arrival time): ten times longer at the same arrival rate;
- ``light``: Gavel's gen300_lam2400_seed0.trace, same cluster and quanta;
- ``philly``: Pollux's philly.csv (82,247 jobs) on 2,000 GPUs (V100:1000, T4:500, K80:250,
  M60:250), 3,600 s quanta.

Each run is a fresh process (so its peak memory is its own): it loads the trace, builds the
instance and simulates one policy in its own model (gang for the baselines, relaxed for HLAS
and AlloX). One JSON line per run: wall and CPU time of the whole process's work (load +
simulation), the simulation's wall time, events, events per second, peak RSS. Then
``--table`` prints the medians as Markdown.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer-data"
GAVEL = PEER / "gavel" / "generated"
CASES = {
    "heavy": (GAVEL / "gen300_lam120_a2_b4_seed1.trace", "V100:12,P100:12,K80:12", 360.0, 1),
    "heavy-x10": (GAVEL / "gen300_lam120_a2_b4_seed1.trace", "V100:12,P100:12,K80:12", 360.0, 10),
    "light": (GAVEL / "gen300_lam2400_seed0.trace", "V100:12,P100:12,K80:12", 360.0, 1),
    "philly": (
        PEER / "pollux" / "traces" / "philly.csv",
        "V100:1000,T4:500,K80:250,M60:250",
        3600.0,
        1,
    ),
}
#: policy -> its own execution model
POLICIES = {
    "fifo-perf": "gang",
    "fifo-random": "gang",
    "tiresias": "gang",
    "srtf": "gang",
    "homo": "gang",
    "hlas": "relaxed",
    "allox": "relaxed",
    "max-min-fairness": "gang",
    "max-min-fairness period=1920": "gang",
}


def split(name: str) -> tuple[str, dict[str, str]]:
    """A row name's policy and its ``key=value`` params (``"max-min-fairness period=1920"``)."""
    policy, *pairs = name.split()
    return policy, dict(pair.split("=", 1) for pair in pairs)


def tiled(trace, copies: int):
    """``copies`` copies of ``trace`` one after another, at the trace's arrival rate."""
    from optsched.traces import Trace

    if copies == 1:
        return trace
    arrivals = sorted(job.arrival for job in trace.jobs)
    span = arrivals[-1] - arrivals[0]
    step = span + span / max(1, len(arrivals) - 1)
    jobs = tuple(
        replace(job, id=f"{job.id}~{k}", arrival=job.arrival + k * step)
        for k in range(copies)
        for job in trace.jobs
    )
    return Trace(f"{trace.name}x{copies}", jobs, trace.skipped, trace.first_skip)


def one(case: str, policy: str, engine: str = "auto") -> dict:
    """Run one (case, policy) in this process and measure it."""
    from optsched.online.run import simulate
    from optsched.traces import TraceMapping, parse_cluster, read_trace, trace_instance

    path, cluster, quantum, copies = CASES[case]
    cpu, wall = time.process_time(), time.perf_counter()
    inst = trace_instance(  # the trace is not kept, as simulate's command does
        tiled(read_trace(path), copies),
        parse_cluster(cluster),
        TraceMapping(quantum=quantum),
        mode=POLICIES[policy],
    )
    name, params = split(policy)
    result = simulate(inst, name, params=params, record=False, engine=engine)
    sim = result.simulation
    return {
        "case": case,
        "policy": policy,
        "engine": sim.engine,
        "mode": inst.mode,
        "jobs": inst.n_jobs,
        "gpus": inst.n_gpus,
        "tasks": inst.n_tasks,
        "events": sim.events,
        "simulation_s": sim.runtime_s,
        "events_per_s": sim.events_per_s,
        "wall_s": time.perf_counter() - wall,
        "cpu_s": time.process_time() - cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "mean_jct_h": result.metrics["mean_jct"] / 3600 if result.metrics else None,
        "objective": result.objective,
    }


def table(path: Path) -> str:
    """Markdown: medians per (case, policy) from the records in ``path``, then how the cost
    grows from ``heavy`` to ``heavy-x10``."""
    rows: dict[tuple[str, str], list[dict]] = {}
    for line in path.read_text().splitlines():
        record = json.loads(line)
        label = record["policy"]
        if record.get("engine", "python") != "python":
            label += f" ({record['engine']})"
        rows.setdefault((record["case"], label), []).append(record)

    def med(case: str, policy: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[case, policy])

    out = [
        "# Simulator speed and memory",
        "",
        "`python benchmarks/sim_speed.py` (medians of the runs; one fresh process per run; "
        "schedules not recorded). CPU s: the process's CPU time to read the trace, build "
        "the instance and simulate (with the default regret bound, the fluid bound). "
        "Simulation s: the event loop alone. Rows marked (compiled): the compiled HLAS "
        "engine (`--engine compiled`, a C loop; the same runs as the event engine's), its "
        "one-off load outside the simulation's time. Gavel's own simulator, run side by side with "
        "this one on the same machine: `gavel-speed.md` (`benchmarks/gavel_side_by_side.py`).",
        "",
        "| case | policy | jobs | GPUs | events | simulation s | events/s | CPU s | "
        "peak MB | runs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case, policy in rows:
        first = rows[case, policy][0]
        out.append(
            f"| {case} | {policy} | {first['jobs']:,} | {first['gpus']:,} | "
            f"{first['events']:,} | {med(case, policy, 'simulation_s'):.2f} | "
            f"{med(case, policy, 'events_per_s'):,.0f} | "
            f"{med(case, policy, 'cpu_s'):.2f} | "
            f"{med(case, policy, 'peak_rss_mb'):.0f} | {len(rows[case, policy])} |"
        )
    grown = [p for c, p in rows if c == "heavy-x10" and ("heavy", p) in rows]
    if grown:
        out += [
            "",
            "Ten times longer at the same arrival rate (`heavy-x10` / `heavy`; Gavel's "
            "simulator: 27–32× the CPU):",
            "",
            "| policy | events × | simulation time × |",
            "|---|---|---|",
        ]
        for p in grown:
            events = med("heavy-x10", p, "events") / med("heavy", p, "events")
            seconds = med("heavy-x10", p, "simulation_s") / med("heavy", p, "simulation_s")
            out.append(f"| {p} | {events:.1f} | {seconds:.1f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument(
        "--out", type=Path, default=ROOT / "benchmarks" / "results" / "online" / "sim-speed.jsonl"
    )
    parser.add_argument(
        "--engine",
        default="auto",
        help="simulate's engine: auto (default: compiled for hlas on the large cases when "
        "a C compiler is there), python or compiled",
    )
    parser.add_argument("--one", nargs=2, metavar=("CASE", "POLICY"), help=argparse.SUPPRESS)
    parser.add_argument("--table", action="store_true", help="only print the table of --out")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(*args.one, engine=args.engine)))
        return 0
    if args.table:
        print(table(args.out))
        return 0
    for case in args.cases.split(","):
        if not CASES[case][0].exists():
            print(f"{case}: {CASES[case][0]} not found, skipped", file=sys.stderr)
            continue
        for policy in args.policies.split(","):
            for repeat in range(args.repeats):
                done = subprocess.run(
                    [sys.executable, __file__, "--one", case, policy, "--engine", args.engine],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                record = json.loads(done.stdout)
                with args.out.open("a") as fh:
                    fh.write(json.dumps(record) + "\n")
                print(
                    f"{case} {policy} #{repeat}: simulation {record['simulation_s']:.2f} s,"
                    f" CPU {record['cpu_s']:.2f} s, {record['peak_rss_mb']:.0f} MB",
                    file=sys.stderr,
                )
    print(table(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
