"""Time and size limits: the limits a run gets, and those of the exact models and relaxations.

Time: every method that builds a model runs under one :class:`Budget` started when the method
is called. Model builders call :meth:`Budget.check` between blocks of rows or columns (per job,
per round) and raise :class:`OutOfTime` once it is spent; a solver is handed only
:meth:`Budget.left`. The method catches :class:`OutOfTime` and returns what it has certified so
far (a checked heuristic schedule, the critical-path bound), never nothing and never late by
more than one block of the build.

Size: a model whose estimated size exceeds a cap below is never built, so a request that
cannot fit in the memory of a 24 GiB machine fails fast instead of swapping or being killed.
The caps are measured, with head-room, on this project's builders (see the constants) and
comfortably admit every benchmark of ``benchmarks/``.
"""

from __future__ import annotations

import math
import numbers
import time
from typing import TYPE_CHECKING, Any

from optsched.errors import InputError
from optsched.limits import MAX_VALUE

if TYPE_CHECKING:
    from optsched.instance import Instance

#: Default time limits (s) of the exact methods and of Hare's relaxation (its step 1 takes
#: up to about 3 minutes at the paper's scale on a 2-core machine).
EXACT_TIME_LIMIT, RELAXATION_TIME_LIMIT = 60.0, 300.0

#: Estimated peak memory above which a model is not built: a quarter of a 24 GiB machine, so
#: that two benchmark workers and everything else still fit.
MAX_MODEL_BYTES = 6 * 2**30

#: Constraint non-zeros above which an LP or MILP is not built whatever its memory estimate
#: (beyond this no solve finishes in any time limit used here).
MAX_NONZEROS = 20_000_000


def lp_bytes(variables: int, nonzeros: int, *, pulp: bool = False) -> float:
    """Estimated peak memory of an LP solved by HiGHS (through scipy), or of a MILP built
    with PuLP and then copied into the solver (``pulp``). Measured on this project's models:
    HiGHS takes about 2 KiB per variable and 0.15 KiB per non-zero across presolve and
    simplex; PuLP's Python objects add about 1 KiB per variable and 0.2 KiB per non-zero."""
    if pulp:
        return 3072.0 * variables + 350.0 * nonzeros
    return 2048.0 * variables + 150.0 * nonzeros


def lp_too_large(variables: int, nonzeros: int, *, pulp: bool = False) -> bool:
    """True when the model exceeds :data:`MAX_MODEL_BYTES` or :data:`MAX_NONZEROS`."""
    return nonzeros > MAX_NONZEROS or lp_bytes(variables, nonzeros, pulp=pulp) > MAX_MODEL_BYTES


def size_text(variables: int, nonzeros: int, *, pulp: bool = False) -> str:
    """``about 3.7e+06 non-zeros, 1e+06 variables, ~2.4 GiB; at most … fit`` for messages."""
    gib = lp_bytes(variables, nonzeros, pulp=pulp) / 2**30
    return (
        f"about {fmt(nonzeros)} non-zeros and {fmt(variables)} variables (~{gib:.2g} GiB; "
        f"at most {fmt(MAX_NONZEROS)} non-zeros and {MAX_MODEL_BYTES / 2**30:g} GiB fit)"
    )


#: Optional intervals (task or round × group of GPUs) above which the CP-SAT scheduling model
#: (``cpsat``, ``cpsat-pergpu``) is not built: CP-SAT took 1.1 GiB for 200,000 intervals
#: (a Hare-scale instance, one worker), about 6 KiB each.
MAX_CPSAT_INTERVALS = 1_000_000

#: (task, eligible GPU) pairs above which Hare_Sched_RL (``hare``, ``hare-ect``) is not built:
#: CP-SAT took 0.6 GiB for 64,000 pairs, about 10 KiB each.
MAX_RL_PAIRS = 500_000

#: Below this many seconds left, a solver is not started at all.
MIN_SOLVER_SECONDS = 0.01

#: Freeing a CP-SAT model built in Python takes about this share of the time building it
#: took (measured 0.15 on 3e5 intervals: 1.2 s after an 8 s build); a build stops while
#: that much is left, and a solve keeps it for the end.
TEARDOWN_SHARE = 0.25


#: The least time limit a method is given (s): what is left of a limit once start-up,
#: loading and the reserve for checking are taken off, when that is less.
MIN_METHOD_SECONDS = 0.001

#: Seconds the checker takes per task (measured 30-50 µs on this project's 2-core machines,
#: gang mode the slower), reserved from a method's share of the time limit.
CHECK_SECONDS_PER_TASK = 4e-5


#: A Ctrl-C ends every method within this many seconds (docs/promises.md), with its best
#: result when it can be checked in time (:func:`check_seconds`), else with exit 130.
CTRL_C_SECONDS = 2.0

#: Seconds kept for printing a result and ending the process.
EXIT_SECONDS = 0.3


def check_time_limit(time_limit: Any, option: str = "--time-limit") -> None:
    """Refuse (InputError naming ``option``) a time limit that is not a finite number in
    (0, MAX_VALUE]; None means unlimited."""
    if time_limit is None:
        return
    if (
        isinstance(time_limit, bool)
        or not isinstance(time_limit, numbers.Real)
        or not math.isfinite(float(time_limit))
        or not 0 < float(time_limit) <= MAX_VALUE
    ):
        raise InputError(
            f"{option}: time limit must be > 0 and a finite number of "
            f"seconds at most {MAX_VALUE:g}, got {time_limit!r}"
        )


