"""The ``lp-bound`` method: the ECT schedule with the time-indexed LP bound.

For gap tables: a certified lower bound from the grouped time-indexed LP relaxation
(:func:`optsched.exact.bounds.time_indexed_lp_bound`), restricted by the deadlines of the best
incumbent at hand (the ECT schedule, or ``--hint`` when it is feasible and better).
"""

from __future__ import annotations

import math

from optsched.check import check
from optsched.errors import InputError
from optsched.exact.bounds import time_indexed_lp_bound
from optsched.exact.grid import default_time_unit
from optsched.heuristics.list_scheduling import ect_schedule
from optsched.instance import Instance
from optsched.schedule import Schedule
from optsched.solve import MethodOutput, SolveContext, register

#: Above this many grid steps in the horizon, the default grid is coarsened.
MAX_STEPS = 400


def lp_time_unit(instance: Instance, horizon: float, given: str | None) -> float:
    """``given``, else the data's natural unit, coarsened to at most MAX_STEPS steps (a
    coarser grid only weakens the bound: times are rounded down) but never coarser than the
    shortest compute time."""
    if given is not None:
        try:
            unit = float(given)
        except ValueError:
            raise InputError(f"time_unit must be a number, got {given!r}") from None
        if not unit > 0:
            raise InputError("time_unit must be > 0")
        return unit
    unit = default_time_unit(instance)
    shortest = float(instance.compute[instance.compute < math.inf].min())
    while horizon / unit > MAX_STEPS and unit * 10 <= shortest:
        unit *= 10
    return unit


@register("lp-bound", params={"time_unit": "grid step of the LP (default: adaptive)"},
          description="ECT schedule + time-indexed LP lower bound (HiGHS), both modes")
def _lp_bound(instance: Instance, context: SolveContext) -> MethodOutput:
    schedule: Schedule = ect_schedule(instance)
    report = check(instance, schedule)
    if context.hint is not None:
        own = check(instance, Schedule(instance.name, context.hint.tasks, instance.mode))
        if own.feasible and own.objective is not None and report.objective is not None \
                and own.objective < report.objective:
            schedule, report = Schedule(instance.name, context.hint.tasks, instance.mode), own
    assert report.objective is not None and report.metrics is not None
    unit = lp_time_unit(instance, report.metrics["makespan"], context.params.get("time_unit"))
    bound = time_indexed_lp_bound(instance, report.objective, unit,
                                  time_limit=context.time_limit)
    return MethodOutput(schedule=schedule, bound=bound,
                        extra={"time_unit": unit, "lp_proved": bound is not None})
