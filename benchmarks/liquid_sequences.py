"""Liquid's §6 optimisations in the paper's own setting: job sequences on one GPU (TPDS'22
§7.3), each optimisation alone, with 0 / 10 / 20 % prediction error.

Usage: python benchmarks/liquid_sequences.py --out benchmarks/results/liquid [--seeds 20]

The released launchers (PasaLab/Liquid @ 2e70203, ``Liquid-experiments/{share,pre_schedule,
heartbeat}/launcher.py``, READMEs: "only keep one node ... all jobs on the same GPU") submit
single-task, single-GPU jobs to one GPU:

- **sharing**: 8 jobs, one every 5 s, of CNN-MNIST, NeuMF or both ("mixed"); exclusive vs
  shared; metric: the sequence time (first arrival to last completion) and mean JCT; and a
  case of ours, NeuMF needing 7–8 GB, where a misprediction can overflow the GPU's memory;
- **pre-scheduling**: 4 jobs submitted at once, of CNN, LSTM, ResNet-50, NeuMF or mixed
  (CNN, LSTM, ResNet-50); without vs with pre-scheduling; metric: GPU idle time between the
  first training start and the last training end (the gaps between consecutive trainings);
- **event-driven reporting**: 8 NeuMF jobs, one every 3 s; heartbeat reports every 5 s vs
  event-driven; metric: the same GPU idle time.

Each optimisation is measured alone on Liquid with heartbeat-only reporting (5 s) and paper
gates, as in the published figures, which vary one mechanism at a time. Phase times and
utilisations are assumptions (the paper publishes timelines, not tables): see
:data:`MODELS`. Every job's times are drawn ±20 % around its model's, its utilisation and GPU
memory uniformly in the model's range. **Prediction error** e ∈ {0, 0.1, 0.2}: the scheduler
decides on the predicted utilisation and memory and executes with actuals drawn around them
(relative error e), and pre-scheduling plans on a training end with relative error e
(``end_error``). Every schedule goes through the checker. Writes ``sequences.jsonl`` (one
record per run) and ``sequences.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from optsched import ClusterProfile, ClusterSpec, Instance, Job, check
from optsched.check import CheckReport
from optsched.online.run import simulate
from optsched.output import json_text, output_target, write_outputs
from optsched.topology import tree_topology


@dataclass(frozen=True)
class Model:
    """Assumed phase times (s), predicted utilisation range and GPU memory range (GB)."""

    launch: float
    train: float
    save: float
    util: tuple[float, float]
    memory_gb: tuple[float, float]


#: Assumptions, read off the paper's timelines (launch ≈ 20 s, short training, save ≈ 3 s for
#: the small models; "utilisation below 50 %" for the sharing workloads) and, for ResNet-50,
#: the §2.7 table's single-GPU time (146 s) with our 30 s / 10 s launch and save.
MODELS = {
    "cnn": Model(20.0, 12.0, 3.0, (0.25, 0.45), (1.0, 2.0)),
    "neumf": Model(20.0, 15.0, 3.0, (0.3, 0.5), (1.0, 3.0)),
    "lstm": Model(20.0, 20.0, 3.0, (0.4, 0.6), (1.0, 3.0)),
    "resnet50": Model(30.0, 106.0, 10.0, (0.7, 0.9), (4.0, 8.0)),
    # ours, not the paper's: NeuMF with 7-8 GB, so two fit a 16 GB T4 on predictions and a
    # misprediction can overflow it
    "neumf-7gb": Model(20.0, 15.0, 3.0, (0.3, 0.5), (7.0, 8.0)),
}
GPU_MEMORY = 16384.0  # MB, a T4
SHARE_CAP = 1.3  # Liquid's ShareMaxUtilization
ERRORS = (0.0, 0.1, 0.2)

#: (experiment, case, models, jobs, gap s, [(configuration, liquid params)], metric)
EXPERIMENTS: tuple[
    tuple[str, str, tuple[str, ...], int, float, tuple[tuple[str, dict[str, str]], ...], str], ...
] = tuple(
    [
        (
            "sharing",
            case,
            models,
            8,
            5.0,
            (("exclusive", {}), ("shared", {"share": "1"})),
            "sequence",
        )
        for case, models in (
            ("cnn", ("cnn",)),
            ("neumf", ("neumf",)),
            ("mixed", ("cnn", "neumf")),
            ("neumf-7gb (ours)", ("neumf-7gb",)),
        )
    ]
    + [
        (
            "pre-scheduling",
            case,
            models,
            4,
            0.0,
            (("default", {}), ("pre-scheduled", {"preschedule": "1"})),
            "idle",
        )
        for case, models in (
            ("cnn", ("cnn",)),
            ("lstm", ("lstm",)),
            ("resnet50", ("resnet50",)),
            ("mixed", ("cnn", "lstm", "resnet50")),
            ("neumf", ("neumf",)),
        )
    ]
    + [
        (
            "event-driven",
            "neumf",
            ("neumf",),
            8,
            3.0,
            (("heartbeat", {}), ("event-driven", {"heartbeat": "0"})),
            "idle",
        )
    ]
)

#: The paper's numbers (§7.3): the change of the metric with the optimisation, per case.
PAPER = {
    ("sharing", "cnn"): "−38 % (K80), −40 % (T4)",
    ("sharing", "neumf"): "−33 % (K80), −41 % (T4)",
    ("sharing", "mixed"): "−47 % (K80), −41 % (T4)",
    ("pre-scheduling", None): "−18 … −77 % per case, −44 % on average",
    ("event-driven", None): "−10 … −16 % per case, −13 % on average",
}


def sequence(models: tuple[str, ...], jobs: int, gap: float, seed: int) -> Instance:
    """``jobs`` single-task jobs of ``models`` (drawn uniformly), one every ``gap`` s, on one
    T4 GPU; times ±20 % around the model's."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(jobs):
        name = models[int(rng.integers(len(models)))]
        m = MODELS[name]
        scale = rng.uniform(0.8, 1.2, size=3)
        profile = ClusterProfile(
            launch=round(m.launch * scale[0], 3),
            save=round(m.save * scale[2], 3),
            util=round(float(rng.uniform(*m.util)), 3),
            gpu_memory=1024.0 * round(float(rng.uniform(*m.memory_gb)), 2),
            model=name,
        )
        out.append(
            Job(
                id=f"j{k}",
                arrival=k * gap,
                compute={"T4": round(m.train * scale[1], 3)},
                cluster=profile,
            )
        )
    graph = tree_topology([["T4"]])
    graph.nodes["h0/g0"]["gpu_memory"] = GPU_MEMORY
    return Instance(
        f"seq-{'-'.join(models)}-n{jobs}-s{seed}",
        tuple(out),
        topology=graph,
        mode="gang",
        cluster=ClusterSpec(share_cap=SHARE_CAP),
    )


