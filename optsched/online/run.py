"""The ``simulate`` verb: :func:`simulate` runs a registered online policy (kind
``simulate``, :mod:`optsched.registry`) and reports a checked :class:`~optsched.result.Result`."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from optsched.budget import check_time_limit
from optsched.check import ResolutionError
from optsched.errors import InputError, OptschedError
from optsched.instance import Instance
from optsched.online.cluster import ClusterPolicy
from optsched.online.engine import PolicyError, ScheduleStreamer, declared
from optsched.online.simulator import Policy, execution_model, run_simulation
from optsched.output import StreamedFile
from optsched.registry import prepare
from optsched.regret import (
    CAPACITY_TIME_LIMIT,
    LP_LEVELS,
    RegretBound,
    check_level,
    regret_bound,
    regret_ratio,
    weighted_arrivals,
)
from optsched.result import Result, Status, tolerance_of
from optsched.runtime import checked, method_running
from optsched.schedule import Schedule


def simulate(
    instance: Instance,
    policy: str,
    *,
    mode: str | None = None,
    params: Mapping[str, str] | None = None,
    seed: int = 0,
    noise: float = 0.0,
    switch_cost: float = 0.0,
    tick: float | None = None,
    event_driven: bool = True,
    record: bool = True,
    progress: bool = False,
    stream_to: str | Path | None = None,
    bound: str = "fluid",
    bound_time_limit: float | None = CAPACITY_TIME_LIMIT,
    engine: str = "auto",
) -> Result[Schedule]:
    """Simulate the registered ``simulate`` method ``policy`` on ``instance`` (in ``mode``,
    default the instance's); the Result
    holds the schedule (``solution``, when recorded) and the
    :class:`~optsched.online.engine.Simulation`
    (``simulation``: events, completion times, the realised instance).

    The schedule (when ``record``) goes through the checker against the realised instance
    and the Result's objective and metrics are the checker's; without ``record`` they are the
    simulator's streamed ones, unchecked, and ``extra["checked"]`` says which. The Result has
    no bound and no gap: an online policy is judged by its JCT metrics and its certified
    regret. ``bound`` (:data:`~optsched.regret.REGRET_BOUNDS`: ``none``,
    ``critical-path``, ``fluid``, the default, ``capacity``, whose LP may take
    ``bound_time_limit`` seconds; on a trace too large for one LP, the LP on parts of its
    longest jobs, a line per part on stderr with ``progress``; or ``lagrangian``, which
    adds the Lagrangian bound from the LP's prices and the run's checked objective, within
    ``bound_time_limit`` again) chooses the lower bounds
    computed on the realised instance
    with its arrivals known (:mod:`optsched.regret`): each as
    ``extra["bound_<name>"]``, the best as ``extra["regret_bound"]`` (its name
    ``extra["regret_source"]``), the objective over it as ``extra["regret"]``
    (:attr:`Result.regret`: the policy is within that factor of the best schedule of the
    instance) and the total weighted JCT over the bound less Σ w_j a_j as
    ``extra["regret_jct"]`` (:attr:`Result.regret_jct`); the seconds the bounds took as
    ``extra["bound_seconds"]`` (the Result's runtime is the simulation's). Not for cluster
    policies (:mod:`optsched.online.cluster`), whose phases and placement factors the
    bounds ignore. ``stream_to`` (with ``record=False``) writes the schedule to that file as the
    simulation runs, never holding it in memory (put in place atomically when the run
    succeeds; not checked), for both execution models. The policy raising while it is built
    or while it decides (anything but an InputError or a PolicyError, exits included) is a
    :class:`~optsched.errors.MethodError` naming it and its plug-in. ``engine`` (``auto``,
    ``python`` or ``compiled``: :func:`~optsched.online.simulator.run_simulation`) says
    what runs the basic model, the same schedule either way; ``extra["engine"]`` says which
    ran.
    """
    check_level(bound)
    check_time_limit(bound_time_limit, "--bound-time-limit")
    ready = prepare(policy, "simulate", seed=seed, time_limit=None, params=params)
    info, params = ready.info, ready.params
    if mode is not None and mode != instance.mode:
        instance = instance.with_mode(mode)
    info.check_mode(instance.mode)
    startup = info.start_up()  # a policy's solver packages, imported before it runs
    with method_running(info, (PolicyError,)):
        chosen = info.func(ready.options, seed)
        validate = getattr(chosen, "validate", None)  # optional: refuse an instance
        if validate is not None:
            validate(instance)
    if stream_to is not None and record:
        raise InputError("a streamed schedule (stream_to) is for runs that do not record it")
    cluster = execution_model(chosen) == "cluster"
    out = StreamedFile(stream_to) if stream_to is not None else None
    try:
        with method_running(info, (PolicyError,)):
            # the realised instance has the same name, jobs and GPUs
            streamer = [ScheduleStreamer(instance, out)] if out is not None else []
            # the engine checks the policy against its execution model's contract
            sim = run_simulation(
                instance,
                cast("Policy | ClusterPolicy", chosen),
                seed=seed,
                noise=noise,
                switch_cost=switch_cost,
                tick=tick,
                event_driven=event_driven,
                record=record,
                progress=progress,
                observers=streamer,
                engine=engine,
            )
        if out is not None:
            streamer[0].close()
            out.commit()
    finally:
        if out is not None:
            out.discard()
    extra: dict[str, Any]
    if cluster:  # the critical path ignores phases and placement factors: no floor
        extra = {
            "gpu_idle_s": sim.metrics["gpu_idle_s"],
            "mean_execution_s": sim.metrics["mean_execution_s"],
            "tick": declared(chosen, "tick"),
            "event_driven": declared(chosen, "event_driven"),
        }
        settings = getattr(chosen, "settings", None)  # a policy's full settings, if it says
        if isinstance(settings, dict):
            extra["settings"] = settings
    else:
        extra = {
            "clairvoyant": declared(chosen, "clairvoyant"),
            "noise": noise,
            "switch_cost": switch_cost,
            "tick": tick,
            "event_driven": event_driven,
        }
    objective, metrics, tolerance = sim.objective, sim.metrics, None
    if sim.schedule is not None:
        try:
            objective, metrics, tolerance = checked(sim.instance, sim.schedule, info)
        except ResolutionError as exc:  # say what may have put the tasks that late
            raise ResolutionError(
                f"{exc} (the simulated schedule: a long --tick, heartbeat "
                "or batch period may have delayed its starts)"
            ) from None
    extra["startup_s"] = startup + sim.startup_s
    if not cluster:
        extra.update(
            _regret(
                sim.instance,
                bound,
                bound_time_limit,
                objective,
                metrics,
                tolerance,
                progress,
                sim.schedule,
            )
        )
    report = getattr(chosen, "report", None)  # optional: what the policy did
    if callable(report):
        extra["policy"] = report()
    # honest output: without a recorded schedule nothing was checked
    extra.update(
        engine=sim.engine,
        checked=sim.schedule is not None,
        events=sim.events,
        decisions=sim.decisions,
        events_per_s=sim.events_per_s,
    )
    return Result(
        Status.FEASIBLE,
        method=policy,
        mode=instance.mode,
        objective=objective,
        bound=None,
        runtime_s=sim.runtime_s,
        seed=seed,
        params=params,
        metrics=metrics,
        solution=sim.schedule,
        extra=extra,
        simulation=sim,
        tolerance=tolerance,
        kind="simulate",
    )


def _regret(
    instance: Instance,
    level: str,
    time_limit: float | None,
    objective: float,
    metrics: Mapping[str, Any],
    tolerance: float | None,
    progress: bool = False,
    schedule: Schedule | None = None,
) -> dict[str, Any]:
    """The regret fields of an online result (:func:`simulate`) on its realised instance;
    ``tolerance`` is set when the objective is the checker's (of ``schedule``, the run's
    checked schedule). With ``progress``, a line on stderr for each part of a capacity bound
    solved on parts."""

    def report(k: int, parts: int, status: str, gain: float) -> None:
        print(part_line(k, parts, status, gain), file=sys.stderr, flush=True)

    heavy = progress and level in LP_LEVELS  # seconds to minutes: say so
    if heavy:
        print(bound_start_line(level, instance.mode), file=sys.stderr, flush=True)
    started = time.perf_counter()
    found = regret_bound(
        instance,
        level,
        objective=objective if tolerance is not None else None,
        makespan=metrics.get("makespan"),
        time_limit=time_limit,
        progress=report if progress else None,
        schedule=schedule if tolerance is not None else None,
    )
    if found is None:
        return {}
    took = time.perf_counter() - started
    if heavy:
        print(bound_end_line(found, instance.mode, took), file=sys.stderr, flush=True)
    fields = regret_fields(instance, found, objective, metrics, tolerance)
    return {**fields, "bound_seconds": took}


def part_line(k: int, parts: int, status: str, gain: float) -> str:
    """The progress line of part ``k`` of a capacity bound solved on parts."""
    return f"bound: LP on part {k}/{parts} of the longest jobs: {status}, +{gain:.6g}"


#: What the regret levels that solve an LP compute, as progress lines name it.
_LP_LEVEL_NAMES = {
    "capacity": "class-capacity LP",
    "lagrangian": "class-capacity LP, then the Lagrangian bound",
}


def bound_start_line(level: str, mode: str) -> str:
    """The progress line as an LP level's bound (``capacity``, ``lagrangian``) starts."""
    return f"bound: {_LP_LEVEL_NAMES[level]}, {mode} mode ..."


