"""``optsched gen``: a seeded random instance of one of the generator families."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import MISSING, fields
from typing import Any

from optsched.cli.common import EXIT_OK, print_json, seed
from optsched.output import output_target

#: The generator families (:data:`optsched.bench.grid.FAMILIES`, imported only when used).
FAMILY_NAMES = ("exact", "hare", "placement", "liquid")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("gen", help="generate a random instance")
    p.add_argument("--seed", type=seed, required=True, help="the instance's seed")
    p.add_argument(
        "--family",
        choices=FAMILY_NAMES,
        default="exact",
        help="exact: the exact-solver family (default); hare: the Hare paper's "
        "simulation setting (160 GPUs, 300 jobs, ~50,000 tasks); placement: "
        "a Liquid placement instance (PS + workers on hosts); liquid: "
        "Liquid's jobs with phases, sharing and placement-dependent times "
        "(instance@2, gang mode)",
    )
    for name, typ in (
        ("gpus-per-host", int),
        ("hosts-per-rack", int),
        ("racks-per-domain", int),
        ("busy", float),
    ):
        p.add_argument(f"--{name}", type=typ, dest=name.replace("-", "_"), help="")
    p.add_argument("--gpu-type", help="the GPUs' type")
    for name in ("distributed", "interarrival", "share-cap", "launch", "save"):
        p.add_argument(f"--{name}", type=float, dest=name.replace("-", "_"), help="")
    p.add_argument(
        "--predict-from",
        type=int,
        dest="predict_from",
        metavar="N",
        help="utilisation, GPU memory and bandwidth predicted by a random forest "
        "trained on N synthetic past jobs (estimation extra; 0: exact values)",
    )
    p.add_argument(
        "--prediction-error",
        type=float,
        dest="prediction_error",
        metavar="E",
        help="actual utilisation, GPU memory and bandwidth drawn around the "
        "predictions with relative error N(0, E) (0: exact predictions)",
    )
    p.add_argument(
        "--link-contention",
        action="store_true",
        default=None,
        dest="link_contention",
        help="liquid family: flows of different jobs through a host link slow "
        "each other (instance link_contention, jobs' flow_time; default off)",
    )
    p.add_argument("--workers", type=int, nargs=2, metavar=("LOW", "HIGH"), help="workers per job")
    for name in ("total-tasks", "iters-per-task"):
        p.add_argument(f"--{name}", type=int, dest=name.replace("-", "_"), help="")
    p.add_argument(
        "--tasks-per-job",
        type=float,
        dest="tasks_per_job",
        metavar="N",
        help="hare: mean tasks per job (default: the paper's 50,000 / 300 = "
        "166.67 unless --total-tasks is given, so that --jobs keeps the "
        "paper's job sizes and arrival rate)",
    )
    p.add_argument(
        "--task-seconds",
        type=float,
        dest="task_seconds",
        metavar="S",
        help="compute time of a task on the job's fastest GPU (a task is then "
        "whole mini-batches, at least enough that sync < compute); "
        "--iters-per-task N fixes N batches instead",
    )
    p.add_argument(
        "--nlp-rounds",
        type=float,
        dest="nlp_rounds",
        metavar="F",
        help="NLP jobs have F times the rounds of the others",
    )
    p.add_argument(
        "--arrival-rate",
        type=float,
        dest="arrival_rate",
        metavar="JOBS_PER_S",
        help="Poisson arrival rate (none: --load times the capacity of the "
        "--load-gpus reference cluster)",
    )
    p.add_argument(
        "--load-gpus",
        type=int,
        dest="load_gpus",
        metavar="N",
        help="GPUs of the reference cluster --load refers to (at the high level)",
    )
    p.add_argument(
        "--mix",
        metavar="CV,NLP,SPEECH,REC",
        help="hare: work shares of the four classes, e.g. 2,1,1,1 (none: 25 %% "
        "each); liquid: MODEL:COUNT,...",
    )
    p.add_argument(
        "--heterogeneity-level",
        choices=("low", "middle", "high"),
        help="V100 only / V100+K80 / V100+T4+K80+M60",
    )
    p.add_argument("--name", help="the instance's name (default: from the family and seed)")
    p.add_argument(
        "--out", metavar="INSTANCE", help="write the instance here (default: print it as JSON)"
    )
    for name, typ in (
        ("jobs", int),
        ("gpus", int),
        ("gpu-types", int),
        ("hosts", int),
        ("load", float),
        ("heterogeneity", float),
        ("sync-ratio", float),
    ):
        p.add_argument(f"--{name}", type=typ, dest=name.replace("-", "_"), help="")
    for name, typ in (
        ("rounds", int),
        ("tasks", int),
        ("task-time", float),
        ("sync-time", float),
        ("weight", float),
    ):
        p.add_argument(
            f"--{name}",
            type=typ,
            nargs=2,
            metavar=("LOW", "HIGH"),
            dest=name.replace("-", "_"),
            help="a range",
        )
    p.add_argument(
        "--continuous",
        dest="integer",
        action="store_false",
        default=None,
        help="draw real-valued times (default: integers)",
    )
    p.add_argument("--mode", choices=("relaxed", "gang"), help="the instance's mode")
    p.add_argument(
        "--topology",
        action="store_true",
        default=None,
        help="build a tree topology of the hosts instead of a GPU list",
    )
    p.set_defaults(func=run)
    helpless: Callable[[], str] = p.format_help

    def format_help() -> str:  # the families' defaults, read from their specs when shown
        _state_defaults(p)
        return helpless()

    p.format_help = format_help


def _state_defaults(p: Any) -> None:
    """Append to each option's help the families that take it and their defaults (which
    live in the families' specs, not in the parser); once."""
    from optsched.bench.grid import FAMILIES

    if getattr(p, "_defaults_stated", False):
        return
    p._defaults_stated = True
    for action in p._actions:
        if not isinstance(action, argparse._StoreAction) or action.dest in (
            "seed",
            "name",
            "out",
            "family",
        ):
            continue
        families, defaults = [], []
        for family, (spec, _) in FAMILIES.items():
            field = {f.name: f for f in fields(spec)}.get(action.dest)
            if field is None:
                continue
            families.append(family)
            value = field.default
            if value is MISSING or value is None:
                continue
            if isinstance(value, tuple) and value and isinstance(value[0], tuple):
                text = ",".join(f"{a}:{b}" for a, b in value)  # liquid's mix
            elif isinstance(value, tuple):
                text = "-".join(map(str, value))
            else:
                text = str(value)
            defaults.append(f"{family} {text}")
        said = [f"families: {', '.join(families)}"] + (
            [f"default: {', '.join(defaults)}"] if defaults else []
        )
        action.help = f"{action.help} ({'; '.join(said)})" if action.help else "; ".join(said)


