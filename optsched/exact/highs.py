"""Every HiGHS solve of optsched, stoppable by Ctrl-C (docs/promises.md, "Long runs are
visible and stoppable").

HiGHS runs in C++ and does not return to Python while it solves, so a Ctrl-C would wait for
its time limit. Here it always runs in its own thread (highspy's ``startSolve``) while the
calling thread waits in steps of :data:`POLL_SECONDS`, where Python handles signals; a
``KeyboardInterrupt`` received while waiting asks HiGHS to stop (``cancelSolve``, read by
HiGHS's interrupt callbacks in simplex, IPM and MIP) and waits for it. One helper serves
every use:

- :func:`run`: a ``highspy.Highs`` object with its model (Hare_Sched_RL's LP, a model built
  here);
- :func:`linprog`: an LP in scipy's ``linprog`` form (``A_ub x ≤ b_ub``, ``A_eq x = b_eq``,
  bounds), solved by highspy with the same options and results as
  ``scipy.optimize.linprog(method="highs")`` (status 0 optimal, 1 time limit, 2 infeasible,
  3 unbounded, 4 other; ``fun``, ``x``, ``ineqlin.marginals``, ``eqlin.marginals``), plus
  ``interrupted``;
- :func:`pulp_solver`: PuLP's HiGHS interface (MILPs, LP relaxations), run through
  :func:`run`.

Guarantees: a call returns at most :data:`CANCEL_GRACE_SECONDS` after a Ctrl-C (one that
lands while HiGHS's thread starts included; more Ctrl-Cs while it stops are taken in), with
``interrupted`` set and whatever HiGHS had (an LP stopped early has no optimal solution, so
it gives no bound); a HiGHS that does not stop within that grace (a phase without interrupt
checks) is abandoned in its daemon thread and the ``KeyboardInterrupt`` is raised again, so
the command still ends (exit 130). Without a Ctrl-C the solve is HiGHS's own, its time limit
included.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal, Protocol

import numpy as np

#: How often the waiting thread looks up (s): the delay before a Ctrl-C reaches HiGHS.
POLL_SECONDS = 0.05

#: How long a cancelled HiGHS may take to stop (s) before it is abandoned.
CANCEL_GRACE_SECONDS = 1.0

#: Constraint non-zeros above which HiGHS's presolve is turned off. Presolve does not read
#: interrupts and reads its time limit only now and then, and it takes about 8 µs per
#: non-zero on these models (measured: 0.3 s at 4e4, 3.2 s at 4e5, 30 s at 3e6), so beyond
#: this a Ctrl-C or the deadline would wait for it; the solves measured without it on such
#: models were no slower overall.
PRESOLVE_MAX_NONZEROS = 100_000


def presolve(nonzeros: int) -> str:
    """HiGHS's ``presolve`` option for a model of ``nonzeros`` constraint non-zeros: ``on``
    up to :data:`PRESOLVE_MAX_NONZEROS`, else ``off``."""
    return "on" if nonzeros <= PRESOLVE_MAX_NONZEROS else "off"


#: Constraint non-zeros up to which :func:`linprog` (without a time limit) solves in the
#: calling thread: such LPs take milliseconds (a few thousand columns), so the thread
#: :func:`run` starts would cost more than it saves a Ctrl-C.
INLINE_MAX_NONZEROS = 5_000

#: How long past its own time limit :func:`linprog` lets HiGHS run before stopping it (s).
DEADLINE_MARGIN_SECONDS = 0.1

#: HiGHS objects abandoned while still running (kept alive until the process ends).
_abandoned: list[Any] = []


def exit_if_abandoned(code: int) -> None:
    """End the process now with ``code`` (stdout and stderr flushed, no clean-up) when a
    HiGHS solve was abandoned still running: Python's exit would tear down HiGHS's C++
    state under that thread and abort. Meant for the command line's last step only."""
    if any(highs.is_solver_running() for highs in _abandoned):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def wait(highs: Any, seconds: float | None) -> bool:
    """Wait until ``highs``, started with ``startSolve``, has stopped, at most ``seconds``
    (None: for ever); True when it has."""
    end = None if seconds is None else time.perf_counter() + seconds
    while True:
        step = POLL_SECONDS if end is None else min(POLL_SECONDS, end - time.perf_counter())
        if highs.wait(max(step, 0.0))[0]:
            return True
        if step <= 0:
            return False