def bound_end_line(found: RegretBound, mode: str, seconds: float) -> str:
    """The progress line of an LP level's bound ``found`` in ``seconds``: its value and
    source, and how the LP (and the Lagrangian bound) ended."""
    status = found.parts.get("capacity_parts_status", found.parts.get("capacity_status"))
    more = found.parts.get("lagrangian_status")
    return (
        f"bound: {mode} mode: {found.value:,.6g} s ({found.source}; LP {status}"
        + ("" if more is None else f"; Lagrangian {more}")
        + f") in {seconds:.1f} s"
    )


def regret_fields(
    instance: Instance,
    found: RegretBound,
    objective: float,
    metrics: Mapping[str, Any],
    tolerance: float | None,
) -> dict[str, Any]:
    """The regret fields of a run of ``objective`` (and ``metrics``; ``tolerance`` is set when
    the objective is the checker's) on ``instance`` against the bound ``found`` on that
    instance: every part, ``regret_bound`` and, when the bound is positive, ``regret``,
    ``regret_source`` and ``regret_jct``. A bound above the objective beyond its tolerance
    is an OptschedError (a bug in the bound)."""
    if found.value - objective > tolerance_of(objective, tolerance):
        raise OptschedError(
            f"the {found.source} bound {found.value} exceeds the run's objective {objective}: "
            "a bug in the bound"
        )
    fields: dict[str, Any] = {**found.parts, "regret_bound": found.value}
    if found.value > 0:  # certified: no schedule of the instance does better
        fields.update(regret=regret_ratio(objective, found.value), regret_source=found.source)
        least_jct = found.value - weighted_arrivals(instance)
        if least_jct > 0 and "total_weighted_jct" in metrics:
            fields["regret_jct"] = regret_ratio(metrics["total_weighted_jct"], least_jct)
    return fields
