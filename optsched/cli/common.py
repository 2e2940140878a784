"""What every command shares: the parser class, option types, exit codes and printing."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from optsched.errors import InputError
from optsched.limits import MAX_SEED, check_seed
from optsched.output import json_text
from optsched.result import OBJECTIVE_NAME, Result

#: Exit codes, as ``diff`` and ``cmp`` use them.
EXIT_OK, EXIT_NEGATIVE, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130


class Parser(argparse.ArgumentParser):
    """Usage errors are one line and exit 2."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


def seed(text: str) -> int:
    """argparse type of every ``--seed``: an integer in [0, MAX_SEED]."""
    try:
        return check_seed(int(text), "--seed")
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(
            f"must be an integer in [0, {MAX_SEED}], got {text!r}"
        ) from None


def add_json(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument(
        "--json",
        action="store_true",
        help=f"print {what} as one JSON object (default: aligned text)",
    )


def add_params(
    p: argparse.ArgumentParser,
    what: str = "a method parameter (optsched methods lists each method's, with its default)",
) -> None:
    p.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help=f"{what}; repeatable"
    )


def add_trace_options(p: argparse.ArgumentParser) -> None:
    """The options that map a trace onto a cluster (``simulate``, ``check``)."""
    p.add_argument(
        "--cluster",
        metavar="TYPE:COUNT,...",
        help="the cluster a trace runs on (required for a trace)",
    )
    p.add_argument(
        "--gpus-per-host",
        type=int,
        metavar="N",
        help="put the cluster's GPUs on hosts of N GPUs of one type (traces; in gang mode a "
        "Gavel job on several GPUs then runs slower spread over hosts, at Gavel's "
        "unconsolidated throughput)",
    )
    p.add_argument(
        "--space-sharing",
        action="store_true",
        help="let a trace's single-GPU jobs share a GPU, two at a time, at their workloads' "
        "co-location rates (Gavel's pairwise throughputs; gang mode, policies that pack)",
    )
    p.add_argument(
        "--trace-format",
        choices=("auto", "gavel", "tiresias", "philly"),
        default="auto",
        help="a trace's format (default auto: from its content)",
    )
    p.add_argument(
        "--quantum",
        type=float,
        default=3600.0,
        metavar="S",
        help="seconds of work per task on the reference type (traces; default 3600)",
    )
    p.add_argument(
        "--reference-type",
        default="K80",
        help="GPU type a trace's durations and steps refer to (default K80)",
    )
    p.add_argument(
        "--mode",
        choices=("relaxed", "gang"),
        help="execution mode (default: the instance's; relaxed for a trace)",
    )
    p.add_argument(
        "--cluster-scale",
        type=float,
        default=1.0,
        metavar="F",
        help="every GPU count of --cluster × F, rounded, at least 1 (0.1: a tenth of the "
        "cluster, to load a trace; default 1)",
    )
    p.add_argument(
        "--window",
        metavar="START:END",
        help="only the jobs arriving in [START, END) after the first arrival, in s or with "
        "a unit: 2d:3d, :36h, 12h: (default: all)",
    )
    p.add_argument(
        "--first", type=int, metavar="N", help="only the first N jobs by arrival (default: all)"
    )
    p.add_argument(
        "--load",
        type=float,
        default=1.0,
        metavar="F",
        help="arrival rate × F: every gap between arrivals ÷ F (default 1)",
    )


def load_instance_or_trace(args: argparse.Namespace) -> tuple[Any, Any]:
    """The instance (and the trace it came from, or None) that ``args.instance`` names,
    read with :func:`add_trace_options`' options."""
    from optsched.subsets import parse_window
    from optsched.traces import TraceMapping, load_workload

    mapping = TraceMapping(
        quantum=args.quantum, reference_type=args.reference_type, seed=getattr(args, "seed", 0)
    )
    return load_workload(
        args.instance,
        cluster=args.cluster,
        mapping=mapping,
        trace_format=args.trace_format,
        mode=args.mode,
        gpus_per_host=args.gpus_per_host,
        space_sharing=args.space_sharing,
        first=args.first,
        window=None if args.window is None else parse_window(args.window),
        load=args.load,
        cluster_scale=args.cluster_scale,
    )


def load_instance(args: argparse.Namespace) -> Any:
    """The instance ``args.instance`` names (:func:`load_instance_or_trace`), saying on
    stderr how many lines of a trace were skipped; the trace itself is not kept (on a large
    trace it holds as much memory as a simulation's state)."""
    instance, trace = load_instance_or_trace(args)
    note_skipped(trace)
    return instance


