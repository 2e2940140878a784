"""Tables of Liquid's experiments (benchmarks/liquid.sh), Markdown on stdout.

Usage: python benchmarks/liquid_summary.py benchmarks/results/liquid

Per experiment and cell: every configuration's metrics averaged over the instance seeds, its
change against the reference configuration (negative = less time than the reference), and
the ordering of the configurations by the experiment's main metric (best first; ``=`` within
half a second).
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optsched.bench.records import load_records

METRICS = {
    "mean execution": lambda r: r["extra"]["mean_execution_s"],
    "mean JCT": lambda r: r["metrics"]["mean_jct"],
    "makespan": lambda r: r["metrics"]["makespan"],
    "GPU idle": lambda r: r["extra"]["gpu_idle_s"],
}

EXPERIMENTS = (
    # (set, title, varied parameter, metrics shown, main metric, reference configuration)
    ("liquid-immediate", "Immediate mode (Fig. 18): 5 hosts × 4 K80, 20 jobs arriving one "
     "by one", "interarrival", ("mean execution", "mean JCT"), "mean execution",
     "bestfit [code]"),
    ("liquid-batch", "Batch mode (Fig. 19): hosts × 2 T4, 1.6 jobs per host at once", "hosts",
     ("makespan", "mean JCT"), "makespan", "gga batch [code]"),
    ("liquid-optimisations", "System optimisations (§6): 40 single-task jobs, 5 hosts × 2 T4",
     "interarrival", ("mean JCT", "makespan", "GPU idle"), "GPU idle", "none (heartbeat 5 s)"),
)


def label(params: Mapping[str, str]) -> str:
    """A configuration's name from its liquid params."""
    if any(k in params for k in ("share", "preschedule", "heartbeat")):
        parts = [name for key, name in (("share", "sharing"), ("preschedule", "pre-scheduling"))
                 if params.get(key) == "1"]
        if params.get("heartbeat", "0") == "0":
            parts.append("event-driven")
        return " + ".join(parts) if parts else "none (heartbeat 5 s)"
    placement = params.get("placement", "bestfit")
    name = placement + (" batch" if float(params.get("batch", "0")) else "")
    if placement in ("bestfit", "gga"):
        contention = " + contention" if params.get("contention") == "1" else ""
        name += f" [{params.get('cost', 'paper')}{contention}]"
    return name


def experiment(records: list[dict[str, Any]], set_name: str, title: str, varied: str,
               shown: tuple[str, ...], main: str, reference: str) -> list[str]:
    mine = [r for r in records if r["instance"].startswith(set_name + "-")
            and r["status"] != "error"]
    errors = sum(r["status"] == "error" for r in records
                 if r["instance"].startswith(set_name + "-"))
    cells = sorted({r["cell"][varied] for r in mine})
    values: dict[tuple[str, Any, str], float] = {}
    runtime: dict[str, list[float]] = defaultdict(list)
    for conf in sorted({label(r["params"]) for r in mine}):
        for cell in cells:
            rows = [r for r in mine if label(r["params"]) == conf and r["cell"][varied] == cell]
            for metric in shown:
                if rows:
                    values[conf, cell, metric] = statistics.mean(METRICS[metric](r)
                                                                 for r in rows)
            runtime[conf] += [r["runtime_s"] for r in rows]
    confs = sorted({c for c, _, _ in values},
                   key=lambda c: statistics.mean(values.get((c, cell, main), float("inf"))
                                                 for cell in cells))
    lines = [f"## {title}", "",
             f"Mean over {len({r['instance'] for r in mine}) // max(1, len(cells))} seeds; "
             f"in brackets the change against `{reference}`."
             + (f" {errors} runs failed." if errors else ""), ""]
    for metric in shown:
        lines += [f"### {metric} (s)", "",
                  "| configuration | " + " | ".join(f"{varied} {c}" for c in cells)
                  + " | sim. runtime |", "|---|" + "---|" * (len(cells) + 1)]
        for conf in confs:
            row = []
            for cell in cells:
                value = values.get((conf, cell, metric))
                ref = values.get((reference, cell, metric))
                if value is None:
                    row.append("–")
                elif ref and conf != reference:
                    row.append(f"{value:,.0f} ({100 * (value / ref - 1):+.1f} %)")
                else:
                    row.append(f"{value:,.0f}")
            lines.append(f"| `{conf}` | " + " | ".join(row)
                         + f" | {statistics.mean(runtime[conf]):.2f} s |")
        lines.append("")
    lines += [f"Ordering by {main} (best first):", ""]
    for cell in cells:
        ranked = sorted((c for c in confs if (c, cell, main) in values),
                        key=lambda c: values[c, cell, main])
        text = f"`{ranked[0]}`"
        for prev, conf in itertools.pairwise(ranked):
            tie = values[conf, cell, main] - values[prev, cell, main] < 0.5  # seconds
            text += (" = " if tie else " < ") + f"`{conf}`"
        lines.append(f"- {varied} {cell}: {text}")
    return [*lines, ""]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    records = load_records(Path(argv[1]) / "records.jsonl")
    out = ["# Liquid's experiments with optsched's liquid policy", "",
           "Generated by `bash benchmarks/liquid.sh` (grids benchmarks/grids/liquid-*.json). "
           "Durations: the §2.7 placement → duration table with assumed launch 30 s and save "
           "10 s phases; one-rack clusters; in the optimisations set, the single-task jobs' "
           "utilisation, GPU memory and bandwidth weight are the predictions of a random "
           "forest trained on 300 synthetic past jobs (`predict_from`); sharing cap 1.3; "
           "every schedule checked by the independent checker. `[paper]` / `[code]`: the "
           "placement cost's form (λ = 0.5, cross-domain cost = number of hosts).", ""]
    for spec in EXPERIMENTS:
        out += experiment(records, *spec)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