def run(highs: Any, deadline: float | None = None) -> str:
    """Solve ``highs`` (a ``highspy.Highs`` holding its model and options) in HiGHS's own
    thread (see the module docstring). Returns ``solved`` (HiGHS ended by itself: optimal,
    infeasible, its own time limit…), ``interrupted`` (a Ctrl-C stopped it), ``deadline``
    (still running at ``deadline``, a ``time.perf_counter()`` value, it was stopped the same
    way: HiGHS checks its own time limit rarely in presolve) or ``abandoned`` (it did not
    stop within :data:`CANCEL_GRACE_SECONDS` of the deadline: left running in its daemon
    thread until its own time limit; ``highs`` must not be read).

    Raises
    ------
    KeyboardInterrupt
        When HiGHS did not stop within :data:`CANCEL_GRACE_SECONDS` of a Ctrl-C (it is
        abandoned, still running, in its daemon thread).
    """
    if highs.is_solver_running():
        # highspy (1.16) keeps the lock that marks a solve as running on the class, not the
        # object: while an abandoned solve still runs, no other object can start a thread.
        # Solve in this thread then; HiGHS's own time limit still ends it.
        highs.run()
        return "solved"
    highs.HandleUserInterrupt = True
    try:
        # inside the try: startSolve waits for HiGHS's thread to start, and a Ctrl-C that
        # lands there leaves HiGHS running, to be cancelled like any other
        highs.startSolve()
        if wait(highs, None if deadline is None else max(deadline - time.perf_counter(), 0)):
            return "solved"
    except KeyboardInterrupt:
        if not _stop(highs)[0]:
            _abandoned.append(highs)
            raise
        return "interrupted"
    stopped, ctrl_c = _stop(highs)  # at the deadline
    if not stopped:
        _abandoned.append(highs)  # it ends at its own time limit, in the background
        if ctrl_c:
            raise KeyboardInterrupt
        return "abandoned"
    return "interrupted" if ctrl_c else "deadline"


def _stop(highs: Any) -> tuple[bool, bool]:
    """Ask ``highs`` to stop and wait for it, at most :data:`CANCEL_GRACE_SECONDS`, taking
    in any Ctrl-C meanwhile (a second press, or ``timeout``'s signal to its process group as
    well as to its child): raised there, it would leave HiGHS running into the interpreter's
    exit, which aborts. Returns (whether it stopped, whether a Ctrl-C came meanwhile)."""
    highs.cancelSolve()
    end = time.perf_counter() + CANCEL_GRACE_SECONDS
    ctrl_c = False
    while True:
        try:
            # a thread that had not yet taken HiGHS's lock when the wait did runs now
            stopped = wait(highs, max(end - time.perf_counter(), 0.0))
            return stopped and not highs.is_solver_running(), ctrl_c
        except KeyboardInterrupt:
            ctrl_c = True


@dataclass(frozen=True)
class LPResult:
    """What :func:`linprog` returns, named as scipy's ``OptimizeResult`` of
    ``linprog(method="highs")`` (marginals are HiGHS's row duals, scipy's sign)."""

    status: int
    message: str
    fun: float  # nan unless status is 0
    x: np.ndarray  # empty unless status is 0
    ineqlin: Any
    eqlin: Any
    interrupted: bool = False


#: HiGHS's model status → scipy's linprog status.
_SCIPY_STATUS = {
    "kOptimal": 0,
    "kTimeLimit": 1,
    "kIterationLimit": 1,
    "kInfeasible": 2,
    "kModelError": 2,
    "kUnbounded": 3,
}


