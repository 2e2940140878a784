"""How much a bound that pools the cluster at given GPU-type prices can certify on a trace: a
feasible schedule of that relaxation, whose value no bound of it can exceed.

Usage: python benchmarks/fluid_ceiling.py [--case philly-loaded] [--dt 60]
       [--prices K80=0.18,M60=0.2,T4=0.33,V100=1;...] [--policy srtf:placement=paced]
       [--out FILE.md] [--regret FILE.jsonl]

The fluid bound (docs/models/fluid-bound.md) relaxes the cluster, at GPU-type prices, to one
machine of capacity C on which job j does its work W_j at a rate of at most R_j, and charges
it max(critical path, M_j + W_j / (2 R_j) + s_j). Every bound that sees only this, however
it is computed (Goemans' mean busy times, an LP, multipliers on C that vary over time), is
at most the optimum of that relaxation at those prices. This script builds a feasible point
of it: slots of ``--dt`` seconds; in each, the jobs that have arrived by its start, by least
remaining time at full rate (SRPT), each at a constant rate up to R_j while C lasts. Its
value, in total weighted JCT, bounds the relaxation's optimum from above at those prices:
its ratio to the best policy's total weighted JCT (``benchmarks/results/online/regret.jsonl``)
is the most such a bound can certify at those prices (other prices give other
relaxations). The same schedule read with exact completions (the end of the slot in which
a job's work runs out, plus its sync) bounds in the same way the stronger relaxation that
pools the cluster but charges each job its whole completion, as a column-generation or
Lagrangian bound over per-job rate profiles would. With ``--policy``, a second table sets
that policy's excess over the critical paths (its run recorded and checked, and split into
waiting to start, between rounds, on slower GPUs and the rest) beside the fluid schedule's
(at the prices of the highest value), by job length: where the policy loses most to the
relaxation.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from regret import CASES, instance

from optsched.critical_path import critical_path
from optsched.exact.fluid import _fluid_terms

ROOT = Path(__file__).resolve().parents[1]
PRICES = "K80=1,M60=1,T4=1,V100=1;K80=0.18,M60=0.2,T4=0.33,V100=1;K80=0.01,M60=0.01,T4=0.01,V100=1"


def srpt_fluid_jct(
    inst, prices: dict[str, float], dt: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """(each job's JCT in the SRPT fluid schedule as the fluid bound charges it, each job's
    JCT when its completion is read exactly, the capacity C) at ``prices``.

    The first charges max(critical path, M_j + W_j / (2 R_j) + s_j), the fluid bound's own
    relaxation; the second max(critical path, F_j + s_j) with F_j the end of the slot in
    which j's work runs out (at least when it does): a feasible point of the relaxation that
    reads completions exactly (one machine of capacity C, rates capped at R_j, the last
    result s_j after the work ends), so no bound of that one certifies more either."""
    types = [inst.gpus[members[0]].type for members in inst.class_members]
    work, rate, after, capacity = _fluid_terms(inst, np.array([prices[t] for t in types]))
    sync = after - work / (2 * rate)
    arrival = np.array([job.arrival for job in inst.jobs])
    order = np.argsort(arrival, kind="stable")
    left, moment, finish = work.copy(), np.zeros(len(work)), np.zeros(len(work))
    active = np.zeros(0, dtype=int)
    i, k = 0, 0
    while i < len(order) or len(active):
        start = k * dt
        if not len(active) and arrival[order[i]] > start:
            k = math.ceil(arrival[order[i]] / dt)
            while k * dt < arrival[order[i]]:  # the division may round down
                k += 1
            continue
        arrived = i
        while i < len(order) and arrival[order[i]] <= start:
            i += 1
        active = np.concatenate([active, order[arrived:i]])
        active = active[np.argsort(left[active] / rate[active], kind="stable")]
        most = np.minimum(rate[active] * dt, left[active])
        given = np.clip(capacity * dt - (np.cumsum(most) - most), 0.0, most)
        moment[active] += given * (start + dt / 2)  # a constant rate over the slot
        left[active] -= given
        done = left[active] <= 1e-9 * work[active]
        finish[active[done]] = start + dt
        active = active[~done]
        k += 1
    path = critical_path(inst)
    charged = np.maximum(path, moment / work + after)
    exact = np.maximum(path, finish + sync)
    return charged - arrival, exact - arrival, capacity


#: job lengths (critical path less arrival, s) the comparison groups the jobs by
LENGTHS = (
    (0.0, 600.0, "≤ 10 min"),
    (600.0, 3600.0, "10 min – 1 h"),
    (3600.0, 86400.0, "1 h – 1 day"),
    (86400.0, math.inf, "> 1 day"),
)


#: the columns of the policy's split, in table order
PARTS = ("excess", "start", "between", "slower", "rest")


def excess_parts(inst, schedule) -> dict[str, np.ndarray]:
    """Per job of a recorded relaxed-mode ``schedule``, where its time beyond its critical path
    goes: ``start`` (arrival to its first task's start), ``between`` (its rounds' results
    ready to the next round's first task), ``slower`` (per round, its slowest task's compute
    less the job's fastest compute: GPUs slower than the best) and ``rest`` (what is left:
    tasks of a round started apart, a slower GPU's sync)."""
    jobs, n = inst.jobs, inst.n_jobs
    index = {job.id: j for j, job in enumerate(jobs)}
    gpu = {g.id: i for i, g in enumerate(inst.gpus)}
    first = [np.full(job.rounds, np.inf) for job in jobs]
    ready = [np.full(job.rounds, -np.inf) for job in jobs]
    slowest = [np.zeros(job.rounds) for job in jobs]
    for task in schedule.tasks:
        j, g, r = index[task.job], gpu[task.gpu], task.round
        p = inst.compute[j, g]
        first[j][r] = min(first[j][r], task.start)
        ready[j][r] = max(ready[j][r], task.start + p + inst.sync[j, g])
        slowest[j][r] = max(slowest[j][r], p)
    fastest = np.where(np.isfinite(inst.compute), inst.compute, np.inf).min(axis=1)
    arrival = np.array([job.arrival for job in jobs])
    start = np.array([first[j][0] for j in range(n)]) - arrival
    between = np.array([float((first[j][1:] - ready[j][:-1]).sum()) for j in range(n)])
    slower = np.array([float(slowest[j].sum()) for j in range(n)]) - fastest * np.array(
        [job.rounds for job in jobs]
    )
    excess = np.array([ready[j][-1] for j in range(n)]) - critical_path(inst)
    return {
        "start": start,
        "between": between,
        "slower": slower,
        "rest": excess - start - between - slower,
        "excess": excess,
    }


def where_the_policy_loses(inst, policy: str, spec: str, fluid_jct: np.ndarray) -> list[str]:
    """Markdown: per job length, the weighted excess over the critical path of ``policy``'s
    run (relaxed mode, recorded and checked), split by :func:`excess_parts`, and of the SRPT
    fluid schedule at prices ``spec``."""
    from optsched.online.compare import parse_policy
    from optsched.online.run import simulate

    name, params = parse_policy(policy)
    run = simulate(inst, name, params=params, record=True, bound="none")
    assert run.simulation is not None and run.simulation.schedule is not None
    parts = excess_parts(inst, run.simulation.schedule)
    arrival = np.array([job.arrival for job in inst.jobs])
    weight = np.array([job.weight for job in inst.jobs])
    length = critical_path(inst) - arrival
    lines = [
        f"Where `{policy}` loses: Σ w_j (JCT − critical path) by job length, against the SRPT "
        f"fluid schedule at {spec}, and the policy's split: waiting for the first task to "
        "start; between a round's results and the next round's first task; on GPUs slower "
        "than the job's fastest (per round, its slowest task's compute less the fastest "
        "compute); the rest (a round's tasks started apart, a slower GPU's sync).",
        "",
        f"| job length | jobs | `{policy}` | to start | between rounds | slower GPUs | rest "
        "| SRPT fluid |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for lo, hi, label in LENGTHS:
        jobs = (length > lo) & (length <= hi)
        own = [float(weight[jobs] @ parts[key][jobs]) for key in PARTS]
        fluid = float(weight[jobs] @ (fluid_jct[jobs] - length[jobs]))
        cells = " | ".join(f"{value:.3g}" for value in own)
        lines.append(f"| {label} | {int(jobs.sum())} | {cells} | {fluid:.4g} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="philly-loaded", choices=CASES)
    parser.add_argument("--dt", type=float, default=60.0)
    parser.add_argument("--prices", default=PRICES, help="TYPE=PRICE,...;... (one run each)")
    results = ROOT / "benchmarks" / "results" / "online"
    parser.add_argument("--out", type=Path, default=results / "fluid-ceiling.md")
    parser.add_argument(
        "--regret",
        type=Path,
        default=results / "regret.jsonl",
        help="benchmarks/regret.py's rows: the best policy's total weighted JCT",
    )
    parser.add_argument(
        "--policy",
        default="srtf:placement=paced",
        help="POLICY[:KEY=VALUE] compared with the fluid schedule by job length ('' for none)",
    )
    args = parser.parse_args(argv)
    from optsched.output import write_file

    args.out.parent.mkdir(parents=True, exist_ok=True)

    rows = [json.loads(line) for line in args.regret.read_text().splitlines() if line]
    best = min(
        r["total_weighted_jct"]
        for r in rows
        if r["case"] == args.case and r["policy"] is not None and "skipped" not in r
    )
    inst = instance(args.case, "relaxed")
    lines = [
        f"# Pooled fluid relaxation on {args.case}: a feasible point",
        "",
        f"`python benchmarks/fluid_ceiling.py --case {args.case} --dt {args.dt:g}`: the SRPT "
        "fluid schedule's total weighted JCT, at least the pooled relaxation's optimum at those "
        f"prices, over the best policy's ({best:.6g} s): as the fluid bound charges "
        "completions (M_j + W_j / (2 R_j) + s_j), and read exactly (the end of the slot in "
        "which the job's work runs out, + s_j), a feasible point of the pooled relaxation "
        "that sees whole completions.",
        "",
        "| prices | capacity C | SRPT fluid Σ w_j JCT | ÷ best policy's | exact completions "
        "| ÷ best policy's |",
        "|---|---|---|---|---|---|",
    ]
    weight = np.array([job.weight for job in inst.jobs])
    highest: tuple[float, str, np.ndarray] | None = None
    for spec in args.prices.split(";"):
        prices = {t: float(p) for t, p in (kv.split("=") for kv in spec.split(","))}
        jct, exact, capacity = srpt_fluid_jct(inst, prices, args.dt)
        value, whole = float(weight @ jct), float(weight @ exact)
        lines.append(
            f"| {spec} | {capacity:.4g} | {value:.6g} | {value / best:.3f} | {whole:.6g} "
            f"| {whole / best:.3f} |"
        )
        print(lines[-1], flush=True)
        if highest is None or value > highest[0]:
            highest = (value, spec, jct)
    if args.policy and highest is not None:
        lines += ["", *where_the_policy_loses(inst, args.policy, highest[1], highest[2])]
    write_file(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
