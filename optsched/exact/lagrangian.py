"""The Lagrangian bound of GPU capacity over time (``lagrangian-bound``, both modes).

The time-indexed view of the model (docs/models/lagrangian-bound.md): on the integer grid of
the instance rounded *down* (a lower bound by monotonicity, as for the time-indexed LP),
restricted to the deadlines of an incumbent, every job's rounds are a path through time, and
only the capacity of each group of interchangeable GPUs at each step couples the jobs.
Pricing that capacity with multipliers λ[q, t] ≥ 0 splits the problem into one shortest path
per job:

    L(λ) = Σ_j min over j's schedules of (w_j max(C_j, CP_j) + Σ_{q,t} λ[q, t] · GPUs of q
           that j uses at t)  −  Σ_{q,t} λ[q, t] · |q|

is a lower bound on the optimum for *every* λ ≥ 0 (each job's term is at most what the
optimal schedule pays for it, and that schedule uses at most |q| GPUs of q at any t; CP_j,
the job's critical path rounded down to the grid, gives back what rounding took from its
own length). Each
job's minimum is a dynamic programme over its rounds (a relaxation of its own constraints,
so still a lower bound: the round's K tasks take its cheapest slot; see the model page),
O(rounds × options × window) with NumPy. λ is improved by subgradient steps (Polyak's rule
towards the incumbent's objective); every iteration's value is a certified bound, so the
method is anytime: ``iterations`` and ``work`` (:mod:`optsched.work`) bound the work
deterministically, the time limit and a
Ctrl-C stop it with the best value so far.

In gang mode a round holds K whole GPUs for its tasks' compute + sync, inside one group or
spread over several (then on the cheapest split of its GPUs over two groups or more, for at
least the second-quickest group's time and the job's least round time), and cuts from dual
feasible functions (:func:`dual_feasible`) price what capacity alone lets through: rounds too
wide to run side by side (two rounds of 3 on 4 GPUs). So in gang mode the bound goes past the
time-indexed LP.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from optsched.budget import EXACT_TIME_LIMIT, Budget
from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import incumbent
from optsched.errors import InputError
from optsched.instance import Instance
from optsched.options import Options, count, number
from optsched.registry import register
from optsched.work import WorkMeter, work_option

if TYPE_CHECKING:
    from optsched.exact.capacity import ClassPrices

#: The default grid: the data's unit, coarsened ×10 while the span of the incumbent's
#: makespan exceeds this many steps (and the unit stays at most the shortest compute time).
MAX_STEPS = 20_000

#: Consecutive iterations without a better bound after which the step size halves.
PATIENCE = 20

#: Most cuts of :func:`dual_feasible` per capacity.
MAX_CUTS = 8

#: Most (group, step) prices, or (round, step) states of one job's programme: about 80 MB
#: per array of them.
MAX_CELLS = 10_000_000

_INF = math.inf


class TooLarge(InputError):
    """The programme would hold more than :data:`MAX_CELLS` cells on the grid asked for.
    ``size``: the grid and what exceeds its limit, without the advice on ``time_unit``
    (for callers that do not take one; the whole message after a pickle round trip)."""

    def __init__(self, message: str, size: str | None = None) -> None:
        super().__init__(message)
        self.size = message if size is None else size


class BelowCriticalPath(ValueError):
    """The ``upper`` given is below the critical path: no feasible schedule has it."""


class AboveUpper(ValueError):
    """A bound certified above the ``upper`` given: no feasible schedule has that objective
    (every bound is at most the optimum), and the deadlines it set may have cut off the
    optimal schedules, so the bound is not returned."""


#: how far (relative) a certified bound may pass ``upper`` before :class:`AboveUpper`: a
#: checked schedule's objective may lie within the checker's tolerance below the optimum
UPPER_SLACK = 1e-6


def refuse_above_upper(bound: float, upper: float) -> None:
    """Raise :class:`AboveUpper` where the certified ``bound`` passes ``upper``."""
    if bound > upper + UPPER_SLACK * max(1.0, abs(upper)):
        raise AboveUpper(
            f"a bound of {bound!r} is certified above upper = {upper!r}: upper is not the "
            "objective of a feasible schedule (it sets the deadlines; give a checked one's)"
        )


class _OutOfTime(Exception):
    """The budget expired in the middle of an iteration."""


@dataclass(frozen=True)
class LagrangianBoundOptions(Options):
    """Options of ``lagrangian-bound``."""

    time_unit: float | None = number("grid step (default: adaptive)", open_low=True)
    iterations: int = count(
        "subgradient iterations at most (default 1000; each one prices every job once)", 1000
    )
    work: float | None = work_option()


#: Work units of one work-second: measured on the 2-core reference machine by
#: ``benchmarks/work_rates.py``. An iteration counts a (group, step) price each,
#: :data:`JOB_WORK` per job and :data:`ROUND_WORK` per round (NumPy's fixed costs) and a
#: dynamic-programming cell each.
WORK_PER_SECOND = 7.7e7
JOB_WORK, ROUND_WORK = 900, 3000


@dataclass(frozen=True)
class LagrangianBound:
    """The outcome of :func:`lagrangian_bound`: the certified ``bound`` in the instance's
    units (``None`` when no iteration finished), the ``iterations`` done, why it
    ``stopped`` (``iterations``, ``converged``, ``work``, ``time limit``, ``interrupted``),
    the grid, the value after each iteration (``trace``, in the instance's units) and the
    ``work`` spent (work-seconds)."""

    bound: float | None
    iterations: int
    stopped: str
    time_unit: float
    trace: tuple[float, ...]
    work: float = 0.0


@dataclass(frozen=True)
class _Job:
    """One job on the grid: its rounds' earliest starts are ``first + r·rho`` and every round
    may start up to ``window`` steps later; it completes no earlier than ``floor`` (its
    critical path in the original times, rounded down to the grid); the ways to run a round
    (``options``). ``last_until``: its paths complete at this step at the latest (a branch
    of :mod:`optsched.exact.branching`; None: no such limit)."""

    first: int
    floor: int
    window: int
    rho: int
    k_tasks: int
    rounds: int
    weight: float
    options: tuple[_Option, ...]
    last_until: int | None = None


class _Option(NamedTuple):
    """One way to run a round: it holds its GPUs for ``hold`` steps, its results are ready
    ``ready`` steps after its start, and per step held it pays row ``rows[0]`` of its job's
    price table; or, spread (``caps`` given), K GPUs split over the groups whose per-GPU rows
    are ``rows``, at most ``caps[i]`` on group i and at most K − 1 on any one (the cheapest
    such split), plus row ``cuts``."""

    rows: tuple[int, ...]
    hold: int
    ready: int
    caps: tuple[int, ...] = ()
    cuts: int = -1
    part: float | None = None  # the fraction of a step computed beyond ``hold`` (module doc)


def _split(
    prices: npt.NDArray[np.float64], caps: tuple[int, ...], k_tasks: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The cheapest way to put ``k_tasks`` GPUs on two groups or more, at most ``caps[i]`` on
    group i, at ``prices[i, t]`` per GPU (a column per start t): (its cost per start, GPUs
    per group and start). Greedy is optimal: the cheapest group takes all it can but one
    GPU, the others fill up in order of price."""
    order = np.argsort(prices, axis=0, kind="stable")
    left = np.full(prices.shape[1], float(k_tasks))
    counts = np.zeros(prices.shape)
    cost = np.zeros(prices.shape[1])
    limit = np.array(caps, dtype=float)
    for i in range(len(caps)):
        group = order[i]
        # the cheapest group leaves one GPU to another (then `left` = K is no limit)
        take = np.minimum(limit[group], k_tasks - 1 if i == 0 else left)
        np.put_along_axis(counts, group[None, :], take[None, :], axis=0)
        cost += take * np.take_along_axis(prices, group[None, :], axis=0)[0]
        left -= take
    return cost, counts


@dataclass(frozen=True)
class _Resources:
    """The ``rows`` coupling the jobs, priced by the multipliers, each of capacity 1 at every
    step: each group's GPUs (a round of K tasks holds K / |q| of group q's row), then (gang
    mode) the cuts of :func:`dual_feasible` on the whole cluster and on each group. A round
    of K tasks that pays row ρ of its price table holds ``use[K][ρ]`` of every row while it
    runs."""

    rows: int
    use: dict[int, npt.NDArray[np.float64]]

    @property
    def per_step(self) -> int:
        """Prices an iteration computes per step: the multipliers and every price table's
        rows."""
        return self.rows + sum(len(use) for use in self.use.values())


def _suffix_argmin(values: npt.NDArray[np.float64]) -> tuple[np.ndarray, np.ndarray]:
    """(suffix minimum, an index attaining it) of ``values``: ``m[i] = min(values[i:])``."""
    rev = np.minimum.accumulate(values[::-1])[::-1]
    index = np.arange(len(values))
    # i attains its suffix minimum iff values[i] == m[i]; the nearest such index at or after
    # i attains m[i] too (every value between is larger)
    own = np.where(values == rev, index, len(values))
    at = np.minimum.accumulate(own[::-1])[::-1]
    return rev, at


class _Round(NamedTuple):
    """One priced round of a job's path: the price-table ``rows`` it holds, how many times
    each (``counts``), its ``start`` and the steps it holds them (``hold``), and what the
    programme charged it (``paid``: multipliers and conflict prices)."""

    rows: tuple[int, ...]
    counts: tuple[float, ...]
    start: int
    hold: int
    paid: float
    cover: Cover | None = None  # what it occupies of its rows, where not [start, start + hold)


#: What a round occupies of its rows where it is not whole steps from its start (the exact
#: compute times of relaxed mode, module doc): whole steps [a, b), and (step, fraction) parts.
Cover = tuple[int, int, tuple[tuple[int, float], ...]]


def occupied(step: _Round) -> list[tuple[int, int, float]]:
    """(from, to, share) of a row each step of [from, to) that ``step`` occupies."""
    if step.cover is None:
        return [(step.start, step.start + step.hold, 1.0)]
    a, b, parts = step.cover
    return [(a, b, 1.0), *((k, k + 1, share) for k, share in parts)]


def add_held(delta: npt.NDArray[np.float64], step: _Round, use: npt.NDArray[np.float64]) -> None:
    """Add what ``step`` holds of each row (``use``: its job's rows per price-table row) at
    the steps it occupies to ``delta``, rows × (steps + 1) differences whose sum along the
    steps is what is held."""
    held = np.asarray(step.counts) @ use[list(step.rows)]
    for a, b, share in occupied(step):
        delta[:, a] += share * held
        delta[:, b] -= share * held


def _fractional(
    prefix: npt.NDArray[np.float64],
    start: npt.NDArray[np.int_],
    hold: int,
    part: float,
    horizon: int,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """What a task of ``hold`` + ``part`` steps started within step ``start`` pays at the
    per-step prices whose prefix sums are ``prefix`` (none from the horizon on), at least:
    (early, later, first). A start δ ∈ [0, 1) into the step occupies 1 − δ of it, whole steps,
    and the rest after them: linear in δ between **early** (δ = 0: whole steps from
    ``start``, the part after them), **late** (δ = 1 − part: the part at ``start``, whole
    steps after it) and **next** (δ → 1: whole steps from ``start`` + 1, the part after
    them), so it pays at least the least of the three. ``later`` is the lesser of late and
    next (the same whole steps, the part at the cheaper step), ``first`` whether that is
    late's."""

    def at(k: npt.NDArray[np.int_]) -> npt.NDArray[np.float64]:  # nothing from the horizon on
        return prefix[np.minimum(k, horizon)]

    begin, then, end = at(start), at(start + 1), at(start + hold)
    after, past = at(start + hold + 1), at(start + hold + 2)
    lead, tail = then - begin, past - after  # the prices of the steps either side
    early = end - begin + part * (after - end)
    later = after - then + part * np.minimum(lead, tail)
    return early, later, lead <= tail


#: Conflict prices of one job (:mod:`optsched.exact.columns`): per group, threshold k →
#: prefix sums over the priced steps of what the job pays per step while it holds at least k
#: GPUs of the group.
Conflicts = Sequence[dict[int, npt.NDArray[np.float64]]]

#: Splits of a spread round enumerated at most (beyond, conflict prices are not charged to
#: spread rounds: a smaller price, so still a bound).
MAX_SPLITS = 256


@cache
def _splits(caps: tuple[int, ...], k_tasks: int) -> tuple[tuple[int, ...], ...]:
    """Every way to put ``k_tasks`` GPUs on two groups or more, at most ``caps[i]`` and at
    most K − 1 on group i (in order), stopping past :data:`MAX_SPLITS`."""
    out: list[tuple[int, ...]] = []
    ranges = [range(min(cap, k_tasks - 1) + 1) for cap in caps]
    for split in itertools.product(*ranges):
        if sum(split) == k_tasks and sum(1 for c in split if c) >= 2:
            out.append(split)
            if len(out) > MAX_SPLITS:
                break
    return tuple(out)


def _price(
    job: _Job,
    table: npt.NDArray[np.float64],
    conflicts: Conflicts | None = None,
    groups: int = 0,
) -> tuple[float, list[_Round]]:
    """Job's least w·C + λ-cost over its relaxed schedules, and the priced rounds of a path
    attaining it. ``table[i, t]``: the prefix sums, for t ≤ T, of what a round of this job
    pays per step on row i of its price table (:class:`_Option`). λ is 0 from T on: from a
    barrier at or after T the rounds left cost w·(their earliest completion, every round
    taking ``rho`` from its barrier), and a round whose tasks start at or after T gives the
    next barrier at T + its quickest option's steps at the earliest.

    ``conflicts`` (gang mode, with the number of ``groups``): the job's conflict prices; a
    round inside group q pays those of every threshold up to K, a spread round those of its
    split's count on each group (the cheapest split, enumerated)."""
    horizon = table.shape[1] - 1
    size = job.window + 1  # barrier r may be up to `window` steps after first + r·rho

    def earliest(r: int) -> int:
        return job.first + r * job.rho

    def priced(r: int) -> int:  # barriers of round r before the horizon (and the deadline)
        return int(min(max(horizon - earliest(r), 0), size))

    def tail(r: int, i: npt.NDArray[np.int_]) -> npt.NDArray[np.float64]:
        """Rounds r.. from barrier index i at or after the horizon (inf where the deadline
        ends the window before the horizon: no schedule is there)."""
        if priced(r) == size:
            return np.full(i.shape, _INF)
        done = earliest(r) + i + (job.rounds - r) * job.rho
        out: npt.NDArray[np.float64] = job.weight * np.maximum(done, job.floor)
        if job.last_until is not None:
            out[done > job.last_until] = _INF
        return out

    def held(q: int, count: int, start: npt.NDArray[np.int_], end: npt.NDArray[np.int_]) -> Any:
        """The conflict prices of holding ``count`` GPUs of group q from start to end."""
        prices = conflicts[q] if conflicts is not None else {}
        return sum((m[end] - m[start] for k, m in prices.items() if k <= count), 0.0)

    def cost(
        option: _Option, start: npt.NDArray[np.int_]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64] | None]:
        """(what the option pays from each start, the spread GPUs per group and start)."""
        end = np.minimum(start + option.hold, horizon)
        row = option.rows[0]
        if not option.caps:
            if option.part is not None:  # relaxed mode's exact compute times
                early, later, _ = _fractional(table[row], start, option.hold, option.part, horizon)
                paid = np.minimum(early, later)
            else:
                paid = table[row, end] - table[row, start]
            return (
                paid + held(row - groups, job.k_tasks, start, end) if conflicts else paid
            ), None
        many = np.array(option.rows)[:, None]
        spans = table[many, end] - table[many, start]
        cuts = table[option.cuts, end] - table[option.cuts, start]
        splits = _splits(option.caps, job.k_tasks) if conflicts else ()
        if not splits or len(splits) > MAX_SPLITS:
            paid, counts = _split(spans, option.caps, job.k_tasks)
            return paid + cuts, counts
        best, pick = np.full(len(start), _INF), np.zeros(len(start), dtype=int)
        for i, split in enumerate(splits):
            value = cuts + sum(
                c * spans[g] + held(q, c, start, end)
                for g, (q, c) in enumerate(zip(option.rows, split, strict=True))
                if c
            )
            better = value < best
            best[better], pick[better] = value[better], i
        return best, np.array(splits, dtype=float)[pick].T

    quickest = min(option.ready for option in job.options)
    reach = max(option.ready for option in job.options) - job.rho  # furthest next barrier
    n = priced(job.rounds)
    # f[i]: least cost of rounds r.. from barrier earliest(r) + i (here r = R: C = barrier)
    f = job.weight * np.maximum(earliest(job.rounds) + np.arange(n), job.floor).astype(float)
    if job.last_until is not None:
        f[earliest(job.rounds) + np.arange(n) > job.last_until] = _INF
    choices = []
    for r in range(job.rounds - 1, -1, -1):
        n_next, n = n, priced(r)
        index = np.arange(n)
        start = earliest(r) + index
        # the next round's values at every barrier these starts can reach, past its priced
        # ones from the closed form
        beyond = np.arange(n_next, max(n_next, n + reach, 1 if n else 0))
        ahead = np.concatenate([f, tail(r + 1, beyond)]) if len(beyond) else f
        phi = np.full(n, _INF)
        arg = np.full(n, -1)
        for k, option in enumerate(job.options):
            # ready at start + `ready`: the next barrier (clamped to its earliest)
            nxt = np.maximum(index + (option.ready - job.rho), 0)
            paid = cost(option, start)[0] + ahead[nxt]
            better = paid < phi
            phi[better] = paid[better]
            arg[better] = k
        f, at = _suffix_argmin(phi)
        # round r's tasks starting at or after the horizon (where its window reaches it)
        late = (
            _INF
            if n == size
            else float(tail(r + 1, np.array([max(n + quickest - job.rho, 0)]))[0])
        )
        np.minimum(f, late, out=f)
        choices.append((arg, at, f, late))
    value = float(f[0]) if n else float(tail(0, np.array([0]))[0])
    path: list[_Round] = []
    i = 0
    for r, (arg, at, f_r, late) in enumerate(reversed(choices)):
        if i >= len(f_r) or f_r[i] >= late:  # the rest starts at the horizon: no λ
            break
        t = int(at[i])
        option = job.options[int(arg[t])]
        begin = earliest(r) + t
        paid, counts = cost(option, np.array([begin]))
        hold = min(option.hold, horizon - begin)
        if option.part is not None:
            cover = _cover(table[option.rows[0]], begin, option.hold, option.part, horizon)
            path.append(_Round(option.rows, (1.0,), begin, hold, float(paid[0]), cover))
        elif counts is None:
            path.append(_Round(option.rows, (1.0,), begin, hold, float(paid[0])))
        else:
            rows = (*option.rows, option.cuts)
            path.append(_Round(rows, (*counts[:, 0], 1.0), begin, hold, float(paid[0])))
        i = max(0, t + option.ready - job.rho)
    return value, path


def _cover(
    prefix: npt.NDArray[np.float64], begin: int, hold: int, part: float, horizon: int
) -> Cover:
    """What a task of ``hold`` + ``part`` steps started within step ``begin`` occupies in
    the cheapest of :func:`_fractional`'s ways, within the horizon."""
    costs = _fractional(prefix, np.array([begin]), hold, part, horizon)
    early, later, first = (v[0] for v in costs)
    a = begin if early <= later else begin + 1
    k = begin + hold if early <= later else begin if first else begin + hold + 1
    parts = ((k, part),) if part > 0 and k < horizon else ()
    return min(a, horizon), min(a + hold, horizon), parts


def dual_feasible(capacity: int, widths: Sequence[int]) -> list[tuple[float, ...]]:
    """Cuts on rounds that share ``capacity`` GPUs: value vectors v (one per width in
    ``widths``) such that rounds of widths K_i running at once, Σ K_i ≤ capacity, have
    Σ v(K_i) ≤ 1. They are Fekete and Schepers' dual feasible functions
    u⁽ᵏ⁾(x) = x if (k + 1)x is an integer, else ⌊(k + 1)x⌋ / k, at x = K / capacity
    (k = 1 .. capacity, widths above the capacity get 0), kept where some width gets more than
    K / capacity (else the capacity row is as strong), at most :data:`MAX_CUTS` of them,
    lowest k first. Example: on 8 GPUs u⁽²⁾ gives rounds of 3 or 4 tasks ½ each, so at most
    two of them run at once where the capacity row alone allows 8/3 rounds of 3."""
    out: list[tuple[float, ...]] = []
    for k in range(1, capacity + 1):
        values = tuple(
            0.0
            if width > capacity
            else width / capacity
            if (k + 1) * width % capacity == 0
            else ((k + 1) * width // capacity) / k
            for width in widths
        )
        gains = any(v * capacity > width for v, width in zip(values, widths, strict=True))
        if gains and values not in out:
            out.append(values)
            if len(out) == MAX_CUTS:
                break
    return out


#: Relaxed mode prices tasks at their exact compute times (:func:`_parts`) where whole
#: steps would leave out at least this share of the tasks' compute, on average.
FRACTIONAL_LOSS = 0.01


def _parts(
    instance: Instance, scaled: Instance, time_unit: float
) -> npt.NDArray[np.float64] | None:
    """Per job and group of ``scaled`` (``instance`` on the grid, times rounded down), the
    fraction of a step that the job's compute time on the group's quickest GPU has beyond its
    whole steps, less a relative 1e-6 for the floats; None (whole steps for every task) where
    these fractions are below :data:`FRACTIONAL_LOSS` of the compute on average over every
    eligible (job, group) pair: one decision for the whole instance, since all tasks count
    their exact compute times or none does."""
    groups = scaled.gpu_groups()
    exact = np.stack([instance.compute[:, members].min(axis=1) for members in groups], axis=1)
    steps = np.stack([scaled.compute[:, members[0]] for members in groups], axis=1)
    eligible = np.isfinite(steps)
    length = np.where(eligible, exact, 0.0) / time_unit * (1 - 1e-6)
    parts = np.where(eligible, np.clip(length - np.where(eligible, steps, 0.0), 0.0, None), 0.0)
    loss = parts[eligible] / length[eligible]
    return parts if loss.size and float(loss.mean()) >= FRACTIONAL_LOSS else None


def _grid_jobs(
    instance: Instance, upper: float, time_unit: float
) -> tuple[Any, list[_Job], _Resources]:
    """(the scaled instance, its jobs on the grid, the rows their rounds hold).

    Relaxed mode: each round pays K GPUs of the cheapest group it may use (table row q: K / |q|
    of group q's row), holding them for its compute. Gang mode: a round inside one group q
    (K ≤ |q|) pays that group's row and the cluster's and q's cuts (table row |groups| + q)
    for its compute + sync; a round spread over two groups or more pays the cheapest split of
    its K GPUs (table rows q: one GPU of group q) and the cluster's cuts (the last table row),
    for at least the second-quickest compute + sync of the groups it may use and its least
    round time."""
    from optsched.critical_path import critical_path
    from optsched.exact.bounds import _lp_jobs
    from optsched.exact.grid import to_steps

    inst, dn, lp_jobs = _lp_jobs(instance, upper, time_unit)
    floor = to_steps(critical_path(instance), time_unit, "down")
    sizes = [len(g) for g in inst.gpu_groups()]
    widths = sorted({lj.k_tasks for lj in lp_jobs})
    n_groups = len(sizes)
    gang = inst.mode == "gang"
    # rows, each of capacity 1 (a group's GPUs scaled by its size, which steadies the
    # subgradient steps): the groups, then the cuts on the cluster, then each group's
    cluster = dual_feasible(sum(sizes), widths) if gang else []
    own = [dual_feasible(size, widths) if gang else [] for size in sizes]
    n_rows = n_groups + len(cluster) + sum(len(cuts) for cuts in own)
    use = {}
    for i, width in enumerate(widths):
        if not gang:  # table row q: K GPUs of group q
            use[width] = np.diag([width / size for size in sizes])
            continue
        # table rows: one GPU of group q; K inside group q with the cluster's and q's cuts;
        # the cluster's cuts alone
        table = np.zeros((2 * n_groups + 1, n_rows))
        cluster_cuts = [cut[i] for cut in cluster]
        table[2 * n_groups, n_groups : n_groups + len(cluster)] = cluster_cuts
        row = n_groups + len(cluster)
        for q, size in enumerate(sizes):
            table[q, q] = 1 / size
            table[n_groups + q] = table[2 * n_groups]
            table[n_groups + q, q] = width / size
            table[n_groups + q, row : row + len(own[q])] = [cut[i] for cut in own[q]]
            row += len(own[q])
        use[width] = table
    parts = None if gang else _parts(instance, inst, time_unit)
    jobs = []
    for j, lj in enumerate(lp_jobs):
        options: list[_Option]
        usable = [(q, p, s) for q, p, s, _, _ in lj.data]
        if gang:
            options = [
                _Option((n_groups + q,), p + s, p + s)
                for q, p, s in usable
                if lj.k_tasks <= sizes[q]
            ]
            if lj.k_tasks > 1 and len(usable) > 1:
                # the round holds K GPUs of two groups or more: at least the second-quickest
                # group's p + s, and the K-th smallest p + s over the GPUs (rho)
                second = max(sorted(p + s for _, p, s in usable)[1], lj.rho)
                groups = tuple(q for q, _, _ in usable)
                caps = tuple(sizes[q] for q in groups)
                options.append(_Option(groups, second, second, caps, 2 * n_groups))
        elif parts is None:
            options = [_Option((q,), p, p + s) for q, p, s in usable]
        else:
            options = [_Option((q,), p, p + s, part=float(parts[j, q])) for q, p, s in usable]
        jobs.append(
            _Job(
                lj.arrival,
                int(floor[j]),
                lj.window,
                lj.rho,
                lj.k_tasks,
                lj.rounds,
                float(int(inst.jobs[j].weight)),  # integral: a weight below 1 step counts 0
                tuple(options),
            )
        )
    return dn, jobs, _Resources(n_rows, use)


def lagrangian_bound(
    instance: Instance,
    upper: float,
    time_unit: float,
    *,
    iterations: int = 1000,
    priced_until: float | None = None,
    budget: Budget | None = None,
    report: Any = None,
    work: float | None = None,
    start: ClassPrices | None = None,
) -> LagrangianBound:
    """The Lagrangian bound (module doc) on the grid of ``time_unit``, from the deadlines of
    ``upper`` (the objective of a checked feasible schedule), after at most ``iterations``
    subgradient steps, ``work`` work-seconds (:mod:`optsched.work`: an iteration counts its
    dynamic-programming cells and prices) or until ``budget`` expires or a Ctrl-C. Capacity
    is priced up to ``priced_until`` seconds (default: the latest deadline; from there on
    λ = 0, and a job's rounds cost only their earliest completion, which keeps each job's
    programme short on large instances). ``report(bound)`` is called with each better
    certified bound (instance units). ``start``: prices of GPU time to start the multipliers
    from (e.g. the class-capacity LP's, :class:`~optsched.exact.capacity.ClassPrices`; by
    default λ = 0), which can save the hundreds of iterations the steps take from zero.

    Guarantees: the bound is L(λ) at some λ ≥ 0 computed exactly up to float rounding, less
    a relative 10⁻⁹, rounded up to the grid's integer objective (integer steps and weights),
    so at most Σ_j w_j max(C_j, CP_j) of an optimal schedule shifted onto the grid of the
    instance rounded down, itself at most the optimum (docs/models/lagrangian-bound.md).
    Raises :class:`BelowCriticalPath` for an ``upper`` below the critical path, and
    :class:`AboveUpper` as soon as an iteration certifies more than ``upper``: then ``upper``
    is no feasible schedule's objective, and its deadlines may have cut off the optimum."""
    problem = _problem(instance, upper, time_unit, priced_until)
    dn, _, rows, horizon, shift, _ = problem
    lam = (
        np.zeros((rows.rows, horizon)) if start is None else _multipliers(problem, instance, start)
    )
    # Polyak's target: the incumbent's objective in grid units, from the origin
    target = upper * dn.weight_scale / time_unit - shift
    best, theta, since, done = -_INF, 1.0, 0, 0
    trace: list[float] = []
    stopped = "iterations"
    meter = WorkMeter(work, WORK_PER_SECOND)
    per_iteration = pricing_work(problem)
    try:
        while done < iterations:
            if budget is not None and budget.expired():
                stopped = "time limit"
                break
            if meter.exhausted:
                stopped = "work"
                break
            value, usage = _evaluate(problem, lam, budget)
            done += 1
            meter.spend(per_iteration)
            certified = math.ceil(value - 1e-9 * abs(value) - 1e-9) + shift
            found = dn.objective_to_original(float(certified))
            refuse_above_upper(found, upper)
            trace.append(found)
            if certified > best:
                best, since = certified, 0
                if report is not None:
                    report(found)
            else:
                since += 1
                if since >= PATIENCE:
                    theta, since = theta / 2, 0
            gradient = usage - 1.0
            norm = float((gradient * gradient).sum())
            if norm == 0 or target <= value or theta < 1e-6:
                stopped = "converged"
                break
            lam = np.maximum(0.0, lam + theta * (target - value) / norm * gradient)
    except _OutOfTime:
        stopped = "time limit"
    except KeyboardInterrupt:  # a genuine Ctrl-C: the best bound so far stands
        stopped = "interrupted"
    bound = dn.objective_to_original(float(best)) if trace else None
    return LagrangianBound(bound, done, stopped, time_unit, tuple(trace), meter.spent)


class _Problem(NamedTuple):
    """The programme on the grid: the scaled instance, its jobs (times from the first
    arrival), the rows, the priced steps T and Σ_j w_j × that origin (in grid units)."""

    scaled: Any
    jobs: list[_Job]
    rows: _Resources
    horizon: int
    shift: int
    origin: int  # the first arrival, in steps: priced step s is grid step origin + s


def pricing_work(problem: _Problem, priced: Collection[int] | None = None) -> int:
    """Work units of pricing the jobs ``priced`` (indices; default: every job) once
    (:data:`WORK_PER_SECOND`): the prices of every row and step, and each job's programme."""
    _, jobs, rows, horizon, _, _ = problem
    return rows.per_step * horizon + sum(
        JOB_WORK
        + j.rounds
        * (ROUND_WORK + sum(len(o.rows) for o in j.options) * min(j.window + 1, horizon))
        for i, j in enumerate(jobs)
        if priced is None or i in priced
    )


def _multipliers(
    problem: _Problem, instance: Instance, start: ClassPrices
) -> npt.NDArray[np.float64]:
    """λ at ``start``'s prices (per GPU class of ``instance``, the problem's original): a
    group's row (capacity 1: all its GPUs) at priced step s costs the prices of its GPUs'
    classes at the step's midpoint, in the programme's units (one grid step of GPU time,
    weights × ``weight_scale``); 0 on the cut rows and outside ``start``'s grid. Any λ ≥ 0
    gives a valid bound, so this is only a starting point."""
    from optsched.exact.grid import to_seconds

    dn, _, rows, horizon, _, origin = problem
    edges, price = np.asarray(start.edges, float), np.asarray(start.price, float)
    classes = instance.class_compute.shape[1]
    if price.shape != (classes, len(edges) - 1):
        raise InputError(
            f"start prices: expected one row per GPU class and one column per interval "
            f"({classes} × {len(edges) - 1}), got {price.shape}"
        )
    seconds = to_seconds(origin + np.arange(horizon) + 0.5, dn.time_unit)
    interval = np.searchsorted(edges, seconds, side="right") - 1
    inside = (interval >= 0) & (interval < price.shape[1])
    gpu_price = np.clip(np.nan_to_num(price), 0.0, None)[instance.gpu_class]
    lam = np.zeros((rows.rows, horizon))
    for q, group in enumerate(dn.instance.gpu_groups()):
        lam[q, inside] = gpu_price[list(group)].sum(axis=0)[interval[inside]] * dn.weight_scale
    return lam


def _problem(
    instance: Instance, upper: float, time_unit: float, priced_until: float | None
) -> _Problem:
    """The programme of :func:`lagrangian_bound`'s arguments."""
    from optsched.exact.grid import to_steps

    dn, jobs, rows = _grid_jobs(instance, upper, time_unit)
    if any(j.window < 0 for j in jobs):
        raise BelowCriticalPath("upper is below the critical path: not a feasible objective")
    # times from the first arrival (step `origin`): Σ w C = Σ w (C − origin) + origin · Σ w
    origin = min(j.first for j in jobs)
    jobs = [replace(j, first=j.first - origin, floor=j.floor - origin) for j in jobs]
    shift = origin * sum(int(j.weight) for j in jobs)  # exact: integers
    horizon = max(j.first + j.rounds * j.rho + j.window for j in jobs) + 1
    if priced_until is not None:
        until = int(to_steps(priced_until, time_unit, "up")) - origin
        horizon = max(1, min(horizon, until))
    cells = max(rows.per_step * horizon, max(j.rounds * min(j.window + 1, horizon) for j in jobs))
    if cells > MAX_CELLS:
        size = (
            f"time_unit {time_unit:g}: the time-indexed relaxation would price {cells:.3g} "
            f"(row, step) or (round, step) pairs, more than {MAX_CELLS:.0e}"
        )
        raise TooLarge(f"{size}; choose a coarser time_unit", size)
    return _Problem(dn, jobs, rows, horizon, shift, origin)


def whole_steps(problem: _Problem) -> _Problem:
    """``problem`` with every task counted in whole steps (none at its exact compute time)."""
    jobs = [
        replace(job, options=tuple(option._replace(part=None) for option in job.options))
        for job in problem.jobs
    ]
    return problem._replace(jobs=jobs)


def restrict_completions(problem: _Problem, restrict: dict[int, tuple[int, int]]) -> _Problem:
    """``problem`` for the schedules whose job j completes within ``restrict[j]`` (grid
    steps from the first arrival). A path is the programme's image of a schedule, which
    completes no later than the schedule (its rounds take their cheapest slots), so the
    job's paths end by the greatest (``last_until``), and each costs at least the least
    (``floor``): every schedule of the box keeps a path that costs no more."""
    if not restrict:
        return problem
    jobs = list(problem.jobs)
    for j, (least, greatest) in restrict.items():
        job = jobs[j]
        until = greatest if job.last_until is None else min(job.last_until, greatest)
        jobs[j] = replace(job, floor=max(job.floor, least), last_until=until)
    return problem._replace(jobs=jobs)


class EmptyBox(ValueError):
    """A box of completion times that holds no schedule (:func:`without_paths`)."""


def without_paths(problem: _Problem, box: dict[int, tuple[int, int]]) -> int | None:
    """The first job of ``box`` with no path completing within its limits (least above
    greatest, or its programme at zero prices infinite), or None. Every schedule has a path
    that completes no later than it, so a box with such a job holds no schedule."""
    zero = price_tables(problem, np.zeros((problem.rows.rows, problem.horizon)))
    jobs = restrict_completions(problem, box).jobs
    for j, (least, greatest) in box.items():
        if least > greatest or not math.isfinite(_price(jobs[j], zero[jobs[j].k_tasks])[0]):
            return j
    return None


def price_tables(
    problem: _Problem, lam: npt.NDArray[np.float64]
) -> dict[int, npt.NDArray[np.float64]]:
    """Per round width, the prefix sums over the priced steps of what a round pays per step
    on each row of its price table at multipliers ``lam`` (:func:`_price`'s ``table``)."""
    rows, horizon = problem.rows, problem.horizon
    tables = {}
    for width, use in rows.use.items():
        tables[width] = np.zeros((len(use), horizon + 1))
        np.cumsum(use @ lam, axis=1, out=tables[width][:, 1:])
    return tables


def _evaluate(
    problem: _Problem, lam: npt.NDArray[np.float64], budget: Budget | None = None
) -> tuple[float, npt.NDArray[np.float64]]:
    """(L at multipliers ``lam`` ≥ 0, one row per row of the problem and one column per priced
    step, in grid units from the origin; what the jobs' paths hold of each row at each step)."""
    _, jobs, rows, horizon, _, _ = problem
    tables = price_tables(problem, lam)
    total, usage = 0.0, np.zeros((rows.rows, horizon + 1))
    for job in jobs:
        if budget is not None and budget.expired():  # the iteration is dropped
            raise _OutOfTime
        value, path = _price(job, tables[job.k_tasks])
        total += value
        for step in path:
            add_held(usage, step, rows.use[job.k_tasks])
    return total - float(lam.sum()), np.cumsum(usage, axis=1)[:, :horizon]


def lagrangian_time_unit(instance: Instance, horizon: float, given: float | None) -> float:
    """``given``, else the data's unit coarsened to at most :data:`MAX_STEPS` steps up to
    ``horizon`` (:func:`~optsched.exact.bounds.coarsened_time_unit`)."""
    from optsched.exact.bounds import coarsened_time_unit

    return given if given is not None else coarsened_time_unit(instance, horizon, MAX_STEPS)


@register(
    "lagrangian-bound",
    options=LagrangianBoundOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    description="ECT schedule + the Lagrangian bound of GPU capacity over time (per-job "
    "shortest paths over rounds; anytime, both modes)",
)
def _lagrangian_bound(
    instance: Instance, context: SolveContext[LagrangianBoundOptions]
) -> MethodOutput:
    budget = Budget(context.time_limit)
    start = incumbent(instance, context.hint, budget)
    unit = lagrangian_time_unit(instance, start.makespan, context.options.time_unit)
    found = lagrangian_bound(
        instance,
        start.objective,
        unit,
        iterations=context.options.iterations,
        priced_until=start.makespan,
        budget=budget,
        report=lambda bound: context.report(start.objective, bound),
        work=context.options.work,
    )
    return MethodOutput(
        schedule=start.schedule,
        bound=found.bound,
        extra={
            "time_unit": unit,
            "start": start.origin,
            "iterations": found.iterations,
            "work": found.work,
            "stopped": found.stopped,
            "interrupted": found.stopped == "interrupted",
            "bound_at_zero": found.trace[0] if found.trace else None,  # λ = 0
        },
    )
