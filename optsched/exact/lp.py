"""The ``lp-bound`` method: the ECT schedule with the time-indexed LP bound.

For gap tables: a certified lower bound from the grouped time-indexed LP relaxation
(:func:`optsched.exact.bounds.time_indexed_lp_bound`), restricted by the deadlines of the best
incumbent at hand (the ECT schedule, or ``--hint`` when it is feasible and better).
"""

from __future__ import annotations

from optsched.check import check
from optsched.exact.bounds import lp_time_unit, time_indexed_lp_bound
from optsched.heuristics.list_scheduling import ect_schedule
from optsched.instance import Instance
from optsched.schedule import Schedule
from optsched.solve import MethodOutput, SolveContext, register


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
    unit = lp_time_unit(instance, report.metrics["makespan"], context.params)
    bound = time_indexed_lp_bound(instance, report.objective, unit,
                                  time_limit=context.time_limit)
    return MethodOutput(schedule=schedule, bound=bound,
                        extra={"time_unit": unit, "lp_proved": bound is not None})