def with_error(instance: Instance, error: float, seed: int) -> Instance:
    """The instance with actual utilisation and memory drawn around the predictions."""
    if not error:
        return instance
    from optsched.generate import with_actuals

    return with_actuals(instance, error, seed)


def training_idle(instance: Instance, report: CheckReport) -> float:
    """Seconds between the first training start and the last training end in which the GPU
    trains nothing (the gaps between consecutive trainings)."""
    spans = sorted((ts, te) for _, ts, te, _ in report.timeline.values())
    idle, reach = 0.0, spans[0][0]
    for ts, te in spans:
        idle += max(0.0, ts - reach)
        reach = max(reach, te)
    return idle


def run(seeds: int) -> list[dict[str, Any]]:
    records = []
    for experiment, case, models, jobs, gap, configs, _ in EXPERIMENTS:
        for error in ERRORS:
            for seed in range(seeds):
                inst = with_error(sequence(models, jobs, gap, seed), error, seed)
                for config, params in configs:
                    full = {"heartbeat": "5", "end_error": str(error), **params}
                    sim = simulate(inst, "liquid", params=full, seed=seed).simulation
                    assert sim.schedule is not None
                    report = check(inst, sim.schedule)
                    if not report.feasible:
                        raise SystemExit(
                            f"{inst.name} {config}: the checker rejects the "
                            f"schedule: {report.violations[0]}"
                        )
                    arrivals = min(j.arrival for j in inst.jobs)
                    records.append(
                        {
                            "experiment": experiment,
                            "case": case,
                            "error": error,
                            "seed": seed,
                            "config": config,
                            "params": full,
                            "sequence_s": sim.metrics["makespan"] - arrivals,
                            "mean_jct_s": sim.metrics["mean_jct"],
                            "idle_s": training_idle(inst, report),
                            "oom_failures": sim.metrics.get("oom_failures", 0),
                        }
                    )
    return records


