"""Round-based allocation as exact linear programs (docs/models/allocation.md): the shares of
GPU time each active job receives on each GPU type, as Gavel (Narayanan et al., OSDI'20,
§4) formulates them, solved by HiGHS (:func:`optsched.exact.highs.linprog`).

The data of one allocation (:class:`AllocationProblem`): for n jobs and m GPU types,
``rates[j, t]`` (job j's speed on type t, e.g. rounds per second; 0: it cannot run there),
``scale[j]`` (its GPUs, K_j) and ``capacity[t]`` (GPUs of type t). An allocation X is the
fraction of time job j runs on type t (all K_j workers on that type), feasible when

    X ≥ 0,   Σ_t X[j, t] ≤ 1 (each job),   Σ_j K_j X[j, t] ≤ capacity[t] (each type),

and X[j, t] = 0 where j cannot run on t (rate 0, or K_j > capacity[t]). Job j's throughput
under X is Σ_t rates[j, t] X[j, t].

Objectives (each an exact LP or, for finish-time fairness, a certified bisection of LPs):

- :func:`max_min_share`: maximise min_j utility_j(X) / w_j, utility_j(X) = throughput_j(X) /
  reference_j (Gavel's max-min fairness, ``max_min_fairness_perf``; with all rates 1 its
  heterogeneity-agnostic version). ``fill="throughput"`` then maximises Σ_j utility_j / w_j
  over the max-min optimal allocations (a second LP; no job below the optimum).
- :func:`max_min_packed`: max-min fairness with space sharing, pairs of one-GPU jobs on one
  GPU at their co-location rates (``max_min_fairness_packed``).
- :func:`isolated_share`: each job 1/n of every type, no LP (Gavel's ``isolated``).
- :func:`max_total_share`: maximise Σ_j utility_j(X) (``max_sum_throughput_perf``).
- :func:`min_makespan`: the least T in which every job's remaining work fits, one LP in
  Y = T·X (Gavel bisects on T to 5 %; here exact).
- :func:`min_max_rho`: finish-time fairness, min max_j ρ_j(X) with ρ_j(X) = (elapsed_j +
  remaining_j / throughput_j(X)) / ideal_j, by bisection on the level with an LP feasibility
  test each step: the result's level is feasible and a proven infeasible level lies within
  ``tolerance`` (relative) below it.

Each takes ``central``: an optimum inside the optimal face (HiGHS's interior-point method
without crossover, as an interior-point solver such as Gavel's ECOS returns) instead of a
vertex (primal simplex). Every result reports its objective and the solve time; an LP
that HiGHS does not solve to optimality raises :class:`~optsched.errors.OptschedError`
(never a silent fallback).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from optsched.errors import InputError, OptschedError
from optsched.exact.highs import ColumnMatrix, LPResult, RowBoundsLP, RowBoundsSolver
from optsched.exact.highs import linprog as highs_linprog

if TYPE_CHECKING:
    from scipy.sparse import coo_array

Fill = Literal["none", "throughput"]


@dataclass(frozen=True)
class AllocationProblem:
    """One round's allocation data (module docstring); arrays are copied read-only."""

    rates: np.ndarray
    scale: np.ndarray
    capacity: np.ndarray
    weights: np.ndarray
    #: how many identical jobs each row stands for (1 each by default): a row's X is each
    #: of its jobs' share, and the row takes ``copies`` × K GPUs of a type's capacity
    copies: np.ndarray | None = None

    def __post_init__(self) -> None:
        rates = np.array(self.rates, dtype=float, ndmin=2)
        n, m = rates.shape
        scale = np.array(self.scale, dtype=float).reshape(n)
        capacity = np.array(self.capacity, dtype=float).reshape(m)
        weights = np.array(self.weights, dtype=float).reshape(n)
        count = np.ones(n) if self.copies is None else np.array(self.copies, dtype=float)
        if not (np.isfinite(rates).all() and (rates >= 0).all()):
            raise InputError("allocation rates must be finite and ≥ 0")
        if (scale < 1).any() or (capacity < 0).any() or (weights <= 0).any():
            raise InputError("allocation: scale ≥ 1, capacity ≥ 0 and weights > 0")
        for name, value in (
            ("rates", rates),
            ("scale", scale),
            ("capacity", capacity),
            ("weights", weights),
            ("copies", count.reshape(n)),
        ):
            value.flags.writeable = False
            object.__setattr__(self, name, value)

    @classmethod
    def trusted(
        cls, rates: np.ndarray, scale: np.ndarray, capacity: np.ndarray, weights: np.ndarray
    ) -> AllocationProblem:
        """The problem of float arrays its caller has made valid (shapes (n, m), n, m and
        n; rates finite and ≥ 0, scale ≥ 1, capacity ≥ 0, weights > 0) and never writes
        again: made read-only in place, without the checks and copies (an online policy
        builds one at every solve from its own validated state)."""
        problem = object.__new__(cls)
        copies = np.ones(len(scale))
        for name, value in (
            ("rates", rates),
            ("scale", scale),
            ("capacity", capacity),
            ("weights", weights),
            ("copies", copies),
        ):
            value.flags.writeable = False
            object.__setattr__(problem, name, value)
        return problem

    @property
    def count(self) -> np.ndarray:
        """How many identical jobs each row stands for (``copies``, 1 each by default)."""
        assert self.copies is not None  # set by __post_init__
        return self.copies

    @property
    def shape(self) -> tuple[int, int]:
        n, m = self.rates.shape
        return int(n), int(m)

    def runnable(self) -> np.ndarray:
        """Where X may be positive: rate > 0 and K_j ≤ capacity[t]."""
        return (self.rates > 0) & (self.scale[:, None] <= self.capacity[None, :])

    def throughput(self, x: np.ndarray) -> np.ndarray:
        """Each job's throughput Σ_t rates[j, t] X[j, t]."""
        return np.asarray((self.rates * x).sum(axis=1))

    def proportional(self) -> np.ndarray:
        """Each job's throughput with its time split over the types as their GPU counts
        (Gavel's proportional throughput, its reference for normalising). Summed row by
        row in C order, so that a job's value does not depend on the other rows (a matrix
        product's, or a sum over a column-major array, can differ in the last bit with the
        number of rows)."""
        share = self.capacity / self.capacity.sum()
        return np.asarray((np.ascontiguousarray(self.rates) * share).sum(axis=1))

    def reference(self) -> np.ndarray:
        """The reference throughput the allocation policies normalise by: the proportional
        throughput per GPU (÷ K: GPU-time, not time, is shared, as Gavel does)."""
        return np.asarray(np.maximum(self.proportional(), 1e-300) / self.scale)

    def equal_share(self) -> np.ndarray:
        """The allocation that gives every job the same share of every type, the most
        that fits: X[j, t] = s · capacity[t] / Σ_t capacity, with s the largest value such
        that Σ_j K_j X[j, t] ≤ capacity[t] and Σ_t X[j, t] ≤ 1 (Gavel's reference
        allocation for normalising throughputs)."""
        n, _ = self.shape
        if n == 0:
            return np.zeros(self.rates.shape)
        total = float(self.capacity.sum())
        share = self.capacity / total if total > 0 else np.zeros_like(self.capacity)
        s = min(1.0, total / float(self.scale.sum()))
        return np.outer(np.full(n, s), share)

    def violation(self, x: np.ndarray) -> float:
        """The largest violation of the allocation constraints by ``x`` (0: feasible)."""
        worst = max(0.0, float(-x.min(initial=0.0)))
        worst = max(worst, float((x.sum(axis=1) - 1).max(initial=0.0)))
        used = ((self.count * self.scale)[:, None] * x).sum(axis=0) - self.capacity
        worst = max(worst, float(used.max(initial=0.0)))
        return max(worst, float(np.abs(x[~self.runnable()]).max(initial=0.0)))


