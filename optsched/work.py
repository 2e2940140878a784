"""Deterministic work budgets: an anytime method's effort counted, not timed, so that a run
repeats exactly whatever the machine's load.

A wall-clock time limit makes an anytime method's result depend on the machine and on what
else runs beside it: a local search makes fewer moves on a loaded machine, and its schedule
changes. A *work budget* (the ``work`` option of every anytime method, in *work-seconds*)
counts the method's own operations instead:

- CP-SAT's deterministic time, for the methods that search with CP-SAT (``cpsat``,
  ``cpsat-pergpu``, ``lns``, Hare's exact relaxation, exact placement), scaled by
  :data:`CPSAT_PER_WORK_SECOND` (CP-SAT's deterministic seconds take 1-15 s of CPU on this
  project's models, the most on large ones: a work-second of these methods strays the most,
  0.4-5 s); ``lns`` adds each neighbourhood's model copy;
- for optsched's own searches, a count of their inner operations (events decoded, steps,
  dynamic-programming cells, fitness evaluations) divided by a rate measured on the 2-core
  reference machine, so that one work-second takes about one second there, unloaded
  (``benchmarks/work_rates.py`` measures the ratio on the current machine). A method with
  two engines of the same result (``priority-search``: Python or compiled) has a rate for
  each, so a budget buys about the same seconds with either and more moves with the faster;
  its result then depends on the engine that ran (``extra.engine``) as well.

Guarantee: with a work budget and one solver thread (the default), a method returns the same
result for the same instance, options, seed (and engine), under any load; the wall-clock limit
still applies as a safety net, and a result stopped by it says so (``extra.stopped``). A
budget is exact to one unit of the method's count (one neighbourhood of ``lns``, one move,
one iteration, one generation): it is checked between units, never inside one.
"""

from __future__ import annotations

from dataclasses import field, fields
from typing import Any

from optsched.options import Options, number

#: What the ``work`` option's help says, for every method that has one.
WORK_HELP = (
    "deterministic work budget in work-seconds (about seconds on a 2-core machine, unloaded; "
    "a run repeats exactly under any load); default: none, the time limit alone"
)


#: Field metadata that marks an options class's ``work`` field as a work budget (a plug-in
#: may have a ``work`` option of another meaning).
_MARK = "optsched.work-budget"


#: CP-SAT's deterministic seconds in one work-second: fitted on the 2-core reference machine
#: (``benchmarks/work_rates.py``: a deterministic second took 2 s of CPU on 10 jobs and up
#: to 15 s on 30 jobs of 10-30 rounds; this is the middle).
CPSAT_PER_WORK_SECOND = 0.2


def cpsat_limit(work: float) -> float:
    """CP-SAT's ``max_deterministic_time`` for a budget of ``work`` work-seconds."""
    return work * CPSAT_PER_WORK_SECOND


def work_option(help: str = WORK_HELP) -> Any:
    """The ``work`` option field (a number > 0, or None: no work budget), marked as a work
    budget for :func:`takes_work_budget`."""
    spec: Any = number(help, None, open_low=True)
    return field(default=None, metadata={**spec.metadata, _MARK: True})


def takes_work_budget(options: type[Options]) -> bool:
    """Whether a method's options class has a work budget (a ``work`` field made by
    :func:`work_option`)."""
    return any(f.name == "work" and f.metadata.get(_MARK) for f in fields(options))


class WorkMeter:
    """Counts a method's work in its own units against a budget of ``limit`` work-seconds
    (None: unlimited), ``per_second`` units making one work-second."""

    def __init__(self, limit: float | None, per_second: float = 1.0) -> None:
        self.limit, self.per_second, self.units = limit, per_second, 0.0

    def spend(self, units: float) -> None:
        self.units += units

    @property
    def spent(self) -> float:
        """Work-seconds spent so far."""
        return self.units / self.per_second

    @property
    def exhausted(self) -> bool:
        return self.limit is not None and self.spent >= self.limit

    def left(self) -> float | None:
        """Work-seconds left (None: unlimited), at least 0."""
        return None if self.limit is None else max(0.0, self.limit - self.spent)


def cpsat_work(solver: Any) -> float:
    """The work-seconds a CP-SAT ``solver`` spent (its deterministic time, scaled)."""
    return float(solver.deterministic_time) / CPSAT_PER_WORK_SECOND


def cpsat_work_spent(solver: Any, work: float | None) -> bool:
    """True when a CP-SAT ``solver`` that did not prove optimality stopped at its work
    budget (``max_deterministic_time`` = :func:`cpsat_limit` of ``work``) rather than at its
    wall-clock limit."""
    return work is not None and solver.deterministic_time >= 0.99 * cpsat_limit(work)
