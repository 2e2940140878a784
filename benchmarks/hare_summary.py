"""Summarise the Hare benchmark (benchmarks/hare.sh) as Markdown on stdout.

Usage: python benchmarks/hare_summary.py benchmarks/results/hare benchmarks/results/exact

Optima come from the best objective and best bound over the Hare and the exact-solver
records (known where they meet). Reports, from the records alone:
- per method: mean and max ratio to the optimum, how often it is optimal, wins/ties/losses
  against the ECT baseline, per instance size;
- Hare's relaxation: how often it was proved, relaxation / optimum, the achieved ratio
  objective / relaxation against α(2+α);
- the paper's scale (scale.jsonl): median runtime of 3 runs, step 2 alone, objective against
  the best lower bound.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from optsched.bench.records import load_records
from optsched.bench.report import references

TOL = 1e-6
ORDER = ("hare", "hare-ect", "hare-lp", "hare-lp-ect", "ect")


def small_tables(records: list[dict[str, Any]], ref: dict[tuple[str, str], Any]) -> list[str]:
    known = {key: e["objective"] for key, e in ref.items() if e["optimum_known"]}
    obj = {(r["instance"], r["method"]): r["objective"] for r in records
           if r["objective"] is not None}
    sizes = sorted({r["cell"]["jobs"] for r in records if (r["instance"], "relaxed") in known})
    methods = [m for m in ORDER if any(r["method"] == m for r in records)]
    lines = ["| method | instances | mean obj/OPT | max obj/OPT | optimal | "
             "vs ECT (win/tie/loss) | " + " | ".join(f"{n} jobs" for n in sizes) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(sizes)]
    for m in methods:
        ratios, by_size = [], defaultdict(list)
        wins = ties = losses = 0
        for r in records:
            if r["method"] != m or (r["instance"], "relaxed") not in known:
                continue
            opt = known[r["instance"], "relaxed"]
            ratio = r["objective"] / opt
            ratios.append(ratio)
            by_size[r["cell"]["jobs"]].append(ratio)
            ect = obj.get((r["instance"], "ect"))
            if ect is not None:
                diff = r["objective"] - ect
                wins += diff < -TOL * ect
                losses += diff > TOL * ect
                ties += abs(diff) <= TOL * ect
        if not ratios:
            continue
        optimal = sum(x <= 1 + TOL for x in ratios)
        cells = " | ".join(f"{statistics.mean(by_size[n]):.3f}" if by_size[n] else "–"
                           for n in sizes)
        lines.append(f"| `{m}` | {len(ratios)} | {statistics.mean(ratios):.3f} | "
                     f"{max(ratios):.3f} | {optimal} | {wins}/{ties}/{losses} | {cells} |")
    return lines


def relaxation_table(records: list[dict[str, Any]], ref: dict[tuple[str, str], Any]
                     ) -> list[str]:
    lines = ["| method | runs | relaxation proved | mean relaxation/OPT | mean obj/relaxation | "
             "max obj/relaxation | α(2+α) range | guarantee held (covered runs) |",
             "|---|---|---|---|---|---|---|---|"]
    for m in ORDER:
        group = [r for r in records if r["method"] == m and r["extra"].get("relaxation")]
        if not group:
            continue
        proved = [r for r in group if r["extra"]["relaxation"]["proved"]]
        rel_opt = [r["extra"]["relaxation"]["objective"] / opt["objective"] for r in proved
                   if (opt := ref[r["instance"], "relaxed"])["optimum_known"]]
        guar = [r["extra"]["guarantee"] for r in group if r["extra"].get("guarantee")]
        ratios = [g["ratio"] for g in guar if g["ratio"] is not None]
        factors = [g["factor"] for g in guar]
        covered = [g for g in guar if g["covered"]]
        held = sum(bool(g["holds"]) for g in covered)
        rel = f"{statistics.mean(rel_opt):.3f}" if rel_opt else "–"
        cells = (f"{statistics.mean(ratios):.3f} | {max(ratios):.3f} | "
                 f"{min(factors):.1f}–{max(factors):.1f}" if ratios else "– | – | –")
        lines.append(f"| `{m}` | {len(group)} | {len(proved)} | {rel} | {cells} | "
                     f"{held}/{len(covered)} |")
    return lines


def scale_table(path: Path) -> list[str]:
    runs = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    if not runs:
        return ["(no scale runs recorded)"]
    lines = ["| instance | tasks | method | median runtime (3 runs) | median step 2 | "
             "objective | best lower bound | gap to bound | α | LP size |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    best: dict[str, float] = defaultdict(float)
    for r in runs:
        best[r["instance"]] = max(best[r["instance"]], r["bound"])
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        groups[r["instance"], r["method"]].append(r)
    for (name, method), group in sorted(groups.items()):
        first = group[0]
        runtime = statistics.median(r["runtime_s"] for r in group)
        step2 = [r["list_scheduling_s"] for r in group if r["list_scheduling_s"] is not None]
        size = (f"{first['lp_variables']} vars, {first['lp_intervals']} intervals"
                if first["lp_variables"] else "–")
        gap = (first["objective"] - best[name]) / first["objective"]
        alpha = f"{first['guarantee']['alpha']:.2f}" if first.get("guarantee") else "–"
        lines.append(f"| {name} | {first['tasks']} | `{method}` | {runtime:.2f} s | "
                     f"{f'{statistics.median(step2):.2f} s' if step2 else '–'} | "
                     f"{first['objective']:.0f} | {best[name]:.0f} | {100 * gap:.1f} % | "
                     f"{alpha} | {size} |")
    return lines


def main(argv: list[str]) -> int:
    hare_dir, exact_dir = Path(argv[0]), Path(argv[1])
    records = load_records(hare_dir / "records.jsonl")
    reference = [*records, *load_records(exact_dir / "records.jsonl"),
                 *load_records(exact_dir / "scaling.jsonl")]
    ref = references(r for r in reference if r["mode"] == "relaxed")
    out = ["# Hare's offline heuristic: summary", "",
           "Generated by `python benchmarks/hare_summary.py` from the records in this folder "
           "(`bash benchmarks/hare.sh`) on the 2-core reference machine.", "",
           "## Small instances against the optimum (relaxed mode)", "",
           "Instances of `instances/scaling` (3–8 jobs) and `instances/exact` (10 jobs) whose "
           "optimum is known from the exact solvers; 60 s per run.", "",
           *small_tables(records, ref), "",
           "## Relaxations and the α(2+α) guarantee", "",
           *relaxation_table(records, ref), "",
           "## The paper's scale", "",
           "160 GPUs (85 V100, 43 T4, 11 K80, 21 M60), 300 jobs of Hare's eight workloads in "
           "equal shares, K ~ U{1,2,4,8}, about 50,000 tasks of one mini-batch "
           "(`iters_per_task` = 1), `optsched gen --family hare --seed S`. Best lower bound = "
           "the best of the interval LP and the critical path over the runs.", "",
           *scale_table(hare_dir / "scale.jsonl"), ""]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
