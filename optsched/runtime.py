"""What every verb (``solve``, ``simulate``, ``place``) does around the method it runs:
guard it (:func:`method_running`), time it (:func:`run_timed`), show its progress
(:class:`ProgressLine`) and validate what it returns (:func:`finite_bound`,
:func:`check_bound`, :func:`checked`).

Guarantees (docs/promises.md):

- **A method that raises is a bug in the method.** Anything other than an
  :class:`~optsched.errors.InputError` escaping a method while it runs, ``SystemExit`` and a
  ``KeyboardInterrupt`` the method raised itself included, becomes a
  :class:`~optsched.errors.MethodError` (exit 70 on the command line) reading "method 'NAME'
  (plug-in MODULE) raised TYPE: message", never a silent exit with the method's own code. Only
  a genuine Ctrl-C (SIGINT received while the method runs, in the main thread) still aborts as
  ``KeyboardInterrupt``.
- **What a method returns is validated.** A bound that is not a finite number (NaN,
  ±Infinity), a non-finite checked objective, a bound above the checked objective and a
  schedule the checker rejects are refused as :class:`~optsched.errors.MethodError` naming the
  method, never reported.
"""

from __future__ import annotations

import importlib
import math
import numbers
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from types import FrameType
from typing import Any, Protocol, TextIO, TypeVar

from optsched.budget import (
    CTRL_C_SECONDS,
    EXIT_SECONDS,
    MIN_METHOD_SECONDS,
    check_seconds,
    method_share,
)
from optsched.check import check
from optsched.contracts import Listener
from optsched.errors import InputError, MethodError
from optsched.instance import Instance
from optsched.result import tolerance_of
from optsched.schedule import Schedule

T = TypeVar("T")


class Named(Protocol):
    """What messages need of a method: how to name it, and its plug-in module (None for a
    built-in); :class:`~optsched.registry.MethodInfo` is one."""

    @property
    def label(self) -> str: ...

    @property
    def plugin(self) -> str | None: ...


