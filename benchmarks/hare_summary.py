"""Summarise the Hare benchmark (benchmarks/hare.sh) as Markdown on stdout.

Usage: python benchmarks/hare_summary.py benchmarks/results/hare benchmarks/results/exact

Optima come from the best objective and best bound over the Hare and the exact-solver
records (known where they meet). Reports, from the records alone, per instance set
(``hare-small``: every sync > 0, α defined; ``scaling``/``exact``: the exact benchmark's):
- per method: mean and max ratio to the optimum, how often it is optimal, wins/ties/losses
  against the ECT baseline, per instance size; the earliest-free methods once per GPU tie
  rule of Algorithm 1 line 12 (``[lowest-index]`` the run's own schedule, ``[fastest]`` step 2
  rerun from the same relaxation, ``extra.tie_objectives``);
- Hare's relaxation: how often it was proved, relaxation / optimum, the achieved ratio
  objective / relaxation against α(2+α), and that ratio on every run of ``hare-small``;
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
ORDER = (
    "hare [lowest-index]",
    "hare [fastest]",
    "hare-ect",
    "hare-lp [lowest-index]",
    "hare-lp [fastest]",
    "hare-lp-ect",
    "ect",
)
SETS = {
    "hare-small": "`instances/hare-small` (3–10 jobs, 8 GPUs of 2 types, every sync in "
    "{1, 2}: α defined on every instance)",
    "legacy": "`instances/scaling` (3–8 jobs) and `instances/exact` (10 and 20 jobs): the "
    "exact benchmark's instances, syncs in {0, 1, 2} (α undefined where a job "
    "mixes zero and positive syncs)",
}


def split_ties(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each earliest-free record (``tie_objectives`` in extra) as one record per tie rule,
    named ``METHOD [RULE]``, with its objective and guarantee ratio; others unchanged."""
    out = []
    for r in records:
        ties = (r.get("extra") or {}).get("tie_objectives")
        if not ties or r["method"] not in ("hare", "hare-lp"):
            if r["method"] not in ("hare", "hare-lp"):  # older records without both ties
                out.append(r)
            continue
        for rule, value in ties.items():
            extra = dict(r["extra"])
            g = extra.get("guarantee")
            relax = extra["relaxation"]["objective"]
            if g is not None:
                ratio = value / relax if relax else None
                holds = (ratio <= g["factor"] * (1 + 1e-9)) if g["covered"] and ratio else None
                extra["guarantee"] = {**g, "ratio": ratio, "holds": holds}
            out.append(
                {**r, "method": f"{r['method']} [{rule}]", "objective": value, "extra": extra}
            )
    return out


def set_of(name: str) -> str:
    return "hare-small" if name.startswith("hare-small") else "legacy"


def small_tables(records: list[dict[str, Any]], ref: dict[tuple[str, str], Any]) -> list[str]:
    known = {key: e["objective"] for key, e in ref.items() if e["optimum_known"]}
    obj = {
        (r["instance"], r["method"]): r["objective"] for r in records if r["objective"] is not None
    }
    sizes = sorted({r["cell"]["jobs"] for r in records if (r["instance"], "relaxed") in known})
    methods = [m for m in ORDER if any(r["method"] == m for r in records)]
    lines = [
        "| method | instances | mean obj/OPT | max obj/OPT | optimal | "
        "vs ECT (win/tie/loss) | " + " | ".join(f"{n} jobs" for n in sizes) + " |",
        "|---|---|---|---|---|---|" + "---|" * len(sizes),
    ]
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
        cells = " | ".join(
            f"{statistics.mean(by_size[n]):.3f}" if by_size[n] else "–" for n in sizes
        )
        lines.append(
            f"| `{m}` | {len(ratios)} | {statistics.mean(ratios):.3f} | "
            f"{max(ratios):.3f} | {optimal} | {wins}/{ties}/{losses} | {cells} |"
        )
    return lines


