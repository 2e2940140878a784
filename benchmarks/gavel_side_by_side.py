"""The online simulator's speed side by side with Gavel's own simulator, in one run.

Usage: python benchmarks/gavel_side_by_side.py --gavel GAVEL/scheduler --gavel-python PY
       [--repeats 3] [--traces heavy light] [--pairs fifo-perf tiresias ...]
       [--out benchmarks/results/online/gavel-speed.md]

``GAVEL/scheduler`` is the ``scheduler`` folder of a checkout of Gavel's public repository
(commit c4fa400 was measured) and ``PY`` a Python with its simulator's dependencies
(``pip install numpy scipy scikit-learn cvxpy ecos grpcio grpcio-tools protobuf
matrix_completion pandas func_timeout filelock preconditions dill psutil setproctitle``),
with its RPC stubs built once (``make rpc_stubs`` in that folder, with ``PY`` first on the
PATH). Nothing of Gavel is copied or changed: its ``scheduler.Scheduler`` is imported from
that folder and run on the trace file itself.

Each pair (our policy, its Gavel namesake) runs on each trace, the allocation policies
under the same re-solve rule on both sides: at most every 1,920 s (Gavel's default,
``minimum_time_between_allocation_resets``; ours ``period=1920``), and again at every
change (Gavel's ``minimum_time_between_allocation_resets=0``: a new allocation at the first
round boundary after an arrival or completion; ours at the arrival or completion itself,
so more solves). The every-change rows are also compared with Gavel at its default (the
last column): ours then solves about ten times as many LPs on the heavy trace and twice as
many on the light one. Gavel's allocation is also the moment it resets the time each job has
run so far, which its priorities read, so its schedules (mean JCT) move with the rule.
The full run takes about 40 minutes. Gavel runs first on even
repeats and ours first on odd ones, every run in a fresh process: Gavel's
``Scheduler.simulate`` and our ``simulate`` (metrics streamed, no schedule kept and no
bound computed: Gavel keeps and computes neither) on 12 V100 + 12 P100 + 12 K80, 360 s
rounds, seed 0; a task is 360 s of the job's V100 work (optsched.traces with reference
type V100, as Gavel's trace generator sizes jobs). Measured: the CPU seconds of the
simulation call in the process (``time.process_time``; both sides import their solver
packages before it) and of the whole process (start-up, imports and loading included;
``RUSAGE_CHILDREN``), each the median of ``--repeats``; ratio = ours / Gavel's; the
allocations each side computed (a wrapper counts Gavel's). The mean JCT of both says that
the two simulators did comparable work. The table states the machine and its load average
before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GAVEL_TRACES = ROOT.parent / "shared" / "peer-data" / "gavel" / "generated"
TRACES = {
    "heavy": GAVEL_TRACES / "gen300_lam120_a2_b4_seed1.trace",
    "light": GAVEL_TRACES / "gen300_lam2400_seed0.trace",
}
#: Gavel's simulator recomputes an allocation at most every 1,920 s by default (its
#: Scheduler's ``minimum_time_between_allocation_resets``); ``period=1920`` is the same
#: rule in ours.
GAVEL_PERIOD = 1920
#: The allocation policies (ours, Gavel's namesake).
ALLOCATION = {
    "max-min-fairness": "max_min_fairness_perf",
    "max-throughput": "max_sum_throughput_perf",
    "min-makespan": "min_total_duration_perf",
    "finish-time-fairness": "finish_time_fairness_perf",
    "isolated": "isolated",
}
EVERY_CHANGE = " every change"
#: our row -> (policy and its options, its execution model, Gavel's namesake, Gavel's
#: minimum seconds between allocations). The allocation policies run twice, under one
#: re-solve rule on both sides each time: at most every 1,920 s, then at every change (our
#: default); the table counts the LPs of both sides.
PAIRS: dict[str, tuple[str, str, str, float]] = {
    "fifo-perf": ("fifo-perf", "gang", "fifo_perf", GAVEL_PERIOD),
    "tiresias": ("tiresias", "gang", "max_min_fairness", GAVEL_PERIOD),
    "hlas": ("hlas", "relaxed", "max_min_fairness_perf", GAVEL_PERIOD),
    "allox": ("allox", "relaxed", "allox", GAVEL_PERIOD),
    **{
        ours: (f"{ours} period={GAVEL_PERIOD}", "gang", theirs, GAVEL_PERIOD)
        for ours, theirs in ALLOCATION.items()
    },
    **{ours + EVERY_CHANGE: (ours, "gang", theirs, 0) for ours, theirs in ALLOCATION.items()},
}

#: Run by Gavel's Python: argv = scheduler folder, trace, policy, minimum seconds between
#: allocations. Prints one JSON line.
GAVEL_RUN = """
import contextlib, io, json, os, sys, time
sys.path.insert(0, sys.argv[1])
import scheduler, utils
jobs, arrivals = utils.parse_trace(sys.argv[2])
solves = [0]  # allocations computed, counted by a wrapper (Gavel's code is not changed)
compute = scheduler.Scheduler._compute_allocation
def counted(self, *args, **kwargs):
    solves[0] += 1
    return compute(self, *args, **kwargs)