@dataclass(frozen=True)
class ColumnMatrix:
    """A sparse matrix as HiGHS reads it, column by column and canonical (row indices
    increasing, none repeated, within each column): column j holds
    ``data[indptr[j]:indptr[j + 1]]`` in rows ``indices[indptr[j]:indptr[j + 1]]``.
    :func:`linprog` hands it to HiGHS as it is, without scipy.sparse: a caller that builds
    many small LPs (an allocation policy, hundreds per trace) builds it directly."""

    shape: tuple[int, int]
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray

    @property
    def nnz(self) -> int:
        return len(self.data)


def linprog(
    c: np.ndarray,
    *,
    A_ub: Any = None,
    b_ub: np.ndarray | None = None,
    A_eq: Any = None,
    b_eq: np.ndarray | None = None,
    bounds: Any = (0, None),
    time_limit: float | None = None,
    method: Literal["dual", "primal", "ipm", "central"] = "dual",
) -> LPResult:
    """Minimise ``c @ x`` subject to ``A_ub @ x ≤ b_ub``, ``A_eq @ x = b_eq`` and
    ``bounds`` (a pair for every column, or an (n, 2) array; None or ±inf: unbounded;
    matrices dense, scipy sparse, or an ``A_ub`` alone as a :class:`ColumnMatrix`) with
    HiGHS, as ``scipy.optimize.linprog(method="highs")`` does (dual simplex; presolve on
    models of at most :data:`PRESOLVE_MAX_NONZEROS` non-zeros), but stoppable by Ctrl-C and
    at its deadline (:func:`run`; LPs of at most :data:`INLINE_MAX_NONZEROS` non-zeros
    without a time limit run in the calling thread). ``time_limit`` in seconds (None: none);
    ``method``: HiGHS's dual simplex (default, as scipy's), its primal simplex (faster on
    the allocation LPs, whose max-min rows make the dual degenerate), ``ipm``: its
    interior-point method with crossover to a vertex (faster on large LPs), or
    ``central``: the interior-point method without crossover, which ends inside the optimal
    face (an optimum that spreads slack evenly where the LP has many) rather than at a
    vertex."""
    built = _model(c, A_ub, b_ub, A_eq, b_eq, bounds, time_limit, method, reuse=True)
    if built is None:
        return _failed(2, "model error")
    highs, n_ub, nonzeros = built
    ended = _solve(highs, nonzeros, time_limit)
    if ended == "abandoned":
        return _failed(1, "time limit (abandoned)")
    status, message = scipy_status(highs, ended)
    if status != 0:
        return _failed(status, message, ended == "interrupted")
    solution = highs.getSolution()
    duals = np.asarray(solution.row_dual, dtype=float)
    return LPResult(
        0,
        message,
        float(highs.getInfo().objective_function_value),
        np.asarray(solution.col_value, dtype=float),
        SimpleNamespace(marginals=duals[:n_ub]),
        SimpleNamespace(marginals=duals[n_ub:]),
        False,
    )


class RowBoundsSolver(Protocol):
    """An LP solved again and again with new right-hand sides for some of its ``≤`` rows,
    as a bisection uses it (:class:`RowBoundsLP`, or an allocation sequence's model)."""

    def solve(self, rows: np.ndarray, b_ub: np.ndarray) -> tuple[int, str, np.ndarray]:
        """Set rows ``rows`` to ``≤ b_ub`` and solve: (status as :class:`LPResult`'s, a
        message, the point; empty unless status 0)."""
        ...

    def dual_ray(self) -> np.ndarray | None:
        """After an infeasible solve: a Farkas ray over the rows (≤ 0 on ``≤`` rows)."""
        ...


