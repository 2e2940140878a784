"""Certified regret on the whole Philly trace as the cluster shrinks: how much the bounds
certify at each load, and from which load on they stop certifying the best policy.

Usage: python benchmarks/regret_load.py [--scales 0.5,0.25,0.2,0.15,0.125,0.1]
       [--policies srtf:placement=paced,srtf,hlas,allox] [--parts-time-limit S]
       [--parts-size N] [--out benchmarks/results/online/load.jsonl] [--table FILE.md]
       [--plot FILE.png]

Pollux's philly.csv (82,247 jobs) on the README's cluster (V100:1000, T4:500, K80:250,
M60:250) with every GPU count × the scale (``optsched compare --cluster-scale``), 3,600-s
quanta, relaxed mode. Per scale: each policy's total weighted JCT (streamed, not recorded:
the simulator's own sums), and the bound on it that every schedule of the instance obeys,
arrivals known: the best of the critical path and the fluid bound (seconds at this size)
and, with ``--parts-time-limit S`` (a second bound row per scale), the class-capacity LP on
parts of the longest jobs within S seconds (``optsched.regret``'s ``capacity`` level), N
jobs per part (``--parts-size``, default 500; a row per size); the table takes each scale's
best bound. "bound ÷ best" is that bound over the best policy's total weighted JCT: 1 proves
the best policy optimal, 0.9 proves it within 11 % of the optimum. One JSON line per (scale,
policy) and per (scale, bound level and parts' size); resumable: rows already in --out are
kept, and the table and the plot are rebuilt from them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from regret import CASES, load

from optsched.regret import PARTS_SIZE

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "online"
SCALES = "0.5,0.25,0.2,0.15,0.125,0.1"
POLICIES = "srtf:placement=paced,srtf,hlas,allox"


def scaled(scale: float):
    """The Philly trace's relaxed-mode instance on the README's cluster × ``scale``."""
    from optsched.traces import TraceMapping, parse_cluster, read_trace, trace_instance

    path, cluster, quantum = CASES["philly"]
    return trace_instance(
        read_trace(path),
        parse_cluster(cluster, None, scale),
        TraceMapping(quantum=quantum),
        mode="relaxed",
    )


def run_policy(inst, scale: float, policy: str) -> dict:
    from optsched.online.compare import parse_policy
    from optsched.online.run import simulate

    name, params = parse_policy(policy)
    cpu = time.process_time()
    result = simulate(inst, name, params=params, record=False, bound="none")
    return {
        "scale": scale,
        "policy": policy,
        "gpus": inst.n_gpus,
        "total_weighted_jct": result.metrics["total_weighted_jct"],
        "mean_jct_h": result.metrics["mean_jct"] / 3600,
        "cpu_s": time.process_time() - cpu,
    }


def run_bound(inst, scale: float, parts_time_limit: float, parts_size: int | None) -> dict:
    from optsched.regret import regret_bound, weighted_arrivals

    cpu = time.process_time()
    level = "capacity" if parts_time_limit > 0 else "fluid"
    found = regret_bound(
        inst, level, time_limit=parts_time_limit or None, parts_size=parts_size or PARTS_SIZE
    )
    assert found is not None
    arrivals = weighted_arrivals(inst)
    return {
        "scale": scale,
        "policy": None,
        "level": level,
        "gpus": inst.n_gpus,
        "bound_jct": found.value - arrivals,
        "source": found.source,
        **({"parts_size": parts_size} if level == "capacity" else {}),
        "parts": {
            k: (v - arrivals if k.startswith("bound_") else v) for k, v in found.parts.items()
        },
        "cpu_s": time.process_time() - cpu,
    }


def table(rows: list[dict]) -> str:
    scales = sorted({r["scale"] for r in rows}, reverse=True)
    policies = list(dict.fromkeys(r["policy"] for r in rows if r["policy"] is not None))
    out = [
        "# Certified regret on the Philly trace as the cluster shrinks",
        "",
        "`python benchmarks/regret_load.py`: Pollux's philly.csv (82,247 jobs, relaxed mode, "
        "3,600-s quanta) on the README's cluster (2,000 GPUs) × the scale. Bound: the best "
        "certified lower bound on the total weighted JCT of any schedule (arrivals known); "
        "bound ÷ best: over the best policy's (1 proves it optimal). Each policy's column: "
        "its JCT regret, its total weighted JCT over the bound (no schedule does better than "
        "1/regret of it).",
        "",
        "| scale | GPUs | bound Σ w_j JCT ≥ | from | CPU s | best policy | bound ÷ best | "
        + " | ".join(f"`{p}`" for p in policies)
        + " |",
        "|---" * (7 + len(policies)) + "|",
    ]
    for scale in scales:
        bound = max(
            (r for r in rows if r["scale"] == scale and r["policy"] is None),
            key=lambda r: r["bound_jct"],
            default=None,
        )
        runs = {r["policy"]: r for r in rows if r["scale"] == scale and r["policy"] is not None}
        if bound is None or not runs:
            continue
        best = min(runs.values(), key=lambda r: r["total_weighted_jct"])
        cells = [
            f"{runs[p]['total_weighted_jct'] / bound['bound_jct']:.3f}" if p in runs else "–"
            for p in policies
        ]
        out.append(
            f"| {scale:g} | {bound['gpus']:,} | {bound['bound_jct']:.4g} | {source(bound)} | "
            f"{bound['cpu_s']:.1f} | `{best['policy']}` | "
            f"{bound['bound_jct'] / best['total_weighted_jct']:.3f} | " + " | ".join(cells) + " |"
        )
    return "\n".join(out) + "\n"


def source(row: dict) -> str:
    """A bound row's source, with the jobs per part of the LP on parts."""
    return (
        f"{row['source']} ({row['parts_size']:,} per part)"
        if row["source"] == "capacity-parts"
        else row["source"]
    )


