"""Tables of Liquid's experiments (benchmarks/liquid.sh), Markdown on stdout.

Usage: python benchmarks/liquid_summary.py benchmarks/results/liquid

Per experiment and cell: every configuration's metrics averaged over the instance seeds, its
change against the reference configuration (negative = less time than the reference), and
the ordering of the configurations by the experiment's main metric (best first; ``=`` within
half a second).
"""

from __future__ import annotations

import itertools
import re
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
    # (set prefix, title, metrics shown, main metric, reference configuration)
    (
        "liquid-single-",
        "Immediate mode, the paper's Fig. 18 setting: one 1 PS + 2 worker job "
        "alone on hosts × 4 K80, per model (the released `topology_aware` single-job cases)",
        ("mean execution",),
        "mean execution",
        "bestfit [code]",
    ),
    (
        "liquid-immediate-",
        "Immediate mode, our extension: 5 hosts × 4 K80, 20 jobs arriving one by one (Poisson)",
        ("mean execution", "mean JCT"),
        "mean execution",
        "bestfit [code]",
    ),
    (
        "liquid-batch-",
        "Batch mode (Fig. 19): hosts × 2 T4, 1.6 jobs per host at once",
        ("makespan", "mean JCT"),
        "makespan",
        "gga batch [paper]",
    ),
    (
        "liquid-optimisations-",
        "System optimisations (§6), our cluster-scale extension: 40 "
        "single-task jobs, 5 hosts × 2 T4",
        ("mean JCT", "makespan", "GPU idle"),
        "GPU idle",
        "none (heartbeat 5 s)",
    ),
)

#: The paper's published changes of Liquid against its baselines (§7, seeds: Fig. 18 average
#: execution time; Fig. 19 at 20 nodes), by (set prefix, metric, baseline).
PAPER = {
    ("liquid-single-", "mean execution", "random"): -14.0,
    ("liquid-single-", "mean execution", "spread"): -32.0,
    ("liquid-batch-", "makespan", "random"): -24.0,
    ("liquid-batch-", "makespan", "spread"): -23.0,
    ("liquid-batch-", "mean JCT", "random"): -24.0,
    ("liquid-batch-", "mean JCT", "spread"): -25.0,
}
#: The configurations that stand for Liquid in the comparison with the paper.
LIQUID = {
    "liquid-single-": ("bestfit [code]", "bestfit [paper]", "bestfit [paper, line 18]"),
    "liquid-batch-": ("gga batch [paper]", "gga batch [code]", "bestfit batch [code]"),
}
#: The cells the paper's numbers are for (None: every cell, averaged over models).
PAPER_CELL = {"liquid-batch-": "hosts 20"}


def label(params: Mapping[str, str]) -> str:
    """A configuration's name from its liquid params."""
    if any(k in params for k in ("share", "preschedule", "heartbeat")):
        parts = [
            name
            for key, name in (("share", "sharing"), ("preschedule", "pre-scheduling"))
            if params.get(key) == "1"
        ]
        if params.get("heartbeat", "0") == "0":
            parts.append("event-driven")
        name = " + ".join(parts) if parts else "none (heartbeat 5 s)"
        return name + (" [code gates]" if params.get("gates") == "code" else "")
    placement = params.get("placement", "bestfit")
    name = placement + (" batch" if float(params.get("batch", "0")) else "")
    if placement in ("bestfit", "gga"):
        tags = [params.get("cost", "paper")]
        if params.get("contention") == "1":
            tags[0] += " + contention"
        if params.get("line18") == "1":
            tags.append("line 18")
        name += f" [{', '.join(tags)}]"
    return name


def cell_of(record: Mapping[str, Any], prefix: str) -> str:
    """A run's cell: the grid's varied values (and the model, for the single-job sets)."""
    text = " ".join(f"{k} {_show(v)}" for k, v in sorted(record["cell"].items()))
    if prefix == "liquid-single-":
        model = record["instance"][len(prefix) :].split("-")[0]
        text = f"{model} {text}"
    return text


def _show(value: Any) -> str:
    return ("on" if value else "off") if isinstance(value, bool) else str(value)