class RowBoundsLP:
    """One LP in :func:`linprog`'s form (``A_ub x ≤ b_ub``, ``bounds``, no time limit)
    solved again and again with new right-hand sides for some of its rows, each solve
    starting from the previous one's basis (HiGHS keeps it across bound changes): a
    bisection's feasibility tests take a few pivots each instead of a solve from scratch.

    :meth:`solve` gives each solve's status and point, which depend on the solves before
    it: the LP's optima need not be unique, and where a right-hand side makes the LP
    feasible only within HiGHS's tolerances, a solve from scratch may call it infeasible and
    this one feasible, or the other way round. A caller that needs the answer or the point of
    a solve from scratch checks them, or solves from scratch with :func:`linprog`."""

    def __init__(
        self,
        c: np.ndarray,
        *,
        A_ub: Any,
        b_ub: np.ndarray,
        bounds: Any = (0, None),
        method: Literal["dual", "primal"] = "dual",
    ) -> None:
        built = _model(c, A_ub, b_ub, None, None, bounds, None, method)
        if built is None:
            raise ValueError("HiGHS refused the LP (model error)")
        self._highs, _, self._nonzeros = built
        import highspy

        self._error, self._inf = highspy.HighsStatus.kError, highspy.kHighsInf

    def solve(self, rows: np.ndarray, b_ub: np.ndarray) -> tuple[int, str, np.ndarray]:
        """Set ``A_ub``'s rows ``rows`` to ``≤ b_ub`` (the others keep theirs) and solve:
        (status as :class:`LPResult`'s, HiGHS's message, the point; empty unless status 0)."""
        rows = np.asarray(rows, dtype=np.int32)
        upper = np.clip(np.asarray(b_ub, dtype=float), -self._inf, self._inf)
        lower = np.full(len(rows), -self._inf)
        if self._highs.changeRowsBounds(len(rows), rows, lower, upper) == self._error:
            return 2, "model error", np.empty(0)  # as linprog answers such a model
        ended = _solve(self._highs, self._nonzeros, None)
        status, message = scipy_status(self._highs, ended)
        if status != 0:
            return status, message, np.empty(0)
        return 0, message, np.asarray(self._highs.getSolution().col_value, dtype=float)

    def dual_ray(self) -> np.ndarray | None:
        """After a solve found the LP infeasible: HiGHS's dual ray (a Farkas certificate,
        one value per row, ≤ 0 on ``≤`` rows), or None when it has none. A caller that
        relies on it checks it."""
        return dual_ray(self._highs)


def dual_ray(highs: Any) -> np.ndarray | None:
    """After ``highs`` found its LP infeasible: HiGHS's dual ray (a Farkas certificate, one
    value per row, ≤ 0 on ``≤`` rows), or None when it has none."""
    import highspy

    status, has_ray, ray = highs.getDualRay()
    if not has_ray or status == highspy.HighsStatus.kError:
        return None
    return np.asarray(ray, dtype=float)


def _failed(status: int, message: str, interrupted: bool = False) -> LPResult:
    """An :class:`LPResult` without a solution."""
    none = SimpleNamespace(marginals=None)
    return LPResult(status, message, math.nan, np.empty(0), none, none, interrupted)


