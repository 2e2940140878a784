"""``optsched methods``: every registered method by kind, with its modes, default time limit
and parameters; parameters every method of a kind shares are listed once."""

from __future__ import annotations

import argparse
from typing import Any

from optsched.cli.common import EXIT_OK, add_json, print_json


def add_parser(sub: Any) -> None:
    p = sub.add_parser("methods", help="list the registered methods and their parameters")
    add_json(p, "every method as a JSON list")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.registry import methods
    from optsched.result import KINDS

    infos = methods()
    if args.json:
        print_json(
            [
                {
                    "kind": i.kind,
                    "name": i.name,
                    "modes": ["placement"] if i.kind == "place" else sorted(i.modes),
                    "description": i.description,
                    "params": dict(i.params),
                    "defaults": i.options.defaults(),
                    "default_time_limit": i.default_time_limit,
                }
                for i in infos
            ]
        )
        return EXIT_OK
    for kind in KINDS:
        group = [i for i in infos if i.kind == kind]
        print(f"{kind}:")
        if not group:
            print("  (none yet)")
            continue
        shared = dict(group[0].params.items())
        for i in group[1:]:
            shared = {k: v for k, v in shared.items() if i.params.get(k) == v}
        if len(group) < 2:
            shared = {}
        if shared:
            print(f"  shared by every {kind} method:")
            for key, text in shared.items():
                print(f"  {'':<16}   --param {key}=…  {text}")
        for i in group:
            modes = "/".join(sorted(i.modes)) if kind != "place" else "placement"
            limit = (
                ""
                if i.default_time_limit is None
                else f" (default time limit {i.default_time_limit:g} s)"
            )
            print(f"  {i.name:<16} {i.description} [{modes}]{limit}")
            for key, text in i.params.items():
                if key not in shared:
                    print(f"  {'':<16}   --param {key}=…  {text}")
    return EXIT_OK
