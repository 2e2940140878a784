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
relaxations). With ``--policy``, a second table sets that policy's excess over the critical
paths beside the fluid schedule's (at the prices of the highest value), by job length: where
the policy loses most to the relaxation.
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


def srpt_fluid_jct(inst, prices: dict[str, float], dt: float) -> tuple[np.ndarray, float]:
    """(each job's JCT in the SRPT fluid schedule, the capacity C) at ``prices``."""
    types = [inst.gpus[members[0]].type for members in inst.class_members]
    work, rate, after, capacity = _fluid_terms(inst, np.array([prices[t] for t in types]))
    arrival = np.array([job.arrival for job in inst.jobs])
    order = np.argsort(arrival, kind="stable")
    left, moment = work.copy(), np.zeros(len(work))
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
        active = active[left[active] > 1e-9 * work[active]]
        k += 1
    completion = np.maximum(critical_path(inst), moment / work + after)
    return completion - arrival, capacity


#: job lengths (critical path less arrival, s) the comparison groups the jobs by
LENGTHS = (
    (0.0, 600.0, "≤ 10 min"),
    (600.0, 3600.0, "10 min – 1 h"),
    (3600.0, 86400.0, "1 h – 1 day"),
    (86400.0, math.inf, "> 1 day"),
)


def where_the_policy_loses(inst, policy: str, spec: str, fluid_jct: np.ndarray) -> list[str]:
    """Markdown: per job length, the weighted excess over the critical path of ``policy``'s
    run (relaxed mode, not recorded) and of the SRPT fluid schedule at prices ``spec``."""
    from optsched.online.compare import parse_policy
    from optsched.online.run import simulate

    name, params = parse_policy(policy)
    run = simulate(inst, name, params=params, record=False, bound="none")
    assert run.simulation is not None
    arrival = np.array([job.arrival for job in inst.jobs])
    weight = np.array([job.weight for job in inst.jobs])
    length = critical_path(inst) - arrival
    lines = [
        f"Where `{policy}` loses: Σ w_j (JCT − critical path) by job length, against the SRPT "
        f"fluid schedule at {spec}.",
        "",
        f"| job length | jobs | `{policy}` | SRPT fluid |",
        "|---|---|---|---|",
    ]
    for lo, hi, label in LENGTHS:
        jobs = (length > lo) & (length <= hi)
        own = float(weight[jobs] @ (np.array(run.simulation.jct)[jobs] - length[jobs]))
        fluid = float(weight[jobs] @ (fluid_jct[jobs] - length[jobs]))
        lines.append(f"| {label} | {int(jobs.sum())} | {own:.4g} | {fluid:.4g} |")
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
        f"prices, over the best policy's ({best:.6g} s).",
        "",
        "| prices | capacity C | SRPT fluid Σ w_j JCT | ÷ best policy's |",
        "|---|---|---|---|",
    ]
    weight = np.array([job.weight for job in inst.jobs])
    highest: tuple[float, str, np.ndarray] | None = None
    for spec in args.prices.split(";"):
        prices = {t: float(p) for t, p in (kv.split("=") for kv in spec.split(","))}
        jct, capacity = srpt_fluid_jct(inst, prices, args.dt)
        value = float(weight @ jct)
        lines.append(f"| {spec} | {capacity:.4g} | {value:.6g} | {value / best:.3f} |")
        print(lines[-1], flush=True)
        if highest is None or value > highest[0]:
            highest = (value, spec, jct)
    if args.policy and highest is not None:
        lines += ["", *where_the_policy_loses(inst, args.policy, highest[1], highest[2])]
    write_file(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