@dataclass(frozen=True)
class Allocation:
    """A solved allocation: ``x`` (jobs × types), the objective's ``value``, ``lower`` and
    ``upper`` (a certified interval around the optimum: equal to ``value`` for an LP solved to
    optimality; the bisection's bracket for :func:`min_max_rho`), ``solves`` (LPs solved) and
    ``seconds`` (their wall time)."""

    x: np.ndarray
    value: float
    lower: float
    upper: float
    solves: int
    seconds: float


#: Columns from which max-min's vertex is found by HiGHS's interior-point method and
#: crossover rather than its primal simplex (measured at 2,048 jobs × 3 types: 0.31 s
#: against 0.62 s; at 8,192: 1.8 s against 11.2 s; at 150 jobs the simplex takes 4 ms, the
#: interior point 15 ms). The other objectives stay with the simplex: on them the interior
#: point was slower at every size measured.
IPM_MIN_COLUMNS = 3_000


def linprog(c: np.ndarray, central: bool = False, ipm: bool = False, **kwargs: Any) -> LPResult:
    """An optimal vertex by HiGHS's primal simplex (``ipm``: by its interior-point method
    and crossover), or with ``central`` an optimum inside the optimal face (interior point
    without crossover)."""
    method: Literal["central", "ipm", "primal"] = (
        "central" if central else "ipm" if ipm else "primal"
    )
    return highs_linprog(c, method=method, **kwargs)


class _Columns:
    """The LP's columns: one per runnable (job, type) pair, then any extra ones."""

    def __init__(self, problem: AllocationProblem, extra: int = 0) -> None:
        self.problem = problem
        self.jobs, self.types = np.nonzero(problem.runnable())
        self.pairs = len(self.jobs)
        self.n = self.pairs + extra

    def rows(self) -> tuple[list[_Block], list[float]]:
        """Σ_t X[j, t] ≤ 1 per job and Σ_j K_j X[j, t] ≤ capacity[t] per type."""
        n_jobs, n_types = self.problem.shape
        k = np.arange(self.pairs)
        per_job = _block(np.ones(self.pairs), self.jobs, k, (n_jobs, self.n))
        gpus = self.problem.scale * self.problem.count
        per_type = _block(gpus[self.jobs], self.types, k, (n_types, self.n))
        return [per_job, per_type], [*np.ones(n_jobs), *self.problem.capacity]

    def to_matrix(self, values: np.ndarray) -> np.ndarray:
        x = np.zeros(self.problem.rates.shape)
        x[self.jobs, self.types] = np.maximum(values[: self.pairs], 0.0)
        return x


def _solved(result: LPResult, what: str) -> LPResult:
    if result.status != 0:
        raise OptschedError(f"{what}: HiGHS did not solve the LP ({result.message})")
    return result


class _Block(NamedTuple):
    """Rows of an LP's constraint matrix as (row, column, value) triplets."""

    row: np.ndarray
    col: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]


def _block(data: np.ndarray, row: np.ndarray, col: np.ndarray, shape: tuple[int, int]) -> _Block:
    return _Block(np.asarray(row), np.asarray(col), np.asarray(data, dtype=float), shape)


def _coo(*args: Any, **kwargs: Any) -> coo_array:
    """scipy's ``coo_array``, imported on first use (importing optsched.exact for a solve
    method must not load scipy.sparse; the LPs the online policies solve never do)."""
    from scipy.sparse import coo_array

    if len(args) == 1 and isinstance(args[0], _Block):
        b = args[0]
        return coo_array((b.data, (b.row, b.col)), shape=b.shape)
    return coo_array(*args, **kwargs)


def _triplets(block: Any) -> _Block:
    """``block`` (a :class:`_Block` or any scipy or dense matrix) as triplets."""
    if isinstance(block, _Block):
        return block
    coo = _coo(block)
    return _Block(coo.row, coo.col, coo.data, coo.shape)


