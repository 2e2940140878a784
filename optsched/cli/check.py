"""``optsched check INSTANCE SCHEDULE``: the independent checker, for schedules and
placements alike (the reader dispatches on the instance file's format)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from optsched.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json,
    add_trace_options,
    fmt,
    load_instance_or_trace,
    print_json,
    print_verdict,
)
from optsched.errors import InputError

if TYPE_CHECKING:
    from optsched.placement import PlacementInstance


def add_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="check a schedule (or a placement) against an instance")
    p.add_argument(
        "instance",
        metavar="INSTANCE_OR_TRACE",
        help="an instance, a placement instance, or a trace (with --cluster)",
    )
    p.add_argument(
        "schedule",
        help="a schedule, a placement for a placement instance, or another simulator's "
        "interval log (--log)",
    )
    p.add_argument(
        "--log",
        choices=("csv", "gavel"),
        help="the schedule is a job-level interval log: csv (job,gpus,start,end; "
        "docs/formats.md) or gavel (Gavel's scheduler log); default: csv for a .csv file, "
        "else a schedule",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        metavar="F",
        help="interval logs: the relative shortfall of a job's work accepted (default 1e-9; "
        "0.02 for --log gavel, whose steps optsched's trace mapping rounds within 1 %%)",
    )
    add_trace_options(p)
    add_json(p, "the verdict, objective, metrics and every violation")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.check import check
    from optsched.io import in_mode, load_any, load_schedule
    from optsched.placement import PlacementInstance

    log = args.log or ("csv" if str(args.schedule).endswith(".csv") else None)
    if log is None and args.tolerance is not None:
        raise InputError("--tolerance goes with an interval log (--log, or a .csv file)")
    schedule = None
    if log is not None or args.cluster:
        if log is None and args.mode is None:  # a trace in the schedule's own mode
            schedule = load_schedule(args.schedule)
            args.mode = schedule.mode
        instance, _ = load_instance_or_trace(args)
        if log is not None:
            return _intervals(args, instance, log)
    else:
        instance = load_any(args.instance)
    if isinstance(instance, PlacementInstance):
        return _placement(args, instance)
    schedule = schedule or load_schedule(args.schedule)
    if args.mode is not None:  # checked in that mode, whatever the schedule says
        from optsched.schedule import Schedule

        instance = in_mode(instance, args.mode, args.instance)
        schedule = Schedule(schedule.instance, schedule.tasks, args.mode)
    report = check(instance, schedule)
    if args.json:
        print_json(report.to_dict())
    else:
        print_verdict(
            report.violations, f"({report.mode} mode); objective {fmt(report.objective)}"
        )
        if args.cluster and not args.space_sharing and "overlap" in report.kinds():
            print(
                "hint: tasks of two jobs train on one GPU; a schedule of a space-sharing "
                "policy is checked with --space-sharing"
            )
    return EXIT_OK if report.feasible else EXIT_NEGATIVE


def _placement(args: argparse.Namespace, instance: PlacementInstance) -> int:
    from optsched.placement import CostModel, check_placement, load_placement

    placement = load_placement(args.schedule)
    report = check_placement(instance, placement)
    code = check_placement(instance, placement, CostModel("code")).cost
    cost = None if report.cost is None else report.cost.total
    forms = {
        model.objective_name: None
        if c is None
        else {"total": c.total, "network": c.network, "load": c.load}
        for model, c in ((CostModel("paper"), report.cost), (CostModel("code"), code))
    }
    if args.json:
        print_json(
            {
                "feasible": report.feasible,
                "cost": cost,
                "costs": forms,
                "violations": [
                    {
                        "kind": v.kind,
                        "job": v.job,
                        "container": v.container,
                        "host": v.host,
                        "message": v.message,
                    }
                    for v in report.violations
                ],
            }
        )
    else:
        print_verdict(
            report.violations,
            f"(placement); cost {fmt(cost)} (paper form, "
            f"λ = 0.5); {fmt(None if code is None else code.total)}"
            " (code form, reconstructed)",
        )
    return EXIT_OK if report.feasible else EXIT_NEGATIVE


def _intervals(args: argparse.Namespace, instance: Any, log: str) -> int:
    """Check another simulator's interval log (:mod:`optsched.intervals`)."""
    from optsched.intervals import check_intervals, read_gavel_log, read_interval_log

    intervals = (read_gavel_log if log == "gavel" else read_interval_log)(args.schedule)
    tolerance = args.tolerance
    if tolerance is None:
        tolerance = 0.02 if log == "gavel" else 1e-9
    if not 0 <= tolerance < 1:
        raise InputError(f"--tolerance must be in [0, 1), got {tolerance!r}")
    report = check_intervals(instance, intervals, tolerance=tolerance)
    if args.json:
        print_json(report.to_dict())
    else:
        tail = f"({len(intervals)} intervals); objective {fmt(report.objective)}"
        if report.metrics is not None:
            tail += (
                f", mean JCT {fmt(report.metrics['mean_jct'], 6)}, "
                f"makespan {fmt(report.metrics['makespan'], 6)}, "
                f"max ρ {fmt(report.metrics.get('max_rho'), 4)}"
            )
        print_verdict(report.violations, tail)
    return EXIT_OK if report.feasible else EXIT_NEGATIVE
