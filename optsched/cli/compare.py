"""``optsched compare INSTANCE_OR_TRACE --policy P --policy Q ...``: several online policies
on one workload, one table and one JCT CDF."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optsched.cli.common import (
    EXIT_OK,
    add_json,
    add_seed,
    add_simulation_options,
    add_trace_options,
    load_instance,
    print_json,
)
from optsched.output import distinct_targets, json_text, output_target, write_outputs
from optsched.subsets import UNITS

if TYPE_CHECKING:
    from optsched.online.compare import Comparison


def add_parser(sub: Any) -> None:
    from optsched.regret import OFFLINE_TIME_LIMIT

    p = sub.add_parser(
        "compare",
        help="run several online policies on one instance or trace: one table, one JCT CDF",
        epilog="example: optsched compare philly.csv --cluster V100:100,T4:50,K80:25,M60:25 "
        "--first 2000 --policy hlas --policy tiresias --policy fifo-perf --cdf jct.png",
    )
    p.add_argument(
        "instance",
        metavar="INSTANCE_OR_TRACE",
        help="an instance (.json) or a Gavel/Tiresias/Philly trace",
    )
    p.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="NAME[:KEY=VALUE,...]",
        help="a simulate method, with its parameters after a colon (hlas:mapping=A); "
        "repeatable, in table order",
    )
    add_trace_options(p)
    add_seed(p, "the noise, a trace's workload draw and randomised policies")
    add_simulation_options(p)
    p.add_argument(
        "--offline",
        metavar="METHOD[:KEY=VALUE,...]",
        help="also solve the workload offline, every arrival known, with this solve method "
        "(priority-search:kick=2, lns, cpsat ...), in each of the policies' modes that the "
        "method has: the best checked schedule then gives each policy the regret it has at "
        "least (columns 'JCT regret ≥', 'regret ≥'), and the method's bound, where higher, "
        "becomes the mode's",
    )
    p.add_argument(
        "--offline-time-limit",
        type=float,
        metavar="S",
        default=OFFLINE_TIME_LIMIT,
        help=f"seconds for --offline in each mode (default {OFFLINE_TIME_LIMIT:g})",
    )
    p.add_argument(
        "--no-record",
        action="store_true",
        help="keep no schedules (large traces): metrics are streamed, not checked",
    )
    p.add_argument(
        "--unit",
        choices=tuple(UNITS),
        default="h",
        help="the unit of the table's and the plot's times (default h)",
    )
    p.add_argument(
        "--out",
        metavar="TABLE",
        help="write the table here: .md (Markdown), .csv or .json (default: printed only)",
    )
    p.add_argument(
        "--cdf",
        metavar="PNG",
        help="plot every policy's JCT CDF on one chart (needs matplotlib; default: no plot)",
    )
    p.add_argument(
        "--linear", action="store_true", help="a linear time axis on the CDF (default: log)"
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="lines on stderr as each policy runs and as --bound capacity's LP (and "
        "lagrangian's Lagrangian bound) is solved",
    )
    add_json(p)
    p.set_defaults(func=run)


def _table_format(path: str) -> str:
    from optsched.errors import InputError

    suffix = Path(path).suffix.lower().lstrip(".")
    if suffix not in ("md", "csv", "json"):
        raise InputError(f"--out {path!r}: the table is written as .md, .csv or .json")
    return suffix


def _csv(result: Comparison, unit: str) -> str:
    """The table's rows as CSV, in its columns and under its headings (their units in them),
    each with its mode's bound on the total weighted JCT and where it came from (with
    ``--offline``, the best schedule's too)."""
    import csv
    import io

    data = result.to_dict(unit)  # its rows, each mode's bound (and best schedule)
    ends = ["bounds"] + (["schedules"] if result.offline is not None else [])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        [heading.format(unit=unit) for heading in result.columns.values()]
        + [f"bound on Σ w_j JCT ({unit})", "bound from"]
        + [f"best schedule's Σ w_j JCT ({unit})", "schedule from"] * (len(ends) - 1)
    )
    for row in data["policies"]:
        cells = [row[key] for key in result.columns]
        for end in ends:
            found = data[end].get(row["mode"], {})
            cells += [found.get("weighted_jct"), found.get("source")]
        writer.writerow(cells)
    return buffer.getvalue()


def run(args: argparse.Namespace) -> int:
    from optsched.online.compare import compare

    targets = [("--out", args.out), ("--cdf", args.cdf)]
    for option, path in targets:
        if path is not None:
            output_target(path, option, inputs=[args.instance])
    distinct_targets(targets)
    table_format = None if args.out is None else _table_format(args.out)
    if args.cdf is not None:
        from optsched.plot import image_format

        cdf_format = image_format(args.cdf, "--cdf")
    instance = load_instance(args)
    result = compare(
        instance,
        args.policy,
        mode=args.mode,
        seed=args.seed,
        noise=args.noise,
        switch_cost=args.switch_cost,
        record=not args.no_record,
        bound=args.bound,
        bound_time_limit=args.bound_time_limit,
        engine=args.engine,
        offline=args.offline,
        offline_time_limit=args.offline_time_limit,
        progress=(lambda line: print(line, file=sys.stderr, flush=True))
        if args.progress
        else None,
    )
    outputs: list[tuple[str, str | bytes]] = []
    if args.out is not None:
        text = {
            "md": lambda: result.table(args.unit),
            "csv": lambda: _csv(result, args.unit),
            "json": lambda: json_text(result.to_dict(args.unit)),
        }[str(table_format)]()
        outputs.append((args.out, text))
    if args.cdf is not None:
        from optsched.plot import jct_cdf_image

        image = jct_cdf_image(
            result.jcts_in(args.unit),
            cdf_format,
            title=f"{result.instance.name}: JCT CDF ({result.instance.n_jobs} jobs)",
            unit=args.unit,
            log=not args.linear,
        )
        outputs.append((args.cdf, image))
    write_outputs(outputs)  # all or nothing, after the work succeeded
    if args.json:
        print_json(result.to_dict(args.unit))
    else:
        print(result.table(args.unit), end="")
    return EXIT_OK