def method_share(time_limit: float | None, started: float | None, reserve: float) -> float | None:
    """The seconds a method gets of ``time_limit`` (None: unlimited) counted from
    ``started`` (a ``time.perf_counter()`` value; None: now), ``reserve`` seconds kept for
    what follows it; at least :data:`MIN_METHOD_SECONDS`, so a method always returns its
    fallback (at worst the ECT schedule) rather than nothing."""
    if time_limit is None:
        return None
    spent = 0.0 if started is None else max(0.0, time.perf_counter() - started)
    return max(time_limit - spent - reserve, MIN_METHOD_SECONDS)


def check_seconds(instance: Instance) -> float:
    """The time :func:`optsched.check.check` is expected to take on a schedule of
    ``instance`` (:data:`CHECK_SECONDS_PER_TASK` per task)."""
    return CHECK_SECONDS_PER_TASK * sum(job.n_tasks for job in instance.jobs)


def handover_seconds(variables: int, nonzeros: int) -> float:
    """Seconds an LP of this size spends outside HiGHS's time limit: handing it over through
    scipy, HiGHS's set-up and presolve up to its first time check, reading the solution back
    (measured: about 0.15 µs per non-zero and 1-3 µs per variable). Reserved from the
    solver's share of the budget, so the limit holds on large models too."""
    return 2e-7 * nonzeros + 2e-6 * variables


class OutOfTime(Exception):
    """Raised by :meth:`Budget.check` inside a model build once the time limit is spent; the
    method that owns the budget catches it."""


class Budget:
    """A wall-clock budget of ``limit`` seconds (``None``: unlimited) from construction."""

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float | None:
        """Seconds left (≥ 0), or ``None`` when unlimited."""
        if self.limit is None:
            return None
        return max(0.0, self.limit - self.elapsed())

    def solver_seconds(self, variables: int, nonzeros: int) -> float | None:
        """The time limit to hand a solver of an LP of this size: the seconds left less its
        hand-over (:func:`handover_seconds`), which the solver's own limit does not cover
        (may be below :data:`MIN_SOLVER_SECONDS`: the caller decides); None when unlimited."""
        left = self.left()
        return None if left is None else left - handover_seconds(variables, nonzeros)

    def expired(self) -> bool:
        """True once fewer than :data:`MIN_SOLVER_SECONDS` are left."""
        left = self.left()
        return left is not None and left < MIN_SOLVER_SECONDS

    def check(self, reserve: float = 0.0) -> None:
        """Raise :class:`OutOfTime` when :meth:`expired`, or when fewer than ``reserve``
        seconds are left (kept for what must follow, e.g. freeing a partly built model)."""
        left = self.left()
        if left is not None and left < MIN_SOLVER_SECONDS + reserve:
            raise OutOfTime


def fmt(count: float) -> str:
    """A count in messages: ``1.2e+07`` style above 10⁵, plain below."""
    return f"{count:.2g}" if count >= 1e5 else f"{int(count)}"


def solve_stoppable(solver: Any, model: Any, callback: Any = None) -> tuple[Any, bool]:
    """``solver.solve(model, callback)`` (CP-SAT) in a thread of its own while this thread
    waits in steps of 50 ms, where Python handles signals: a Ctrl-C (KeyboardInterrupt) stops
    the search (``stop_search``, honoured within milliseconds). Returns (the status, whether
    a Ctrl-C stopped it).

    Every CP-SAT search goes through here, with ``catch_sigint_signal`` off: CP-SAT's own
    SIGINT handler acts only when the signal reaches the thread that started the search
    (its handler is thread-local), so a Ctrl-C delivered to one of its workers aborted the
    process or was lost (the search ran on to its time limit). Python's handler takes the
    signal on any thread.

    After a Ctrl-C the search is asked to stop again at every step until it has: a stop
    asked before the thread has entered ``solve`` does nothing (ortools 9.15), and a
    second Ctrl-C while the search winds down is absorbed, since leaving with the search
    still running in C++ would abort the interpreter at exit."""
    import threading

    solver.parameters.catch_sigint_signal = False

    done = threading.Event()
    out: dict[str, Any] = {}

    def search() -> None:
        try:
            out["status"] = (
                solver.solve(model, callback) if callback is not None else solver.solve(model)
            )
        except BaseException as exc:  # handed to the waiting thread
            out["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=search, name="optsched-cpsat", daemon=True)
    interrupted = False
    try:
        thread.start()
        while not done.wait(0.05):
            pass
    except KeyboardInterrupt:
        interrupted = True
    asked = time.perf_counter()
    while interrupted and not done.is_set():  # (Thread.join, interrupted, says it ended)
        if not thread.is_alive() and time.perf_counter() - asked > 1.0:
            raise KeyboardInterrupt  # a Ctrl-C inside start(): the thread never ran
        try:
            solver.stop_search()
            done.wait(0.05)
        except KeyboardInterrupt:  # another Ctrl-C: the search is stopping already
            pass
    if "error" in out:
        raise out["error"]
    return out["status"], interrupted
