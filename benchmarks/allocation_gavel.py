"""The allocation policies side by side with Gavel's own simulator, on Gavel's traces.

Usage: python benchmarks/allocation_gavel.py [--traces heavy lam2400 ...] [--only NAME ...]

``--only`` reruns the named rows and keeps the others of the existing results.

Each trace runs on 12 V100 + 12 P100 + 12 K80 in gang mode (a task is 360 s of the job's work
on the V100, Gavel's round length there: Gavel's trace generator sizes jobs by their V100
throughput; optsched.traces with reference_type V100), once per (policy, options) row below,
and every schedule goes through the checker. Gavel's numbers are read from
benchmarks/results/allocation/gavel-reference.json: Gavel's own simulator (commit c4fa400,
unmodified, ECOS) run on this machine with the same traces, cluster, 360 s rounds and seed
0 (docs/methods/allocation.md says how). Max ρ is computed for both with one definition
(optsched.fairness), from Gavel's per-job completion times and ours, on our instance.

Writes benchmarks/results/allocation/gavel-side-by-side.{jsonl,md} (``--render``: the .md
again from the .jsonl).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from optsched.fairness import fairness
from optsched.instance import Instance
from optsched.online.run import simulate
from optsched.output import write_file
from optsched.traces import Trace, TraceMapping, parse_cluster, read_trace, trace_instance

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer-data" / "gavel"
TRACES = {
    "heavy": PEER / "generated" / "gen300_lam120_a2_b4_seed1.trace",
    "lam2400": PEER / "generated" / "gen300_lam2400_seed0.trace",
    "pc_mmf96": PEER / "traces" / "physical_cluster" / "max_min_fairness.trace",
    "artifact_eval": PEER / "traces" / "physical_cluster" / "artifact_evaluation.trace",
}
OUT = ROOT / "benchmarks" / "results" / "allocation"
CLUSTER = "V100:12,P100:12,K80:12"

#: (row name, our policy, params, Gavel's policy)
RUNS = [
    ("max-min-fairness", "max-min-fairness", {}, "max_min_fairness_perf"),
    (
        "max-min-fairness period=1920",
        "max-min-fairness",
        {"period": "1920"},
        "max_min_fairness_perf",
    ),
    ("max-min-fairness agnostic=1", "max-min-fairness", {"agnostic": "1"}, "max_min_fairness"),
    (
        "max-min-fairness agnostic=1 period=1920",
        "max-min-fairness",
        {"agnostic": "1", "period": "1920"},
        "max_min_fairness",
    ),
    ("finish-time-fairness", "finish-time-fairness", {}, "finish_time_fairness_perf"),
    (
        "finish-time-fairness period=1920",
        "finish-time-fairness",
        {"period": "1920"},
        "finish_time_fairness_perf",
    ),
    (
        "finish-time-fairness agnostic=1 period=1920",
        "finish-time-fairness",
        {"agnostic": "1", "period": "1920"},
        "finish_time_fairness",
    ),
    ("min-makespan", "min-makespan", {}, "min_total_duration_perf"),
    ("min-makespan period=1920", "min-makespan", {"period": "1920"}, "min_total_duration_perf"),
    (
        "min-makespan agnostic=1 period=1920",
        "min-makespan",
        {"agnostic": "1", "period": "1920"},
        "min_total_duration",
    ),
    ("max-throughput", "max-throughput", {}, "max_sum_throughput_perf"),
    (
        "max-throughput period=1920",
        "max-throughput",
        {"period": "1920"},
        "max_sum_throughput_perf",
    ),
    ("isolated period=1920", "isolated", {"period": "1920"}, "isolated"),
    ("fifo-perf", "fifo-perf", {}, "fifo_perf"),
    # space sharing: the trace's instance with space_sharing (Gavel's pairwise throughputs)
    ("fifo-packed", "fifo-packed", {}, "fifo_packed"),
    ("max-min-fairness-packed", "max-min-fairness-packed", {}, "max_min_fairness_packed"),
    (
        "max-min-fairness-packed period=1920",
        "max-min-fairness-packed",
        {"period": "1920"},
        "max_min_fairness_packed",
    ),
    (
        "max-min-fairness-packed fill=throughput period=1920",
        "max-min-fairness-packed",
        {"fill": "throughput", "period": "1920"},
        "max_min_fairness_packed",
    ),
]

#: The policies that pack jobs on GPUs: they run on the instance with space sharing.
PACKED = {"fifo-packed", "max-min-fairness-packed"}


def gavel_instance(trace: Trace, space_sharing: bool = False) -> Instance:
    """``trace`` on the cluster as Gavel runs it: gang mode, tasks of 360 s on the V100
    (with ``space_sharing``: its one-GPU jobs may share GPUs at Gavel's pairwise rates)."""
    return trace_instance(
        trace,
        parse_cluster(CLUSTER),
        TraceMapping(quantum=360.0, reference_type="V100"),
        mode="gang",
        space_sharing=space_sharing,
    )


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def max_rho(inst, completion) -> float | None:
    """Max ρ of a completion vector (None entries: jobs Gavel dropped, left out)."""
    done = np.array([np.nan if c is None else c for c in completion], dtype=float)
    if np.isnan(done).any():
        return None
    rho = fairness(inst, done).rho
    return None if rho is None else max(rho)


def ratio(ours: float, theirs: float | None) -> str:
    return "" if not theirs else f"{ours / theirs:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", nargs="*", default=list(TRACES))
    parser.add_argument("--only", nargs="*", help="row names to run (default: all)")
    parser.add_argument(
        "--render", action="store_true", help="only rewrite the .md from the .jsonl"
    )
    args = parser.parse_args()
    if args.render:
        jsonl = (OUT / "gavel-side-by-side.jsonl").read_text().splitlines()
        render([json.loads(line) for line in jsonl])
        return
    reference = json.loads((OUT / "gavel-reference.json").read_text())["traces"]
    rows = []
    for label in args.traces:
        trace = read_trace(TRACES[label])
        plain, packed = gavel_instance(trace), gavel_instance(trace, space_sharing=True)
        arrival = np.array([job.arrival for job in plain.jobs])
        for name, policy, params, gavel in RUNS:
            if args.only and name not in args.only:
                continue
            inst = packed if policy in PACKED else plain
            started, wall = cpu(), time.perf_counter()
            result = simulate(inst, policy, params=params)
            cpu_s = cpu() - started
            jct = (result.simulation.completion - arrival) / 3600
            theirs = reference.get(label, {}).get(gavel, {})
            row = {
                "trace": label,
                "name": name,
                "policy": policy,
                "params": params,
                "gavel": gavel,
                "mean_jct_h": float(jct.mean()),
                "makespan_h": result.metrics["makespan"] / 3600,
                "max_rho": result.metrics["max_rho"],
                "p99_jct_h": result.metrics["p99_jct"] / 3600,
                "cpu_s": round(cpu_s, 2),
                "wall_s": round(time.perf_counter() - wall, 2),
                "checked": result.extra["checked"],
                "lp_solves": result.extra.get("policy", {}).get("solves"),
                "packed_rounds": result.extra.get("policy", {}).get("packed_rounds"),
                "tracking": result.extra.get("policy", {}).get("tracking", {}).get("mean"),
                "gavel_mean_jct_h": theirs.get("mean_jct_h"),
                "gavel_makespan_h": theirs.get("makespan_h"),
                "gavel_max_rho": max_rho(inst, theirs["completion_s"]) if theirs else None,
                "gavel_cpu_s": None if not theirs else round(theirs["cpu_s"], 1),
                "gavel_solves": theirs.get("recomputes"),
            }
            rows.append(row)
            print(
                f"{label} {name}: mean JCT {row['mean_jct_h']:.2f} h "
                f"(Gavel {row['gavel_mean_jct_h']}), {row['cpu_s']} s CPU",
                file=sys.stderr,
                flush=True,
            )
    OUT.mkdir(parents=True, exist_ok=True)
    jsonl = OUT / "gavel-side-by-side.jsonl"
    if args.only and jsonl.exists():  # the rows not rerun stay as they were
        fresh = {(r["trace"], r["name"]) for r in rows}
        kept = [json.loads(line) for line in jsonl.read_text().splitlines()]
        rows = [r for r in kept if (r["trace"], r["name"]) not in fresh] + rows
        order = {
            (label, run[0]): i
            for i, (label, run) in enumerate((label, run) for label in TRACES for run in RUNS)
        }
        rows.sort(key=lambda r: order.get((r["trace"], r["name"]), len(order)))
    write_file(jsonl, "".join(json.dumps(r) + "\n" for r in rows))
    render(rows)


