"""``optsched demo``: a short tour on bundled instances, as library code.

Hare's motivating example (HPDC'22, Fig. 1) solved by the paper's own schedule, ECT, Hare's
Algorithm 1 and its variant, and CP-SAT, each checked; then Liquid's scheduler on a small
cluster with its switches. Every number printed comes from the checker.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from typing import Any, TextIO

from optsched.check import check
from optsched.critical_path import critical_path_bound
from optsched.io import instance_from_dict, schedule_from_dict
from optsched.online.run import simulate
from optsched.solve import solve


def _fmt(value: float | None, digits: int = 6) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def _bundled(name: str) -> Any:
    text = resources.files("optsched").joinpath("data", "instances", name).read_text("utf-8")
    return json.loads(text)


def run_demo(seed: int = 0, out: TextIO | None = None) -> bool:
    """Print the tour to ``out`` (default stdout); True when the paper's schedule checks."""
    out = out or sys.stdout

    def say(*parts: Any) -> None:
        print(*parts, file=out)

    instance = instance_from_dict(_bundled("hare-toy.instance.json"))
    paper = check(instance, schedule_from_dict(_bundled("hare-fig1.schedule.json")))
    say(
        f"Instance {instance.name!r}: Hare's motivating example (HPDC'22, Fig. 1): "
        f"{instance.n_jobs} jobs, {instance.n_tasks} tasks, {instance.n_gpus} GPUs of "
        f"{len({g.type for g in instance.gpus})} types.\n"
    )
    Row = tuple[str, str, str, float | None, float | None, Any]
    rows: list[Row] = [
        (
            "paper's schedule (Fig. 1)",
            "relaxed",
            "checked" if paper.feasible else "INFEASIBLE",
            paper.objective,
            critical_path_bound(instance),
            paper.metrics,
        )
    ]
    methods = (
        ("ect", "ect (list scheduling)", ("relaxed", "gang")),
        ("hare", "hare (Algorithm 1)", ("relaxed",)),
        ("hare-ect", "hare-ect (variant)", ("relaxed",)),
        ("cpsat", "cpsat (exact CP-SAT)", ("relaxed", "gang")),
    )
    guarantee = None
    for method, label, modes in methods:
        for mode in modes:
            r = solve(instance, method, mode=mode, seed=seed)
            rows.append((label, mode, str(r.status), r.objective, r.bound, r.metrics))
            if method == "hare":
                guarantee = (r.extra["guarantee"], r.extra["relaxation"])
    header = (
        f"{'schedule':<27} {'mode':<8} {'status':<9} {'Σ w·C':>7} {'bound':>7} "
        f"{'gap':>7} {'makespan':>9}"
    )
    say(header)
    say("-" * len(header))
    # each mode's best bound over the rows; a relaxed bound holds in gang mode too (a gang
    # schedule is a relaxed one with the same Σ w·C)
    best = {
        mode: max(
            (r[4] for r in rows if r[4] is not None and r[1] in ("relaxed", mode)),
            default=None,
        )
        for mode in ("relaxed", "gang")
    }
    for name, mode, status, obj, _, metrics in rows:
        bound = best[mode]
        gap = None if obj is None or bound is None else (obj - bound) / obj
        say(
            f"{name:<27} {mode:<8} {status:<9} {_fmt(obj):>7} {_fmt(bound):>7} "
            f"{'-' if gap is None else f'{100 * gap:.1f}%':>7} "
            f"{_fmt(metrics['makespan'] if metrics else None):>9}"
        )
    if guarantee is not None and guarantee[0] is not None:
        g, rl = guarantee
        proved = "proved" if rl["proved"] else "unproved"
        say(
            f"\nhare: Σ w·C ≤ α(2+α) × relaxation = {_fmt(g['factor'])} × "
            f"{_fmt(rl['objective'])} (α = {_fmt(g['alpha'])}, relaxation {proved}); "
            f"achieved ratio {g['ratio']:.2f}."
        )
    say(
        "\nbound = the mode's best certified lower bound over the rows (a critical path, or "
        "a solver's proof; a relaxed one holds in gang mode too); gap = (Σ w·C − bound) / "
        "Σ w·C.\nTry: optsched solve INSTANCE --method cpsat --json; "
        "optsched check INSTANCE SCHEDULE.\n"
    )
    _demo_liquid(seed, say)
    return paper.feasible


def _demo_liquid(seed: int, say: Any) -> None:
    """Liquid's scheduler on the bundled cluster instance, a few switches, all checked."""
    instance = instance_from_dict(_bundled("liquid-demo.instance.json"))
    distributed = sum(j.tasks_per_round > 1 for j in instance.jobs)
    say(
        f"Instance {instance.name!r}: Liquid's setting (TPDS'22): {instance.n_jobs} jobs "
        f"({distributed} of 1 PS + 2 workers) arriving over time on {instance.n_gpus} T4 of "
        f"{len({g.host for g in instance.gpus})} hosts; launch/save phases, placement-"
        "dependent times, GPU sharing cap 1.3.\n"
    )
    configs = (
        ("immediate best-fit", {"cost": "code"}),
        ("batch GGA (every 5 s)", {"placement": "gga", "batch": "5", "cost": "code"}),
        ("random placement", {"placement": "random"}),
        ("spread placement", {"placement": "spread"}),
        (
            "best-fit + sharing + pre-scheduling",
            {"cost": "code", "share": "1", "preschedule": "1"},
        ),
        ("best-fit, heartbeat-only (5 s)", {"cost": "code", "heartbeat": "5"}),
    )
    header = f"{'liquid policy':<38} {'mean JCT':>9} {'makespan':>9} {'GPU idle':>9}"
    say(header)
    say("-" * len(header))
    for name, params in configs:
        result = simulate(instance, "liquid", params=params, seed=seed)
        sim = result.simulation
        assert sim is not None
        metrics = result.metrics or {}
        say(
            f"{name:<38} {metrics['mean_jct']:>9.0f} {metrics['makespan']:>9.0f} "
            f"{sim.metrics['gpu_idle_s']:>9.0f}"
        )
    say(
        "\nTimes in seconds; GPU idle = GPU-seconds without training within the makespan.\n"
        "Try: optsched simulate INSTANCE --policy liquid --param share=1 --out S.json; "
        "optsched plot INSTANCE S.json --out gantt.png."
    )
