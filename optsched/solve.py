"""The ``solve`` verb: :func:`solve` runs a registered ``solve`` method
(:mod:`optsched.registry`, the contract in :mod:`optsched.contracts`) and checks its schedule.

Every schedule a method returns goes through the independent checker; the Result's objective
and metrics are the checker's, and its bound is the best of the method's own certified bound
and the critical-path bound (both kept in ``extra`` as ``bound_method`` and
``bound_critical_path``). What a method returns is validated (:mod:`optsched.runtime`): a
result of the wrong type, a bound that is not a finite number, a schedule the checker rejects
and a bound above the checked objective are refused as :class:`~optsched.errors.MethodError`
naming the method, never reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TextIO

from optsched.budget import check_seconds
from optsched.contracts import Listener, MethodOutput, SolveContext
from optsched.critical_path import critical_path_bound
from optsched.errors import InputError, MethodError
from optsched.instance import Instance
from optsched.options import Options
from optsched.registry import MethodInfo, prepare
from optsched.result import _RESULT_KEYS, Result, Status, is_optimal
from optsched.runtime import (
    check_bound,
    checked,
    finite_bound,
    in_time_after_ctrl_c,
    listener_of,
    run_timed,
    start_within,
)
from optsched.schedule import Schedule


def check_hint(instance: Instance, hint: Schedule) -> None:
    """Refuse (InputError naming the hint) a hint schedule of another instance, or one naming
    jobs or GPUs the instance does not have."""
    if hint.instance != instance.name:
        raise InputError(
            f"--hint: the schedule is for instance {hint.instance!r}, not {instance.name!r}"
        )
    for t in hint.tasks:
        if t.job not in instance.job_index:
            raise InputError(f"--hint: unknown job {t.job!r}")
        if t.gpu not in instance.gpu_index:
            raise InputError(f"--hint: unknown GPU {t.gpu!r} (task of job {t.job!r})")


def solve(
    instance: Instance,
    method: str,
    *,
    mode: str | None = None,
    time_limit: float | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | Options | None = None,
    hint: Schedule | None = None,
    progress: TextIO | Listener | None = None,
    started: float | None = None,
) -> Result[Schedule]:
    """Solve ``instance`` with a registered ``solve`` method and check the schedule.

    ``time_limit`` (seconds; default: the method's ``default_time_limit``, see
    ``optsched methods``) bounds the whole call, counted from ``started`` (a
    ``time.perf_counter()`` value; default: when ``solve`` is called; the command line
    passes its own start): the method gets what is left once its solver packages are
    imported, less the time checking its schedule is expected to take
    (:func:`~optsched.budget.check_seconds`), never less than
    :data:`~optsched.budget.MIN_METHOD_SECONDS` (then its solver packages are not
    imported first: it has only the time to return its fallback). The limit given is in
    ``extra["time_limit"]``, the method's share in ``extra["method_time_limit"]``.
    ``progress``: a text stream (e.g. ``sys.stderr``) on which a long run prints a line
    every few seconds (elapsed time, incumbent, bound, gap), or a callable
    ``progress(incumbent, bound)`` receiving every report (from the solver's thread where
    it runs in one, as CP-SAT's searches do); None: silent.

    Raises
    ------
    InputError
        Unknown method, a mode the method does not support, an unknown parameter, or an
        instance that is invalid in the requested mode.
    MethodError
        (an :class:`OptschedError`) If the method raises anything but an InputError (or
        exits), returns something other than a :class:`MethodOutput`, a schedule the checker
        rejects, a bound that is not a finite number, or a bound above the checked
        objective: all bugs in the method, never silently repaired. The message names the
        method and its plug-in module.
    """
    ready = prepare(method, "solve", seed=seed, time_limit=time_limit, params=params)
    info, time_limit, params = ready.info, ready.time_limit, ready.params
    mode = mode or instance.mode
    info.check_mode(mode)
    if instance.needs_cluster_model:
        raise InputError(
            f"method {method!r} does not model phases, GPU sharing or placement "
            "factors (instance@2); simulate a cluster policy such as liquid"
        )
    if hint is not None:
        check_hint(instance, hint)
    inst = instance if mode == instance.mode else instance.with_mode(mode)
    listener = listener_of(progress, lambda: critical_path_bound(inst))
    share, startup = start_within(info.start_up, time_limit, started, check_seconds(inst))
    ctx = SolveContext(mode, ready.options, share, seed, MappingProxyType(params), hint, listener)
    out, runtime = run_timed(info, lambda: info.func(inst, ctx), listener)
    _check_output(info, out)
    if out.extra.get("interrupted") and out.schedule is not None:
        in_time_after_ctrl_c(inst)
    method_bound = finite_bound(info, out.bound)

    bound = critical_path_bound(inst)
    extra: dict[str, Any] = {
        **out.extra,
        "bound_critical_path": bound,
        "bound_method": method_bound,
        "time_limit": time_limit,
        "method_time_limit": share,
        "startup_s": startup,
    }
    # the gap is to the better of the two bounds; say which
    extra["bound_source"] = "critical_path"
    if method_bound is not None and method_bound > bound:
        bound, extra["bound_source"] = method_bound, "method"
    common: dict[str, Any] = {
        "method": method,
        "mode": mode,
        "runtime_s": runtime,
        "seed": seed,
        "params": params,
        "extra": extra,
    }
    if out.schedule is None:
        status = Status(out.status or Status.UNKNOWN)
        if status in (Status.OPTIMAL, Status.FEASIBLE):
            raise MethodError(f"{info.label} reported {status} without a schedule")
        return Result(
            status, objective=None, bound=None if status is Status.INFEASIBLE else bound, **common
        )

    schedule = Schedule(out.schedule.instance, out.schedule.tasks, mode)
    objective, metrics, tolerance = checked(inst, schedule, info)
    check_bound(info, bound, objective, tolerance=tolerance)
    status = Status.OPTIMAL if is_optimal(objective, bound, tolerance) else Status.FEASIBLE
    return Result(
        status,
        objective=objective,
        bound=bound,
        metrics=metrics,
        solution=schedule,
        tolerance=tolerance,
        **common,
    )


def _check_output(info: MethodInfo[Any], out: object) -> None:
    """Refuse (MethodError naming the method) a return value that is not a well-formed
    :class:`MethodOutput`: wrong type, schedule, status or extra."""
    if not isinstance(out, MethodOutput):
        raise MethodError(f"{info.label} returned {type(out).__name__}, not a MethodOutput")
    if out.schedule is not None and not isinstance(out.schedule, Schedule):
        raise MethodError(
            f"{info.label} returned a schedule of type "
            f"{type(out.schedule).__name__}, not a Schedule"
        )
    if out.status is not None and out.status not in tuple(Status):
        raise MethodError(
            f"{info.label} returned status {out.status!r} (one of {', '.join(Status)})"
        )
    if not isinstance(out.extra, Mapping):
        raise MethodError(
            f"{info.label} returned extra of type {type(out.extra).__name__}, not a mapping"
        )
    clash = sorted(_RESULT_KEYS & set(out.extra))
    if clash:
        raise MethodError(
            f"{info.label} returned extra field {clash[0]!r}, which clashes with a Result field"
        )
