"""Certified lower bounds on Σ w_j C_j from LPs (models/time-indexed-lp.md, interval-lp.md),
and the horizon and deadlines the exact models are built on.

An LP bound counts only when HiGHS proves the LP optimal. The closed-form critical path is
:mod:`optsched.critical_path`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.critical_path import critical_path, round_lower_bound
from optsched.errors import InputError
from optsched.instance import Instance


def horizon(instance: Instance) -> float:
    """The latest arrival plus every task done one after another, each for its longest
    eligible compute + sync: no job of a semi-active schedule (every task as early as its
    arrival, its barrier and its GPU's previous task allow) completes later, since the
    chain of what made its last task wait covers each task at most once. Left-shifting
    any schedule makes it semi-active without delaying a completion, so some optimal
    schedule meets the horizon."""
    row = np.where(np.isfinite(instance.compute), instance.compute + instance.sync, 0.0)
    tasks = np.array([job.n_tasks for job in instance.jobs], dtype=float)
    work = float(tasks @ row.max(axis=1))
    total = max(job.arrival for job in instance.jobs) + work
    return total + 1e-9 * work + 4 * math.ulp(total)  # never below it through rounding


def deadlines(instance: Instance, upper: float) -> npt.NDArray[np.float64]:
    """Per-job deadlines from an incumbent objective.

    Every schedule with Σ w C ≤ ``upper`` has C_j ≤ (upper − Σ_{i≠j} w_i LB_i) / w_j, LB the
    critical path, and some optimal schedule completes every job by the :func:`horizon`; the
    deadline d_j is the smaller of the two, so restricting a relaxation to them keeps it a
    bound on the optimum whenever ``upper`` is the objective of a feasible schedule (a small
    weight cannot stretch a deadline past the horizon).
    """
    lb = critical_path(instance)
    w = np.array([job.weight for job in instance.jobs])
    # in times from the first arrival (no cancellation at large origins), then widened by
    # the rounding of going back, so that rounding never cuts a deadline short
    origin = min(job.arrival for job in instance.jobs)
    own = (upper - w.sum() * origin - (w @ (lb - origin) - w * (lb - origin))) / w
    d: npt.NDArray[np.float64] = origin + own
    d = d + 1e-9 * np.abs(own) + 4 * np.spacing(np.abs(d)) + 4 * np.spacing(upper) / w
    return np.minimum(d, horizon(instance))


#: Above this many grid steps in the horizon, :func:`lp_time_unit` coarsens the grid.
MAX_LP_STEPS = 400


@dataclass(frozen=True)
class _LPJob:
    """One job of the time-indexed LP in grid units: est_0 = arrival, W = late_r − est_r (the
    same for every round), ρ, K, R and ``(group, compute, sync, cap, hold)`` per usable
    group."""

    arrival: int
    window: int
    rho: int
    k_tasks: int
    rounds: int
    weight: int
    deadline: int
    data: tuple[tuple[int, int, int, int, int], ...]


def _lp_jobs(
    instance: Instance, upper: float, time_unit: float
) -> tuple[Instance, Any, list[_LPJob]]:
    from optsched.exact.grid import scale, to_steps

    dn = scale(instance, time_unit, "down")
    inst = dn.instance
    gang = inst.mode == "gang"
    groups = inst.gpu_groups()
    # deadlines in grid steps, rounded down exactly at any magnitude (a grid schedule as
    # good as upper completes each job by the last step at or before its deadline)
    d = [int(k) for k in to_steps(deadlines(instance, upper), time_unit, "down")]
    out = []
    for j, job in enumerate(inst.jobs):
        rho = int(round_lower_bound(inst, j))
        data = []
        for q, grp in enumerate(groups):
            if np.isfinite(inst.compute[j, grp[0]]):
                p, sy = int(inst.compute[j, grp[0]]), int(inst.sync[j, grp[0]])
                data.append((q, p, sy, min(job.tasks_per_round, len(grp)), p + sy if gang else p))
        window = d[j] - int(job.arrival) - (job.rounds - 1) * rho
        out.append(
            _LPJob(
                int(job.arrival),
                window,
                rho,
                job.tasks_per_round,
                job.rounds,
                int(job.weight),
                d[j],
                tuple(data),
            )
        )
    return inst, dn, out


def time_indexed_lp_size(instance: Instance, upper: float, time_unit: float) -> tuple[int, int]:
    """(variables, constraint non-zeros) of the LP :func:`time_indexed_lp_bound` would build,
    counted in closed form without building anything (O(jobs × groups)); an upper estimate
    within a few per cent."""
    gang = instance.mode == "gang"
    _, _, jobs = _lp_jobs(instance, upper, time_unit)
    variables = nonzeros = 0
    for lj in jobs:
        n = [max(0, lj.window - p - sy + 1) for _, p, sy, _, _ in lj.data]
        n_x = sum(n)
        n_z = max(0, lj.window - lj.rho)
        n_y = max(n, default=0) if gang else 0
        n_b = max(0, lj.window)
        per_round_vars = 2 * n_x + 2 * n_z + n_y
        holds = sum(h for k, (*_, h) in zip(n, lj.data, strict=True) if k)
        per_round_nnz = n_x * (7 + gang) + holds + 6 * n_z + 2 * n_y
        variables += lj.rounds * per_round_vars + (lj.rounds - 1) * n_b
        nonzeros += lj.rounds * per_round_nnz + (lj.rounds - 1) * (n_x + 4 * n_b)
    return variables, nonzeros


def lp_time_unit(
    instance: Instance, horizon: float, given: float | None = None, *, upper: float | None = None
) -> float:
    """The LP's grid: ``given`` (the ``time_unit`` option), else :func:`coarsened_time_unit`
    to MAX_LP_STEPS steps, coarsened further, given the incumbent objective ``upper``,
    while the LP would be too large for :func:`~optsched.budget.lp_too_large`."""
    from optsched.budget import lp_too_large

    if given is not None:
        return given
    return coarsened_time_unit(
        instance,
        horizon,
        MAX_LP_STEPS,
        None
        if upper is None
        else lambda unit: lp_too_large(*time_indexed_lp_size(instance, upper, unit)),
    )


def coarsened_time_unit(
    instance: Instance,
    horizon: float,
    max_steps: int,
    too_large: Callable[[float], bool] | None = None,
) -> float:
    """The data's natural unit, coarsened ×10 while the ``horizon`` (a makespan), counted
    from the first arrival, spans more than ``max_steps`` steps (or ``too_large(unit)``)
    and the unit stays at most the shortest compute time (on a grid times are rounded down
    for bounds, so a coarser grid only weakens them)."""
    from optsched.exact.grid import default_time_unit

    unit = default_time_unit(instance)
    shortest = float(instance.class_compute[np.isfinite(instance.class_compute)].min())
    span = horizon - min(job.arrival for job in instance.jobs)  # not the distance from 0
    while unit * 10 <= shortest and (
        span / unit > max_steps or (too_large is not None and too_large(unit))
    ):
        unit *= 10
    return unit


@dataclass(frozen=True)
class LPBound:
    """The outcome of :func:`solve_time_indexed_lp`.

    ``bound`` is a certified lower bound on Σ w_j C_j, or ``None``; ``status`` says why not:
    ``optimal`` (bound given), ``too large`` (estimated size above the caps, not built),
    ``time limit (build)`` (the budget ran out while building), ``time limit (solver)``,
    ``interrupted`` (a Ctrl-C stopped HiGHS, :mod:`optsched.exact.highs`) or ``not optimal:
    <HiGHS message>``. ``variables`` and ``nonzeros`` are the estimate of
    :func:`time_indexed_lp_size`.
    """

    bound: float | None
    status: str
    variables: int
    nonzeros: int
    time_unit: float

    def extra(self) -> dict[str, Any]:
        """The fields a Result's ``extra`` records about this LP."""
        return {
            "lp_bound": self.bound,
            "lp_status": self.status,
            "lp_time_unit": self.time_unit,
            "lp_nonzeros": self.nonzeros,
        }


class _Rows:
    """Rows of a sparse constraint block, filled by whole numpy arrays of entries."""

    def __init__(self) -> None:
        self.n = 0
        self.rhs: list[np.ndarray] = []
        self.rows: list[np.ndarray] = []
        self.cols: list[np.ndarray] = []
        self.vals: list[np.ndarray] = []

    def new(self, count: int, rhs: float) -> np.ndarray:
        first = self.n
        self.n += count
        self.rhs.append(np.full(count, float(rhs)))
        return np.arange(first, self.n)

    def add(self, rows: np.ndarray, cols: np.ndarray, val: float) -> None:
        self.rows.append(rows)
        self.cols.append(cols)
        self.vals.append(np.full(len(rows), float(val)))

    def matrix(self, n_cols: int) -> Any:
        from scipy.sparse import coo_matrix

        def cat(parts: list[np.ndarray], dtype: Any) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype)

        return coo_matrix(
            (cat(self.vals, float), (cat(self.rows, np.int64), cat(self.cols, np.int64))),
            shape=(self.n, n_cols),
        ).tocsr()


