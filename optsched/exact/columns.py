"""The column-generation bound (``column-bound``, both modes): the Lagrangian bound's
relaxation solved as a linear programme over its per-job paths, and tightened by conflict
cuts that no capacity row can express (docs/models/column-bound.md).

:mod:`optsched.exact.lagrangian` prices GPU capacity with multipliers and improves them by
subgradient steps. Here the multipliers come from a *master* LP instead (Dantzig–Wolfe): it
mixes, for every job, the paths priced so far (one convex combination per job) under the
capacity rows and the cuts; its duals are the next multipliers, and each job's dynamic
programme prices a new path at them. Every iteration's Lagrangian value at those multipliers
is a certified bound, whatever the master's status; at convergence it equals the master's
value.

The master's value is also a ceiling: once its solution holds every step's row, uses no
spare column and violates no cut, it is feasible for the master over every path and every
cut, so no multipliers give more (LP duality). The run stops as soon as that ceiling,
rounded like a bound, is the bound already certified: the objective is an integer on the
grid, so further iterations could not raise it. Not in relaxed mode with the cuts: its exact
pricing ranges over staggered rounds only, which can cost more than the programme's paths
in the master (three tasks on two GPUs take one slot there), so its values can pass the
master's.

On a grid of more than :data:`MAX_STEPS` steps the master's capacity rows first hold
**blocks** of consecutive steps (one multiplier per row and block, the same at each of its
steps: L at such multipliers is a bound like any other), split :data:`REFINE` ways each time
the master converges, down to single steps; the paths are priced on the grid's steps
throughout.

Gang mode adds **conflict cuts**. A gang round holds its GPUs together, so on a group of m
GPUs at most one job holds k or more of them when 2k > m, and a job that holds m + 1 − k
or more leaves no room for another that holds k: for every group q, step t, such k and any
job i,

    [i holds ≥ m + 1 − k GPUs of q at t] + Σ_{j ≠ i} [j holds ≥ k GPUs of q at t]  ≤  1.

The capacity rows and the dual feasible cuts count rounds' GPUs in aggregate and let a
fraction of a round of 4 on a group of 4 run beside a round of 1; these cuts do not. They
are separated from the master's solution (only the violated ones are added) and priced per
job in its dynamic programme.

Relaxed mode adds the same cuts once the master without them converges (a relaxed task holds
its GPU while it computes, so they hold there too). A round whose tasks start apart holds
fewer GPUs at a time and can pay less conflict price than the programme's rounds, which hold
all K together, so there the programme only proposes paths: each job is then priced exactly
over its staggered rounds (:mod:`optsched.exact.staggered`), and only those iterations
certify a value.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from optsched.budget import EXACT_TIME_LIMIT, Budget
from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import completions, evaluate, incumbent
from optsched.exact import highs
from optsched.exact.lagrangian import (
    BelowCriticalPath,
    Cover,
    EmptyBox,
    TooLarge,
    _Job,
    _multipliers,
    _price,
    _Problem,
    _problem,
    _Round,
    add_held,
    occupied,
    price_tables,
    pricing_work,
    refuse_above_upper,
    restrict_completions,
    whole_steps,
    without_paths,
)
from optsched.instance import Instance
from optsched.options import Options, count, number, switch
from optsched.registry import register
from optsched.schedule import Schedule
from optsched.work import WorkMeter, work_option

if TYPE_CHECKING:
    from optsched.exact.capacity import ClassPrices

#: The default grid: the data's unit, coarsened ×10 while the incumbent's makespan spans
#: more than this many steps (the master has a capacity row per row and step, and on finer
#: grids its columns take many more iterations to settle).
MAX_STEPS = 1_000

#: Steps of the master at most in gang mode with conflict cuts: it keeps what each path
#: holds of every group at every step, so memory grows with steps × paths; 10× the default
#: grid.
MAX_MASTER_STEPS = 10 * MAX_STEPS

#: On a grid of more than :data:`MAX_STEPS` steps (one the data's unit keeps fine), the
#: master's capacity rows first hold blocks of consecutive steps, this many blocks at most
#: (multipliers constant over each block), and each time the master converges the blocks are
#: split :data:`REFINE` ways, down to single steps.
FIRST_BLOCKS = MAX_STEPS // 4
REFINE = 4

#: Rounds of separation (cuts added, master solved again) per iteration at most.
SEPARATIONS = 20

#: Stop once the master's value rounds to the bound certified (no multipliers can certify
#: more on the grid; module doc); off only to test that this loses nothing.
STOP_AT_CEILING = True

#: Multipliers are priced at this share of the best ones so far plus the rest of the
#: master's duals (Wentges' smoothing: the master's duals alone jump from one extreme to
#: another in the first iterations).
SMOOTHING = 0.5

#: A cut counts as violated above 1 + this.
VIOLATION = 1e-6

#: Work units of one work-second (2-core reference machine, ``benchmarks/work_rates.py``):
#: the Lagrangian's count of each pricing (cells, rounds, jobs; twice that with conflict
#: prices, whose rounds try every split), plus per master LP solved :data:`PIVOT_WORK` per
#: simplex iteration and row and :data:`SOLVE_WORK` (HiGHS's dual simplex from the last
#: basis took 0.1-0.17 CPU-µs per iteration and row and 1-1.5 ms per solve, from the exact
#: family's 10-job instances to 200 jobs on 140 GPUs, where the master's size per non-zero
#: varied 60-fold).
WORK_PER_SECOND = 7.7e7
PIVOT_WORK, SOLVE_WORK = 12, 100_000

#: Masters of at most this many non-zeros are solved in the calling thread: a solve from the
#: last basis takes 1-5 ms there (at most 21 ms measured on the exact family's 20-job
#: instances), less than the 3 ms a thread of :func:`~optsched.exact.highs.run` adds; a
#: Ctrl-C during one is raised once it returns.
INLINE_NONZEROS = 30_000


@dataclass(frozen=True)
class ColumnBoundOptions(Options):
    """Options of ``column-bound``."""

    time_unit: float | None = number("grid step (default: adaptive)", open_low=True)
    iterations: int = count(
        "pricing rounds at most (default 1000; each one prices every job once)", 1000
    )
    cuts: bool = switch(
        "conflict cuts (1, default; relaxed mode: once the relaxation without them is solved, "
        "rounds priced exactly by CP-SAT) or none (0)",
        True,
    )
    branch: bool = switch(
        "1: branch on job completion times, best first (each node a column generation "
        "restricted to its completion times; gang mode with the cuts, relaxed mode "
        "without); 0 (default): no branching",
        False,
    )
    work: float | None = work_option()


#: A path's column in a master: its key (job, its rounds' rows, counts, starts and holds),
#: and the capacity rows it holds (indices on the master's blocks) and how much.
Column = tuple[tuple[Any, ...], npt.NDArray[np.int_], npt.NDArray[np.float64]]


@dataclass(frozen=True)
class MasterState:
    """A master at the end of a run, for another run that starts from its paths: HiGHS's
    simplex basis (``highspy.HighsBasisStatus`` values: each job's spare column, each path
    in :attr:`ColumnBound.paths`' order, each capacity and convexity row; the cuts' left
    out), and each path's column on the master's blocks (their first steps and the
    horizon: ``edges``)."""

    spares: tuple[Any, ...]
    paths: tuple[Any, ...]
    rows: tuple[Any, ...]
    columns: tuple[Column, ...]
    edges: tuple[int, ...]


@dataclass(frozen=True)
class ColumnBound:
    """The outcome of :func:`column_bound`: the certified ``bound`` in the instance's units
    (``None`` when no iteration finished), the ``iterations`` done, why it ``stopped``
    (``converged``: no path prices below the master with the cuts found so far;
    ``optimal``: the bound reached the incumbent; ``iterations``, ``work``, ``time limit``,
    ``interrupted``; ``too large``: relaxed mode's cuts stalled on a job whose staggered
    rounds are too large to price exactly, which keeps its value without them), the grid,
    the value after each iteration (``trace``, instance units), the ``columns`` and
    ``cuts`` of the last master and the ``work`` spent (work-seconds); by
    :func:`column_bound_from` on separated ``parts`` (more than 1): sums over the parts
    (``iterations`` each at most the option), the most limiting part's status (``too
    large``: a part kept its critical paths), the grid of the largest part bounded, and the
    final value alone as the trace; ``blocks``: the master's blocks of steps at the end (its
    grid's steps once it has reached them; by parts, the last part's); ``spread``: the jobs
    whose completion the last master's solution mixes, each as (job, mean completion, its
    weighted variance) in grid steps from the first arrival (not by parts); ``nodes``: the
    nodes bounded by :mod:`optsched.exact.branching` (0 without branching; by parts, the
    sum); ``paths``: the last master's paths, each as (job, cost, rounds), and
    ``multipliers``: the best ones priced (λ per capacity row and step), to start another
    run on the same grid with (not by parts); ``values``: each job's programme value at
    those multipliers, in grid units (None where they were priced with conflict prices), for
    another run's ``known``; ``state``: the last master's basis and columns (not by parts)."""

    bound: float | None
    iterations: int
    stopped: str
    time_unit: float
    trace: tuple[float, ...]
    columns: int
    cuts: int
    work: float = 0.0
    parts: int = 1
    blocks: int = 0
    spread: tuple[tuple[int, float, float], ...] = ()
    nodes: int = 0
    paths: tuple[tuple[int, float, list[_Round]], ...] = ()
    multipliers: npt.NDArray[np.float64] | None = field(default=None, compare=False)
    values: tuple[float, ...] | None = field(default=None, compare=False)
    state: MasterState | None = field(default=None, compare=False)


class _Master:
    """The master LP, kept in one HiGHS model that grows (each solve starts from the last
    basis): per job, a convex combination of its paths (each a column: its cost
    w·max(C, CP) and what it holds of every row in every block of priced steps) under the
    capacity rows (≤ the block's steps) and the conflict cuts (≤ 1). Rows: the capacity rows
    (a row's blocks together), each job's convexity row (= 1), then the cuts. Columns: a
    spare one per job, then the paths. ``edges``: the blocks' first steps and the horizon
    (one block per step: the capacity of every row at every step); ``held``: keep what each
    path holds of each group at each step, for the conflict cuts."""

    def __init__(
        self, problem: _Problem, groups: list[int], held: bool, edges: npt.NDArray[np.int_]
    ) -> None:
        self.problem, self.groups, self.edges, self.with_cuts = problem, groups, edges, held
        # a round inside group q pays price-table row offset + q (gang: after the per-GPU rows)
        self.offset = len(groups) if problem.scaled.instance.mode == "gang" else 0
        _, jobs, rows, horizon, _, _ = problem
        lengths = np.diff(edges).astype(float)
        self.blocks = len(lengths)
        self.n_cap, n = rows.rows * self.blocks, len(jobs)
        self.columns = 0  # paths in the master
        self.paths: list[tuple[int, float, list[_Round]]] = []  # (job, cost, rounds) each
        # each path's job, and the GPUs of each group it holds at each step (for the cuts);
        # rows from `columns` on are room to grow
        self._job = np.zeros(16, dtype=int)
        self._held = np.zeros((16, len(groups), horizon if held else 0), dtype=np.int16)
        self.seen: set[tuple[Any, ...]] = set()
        self.sparse: list[Column] = []  # each path's column
        # cuts, a row each: group, step, job i (or -1), threshold of i, of every other job
        self.cuts = np.zeros((0, 5), dtype=int)
        self.highs = highs.new_highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("presolve", "off")  # keep the basis from solve to solve
        lower = np.concatenate([np.full(self.n_cap, -np.inf), np.ones(n)])
        upper = np.concatenate([np.tile(lengths, rows.rows), np.ones(n)])
        none = np.zeros(0, dtype=np.int32)
        self.highs.addRows(self.n_cap + n, lower, upper, 0, none, none, [])
        # a column per job that holds nothing: keeps the master feasible, costs more than
        # any path of the job (a completion past every window)
        spare = [j.weight * (j.first + j.rounds * j.rho + j.window + horizon + 1) for j in jobs]
        rows_of = np.arange(self.n_cap, self.n_cap + n, dtype=np.int32)
        starts = np.arange(n, dtype=np.int32)
        self.highs.addCols(
            n, np.array(spare), np.zeros(n), np.full(n, np.inf), n, starts, rows_of, np.ones(n)
        )
        self.work = 0.0  # work units of the last solve (PIVOT_WORK, SOLVE_WORK)
        self.value = math.inf  # the last solve's objective (∞ where it uses a spare column)

    @property
    def job(self) -> npt.NDArray[np.int_]:
        """Each path's job."""
        return self._job[: self.columns]

    @property
    def held(self) -> npt.NDArray[np.int16]:
        """The GPUs of each group each path holds at each step (kept for the cuts)."""
        return self._held[: self.columns]

    def refined(self, budget: Budget | None) -> _Master:
        """A master of the same paths and cuts on the blocks split :data:`REFINE` ways
        (each at least one step); raises :class:`_Stop` when ``budget`` expires first."""
        edges = _split(self.edges, REFINE)
        finer = _Master(self.problem, self.groups, self.with_cuts, edges)
        for j, cost, path in self.paths:
            if budget is not None and budget.expired():
                raise _Stop("time limit")
            finer.add_column(j, self.problem.jobs[j], cost, path)  # its rows change
        for cut in self.cuts:
            finer._add_cut(cut)
        return finer

    def add(self, j: int, job: _Job, value: float, path: list[_Round]) -> bool:
        """Add job j's path (its programme's ``value`` at the prices that gave it); False if
        the master has it already."""
        # the path's own cost: what its programme charged beyond its rounds' prices
        return self.add_column(j, job, value - sum(step.paid for step in path), path)

    def add_column(
        self, j: int, job: _Job, cost: float, path: list[_Round], column: Column | None = None
    ) -> bool:
        """Add job j's path at its own ``cost`` (w·max(C, floor)), its ``column`` on these
        blocks when known (another master's: :class:`MasterState`); False if the master has
        it already."""
        _, jobs, rows, horizon, _, _ = self.problem
        # a path is its rounds, whatever the prices it was found at
        key = column[0] if column is not None else (j, tuple(step[:4] + step[5:] for step in path))
        if key in self.seen:
            return False
        if column is None:
            use = rows.use[job.k_tasks]
            delta = np.zeros((rows.rows, horizon + 1))
            for step in path:
                add_held(delta, step, use)
            # what the path holds of each row in each block
            usage = np.add.reduceat(
                np.cumsum(delta, axis=1)[:, :horizon], self.edges[:-1], axis=1
            ).ravel()
            at = np.nonzero(np.abs(usage) > 1e-12)[0]
            column = (key, at, usage[at])
        _, at, holds_at = column
        held = self._holding(job, path)
        cut, cut_rows = self.cuts, np.zeros(0, dtype=int)
        if len(cut):
            covered = held[cut[:, 0], cut[:, 1]] >= np.where(cut[:, 2] == j, cut[:, 3], cut[:, 4])
            cut_rows = self.n_cap + len(jobs) + np.nonzero(covered)[0]
        index = np.concatenate([at, [self.n_cap + j], cut_rows]).astype(np.int32)
        values = np.concatenate([holds_at, np.ones(1 + len(cut_rows))])
        if self.columns == len(self._job):  # double the room
            self._job = np.concatenate([self._job, np.zeros_like(self._job)])
            self._held = np.concatenate([self._held, np.zeros_like(self._held)])
        # the path is committed last, in a few steps (a Ctrl-C in between leaves a master
        # that only reports its bound: _spread checks the counts)
        self.seen.add(key)
        self._job[self.columns], self._held[self.columns] = j, held
        self.highs.addCol(cost, 0.0, np.inf, len(index), index, values)
        self.paths.append((j, cost, path))
        self.sparse.append(column)
        self.columns += 1
        return True

    def _holding(self, job: _Job, path: list[_Round]) -> npt.NDArray[np.int16]:
        """The GPUs of each group the path holds at each step (none kept without cuts)."""
        horizon = self.problem.horizon
        if not self.with_cuts:
            return np.zeros((len(self.groups), 0), np.int16)
        count = np.zeros((len(self.groups), horizon + 1))
        for step in path:
            # inside group q (one row: offset + q) its share of K (relaxed mode: a task is
            # 1/K of its round); spread: the split's counts on its rows (groups), the last
            # row being the cuts
            on = (
                {step.rows[0] - self.offset: round(step.counts[0] * job.k_tasks)}
                if len(step.rows) == 1
                else dict(zip(step.rows[:-1], step.counts[:-1], strict=True))
            )
            for q, c in on.items():
                count[q, step.start] += c
                count[q, step.start + step.hold] -= c
        return np.rint(np.cumsum(count, axis=1)[:, :horizon]).astype(np.int16)

    def keep_holdings(self) -> None:
        """Keep what each path holds of each group at each step from now on (for the cuts),
        and compute it for the paths already in the master."""
        if self.with_cuts:
            return
        self.with_cuts = True
        self._held = np.zeros((len(self._job), len(self.groups), self.problem.horizon), np.int16)
        for c, (j, _, path) in enumerate(self.paths):
            self._held[c] = self._holding(self.problem.jobs[j], path)

    def start_from(self, state: MasterState, added: list[bool]) -> None:
        """Start the simplex from ``state``'s basis (its ``paths``: the statuses of the paths
        offered after the schedule's, ``added`` saying which the master took), where it is a
        master on the same blocks (a new master: no cuts yet); the schedule's paths at their
        lower bound."""
        import highspy

        if state.edges != tuple(self.edges):
            return
        offered = [status for status, new in zip(state.paths, added, strict=True) if new]
        lower = highspy.HighsBasisStatus.kLower
        start = [lower] * (self.columns - len(offered))
        chosen = highspy.HighsBasis()
        chosen.col_status = [*state.spares, *start, *offered]
        chosen.row_status = list(state.rows)
        chosen.alien = True  # HiGHS completes a basis of too few or too many basic columns
        chosen.valid = True
        self.highs.setBasis(chosen)

    def state(self) -> MasterState:
        """The simplex basis (the cuts' rows left out) and the paths' columns now."""
        now = self.highs.getBasis()
        n = len(self.problem.jobs)
        columns, rows = list(now.col_status), list(now.row_status)
        return MasterState(
            tuple(columns[:n]),
            tuple(columns[n:]),
            tuple(rows[: self.n_cap + n]),
            tuple(self.sparse),
            tuple(int(e) for e in self.edges),
        )

    def solve(
        self, budget: Budget | None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """(the paths' weights, the rows' duals ≥ 0 in the order capacity, convexity, cuts)
        at the master's optimum; raises :class:`_Stop` when the time limit or a Ctrl-C
        ended the solve first."""
        import highspy

        left = budget.left() if budget is not None else None
        if left is not None:  # HiGHS's clock runs on from solve to solve
            self.highs.setOptionValue("time_limit", self.highs.getRunTime() + left)
        deadline = None if left is None else time.perf_counter() + left
        if self.highs.getNumNz() <= INLINE_NONZEROS:  # milliseconds: no thread (Ctrl-C after)
            highs.run_here(self.highs)
            ended = "solved"
        else:
            ended = highs.run(self.highs, deadline)
        iterations = max(self.highs.getInfo().simplex_iteration_count, 0)
        self.work = PIVOT_WORK * iterations * self.highs.getNumRow() + SOLVE_WORK
        if ended != "solved" or self.highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            raise _Stop("interrupted" if ended == "interrupted" else "time limit")
        solution = self.highs.getSolution()
        x = np.asarray(solution.col_value, dtype=float)[len(self.problem.jobs) :]
        spares = solution.col_value[: len(self.problem.jobs)]
        # the LP's value over the paths alone, where it needs no spare column
        self.value = (
            self.highs.getInfo().objective_function_value
            if max(spares, default=0.0) <= 1e-9
            else math.inf
        )
        duals = -np.asarray(solution.row_dual, dtype=float)
        return x, duals

    def separate(self, x: npt.NDArray[np.float64]) -> int:
        """Add the conflict cuts the master's solution ``x`` violates (per group, step and
        threshold k the most violated one: job i the one that gains most from counting at
        m + 1 − k); their number."""
        _, jobs, _, horizon, _, _ = self.problem
        active = np.nonzero(x > VIOLATION)[0]
        owner, weight = self.job[active], x[active, None]
        found = []
        for q, size in enumerate(self.groups):
            held = self.held[active, q, :]
            for k in range(size // 2 + 1, size + 1):  # 2k > m: one job at most
                low = size + 1 - k
                # share[t, j]: how much of job j holds ≥ k GPUs of q at t; lift: how much
                # more holds ≥ low
                share = np.zeros((horizon, len(jobs)))
                np.add.at(share.T, owner, weight * (held >= k))
                lift = np.zeros((horizon, len(jobs)))
                if low < k:
                    np.add.at(lift.T, owner, weight * (held >= low))
                    lift -= share
                i = lift.argmax(axis=1)
                gain = lift[np.arange(horizon), i]
                for t in np.nonzero(share.sum(axis=1) + gain > 1 + VIOLATION)[0]:
                    found.append((q, t, i[t] if gain[t] > 0 else -1, low, k))
        new = [cut for cut in found if not (self.cuts == cut).all(axis=1).any()]
        for cut in new:
            self._add_cut(np.array(cut))
        return len(new)

    def _add_cut(self, cut: npt.NDArray[np.int_]) -> None:
        q, t, i, low, k = cut
        columns = np.nonzero(self.held[:, q, t] >= np.where(self.job == i, low, k))[0]
        index = (len(self.problem.jobs) + columns).astype(np.int32)
        self.highs.addRow(-np.inf, 1.0, len(index), index, np.ones(len(index)))
        self.cuts = np.concatenate([self.cuts, cut[None]])

    def conflicts(self, mu: npt.NDArray[np.float64]) -> list[list[dict[int, Any]]]:
        """Each job's conflict prices at the cuts' multipliers ``mu``: per group,
        threshold → prefix sums over the priced steps (a cut prices threshold k for every
        job but its job i, which it prices at m + 1 − k)."""
        _, jobs, _, horizon, _, _ = self.problem
        priced = mu > 0
        cuts, mu = self.cuts[priced], mu[priced]
        common: dict[tuple[int, int], Any] = {}
        own: dict[tuple[int, int, int], Any] = {}
        for (q, t, i, low, k), price in zip(cuts, mu, strict=True):
            common.setdefault((q, k), np.zeros(horizon + 1))[t + 1] += price
            if i >= 0:  # job i pays at `low` instead
                own.setdefault((i, q, k), np.zeros(horizon + 1))[t + 1] -= price
                own.setdefault((i, q, low), np.zeros(horizon + 1))[t + 1] += price
        shared = {key: np.cumsum(row) for key, row in common.items()}
        out: list[list[dict[int, Any]]] = [
            [{k: row for (g, k), row in shared.items() if g == q} for q in range(len(self.groups))]
            for _ in jobs
        ]
        for (i, q, k), row in own.items():
            prices = out[i][q]
            prices[k] = prices.get(k, 0.0) + np.cumsum(row)
        return out


def column_bound(
    instance: Instance,
    upper: float,
    time_unit: float,
    *,
    iterations: int = 1000,
    cuts: bool = True,
    priced_until: float | None = None,
    budget: Budget | None = None,
    report: Any = None,
    work: float | None = None,
    start: Schedule | None = None,
    prices: ClassPrices | None = None,
    restrict: dict[int, tuple[int, int]] | None = None,
    with_paths: Sequence[tuple[int, float, list[_Round]]] = (),
    multipliers: npt.NDArray[np.float64] | None = None,
    known: Mapping[int, float] | None = None,
    state: MasterState | None = None,
    problem: _Problem | None = None,
) -> ColumnBound:
    """The column-generation bound (module doc) on the grid of ``time_unit``, from the
    deadlines of ``upper`` (the objective of a checked feasible schedule), after at most
    ``iterations`` pricing rounds, ``work`` work-seconds, or until ``budget`` expires or a
    Ctrl-C; ``cuts``: the conflict cuts (relaxed mode: after the master without them
    converges, on grids of at most :data:`MAX_MASTER_STEPS` steps). ``priced_until`` and
    ``report`` as for
    :func:`~optsched.exact.lagrangian.lagrangian_bound`. ``start``: a feasible schedule whose
    rounds are the master's first paths (it then has a solution from the first solve on,
    and its duals are prices rather than penalties), e.g. the incumbent's. ``prices``: prices
    of GPU time to price the first paths at (e.g. the class-capacity LP's, as for
    :func:`~optsched.exact.lagrangian.lagrangian_bound`; by default λ = 0). ``restrict``:
    job → (least, greatest) completion in grid steps from the first arrival; the bound then
    holds for the schedules whose jobs complete within them (a node of
    :mod:`optsched.exact.branching`; :class:`~optsched.exact.lagrangian.EmptyBox`, a
    ValueError, where a job has no path within them).
    ``with_paths``: (job, cost, rounds) of paths to start the master with beside ``start``'s
    (another master's on the same grid, :attr:`ColumnBound.paths`; only the multipliers
    depend on them, so any paths keep the bound valid, but a path costed below its cost
    here can stop the run early, at a lower bound; ValueError for one off the grid).
    ``multipliers``: λ to price first instead of ``prices``' (another run's on the same grid,
    :attr:`ColumnBound.multipliers`; any λ ≥ 0 gives a bound; ValueError for another shape,
    or a λ negative or NaN). ``known``: job → its programme's value at ``multipliers`` on
    this run's box (grid units, another run's :attr:`ColumnBound.values`: a branching node's
    parent's, for every job but the one split); these jobs are not priced again at the first
    iteration. They are trusted: a value above the programme's would make the bound invalid.
    ``state``: the master that ``with_paths`` come from, its ``paths`` and ``columns`` those
    of ``with_paths`` (a parent's :attr:`ColumnBound.state`, less the paths it leaves out):
    on a master of the same blocks, its columns are taken as they are and its simplex
    starts from its basis (``start``'s paths at their lower bound; HiGHS completes a basis
    that does not fit). It changes the work, never the bound's validity. ``problem``: the
    programme of ``instance``, ``upper``, ``time_unit`` and ``priced_until`` where the
    caller has built it (branching's nodes share one).

    On a grid of more than :data:`MAX_STEPS` steps the master's capacity rows start on
    :data:`FIRST_BLOCKS` blocks of consecutive steps and are refined each time it converges
    (module doc); the paths are priced on the grid's steps throughout.

    Guarantees: the bound is the Lagrangian value L(λ, μ) at the master's duals clipped to
    ≥ 0, each job's programme solved exactly (or, for a spread round of more than
    :data:`~optsched.exact.lagrangian.MAX_SPLITS` splits, without its conflict prices: less;
    relaxed mode with cuts: at least the programme at μ = 0 and CP-SAT's bound on the job's
    staggered rounds, at the iterations that price them), less a relative 10⁻⁹, rounded up
    to the grid's integer objective: at most the optimum (docs/models/column-bound.md). The
    master's value is never reported. Without ``restrict``, raises
    :class:`~optsched.exact.lagrangian.AboveUpper` as soon as an iteration certifies more
    than ``upper`` (then no feasible schedule has that objective, and the deadlines it set may
    have cut off the optimum). Raises :class:`MasterTooLarge` in gang mode with
    ``cuts`` on a grid of more than :data:`MAX_MASTER_STEPS` steps, and
    :class:`~optsched.exact.lagrangian.TooLarge` where the programme is too large to price
    (as for :func:`~optsched.exact.lagrangian.lagrangian_bound`)."""
    if problem is None:
        problem = _problem(instance, upper, time_unit, priced_until)
    restrict = restrict or {}
    if any(not 0 <= j < instance.n_jobs for j in restrict):
        raise ValueError(f"restrict: jobs are indices 0..{instance.n_jobs - 1}")
    if known is not None and (
        multipliers is None
        or any(not 0 <= j < instance.n_jobs or not math.isfinite(v) for j, v in known.items())
    ):
        raise ValueError("known: finite values of job indices, with the multipliers they hold at")
    empty = without_paths(problem, restrict) if restrict else None
    if empty is not None:
        raise EmptyBox(
            f"restrict: job {instance.jobs[empty].id!r} has no path completing within "
            f"{restrict[empty]} (grid steps from the first arrival); the box holds no schedule"
        )
    problem = restrict_completions(problem, restrict)
    dn, jobs, rows, horizon, shift, _ = problem
    for j, _, path in with_paths:
        if not 0 <= j < len(jobs) or any(
            max(b for _, b, _ in occupied(step)) > horizon
            or max(step.rows, default=0) >= len(rows.use[jobs[j].k_tasks])
            for step in path
        ):
            raise ValueError(
                "with_paths: a path outside this grid (another instance, upper, time_unit "
                "or priced_until)"
            )
    gang = dn.instance.mode == "gang"
    # gang mode separates its cuts from the start; relaxed mode once the master without
    # them converges, and then prices staggered rounds exactly (values certified there only)
    cutting, staggered = cuts and gang, cuts and not gang and horizon <= MAX_MASTER_STEPS
    if staggered:  # their exact pricing counts whole steps, so every job does (model page)
        problem = whole_steps(problem)
        jobs = problem.jobs
    if cutting and horizon > MAX_MASTER_STEPS:
        size = (
            f"time_unit {time_unit:g}: column-bound's master with conflict cuts would span "
            f"{horizon} steps, more than {MAX_MASTER_STEPS}"
        )
        raise MasterTooLarge(
            f"{size}; choose a coarser time_unit (at most the shortest compute time; default: "
            f"at most {MAX_STEPS} steps, and parts of the instance separated in time bounded "
            "apart), or cuts=0",
            size,
        )
    groups = [len(g) for g in dn.instance.gpu_groups()]
    blocks = horizon if horizon <= MAX_STEPS else FIRST_BLOCKS
    master = _Master(problem, groups, cutting, _split(np.array([0, horizon]), blocks))
    if start is not None:  # a feasible master from the first solve on
        for j, cost, path in _schedule_paths(problem, start, time_unit):
            master.add_column(j, jobs[j], cost, path)
    columns: Sequence[Column | None] = [None] * len(with_paths)
    if state is not None:
        if not len(state.paths) == len(state.columns) == len(with_paths):
            raise ValueError("state: a status and a column for each of with_paths")
        if state.edges == tuple(master.edges):
            columns = state.columns
    added = [
        master.add_column(j, jobs[j], cost, path, column)
        for (j, cost, path), column in zip(with_paths, columns, strict=True)
    ]
    if state is not None:
        master.start_from(state, added)
    if multipliers is not None:
        if np.shape(multipliers) != (rows.rows, horizon) or not np.all(multipliers >= 0):
            raise ValueError(
                f"multipliers: λ ≥ 0 of shape {(rows.rows, horizon)} (capacity rows × steps "
                "of this grid), e.g. another run's ColumnBound.multipliers"
            )
        lam = multipliers
    elif prices is not None:
        lam = _multipliers(problem, instance, prices)
    else:
        lam = np.zeros((rows.rows, horizon))
    mu = np.zeros(0)
    target = upper * dn.weight_scale / time_unit - shift  # the incumbent, in grid units
    best, trace, done, stopped = -math.inf, [], 0, "iterations"
    meter = WorkMeter(work, WORK_PER_SECOND)
    pricing = pricing_work(problem)
    centre, centre_value = (lam, mu), -math.inf
    centre_values: tuple[float, ...] | None = None
    own, own_mu, exact, solved = lam, mu, False, False
    x = np.zeros(0)  # the master's solution

    def rounded(value: float) -> int:
        """A bound ``value`` (grid units from the origin) certified: less a relative 1e-9,
        rounded up to the grid's integer objective."""
        return math.ceil(value - 1e-9 * abs(value) - 1e-9) + shift

    def certify(value: float) -> bool:
        """Record the bound ``value`` (grid units from the origin); whether it reaches the
        incumbent."""
        nonlocal best
        certified = rounded(value)
        found = dn.objective_to_original(float(certified))
        if not restrict:  # a node's box may hold no schedule as good as the incumbent
            refuse_above_upper(found, upper)
        trace.append(found)
        if certified > best:
            best = certified
            if report is not None:
                report(found)
        return bool(value >= target)

    try:
        while done < iterations:
            if budget is not None and budget.expired():
                stopped = "time limit"
                break
            if meter.exhausted:
                stopped = "work"
                break
            if done == 0 and known:  # λ = multipliers, μ = 0: the known jobs' values hold
                value, paths = _price_all(problem, lam, mu, master, cutting, budget, known)
                unknown = [j for j in range(len(jobs)) if j not in known]
                meter.spend((1 + cutting) * pricing_work(problem, unknown))
            else:
                value, paths = _price_all(problem, lam, mu, master, cutting, budget)
                meter.spend((1 + cutting) * pricing)
            done += 1
            bounded = not (cutting and staggered)  # relaxed cuts: the programme misses paths
            if bounded and certify(value):
                stopped = "optimal"
                break
            if bounded and value > centre_value:
                centre, centre_value = (lam, mu), value
                centre_values = None if len(mu) else tuple(v for v, _ in paths)
            new = sum(
                master.add(j, jobs[j], v, path)
                for j, (v, path) in enumerate(paths)
                if path is not None
            )
            if not new and (exact or not bounded):
                if not bounded:  # price the staggered rounds exactly
                    value, new, unproved = _price_exactly(
                        problem, lam, mu, paths, master, budget, meter
                    )
                    if certify(value):
                        stopped = "optimal"
                        break
                    if not new and unproved:  # the same prices again would gain nothing
                        stopped = unproved
                        break
                    if not new:  # no path left: the cuts, or the optimum
                        new = master.separate(x)
                        if not new:
                            stopped = "converged"
                            break
                elif master.blocks < horizon:  # the same paths, finer rows
                    master, solved = master.refined(budget), False
                else:  # the master's optimum over every path: (now, relaxed) the cuts
                    if staggered and not cutting:
                        cutting = True
                        master.keep_holdings()
                    new = master.separate(x) if cutting else 0
                    if not new:
                        stopped = "converged"
                        break
            if new or not solved:
                solved, clean = True, False
                for _ in range(SEPARATIONS):
                    x, duals = master.solve(budget)  # stopped: the bound so far stands
                    meter.spend(master.work)
                    if not cutting or not master.separate(x):
                        clean = True
                        break
                else:  # the last separation added cuts: their duals too
                    x, duals = master.solve(budget)
                    meter.spend(master.work)
                # L(λ, μ) ≤ the master's value wherever its solution holds every step's row
                # and violates no cut: once that value rounds to the bound certified, no
                # multipliers can certify more on the grid. Not with relaxed mode's cuts,
                # whose exact pricing leaves out paths the master holds (module doc)
                final = clean and master.blocks == horizon and not staggered
                if (
                    STOP_AT_CEILING
                    and final
                    and master.value < math.inf
                    and rounded(master.value) <= best
                ):
                    stopped = "converged"
                    break
                own = np.repeat(  # each block's multiplier on each of its steps
                    np.maximum(duals[: master.n_cap], 0.0).reshape(rows.rows, master.blocks),
                    np.diff(master.edges),
                    axis=1,
                )
                own_mu = np.maximum(duals[master.n_cap + len(jobs) :], 0.0)
            # price next between the best multipliers so far and the master's (Wentges'
            # smoothing); at the master's own when that found nothing new, and throughout
            # relaxed mode's cuts (only its exact pricing there certifies values)
            exact = not new
            weight = 0.0 if exact or (cutting and staggered) else SMOOTHING
            lam = weight * centre[0] + (1 - weight) * own
            mu = (1 - weight) * own_mu
            mu[: len(centre[1])] += weight * centre[1]
    except _Stop as stop:
        stopped = stop.reason
    except KeyboardInterrupt:  # a genuine Ctrl-C: the best bound so far stands
        stopped = "interrupted"
    bound = dn.objective_to_original(float(best)) if trace else None
    return ColumnBound(
        bound,
        done,
        stopped,
        time_unit,
        tuple(trace),
        master.columns,
        len(master.cuts),
        meter.spent,
        blocks=master.blocks,
        spread=_spread(master, x),
        paths=tuple(master.paths),
        multipliers=centre[0],
        values=centre_values,
        state=master.state(),
    )


def _spread(master: _Master, x: npt.NDArray[np.float64]) -> tuple[tuple[int, float, float], ...]:
    """(job, mean completion, weighted variance) of every job whose completion the master's
    solution ``x`` mixes (a path's completion: its cost over the job's weight)."""
    if not len(x) == len(master.paths) == master.columns:  # not solved since (or a Ctrl-C)
        return ()
    mixed: dict[int, list[tuple[float, float]]] = {}
    for share, (j, cost, _) in zip(x, master.paths, strict=True):
        weight = master.problem.jobs[j].weight
        if share > 1e-9 and weight > 0:  # a weight below 1 grid unit floors to 0
            mixed.setdefault(j, []).append((share, cost / weight))
    out = []
    for j, items in sorted(mixed.items()):
        total = sum(share for share, _ in items)
        mean = sum(share * c for share, c in items) / total
        variance = sum(share * (c - mean) ** 2 for share, c in items) / total
        if variance > 1e-9:
            out.append((j, mean, variance))
    return tuple(out)


def column_bound_from(
    instance: Instance,
    schedule: Schedule,
    *,
    time_unit: float | None = None,
    budget: Budget | None = None,
    work: float | None = None,
    report: Any = None,
    **options: Any,
) -> ColumnBound:
    """:func:`column_bound` from the feasible ``schedule`` (its objective the deadlines', its
    makespan the priced horizon, its rounds the first paths) on the grid of ``time_unit``
    (default: :func:`column_time_unit`), with the same ``options``.

    When the default grid of the whole instance would exceed :data:`MAX_MASTER_STEPS`
    steps, or the whole instance is too large (:class:`~optsched.exact.lagrangian.TooLarge`),
    and ``schedule`` falls into :func:`separated_parts`, the bound is the sum over
    the parts of each part's bound alone on its own grid (``options`` per part), the parts
    by size (tasks), smallest first, each with a share of the budget and work left in
    proportion to its tasks; a part still too large, at its critical paths already, or
    left without a bound counts its critical paths (less a relative 1e-9 of their length
    from its first arrival, for the floats). Valid in both modes: restricted to a part's
    jobs, every schedule is a schedule of that part (dropping tasks only frees GPUs), so
    the optimum is at least the sum of the parts' optima, and each part's bound is at most
    its optimum. The sum is exact, rounded down. A Ctrl-C stops at the part it interrupts, with the
    bound so far. Raises TooLarge or BelowCriticalPath (:func:`column_bound`) otherwise."""
    value, span = evaluate(instance, schedule)
    unit = column_time_unit(instance, span, time_unit)
    bound = _branched if options.get("branch") else column_bound
    first = min(job.arrival for job in instance.jobs)
    parts = separated_parts(instance, schedule) if time_unit is None else [[]]
    if len(parts) > 1 and (span - first) / unit > MAX_MASTER_STEPS:
        return _by_parts(instance, schedule, parts, unit, budget, work, report, options)
    own = {k: v for k, v in options.items() if k != "branch"}
    common = dict(start=schedule, priced_until=span, **own)
    try:
        return bound(instance, value, unit, budget=budget, work=work, report=report, **common)
    except TooLarge:
        if len(parts) == 1:
            raise
    return _by_parts(instance, schedule, parts, unit, budget, work, report, options)


def _branched(instance: Instance, upper: float, time_unit: float, **options: Any) -> ColumnBound:
    """:func:`~optsched.exact.branching.branch_on_completions` over :func:`column_bound`
    (``options`` its own) as a :class:`ColumnBound`: the root's iterations, columns, cuts
    and blocks, the nodes bounded."""
    from optsched.exact.branching import branch_on_completions

    found = branch_on_completions(column_bound, instance, upper, time_unit, **options)
    root = found.root
    return ColumnBound(
        found.bound,
        root.iterations,
        found.stopped,
        time_unit,
        () if found.bound is None else (found.bound,),
        root.columns,
        root.cuts,
        found.work,
        blocks=root.blocks,
        nodes=found.nodes,
    )


def separated_parts(instance: Instance, schedule: Schedule) -> list[list[int]]:
    """The jobs (indices) in arrival order, cut before every job that arrives once all jobs
    before it have completed in the feasible ``schedule``: parts whose jobs do not overlap
    in time in that schedule."""
    done = completions(instance, schedule)
    order = sorted(range(instance.n_jobs), key=lambda j: (instance.jobs[j].arrival, j))
    parts: list[list[int]] = []
    end = -math.inf
    for j in order:
        if instance.jobs[j].arrival >= end:
            parts.append([])
        parts[-1].append(j)
        end = max(end, float(done[j]))
    return parts


#: How a run stopped, from least to most limiting: a run on parts takes the most limiting
#: of its parts' statuses (``too large``: a part kept its critical paths, or, relaxed mode
#: with cuts, a job was too large to price exactly), as relaxed mode's exact pricing takes
#: the most limiting of its jobs'.
_STOPPED = (
    "optimal",
    "converged",
    "integral",
    "too large",
    "iterations",
    "nodes",
    "work",
    "time limit",
    "interrupted",
)


def _by_parts(
    instance: Instance,
    schedule: Schedule,
    parts: list[list[int]],
    unit: float,
    budget: Budget | None,
    work: float | None,
    report: Any,
    options: dict[str, Any],
) -> ColumnBound:
    """:func:`column_bound_from` on each of the separated ``parts`` (its doc); ``unit``: the
    whole instance's grid, reported when no part has its own."""
    from fractions import Fraction

    from optsched.critical_path import critical_path, from_origin

    path = critical_path(instance)
    value = []  # each part's bound so far, from its critical paths
    for part in parts:
        origin = min(instance.jobs[j].arrival for j in part)
        weights = [instance.jobs[j].weight for j in part]
        length = math.fsum(w * (path[j] - origin) for w, j in zip(weights, part, strict=True))
        value.append(from_origin(length, origin, weights, 1e-9))
    tasks = [sum(instance.jobs[j].n_tasks for j in part) for part in parts]
    found: list[ColumnBound] = []
    spent, stopped = 0.0, "optimal"

    def total() -> float:
        exact = sum(map(Fraction, value))
        out = float(exact)
        return out if Fraction(out) <= exact else float(np.nextafter(out, -math.inf))

    # the small parts first: what they leave of their shares goes to the larger ones
    order = sorted(range(len(parts)), key=tasks.__getitem__)
    for n, k in enumerate(order):
        part = parts[k]
        share = tasks[k] / sum(tasks[i] for i in order[n:])
        alone = replace(instance, jobs=tuple(instance.jobs[j] for j in part))
        ids = {job.id for job in alone.jobs}
        own = Schedule(alone.name, [t for t in schedule.tasks if t.job in ids], alone.mode)
        left = None if budget is None else budget.left()

        def better(bound: float, k: int = k) -> None:
            value[k] = max(value[k], bound)
            if report is not None:
                report(total())

        try:
            got = column_bound_from(
                alone,
                own,
                budget=None if left is None else Budget(left * share),
                work=None if work is None else max(work - spent, 0.0) * share,
                report=better,
                **options,
            )
        except TooLarge:
            got = None
            status = "too large"
        except BelowCriticalPath:  # its incumbent is at its critical paths: they stand
            got = None
            status = "converged"
        except KeyboardInterrupt:  # a Ctrl-C outside the part's search: the bound so far
            got = None
            status = "interrupted"
        if got is not None:
            # what starts another run on the same grid is not needed any more
            found.append(replace(got, paths=(), multipliers=None, values=None, state=None))
            spent += got.work
            status = got.stopped
            if got.bound is not None:
                value[k] = max(value[k], got.bound)
        stopped = max(stopped, status, key=_STOPPED.index)
        if status == "interrupted":
            break
    return ColumnBound(
        total(),
        sum(f.iterations for f in found),
        stopped,
        found[-1].time_unit if found else unit,
        (total(),),
        sum(f.columns for f in found),
        sum(f.cuts for f in found),
        spent,
        len(parts),
        found[-1].blocks if found else 0,
        nodes=sum(f.nodes for f in found),
    )


def _split(edges: npt.NDArray[np.int_], ways: int) -> npt.NDArray[np.int_]:
    """The edges of the blocks between ``edges`` each split ``ways`` ways evenly (blocks of
    at least one step)."""
    inner = [np.linspace(a, b, ways + 1).astype(int) for a, b in itertools.pairwise(edges)]
    return np.unique(np.concatenate(inner))


class MasterTooLarge(TooLarge):
    """A master with conflict cuts would span more than :data:`MAX_MASTER_STEPS` steps."""


class _Stop(Exception):
    """The master LP stopped early (time limit or Ctrl-C): ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def column_time_unit(instance: Instance, horizon: float, given: float | None) -> float:
    """``given``, else the data's unit coarsened to at most :data:`MAX_STEPS` steps up to
    ``horizon`` (:func:`~optsched.exact.bounds.coarsened_time_unit`)."""
    from optsched.exact.bounds import coarsened_time_unit

    return given if given is not None else coarsened_time_unit(instance, horizon, MAX_STEPS)


def _schedule_paths(
    problem: _Problem, schedule: Schedule, time_unit: float
) -> list[tuple[int, float, list[_Round]]]:
    """Each job's rounds in ``schedule`` as a path of the master: (job, its cost
    w·max(C, CP) on the grid, its rounds). Times are rounded down to the grid, as for the
    bound, so the paths of a feasible schedule hold at most the capacity of every row.
    Relaxed mode: each task a round of its own on its GPU's group (1/K of a round's GPUs);
    gang mode: each round on its GPUs, inside one group or spread, for its slowest GPU's
    compute + sync."""
    from optsched.exact.grid import to_seconds, to_steps

    dn, jobs, _, horizon, _, origin = problem
    inst = dn.instance
    groups = inst.gpu_groups()
    group_of = {inst.gpus[g].id: q for q, members in enumerate(groups) for g in members}
    job_of = {job.id: j for j, job in enumerate(inst.jobs)}
    tasks: dict[tuple[int, int], list[tuple[int, int, float]]] = {}
    for task in schedule.tasks:
        step = int(to_steps(task.start, time_unit, "down")) - origin
        # how far into the step it starts (relaxed mode's exact compute times)
        into = float(task.start - to_seconds(step + origin, time_unit)) / time_unit
        into = min(max(into, 0.0), 1 - 1e-9)
        tasks.setdefault((job_of[task.job], task.round), []).append(
            (group_of[task.gpu], step, into)
        )
    n_groups, out = len(groups), []
    for j, job in enumerate(jobs):
        # grid times on each group (its GPUs are interchangeable); inf where ineligible
        compute = [inst.compute[j, members[0]] for members in groups]
        sync = [inst.sync[j, members[0]] for members in groups]
        options = {option.rows[0]: option for option in job.options}
        path, ready = [], 0
        for r in range(job.rounds):
            held = tasks[(j, r)]
            if inst.mode == "gang":
                begin = min(step for _, step, _ in held)
                hold = int(max(compute[q] + sync[q] for q, _, _ in held))
                on = sorted({q for q, _, _ in held})
                counts = [sum(1 for g, _, _ in held if g == q) for q in on]
                rows, share = (
                    ((n_groups + on[0],), (1.0,))
                    if len(on) == 1
                    else ((*on, 2 * n_groups), (*map(float, counts), 1.0))
                )
                if begin < horizon:
                    path.append(_Round(rows, share, begin, min(hold, horizon - begin), 0.0))
                ready = begin + hold
                continue
            for q, step, into in held:
                if step < horizon:
                    hold = int(min(compute[q], horizon - step))
                    part = options[q].part
                    cover = (
                        None
                        if part is None
                        else _real_cover(step, into, compute[q] + part, horizon)
                    )
                    path.append(_Round((q,), (1 / job.k_tasks,), step, hold, 0.0, cover))
                ready = max(ready, step + int(compute[q] + sync[q]))
        out.append((j, job.weight * max(ready, job.floor), path))
    return out


def _real_cover(step: int, into: float, length: float, horizon: int) -> Cover:
    """What a task computing for ``length`` steps from ``into`` ∈ [0, 1) into ``step`` (before
    the horizon) occupies of each step, within the horizon."""
    end = into + length  # from the step's start
    if end <= 1:
        return step, step, ((step, length),)
    last = step + math.floor(end)
    tail = end - math.floor(end)
    parts = [(step, 1 - into)] + ([(last, tail)] if tail > 0 else [])
    return (
        min(step + 1, horizon),
        min(last, horizon),
        tuple((k, share) for k, share in parts if k < horizon),
    )


def _price_exactly(
    problem: _Problem,
    lam: npt.NDArray[np.float64],
    mu: npt.NDArray[np.float64],
    paths: list[tuple[float, list[_Round] | None]],
    master: _Master,
    budget: Budget | None,
    meter: WorkMeter,
) -> tuple[float, int, str | None]:
    """Relaxed mode with conflict cuts: (L(λ, μ) with every job priced over its staggered
    rounds too, in grid units from the origin; the paths it added to the master; None when
    every job's price is proved, else why not, the most limiting of "too large", "work" and
    "time limit").
    ``paths``: each job's programme value and path at (λ, μ), which holds its rounds' tasks
    together. A job whose programme value at (λ, 0) is as low pays no conflict price and is
    priced exactly; the others get :func:`~optsched.exact.staggered.price_staggered`'s lower
    bound (at least their programme value at (λ, 0), which is at most every path's cost at
    (λ, μ); only that where the job's model is too large), within an equal share of the time
    and work left each."""
    from optsched.exact.staggered import price_staggered

    _, jobs, _, horizon, _, _ = problem
    _, plain = _price_all(problem, lam, np.zeros(0), master, False, budget)
    meter.spend(pricing_work(problem))
    lower = [v for v, _ in plain]
    conflicts = master.conflicts(mu)
    todo = [
        j
        for j, ((priced, _), least) in enumerate(zip(paths, lower, strict=True))
        if priced > least + 1e-9 * max(1.0, abs(least))
    ]
    added, unproved = 0, None
    for n, j in enumerate(todo):
        share = 1 / (len(todo) - n)
        left = None if budget is None else budget.left()
        work = meter.left()
        found = price_staggered(
            jobs[j],
            lam,
            master.groups,
            conflicts[j],
            horizon,
            hint=paths[j][1],
            time_limit=None if left is None else left * share,
            work=None if work is None else work * share,
        )
        meter.spend(found.work * WORK_PER_SECOND)
        lower[j] = max(lower[j], found.lower)
        if found.stopped is not None:  # the most limiting reason, as for parts
            unproved = max(unproved or found.stopped, found.stopped, key=_STOPPED.index)
        if found.path is not None and found.own is not None:
            added += master.add_column(j, jobs[j], found.own, found.path)
    return sum(lower) - float(lam.sum()) - float(mu.sum()), added, unproved


def _price_all(
    problem: _Problem,
    lam: npt.NDArray[np.float64],
    mu: npt.NDArray[np.float64],
    master: _Master,
    gang: bool,
    budget: Budget | None,
    known: Mapping[int, float] | None = None,
) -> tuple[float, list[tuple[float, list[_Round] | None]]]:
    """(L(λ, μ) in grid units from the origin, each job's programme value and path: for
    the jobs ``known``, their value given and no path); raises :class:`_Stop` when
    ``budget`` expires before the last job (the iteration is dropped)."""
    tables = price_tables(problem, lam)
    prices = master.conflicts(mu) if gang and len(mu) else None
    paths: list[tuple[float, list[_Round] | None]] = []
    for j, job in enumerate(problem.jobs):
        if budget is not None and budget.expired():
            raise _Stop("time limit")
        if known is not None and j in known:
            paths.append((known[j], None))
            continue
        own = prices[j] if prices is not None else None
        paths.append(_price(job, tables[job.k_tasks], own, master.offset))
    value = sum(v for v, _ in paths) - float(lam.sum()) - float(mu.sum())
    return value, paths


@register(
    "column-bound",
    options=ColumnBoundOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    description="ECT schedule + the column-generation bound (the Lagrangian relaxation's LP "
    "over per-job paths; conflict cuts, in relaxed mode with staggered rounds priced by "
    "CP-SAT; anytime, both modes)",
)
def _column_bound(instance: Instance, context: SolveContext[ColumnBoundOptions]) -> MethodOutput:
    budget = Budget(context.time_limit)
    start = incumbent(instance, context.hint, budget)
    found = column_bound_from(
        instance,
        start.schedule,
        time_unit=context.options.time_unit,
        iterations=context.options.iterations,
        cuts=context.options.cuts,
        branch=context.options.branch,
        budget=budget,
        report=lambda bound: context.report(start.objective, bound),
        work=context.options.work,
    )
    return MethodOutput(
        schedule=start.schedule,
        bound=found.bound,
        extra={
            "time_unit": found.time_unit,
            "parts": found.parts,
            "start": start.origin,
            "iterations": found.iterations,
            "columns": found.columns,
            "cuts": found.cuts,
            "blocks": found.blocks,
            "nodes": found.nodes,
            "work": found.work,
            "stopped": found.stopped,
            "interrupted": found.stopped == "interrupted",
        },
    )