def raised(exc: BaseException) -> str:
    """``TYPE: first line of the message`` (just ``TYPE`` without a message)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


#: When the last SIGINT seen by :func:`_sigint_watch` arrived (``time.perf_counter()``).
_sigint_at: list[float | None] = [None]


@contextmanager
def _sigint_watch() -> Iterator[list[bool]]:
    """Record whether SIGINT arrives (main thread, Python-level handler only); the handler in
    place is still called, so a genuine Ctrl-C still raises KeyboardInterrupt."""
    hit = [False]
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield hit
        return
    handler = previous

    def on_sigint(signum: int, frame: FrameType | None) -> Any:
        hit[0] = True
        _sigint_at[0] = time.perf_counter()
        return handler(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield hit
    finally:
        signal.signal(signal.SIGINT, handler)


@contextmanager
def method_running(
    method: Named, passthrough: tuple[type[BaseException], ...] = ()
) -> Iterator[None]:
    """Run the body as ``method``: an :class:`InputError`, a :class:`MethodError`, one of
    ``passthrough`` and a genuine Ctrl-C propagate; anything else raised (``SystemExit`` and a
    ``KeyboardInterrupt`` the method raised itself included) becomes a :class:`MethodError`
    "method 'NAME' (plug-in MODULE) raised TYPE: message"."""
    keep: tuple[type[BaseException], ...] = (InputError, MethodError, *passthrough)
    with _sigint_watch() as hit:
        try:
            yield
        except InputError as exc:  # bad input; a plug-in's message is prefixed with its name
            if method.plugin is None or str(exc).startswith(method.label):
                raise
            raise type(exc)(f"{method.label}: {exc}") from exc
        except keep:
            raise
        except KeyboardInterrupt as exc:
            if hit[0]:
                raise
            raise MethodError(f"{method.label} raised {raised(exc)}") from exc
        except BaseException as exc:
            raise MethodError(f"{method.label} raised {raised(exc)}") from exc


def start_up(method: Named, imports: tuple[str, ...]) -> float:
    """Import a method's solver packages ``imports`` (a no-op once imported), guarded by
    :func:`method_running`; return the seconds it took, the one-off start-up that a run's
    ``runtime_s`` excludes (``extra["startup_s"]``)."""
    started = time.perf_counter()
    for module in imports:
        if module not in sys.modules:
            with method_running(method):
                importlib.import_module(module)
    return time.perf_counter() - started


def start_within(
    start: Callable[[], float], time_limit: float | None, started: float | None, reserve: float
) -> tuple[float | None, float]:
    """Import a method's solver packages (``start``, returning the seconds it took) and work
    out its share of ``time_limit`` (:func:`~optsched.budget.method_share`: counted from
    ``started``, ``reserve`` seconds kept for checking). Returns (the share, the start-up
    seconds); with no time left the packages are not imported (start-up 0): the method has
    only the time to return its fallback."""
    share = method_share(time_limit, started, reserve)
    if share is not None and share <= MIN_METHOD_SECONDS:
        return share, 0.0
    startup = start()  # before the method's share is worked out
    return method_share(time_limit, started, reserve), startup


def finite_bound(method: Named, bound: object) -> float | None:
    """A method's bound as a float, or None; anything but a finite real number (a NaN,
    ±Infinity, a string) is a bug in the method (:class:`MethodError` naming it)."""
    if bound is None:
        return None
    if isinstance(bound, bool) or not isinstance(bound, numbers.Real):
        raise MethodError(
            f"{method.label} returned a bound of type {type(bound).__name__}, not a number"
        )
    value = float(bound)
    if not math.isfinite(value):
        raise MethodError(f"{method.label} returned a non-finite bound {value}")
    return value


def check_bound(
    method: Named,
    bound: float | None,
    objective: float,
    what: str = "objective",
    tolerance: float | None = None,
) -> None:
    """Refuse (:class:`MethodError` naming the method) a checked ``objective`` that is not
    finite, or a ``bound`` above it beyond the objective's optimality ``tolerance`` (None:
    :func:`~optsched.result.relative_tolerance`, for placement costs)."""
    if not math.isfinite(objective):
        raise MethodError(f"{method.label}: the checked {what} is not finite ({objective})")
    if bound is not None and bound - objective > tolerance_of(objective, tolerance):
        raise MethodError(f"{method.label}: bound {bound} exceeds the checked {what} {objective}")


def checked(
    instance: Instance, schedule: Schedule, method: Named
) -> tuple[float, dict[str, Any], float]:
    """The checker's objective, metrics and optimality tolerance
    (:func:`~optsched.check.objective_tolerance`) of a method's schedule; an infeasible or
    incomplete schedule, or a non-finite objective, is a bug in the method and raises
    :class:`MethodError` (an :class:`~optsched.errors.OptschedError`), never repaired."""
    report = check(instance, schedule)
    if (
        not report.feasible
        or report.objective is None
        or report.metrics is None
        or report.tolerance is None
    ):
        first = report.violations[0].message if report.violations else "incomplete"
        raise MethodError(
            f"{method.label} produced an infeasible schedule "
            f"({len(report.violations)} violations; first: {first})"
        )
    check_bound(method, None, report.objective)
    return report.objective, report.metrics, report.tolerance


def in_time_after_ctrl_c(instance: Instance) -> None:
    """After a method stopped by a Ctrl-C: raise KeyboardInterrupt (exit 130) when checking
    its schedule (:func:`~optsched.budget.check_seconds`) would end the command more
    than :data:`~optsched.budget.CTRL_C_SECONDS` after the signal (counted from
    Python's handler; from now when the solver caught it), so a Ctrl-C always ends a run
    within that time: with the best result when it can be checked in time, else without."""
    since = 0.0 if _sigint_at[0] is None else time.perf_counter() - _sigint_at[0]
    if since > CTRL_C_SECONDS:  # an old signal: the solver caught this one
        since = 0.0
    if since + check_seconds(instance) + EXIT_SECONDS > CTRL_C_SECONDS:
        raise KeyboardInterrupt


class ProgressLine:
    """Prints a method's progress to ``stream``: at most one line every ``every`` seconds,
    the first once the run has lasted that long, so short runs print nothing. A line
    gives the elapsed time, the incumbent, the best bound (the method's, else the critical
    path ``floor``) and their gap; without a ``floor`` (placement costs) and before any
    bound, the incumbent alone.

    Used as a context manager it is also a heartbeat: a background thread prints the latest
    state every ``every`` seconds even while the method reports nothing (a MILP solver, an
    LP, a long CP-SAT stretch without a new solution)."""

    def __init__(self, stream: TextIO, floor: float | None, every: float = 5.0) -> None:
        self.stream, self.floor, self.every = stream, floor, every
        self.started = self.last = time.perf_counter()
        self.incumbent: float | None = None
        self.bound = floor
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None

    def __call__(self, incumbent: float | None, bound: float | None) -> None:
        with self._lock:
            if incumbent is not None and math.isfinite(incumbent):
                self.incumbent = (
                    incumbent if self.incumbent is None else min(self.incumbent, incumbent)
                )
            if bound is not None and math.isfinite(bound):
                self.bound = bound if self.bound is None else max(self.bound, bound)
        self._print()

    def _print(self) -> None:
        with self._lock:
            now = time.perf_counter()
            if now - self.last < self.every:
                return
            self.last = now
            elapsed = f"{now - self.started:7.1f} s"
            if self.bound is None:
                line = f"{elapsed}  incumbent " + (
                    "-" if self.incumbent is None else f"{self.incumbent:.6g}"
                )
            elif self.incumbent is None:
                line = f"{elapsed}  bound {self.bound:.6g}"
            else:
                gap = (self.incumbent - self.bound) / max(abs(self.incumbent), 1e-12)
                line = (
                    f"{elapsed}  incumbent {self.incumbent:.6g}  bound "
                    f"{self.bound:.6g}  gap {100 * max(gap, 0.0):.2f} %"
                )
            print(line, file=self.stream, flush=True)

    def __enter__(self) -> ProgressLine:
        def beat() -> None:
            # a Ctrl-C is for the main thread, where Python's handlers run; this thread
            # takes none
            if hasattr(signal, "pthread_sigmask"):
                signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            while not self._stopped.wait(
                max(self.every - (time.perf_counter() - self.last), 0.05)
            ):
                self._print()

        self._beat = threading.Thread(target=beat, name="optsched-progress", daemon=True)
        self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        if self._beat is not None:
            self._beat.join()


def listener_of(
    progress: TextIO | Listener | None, floor: Callable[[], float | None]
) -> Listener | None:
    """What a verb's ``progress`` argument becomes: a callable as it is, None as None, a text
    stream a :class:`ProgressLine` on it (``floor()``: its bound before the method reports
    one)."""
    if progress is None or callable(progress):
        return progress
    return ProgressLine(progress, floor())


def run_timed(
    method: Named, call: Callable[[], T], listener: Listener | None = None
) -> tuple[T, float]:
    """Run ``call`` (the method) as every verb does: timed under :func:`method_running` (and
    a :class:`ProgressLine` heartbeat when ``listener`` is one). Returns (its output,
    runtime_s)."""
    started = time.perf_counter()
    with method_running(method), listener if isinstance(listener, ProgressLine) else nullcontext():
        out = call()
    return out, time.perf_counter() - started
