"""``optsched check INSTANCE SCHEDULE``: the independent checker, for schedules and
placements alike (the reader dispatches on the instance file's format)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from optsched.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json,
    fmt,
    print_json,
    print_verdict,
)

if TYPE_CHECKING:
    from optsched.placement import PlacementInstance


def add_parser(sub: Any) -> None:
    p = sub.add_parser("check", help="check a schedule (or a placement) against an instance")
    p.add_argument("instance", help="an instance or a placement instance")
    p.add_argument("schedule", help="a schedule, or a placement for a placement instance")
    add_json(p, "the verdict, objective, metrics and every violation")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.check import check
    from optsched.io import load_any, load_schedule
    from optsched.placement import PlacementInstance

    instance = load_any(args.instance)
    if isinstance(instance, PlacementInstance):
        return _placement(args, instance)
    report = check(instance, load_schedule(args.schedule))
    if args.json:
        print_json(report.to_dict())
    else:
        print_verdict(
            report.violations, f"({report.mode} mode); objective {fmt(report.objective)}"
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