scheduler.Scheduler._compute_allocation = counted
policy = utils.get_policy(sys.argv[3], solver="ECOS", seed=0)
sched = scheduler.Scheduler(
    policy,
    throughputs_file=os.path.join(sys.argv[1], "simulation_throughputs.json"),
    simulate=True,
    seed=0,
    time_per_iteration=360,
    minimum_time_between_allocation_resets=float(sys.argv[4]),
)
spec = {"v100": 12, "p100": 12, "k80": 12}
log = io.StringIO()
with contextlib.redirect_stdout(log):
    cpu = time.process_time()
    sched.simulate(spec, arrivals, jobs, num_gpus_per_server={"v100": 1, "p100": 1, "k80": 1})
    cpu = time.process_time() - cpu
    jct = sched.get_average_jct()
print(json.dumps({"sim_cpu": cpu, "mean_jct_h": jct / 3600, "solves": solves[0]}))
os._exit(0)  # its RPC threads would keep the process alive
"""

#: Run by our Python: argv = trace, policy and options ("name k=v ..."), mode. Prints one
#: JSON line.
OURS_RUN = """
import json, sys, time
from optsched.online.run import simulate
from optsched.registry import get_method
from optsched.traces import TraceMapping, parse_cluster, read_trace, trace_instance
inst = trace_instance(
    read_trace(sys.argv[1]),
    parse_cluster("V100:12,P100:12,K80:12"),
    TraceMapping(quantum=360.0, reference_type="V100"),
    mode=sys.argv[3],
)
policy, *options = sys.argv[2].split()
params = dict(option.split("=", 1) for option in options)
get_method(policy, "simulate").start_up()  # its solver packages, as Gavel's are
cpu = time.process_time()
result = simulate(inst, policy, params=params, record=False, bound="none")
cpu = time.process_time() - cpu
solves = result.extra.get("policy", {}).get("solves", 0)
jct = result.metrics["mean_jct"] / 3600
print(json.dumps({"sim_cpu": cpu, "mean_jct_h": jct, "solves": solves}))
"""


def child(argv: list[str]) -> dict[str, Any]:
    """Run ``argv``; its JSON line, with the whole process's CPU seconds (``cpu``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out


