"""Build an instance in Python, solve it exactly and with Hare's heuristic, and compare.

A cluster of two V100s and two K80s runs four training jobs. The script solves the instance
with CP-SAT (exact, with a certified bound), with Hare's Algorithm 1 as published and with
the earliest-completion baseline, checks every schedule independently, prints a gap table
and, if matplotlib is installed, draws the optimal schedule as a Gantt chart.

    python examples/solve_and_compare.py [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from optsched import GPU, Instance, Job, check, solve


def build() -> Instance:
    """Four jobs with different speed-ups on V100 over K80 (integer times: CP-SAT works on
    a 1 s grid and proves the optimum in about a second)."""
    gpus = tuple(GPU(f"{t}-{i}", t) for t in ("V100", "K80") for i in range(2))
    jobs = (
        Job(
            "resnet",
            arrival=0,
            weight=2,
            rounds=3,
            tasks_per_round=2,
            compute={"V100": 2, "K80": 6},
            sync={"V100": 1, "K80": 1},
        ),
        Job(
            "bert",
            arrival=0,
            weight=1,
            rounds=2,
            tasks_per_round=2,
            compute={"V100": 3, "K80": 5},
            sync={"V100": 1, "K80": 2},
        ),
        Job(
            "lstm",
            arrival=2,
            weight=1,
            rounds=4,
            tasks_per_round=1,
            compute={"V100": 2, "K80": 3},
            sync={"V100": 1, "K80": 1},
        ),
        Job(
            "gcn",
            arrival=4,
            weight=3,
            rounds=2,
            tasks_per_round=1,
            compute={"V100": 2, "K80": 3},
            sync={"V100": 1, "K80": 1},
        ),
    )
    return Instance("four-jobs", jobs, gpus, mode="relaxed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(tempfile.mkdtemp()),
        help="folder for the Gantt chart (default: a new temporary folder)",
    )
    args = parser.parse_args()

    instance = build()
    results = {
        method: solve(instance, method, time_limit=30) for method in ("cpsat", "hare", "ect")
    }
    optimum = results["cpsat"]
    print(
        f"{'method':<8} {'status':<9} {'Σ w_j C_j':>10} {'bound':>8} {'gap':>7} {'vs optimum':>10}"
    )
    for method, result in results.items():
        report = check(instance, result.schedule)  # independent re-check
        assert report.feasible and report.objective == result.objective
        ratio = result.objective / optimum.objective
        print(
            f"{method:<8} {result.status:<9} {result.objective:>10.2f} {result.bound:>8.2f} "
            f"{100 * result.gap:>6.2f}% {ratio:>10.3f}"
        )
    guarantee = results["hare"].extra["guarantee"]
    if guarantee is not None:
        print(
            f"Hare: α = {guarantee['alpha']:.2f}, proven factor α(2+α) = "
            f"{guarantee['factor']:.2f}, achieved {guarantee['ratio']:.3f} of its relaxation"
        )

    try:
        from optsched.plot import plot_gantt
    except ImportError:
        return
    args.out.mkdir(parents=True, exist_ok=True)
    try:
        plot_gantt(instance, optimum.schedule, args.out / "optimum.png")
    except ImportError:  # matplotlib is an optional extra
        return
    print(f"Gantt chart: {args.out / 'optimum.png'}")


if __name__ == "__main__":
    main()
