"""The ``lp-bound`` method: the ECT schedule with the time-indexed LP bound.

For gap tables: a certified lower bound from the grouped time-indexed LP relaxation
(:func:`optsched.exact.bounds.solve_time_indexed_lp`), restricted by the deadlines of the best
incumbent at hand (the ECT schedule, or ``--hint`` when it is feasible and better).

Guarantees: the schedule is always the checked incumbent (status ``feasible`` at worst); the
method ends within ``--time-limit`` (plus HiGHS's reaction time): when the limit runs out while
the LP is built or solved, the Result has no LP bound (the critical-path bound remains) and
``extra.lp_status`` says ``time limit (build)`` or ``time limit (solver)``. An LP whose
estimated size is too large for :func:`~optsched.exact.budget.lp_too_large` is refused with an
:class:`~optsched.errors.InputError` naming ``time_unit`` and the estimate (the adaptive grid
is coarsened first when ``time_unit`` is not given).
"""

from __future__ import annotations

from dataclasses import dataclass

from optsched.check import CheckReport, check
from optsched.errors import InputError
from optsched.exact.bounds import lp_time_unit, solve_time_indexed_lp
from optsched.exact.budget import Budget, size_text
from optsched.heuristics.list_scheduling import ect_schedule
from optsched.instance import Instance
from optsched.options import Options, number
from optsched.schedule import Schedule
from optsched.solve import EXACT_TIME_LIMIT, MethodOutput, SolveContext, register


@dataclass(frozen=True)
class LpBoundOptions(Options):
    """Options of ``lp-bound``."""

    time_unit: float | None = number("grid step of the LP (default: adaptive)",
                                     open_low=True)


def incumbent(instance: Instance, hint: Schedule | None) -> tuple[Schedule, CheckReport]:
    """The ECT schedule, or ``hint`` when it is feasible and better, with its check report
    (objective and metrics known)."""
    schedule: Schedule = ect_schedule(instance)
    report = check(instance, schedule)
    if hint is not None:
        own = check(instance, Schedule(instance.name, hint.tasks, instance.mode))
        if own.feasible and own.objective is not None and report.objective is not None \
                and own.objective < report.objective:
            schedule, report = Schedule(instance.name, hint.tasks, instance.mode), own
    assert report.objective is not None and report.metrics is not None
    return schedule, report


@register("lp-bound", options=LpBoundOptions,
          default_time_limit=EXACT_TIME_LIMIT, imports=("scipy.optimize",),
          description="ECT schedule + time-indexed LP lower bound (HiGHS), both modes")
def _lp_bound(instance: Instance, context: SolveContext) -> MethodOutput:
    budget = Budget(context.time_limit)
    schedule, report = incumbent(instance, context.hint)
    assert report.objective is not None and report.metrics is not None
    given = context.options_as(LpBoundOptions).time_unit
    unit = lp_time_unit(instance, report.metrics["makespan"], given, upper=report.objective)
    lp = solve_time_indexed_lp(instance, report.objective, unit, time_limit=budget.left())
    if lp.status == "too large":
        if given is not None:
            raise InputError(f"time_unit {unit:g}: the time-indexed LP would have "
                             f"{size_text(lp.variables, lp.nonzeros)}; choose a coarser "
                             "time_unit")
        raise InputError(f"lp-bound: the adaptive grid could not be made to fit: at its "
                         f"coarsest (time_unit {unit:g}, no coarser than the shortest compute "
                         f"time) the time-indexed LP would have "
                         f"{size_text(lp.variables, lp.nonzeros)}; this instance is too large "
                         "for lp-bound (try --method hare-lp, whose interval LP scales)")
    return MethodOutput(schedule=schedule, bound=lp.bound,
                        extra={"time_unit": unit, "lp_proved": lp.bound is not None,
                               "lp_status": lp.status, "lp_nonzeros": lp.nonzeros})