def relaxation_table(records: list[dict[str, Any]], ref: dict[tuple[str, str], Any]) -> list[str]:
    lines = [
        "| method | runs | α undefined | relaxation proved | mean relaxation/OPT | "
        "mean obj/relaxation | max obj/relaxation | α(2+α) range | guarantee held "
        "(covered runs) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for m in ORDER:
        group = [r for r in records if r["method"] == m and r["extra"].get("relaxation")]
        undefined = sum(r["extra"].get("guarantee") is None for r in group)
        if not group:
            continue
        proved = [r for r in group if r["extra"]["relaxation"]["proved"]]
        rel_opt = [
            r["extra"]["relaxation"]["objective"] / opt["objective"]
            for r in proved
            if (opt := ref[r["instance"], "relaxed"])["optimum_known"]
        ]
        guar = [r["extra"]["guarantee"] for r in group if r["extra"].get("guarantee")]
        ratios = [g["ratio"] for g in guar if g["ratio"] is not None]
        factors = [g["factor"] for g in guar]
        covered = [g for g in guar if g["covered"]]
        held = sum(bool(g["holds"]) for g in covered)
        rel = f"{statistics.mean(rel_opt):.3f}" if rel_opt else "–"
        cells = (
            f"{statistics.mean(ratios):.3f} | {max(ratios):.3f} | "
            f"{min(factors):.1f}–{max(factors):.1f}"
            if ratios
            else "– | – | –"
        )
        lines.append(
            f"| `{m}` | {len(group)} | {undefined} | {len(proved)} | {rel} | "
            f"{cells} | {held}/{len(covered)} |"
        )
    return lines


def scale_table(path: Path) -> list[str]:
    runs = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    if not runs:
        return ["(no scale runs recorded)"]
    lines = [
        "| instance | tasks | method | median runtime (3 runs) | median step 2 | "
        "objective | best lower bound | gap to bound | α | LP size |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
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
        size = (
            f"{first['lp_variables']} vars, {first['lp_intervals']} intervals"
            if first["lp_variables"]
            else "–"
        )
        gap = (first["objective"] - best[name]) / first["objective"]
        alpha = f"{first['guarantee']['alpha']:.2f}" if first.get("guarantee") else "–"
        lines.append(
            f"| {name} | {first['tasks']} | `{method}` | {runtime:.2f} s | "
            f"{f'{statistics.median(step2):.2f} s' if step2 else '–'} | "
            f"{first['objective']:.0f} | {best[name]:.0f} | {100 * gap:.1f} % | "
            f"{alpha} | {size} |"
        )
    return lines


def guarantee_runs(records: list[dict[str, Any]]) -> list[str]:
    """One row per instance: α, α(2+α), whether Hare_Sched_RL was proved, and each method's
    objective / relaxation (✔ within α(2+α), ✘ above; covered: `hare`, either tie)."""
    methods = [m for m in ORDER if m != "ect"]
    lines = [
        "| instance | α | α(2+α) | RL proved | " + " | ".join(f"`{m}`" for m in methods) + " |",
        "|---|---|---|---|" + "---|" * len(methods),
    ]
    by = {(r["instance"], r["method"]): r for r in records}
    for name in sorted(
        {r["instance"] for r in records}, key=lambda n: (int(n.split("jobs")[1].split("-")[0]), n)
    ):
        first = by.get((name, "hare [lowest-index]"))
        if first is None or first["extra"].get("guarantee") is None:
            continue
        g = first["extra"]["guarantee"]
        cells = []
        for m in methods:
            r = by.get((name, m))
            gm = r["extra"].get("guarantee") if r else None
            if gm is None or gm["ratio"] is None:
                cells.append("–")
                continue
            mark = "✔" if gm["ratio"] <= gm["factor"] * (1 + 1e-9) else "✘"
            cells.append(f"{gm['ratio']:.3f} {mark}")
        proved = "yes" if first["extra"]["relaxation"]["proved"] else "no"
        lines.append(
            f"| {name} | {g['alpha']:.2f} | {g['factor']:.1f} | {proved} | "
            + " | ".join(cells)
            + " |"
        )
    return lines


def tie_sensitivity(records: list[dict[str, Any]], ref: dict[tuple[str, str], Any]) -> list[str]:
    """Per set and earliest-free method: mean and max obj/OPT under each tie rule, and how
    often the fastest rule is better, equal, worse than the literal one."""
    known = {key[0]: e["objective"] for key, e in ref.items() if e["optimum_known"]}
    lines = [
        "| instances | method | runs (OPT known) | lowest-index: mean / max obj/OPT | "
        "fastest: mean / max obj/OPT | fastest better / equal / worse (all runs) |",
        "|---|---|---|---|---|---|",
    ]
    for part in SETS:
        for base in ("hare", "hare-lp"):
            rows = [
                r
                for r in records
                if r["method"] == base
                and set_of(r["instance"]) == part
                and r["extra"].get("tie_objectives")
            ]
            if not rows:
                continue
            lo = [r["extra"]["tie_objectives"]["lowest-index"] for r in rows]
            fa = [r["extra"]["tie_objectives"]["fastest"] for r in rows]
            better = sum(f < x * (1 - TOL) for f, x in zip(fa, lo, strict=True))
            worse = sum(f > x * (1 + TOL) for f, x in zip(fa, lo, strict=True))
            with_opt = [
                (x / known[r["instance"]], f / known[r["instance"]])
                for r, x, f in zip(rows, lo, fa, strict=True)
                if r["instance"] in known
            ]
            if with_opt:
                a = [x for x, _ in with_opt]
                b = [f for _, f in with_opt]
                cells = (
                    f"{statistics.mean(a):.3f} / {max(a):.3f} | "
                    f"{statistics.mean(b):.3f} / {max(b):.3f}"
                )
            else:
                cells = "– | –"
            lines.append(
                f"| {part} | `{base}` | {len(with_opt)} | {cells} | "
                f"{better} / {len(rows) - better - worse} / {worse} |"
            )
    return lines


def main(argv: list[str]) -> int:
    hare_dir, exact_dir = Path(argv[0]), Path(argv[1])
    raw = load_records(hare_dir / "records.jsonl")
    reference = [
        *raw,
        *load_records(exact_dir / "records.jsonl"),
        *load_records(exact_dir / "scaling.jsonl"),
    ]
    ref = references(r for r in reference if r["mode"] == "relaxed")
    records = split_ties(raw)
    out = [
        "# Hare's offline heuristic: summary",
        "",
        "Generated by `python benchmarks/hare_summary.py` from the records in this folder "
        "(`bash benchmarks/hare.sh`) on the 2-core reference machine, 60 s per run, relaxed "
        "mode. Optima: best objective = best bound over these records (cpsat on "
        "`hare-small`) and `benchmarks/results/exact`.",
        "",
        'GPU tie rule of Algorithm 1 line 12 ("m* = argmin φ_m", HPDC\'22 §5.2; the '
        "paper leaves ties open): `[lowest-index]` the literal rule (least φ, then lowest "
        "index); `[fastest]` the fastest GPU among those where the task starts earliest "
        "(Theorem 4's proof: \"our algorithm always schedules tasks on machines with the "
        'earliest start time"). Both come from the same relaxation in one run '
        "(`extra.tie_objectives`); `--param gpu_tie=fastest` runs the second directly.",
        "",
    ]
    for part, text in SETS.items():
        rows = [r for r in records if set_of(r["instance"]) == part]
        if not rows:
            continue
        out += [
            f"## Small instances against the optimum: {part}",
            "",
            f"{text}; instances whose optimum is known.",
            "",
            *small_tables(rows, ref),
            "",
            f"### Relaxations and the α(2+α) guarantee: {part}",
            "",
            *relaxation_table(rows, ref),
            "",
        ]
    out += [
        "## GPU tie rule: sensitivity",
        "",
        *tie_sensitivity(raw, ref),
        "",
        "## The α(2+α) guarantee on every run of `hare-small`",
        "",
        "objective / Hare_Sched_RL (`hare`, `hare-ect`) or / interval-LP bound (`hare-lp`, "
        "`hare-lp-ect`) against α(2+α); Theorem 4 covers `hare` with a proved relaxation "
        "(either tie); for the others the factor is shown for comparison only.",
        "",
        *guarantee_runs([r for r in records if set_of(r["instance"]) == "hare-small"]),
        "",
        "## Settings of the Hare family (`HareSpec`, grids `benchmarks/grids/hare-*.json`)",
        "",
        '- Work shares (§7: "each type of jobs accounts for 25% of the total workload"): '
        "CV:NLP:Speech:Rec 1:1:1:1 *by work* (R K × task time on the fastest GPU), exact "
        "up to rounding the rounds (0.250 ± 0.001 at 300 jobs). NLP jobs have twice the "
        'rounds (§7: "more training rounds and more training time"; the factor 2 is '
        "ours), so they are half as many: 2:1:2:2 by count.",
        '- Task size (§5.1: "we assume that the training time is longer than the '
        'synchronization time"): a task trains whole mini-batches for about 0.75 s on the '
        "fastest GPU (two BERT-base batches on a V100, the longest one-batch task) and at "
        "least enough that compute > sync; sync/compute ≤ 0.39 at 25 Gbit/s (BERT-base), "
        "so < 1 down to Fig. 18's 10 Gbit/s. With one batch per task ResNet-50 and "
        "Inception-V3 synchronised 1.42 and 1.58× longer than they trained.",
        "- Job lengths: ~167 tasks per job; a job alone on its fastest GPUs takes 14 s / "
        "34 s / 61 s (p10 / median / p90, seed 0). The paper's testbed JCTs are 10–80 min "
        "(Fig. 13) with one-batch tasks; scaling all times by one factor scales every "
        "schedule alike, so only sync/compute and the load are pinned to the paper, not "
        "the time unit (~50,000 tasks is what the offline step 1 must handle).",
        "- Arrivals (§7: Google cluster trace, times not published): one Poisson rate per "
        "figure, 0.898 jobs/s, calibrated so that the 160-GPU high-level cluster is offered "
        "load 1 of its capacity (each GPU counted at its speed relative to the fastest); "
        "measured load of seed 0: Fig. 15 cells 100–300 jobs 0.93–1.06 (the backlog grows "
        "with the arrival span), Fig. 14 cells 100–180 GPUs 1.66–0.92, Fig. 16 low / "
        "middle / high 0.74 / 0.81 / 1.04.",
        "- Sync = push + pull of fp32 parameters over 25 Gbit/s, positive for every job: "
        "α = 7 (K80 vs V100) on every paper-scale instance.",
        "",
        "## The paper's scale",
        "",
        "`optsched gen --family hare --seed S` with the defaults of `HareSpec` "
        "(optsched/generate.py): 160 GPUs (85 V100, 43 T4, 11 K80, 21 M60), 300 jobs, "
        "CV:NLP:Speech:Rec work shares 1:1:1:1 (job counts 2:1:2:2, NLP jobs twice the "
        "rounds), K ~ U{1,2,4,8}, about 50,000 tasks of ~0.75 s on the fastest GPU (whole "
        "mini-batches; sync/compute ≤ 0.39 at 25 Gbit/s), Poisson arrivals at one rate "
        "that offers the 160-GPU cluster load 1. Best lower bound = the best of the "
        "interval LP and the critical path over the runs.",
        "",
        *scale_table(hare_dir / "scale.jsonl"),
        "",
    ]
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