def run(args: argparse.Namespace) -> int:
    from optsched.bench.grid import FAMILIES, family_instance
    from optsched.generate import HARE_TASKS_PER_JOB
    from optsched.io import instance_to_dict, write_json
    from optsched.placement.model import placement_instance_to_dict

    if args.out is not None:
        output_target(args.out)
    options = {
        f.name: getattr(args, f.name, None) for spec, _ in FAMILIES.values() for f in fields(spec)
    }
    if (
        args.family == "hare"
        and options["total_tasks"] is None
        and options["tasks_per_job"] is None
    ):
        options["tasks_per_job"] = HARE_TASKS_PER_JOB
    instance = family_instance(args.family, options, args.seed, name=args.name)
    if args.family == "placement":
        data = placement_instance_to_dict(instance)
        summary = (
            f"{len(instance.jobs)} jobs, "
            f"{sum(len(j.containers) for j in instance.jobs)} containers, "
            f"{len(instance.topology.hosts)} hosts"
        )
    else:
        data = instance_to_dict(instance)
        summary = f"{instance.n_jobs} jobs, {instance.n_tasks} tasks, {instance.n_gpus} GPUs"
    if args.out is not None:
        write_json(args.out, data)
        print(f"wrote {args.out}: {summary}")
    else:
        print_json(data)
    return EXIT_OK
