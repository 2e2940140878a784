"""``optsched solve INSTANCE --method M``: one registered ``solve`` method, checked."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from optsched.cli.common import (
    EXIT_NEGATIVE,
    EXIT_OK,
    add_json,
    add_params,
    add_seed,
    command_started,
    parse_params,
    print_json,
    print_result,
)
from optsched.errors import InputError
from optsched.output import distinct_targets, output_target


def add_parser(sub: Any) -> None:
    p = sub.add_parser("solve", help="solve an instance with a registered method")
    p.add_argument("instance", help="an instance file")
    p.add_argument("--method", required=True, help="a solve method (optsched methods)")
    p.add_argument(
        "--mode", choices=("relaxed", "gang"), help="execution mode (default: the instance's)"
    )
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds for the whole command, start-up and checking included "
        "(default: the method's, see optsched methods: 60 for exact "
        "methods, 300 for Hare's relaxation, none for heuristics)",
    )
    add_seed(p)
    add_params(p)
    p.add_argument(
        "--hint",
        metavar="SCHEDULE",
        help="a schedule to warm-start exact methods with (default: none)",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (default: a run longer than 5 s prints "
        "one every 5 s: elapsed, incumbent, bound, gap)",
    )
    p.add_argument(
        "--out", metavar="SCHEDULE", help="write the schedule here (default: not written)"
    )
    p.add_argument(
        "--export",
        metavar="MODEL.lp|.mps",
        help="write the MILP model (milp-* methods; same as --param export=...)",
    )
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.io import in_mode, load_instance, load_schedule, save_schedule
    from optsched.solve import check_hint, solve

    if args.export is not None and any(p.startswith("export=") for p in args.param):
        raise InputError("give the model file once: --export or --param export=...")
    if args.export is not None:
        from optsched.registry import get_method, methods

        if "export" not in get_method(args.method, "solve").params:
            writers = [m.name for m in methods("solve") if "export" in m.params]
            raise InputError(
                f"--export: {args.method} writes no model (those that do: {', '.join(writers)})"
            )
    for option, path in (("--out", args.out), ("--export", args.export)):
        if path is not None:
            output_target(path, option, inputs=[args.instance, args.hint])
    distinct_targets([("--out", args.out), ("--export", args.export)])
    instance = load_instance(args.instance)
    hint = load_schedule(args.hint) if args.hint else None
    mode = args.mode or instance.mode
    instance = in_mode(instance, mode, args.instance)
    if hint is not None:  # another instance's schedule: refused before any warning about it
        check_hint(instance, hint)
    if hint is not None and hint.mode is not None and hint.mode != mode:
        print(
            f"optsched: warning: --hint is a {hint.mode}-mode schedule and the run is in {mode} "
            f"mode: it is read as a {mode}-mode one, and not used where it is infeasible there",
            file=sys.stderr,
        )
    elif hint is not None:  # same mode: say so where it is infeasible
        from optsched.check import check
        from optsched.schedule import Schedule

        report = check(instance, Schedule(instance.name, hint.tasks, mode))
        if not report.feasible:
            first = report.violations[0].message if report.violations else "incomplete"
            print(
                f"optsched: warning: --hint is infeasible for this instance in {mode} mode "
                f"({len(report.violations)} violations; first: {first}): it is not used",
                file=sys.stderr,
            )
    params = parse_params(args.param)
    if args.export:
        params["export"] = args.export
    result = solve(
        instance,
        args.method,
        mode=args.mode,
        time_limit=args.time_limit,
        seed=args.seed,
        params=params,
        hint=hint,
        progress=None if args.quiet else sys.stderr,
        started=command_started(),
    )
    if args.out is not None and result.schedule is not None:
        save_schedule(args.out, result.schedule)
    if args.json:
        print_json(result.to_dict())
    else:
        print_result(result)
    return EXIT_OK if result.schedule is not None else EXIT_NEGATIVE
