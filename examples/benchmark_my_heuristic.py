"""Benchmark your own heuristic against the baseline and the exact optimum.

Generates a small instance set from a grid (4 and 6 jobs on 4 GPUs of two types, 3 seeds),
runs ``wspt`` (examples/my_heuristic.py, loaded as a plug-in file), ``ect`` and ``cpsat`` on
every instance in two worker processes, writes the gap tables (Markdown, CSV, LaTeX) and
plots, and prints each method's mean objective relative to CP-SAT's per size, from the
records, as a pandas table (needs the ``frame`` extra).

    python examples/benchmark_my_heuristic.py [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from optsched.bench import (
    Grid,
    generate_set,
    load_records,
    plan,
    run_benchmark,
    to_frame,
    write_report,
)

HEURISTIC = Path(__file__).with_name("my_heuristic.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(tempfile.mkdtemp()),
        help="folder for the instances, records and report (default: a new temporary folder)",
    )
    args = parser.parse_args()

    grid = Grid(
        "wspt-demo",
        generator={"gpus": 4, "gpu_types": 2, "hosts": 1},
        vary={"jobs": [4, 6]},
        seeds=(0, 1, 2),
    )
    manifest = generate_set(grid, args.out / "instances")
    runs = plan(manifest, ["ect", "wspt", "cpsat"], time_limit=5, plugins=[str(HEURISTIC)])
    records = args.out / "records.jsonl"
    summary = run_benchmark(runs, records, workers=2, manifest=manifest, progress=None)
    print(f"{summary.finished} runs, {summary.errors} errors; records in {records}")

    written = write_report(load_records(records), args.out / "report")
    print("gap tables and plots:", ", ".join(str(p) for p in written))

    frame = to_frame(records)
    objective = frame.pivot_table(
        index=["cell.jobs", "instance"], columns="method", values="objective"
    )
    ratio = objective.div(objective["cpsat"], axis=0).groupby(level="cell.jobs").mean()
    print("\nmean objective / CP-SAT's (proved optimal unless the report says otherwise):")
    print(ratio.round(3).to_string())


if __name__ == "__main__":
    main()
