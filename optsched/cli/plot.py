"""``optsched plot INSTANCE SCHEDULE --out FILE``: a Gantt chart (the plot extra)."""

from __future__ import annotations

import argparse
from typing import Any

from optsched.cli.common import EXIT_OK
from optsched.errors import InputError
from optsched.output import output_target, write_outputs


def add_parser(sub: Any) -> None:
    p = sub.add_parser("plot", help="draw a schedule as a Gantt chart (needs matplotlib)")
    p.add_argument("instance", help="an instance file")
    p.add_argument("schedule", help="one of its schedules")
    p.add_argument(
        "--out",
        required=True,
        metavar="FILE.png",
        help="the image (its extension picks the format; none: PNG)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.io import load_instance, load_schedule
    from optsched.plot import gantt_image, image_format

    output_target(args.out, inputs=[args.instance, args.schedule])
    fmt = image_format(args.out)
    instance = load_instance(args.instance)
    schedule = load_schedule(args.schedule)
    if schedule.instance != instance.name:  # as the checker flags it
        raise InputError(
            f"{args.schedule}: the schedule is for instance {schedule.instance!r}, not "
            f"{instance.name!r}"
        )
    write_outputs([(args.out, gantt_image(instance, schedule, fmt))])
    print(f"wrote {args.out} ({fmt.upper()})")
    return EXIT_OK