def _vstack(blocks: list[Any]) -> ColumnMatrix | coo_array:
    """The blocks (:class:`_Block` or scipy) stacked vertically, as the column-wise matrix
    HiGHS reads: in canonical form (row indices sorted within each column), as scipy's
    conversions would leave it, but built at once with NumPy (an allocation policy builds
    hundreds of these LPs). Blocks with repeated entries are stacked by scipy instead,
    which sums them."""
    triplets = [_triplets(b) for b in blocks]
    if not triplets or len({b.shape[1] for b in triplets}) > 1:
        raise ValueError("stacking needs at least one block, all with the same columns")
    offsets = np.cumsum([0, *(b.shape[0] for b in triplets)])
    n_rows, n_cols = int(offsets[-1]), int(triplets[0].shape[1])
    rows = np.concatenate(
        [b.row.astype(np.int64) + o for b, o in zip(triplets, offsets[:-1], strict=True)]
    )
    cols = np.concatenate([b.col.astype(np.int64) for b in triplets])
    data = np.concatenate([b.data.astype(float) for b in triplets])
    order = np.lexsort((rows, cols))
    rows, cols, data = rows[order], cols[order], data[order]
    if ((np.diff(rows) == 0) & (np.diff(cols) == 0)).any():
        from scipy.sparse import vstack

        return _coo(vstack([_coo(b) for b in triplets]))
    indptr = np.searchsorted(cols, np.arange(n_cols + 1))
    return ColumnMatrix((n_rows, n_cols), indptr, rows, data)


