"""``optsched place PLACEMENT_INSTANCE --method M``: one registered ``place`` method,
checked."""

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
from optsched.output import output_target


def add_parser(sub: Any) -> None:
    p = sub.add_parser("place", help="place a placement instance's containers on hosts")
    p.add_argument("instance", metavar="PLACEMENT_INSTANCE", help="a placement instance file")
    p.add_argument("--method", required=True, help="a place method (optsched methods)")
    add_seed(p)
    p.add_argument(
        "--time-limit",
        type=float,
        metavar="S",
        help="seconds for the whole command, start-up included (default: the "
        "method's, see optsched methods: 60 for exact methods and gga, none "
        "for one-pass heuristics)",
    )
    add_params(p)
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines on stderr (default: a run longer than 5 s prints "
        "one every 5 s: elapsed, best cost so far)",
    )
    p.add_argument(
        "--out", metavar="PLACEMENT", help="write the placement here (default: not written)"
    )
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.placement import load_placement_instance, place, save_placement

    if args.out is not None:
        output_target(args.out, inputs=[args.instance])
    instance = load_placement_instance(args.instance)
    result = place(
        instance,
        args.method,
        seed=args.seed,
        time_limit=args.time_limit,
        params=parse_params(args.param),
        progress=None if args.quiet else sys.stderr,
        started=command_started(),
    )
    placement = result.placement
    if args.out is not None and placement is not None:
        save_placement(args.out, placement)
    if args.json:
        print_json(result.to_dict())
    else:
        print_result(result)
    return EXIT_OK if placement is not None else EXIT_NEGATIVE