def key(row: dict) -> tuple:
    """What a row is for (resuming): a policy, or a bound level and its parts' size."""
    if row["policy"] is not None:
        return (row["scale"], row["policy"])
    return (row["scale"], row.get("level", "fluid"), row.get("parts_size"))


def plot(rows: list[dict], path: Path) -> None:
    from optsched.output import write_file
    from optsched.plot import _pyplot, render

    plt = _pyplot()

    bounds: dict[float, float] = {}
    for r in rows:
        if r["policy"] is None:
            bounds[r["scale"]] = max(bounds.get(r["scale"], 0.0), r["bound_jct"])
    policies = list(dict.fromkeys(r["policy"] for r in rows if r["policy"] is not None))
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for policy in policies:
        points = sorted(
            (r["gpus"], r["total_weighted_jct"] / bounds[r["scale"]])
            for r in rows
            if r["policy"] == policy and r["scale"] in bounds
        )
        ax.plot(*zip(*points, strict=True), marker="o", label=policy)
    ax.axhline(1 / 0.9, color="grey", linestyle=":", label="bound at 0.9 of a policy")
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(NullFormatter())
    ax.set_xticks(sorted({r["gpus"] for r in rows}))
    ax.set_yticks([1, 1.5, 2, 3, 4])
    ax.set_xlabel("GPUs (the README's 2,000 × the scale)")
    ax.set_ylabel("JCT regret: Σ w_j JCT ÷ bound")
    ax.set_title("Philly trace, 82,247 jobs: certified regret by cluster size")
    ax.legend(fontsize="small")
    fig.tight_layout()
    write_file(path, render(fig, "png"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", default=SCALES)
    parser.add_argument("--policies", default=POLICIES)
    parser.add_argument("--parts-time-limit", type=float, default=0.0)
    parser.add_argument("--parts-size", type=int, default=PARTS_SIZE)
    parser.add_argument("--out", type=Path, default=RESULTS / "load.jsonl")
    parser.add_argument("--table", type=Path, default=RESULTS / "load.md")
    parser.add_argument("--plot", type=Path, default=RESULTS / "load.png")
    args = parser.parse_args(argv)
    from optsched.output import write_file

    rows = load(args.out)
    done = {key(r) for r in rows}
    level = "capacity" if args.parts_time_limit > 0 else "fluid"
    size = args.parts_size if level == "capacity" else None
    for scale in (float(s) for s in args.scales.split(",")):
        inst = None
        for policy in [level, *args.policies.split(",")]:
            if ((scale, level, size) if policy == level else (scale, policy)) in done:
                continue
            inst = inst or scaled(scale)
            row = (
                run_bound(inst, scale, args.parts_time_limit, size)
                if policy == level
                else run_policy(inst, scale, policy)
            )
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
            write_file(args.out, "".join(json.dumps(r) + "\n" for r in rows))
    write_file(args.table, table(rows))
    plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