def _distinct_rows(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the index of each distinct row's first occurrence, each row's distinct row), the
    distinct rows in lexicographic order: ``np.unique(key, axis=0, return_index=True,
    return_inverse=True)``'s index and inverse, by one stable lexicographic sort."""
    order = np.lexsort(key.T[::-1])  # column 0 first; stable: first occurrences lead
    ranked = key[order]
    new = np.ones(len(key), dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    of = np.empty(len(key), dtype=np.intp)
    of[order] = np.cumsum(new) - 1
    return order[new], of


def _job_data(problem: AllocationProblem, reference: np.ndarray) -> np.ndarray:
    """Each job's data row: its rates per type, GPUs, weight and ``reference``."""
    return np.column_stack(
        [problem.rates, problem.scale, problem.weights, np.asarray(reference, dtype=float)]
    )


def _kinds(
    problem: AllocationProblem, reference: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The jobs' kinds (same rates, GPUs, weight and reference): each job's data row
    (:func:`_job_data`), the first job of each kind, each job's kind, and each kind's
    number of jobs (``problem.count`` summed)."""
    key = _job_data(problem, reference)
    first, of = _distinct_rows(key)
    return key, first, of, np.bincount(of, weights=problem.count, minlength=len(first))


def _grouped(
    problem: AllocationProblem, reference: np.ndarray
) -> tuple[AllocationProblem, np.ndarray, np.ndarray] | None:
    """Identical jobs (same rates, GPUs, weight and reference) as one row each: the grouped
    problem, its rows' reference, and each job's row; None when no two jobs are identical.

    Exact for the symmetric LPs (max-min, total throughput): permuting identical jobs maps
    allocations to allocations of the same value, so averaging an optimum over those
    permutations is an optimum that gives identical jobs identical shares, which the grouped
    LP (a row's GPUs counted ``count`` times) describes; its size is the number of distinct
    jobs (a trace's job types), not of jobs."""
    _, first, of, count = _kinds(problem, reference)
    if len(first) == len(of):
        return None
    grouped = AllocationProblem(
        problem.rates[first],
        problem.scale[first],
        problem.capacity,
        problem.weights[first],
        count,
    )
    return grouped, np.asarray(reference, dtype=float)[first], of


def _expanded(result: Allocation, of: np.ndarray, started: float) -> Allocation:
    """A grouped problem's allocation given to every job of each row."""
    x = result.x[of]
    return Allocation(
        x, result.value, result.lower, result.upper, result.solves, time.perf_counter() - started
    )


def _max_min_model(
    problem: AllocationProblem, reference: np.ndarray
) -> tuple[_Columns, np.ndarray, np.ndarray, ColumnMatrix | coo_array, np.ndarray]:
    """The max-min LP: its columns, each pair's utility, and min c·x s.t. A x ≤ b with the
    rows per job (time), per type (capacity), then per job (z − Σ_t u_jt X_jt ≤ 0)."""
    n, _ = problem.shape
    cols = _Columns(problem, extra=1)
    z = cols.pairs
    utility = problem.rates[cols.jobs, cols.types] / (
        np.asarray(reference, dtype=float)[cols.jobs] * problem.weights[cols.jobs]
    )
    blocks, rhs = cols.rows()
    level = _block(
        np.concatenate([-utility, np.ones(n)]),
        np.concatenate([cols.jobs, np.arange(n)]),
        np.concatenate([np.arange(z), np.full(n, z)]),
        (n, cols.n),
    )
    c = np.zeros(cols.n)
    c[z] = -1.0
    return cols, utility, c, _vstack([*blocks, level]), np.array([*rhs, *np.zeros(n)])


def _dual_bound(
    problem: AllocationProblem,
    reference: np.ndarray,
    y_job: np.ndarray,
    y_cap: np.ndarray,
    y_level: np.ndarray,
) -> float:
    """An upper bound on the max-min optimum from a dual point of its LP (min −z s.t. the
    time, capacity and level rows, all ≤, duals ≤ 0), made exactly feasible first: the
    level duals scaled so that they sum to −1 or less (the z column), then each job's time
    dual lowered to y_job ≤ u_jt · y_level_j − K_j · count_j · y_cap_t for every type it can
    run on (its columns). Weak duality: −(Σ y_job + Σ_t capacity_t · y_cap_t) ≥ z*."""
    total = float(y_level.sum())
    if total >= 0:
        return math.inf
    y_level = y_level * max(1.0, -1.0 / total)
    utility = problem.rates / (reference * problem.weights)[:, None]
    gpus = (problem.scale * problem.count)[:, None]
    limit = np.where(
        problem.runnable(), utility * y_level[:, None] - gpus * y_cap[None, :], np.inf
    )
    y_job = np.minimum(y_job, limit.min(axis=1))
    return -(float(y_job.sum()) + float(problem.capacity @ y_cap))


def max_min_partitioned(
    problem: AllocationProblem, reference: np.ndarray, parts: int, *, central: bool = False
) -> Allocation:
    """Max-min fairness solved in ``parts`` independent pieces, as POP does (Narayanan et
    al., SOSP'21): job j goes to piece j mod ``parts`` with 1/``parts`` of every type's
    GPUs. The pieces' allocations together are feasible for the whole problem, and their
    least utility is ``lower`` (= ``value``). ``upper`` certifies the gap: the pieces'
    optimal duals (y_job, y_cap, y_level ≤ 0 for their time, capacity and level rows) give
    the whole LP the dual point y_job / parts, min over pieces of y_cap / parts,
    y_level / parts, made exactly feasible by :func:`_dual_bound`, whose value bounds the
    whole optimum from above.

    Raises
    ------
    InputError
        A job that some type can hold but not its 1/``parts`` share (fewer parts needed).
    """
    started = time.perf_counter()
    n, m = problem.shape
    reference = np.asarray(reference, dtype=float)
    if parts < 1:
        raise InputError(f"parts must be at least 1, got {parts}")
    x = np.zeros((n, m))
    y_job, y_level = np.zeros(n), np.zeros(n)
    cap_duals = np.zeros((parts, m))
    solves = 0
    for part in range(parts):
        rows = np.arange(part, n, parts)
        if not len(rows):
            continue
        piece = AllocationProblem(
            problem.rates[rows],
            problem.scale[rows],
            problem.capacity / parts,
            problem.weights[rows],
            problem.count[rows],
        )
        lost = problem.runnable()[rows].any(axis=1) & ~piece.runnable().any(axis=1)
        if lost.any():
            raise InputError(
                f"{parts} parts leave job row {int(rows[np.argmax(lost)])} no type with its "
                "GPUs; use fewer parts"
            )
        cols, _, c, a_ub, b_ub = _max_min_model(piece, reference[rows])
        solved = _solved(
            linprog(c, central, cols.n >= IPM_MIN_COLUMNS, A_ub=a_ub, b_ub=b_ub),
            "max-min allocation (a part)",
        )
        solves += 1
        x[rows] = cols.to_matrix(solved.x)
        duals = np.minimum(np.asarray(solved.ineqlin.marginals, dtype=float), 0.0)
        k = len(rows)
        y_job[rows], cap_duals[part], y_level[rows] = duals[:k], duals[k : k + m], duals[k + m :]
    level = problem.throughput(x) / (reference * problem.weights)
    lower = float(level.min())
    upper = _dual_bound(
        problem, reference, y_job / parts, cap_duals.min(axis=0) / parts, y_level / parts
    )
    return Allocation(x, lower, lower, max(upper, lower), solves, time.perf_counter() - started)


def max_min_share(
    problem: AllocationProblem,
    reference: np.ndarray,
    *,
    fill: Fill = "none",
    central: bool = False,
) -> Allocation:
    """Max-min fairness: maximise z subject to throughput_j(X) / (reference_j · w_j) ≥ z for
    every job (Gavel, OSDI'20, §4.1 "LAS"). ``reference`` (> 0 per job) normalises each
    job's throughput, e.g. its throughput under :meth:`AllocationProblem.equal_share`.
    With ``fill="throughput"``, a second LP keeps every job at z* or above and maximises
    Σ_j throughput_j / (reference_j · w_j). ``central`` returns an optimum inside the
    optimal face (interior point, no crossover; an interior-point solver such as Gavel's
    ECOS does the same) instead of a vertex: jobs off the bottleneck share the slack."""
    started = time.perf_counter()
    n, _ = problem.shape
    if n == 0:
        return Allocation(np.zeros(problem.rates.shape), 0.0, 0.0, 0.0, 0, 0.0)
    grouped = _grouped(problem, reference)
    if grouped is not None:
        sub, sub_reference, of = grouped
        result = max_min_share(sub, sub_reference, fill=fill, central=central)
        return _expanded(result, of, started)
    cols, utility, c, a_ub, b_ub = _max_min_model(problem, reference)
    z = cols.pairs
    blocks, rhs = cols.rows()
    ipm = cols.n >= IPM_MIN_COLUMNS
    first = _solved(linprog(c, central, ipm, A_ub=a_ub, b_ub=b_ub), "max-min allocation")
    best = float(first.x[z])
    solves, values = 1, first.x
    if fill == "throughput" and best > 0:
        # keep every job at the optimum (a hair below, for HiGHS's tolerances) and add
        # the most total utility
        fixed = _block(-utility, cols.jobs, np.arange(z), (n, cols.n))
        second = linprog(
            np.concatenate([-utility * problem.count[cols.jobs], [0.0]]),
            central,
            ipm,
            A_ub=_vstack([*blocks, fixed]),
            b_ub=np.array([*rhs, *np.full(n, -best * (1 - 1e-9))]),
        )
        values, solves = _solved(second, "max-min allocation (fill)").x, 2
    x = cols.to_matrix(values)
    return Allocation(x, best, best, best, solves, time.perf_counter() - started)


@dataclass(frozen=True)
class PackedAllocation(Allocation):
    """A max-min allocation with space sharing: ``x`` as for :class:`Allocation` (each job
    of a row alone), and ``y[p, t]`` the time (in GPUs of type t) that jobs of the rows
    ``pairs[p]`` spend training together, two on a GPU; each job of row a receives
    ``y[p, t] / count_a`` of it (twice that when both rows are a)."""

    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=int))
    y: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))