def add_simulation_options(p: argparse.ArgumentParser) -> None:
    """What a simulation runs under (``simulate``, ``compare``): noise, switch cost, the
    regret's lower bound and its LP's time, the engine."""
    from optsched.regret import CAPACITY_TIME_LIMIT, REGRET_BOUNDS

    p.add_argument(
        "--noise",
        type=float,
        default=0.0,
        help="task times × U[1-x, 1+x], drawn once per (job, GPU type) (default 0)",
    )
    p.add_argument(
        "--switch-cost",
        type=float,
        default=0.0,
        help="task-switch cost as a fraction of each task (Hare: < 0.05; default 0)",
    )
    p.add_argument(
        "--bound",
        choices=REGRET_BOUNDS,
        default="fluid",
        help="the lower bound the certified regret is over: none, critical-path, fluid (the "
        "better of the critical path and the fluid work bound; default), capacity (also "
        "the class-capacity LP, within --bound-time-limit; on parts of the longest jobs "
        "where the trace is too large for one LP) or lagrangian (also the Lagrangian bound, "
        "by column generation from the LP's prices, within --bound-time-limit again; needs "
        "a checked schedule; stronger where short jobs queue in bursts)",
    )
    p.add_argument(
        "--bound-time-limit",
        type=float,
        metavar="S",
        default=CAPACITY_TIME_LIMIT,
        help="seconds for --bound capacity's LP, and as many for lagrangian's Lagrangian "
        f"bound (default {CAPACITY_TIME_LIMIT:g})",
    )
    p.add_argument(
        "--engine",
        choices=("auto", "python", "compiled"),
        default="auto",
        help="what runs the simulation, the same schedule either way: python (the event "
        "engine), compiled (hlas as one compiled loop, with form=queues, mapping A or B and "
        "no ticks or heartbeats (simulate's --tick, --heartbeat); needs a C compiler, which "
        "builds it once, on first use) "
        "or auto (compiled where it applies on 100,000 tasks or more when a C compiler is "
        "there, else python; default)",
    )


def note_skipped(trace: Any) -> None:
    """Say on stderr how many lines of a trace (None: an instance file) were skipped."""
    if trace is not None and trace.skipped:
        print(
            f"trace {trace.name}: {len(trace.jobs)} jobs, {trace.skipped} skipped "
            f"(first: {trace.first_skip})",
            file=sys.stderr,
        )


def add_seed(p: argparse.ArgumentParser, what: str = "randomised methods") -> None:
    p.add_argument("--seed", type=seed, default=0, help=f"seed of {what} (default 0)")


def parse_params(pairs: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict (InputError on a malformed or repeated key)."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--param expects KEY=VALUE, got {pair!r}")
        if key in params:
            raise InputError(f"--param {key} given twice ({params[key]!r} and {value!r})")
        params[key] = value
    return params