def table(rows: list[dict[str, Any]], run: str, repeats: int) -> list[str]:
    """The Markdown table of ``rows``, headed by ``run`` (the command and the machine)."""
    lines = [
        "# The simulator side by side with Gavel's",
        "",
        f"{run} CPU seconds, median of {repeats} alternating runs, each in a fresh process; "
        "12 V100 + 12 P100 + 12 K80, 360 s rounds. Simulation: the simulate call; process: "
        "the whole process (start-up, imports, trace loading included). Allocations: how "
        "many times each side computed an allocation (our allocation policies' LP solves; "
        "Gavel's `_compute_allocation` calls). Gavel's re-solve rule: its least time "
        "between two allocations (`minimum_time_between_allocation_resets`, 1,920 s by "
        "default), each also a reset of the time each job has run so far, which its "
        "priorities read. Our allocation policies run under the same rule: `period=1920`, "
        "or in the rows marked 'every change' (our default) a solve at every arrival and "
        "completion, where Gavel with 0 re-solves at the first round boundary after one "
        "(so fewer times than ours: a fifth to a half as many on the heavy trace), which "
        "also moves its mean JCT. The last column compares each every-change row with Gavel "
        "at its default, which computes a tenth as many allocations as ours, or fewer, on "
        "the heavy trace and about half as many on the light one.",
        "",
        "| trace | optsched | mode | simulation CPU s | process CPU s | mean JCT (h) "
        "| allocations | Gavel | Gavel's re-solve rule (s) | simulation CPU s "
        "| process CPU s | mean JCT (h) | allocations | ratio, simulation | ratio, process "
        "| ratio, simulation, vs Gavel at 1,920 s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    at_default = {(r["trace"], r["ours"]): r["gavel_sim_cpu"] for r in rows if r["gavel_period"]}
    for r in rows:
        default = at_default.get((r["trace"], r["ours"].removesuffix(EVERY_CHANGE)))
        cross = "–"
        if not r["gavel_period"] and default is not None:
            cross = f"{r['ours_sim_cpu'] / default:.2f}"
        lines.append(
            f"| {r['trace']} | {r['ours']} | {r['mode']} | {r['ours_sim_cpu']:.2f} | "
            f"{r['ours_cpu']:.2f} | {r['ours_mean_jct_h']:.2f} | {r['ours_solves']:.0f} | "
            f"{r['gavel']} | {r['gavel_period']:.0f} | {r['gavel_sim_cpu']:.2f} | "
            f"{r['gavel_cpu']:.2f} | {r['gavel_mean_jct_h']:.2f} | {r['gavel_solves']:.0f} | "
            f"**{r['ours_sim_cpu'] / r['gavel_sim_cpu']:.2f}** | "
            f"{r['ours_cpu'] / r['gavel_cpu']:.2f} | {cross} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gavel", required=True, help="Gavel's scheduler folder")
    parser.add_argument("--gavel-python", required=True, help="a Python for Gavel")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--traces", nargs="+", default=list(TRACES), choices=list(TRACES))
    parser.add_argument("--pairs", nargs="+", default=list(PAIRS), choices=list(PAIRS))
    parser.add_argument("--out", default="benchmarks/results/online/gavel-speed.md")
    args = parser.parse_args(argv)
    from optsched.output import output_target, write_file

    out = output_target(args.out, "--out")
    load_before = os.getloadavg()[0]
    rows = []
    for trace in args.traces:
        for ours in args.pairs:
            policy, mode, theirs, period = PAIRS[ours]
            runs: dict[str, list[dict[str, Any]]] = {"gavel": [], "ours": []}
            for repeat in range(args.repeats):
                order = ["gavel", "ours"] if repeat % 2 == 0 else ["ours", "gavel"]
                for side in order:
                    if side == "gavel":
                        cmd = [args.gavel_python, "-c", GAVEL_RUN, args.gavel]
                        cmd += [str(TRACES[trace]), theirs, str(period)]
                    else:
                        cmd = [sys.executable, "-c", OURS_RUN, str(TRACES[trace]), policy, mode]
                    runs[side].append(child(cmd))
            row = {"trace": trace, "ours": ours, "mode": mode}
            row.update(gavel=theirs, gavel_period=period)
            for side, done in runs.items():
                for key in ("sim_cpu", "cpu", "mean_jct_h", "solves"):
                    row[f"{side}_{key}"] = statistics.median(r[key] for r in done)
            rows.append(row)
            print(
                f"{trace:6} {ours:33} {row['ours_sim_cpu']:7.2f} s vs {theirs:26} "
                f"{row['gavel_sim_cpu']:7.2f} s: {row['ours_sim_cpu'] / row['gavel_sim_cpu']:.2f}",
                flush=True,
            )
    run = (
        f"`python benchmarks/gavel_side_by_side.py --repeats {args.repeats}` on "
        f"{platform.node()} ({os.cpu_count()} CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}), load average {load_before:.2f} before and "
        f"{os.getloadavg()[0]:.2f} after."
    )
    lines = table(rows, run, args.repeats)
    write_file(out, "\n".join(lines) + "\n")
    write_file(out.with_suffix(".jsonl"), "".join(json.dumps(r) + "\n" for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