def max_min_packed(
    problem: AllocationProblem,
    reference: np.ndarray,
    pairs: np.ndarray,
    together: np.ndarray,
    *,
    fill: Fill = "none",
    central: bool = False,
) -> PackedAllocation:
    """Max-min fairness with space sharing (Gavel's ``max_min_fairness_packed``, OSDI'20
    §3.1), over rows of identical one-GPU or larger jobs (``problem.count`` jobs a row; 1
    each for a job-level LP). Besides X (each job alone), a column Y[p, t] for every pair
    p = (a, b) of rows of one-GPU jobs (a = b allowed when the row holds two or more jobs)
    and type t: the GPU-time on t during which a job of row a and a job of row b train
    together on one GPU, at rates ``together[p, t]`` = (a's, b's co-location rate; 0: they
    cannot share there). With n_a the jobs of row a and δ_p = 2 when a = b (both jobs of
    the pair are of that row), else 1, maximise z subject to, for every row a,

        Σ_t u_at · (X[a, t] + Σ_{p ∋ a} δ_p · r_a(p, t) · Y[p, t] / n_a) ≥ z,
        Σ_t X[a, t] + Σ_{p ∋ a, t} δ_p · Y[p, t] / n_a ≤ 1,

    (u_at = rate / (reference · w)) and per type Σ_a n_a K_a X[a, t] + Σ_p Y[p, t] ≤
    capacity[t] (a pair holds one GPU).

    Exact for the job-level LP: that LP is symmetric in identical jobs, so some optimum gives
    identical jobs identical shares alone and spreads each row pair's time evenly over its
    job pairs (Y / (n_a n_b) each, Y / (n_a (n_a − 1) / 2) within a row), which is what this
    LP describes. A pair column whose rates sum to at most 1 is left out: moving its time to
    X[a, t] += r_a·Y/n_a and X[b, t] += r_b·Y/n_b gives every job the same throughput with
    no more time and no more GPUs (r_a + r_b ≤ 1). With ``fill="throughput"`` a second LP
    keeps every row at z* or above and maximises the jobs' total utility, so that jobs share
    a GPU only where that adds throughput (with GPUs to spare, the max-min optimum alone may
    pair jobs that could each have run alone)."""
    started = time.perf_counter()
    n, m = problem.shape
    pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
    together = np.asarray(together, dtype=float).reshape(len(pairs), m, 2)
    if n == 0:
        return PackedAllocation(np.zeros((0, m)), 0.0, 0.0, 0.0, 0, 0.0, pairs, np.zeros((0, m)))
    count = problem.count
    if len(pairs) and (problem.scale[pairs] != 1).any():
        raise InputError("packed allocation: only one-GPU jobs share a GPU")
    same = pairs[:, 0] == pairs[:, 1]
    useful = (together[..., 0] + together[..., 1] > 1) & (problem.capacity[None, :] >= 1)
    useful &= (problem.rates[pairs[:, 0]] > 0) & (problem.rates[pairs[:, 1]] > 0)
    useful &= ~same[:, None] | (count[pairs[:, 0]] >= 2)[:, None]
    p_idx, t_idx = np.nonzero(useful)
    cols = _Columns(problem, extra=len(p_idx) + 1)
    z = cols.n - 1
    first = cols.pairs + np.arange(len(p_idx))
    utility = problem.rates / (np.asarray(reference, dtype=float) * problem.weights)[:, None]
    a, b = pairs[p_idx, 0], pairs[p_idx, 1]
    # each side of a pair column takes 1 / n of each job of its row (a = b: both sides)
    rows = np.concatenate([a, b])
    cols_of = np.concatenate([first, first])
    share = np.concatenate([1.0 / count[a], 1.0 / count[b]])
    rate = np.concatenate([together[p_idx, t_idx, 0], together[p_idx, t_idx, 1]])
    gain = share * rate * utility[rows, np.concatenate([t_idx, t_idx])]
    blocks, rhs = cols.rows()
    time_rows = _coo((share, (rows, cols_of)), shape=(n, cols.n))
    gpu_rows = _coo((np.ones(len(p_idx)), (t_idx, first)), shape=(m, cols.n))
    level = _coo(
        (
            np.concatenate([-utility[cols.jobs, cols.types], -gain, np.ones(n)]),
            (
                np.concatenate([cols.jobs, rows, np.arange(n)]),
                np.concatenate([np.arange(cols.pairs), cols_of, np.full(n, z)]),
            ),
        ),
        shape=(n, cols.n),
    )
    a_ub = _vstack([_coo(_coo(blocks[0]) + time_rows), _coo(_coo(blocks[1]) + gpu_rows), level])
    b_ub = np.array([*rhs, *np.zeros(n)])
    c = np.zeros(cols.n)
    c[z] = -1.0
    ipm = cols.n >= IPM_MIN_COLUMNS
    result = _solved(linprog(c, central, ipm, A_ub=a_ub, b_ub=b_ub), "packed max-min allocation")
    value, solves, x = float(result.x[z]), 1, result.x
    if fill == "throughput" and value > 0:
        # every row at the optimum (a hair below, for HiGHS's tolerances), then the most
        # total utility of the jobs: time together only where it adds throughput
        total = -(level.tocsr()[:, :z].T @ count)  # Σ_rows n_a · utility_a, per column
        bounds = np.array([[0.0, np.inf]] * cols.n)
        bounds[z] = (value * (1 - 1e-9), np.inf)
        second = linprog(
            np.concatenate([-total, [0.0]]), central, ipm, A_ub=a_ub, b_ub=b_ub, bounds=bounds
        )
        x, solves = _solved(second, "packed max-min allocation (fill)").x, 2
    y = np.zeros((len(pairs), m))
    y[p_idx, t_idx] = np.maximum(x[first], 0.0)
    return PackedAllocation(
        cols.to_matrix(x),
        value,
        value,
        value,
        solves,
        time.perf_counter() - started,
        pairs,
        y,
    )


def isolated_share(problem: AllocationProblem) -> Allocation:
    """Every job 1/n of each type's GPUs (Gavel's ``isolated``): X[j, t] = capacity[t] /
    (n · K_j) where j can run (0 elsewhere), scaled down to Σ_t X[j, t] ≤ 1 (no LP).
    Feasible: Σ_j K_j X[j, t] ≤ capacity[t]. Its value is the least throughput."""
    n, _ = problem.shape
    if n == 0:
        return Allocation(np.zeros(problem.rates.shape), 0.0, 0.0, 0.0, 0, 0.0)
    x = np.where(problem.runnable(), problem.capacity[None, :] / (n * problem.scale[:, None]), 0.0)
    x /= np.maximum(x.sum(axis=1, keepdims=True), 1.0)
    value = float(problem.throughput(x).min())
    return Allocation(x, value, value, value, 0, 0.0)


