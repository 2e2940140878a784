"""``optsched simulate INSTANCE_OR_TRACE --policy P``: an online policy on the event engine."""

from __future__ import annotations

import argparse
from typing import Any

from optsched.cli.common import (
    EXIT_OK,
    add_json,
    add_params,
    add_seed,
    add_simulation_options,
    add_trace_options,
    load_instance,
    parse_params,
    print_json,
    print_result,
)
from optsched.output import distinct_targets, json_text, output_target, write_outputs


def add_parser(sub: Any) -> None:
    p = sub.add_parser("simulate", help="run an online policy in the event-driven simulator")
    p.add_argument(
        "instance",
        metavar="INSTANCE_OR_TRACE",
        help="an instance (.json) or a Gavel/Tiresias/Philly trace",
    )
    p.add_argument("--policy", required=True, help="a simulate method (optsched methods)")
    add_trace_options(p)
    add_seed(p, "the noise, a trace's workload draw and randomised policies")
    add_params(p)
    add_simulation_options(p)
    p.add_argument(
        "--tick", type=float, metavar="S", help="periodic scheduling ticks (default: none)"
    )
    p.add_argument(
        "--heartbeat", action="store_true", help="decide only at ticks (default: at every event)"
    )
    p.add_argument(
        "--no-record",
        action="store_true",
        help="do not keep the schedule (large traces; metrics are streamed, not "
        "checked; with --out the schedule is written as it is made)",
    )
    p.add_argument("--progress", action="store_true", help="progress on stderr (default: none)")
    p.add_argument(
        "--out", metavar="SCHEDULE", help="write the schedule here (default: not written)"
    )
    p.add_argument(
        "--cdf",
        metavar="PNG",
        help="plot the JCT CDF and the finish-time fairness ρ CDF (needs matplotlib; "
        "default: no plot)",
    )
    p.add_argument(
        "--realised",
        metavar="INSTANCE",
        help="write the realised instance (with noise) the schedule is checked on",
    )
    add_json(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from optsched.io import instance_to_dict
    from optsched.online.run import simulate

    params = parse_params(args.param)
    targets = [("--out", args.out), ("--realised", args.realised), ("--cdf", args.cdf)]
    for option, path in targets:
        if path is not None:  # the replay policy's schedule is an input too
            output_target(path, option, inputs=[args.instance, params.get("schedule")])
    distinct_targets(targets)
    if args.cdf is not None:
        from optsched.plot import image_format, jct_cdf_image

        cdf_format = image_format(args.cdf, "--cdf")
    if args.mode is None:  # a policy of one mode runs in it, as in compare
        from optsched.registry import get_method

        modes = get_method(args.policy, "simulate").modes
        if len(modes) == 1:
            args.mode = next(iter(modes))
    instance = load_instance(args)
    result = simulate(
        instance,
        args.policy,
        params=params,
        seed=args.seed,
        noise=args.noise,
        switch_cost=args.switch_cost,
        tick=args.tick,
        event_driven=not args.heartbeat,
        record=not args.no_record,
        progress=args.progress,
        stream_to=args.out if args.no_record else None,
        bound=args.bound,
        bound_time_limit=args.bound_time_limit,
        engine=args.engine,
    )
    sim = result.simulation
    assert sim is not None  # simulate always returns its simulation
    outputs: list[tuple[str, str | bytes]] = []
    if args.out is not None and result.schedule is not None:
        outputs.append((args.out, json_text(result.schedule.to_dict())))
    if args.realised is not None:
        outputs.append((args.realised, json_text(instance_to_dict(sim.instance))))
    if args.cdf is not None:
        from optsched.fairness import fairness

        rho = fairness(sim.instance, sim.completion).rho
        outputs.append(
            (
                args.cdf,
                jct_cdf_image(
                    {args.policy: sim.jct},
                    cdf_format,
                    title=f"{sim.instance.name}: JCT CDF",
                    rhos=None if rho is None else {args.policy: list(rho)},
                ),
            )
        )
    write_outputs(outputs)  # all or nothing, after the work succeeded
    if args.json:
        print_json(result.to_dict())
    else:
        print_result(result, online=True)
        if args.bound != "none" and "bound_critical_path" not in result.extra:
            print(
                "regret     none: the bounds do not model a cluster policy's phases and "
                "placement factors"
            )
        print(
            "checked    "
            + (
                "yes: objective and metrics from the checker"
                if result.extra["checked"]
                else "no (--no-record): the "
                "simulator's own numbers"
                + (f"; optsched check the schedule in {args.out}" if args.out else "")
            )
        )
        print(
            f"{sim.events} events in {sim.runtime_s:.2f} s ({sim.events_per_s:,.0f} events/s, "
            f"{sim.engine} engine)"
        )
    return EXIT_OK