def render(rows: list[dict[str, Any]]) -> None:
    """The Markdown table of ``rows`` (as the .jsonl holds them)."""
    lines = [
        "# Allocation policies side by side with Gavel's simulator",
        "",
        f"Cluster {CLUSTER}, gang mode, tasks of 360 s of work on the V100 (Gavel's rounds "
        "there); "
        "every optsched schedule passed the checker. Gavel: its own simulator, unmodified "
        "(commit c4fa400, ECOS), same traces and cluster, 360 s rounds, seed 0, run on the "
        "same machine; max ρ of both from the per-job completion times with one definition "
        "(optsched.fairness). Ratios are optsched ÷ Gavel. CPU s: the simulation (Gavel's "
        "without imports; ours includes the checker). Work done ÷ promised: per job, the "
        "work its rounds did over the work of its promised shares while allocated, the mean "
        "over the jobs (above 1: backfilled GPUs). Generated by "
        "`benchmarks/allocation_gavel.py`.",
    ]
    for label in dict.fromkeys(r["trace"] for r in rows):
        lines += [
            "",
            f"## {label} (`{TRACES[label].name}`)",
            "",
            "| optsched policy | Gavel policy | mean JCT h (Gavel) | ratio | makespan h (Gavel) "
            "| ratio | max ρ (Gavel) | ratio | CPU s (Gavel) | LP solves (Gavel) | work done ÷ "
            "promised |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            if r["trace"] != label:
                continue
            g_rho = r["gavel_max_rho"]
            track = "–" if r["tracking"] is None else f"{r['tracking']:.3f}"
            lines.append(
                f"| `{r['name']}` | `{r['gavel']}` | {r['mean_jct_h']:.2f} "
                f"({r['gavel_mean_jct_h']}) | {ratio(r['mean_jct_h'], r['gavel_mean_jct_h'])} "
                f"| {r['makespan_h']:.2f} ({r['gavel_makespan_h']}) | "
                f"{ratio(r['makespan_h'], r['gavel_makespan_h'])} | {r['max_rho']:.3f} "
                f"({'–' if g_rho is None else f'{g_rho:.3f}'}) | "
                f"{'' if g_rho is None else ratio(r['max_rho'], g_rho)} | "
                f"{r['cpu_s']} ({r['gavel_cpu_s']}) | {r['lp_solves'] or '–'} "
                f"({r['gavel_solves'] or '–'}) | "
                f"{track} |"
            )
    write_file(OUT / "gavel-side-by-side.md", "\n".join(lines) + "\n")
    print(f"wrote {OUT / 'gavel-side-by-side.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
