"""Tables for benchmarks/hare_online.sh, as Markdown on stdout.

Usage: python benchmarks/hare_online_summary.py benchmarks/results/online benchmarks/results/exact

Reads the bench records of benchmarks/hare_online.sh (settings.jsonl, small.jsonl).
Per setting of HPDC'22 Figs. 14–17: every method's total weighted JCT and mean JCT (mean over
seeds), the ordering of methods (best first) under each metric, and each method's weighted JCT
relative to HLAS. Then HLAS and the relaxed baselines against the offline optimum on small
instances (an empirical competitive ratio).
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

METHODS = ("hare-lp", "hare-lp-ect", "hlas", "srtf", "srtf gang", "homo", "homo gang", "allox",
           "fifo-perf", "fifo-random", "fifo", "tiresias")
#: baselines that run in both modes: their gang runs (their own model) get their own column
BOTH_MODES = ("srtf", "homo")
FIGURES = {"gpus": "HPDC'22 Fig. 14: 200 jobs", "jobs": "Fig. 15: 160 GPUs",
           "heterogeneity_level": "Fig. 16: 160 GPUs, 200 jobs",
           "mix": "Fig. 17: CV:NLP:Speech:Rec, 160 GPUs, 200 jobs"}


def _figure(cell: dict[str, Any]) -> tuple[str, str]:
    (key, value), = cell.items()
    label = ":".join(map(str, value)) if isinstance(value, list) else str(value)
    return key, label


def settings_tables(records: list[dict[str, Any]]) -> list[str]:
    cells: dict[tuple[str, str], dict[str, dict[str, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    order: list[tuple[str, str]] = []
    for r in records:
        if r["status"] == "error" or not r.get("metrics"):
            continue
        key = _figure(r["cell"])
        if key not in cells:
            order.append(key)
        method = r["method"] + (" gang" if r["method"] in BOTH_MODES and r.get("mode") == "gang"
                                else "")
        for metric in ("total_weighted_jct", "mean_jct"):
            cells[key][method][metric].append(r["metrics"][metric])
    out: list[str] = []
    figure = None
    for key in order:
        if key[0] != figure:
            figure = key[0]
            out += ["", f"### varying {figure} ({FIGURES.get(figure, '')})", "",
                    "| cell | " + " | ".join(f"`{m}`" for m in METHODS)
                    + " | ordering by weighted JCT | ordering by mean JCT |",
                    "|---|" + "---|" * len(METHODS) + "---|---|"]
        by = cells[key]
        mean = {m: {k: statistics.mean(v) for k, v in by[m].items()} for m in METHODS if m in by}
        ref = mean.get("hlas", {}).get("total_weighted_jct")
        shown = []
        for m in METHODS:
            if m not in mean:
                shown.append("–")
                continue
            rel = f" ({mean[m]['total_weighted_jct'] / ref:.2f}×)" if ref else ""
            shown.append(f"{mean[m]['total_weighted_jct']:.4g}{rel}")
        out.append(f"| {key[1]} | " + " | ".join(shown)
                   + f" | {_ranking(mean, 'total_weighted_jct')} | "
                   f"{_ranking(mean, 'mean_jct')} |")
    return out


def _ranking(mean: dict[str, dict[str, float]], metric: str) -> str:
    return " < ".join(sorted(mean, key=lambda m: mean[m][metric]))


def small_table(records: list[dict[str, Any]], exact_dir: Path) -> list[str]:
    exact = [*load_records(exact_dir / "records.jsonl"),
             *load_records(exact_dir / "scaling.jsonl")]
    ref = references(r for r in exact if r["mode"] == "relaxed")
    ratios: dict[str, list[float]] = defaultdict(list)
    for r in records:
        entry = ref.get((r["instance"], "relaxed"))
        if entry and entry["optimum_known"] and r["objective"] is not None:
            name = r["method"] + "".join(f" {k}={v}" for k, v in sorted(r["params"].items()))
            ratios[name].append(r["objective"] / entry["objective"])
    out = ["| policy | instances | mean objective / OPT | max objective / OPT |",
           "|---|---|---|---|"]
    for method, values in sorted(ratios.items()):
        out.append(f"| `{method}` | {len(values)} | {statistics.mean(values):.3f} | "
                   f"{max(values):.3f} |")
    return out


def speed_table(path: Path) -> list[str]:
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text().splitlines() if path.exists() else []:
        row = json.loads(line)
        runs[row["case"]].append(row)
    out = ["| case | jobs | GPUs | tasks | runs | median simulation time | events | "
           "median events/s |", "|---|---|---|---|---|---|---|---|"]
    for case, rows in runs.items():
        first = rows[0]
        out.append(f"| {case} | {first['jobs']} | {first['gpus']} | {first['tasks']} | "
                   f"{len(rows)} | {statistics.median(r['simulation_s'] for r in rows):.2f} s | "
                   f"{first['events']} | "
                   f"{statistics.median(r['events_per_s'] for r in rows):,.0f} |")
    return out


def main(argv: list[str]) -> int:
    folder, exact_dir = Path(argv[0]), Path(argv[1])
    settings = load_records(folder / "settings.jsonl")
    seeds = sorted({r["instance_seed"] for r in settings})
    out = ["# The Hare paper's simulation settings: summary", "",
           "Generated by `python benchmarks/hare_online_summary.py` from the records in this "
           "folder (`bash benchmarks/hare_online.sh`). Instances: the `hare-*` grids of "
           f"benchmarks/grids (seeds {', '.join(map(str, seeds))}; the paper's settings as "
           "the `hare` generator reads them: one Poisson arrival rate for every figure, 25 % of "
           "the work per job class with NLP jobs of twice the rounds, tasks of whole "
           "mini-batches so that sync < compute). `–`: not run on these instances. Cells: "
           "total weighted JCT Σ w_j (C_j − a_j), mean over seeds, and "
           "in brackets its ratio to HLAS. `hare-lp*` are offline (all jobs known in advance), "
           "`srtf`, `homo`, `allox` online clairvoyant, `hlas`, `fifo-perf` (the paper's "
           "Gavel_FIFO; `fifo` in older records), `fifo-random` (Gavel's fifo), `tiresias` "
           "online non-clairvoyant; `fifo-*`, `tiresias` and the `gang` columns run in gang "
           "mode, their own model (the plain `srtf`, `homo` columns get Hare's relaxed one).",
           *settings_tables(settings), "",
           "## HLAS against the offline optimum (small instances, relaxed mode)", "",
           "Instances of `instances/scaling` (3–8 jobs) and `instances/exact` (10 jobs) whose "
           "optimum is known from the exact solvers (objective Σ w_j C_j).", "",
           *small_table(load_records(folder / "small.jsonl"), exact_dir), "",
           "## Simulator speed (HLAS)", "",
           "`python benchmarks/online_speed.py` (`speed.jsonl`): the Hare setting (schedule "
           "recorded and checked) and Pollux's philly.csv on V100:1000, T4:500, K80:250, "
           "M60:250 with rounds of 3,600 s of K80 work (metrics streamed).", "",
           *speed_table(folder / "speed.jsonl"), "",
           "JCT CDFs on hare-jobs-jobs200-s0: `jct-cdf.png` "
           "(`python benchmarks/hare_online_cdf.py`).", ""]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