def max_total_share(
    problem: AllocationProblem, reference: np.ndarray, *, central: bool = False
) -> Allocation:
    """Maximise Σ_j w_j · throughput_j(X) / reference_j (Gavel's
    ``max_sum_throughput_perf``: the total normalised throughput)."""
    started = time.perf_counter()
    grouped = _grouped(problem, reference)
    if grouped is not None:
        sub, sub_reference, of = grouped
        return _expanded(max_total_share(sub, sub_reference, central=central), of, started)
    cols = _Columns(problem)
    gain = (
        problem.count[cols.jobs]
        * problem.weights[cols.jobs]
        * problem.rates[cols.jobs, cols.types]
        / np.asarray(reference, dtype=float)[cols.jobs]
    )
    blocks, rhs = cols.rows()
    if cols.n == 0:
        return Allocation(np.zeros(problem.rates.shape), 0.0, 0.0, 0.0, 0, 0.0)
    result = _solved(
        linprog(-gain, central, A_ub=_vstack(blocks), b_ub=np.array(rhs)),
        "max-throughput allocation",
    )
    value = float(-result.fun)
    return Allocation(
        cols.to_matrix(result.x), value, value, value, 1, time.perf_counter() - started
    )


def min_makespan(
    problem: AllocationProblem, remaining: np.ndarray, *, central: bool = False
) -> Allocation:
    """The least T such that every job's ``remaining`` work (in the rates' units, e.g.
    rounds) is done by T under one allocation held from now: minimise T over Y = T·X ≥ 0
    with Σ_t rates[j, t] Y[j, t] ≥ remaining_j, Σ_t Y[j, t] ≤ T, Σ_j K_j Y[j, t] ≤
    capacity[t] · T — one exact LP (Gavel's ``min_total_duration`` bisects on T with a 5 %
    tolerance). The allocation is X = Y / T."""
    started = time.perf_counter()
    n, m = problem.shape
    remaining = np.asarray(remaining, dtype=float)
    if n == 0 or not (remaining > 0).any():
        return Allocation(np.zeros(problem.rates.shape), 0.0, 0.0, 0.0, 0, 0.0)
    cols = _Columns(problem, extra=1)
    t = cols.pairs
    k = np.arange(cols.pairs)
    if np.setdiff1d(np.nonzero(remaining > 0)[0], cols.jobs).size:
        raise InputError("min-makespan allocation: a job with work left can run nowhere")
    per_job = _block(
        np.concatenate([np.ones(cols.pairs), -np.ones(n)]),
        np.concatenate([cols.jobs, np.arange(n)]),
        np.concatenate([k, np.full(n, t)]),
        (n, cols.n),
    )
    per_type = _block(
        np.concatenate([problem.scale[cols.jobs], -problem.capacity]),
        np.concatenate([cols.types, np.arange(m)]),
        np.concatenate([k, np.full(m, t)]),
        (m, cols.n),
    )
    work = _block(-problem.rates[cols.jobs, cols.types], cols.jobs, k, (n, cols.n))
    c = np.zeros(cols.n)
    c[t] = 1.0
    result = _solved(
        linprog(
            c,
            central,
            A_ub=_vstack([per_job, per_type, work]),
            b_ub=np.concatenate([np.zeros(n + m), -remaining]),
        ),
        "min-makespan allocation",
    )
    span = float(result.x[t])
    x = cols.to_matrix(result.x / span) if span > 0 else np.zeros(problem.rates.shape)
    return Allocation(x, span, span, span, 1, time.perf_counter() - started)


#: The violation (× (1 + |right-hand side|)) of every row, and of x ≥ 0, that a warm-started
#: finish-time test's "infeasible" must rule out: three times HiGHS's feasibility tolerance
#: (10⁻⁷ on a row's activity), so that no solve from scratch can find the level feasible.
LOOSER = 3e-7


def _infeasible_beyond(
    a_ub: ColumnMatrix,
    column_of: np.ndarray,
    full: np.ndarray,
    y: np.ndarray,
    looser: float = LOOSER,
) -> bool:
    """Whether y proves the finish-time LP (``a_ub`` x ≤ ``full``, its time, capacity and
    demand rows, whose entries lie in columns ``column_of``; x ≥ 0) infeasible even with
    every row loosened by ``looser`` (1 + |full|) and
    x ≥ −``looser`` (Farkas: for y ≥ 0, every such x has yᵀAx ≤ yᵀ(rhs + slack), while
    yᵀAx = gᵀx with g = Aᵀy, and x ≤ 1 + 10⁻⁵ by the loosened time rows for up to 30 GPU
    types, so gᵀx ≥ Σ min(g, 0)(1 + 10⁻⁵) − ``looser`` Σ max(g, 0)); with a margin for
    float rounding. ``looser=0``: the LP itself is infeasible."""
    y = np.maximum(y, 0.0)
    g = np.bincount(column_of, weights=a_ub.data * y[a_ub.indices], minlength=a_ub.shape[1])
    least = float(np.minimum(g, 0).sum() * (1 + 1e-5) - looser * np.maximum(g, 0).sum())
    most = float(y @ (full + looser * (1 + np.abs(full))))
    scale = float(np.abs(g).sum() + y @ np.abs(full))
    return least - most > 1e-9 * scale


#: The first relative step from a finish-time bisection's ``hint`` (its optimum moves by
#: 0.1 % at the median between consecutive solves of Gavel's heavy trace, 2.4 % at the 99th
#: percentile).
HINT_STEP = 1e-3