def _model(
    c: np.ndarray,
    A_ub: Any,
    b_ub: np.ndarray | None,
    A_eq: Any,
    b_eq: np.ndarray | None,
    bounds: Any,
    time_limit: float | None,
    method: str,
    reuse: bool = False,
) -> tuple[Any, int, int] | None:
    """A ``highspy.Highs`` holding :func:`linprog`'s LP and options: (it, the rows of
    ``A_ub``, the constraint non-zeros), or None when HiGHS refuses the model. With
    ``reuse``, an LP that :func:`_solve` runs in the calling thread goes into this thread's
    one ``Highs`` object, cleared (:func:`_highs`), which the caller reads before the next."""
    import highspy

    n = len(c)
    blocks, lower, upper = [], [], []
    if A_ub is not None and b_ub is not None and len(b_ub):
        blocks.append(A_ub)
        lower.append(np.full(len(b_ub), -np.inf))
        upper.append(np.asarray(b_ub, dtype=float))
    if A_eq is not None and b_eq is not None and len(b_eq):
        blocks.append(A_eq)
        lower.append(np.asarray(b_eq, dtype=float))
        upper.append(np.asarray(b_eq, dtype=float))
    n_ub = len(upper[0]) if A_ub is not None and b_ub is not None and len(b_ub) else 0
    matrix = blocks[0] if len(blocks) == 1 else None
    if matrix is None and any(isinstance(b, ColumnMatrix) for b in blocks):
        raise ValueError("a ColumnMatrix is taken as A_ub alone, without A_eq")
    if not isinstance(matrix, ColumnMatrix):
        from scipy.sparse import csc_array, csr_array, vstack

        if not (isinstance(matrix, csc_array) and matrix.has_canonical_format):
            # (a canonical csc_array is what these conversions would leave)
            matrix = csc_array(
                vstack([csr_array(b) for b in blocks]) if blocks else csr_array((0, n))
            )
    box = np.array(bounds, dtype=float)  # None → nan: unbounded
    if box.ndim == 1:
        box = np.broadcast_to(box, (n, 2))
    col_lower = np.where(np.isnan(box[:, 0]), -np.inf, box[:, 0])
    col_upper = np.where(np.isnan(box[:, 1]), np.inf, box[:, 1])
    row_lower = np.concatenate(lower) if lower else np.zeros(0)
    row_upper = np.concatenate(upper) if upper else np.zeros(0)
    inf = highspy.kHighsInf
    highs = _highs(reuse and _inline(matrix.nnz, time_limit))
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("presolve", presolve(matrix.nnz))
    if method in ("ipm", "central"):  # interior point; without crossover: inside the face
        highs.setOptionValue("solver", "ipm")
        highs.setOptionValue("run_crossover", "on" if method == "ipm" else "off")
    else:
        highs.setOptionValue("simplex_strategy", 4 if method == "primal" else 1)
    if time_limit is not None:
        highs.setOptionValue("time_limit", float(max(time_limit, 0.0)))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, matrix.shape[0]
    lp.col_cost_ = np.asarray(c, dtype=float)
    lp.col_lower_, lp.col_upper_ = np.clip(col_lower, -inf, inf), np.clip(col_upper, -inf, inf)
    lp.row_lower_, lp.row_upper_ = np.clip(row_lower, -inf, inf), np.clip(row_upper, -inf, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, matrix.shape[0]
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
    lp.a_matrix_.value_ = matrix.data.astype(float)
    if highs.passModel(lp) == highspy.HighsStatus.kError:
        return None
    return highs, n_ub, int(matrix.nnz)


#: Per thread, the ``Highs`` object that small LPs solved in that thread share.
_shared = threading.local()


def new_highs() -> Any:
    """A new ``highspy.Highs`` without model (HiGHS's banner silenced), for a caller that
    builds its model up and solves it many times (:func:`run` solves it stoppably)."""
    return _highs(False)


def _highs(shared: bool) -> Any:
    """A ``highspy.Highs`` without model, solution or non-default option: a new one, or
    with ``shared`` this thread's one, cleared (saves 0.1 ms of the 0.6 ms a 10-column LP
    takes; each of the 395 max-min LPs of both Gavel traces gives the same vertex either way)."""
    import highspy

    from optsched.exact.quiet import native_stdout_silenced

    highs = getattr(_shared, "highs", None) if shared else None
    if highs is not None:
        highs.clearModel()
        highs.clearSolver()
        highs.resetOptions()
        return highs
    with native_stdout_silenced():
        highs = highspy.Highs()  # type: ignore[no-untyped-call, unused-ignore]
    if shared:
        _shared.highs = highs
    return highs


#: Per thread (HiGHS keeps one task scheduler per thread), the ``threads`` option of
#: :func:`run_here`'s runs: absent before its first run in the thread (made at HiGHS's
#: default, 0, which starts the thread's scheduler if nothing has), then the count that
#: default gives (:func:`_default_threads`), or 0 once a run was refused.
_run_threads = threading.local()


def _default_threads() -> int:
    """The thread count HiGHS (1.16) starts its scheduler with by default: the distinct
    physical cores (``core_id``) among the CPUs this process may run on, where Linux tells
    them, else half the CPUs, rounded up."""
    cores: set[int] = set()
    try:
        for cpu in os.sched_getaffinity(0):
            cores.add(int(Path(f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id").read_text()))
    except (AttributeError, OSError, ValueError):
        cores.clear()
    return len(cores) or ((os.cpu_count() or 1) + 1) // 2


def run_here(highs: Any) -> None:
    """``highs.run()`` in the calling thread, its ``threads`` option set to the thread count
    of HiGHS's scheduler for this thread. HiGHS (1.16) reads the cores' topology from the
    operating system at every run, twice at its default (0) and once with the count set:
    the second read is about 30 µs of the 50-80 µs a tiny LP takes; the count changes
    nothing else (the simplex runs in this thread either way). The first run
    in a thread is made at 0, so that this never starts a scheduler itself; where the
    scheduler runs another count than HiGHS's default (someone set ``threads`` first),
    HiGHS refuses the run without touching the model: it is run again at 0, and 0 is kept
    in this thread from then on."""
    import highspy

    threads = getattr(_run_threads, "count", None)
    if threads is None:
        highs.setOptionValue("threads", 0)
        highs.run()
        _run_threads.count = _default_threads()
        return
    highs.setOptionValue("threads", threads)
    if highs.run() == highspy.HighsStatus.kError and threads:
        _run_threads.count = 0
        highs.setOptionValue("threads", 0)
        highs.run()


def _inline(nonzeros: int, time_limit: float | None) -> bool:
    """Whether :func:`_solve` runs an LP of ``nonzeros`` in the calling thread."""
    return nonzeros <= INLINE_MAX_NONZEROS and time_limit is None


def _solve(highs: Any, nonzeros: int, time_limit: float | None) -> str:
    """Run ``highs``: in the calling thread when the LP is small and has no time limit (done
    in milliseconds; a Ctrl-C is handled right after), else through :func:`run`."""
    if _inline(nonzeros, time_limit):
        run_here(highs)
        return "solved"
    return run(
        highs,
        None if time_limit is None else time.perf_counter() + time_limit + DEADLINE_MARGIN_SECONDS,
    )


def scipy_status(highs: Any, ended: str) -> tuple[int, str]:
    """scipy's status and a message for a solve that ended as :func:`run` says."""
    if ended == "interrupted":
        return 4, "interrupted (Ctrl-C)"
    if ended == "deadline":
        return 1, "time limit (stopped at the deadline)"
    model_status = highs.getModelStatus()
    return _SCIPY_STATUS.get(model_status.name, 4), highs.modelStatusToString(model_status)


def pulp_solver(
    report: Callable[[float | None, float | None], None] | None = None,
    constant: float = 0.0,
    **options: Any,
) -> Any:
    """PuLP's HiGHS interface (``pulp.HiGHS(**options)``, a MILP or, with ``mip=False``, an
    LP) solved through :func:`run`, so that a Ctrl-C cancels the search instead of waiting
    for the time limit; ``report(incumbent, bound)`` receives every improving MIP solution
    (plus the objective ``constant`` PuLP keeps outside). ``.interrupted`` says whether a
    Ctrl-C stopped it."""
    import pulp

    class Interruptible(pulp.HiGHS):  # type: ignore[misc, unused-ignore]  # pulp: untyped
        interrupted = False

        def callSolver(self, lp: Any) -> None:
            highs = lp.solverModel
            if report is not None:
                highs.cbMipImprovingSolution.subscribe(
                    lambda event: report(
                        event.data_out.objective_function_value + constant,
                        event.data_out.mip_dual_bound + constant,
                    )
                )
            self.interrupted = run(highs) == "interrupted"

    return Interruptible(**options)
