"""``optsched demo``: the tour of :mod:`optsched.demo`."""

from __future__ import annotations

import argparse
from typing import Any

from optsched.cli.common import EXIT_INTERNAL, EXIT_OK, add_seed


def add_parser(sub: Any) -> None:
    p = sub.add_parser("demo", help="solve and simulate bundled instances, a short table each")
    add_seed(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.demo import run_demo

    return EXIT_OK if run_demo(args.seed) else EXIT_INTERNAL