def summary(records: list[dict[str, Any]], seeds: int) -> str:
    cells: dict[tuple[str, str, float, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        cells[r["experiment"], r["case"], r["error"], r["config"]].append(r)
    lines = [
        "# Liquid's §6 optimisations in the paper's setting: job sequences on one GPU",
        "",
        f"Generated by `python benchmarks/liquid_sequences.py` ({seeds} seeds per cell; "
        "every schedule checked). Phase times and utilisations are assumptions (see the "
        "script's MODELS); prediction error e: actual utilisation and memory drawn around "
        "the predictions, and pre-scheduling's planned training end, with relative "
        "error e. Change = with the optimisation vs without, mean over seeds.",
        "",
    ]
    for experiment in dict.fromkeys(e for e, *_ in EXPERIMENTS):
        rows = [x for x in EXPERIMENTS if x[0] == experiment]
        metric = rows[0][6]
        key = "sequence_s" if metric == "sequence" else "idle_s"
        (base, _), (opt, _) = rows[0][5]
        shown = "sequence time" if metric == "sequence" else "GPU idle between trainings"
        lines += [
            f"## {experiment}: {shown} ({base} → {opt})",
            "",
            "| case | " + " | ".join(f"e = {e:.0%}" for e in ERRORS) + " | paper |",
            "|---|" + "---|" * (len(ERRORS) + 1),
        ]
        for _, case, *_ in rows:
            out = []
            for error in ERRORS:
                b = statistics.mean(r[key] for r in cells[experiment, case, error, base])
                o = statistics.mean(r[key] for r in cells[experiment, case, error, opt])
                change = (o - b) / b if b else 0.0
                out.append(f"{b:.1f} → {o:.1f} s ({change:+.0%})")
            paper = PAPER.get((experiment, case)) or PAPER.get((experiment, None), "")
            lines.append(f"| {case} | " + " | ".join(out) + f" | {paper} |")
        if experiment == "sharing":
            lines += [
                "",
                "Mean JCT, same runs:",
                "",
                "| case | " + " | ".join(f"e = {e:.0%}" for e in ERRORS) + " |",
                "|---|" + "---|" * len(ERRORS),
            ]
            for _, case, *_ in rows:
                out = []
                for error in ERRORS:
                    b = statistics.mean(
                        r["mean_jct_s"] for r in cells[experiment, case, error, base]
                    )
                    o = statistics.mean(
                        r["mean_jct_s"] for r in cells[experiment, case, error, opt]
                    )
                    failures = sum(r["oom_failures"] for r in cells[experiment, case, error, opt])
                    out.append(f"{b:.1f} → {o:.1f} s ({(o - b) / b:+.0%}; {failures} OOM)")
                lines.append(f"| {case} | " + " | ".join(out) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    targets = [output_target(args.out / name) for name in ("sequences.jsonl", "sequences.md")]
    records = run(args.seeds)
    write_outputs(
        [
            (targets[0], "".join(json_text(r, indent=None) for r in records)),
            (targets[1], summary(records, args.seeds)),
        ]
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
