"""The ``lp-bound`` method: the ECT schedule with the time-indexed LP bound.

For gap tables: a certified lower bound from the grouped time-indexed LP relaxation
(:func:`optsched.exact.bounds.solve_time_indexed_lp`), restricted by the deadlines of the best
incumbent at hand (the ECT schedule, or ``--hint`` when it is feasible and better).

Guarantees: the schedule is always the incumbent (status ``feasible`` at worst); the method
ends within ``--time-limit`` (plus HiGHS's reaction time, at most a second: it is stopped at
its deadline, :mod:`optsched.exact.highs`): the incumbent costs one ECT schedule, nothing is
checked before the LP, and when the limit runs out before or while the LP is built or solved,
the Result has no LP bound (the critical-path bound remains), ``extra.lp_status`` says
``time limit (build)`` or ``time limit (solver)`` and ``extra.stopped`` ``time limit``. A
Ctrl-C stops HiGHS within a second: the incumbent is returned, marked ``interrupted``, with
``lp_status`` ``interrupted``. An LP whose
estimated size is too large for :func:`~optsched.budget.lp_too_large` is refused with an
:class:`~optsched.errors.InputError` naming ``time_unit`` and the estimate (the adaptive grid
is coarsened first when ``time_unit`` is not given).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from optsched.budget import EXACT_TIME_LIMIT, Budget, lp_too_large, size_text
from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import incumbent
from optsched.errors import InputError
from optsched.exact.bounds import lp_time_unit, solve_time_indexed_lp, time_indexed_lp_size
from optsched.instance import Instance
from optsched.options import Options, number
from optsched.registry import register


@dataclass(frozen=True)
class LpBoundOptions(Options):
    """Options of ``lp-bound``."""

    time_unit: float | None = number("grid step of the LP (default: adaptive)", open_low=True)


@register(
    "lp-bound",
    options=LpBoundOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    imports=("highspy", "scipy.sparse"),
    description="ECT schedule + time-indexed LP lower bound (HiGHS), both modes",
)
def _lp_bound(instance: Instance, context: SolveContext[LpBoundOptions]) -> MethodOutput:
    budget = Budget(context.time_limit)
    start = incumbent(instance, context.hint, budget)
    context.report(start.objective)  # progress lines show it while the LP solves
    given = context.options.time_unit
    unit = lp_time_unit(instance, start.makespan, given, upper=start.objective)
    variables, nonzeros = time_indexed_lp_size(instance, start.objective, unit)
    if lp_too_large(variables, nonzeros):
        if given is not None:
            raise InputError(
                f"time_unit {unit:g}: the time-indexed LP would have "
                f"{size_text(variables, nonzeros)}; choose a coarser "
                "time_unit"
            )
        raise InputError(
            f"lp-bound: the adaptive grid could not be made to fit: at its "
            f"coarsest (time_unit {unit:g}, no coarser than the shortest compute "
            f"time) the time-indexed LP would have "
            f"{size_text(variables, nonzeros)}; this instance is too large "
            "for lp-bound (try --method hare-lp, whose interval LP scales)"
        )
    extra: dict[str, Any] = {"time_unit": unit, "start": start.origin, "lp_nonzeros": nonzeros}
    if budget.expired():  # the incumbent took the time: no LP
        return MethodOutput(
            schedule=start.schedule,
            extra={
                **extra,
                "lp_proved": False,
                "lp_status": "time limit (build)",
                "stopped": "time limit",
            },
        )
    lp = solve_time_indexed_lp(
        instance, start.objective, unit, time_limit=budget.left(), check_size=False
    )
    interrupted = lp.status == "interrupted"
    return MethodOutput(
        schedule=start.schedule,
        bound=lp.bound,
        extra={
            **extra,
            "lp_proved": lp.bound is not None,
            "lp_status": lp.status,
            "stopped": "interrupted"
            if interrupted
            else "time limit"
            if lp.status.startswith("time limit")
            else "done",
            "interrupted": interrupted,
        },
    )
