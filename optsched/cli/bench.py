"""``optsched bench gen|run|report``: instance sets from grids, resumable runs, gap tables."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from optsched.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_NEGATIVE,
    EXIT_OK,
    Parser,
    add_json,
    add_params,
    parse_params,
    print_json,
)


def add_parser(sub: Any) -> None:
    bench = sub.add_parser("bench", help="benchmarks: instance sets, runs, reports")
    bsub = bench.add_subparsers(dest="bench_command", required=True, parser_class=Parser)
    p = bsub.add_parser("gen", help="generate an instance set from a grid file")
    p.add_argument("grid", help="a grid file (optsched/grid@1)")
    p.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="the instance set's folder (instances and manifest.json)",
    )
    p.set_defaults(func=run_gen)
    p = bsub.add_parser(
        "run",
        help="run methods × instances × modes × seeds (resumable)",
        epilog="exit status: 0 all runs recorded, 1 some recorded as errors, "
        "2 bad input (nothing run; also when another runner holds the records "
        "file), 130/143 stopped by SIGINT/SIGTERM (finished runs recorded; "
        "rerun to resume)",
    )
    p.add_argument("instances", metavar="DIR", help="an instance set (with manifest.json)")
    p.add_argument(
        "--method",
        action="append",
        required=True,
        help="a solve, simulate or place method (placement sets take place methods); repeatable",
    )
    p.add_argument(
        "--mode",
        action="append",
        choices=("relaxed", "gang"),
        help="repeatable (default: each instance's own mode, and a method of one mode in it)",
    )
    p.add_argument("--seeds", type=int, nargs="+", metavar="N", help="method seeds (default: 0)")
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds per run (default: each method's, see optsched methods)",
    )
    p.add_argument(
        "--budget",
        choices=("work", "wall"),
        default="work",
        help="work (default): anytime methods (those with a work parameter) run on a "
        "deterministic budget of as many work-seconds as the time limit, so that their "
        "results repeat exactly under any load, under a wall-clock net of 4× that; wall: "
        "the time limit is wall-clock seconds, as in optsched solve",
    )
    add_params(p)
    p.add_argument(
        "--records",
        required=True,
        metavar="FILE.jsonl",
        help="the records file: appended to, runs already in it are skipped",
    )
    p.add_argument(
        "--only", metavar="GLOB", help="only instances whose name matches, e.g. 'exact-jobs10-*'"
    )
    p.add_argument(
        "--workers",
        type=int,
        default=min(2, os.cpu_count() or 1),
        help="local worker processes (default: 2, or 1 on a 1-CPU machine)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="a Dask scheduler, e.g. tcp://h:8786 (default: local workers)",
    )
    p.add_argument(
        "--retry-errors",
        action="store_true",
        help="run again the runs recorded with status error (a lost worker, a missing "
        "dependency); their new records follow the old ones, which reports then ignore "
        "(default: an error record counts as done)",
    )
    p.set_defaults(func=run_run)
    p = bsub.add_parser("report", help="gap tables and plots from records")
    p.add_argument("records", nargs="+", metavar="FILE.jsonl", help="records files")
    p.add_argument("--out", required=True, metavar="DIR", help="the report's folder")
    p.add_argument(
        "--manifest",
        action="append",
        metavar="SET",
        help="an instance set (folder or manifest.json) whose best known values "
        "join the records' as the gaps' reference; repeatable",
    )
    p.add_argument(
        "--format",
        action="append",
        choices=("md", "csv", "tex"),
        help="table formats (default: all three); repeatable",
    )
    p.add_argument("--no-plots", action="store_true", help="write no figures")
    p.set_defaults(func=run_report)
    p = bsub.add_parser(
        "verify",
        help="check a schedule or placement against an instance set's best known values",
        epilog="exit status: 0 feasible, 1 refused by the checker, 2 bad input",
    )
    p.add_argument(
        "solution",
        metavar="SOLUTION",
        help="a schedule (optsched/schedule@1|2) or placement (optsched/placement@1) "
        "of an instance of the set",
    )
    p.add_argument(
        "--set",
        required=True,
        metavar="DIR",
        dest="instance_set",
        help="the instance set (with manifest.json)",
    )
    add_params(p, "a placement's cost options (cost, lambda, cross_domain, contention)")
    add_json(p, "the verdict as JSON")
    p.set_defaults(func=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    from optsched.bench.verify import verify

    found = verify(args.solution, args.instance_set, parse_params(args.param))
    if args.json:
        print_json(found.to_dict())
        return EXIT_OK if found.feasible else EXIT_NEGATIVE

    def value(x: float | None, by: Any) -> str:
        if x is None:
            return "unknown"
        who = f" ({by['method']}, {by.get('finished_at', 'date unknown')})" if by else ""
        return f"{x:.6g}{who}"

    print(f"instance   {found.instance} [{found.key}]")
    if not found.feasible:
        print(f"feasible   no: {found.violations} violations; first: {found.first}")
    else:
        print(f"objective  {found.objective:.6g} (checked)")
    print(f"best known {value(found.best_objective, found.best_objective_by)}")
    print(f"best bound {value(found.best_bound, found.best_bound_by)}")
    if found.feasible:
        improves = (
            "no best known value yet"
            if found.best_objective is None
            else "yes: record it with optsched bench run to keep its provenance"
            if found.improves
            else "no"
        )
        print(f"improves   {improves}")
        if found.gap is not None:
            print(f"gap        {100 * found.gap:.2f} % to the best bound")
    return EXIT_OK if found.feasible else EXIT_NEGATIVE


def run_gen(args: argparse.Namespace) -> int:
    from optsched.bench.grid import generate_set, load_grid

    try:
        manifest = generate_set(load_grid(args.grid), args.out)
    except KeyboardInterrupt:  # generate_set has removed its partial output
        print("optsched: interrupted: nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"wrote {len(manifest.instances)} instances and manifest.json to {args.out}")
    return EXIT_OK


def run_run(args: argparse.Namespace) -> int:
    """Exit 0: every run recorded without error; 1: some runs recorded as errors; 2: bad
    input (nothing run); 128 + signal (130 SIGINT, 143 SIGTERM): stopped, finished runs
    recorded, rerun the same command to resume."""
    from optsched.bench.manifest import Manifest
    from optsched.bench.runner import RunInterrupted, plan, run_benchmark

    try:
        manifest = Manifest.of_set(args.instances)
        runs = plan(
            manifest,
            args.method,
            modes=args.mode,
            seeds=args.seeds or [0],
            params=parse_params(args.param),
            time_limit=args.time_limit,
            plugins=args.plugin,
            only=args.only,
            budget=args.budget,
        )
        summary = run_benchmark(
            runs,
            args.records,
            workers=args.workers,
            scheduler=args.scheduler,
            manifest=manifest,
            retry_errors=args.retry_errors,
        )
    except RunInterrupted as stop:
        done = stop.summary
        print(
            f"{done.finished} runs finished ({done.errors} errors), {done.skipped} already "
            f"recorded, {done.remaining} not run; records in {args.records}"
        )
        print(
            f"optsched: interrupted by {stop.signal_name}: {done.finished} runs finished "
            f"and recorded, {done.remaining} not run; rerun the same command to resume",
            file=sys.stderr,
        )
        return stop.exit_code
    except KeyboardInterrupt:
        print("optsched: interrupted before any run started", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(
        f"{summary.finished} runs finished ({summary.errors} errors), {summary.skipped} "
        f"already recorded{summary.errors_note}, in {summary.elapsed_s:.1f} s; records in "
        f"{args.records}"
    )
    return EXIT_NEGATIVE if summary.errors else EXIT_OK


def run_report(args: argparse.Namespace) -> int:
    from optsched.bench.manifest import Manifest
    from optsched.bench.records import load_records
    from optsched.bench.report import FORMATS, write_report

    records = [r for path in args.records for r in load_records(path, must_exist=True)]
    manifests = [Manifest.of(m) for m in args.manifest or ()]
    written = write_report(
        records,
        args.out,
        formats=args.format or FORMATS,
        plots=not args.no_plots,
        inputs=args.records,
        manifests=manifests,
    )
    print("wrote " + ", ".join(str(p) for p in written))
    return EXIT_OK