def experiment(
    records: list[dict[str, Any]],
    prefix: str,
    title: str,
    shown: tuple[str, ...],
    main: str,
    reference: str,
) -> list[str]:
    mine = [r for r in records if r["instance"].startswith(prefix) and r["status"] != "error"]
    errors = sum(r["status"] == "error" for r in records if r["instance"].startswith(prefix))
    if not mine:
        return []
    cells = sorted(
        {cell_of(r, prefix) for r in mine},
        key=lambda c: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", c)],
    )  # 5 before 10
    values: dict[tuple[str, str, str], float] = {}
    runtime: dict[str, list[float]] = defaultdict(list)
    for conf in sorted({label(r["params"]) for r in mine}):
        for cell in cells:
            rows = [r for r in mine if label(r["params"]) == conf and cell_of(r, prefix) == cell]
            for metric in shown:
                if rows:
                    values[conf, cell, metric] = statistics.mean(METRICS[metric](r) for r in rows)
            runtime[conf] += [r["runtime_s"] for r in rows]
    confs = sorted(
        {c for c, _, _ in values},
        key=lambda c: statistics.mean(values.get((c, cell, main), float("inf")) for cell in cells),
    )
    instances = len({r["instance"] for r in mine}) // max(1, len(cells))
    seeds = {c: len({r["seed"] for r in mine if label(r["params"]) == c}) for c in confs}
    seeded = ", ".join(f"{n} method seeds for `{c}`" for c, n in sorted(seeds.items()) if n > 1)
    lines = [
        f"## {title}",
        "",
        f"Mean over {instances} instance seed(s) per cell"
        + (f" × {seeded}" if seeded else "")
        + f"; in brackets the change against `{reference}`."
        + (f" {errors} runs failed." if errors else ""),
        "",
    ]
    for metric in shown:
        lines += [
            f"### {metric} (s)",
            "",
            "| configuration | " + " | ".join(cells) + " | sim. runtime |",
            "|---|" + "---|" * (len(cells) + 1),
        ]
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
            lines.append(
                f"| `{conf}` | " + " | ".join(row) + f" | {statistics.mean(runtime[conf]):.2f} s |"
            )
        lines.append("")
    lines += [f"Ordering by {main} (best first):", ""]
    for cell in cells:
        ranked = sorted(
            (c for c in confs if (c, cell, main) in values), key=lambda c: values[c, cell, main]
        )
        text = f"`{ranked[0]}`"
        for prev, conf in itertools.pairwise(ranked):
            tie = values[conf, cell, main] - values[prev, cell, main] < 0.5  # seconds
            text += (" = " if tie else " < ") + f"`{conf}`"
        lines.append(f"- {cell}: {text}")
    return [*lines, "", *against_paper(prefix, values, cells, shown)]


def verdict(ours: float, paper: float) -> str:
    """agree: same direction, within 10 points; direction only: same sign; else disagree."""
    if ours * paper <= 0 and abs(ours) >= 0.5:
        return "disagree"
    return "agree" if abs(ours - paper) <= 10 else "direction only"


def against_paper(
    prefix: str,
    values: Mapping[tuple[str, str, str], float],
    cells: list[str],
    shown: tuple[str, ...],
) -> list[str]:
    """Liquid's change against random and spread next to the paper's, per cell group."""
    if prefix not in LIQUID:
        return []
    lines = [
        "### Against the paper",
        "",
        "| cells | metric | Liquid as | vs random (ours / paper) | vs spread (ours / "
        "paper) | verdicts |",
        "|---|---|---|---|---|---|",
    ]
    only = PAPER_CELL.get(prefix)
    groups: dict[str, list[str]] = defaultdict(list)
    for cell in cells:
        if only is None or cell.endswith(only) or cell.startswith(only):
            # the single-job sets average the models per cluster size, as the paper does
            key = cell.split(" ", 1)[1] if prefix == "liquid-single-" else cell
            groups[key].append(cell)
    for key, members in groups.items():
        for metric in shown:
            for conf in LIQUID[prefix]:
                if not all((conf, c, metric) in values for c in members):
                    continue
                mine = sum(values[conf, c, metric] for c in members)
                cols, verdicts = [], []
                for base in ("random", "spread"):
                    paper = PAPER.get((prefix, metric, base))
                    if paper is None or not all((base, c, metric) in values for c in members):
                        cols.append("–")
                        continue
                    ours = 100 * (mine / sum(values[base, c, metric] for c in members) - 1)
                    cols.append(f"{ours:+.1f} % / {paper:+.0f} %")
                    verdicts.append(verdict(ours, paper))
                if verdicts:
                    lines.append(
                        f"| {key} | {metric} | `{conf}` | {cols[0]} | {cols[1]} | "
                        f"{', '.join(verdicts)} |"
                    )
    return [*lines, ""]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    records = load_records(Path(argv[1]) / "records.jsonl")
    out = [
        "# Liquid's experiments with optsched's liquid policy",
        "",
        "Generated by `bash benchmarks/liquid.sh` (grids benchmarks/grids/liquid-*.json). "
        "Durations: the §2.7 placement → duration table with assumed launch 30 s and save "
        "10 s phases; one-rack clusters; `link_contention on`: flows of different jobs "
        "through a host link slow each other (models/cluster-execution.md); in the "
        "optimisations set, the single-task jobs' predicted utilisation, GPU memory and "
        "bandwidth weight come from a random forest trained on 300 synthetic past jobs "
        "(`predict_from`) and execution uses them as the truth; sharing cap 1.3; every "
        "schedule checked by the independent checker. `[paper]`: the paper's cost "
        "(eqs. 2–6, λ = 0.5, cross-domain cost = number of hosts); `[code]`: our "
        "order-free *reconstruction* of the reference code's evaluator (not a transcription); "
        "`line 18`: best-fit with Alg. 1 line 18 (without it: the reference code's "
        "behaviour); best-fit scores each job on its own (eq. 3); `gga`: eq. 8 fitness. "
        "How each disagreement with the paper arises: comparison.md.",
        "",
    ]
    for spec in EXPERIMENTS:
        out += experiment(records, *spec)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