def process_started() -> float | None:
    """The ``time.perf_counter()`` value at which this process started (Python's start-up
    and imports included), from Linux's ``/proc`` (10 ms resolution); None where it cannot
    be read."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
        age = uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None
    return time.perf_counter() - max(age, 0.0)


#: When the command began (a ``time.perf_counter()`` value), set by :func:`optsched.cli.main`:
#: the process's start for the ``optsched`` command, else the call of ``main``. A command's
#: ``--time-limit`` counts from it.
started: float | None = None


def command_started() -> float | None:
    """:data:`started` (None outside :func:`optsched.cli.main`)."""
    return started


def print_json(obj: Any) -> None:
    sys.stdout.write(json_text(obj))


def fmt(value: float | None, digits: int = 12) -> str:
    """A number for a result line: 12 significant digits, so that an objective and its bound
    differ visibly even at a distant time origin (17000000020 vs 17000000000)."""
    return "-" if value is None else f"{value:.{digits}g}"


#: Violations a text verdict lists (``--json`` gives every one).
PRINTED_VIOLATIONS = 20


def print_verdict(violations: Sequence[Any], tail: str) -> None:
    """The first :data:`PRINTED_VIOLATIONS` violations, one per line, and the verdict."""
    for v in violations[:PRINTED_VIOLATIONS]:
        print(f"{v.kind}: {v.message}")
    if len(violations) > PRINTED_VIOLATIONS:
        print(f"... and {len(violations) - PRINTED_VIOLATIONS} more (--json lists every one)")
    print(f"{'feasible' if not violations else f'{len(violations)} violation(s)'} {tail}")


def print_result(result: Result[Any], online: bool = False) -> None:
    """The result as aligned lines. Online (``simulate``): the JCT metrics instead of a gap,
    which to a critical path says little about an online policy."""
    print(f"method     {result.method} ({result.mode} mode)")
    print(f"status     {result.status}")
    name = "Σ w_j C_j" if result.objective_name == OBJECTIVE_NAME else result.objective_name
    print(f"objective  {fmt(result.objective)}  ({name})")
    metrics = result.metrics or {}
    if online:
        for key, label, unit in (
            ("total_weighted_jct", "wJCT", "s (Σ w_j (C_j - a_j))"),
            ("mean_jct", "mean JCT", "s"),
            ("makespan", "makespan", "s"),
        ):
            if key in metrics:
                print(f"{label:<10} {fmt(metrics[key])} {unit}")
        tail = result.fairness
        if tail.p99_jct is not None:
            print(f"JCT p50/99 {fmt(tail.p50_jct)} s / {fmt(tail.p99_jct)} s")
        if tail.max_rho is not None:
            print(
                f"fairness   max ρ {fmt(tail.max_rho, 4)}, Jain {fmt(tail.jain_rho, 4)}, "
                f"ρ > 1 for {100 * (tail.unfair_fraction or 0):.0f} % of jobs"
            )
        report = result.extra.get("policy", {})
        if "gap_max" in report:  # integral rounds: the solves' certified gaps
            print(
                f"policy     {report['solves']} integral solves "
                f"({report['solve_seconds']:.3g} s), certified gap median "
                f"{100 * report['gap_median']:.3g} %, max {100 * report['gap_max']:.3g} %"
            )
        elif "packed_rounds" in report:  # space sharing
            solves = (
                f"{report['solves']} allocations ({report['lp_seconds']:.3g} s in LPs); "
                if "solves" in report
                else ""
            )
            print(f"policy     {solves}{report['packed_rounds']} rounds started next to another")
        elif "solves" in report:
            line = (
                f"policy     {report['solves']} allocations ({report['lp_seconds']:.3g} s in LPs)"
            )
            real = report.get("realisation")
            if real:
                line += (
                    f"; {real['objective']} promised {fmt(real['promised_mean'], 4)}, "
                    f"realised {fmt(real['realised_mean'], 4)} (time-weighted"
                    + (f"; {real['starved']} with a job served nothing" if real["starved"] else "")
                    + ")"
                )
            track = report.get("tracking")
            if track:
                line += f"; rounds did {100 * track['mean']:.0f} % of the promised work"
            print(line)
        floor = result.extra.get("bound_critical_path")
        if floor is not None:
            print(f"floor      {fmt(floor)}  (critical path: every job alone on the fastest GPUs)")
        if result.regret is not None:
            from optsched.regret import ratio_text

            named = {
                "critical-path": "the critical path",
                "fluid": "the fluid work bound",
                "capacity": "the class-capacity LP",
                "capacity-parts": "the class-capacity LP on parts of the longest jobs",
                "lagrangian": "the Lagrangian bound of GPU capacity over time",
            }[result.extra["regret_source"]]
            print(
                f"regret     ≤ {ratio_text(result.regret)}  (objective ÷ "
                f"{fmt(result.extra['regret_bound'], 6)}, {named}"
                + (
                    ""
                    if result.extra.get("bound_seconds") is None
                    else f", {result.extra['bound_seconds']:.1f} s"
                )
                + ")"
                + (
                    ""
                    if result.regret_jct is None
                    else f"; weighted JCT ≤ {ratio_text(result.regret_jct)} × the least possible"
                )
            )
            status = result.extra.get("capacity_status")
            on_parts = result.extra.get("capacity_parts_status")
            if on_parts is not None:
                print(f"           (the class-capacity LP is too large for one model: {on_parts})")
            elif status not in (None, "optimal"):
                print(f"           (the class-capacity LP gave no bound: {status})")
            lagrangian = result.extra.get("lagrangian_status")
            if lagrangian is not None and "bound_lagrangian" not in result.extra:
                print(f"           (the Lagrangian bound gave none: {lagrangian})")
    else:
        source = {"method": "the method's certified bound", "critical_path": "critical path"}.get(
            result.extra.get("bound_source", "")
        )
        print(f"bound      {fmt(result.bound)}" + (f"  ({source})" if source else ""))
        if result.kind == "place":  # a cost can be negative: no ratio
            print(f"gap        {fmt(result.absolute_gap)}  (cost − bound)")
        else:
            gap, absolute = result.gap, result.absolute_gap
            print(
                f"gap        {'-' if gap is None else f'{100 * gap:.2f} %'}"
                + ("" if absolute is None else f"  (objective − bound {fmt(absolute)})")
            )
            jct = metrics.get("total_weighted_jct")
            if absolute is not None and jct and result.objective is not None:
                arrived = result.objective - jct  # Σ w_j a_j, which no schedule changes
                if arrived > jct:  # the arrivals dwarf the gap on Σ w_j C_j: say it on JCT
                    print(
                        f"JCT gap    {100 * absolute / jct:.2f} %  (on Σ w_j (C_j − a_j) = "
                        f"{fmt(jct)}: Σ w_j a_j = {fmt(arrived)} is in both objective and bound)"
                    )
    print(f"runtime    {result.runtime_s:.3f} s")
    limit = result.time_limit
    if limit is not None:
        print(f"limit      {limit:g} s")
    if result.interrupted:
        # a method's own bound (not the critical path alone) is anytime too; a placement's
        # only bound is its method's
        placing = result.kind == "place"
        own = (result.bound if placing else result.extra.get("bound_method")) is not None
        what = "placement" if placing else "schedule"
        found = f"{what} and bound" if own else what
        print(f"interrupted  yes (Ctrl-C): the best {found} found before it")


def one_line(text: str, limit: int = 500) -> str:
    """An error message as one line of at most ``limit`` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