def _gallop(
    probe: Callable[[float], tuple[float, np.ndarray] | None],
    hint: float,
    lower: float,
    tolerance: float,
) -> tuple[float, float, np.ndarray | None]:
    """Bracket a finish-time optimum from ``hint``: (lower, upper, the point at upper, None
    when no feasible level was found up to 1.26× the hint, upper then ∞). ``probe(r)``
    gives (a feasible level ≤ r, its point) or None (r infeasible). Tests the hint, then
    levels (1 + s)-fold below the best level found (feasible hint) or above the hint
    (infeasible), s = ``HINT_STEP`` growing 4× per test, until the answer changes."""
    step = HINT_STEP
    got = probe(hint)
    if got is not None:
        upper, found = got
        while upper > lower * (1 + tolerance):
            level = upper / (1 + step)
            if level <= lower:
                break
            got = probe(level)
            if got is None:
                return level, upper, found
            if got[0] >= upper:  # no certified progress: bisect from here
                break
            (upper, found), step = got, 4 * step
        return lower, upper, found
    lower = hint
    while step < 1:
        level = hint * (1 + step)
        got = probe(level)
        if got is not None:
            return lower, *got
        lower, step = level, 4 * step
    return lower, math.inf, None


def min_max_rho(
    problem: AllocationProblem,
    elapsed: np.ndarray,
    remaining: np.ndarray,
    ideal: np.ndarray,
    *,
    tolerance: float = 1e-4,
    central: bool = False,
    warm_start: bool = True,
    tests: RowBoundsSolver | None = None,
    hint: float | None = None,
) -> Allocation:
    """Finish-time fairness: minimise max_j ρ_j(X), ρ_j(X) = (elapsed_j + remaining_j /
    throughput_j(X)) / ideal_j (Themis, NSDI'20; Gavel's ``finish_time_fairness``). For a
    level r, ρ_j ≤ r ⟺ throughput_j(X) ≥ remaining_j / (r · ideal_j − elapsed_j) (and
    r · ideal_j > elapsed_j): an LP feasibility test. Bisection on r keeps a feasible level
    ``upper`` (its allocation is returned) and an infeasible one ``lower``, and stops when
    upper ≤ lower · (1 + ``tolerance``): the optimum lies in [lower, upper], certified by the
    LP solves at both ends.

    With ``warm_start`` (and not ``central``) the tests run on one LP, each from the last
    one's simplex basis, and a level is solved from scratch only where that test's answer
    is not clear of HiGHS's tolerances, and for the allocation returned: the same levels,
    answers and allocation as with every test solved from scratch (``warm_start=False``),
    in about half the time.

    ``tests`` runs the warm tests on a caller's LP instead (a
    :class:`~optsched.exact.highs.RowBoundsSolver` over this LP's rows and columns, e.g. an
    :class:`~optsched.exact.allocation_sequence.AllocationSequence`'s model), whose answers
    need not match solves from scratch, only be proved: a feasible answer's point is scaled
    down until it meets every time and capacity row exactly and its own max ρ is the level
    kept (often below the level tested); an infeasible answer counts when the dual ray proves
    the LP itself infeasible; anything else is solved from scratch. The allocation is the
    point of the level kept, and when every job fits alone on its fastest type that
    allocation (the optimum: each job at its least ρ) is returned without an LP; the equal
    share's own point, not a test, is the first upper end. ``hint`` (e.g. the last optimum
    of a sequence) is tested first, then levels a factor 1 + s below the best level found
    (a feasible hint) or above the hint (an infeasible one), s = :data:`HINT_STEP`, 4×, 16×
    … until the answer flips (up to 1.26× above the hint; beyond, as without a hint): where
    the optimum moved little, a handful of tests instead of the whole bisection. The caller's
    tests' rows should be scaled so that their right-hand sides are not far below HiGHS's
    absolute tolerance (10⁻⁷), as the sequence's are; where a point's own level makes no
    progress, the bisection stops with its certified, wider bracket."""
    started = time.perf_counter()
    n, _ = problem.shape
    elapsed, remaining, ideal = (np.asarray(a, dtype=float) for a in (elapsed, remaining, ideal))
    if n == 0:
        return Allocation(np.zeros(problem.rates.shape), 0.0, 0.0, 0.0, 0, 0.0)
    if not ((ideal > 0).all() and (remaining > 0).all() and (elapsed >= 0).all()):
        raise InputError("finish-time allocation: ideal, remaining > 0 and elapsed ≥ 0")
    cols = _Columns(problem)
    blocks, rhs = cols.rows()
    rate = problem.rates[cols.jobs, cols.types]
    demand_rows = _block(-rate, cols.jobs, np.arange(cols.pairs), (n, cols.n))
    a_ub = _vstack([*blocks, demand_rows])
    demand_at = np.arange(len(rhs), len(rhs) + n)
    fixed_rhs = np.array(rhs)  # the time and capacity rows'; the demand rows' vary
    assert isinstance(a_ub, ColumnMatrix)  # no entry repeated: stacked as HiGHS reads it
    column_of = np.repeat(np.arange(cols.n), np.diff(a_ub.indptr))  # each entry's column
    # the simplex's tests start from the last one's basis; the interior point's cannot
    warm: RowBoundsSolver | None = None
    if tests is not None:
        warm = tests
    elif warm_start and not central:
        b_ub = np.array([*rhs, *np.zeros(n)])  # the demand rows' are set by each test
        warm = RowBoundsLP(np.zeros(cols.n), A_ub=a_ub, b_ub=b_ub, method="primal")
    solves = 0
    scratch: dict[float, np.ndarray] = {}  # the points of levels solved from scratch

    def demand(r: float) -> np.ndarray | None:
        """The demand rows' right-hand side at level r (None: r is below a job's
        elapsed time, no allocation reaches it)."""
        slack = r * ideal - elapsed
        return None if (slack <= 0).any() else -remaining / slack

    def solved(r: float) -> np.ndarray | None:
        """Level r's point from a solve from scratch (None: infeasible)."""
        nonlocal solves
        b = demand(r)
        if b is None:
            return None
        solves += 1
        full = np.concatenate([fixed_rhs, b])
        matrix = a_ub
        if tests is not None:  # each demand row scaled to a right-hand side of -1, as the
            # caller's tests are: HiGHS's absolute tolerance then means a relative one
            row_scale = np.concatenate([np.ones(len(fixed_rhs)), -1 / b])
            full = full * row_scale
            data = a_ub.data * row_scale[a_ub.indices]
            matrix = ColumnMatrix(a_ub.shape, a_ub.indptr, a_ub.indices, data)
        result = linprog(np.zeros(cols.n), central, A_ub=matrix, b_ub=full)
        if result.status == 2:
            return None
        scratch[r] = _solved(result, "finish-time allocation").x
        return scratch[r]

    def feasible(r: float) -> np.ndarray | None:
        """A point at level r (None: infeasible). A test on the warm-started LP counts only
        where a solve from scratch, as the bisection made before, gives the same answer:
        its point meets every row to a relative 10⁻¹² (float rounding; HiGHS allows 10⁻⁷
        on a row's activity, more than a small job's whole demand), or HiGHS's dual ray
        proves the LP infeasible with every row loosened by :data:`LOOSER`
        (:func:`_infeasible_beyond`). Between the two, at HiGHS's tolerances, either
        answer could be given, and the level is solved from scratch. (Where a solve from
        scratch would fail, HiGHS's status "unknown", and the warm test's answer is clear,
        the bisection goes on with that answer.)"""
        nonlocal solves
        if warm is None:
            return from_scratch(r)
        b = demand(r)
        if b is None:
            return None
        solves += 1
        status, _, point = warm.solve(demand_at, b)
        x = np.asarray(point, dtype=float)
        full = np.concatenate([fixed_rhs, b])
        if status == 0:
            if tests is not None:  # the point made exactly feasible, its own level checked
                x = within(x)  # (HiGHS meets a row to 10⁻⁷: its level can be that above r)
                if level(x) <= r * (1 + 1e-6):
                    return x
            elif (activity(x) - full <= 1e-12 * np.abs(full)).all() and (x >= 0).all():
                return x
        elif status == 2:
            ray = warm.dual_ray()
            # the caller's tests: proved infeasible is enough (no solve from scratch to match)
            looser = LOOSER if tests is None else 0.0
            if ray is not None and _infeasible_beyond(a_ub, column_of, full, -ray, looser):
                return None
        return from_scratch(r)

    def from_scratch(r: float) -> np.ndarray | None:
        """:func:`solved`, its point made exactly feasible for a caller's ``tests``."""
        point = solved(r)
        return point if point is None or tests is None else within(point)

    def activity(x: np.ndarray) -> np.ndarray:
        """Every row's activity at ``x``."""
        rows = len(fixed_rhs) + n
        return np.bincount(a_ub.indices, weights=a_ub.data * x[column_of], minlength=rows)

    def within(x: np.ndarray) -> np.ndarray:
        """``x`` ≥ 0 scaled down until it meets every time and capacity row exactly."""
        x = np.maximum(x, 0.0)
        fixed = activity(x)[: len(fixed_rhs)]
        over = np.divide(fixed, fixed_rhs, out=np.zeros_like(fixed), where=fixed_rhs > 0)
        return np.asarray(x / max(1.0, float(over.max(initial=0.0))))

    def level(x: np.ndarray) -> float:
        """max_j ρ_j of the point ``x`` (over the LP's columns)."""
        theta = np.bincount(cols.jobs, weights=rate * x[: cols.pairs], minlength=n)
        with np.errstate(divide="ignore"):
            return float(((elapsed + remaining / theta) / ideal).max())

    def attained(x: np.ndarray, r: float) -> float:
        """The level to keep for a point found feasible at r: with a caller's ``tests``,
        whose points are made exactly feasible, the point's own level (often below r)."""
        return level(x) if tests is not None else r

    def probe(r: float) -> tuple[float, np.ndarray] | None:
        x = feasible(r)
        return None if x is None else (attained(x, r), x)

    # the best job alone on its fastest runnable type bounds every level from below
    best_rate = np.where(problem.runnable(), problem.rates, 0.0).max(axis=1)
    if (best_rate <= 0).any():
        raise InputError("finish-time allocation: a job can run nowhere")
    lower = float(((elapsed + remaining / best_rate) / ideal).max()) * (1 - 1e-12)
    if tests is not None:  # every job alone on its fastest type, where they all fit
        alone = np.zeros(problem.shape)
        alone[np.arange(n), np.argmax(np.where(problem.runnable(), problem.rates, -1), 1)] = 1
        if problem.violation(alone) == 0:
            best = level(alone[cols.jobs, cols.types])
            return Allocation(alone, best, lower, best, 0, time.perf_counter() - started)
    got: tuple[float, np.ndarray] | None = None
    if hint is not None and math.isfinite(hint) and hint > lower:
        lower, upper, found = _gallop(probe, hint, lower, tolerance)
        got = None if found is None else (upper, found)
    if got is None:
        equal = problem.equal_share()
        equal_rate = np.maximum(problem.throughput(equal), 1e-300)
        upper = float(((elapsed + remaining / equal_rate) / ideal).max())
        if tests is None:
            got = probe(upper) if math.isfinite(upper) else None
        else:  # the equal share's own point (exactly feasible) where every job runs in it
            share = within(equal[cols.jobs, cols.types])
            got = (level(share), share) if math.isfinite(level(share)) else None
    while got is None:  # the equal share can miss (a job runs nowhere in it): grow
        upper = 2 * max(upper if math.isfinite(upper) else lower, lower, 1e-12)
        got = probe(upper)
    upper, found = got
    while upper > lower * (1 + tolerance):
        mid = math.sqrt(lower * upper) if lower > 0 else upper / 2
        got = probe(mid)
        if got is None:
            lower = mid
        elif got[0] < upper:
            upper, found = got
        else:  # no certified progress (a point at HiGHS's tolerance): the bracket as it is
            break
    if tests is None and upper not in scratch and warm is not None:
        # the level found solved from scratch: its point does not depend on the tests
        # before it (the warm one, feasible to 10⁻¹², stays should that solve disagree)
        again = solved(upper)
        found = found if again is None else again
    return Allocation(
        cols.to_matrix(found), upper, lower, upper, solves, time.perf_counter() - started
    )
