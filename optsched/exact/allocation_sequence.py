"""Allocation LPs solved one after another while the jobs change (docs/models/allocation.md,
"Re-solving as the jobs change"). An online allocation policy re-solves its LP at every
arrival and completion, and consecutive LPs differ by a job or two: :class:`AllocationSequence`
keeps one HiGHS model for the whole run, edits it into each new problem (the rows and
columns of the jobs that left deleted, those of the new ones added, changed coefficients
set) and solves it from the previous solve's simplex basis, in a few pivots instead of a
solve from scratch and without building the model again.

The LPs are those of :mod:`optsched.exact.allocation`, with the same rows per job and per
type: max-min fairness (identical jobs grouped, as ``max_min_share`` groups them), total
throughput (grouped), min-makespan and finish-time fairness (one row per job; the bisection
of :func:`~optsched.exact.allocation.min_max_rho` runs on the same model, starting from the
last optimum, each demand row scaled to a right-hand side near 1 so that HiGHS's absolute
tolerance acts as a relative one). Every result is an optimum of its LP (HiGHS's status
optimal; the finish-time level certified as in ``min_max_rho``) with the same value as a
solve from scratch, up to HiGHS's tolerances. Which optimal vertex it is can depend on the
solves before it (these LPs rarely have one optimum), so the allocations, and the schedule
of a policy that uses them, may differ from those of solving every LP from scratch.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Sequence
from itertools import repeat
from typing import Any, Literal

import numpy as np

from optsched.errors import InputError, OptschedError
from optsched.exact.allocation import (
    Allocation,
    AllocationProblem,
    _Columns,
    _job_data,
    _kinds,
    min_max_rho,
)
from optsched.exact.highs import dual_ray, run_here, scipy_status

Sequenced = Literal["max-min-fairness", "max-throughput", "min-makespan", "finish-time-fairness"]
#: Retired rows the model keeps before deleting them all at once (or as many as are live).
RETIRED_KEPT = 64

#: Slack a total-throughput time row keeps, before and after a change of its bound, for the
#: last optimum to stay optimal (its slack basic: the change moves that slack alone).
SLACK = 1e-6

#: The objectives whose LP is symmetric in identical jobs: their rows are groups of them.
GROUPED: frozenset[str] = frozenset({"max-min-fairness", "max-throughput"})


class AllocationSequence:
    """One allocation LP per call of :meth:`solve`, for one ``objective`` on one cluster
    (``capacity``: GPUs per type), each edited from the last and solved from its basis.

    The model's layout: the global column first (max-min's level z, min-makespan's T), then
    one column per (row, type) of the problem (bounds [0, 0] where the row cannot run): the
    share of the type its jobs have together (a grouped row's count × each job's share, so
    that a change of count changes its time row's bound and, for max-min, one coefficient of
    its level row, not its capacity entries); the capacity rows first (one per type), then
    each problem row's own rows (its time row, then max-min's level row, min-makespan's work
    row or finish-time's demand row). A row of the problem is identified by its key: the
    caller's for the per-job objectives, its kind or its data (rates, GPUs, weight,
    reference) for the grouped ones."""

    def __init__(self, objective: Sequenced, capacity: np.ndarray) -> None:
        import highspy

        from optsched.exact.quiet import native_stdout_silenced

        if objective not in (*GROUPED, "min-makespan", "finish-time-fairness"):
            raise InputError(f"allocation sequence: no objective {objective!r}")
        self.objective = objective
        self.capacity = np.array(capacity, dtype=float)
        self._m = m = len(self.capacity)
        self._top = 1 if objective in ("max-min-fairness", "min-makespan") else 0
        self._own = 1 if objective == "max-throughput" else 2
        self._keys: list[Hashable] = []
        self._pos: dict[Hashable, int] = {}
        self._data = np.zeros((0, m + 3))
        self._count = np.zeros(0)
        self._live = np.zeros(0, dtype=bool)  # False: retired (``_retire``)
        self.retired_kept = RETIRED_KEPT
        #: finish-time: each row's demand row is its throughput × this factor ≥ demand ×
        #: the factor, which keeps the right-hand sides near 1 (``_scale_demands``)
        self._factor = np.zeros(0)
        self._level: float | None = None  # finish-time: the last optimum, the next hint
        #: total throughput: the last solve's column values and value while the edits since
        #: keep them optimal (``_retire``, ``_recount``), else None
        self._optimum: np.ndarray | None = None
        self._value = 0.0
        #: grouped objectives with keys: each key's kind, each kind's data (rows beyond the
        #: kinds unused) and number
        self._kind_of: dict[Hashable, int] = {}
        self._kind_data = np.zeros((8, m + 3))
        self._kind_id: dict[bytes, int] = {}
        #: LPs solved and simplex iterations, over the run
        self.solves = 0
        self.iterations = 0
        self._hs = highspy
        with native_stdout_silenced():
            self._highs: Any = highspy.Highs()  # type: ignore[no-untyped-call, unused-ignore]
        highs, inf = self._highs, highspy.kHighsInf
        highs.setOptionValue("output_flag", False)
        highs.setOptionValue("simplex_strategy", 4)  # primal: the dual is degenerate here
        if self._top:
            cost = -1.0 if objective == "max-min-fairness" else 1.0
            highs.addCol(cost, 0.0, inf, 0, np.zeros(0, np.int32), np.zeros(0))
        for t in range(m):
            if objective == "min-makespan":  # Σ K Y − capacity · T ≤ 0
                highs.addRow(-inf, 0.0, 1, np.array([0], np.int32), np.array([-self.capacity[t]]))
            else:
                highs.addRow(-inf, float(self.capacity[t]), 0, np.zeros(0, np.int32), np.zeros(0))

    # -- the model ---------------------------------------------------------------------------

    def _columns(self, pos: np.ndarray) -> np.ndarray:
        """The model's columns of the rows at ``pos`` (one per type, row-major)."""
        return self._top + pos[:, None] * self._m + np.arange(self._m)[None, :]

    def _own_rows(self, pos: np.ndarray) -> np.ndarray:
        """The model's own rows of the rows at ``pos`` (time row, then the second; one row
        per position and own row), after the capacity rows."""
        return self._m + pos[:, None] * self._own + np.arange(self._own)[None, :]

    def _edit(self, keys: Sequence[Hashable], data: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Edit the model into the rows ``keys`` (``data``: rates per type, GPUs, weight,
        reference; ``count``: jobs per row): rows gone or with other data retired, new ones
        added, counts changed in place. Returns each row's position in the model."""
        n = len(keys)
        pos = np.fromiter(map(self._pos.get, keys, repeat(-1)), np.int64, n)
        known = np.flatnonzero(pos >= 0)
        same = known[(self._data[pos[known]] == data[known]).all(axis=1)]
        stay = np.zeros(len(self._keys), dtype=bool)
        stay[pos[same]] = True
        gone = np.flatnonzero(self._live & ~stay)
        if len(gone):
            self._retire(gone)
            pos = np.where(stay[pos] & (pos >= 0), pos, -1)
            retired = len(self._live) - len(same)
            if retired > max(self.retired_kept, len(same)):
                self._delete(np.flatnonzero(~self._live))
                pos = np.fromiter(map(self._pos.get, keys, repeat(-1)), np.int64, n)
        moved = same[self._count[pos[same]] != count[same]]
        if len(moved):
            self._recount(pos[moved], count[moved])
        new = np.flatnonzero(pos < 0)
        if len(new):
            pos[new] = self._add([keys[i] for i in new.tolist()], data[new], count[new])
        return pos

    def _retire(self, gone: np.ndarray) -> None:
        """Take the rows at positions ``gone`` out of the LP without deleting them: their
        columns fixed at 0 and their own rows made free. Bound changes keep HiGHS's basis
        and factorization (a deletion drops both); :meth:`_edit` deletes the retired rows
        all at once when they outnumber the live ones."""
        highs, inf = self._highs, self._hs.kHighsInf
        cols = self._columns(gone).ravel().astype(np.int32)
        rows = self._own_rows(gone).ravel().astype(np.int32)
        if self._optimum is not None and self._optimum[cols].any():
            self._optimum = None  # they had a share: the others may take it
        zero = np.zeros(len(cols))
        highs.changeColsBounds(len(cols), cols, zero, zero)
        highs.changeRowsBounds(len(rows), rows, np.full(len(rows), -inf), np.full(len(rows), inf))
        self._live[gone] = False
        for p in gone.tolist():
            del self._pos[self._keys[p]]

    def _delete(self, gone: np.ndarray) -> None:
        """Delete the retired rows at positions ``gone``, then mend the basis's count of basic
        variables (HiGHS drops a basis that lost a basic column): slacks of the model's last
        rows made basic where too few remain, the last basic columns made nonbasic where too
        many do."""
        highs = self._highs
        cols = self._columns(gone).ravel().astype(np.int32)
        rows = self._own_rows(gone).ravel().astype(np.int32)
        had_basis, self._optimum = self.solves > 0, None
        if highs.deleteCols(len(cols), cols) == self._hs.HighsStatus.kError:
            raise OptschedError("allocation sequence: HiGHS refused to delete columns")
        if highs.deleteRows(len(rows), rows) == self._hs.HighsStatus.kError:
            raise OptschedError("allocation sequence: HiGHS refused to delete rows")
        keep = np.ones(len(self._keys), dtype=bool)
        keep[gone] = False
        self._keys = [k for k, kept in zip(self._keys, keep, strict=True) if kept]
        self._pos = {k: i for i, k in enumerate(self._keys)}
        self._data, self._count = self._data[keep], self._count[keep]
        self._factor, self._live = self._factor[keep], self._live[keep]
        if had_basis:
            self._mend_basis()

    def _mend_basis(self) -> None:
        basis = self._highs.getBasis()
        if basis.valid:
            return
        basic = self._hs.HighsBasisStatus.kBasic
        col, row = list(basis.col_status), list(basis.row_status)
        need = len(row) - sum(s == basic for s in col) - sum(s == basic for s in row)
        for i in reversed(range(len(row))):
            if need <= 0:
                break
            if row[i] != basic:
                row[i], need = basic, need - 1
        for j in [*reversed(range(self._top, len(col))), *range(self._top)]:  # global last
            if need >= 0:
                break
            if col[j] == basic:
                col[j], need = self._hs.HighsBasisStatus.kLower, need + 1
        basis.col_status, basis.row_status, basis.valid = col, row, True
        self._highs.setBasis(basis)  # refused: HiGHS starts from its own basis

    def _recount(self, pos: np.ndarray, count: np.ndarray) -> None:
        """Rows (grouped) whose job count changed: their time rows' bound and, for max-min,
        the level's coefficient in their level rows (the columns are the kind's total
        share, so its capacity entries and costs do not change)."""
        highs = self._highs
        if self._optimum is not None:  # each job's time row slack before and after
            used = self._optimum[self._columns(pos)].sum(axis=1)
            if (used > np.minimum(self._count[pos], count) - SLACK).any():
                self._optimum = None
        rows = self._own_rows(pos).astype(np.int32)
        time_rows = rows[:, 0]
        highs.changeRowsBounds(len(pos), time_rows, np.full(len(pos), -self._hs.kHighsInf), count)
        if self.objective == "max-min-fairness":
            for row, n in zip(rows[:, 1].tolist(), count.tolist(), strict=True):
                highs.changeCoeff(row, 0, n)
        self._count[pos] = count

    def _runs(self, data: np.ndarray) -> np.ndarray:
        """Where each row (its data) can run: rate > 0 and its GPUs within the capacity."""
        m = self._m
        return np.asarray((data[:, :m] > 0) & (data[:, m, None] <= self.capacity[None, :]))

    def _cost(self, data: np.ndarray) -> np.ndarray:
        """Total throughput's cost per (row, type): −weight · rate / reference."""
        m = self._m
        return np.asarray(-(data[:, m + 1] / data[:, m + 2])[:, None] * data[:, :m])

    def _add(self, keys: list[Hashable], data: np.ndarray, count: np.ndarray) -> np.ndarray:
        """Add rows (their columns, with their entries in the capacity rows, then their own
        rows); returns their positions."""
        highs, inf, m, own = self._highs, self._hs.kHighsInf, self._m, self._own
        k, first = len(keys), len(self._keys)
        pos = np.arange(first, first + k)
        self._optimum = None
        rates, gpus = data[:, :m], data[:, m]
        runs = self._runs(data)
        # columns: one entry each where it can run, in capacity row t
        cost = np.zeros((k, m))
        if self.objective == "max-throughput":
            cost = self._cost(data)
        per = np.where(runs, 1, 0).ravel()
        starts = np.concatenate([[0], np.cumsum(per)[:-1]]).astype(np.int32)
        index = np.broadcast_to(np.arange(m), (k, m))[runs].astype(np.int32)
        value = gpus[:, None] * np.ones(m)
        highs.addCols(
            k * m,
            cost.ravel(),
            np.zeros(k * m),
            np.where(runs, inf, 0.0).ravel(),
            int(per.sum()),
            starts,
            index,
            value[runs],
        )
        # own rows: time (Σ_t X ≤ count or, min-makespan, Σ_t Y − T ≤ 0), then the second
        cols = self._columns(pos)
        job, typ = np.nonzero(runs)
        col = cols[job, typ]
        row_of, col_of, val = [job * own], [col], [np.ones(len(job))]
        upper = np.zeros((k, own))
        lower = np.full((k, own), -inf)
        if self.objective == "min-makespan":
            row_of.append(np.arange(k) * own)
            col_of.append(np.zeros(k, dtype=np.int64))
            val.append(-np.ones(k))
        else:
            upper[:, 0] = count
        if own == 2:
            if self.objective == "max-min-fairness":  # count · z − Σ_t u X ≤ 0
                utility = rates[job, typ] / (data[job, m + 2] * data[job, m + 1])
                row_of += [job * own + 1, np.arange(k) * own + 1]
                col_of += [col, np.zeros(k, dtype=np.int64)]
                val += [-utility, count]
            else:  # work or demand: −Σ_t r Y ≤ bound (set at each solve)
                row_of.append(job * own + 1)
                col_of.append(col)
                val.append(-rates[job, typ])
        r, c, v = (np.concatenate(a) for a in (row_of, col_of, val))
        order = np.lexsort((c, r))
        r, c, v = r[order], c[order], v[order]
        starts = np.searchsorted(r, np.arange(k * own)).astype(np.int32)
        highs.addRows(k * own, lower.ravel(), upper.ravel(), len(v), starts, c.astype(np.int32), v)
        self._keys += keys
        self._pos.update((key, int(p)) for key, p in zip(keys, pos, strict=True))
        self._data = np.concatenate([self._data, data])
        self._count = np.concatenate([self._count, count])
        self._factor = np.concatenate([self._factor, np.ones(k)])
        self._live = np.concatenate([self._live, np.ones(k, dtype=bool)])
        return pos

    def _kind_of_keys(
        self, keys: Sequence[Hashable], problem: AllocationProblem, reference: np.ndarray
    ) -> np.ndarray:
        """Each job's kind (grouped objectives): an integer, the same for jobs with the same
        data (rates, GPUs, weight, reference), remembered per key and found again only for
        keys not seen before or whose data changed."""
        n, _ = problem.shape
        data = _job_data(problem, reference)
        kind = np.fromiter(map(self._kind_of.get, keys, repeat(-1)), np.int64, n)
        # keys not seen before (-1 reads the last kind row, as good as any), then keys whose
        # data changed: numbered in that order
        fresh = np.flatnonzero((self._kind_data[kind] != data).any(axis=1) | (kind < 0))
        for i in sorted(fresh.tolist(), key=lambda i: kind[i] >= 0):
            k = self._kind_id.setdefault(data[i].tobytes(), len(self._kind_id))
            if k >= len(self._kind_data):  # grown by doubling
                grown = np.zeros((2 * k + 8, data.shape[1]))
                grown[:k] = self._kind_data[:k]
                self._kind_data = grown
            self._kind_data[k] = data[i]
            self._kind_of[keys[i]] = kind[i] = k
        if len(self._kind_of) > 4 * n + 1024:  # forget the keys that left
            self._kind_of = dict(zip(keys, kind.tolist(), strict=True))
        return kind

    def _run_model(self, infeasible: bool = False) -> Any:
        """Solve from the current basis; HiGHS's model status. Where the warm start ends
        neither optimal nor (``infeasible`` allowed) infeasible, e.g. HiGHS's primal simplex
        stalling on a mended basis ("unknown"), the basis is dropped and the LP solved again
        from scratch."""
        done = {self._hs.HighsModelStatus.kOptimal}
        if infeasible:
            done.add(self._hs.HighsModelStatus.kInfeasible)
        status = None
        for cold in (False, True):
            if cold:
                self._highs.clearSolver()
            run_here(self._highs)
            self.solves += 1
            self.iterations += int(self._highs.getInfoValue("simplex_iteration_count")[1])
            status = self._highs.getModelStatus()
            if status in done:
                break
        return status

    def _run(self, what: str) -> np.ndarray:
        """Solve (:meth:`_run_model`); the column values (optimal, else an error)."""
        status = self._run_model()
        if status != self._hs.HighsModelStatus.kOptimal:
            raise OptschedError(
                f"{what}: HiGHS did not solve the LP ({self._highs.modelStatusToString(status)})"
            )
        return np.asarray(self._highs.getSolution().col_value, dtype=float)

    # -- the solves --------------------------------------------------------------------------

    def solve(
        self,
        problem: AllocationProblem,
        keys: Sequence[Hashable] | None = None,
        *,
        reference: np.ndarray | None = None,
        remaining: np.ndarray | None = None,
        elapsed: np.ndarray | None = None,
        ideal: np.ndarray | None = None,
        tolerance: float = 1e-4,
    ) -> Allocation:
        """The allocation of ``problem`` for this sequence's objective: ``reference`` for
        max-min and total throughput, ``remaining`` for min-makespan, ``elapsed``,
        ``remaining`` and ``ideal`` for finish-time fairness (as the functions of
        :mod:`optsched.exact.allocation` take them), ``keys`` (one per job, distinct) for
        the last two; for the first two, keys (optional) let it find the identical jobs
        once per key instead of at every solve. Its ``solves`` counts the LPs of this call.

        Raises
        ------
        InputError
            Another cluster than the sequence's, keys missing, repeated or of another
            length, or the input the matching function of optsched.exact.allocation refuses.
        """
        started, before = time.perf_counter(), self.solves
        n, m = problem.shape
        if m != self._m or not np.array_equal(problem.capacity, self.capacity):
            raise InputError("allocation sequence: the problem's capacity is not the sequence's")
        if n == 0:
            return Allocation(np.zeros((0, m)), 0.0, 0.0, 0.0, 0, 0.0)
        if keys is not None and (len(keys) != n or len(set(keys)) != n):
            raise InputError("allocation sequence: one distinct key per job")
        if self.objective in GROUPED:
            if reference is None:
                raise InputError(f"allocation sequence: {self.objective} needs a reference")
            if keys is None:  # identical jobs found by sorting their data
                key, first, of, count = _kinds(problem, np.asarray(reference).reshape(n))
                data = key[first]
                pos = self._edit([row.tobytes() for row in data], data, count)
            else:  # by their keys' kinds
                kind = self._kind_of_keys(keys, problem, reference)
                ranked = np.sort(kind)  # the kinds present, each job's: np.unique's, faster
                present = ranked[np.concatenate([[True], ranked[1:] != ranked[:-1]])]
                of = np.searchsorted(present, kind)
                count = np.bincount(of, weights=problem.count, minlength=len(present))
                pos = self._edit(present.tolist(), self._kind_data[present], count)
        else:
            if keys is None:
                raise InputError("allocation sequence: one distinct key per job")
            if (problem.count != 1).any():
                raise InputError(f"allocation sequence: {self.objective} takes one row per job")
            of = np.arange(n)
            data = _job_data(problem, np.zeros(n))
            pos = self._edit(keys, data, np.ones(n))
        cols, runnable = self._columns(pos), problem.runnable()
        if self.objective == "finish-time-fairness":
            if elapsed is None or remaining is None or ideal is None:
                raise InputError(
                    "allocation sequence: finish-time needs elapsed, remaining, ideal"
                )
            result = self._finish_time(problem, pos, elapsed, remaining, ideal, tolerance)
            seconds = time.perf_counter() - started
            return Allocation(
                result.x, result.value, result.lower, result.upper, result.solves, seconds
            )
        if self.objective == "min-makespan":
            if remaining is None:
                raise InputError("allocation sequence: min-makespan needs the remaining work")
            remaining = np.asarray(remaining, dtype=float).reshape(n)
            if not (remaining > 0).any():
                return Allocation(np.zeros((n, m)), 0.0, 0.0, 0.0, 0, 0.0)
            if ((remaining > 0) & ~runnable.any(axis=1)).any():
                raise InputError("min-makespan allocation: a job with work left can run nowhere")
            work = self._own_rows(pos)[:, 1].astype(np.int32)
            inf = self._hs.kHighsInf
            self._highs.changeRowsBounds(n, work, np.full(n, -inf), -remaining)
            values = self._run("min-makespan allocation (sequence)")
            value = lower = upper = float(values[0])
            x = np.maximum(values[cols], 0.0) / value if value > 0 else np.zeros((n, m))
        elif self.objective == "max-min-fairness":
            values = self._run("max-min-fairness allocation (sequence)")
            value = lower = upper = float(values[0])
            x = (np.maximum(values[cols], 0.0) / self._count[pos, None])[of]
        else:
            if self._optimum is None:  # else the edits kept the last optimum optimal
                self._optimum = self._run("max-throughput allocation (sequence)")
                self._value = -float(self._highs.getObjectiveValue())
            values, value = self._optimum, self._value
            lower = upper = value
            x = (np.maximum(values[cols], 0.0) / self._count[pos, None])[of]
        x = np.where(runnable, x, 0.0)
        return Allocation(
            x, value, lower, upper, self.solves - before, time.perf_counter() - started
        )

    def _finish_time(
        self,
        problem: AllocationProblem,
        pos: np.ndarray,
        elapsed: np.ndarray,
        remaining: np.ndarray,
        ideal: np.ndarray,
        tolerance: float,
    ) -> Allocation:
        """:func:`min_max_rho`'s bisection with its tests on this model (``_Tests``),
        starting from the last optimum."""
        tests = _Tests(self, problem, pos)
        result = min_max_rho(
            problem, elapsed, remaining, ideal, tolerance=tolerance, tests=tests, hint=self._level
        )
        self._level = result.upper
        return result

    def _scale_demands(self, pos: np.ndarray, want: np.ndarray) -> None:
        """Scale the demand rows of the rows at ``pos`` by the factors ``want`` where the
        current factor is off by more than 4× (``_Tests.solve``)."""
        now = self._factor[pos]
        off = np.flatnonzero((want > 4 * now) | (want < now / 4))
        if not len(off):
            return
        highs = self._highs
        runs = self._runs(self._data[pos[off]])
        cols = self._columns(pos[off])
        demand_rows = self._own_rows(pos[off])[:, 1].tolist()
        for i, p in enumerate(pos[off].tolist()):
            for t in np.flatnonzero(runs[i]).tolist():
                scaled = float(self._data[p, t]) * float(want[off[i]])
                highs.changeCoeff(demand_rows[i], int(cols[i, t]), -scaled)
        self._factor[pos[off]] = want[off]


class _Tests:
    """The finish-time tests of one solve on the sequence's model, in the row and column
    order of :func:`min_max_rho`'s LP (time rows, capacity rows, demand rows; a column per
    runnable (job, type) pair): what :class:`~optsched.exact.highs.RowBoundsLP` offers it."""

    def __init__(self, sequence: AllocationSequence, problem: AllocationProblem, pos: np.ndarray):
        n, m = problem.shape
        self._sequence = sequence
        lp = _Columns(problem)
        self._cols = sequence._columns(pos)[lp.jobs, lp.types]
        # the model's row of each of min_max_rho's rows, and the factor it is scaled by
        own_rows = sequence._own_rows(pos)
        self._rows = np.concatenate([own_rows[:, 0], np.arange(m), own_rows[:, 1]])
        self._pos, self._first = pos, n + m  # min_max_rho's first demand row
        self._scale = np.concatenate([np.ones(n + m), sequence._factor[pos]])

    def solve(self, rows: np.ndarray, b_ub: np.ndarray) -> tuple[int, str, np.ndarray]:
        """Set the demand rows ``rows`` (min_max_rho's numbering) to ``≤ b_ub`` and solve:
        (0 and the point, 2 when infeasible, 4 otherwise). Each demand row θ_j ≥ d_j is
        first scaled by about 1 / d_j (within 4×): a demand far below HiGHS's feasibility
        tolerance (10⁻⁷, absolute) would otherwise be met with no throughput at all."""
        seq = self._sequence
        rows = np.asarray(rows)
        demand = -np.asarray(b_ub, dtype=float)
        pos = self._pos[rows - self._first]
        seq._scale_demands(pos, np.where(demand > 0, 1 / demand, seq._factor[pos]))
        self._scale[rows] = seq._factor[pos]
        at = self._rows[rows].astype(np.int32)
        inf = seq._hs.kHighsInf
        upper = np.clip(np.asarray(b_ub, dtype=float) * self._scale[rows], -inf, inf)
        seq._highs.changeRowsBounds(len(at), at, np.full(len(at), -inf), upper)
        seq._run_model(infeasible=True)
        status, message = scipy_status(seq._highs, "solved")
        if status != 0:
            return status, message, np.empty(0)
        values = np.asarray(seq._highs.getSolution().col_value, dtype=float)
        return 0, message, values[self._cols]

    def dual_ray(self) -> np.ndarray | None:
        """HiGHS's dual ray after an infeasible test, in min_max_rho's row order."""
        ray = dual_ray(self._sequence._highs)
        return None if ray is None else np.asarray(ray[self._rows] * self._scale)
