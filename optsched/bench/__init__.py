"""Benchmarks: instance sets from grids with manifests of best-known values, a resumable
runner, gap reports and data frames.

A typical run: :func:`load_grid` then :func:`generate_set` writes an instance set and its
:class:`Manifest`; :func:`plan` lists the runs (instances × methods × modes × seeds) and
:func:`run_benchmark` executes them, appending one record per run to a records file and
updating the manifest's best objective and bound; :func:`write_report` writes gap tables
(Markdown, CSV, LaTeX) and plots; :func:`to_frame` loads records or results into pandas;
:func:`verify` checks a submitted solution against a set's best known values.
"""

from typing import TYPE_CHECKING

from optsched._exports import lazy_exports

if TYPE_CHECKING:
    from optsched.bench.frame import to_frame as to_frame
    from optsched.bench.grid import Grid as Grid
    from optsched.bench.grid import generate_set as generate_set
    from optsched.bench.grid import load_grid as load_grid
    from optsched.bench.manifest import Manifest as Manifest
    from optsched.bench.records import load_records as load_records
    from optsched.bench.report import gap_rows as gap_rows
    from optsched.bench.report import write_report as write_report
    from optsched.bench.runner import Run as Run
    from optsched.bench.runner import RunInterrupted as RunInterrupted
    from optsched.bench.runner import Summary as Summary
    from optsched.bench.runner import plan as plan
    from optsched.bench.runner import run_benchmark as run_benchmark
    from optsched.bench.verify import Verification as Verification
    from optsched.bench.verify import verify as verify

lazy_exports(
    __name__,
    {
        "to_frame": "optsched.bench.frame",
        "Grid": "optsched.bench.grid",
        "generate_set": "optsched.bench.grid",
        "load_grid": "optsched.bench.grid",
        "Manifest": "optsched.bench.manifest",
        "load_records": "optsched.bench.records",
        "gap_rows": "optsched.bench.report",
        "write_report": "optsched.bench.report",
        "Run": "optsched.bench.runner",
        "RunInterrupted": "optsched.bench.runner",
        "Summary": "optsched.bench.runner",
        "plan": "optsched.bench.runner",
        "run_benchmark": "optsched.bench.runner",
        "Verification": "optsched.bench.verify",
        "verify": "optsched.bench.verify",
    },
)

__all__ = [
    "Grid",
    "Manifest",
    "Run",
    "RunInterrupted",
    "Summary",
    "Verification",
    "gap_rows",
    "generate_set",
    "load_grid",
    "load_records",
    "plan",
    "run_benchmark",
    "to_frame",
    "verify",
    "write_report",
]