def solve_time_indexed_lp(
    instance: Instance,
    upper: float,
    time_unit: float,
    *,
    time_limit: float | None = None,
    check_size: bool = True,
) -> LPBound:
    """The LP relaxation of the grouped time-indexed model (models/time-indexed-lp.md).

    Built on the instance rounded *down* to the grid of ``time_unit`` (a lower bound by
    monotonicity), restricted to the deadlines of :func:`deadlines` from ``upper`` (the
    objective of a checked feasible schedule), solved with HiGHS. In gang mode the rounds'
    tasks start together and hold their GPUs for at least compute + sync, which keeps it a
    relaxation. The bound is in the instance's units, rounded up to the grid's integer
    objective, and given only when HiGHS proves the LP optimal.

    Guarantees: nothing is built when :func:`time_indexed_lp_size` is too large for
    :func:`~optsched.budget.lp_too_large` (unless ``check_size`` is false); the whole
    call (build and solve) takes at most ``time_limit`` seconds plus one round's block of
    the build and HiGHS's reaction time: the build stops between rounds and before each
    final matrix step when the time is spent, and HiGHS gets what is left less the
    hand-over time (:func:`~optsched.budget.handover_seconds`), and is stopped at that
    deadline if it has not stopped itself (:func:`optsched.exact.highs.linprog`). A Ctrl-C
    stops HiGHS: status ``interrupted``, no bound.
    """
    from scipy.sparse import coo_matrix

    from optsched.budget import (
        MIN_SOLVER_SECONDS,
        Budget,
        OutOfTime,
        lp_too_large,
    )
    from optsched.exact.highs import linprog

    budget = Budget(time_limit)
    variables, nonzeros = time_indexed_lp_size(instance, upper, time_unit)

    def outcome(bound: float | None, status: str) -> LPBound:
        return LPBound(bound, status, variables, nonzeros, time_unit)

    if check_size and lp_too_large(variables, nonzeros):
        return outcome(None, "too large")
    inst, dn, jobs = _lp_jobs(instance, upper, time_unit)
    groups = inst.gpu_groups()
    gang = inst.mode == "gang"
    eq, ub = _Rows(), _Rows()
    lo: list[np.ndarray] = []
    hi: list[np.ndarray] = []
    cost: list[np.ndarray] = []
    n_cols = 0

    def columns(count: int, upper_bound: float, c: float = 0.0) -> np.ndarray:
        nonlocal n_cols
        first = n_cols
        n_cols += count
        lo.append(np.zeros(count))
        hi.append(np.full(count, upper_bound))
        cost.append(np.full(count, c))
        return np.arange(first, n_cols)

    base = min((lj.arrival for lj in jobs), default=0)  # capacity rows: (group, t − base)
    horizon = (
        max((lj.deadline for lj in jobs), default=0)
        - base
        + max((h for lj in jobs for *_, h in lj.data), default=0)
        + 1
    )
    cap_rows: list[np.ndarray] = []
    cap_cols: list[np.ndarray] = []
    cap_signs: list[np.ndarray] = []
    constant = 0.0
    try:
        for lj in jobs:
            k = lj.k_tasks
            prev_z: np.ndarray | None = None
            late = lj.arrival
            for r in range(lj.rounds):
                budget.check()
                est = lj.arrival + r * lj.rho
                late = est + lj.window  # all results ready by then
                t0 = est + lj.rho
                n_t = max(0, late - t0)
                last = r == lj.rounds - 1
                z = columns(n_t, 1.0, -lj.weight if last else 0.0)
                f = columns(n_t, np.inf)
                f_rows = eq.new(n_t, 0)  # F_t − F_t−1 − (x ready at t) = 0
                eq.add(f_rows, f, 1)
                eq.add(f_rows[1:], f[:-1], -1)
                zf = ub.new(n_t, 0)  # K z_t − F_t ≤ 0
                ub.add(zf, z, k)
                ub.add(zf, f, -1)
                mono = ub.new(max(0, n_t - 1), 0)  # z_t − z_t+1 ≤ 0
                ub.add(mono, z[:-1], 1)
                ub.add(mono, z[1:], -1)
                n_b = max(0, late - est) if prev_z is not None else 0
                b = columns(n_b, np.inf)
                b_rows = eq.new(n_b, 0)  # B_t − B_t−1 − (x started at t) = 0
                eq.add(b_rows, b, 1)
                eq.add(b_rows[1:], b[:-1], -1)
                if prev_z is not None:  # barrier: B_t ≤ K z_{r−1, t} while t < late_{r−1}
                    n_bar = min(n_b, len(prev_z))
                    bar = ub.new(n_bar, 0)
                    ub.add(bar, b[:n_bar], 1)
                    ub.add(bar, prev_z[:n_bar], -k)
                total = eq.new(1, k)  # Σ x = K
                blocks = []
                for q, p, sy, cap_q, hold in lj.data:
                    n = late - p - sy + 1 - est
                    if n <= 0:
                        continue
                    x = columns(n, float(cap_q))
                    starts = np.arange(est, est + n)
                    blocks.append((x, starts))
                    eq.add(np.full(n, total[0]), x, 1)
                    ready = starts + p + sy
                    counted = (ready < late) & (n_t > 0)
                    eq.add(f_rows[np.maximum(ready[counted] - t0, 0)], x[counted], -1)
                    if n_b:
                        eq.add(b_rows[starts - est], x, -1)
                    # running count S_i = x_0 + … + x_i; x_t occupies [t, t + hold), so the
                    # block's tasks running at u are S(min(u, last)) − S(u − hold)
                    run = columns(n, float(k))
                    chain = eq.new(n, 0)  # S_i − S_i−1 − x_i = 0
                    eq.add(chain, run, 1)
                    eq.add(chain[1:], run[:-1], -1)
                    eq.add(chain, x, -1)
                    moments = q * horizon + est - base + np.arange(n + hold - 1)
                    cap_rows += [moments, moments[hold:]]
                    cap_cols.append(run[np.minimum(np.arange(n + hold - 1), n - 1)])
                    cap_signs += [np.ones(n + hold - 1), -np.ones(n - 1)]
                    cap_cols.append(run[: n - 1])
                if gang and blocks:
                    n_y = max(len(x) for x, _ in blocks)
                    y = columns(n_y, 1.0)
                    together = eq.new(n_y, 0)  # Σ_q x_qt − K y_t = 0
                    for x, starts in blocks:
                        eq.add(together[starts - est], x, 1)
                    eq.add(together, y, -k)
                    eq.add(np.full(n_y, eq.new(1, 1)[0]), y, 1)  # Σ y = 1
                prev_z = z
            constant += lj.weight * late
        budget.check()
    except OutOfTime:
        return outcome(None, "time limit (build)")
    # capacity rows, only for (group, moment) pairs some x occupies
    rows = np.concatenate(cap_rows) if cap_rows else np.zeros(0, np.int64)
    if len(groups) * horizon <= 4 * len(rows) + 1_000_000:
        used = np.zeros(len(groups) * horizon, dtype=bool)
        used[rows] = True
        keys = np.flatnonzero(used)
        index = np.cumsum(used) - 1
        rows = index[rows]
        del used, index
    else:  # sparse moments (far-apart arrivals): sort instead of a dense mask
        keys, rows = np.unique(rows, return_inverse=True)
    ub_cap = coo_matrix(
        (
            np.concatenate(cap_signs) if cap_signs else np.zeros(0),
            (rows, np.concatenate(cap_cols) if cap_cols else rows),
        ),
        shape=(len(keys), n_cols),
    ).tocsr()
    del rows, cap_rows, cap_cols, cap_signs
    if budget.expired():
        return outcome(None, "time limit (build)")
    cap_rhs = np.array([float(len(g)) for g in groups])[keys // horizon]
    from scipy.sparse import vstack

    a_ub = vstack([ub.matrix(n_cols), ub_cap]).tocsr()
    b_ub = np.concatenate([*ub.rhs, cap_rhs])
    a_eq = eq.matrix(n_cols)
    # handing the model to HiGHS and reading it back is not interruptible; reserve it
    left = budget.solver_seconds(variables, nonzeros)
    if left is not None and left < MIN_SOLVER_SECONDS:
        return outcome(None, "time limit (build)")
    res = linprog(
        np.concatenate(cost),
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=np.concatenate(eq.rhs),
        bounds=np.column_stack([np.concatenate(lo), np.concatenate(hi)]),
        time_limit=left,
    )
    if res.interrupted:
        return outcome(None, "interrupted")
    if res.status == 1:
        return outcome(None, "time limit (solver)")
    if res.status != 0:
        return outcome(None, f"not optimal: {res.message}")
    value = float(res.fun) + constant
    value = float(np.ceil(value - 1e-6))  # integer data and weights: OPT_down is integral
    return outcome(dn.objective_to_original(value), "optimal")


def time_indexed_lp_bound(
    instance: Instance, upper: float, time_unit: float, *, time_limit: float | None = None
) -> float | None:
    """The bound of :func:`solve_time_indexed_lp`, or ``None`` when it gives none."""
    return solve_time_indexed_lp(instance, upper, time_unit, time_limit=time_limit).bound


@dataclass(frozen=True)
class IntervalLP:
    """The interval-indexed LP relaxation (models/interval-lp.md) and the order it suggests.

    ``bound`` is a certified lower bound on Σ w_j C_j (``None`` unless HiGHS proved the LP
    optimal); ``round_starts[j][r]`` is the moment the mean-busy-time LP has processed the
    fraction r / R_j of job j's tasks, an estimate of round r's start used to order rounds
    (``None`` when the time limit ran out before that LP was solved). ``bound_status`` and
    ``order_status`` say how each LP ended: ``optimal``, ``time limit`` or ``not optimal:
    <message>``.
    """

    bound: float | None
    round_starts: tuple[np.ndarray, ...] | None
    intervals: int
    variables: int
    bound_status: str = "optimal"
    order_status: str = "optimal"


#: Most intervals :func:`_intervals` builds (more: InputError naming ``interval_ratio``).
MAX_INTERVALS = 10**7


def _intervals(instance: Instance, ratio: float, budget: Any = None) -> np.ndarray:
    """τ_0 = 0, τ_1 = shortest compute, τ_k+1 = ratio·τ_k up to the horizon.

    Always progresses: where ratio·τ_k rounds back to τ_k (denormal times) the next float up
    is taken, and the count is bounded by the geometric count (computed in log space) plus
    two, the last interval then ending at the horizon. ``budget`` (a Budget) is checked
    every 10,000 intervals (raising OutOfTime)."""
    n_tasks = np.array([job.n_tasks for job in instance.jobs], dtype=float)
    arrival = np.array([job.arrival for job in instance.jobs], dtype=float)
    finite = np.isfinite(instance.compute)
    slowest = np.where(finite, instance.compute + instance.sync, 0).max(axis=1)
    # an optimal schedule never leaves every GPU idle with work ready and no result pending
    horizon = float(arrival.max() + float(n_tasks @ slowest))
    first = float(instance.compute[finite].min())
    if not (math.isfinite(horizon) and first > 0):
        raise InputError("interval LP: the instance's times give no finite positive interval grid")
    count = (
        math.ceil((math.log(horizon) - math.log(first)) / math.log(ratio))
        if horizon > first
        else 0
    )
    if count > MAX_INTERVALS:
        raise InputError(
            f"interval_ratio {ratio:g}: {count:.3g} intervals; choose a larger interval_ratio"
        )
    taus = [0.0, first]
    while taus[-1] < horizon and len(taus) <= count + 2:
        if budget is not None and len(taus) % 10_000 == 0:
            budget.check()
        nxt = taus[-1] * ratio
        if not nxt > taus[-1]:
            nxt = math.nextafter(taus[-1], math.inf)
        taus.append(nxt)
    if taus[-1] < horizon:
        taus.append(horizon)
    return np.array(taus)


def interval_lp_size(
    instance: Instance, ratio: float = 1.2, budget: Any = None
) -> tuple[int, int]:
    """(variables, constraint non-zeros) of the larger (bound) LP of :func:`interval_lp`,
    counted without building it."""
    tau = _intervals(instance, ratio, budget)
    arrival = np.array([job.arrival for job in instance.jobs], dtype=float)
    reps = [group[0] for group in instance.gpu_groups()]
    usable = np.isfinite(instance.compute[:, reps]).sum(axis=1)
    open_ = (tau[None, 1:] > arrival[:, None]).sum(axis=1)
    n_y = int(usable @ open_)
    return n_y + instance.n_jobs, 4 * n_y + instance.n_jobs


def interval_lp(
    instance: Instance, ratio: float = 1.2, *, time_limit: float | None = None
) -> IntervalLP:
    """Solve the job-level interval-indexed LPs over groups of interchangeable GPUs.

    Geometric intervals (τ_k, τ_{k+1}] with τ_1 = the shortest compute time and τ_{k+1} =
    ratio·τ_k, up to a horizon that every optimal schedule respects. y_{jqk} is the fraction
    of job j's R_j·K_j tasks processed in group q during interval k (in processing time),
    under group capacity, at most K_j of job j's tasks running at once, and release dates.

    - The **order** LP minimises Σ w_j (mean processing point), each piece at its interval's
      midpoint (the mean-busy-time relaxation behind LP-based list scheduling); solved first.
    - The **bound** LP adds C_j ≥ (mean processing point) + min sync and C_j ≥ the critical
      path and minimises Σ w_j C_j (Hall, Schulz, Shmoys & Wein 1997,
      aggregated per job). Valid in both modes: gang rounds hold their GPUs at least as long.
      The bound LP is degenerate wherever the critical path dominates, so it cannot order
      those jobs.

    Guarantees: both LPs together take at most ``time_limit`` seconds plus HiGHS's reaction
    time (each gets what is left; the bound LP is skipped when nothing is); an LP stopped by
    the limit gives no bound or no order, never a wrong one. A Ctrl-C stops HiGHS
    (:mod:`optsched.exact.highs`): the LP it stopped and the ones after it give nothing and
    say ``interrupted``.

    Raises
    ------
    InputError
        When the LP is too large for :func:`~optsched.budget.lp_too_large` (naming
        ``interval_ratio``, which sets the number of intervals).
    """
    from scipy.sparse import coo_matrix, hstack, vstack

    from optsched.budget import (
        MIN_SOLVER_SECONDS,
        Budget,
        OutOfTime,
        lp_too_large,
        size_text,
    )
    from optsched.exact.highs import linprog

    if not ratio > 1:
        raise ValueError(f"interval ratio must be > 1, got {ratio!r}")
    budget = Budget(time_limit)
    try:
        variables, nonzeros = interval_lp_size(instance, ratio, budget)
        tau = _intervals(instance, ratio, budget)
    except OutOfTime:
        return IntervalLP(None, None, 0, 0, "time limit (build)", "time limit (build)")
    if lp_too_large(variables, nonzeros):
        raise InputError(
            f"interval_ratio {ratio:g}: the interval LP would have "
            f"{size_text(variables, nonzeros)}; choose a larger interval_ratio"
        )

    def options() -> dict[str, Any] | None:
        left = budget.solver_seconds(variables, nonzeros)
        if left is None:
            return {}
        return {"time_limit": left} if left >= MIN_SOLVER_SECONDS else None

    def status_of(res: Any) -> str:
        return (
            "optimal"
            if res.status == 0
            else "time limit"
            if res.status == 1
            else "interrupted"
            if res.interrupted
            else f"not optimal: {res.message}"
        )

    groups = instance.gpu_groups()
    reps = [group[0] for group in groups]
    n_jobs = instance.n_jobs
    size = np.array([len(group) for group in groups], dtype=float)
    arrival = np.array([job.arrival for job in instance.jobs], dtype=float)
    k_tasks = np.array([job.tasks_per_round for job in instance.jobs], dtype=float)
    n_tasks = np.array([job.n_tasks for job in instance.jobs], dtype=float)
    weight = np.array([job.weight for job in instance.jobs], dtype=float)
    work = instance.compute[:, reps] * n_tasks[:, None]  # P_jq = N_j p_jq (inf: ineligible)
    finite = np.isfinite(instance.compute)
    min_sync = np.where(finite, instance.sync, np.inf).min(axis=1)
    n_int = len(tau) - 1
    lo = np.maximum(tau[None, :-1], arrival[:, None])  # (job, k): earliest processing point
    open_ = tau[None, 1:] > arrival[:, None]
    j_idx, q_idx, k_idx = np.nonzero(np.isfinite(work)[:, :, None] & open_[:, None, :])
    n_y = len(j_idx)
    y_cols = np.arange(n_y)
    coef = work[j_idx, q_idx]
    # capacity rows (q, k) then K_j-at-once rows (j, k), over y only
    packing = coo_matrix(
        (
            np.concatenate([coef, coef]),
            (
                np.concatenate(
                    [q_idx * n_int + k_idx, len(groups) * n_int + j_idx * n_int + k_idx]
                ),
                np.concatenate([y_cols, y_cols]),
            ),
        ),
        shape=((len(groups) + n_jobs) * n_int, n_y),
    )
    packing_rhs = np.concatenate(
        [
            (size[:, None] * np.diff(tau)[None, :]).ravel(),
            (k_tasks[:, None] * np.maximum(0.0, tau[None, 1:] - lo)).ravel(),
        ]
    )
    one_each = coo_matrix((np.ones(n_y), (j_idx, y_cols)), shape=(n_jobs, n_y))

    # order LP over y: Σ w_j · (midpoint of the piece's interval)
    starts: tuple[np.ndarray, ...] | None = None
    order_status = "time limit"
    opts = options()
    if opts is not None:
        midpoint = 0.5 * (lo[j_idx, k_idx] + tau[k_idx + 1])
        order = linprog(
            weight[j_idx] * midpoint,
            A_ub=packing.tocsr(),
            b_ub=packing_rhs,
            A_eq=one_each.tocsr(),
            b_eq=np.ones(n_jobs),
            bounds=(0, 1),
            **opts,
        )
        order_status = status_of(order)
        if order.interrupted:  # a Ctrl-C: no order, and no bound LP
            return IntervalLP(None, None, n_int, n_y, "interrupted", order_status)
        if order.status not in (0, 1):  # pragma: no cover - the LP is feasible and bounded
            raise RuntimeError(f"interval order LP: {order.message}")
        if order.status == 0:
            try:
                starts = _round_starts(instance, order.x, j_idx, k_idx, lo, tau, budget)
            except OutOfTime:
                order_status = "time limit"

    # bound LP over (y, C): C_j ≥ Σ λ y + min sync, C_j ≥ critical path
    bound = None
    bound_status = "time limit"
    opts = options()
    if opts is not None:
        mean_rows = coo_matrix(
            (
                np.concatenate([lo[j_idx, k_idx], -np.ones(n_jobs)]),
                (
                    np.concatenate([j_idx, np.arange(n_jobs)]),
                    np.concatenate([y_cols, n_y + np.arange(n_jobs)]),
                ),
            ),
            shape=(n_jobs, n_y + n_jobs),
        )
        no_c = coo_matrix((packing.shape[0], n_jobs))
        res = linprog(
            np.concatenate([np.zeros(n_y), weight]),
            A_ub=vstack([hstack([packing, no_c]), mean_rows]).tocsr(),
            b_ub=np.concatenate([packing_rhs, -min_sync]),
            A_eq=hstack([one_each, coo_matrix((n_jobs, n_jobs))]).tocsr(),
            b_eq=np.ones(n_jobs),
            bounds=np.column_stack(
                [
                    np.concatenate([np.zeros(n_y), critical_path(instance)]),
                    np.concatenate([np.ones(n_y), np.full(n_jobs, np.inf)]),
                ]
            ),
            **opts,
        )
        bound_status = status_of(res)
        bound = float(res.fun) if res.status == 0 else None
    return IntervalLP(bound, starts, n_int, n_y, bound_status, order_status)


def _round_starts(
    instance: Instance,
    x: np.ndarray,
    j_idx: np.ndarray,
    k_idx: np.ndarray,
    lo: np.ndarray,
    tau: np.ndarray,
    budget: Any = None,
) -> tuple[np.ndarray, ...]:
    """x̂_jr = max(a_j, F_j⁻¹(r / R_j)) from the order LP's solution ``x`` (``budget``
    checked per job, raising OutOfTime)."""
    n_int = len(tau) - 1
    mass = np.zeros((instance.n_jobs, n_int))
    np.add.at(mass, (j_idx, k_idx), x)
    starts = []
    for j, job in enumerate(instance.jobs):
        if budget is not None:
            budget.check()
        cum = np.cumsum(mass[j])
        before = np.concatenate([[0.0], cum[:-1]])
        level = np.arange(job.rounds) / job.rounds
        k = np.minimum(np.searchsorted(cum, level + 1e-12, side="right"), n_int - 1)
        share = np.clip((level - before[k]) / np.maximum(mass[j, k], 1e-300), 0, 1)
        starts.append(np.maximum(job.arrival, lo[j, k] + share * (tau[k + 1] - lo[j, k])))
    return tuple(starts)
