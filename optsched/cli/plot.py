"""``optsched plot INSTANCE SCHEDULE --out FILE``: a Gantt chart, or with ``--by-type`` each
GPU type's busy share over time (the plot extra)."""

from __future__ import annotations

import argparse
from typing import Any

from optsched.cli.common import EXIT_OK
from optsched.errors import InputError
from optsched.output import output_target, write_outputs


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "plot",
        help="draw a schedule as a Gantt chart, or its GPU types' busy shares over time "
        "(needs matplotlib)",
    )
    p.add_argument("instance", help="an instance file")
    p.add_argument("schedule", help="one of its schedules")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE.png",
        help="the image (its extension picks the format; none: PNG)",
    )
    p.add_argument(
        "--by-type",
        action="store_true",
        help="instead of the Gantt chart, each GPU type's busy share over time (for clusters "
        "of many GPUs: which types the schedule leaves idle, and when); busy: computing in "
        "relaxed mode, held in gang mode and on cluster instances",
    )
    p.add_argument(
        "--windows",
        type=int,
        metavar="N",
        help="with --by-type: windows of equal length from the first arrival to the last busy "
        "moment (default 50, at most 10,000)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.io import load_instance, load_schedule
    from optsched.plot import WINDOWS, gantt_image, image_format, type_busy_image

    if args.windows is not None and not args.by_type:
        raise InputError("--windows goes with --by-type")
    output_target(args.out, inputs=[args.instance, args.schedule])
    fmt = image_format(args.out)
    instance = load_instance(args.instance)
    schedule = load_schedule(args.schedule)
    if schedule.instance != instance.name:  # as the checker flags it
        raise InputError(
            f"{args.schedule}: the schedule is for instance {schedule.instance!r}, not "
            f"{instance.name!r}"
        )
    if args.by_type:
        windows = WINDOWS if args.windows is None else args.windows
        image = type_busy_image(instance, schedule, windows, fmt)
    else:
        image = gantt_image(instance, schedule, fmt)
    write_outputs([(args.out, image)])
    print(f"wrote {args.out} ({fmt.upper()})")
    return EXIT_OK
