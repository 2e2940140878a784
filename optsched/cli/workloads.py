"""``optsched workloads``: the workload catalog with each cell's provenance."""

from __future__ import annotations

import argparse
from typing import Any

from optsched.cli.common import EXIT_OK, add_json, print_json


def add_parser(sub: Any) -> None:
    p = sub.add_parser("workloads", help="list the workload catalog with provenance")
    add_json(p, "the catalog")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.workloads import default_catalog

    catalog = default_catalog()
    if args.json:
        print_json(catalog.to_dict())
        return EXIT_OK
    for w in catalog.workloads.values():
        cells = ", ".join(f"{t} {c.seconds:.4g}s ({c.provenance})" for t, c in w.cells.items())
        print(f"{w.name}: {cells}")
    return EXIT_OK
