"""The class-capacity LP bound: contention for each GPU type over time (``capacity-bound``).

The critical path lets every job run alone on the fastest GPUs; the fluid bound
(:mod:`optsched.exact.fluid`) pools the whole cluster into one machine. Neither sees that at
the Hare paper's scale the jobs compete for the *fast* GPUs: when they are taken, a job waits
or runs on slower ones. This LP keeps GPU types (classes of identical GPUs) and time apart
(docs/models/capacity-bound.md):

- ``x[j, c, t]``: GPU time that class-c GPUs spend computing tasks of job j in interval t of a
  grid from the first arrival to the incumbent's makespan (uniform, or placed where a schedule
  keeps weight waiting: :func:`open_weight_edges`), plus one unbounded last interval (so the
  grid never cuts off a schedule);
- at most ``n_c`` × the interval's length of GPU time per class and interval; at most
  ``K_j`` tasks of j at once, none before its arrival; all of j's work ``W_j = R_j K_j p_j``
  done (a task on class c does work at rate ``p_j / compute[j, c] ≤ 1``);
- rounds are sequential and last at least the critical path's round time ρ̂_j, so by time τ
  job j has done at most the work of the rounds that can have started;
- ``y[j, q]``: j's rounds whose slowest class is q. Tasks on slow classes lie in rounds
  labelled slow, and ``C_j ≥ a_j + Σ_q y[j, q] · (a round's least duration on q)``: one slow
  task paces its whole round;
- ``C_j ≥ critical path_j`` and ``C_j ≥ M_j + s_j + p_j / 2 + ρ̂_j (R_j − 1) / 2``, with M_j
  the mean time at which j's work is done, read early: the work X_jt of interval t at the
  later of its start and a_j, plus X_jt / (2 K_j), since at most K_j tasks at once do it
  (the square X_jt² kept by tangents);
- work left for slow GPUs: with f_ji the share of W_j done on j's classes of rate rank ≥ i
  (fastest rank 0) and g_ji ≥ f_ji² (tangents), ``C_j ≥ M_j + s_j + (R_j / 2) (p_j +
  Σ_i (p_j(i) − p_j(i − 1)) g_ji)``: the job's last stretch is slower when some of its work is
  slow, even with the slow work done first;
- gang mode: ``h[j, c, t]``, the GPU time class c is *held* by j in interval t, takes the
  capacity and the K_j-at-once rows instead of ``x``. A gang task holds its GPU until its
  round's results are ready, at least compute + sync, so ``x ≤ h`` in every interval and,
  summed up to the end of any interval, ``(p_jc + s_jc) / p_jc · x − h ≤ s_jc · min(K_j,
  n_c)`` (only the tasks still held then fall short, at most s_jc each), and ``≤ 0`` over
  all time.

Minimising Σ w_j C_j gives a lower bound in the instance's mode (the relaxed LP's in both).
The value reported is not HiGHS's objective but the Lagrangian bound of its dual solution
evaluated over the variables' boxes (every variable has a finite box that contains an optimal
schedule), so solver tolerances cannot make it exceed the LP's optimum. That needs dual values,
not a vertex, so HiGHS runs its interior-point method without crossover: at the Hare paper's
scale it takes 22–24 s where the dual simplex takes 6 minutes to more than 10, and where
crossing over to a vertex can take 9 minutes more. Where the interior point stalls short of
an optimum (HiGHS's "Unknown", seen on one part of the loaded Philly trace), the LP is solved
again with crossover in the time left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from optsched.budget import (
    EXACT_TIME_LIMIT,
    MAX_NONZEROS,
    MIN_SOLVER_SECONDS,
    Budget,
    lp_too_large,
    size_text,
)
from optsched.contracts import MethodOutput, SolveContext
from optsched.critical_path import critical_path, from_origin, round_lower_bounds
from optsched.ect import incumbent
from optsched.errors import InputError
from optsched.exact.grid import integral_bound
from optsched.instance import Instance
from optsched.options import Options, count
from optsched.registry import register

#: Relative margin taken off the bound for floating-point sums.
_MARGIN = 1e-9

#: Tangents of g ≥ f² in the slow-work rows, at f = k / TANGENTS for k = 1, 2, ..: they
#: undercut the square by at most 1 / (4 TANGENTS²).
TANGENTS = 8
TANGENT = np.arange(1, TANGENTS + 1) / TANGENTS

#: Tangents of the work's spread within an interval (e ≥ u² scaled), at u = k / SPREAD_TANGENTS.
SPREAD_TANGENTS = 2
SPREAD_TANGENT = np.arange(1, SPREAD_TANGENTS + 1) / SPREAD_TANGENTS

#: Shares of :func:`open_weight_edges`'s times placed at equal steps of a schedule's open
#: weight and of the arrivals (the rest uniform).
OPEN_SHARE, ARRIVAL_SHARE = 0.8, 0.1

#: Most intervals accepted: the LP has at least 4 non-zeros per interval (one job on one GPU
#: type), so more can never fit :data:`~optsched.budget.MAX_NONZEROS`.
MAX_INTERVALS = MAX_NONZEROS // 4


@dataclass(frozen=True)
class CapacityBoundOptions(Options):
    """Options of ``capacity-bound``."""

    intervals: int = count(
        "intervals of the time grid over the incumbent's makespan "
        f"(default 100, at most {MAX_INTERVALS:.0e}; more: tighter and "
        "slower)",
        100,
        high=MAX_INTERVALS,
    )


class ClassPrices(NamedTuple):
    """What GPU time is worth over time: ``price[c, t]`` per GPU-second of class c
    (objective units, ≥ 0) in [edges[t], edges[t + 1]); nothing outside the grid."""

    edges: npt.NDArray[np.float64]
    price: npt.NDArray[np.float64]


@dataclass(frozen=True)
class CapacityLP:
    """The outcome of :func:`capacity_bound`: ``bound`` (certified, ``None`` unless HiGHS
    solved the LP), ``status`` (``optimal``, ``time limit``, ``too large`` — not built, see
    :func:`~optsched.budget.lp_too_large` — or ``not optimal: <message>``), the LP's size
    and, when solved, the ``prices`` of its capacity rows (minus their dual values): a start
    for :func:`~optsched.exact.lagrangian.lagrangian_bound`'s multipliers, and
    ``class_share[j, c]``: the share of job j's work that the LP's solution does on GPU class
    c (rows sum to 1), which ``priority-search``'s ``classes=lp`` reads."""

    bound: float | None
    status: str
    variables: int
    nonzeros: int
    solver_objective: float | None = None  # HiGHS's optimum, for comparison
    prices: ClassPrices | None = None
    class_share: npt.NDArray[np.float64] | None = None


def _rows(*blocks: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, ...]:
    rows, cols, vals = zip(*blocks, strict=True)
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def check_intervals(intervals: object) -> None:
    """An InputError unless ``intervals`` is an integer ≥ 1 (the LP's grid needs one)."""
    if isinstance(intervals, bool) or not isinstance(intervals, int) or intervals < 1:
        raise InputError(f"intervals must be an integer >= 1, got {intervals!r}")


def capacity_lp_size(instance: Instance, intervals: int) -> tuple[int, int]:
    """(variables, constraint non-zeros) of :func:`capacity_bound`'s LP on ``intervals``,
    counted in O(jobs × GPU types) without building anything."""
    n, n_t = instance.n_jobs, intervals
    pairs = int(np.isfinite(instance.class_compute).sum())
    n_x = pairs * (n_t + 1)
    variables = n_x + n * n_t + n + pairs
    nonzeros = (
        4 * n_x + 2 * n * n_t + n + pairs * (instance.class_compute.shape[1] * (n_t + 2) + 2)
    )
    if instance.mode == "gang":  # holding columns; x ≤ h and the sync-aware rows
        variables += n_x + pairs * n_t
        nonzeros += 2 * n_x + 4 * pairs * n_t + 3 * pairs
    # the slow-work rows: f and g per pair but each job's fastest, f chained but the slowest
    slow = pairs - n
    chained = slow - int((np.isfinite(instance.class_compute).sum(axis=1) > 1).sum())
    variables += 2 * slow + n * (n_t + 1)
    nonzeros += slow * (n_t + 4 + 2 * TANGENTS) + chained + n_x + n
    nonzeros += (3 * SPREAD_TANGENTS + 2) * n * (n_t + 1)
    return variables, nonzeros


def capacity_lp_too_large(instance: Instance, intervals: int) -> bool:
    """Whether :func:`capacity_bound` would not build the LP of ``instance`` on
    ``intervals`` intervals (status ``too large``), known before anything is computed."""
    return lp_too_large(*capacity_lp_size(instance, intervals))


def capacity_bound(
    instance: Instance,
    upper: float,
    horizon: float,
    intervals: int,
    *,
    time_limit: float | None = None,
    edges: npt.ArrayLike | None = None,
) -> CapacityLP:
    """The class-capacity LP bound (module doc) on a grid of ``intervals`` from the first
    arrival to ``horizon`` (at least the longest critical path), uniform; or at ``edges``
    (``intervals`` + 1 increasing times, the first arrival first, e.g.
    :func:`open_weight_edges`), which then end the grid instead of ``horizon`` (the last
    moved to the longest critical path when that is later); ``upper`` is the objective
    of a feasible schedule (it bounds each C_j of an optimal one by ``upper / w_j``);
    ``intervals`` ≥ 1 (an InputError otherwise). The instance's mode picks the LP: gang
    mode adds the holding time (module doc), and its bound holds for gang schedules only.

    Guarantees: the size is estimated (:func:`capacity_lp_size`) before anything of it is
    allocated, and an LP too large for :func:`~optsched.budget.lp_too_large` is not
    built (status ``too large``); the call takes at most ``time_limit`` plus one job's block
    of the build and HiGHS's reaction time (the build checks the time per job, HiGHS is
    stopped at its deadline: status ``time limit``); a Ctrl-C stops HiGHS (status
    ``interrupted``, no bound)."""
    from scipy.sparse import coo_matrix

    from optsched.exact.highs import linprog

    check_intervals(intervals)
    budget = Budget(time_limit)
    n, n_t = instance.n_jobs, intervals
    variables, nonzeros = capacity_lp_size(instance, intervals)
    if lp_too_large(variables, nonzeros):
        return CapacityLP(None, "too large", variables, nonzeros)
    compute, sync = instance.class_compute, instance.class_sync
    size = np.bincount(instance.gpu_class, minlength=compute.shape[1]).astype(float)
    jobs = instance.jobs
    arrival = np.array([job.arrival for job in jobs], dtype=float)
    weight = np.array([job.weight for job in jobs], dtype=float)
    rounds = np.array([job.rounds for job in jobs], dtype=float)
    tasks = np.array([job.tasks_per_round for job in jobs], dtype=float)
    eligible = np.isfinite(compute)
    fastest = np.where(eligible, compute, np.inf).min(axis=1)
    rate = np.where(eligible, fastest[:, None] / np.where(eligible, compute, 1.0), 0.0)
    tail = np.where(eligible, sync, np.inf).min(axis=1)
    round_time = np.array(round_lower_bounds(instance))
    # times from the first arrival, added back to the value: at an epoch-scale origin the
    # LP's coefficients would lose their precision
    origin = float(arrival.min())
    arrival = arrival - origin
    path = critical_path(instance) - origin
    work = rounds * tasks * fastest
    after = tail + fastest / 2 + round_time * (rounds - 1) / 2  # C_j ≥ M_j + after_j

    # the grid: from the first arrival (nothing computes before it) to the horizon; interval t
    # starts at edges[t], interval n_t is [edges[-1], ∞)
    longest_path = float(path.max())
    if edges is None:
        edges = np.linspace(0.0, max(horizon - origin, longest_path), n_t + 1)
    else:
        edges = _relative_edges(edges, origin, n_t, longest_path)
    # columns: x for each eligible (job, class) pair and interval 0..n_t; Z (job's cumulative
    # work at the end of interval t < n_t); C per job; y per eligible (job, class) pair
    pair_job, pair_class = np.nonzero(eligible)
    n_x = len(pair_job) * (n_t + 1)
    col = np.arange(n_x)
    x_job, x_class, x_t = pair_job[col // (n_t + 1)], pair_class[col // (n_t + 1)], col % (n_t + 1)
    x_rate = rate[x_job, x_class]
    z0, c0 = n_x, n_x + n * n_t
    y0 = c0 + n  # y: the job's rounds whose slowest class (by compute + sync) is that one
    h0 = y0 + len(pair_job)  # gang: h, GPU time held, per x column
    gang = instance.mode == "gang"
    # gang: U, the cumulative (pace / p) x − h of each pair up to the end of interval t < T
    u0 = h0 + (n_x if gang else 0)
    f0 = u0 + (len(pair_job) * n_t if gang else 0)  # slow work: f, then g, per slow pair
    n_slow = len(pair_job) - n
    e0 = f0 + 2 * n_slow  # e per (job, interval): its work's lateness there (spread rows)
    n_cols = e0 + n * (n_t + 1)
    inner = x_t < n_t
    assert n_cols == variables
    if budget.expired():
        return CapacityLP(None, "time limit", variables, nonzeros)

    # ≤ rows: class capacity (class, t); job's tasks at once (job, t); completion (job); both
    # count GPU time held (gang: h), which is GPU time computing in relaxed mode
    cap_row = x_class * n_t + x_t
    slot_row = size.size * n_t + x_job * n_t + x_t
    done_row = size.size * n_t + n * n_t + np.arange(n)
    held = h0 + col if gang else col
    overlap = np.clip(
        edges[1:][None, :] - np.maximum(edges[:-1][None, :], arrival[:, None]), 0.0, None
    )  # (job, t): length of interval t after the job's arrival
    # M_j read early: work in interval t is done at or after max(τ_t, a_j) ...
    mean_time = np.maximum(edges[x_t], arrival[x_job]) * x_rate / work[x_job]
    # ... and, at most K_j tasks at once at rate ≤ 1, its X_jt takes X_jt / K_j at least:
    # its mean time is at least X_jt / (2 K_j) later, and e_jt ≥ X_jt² / (2 K_j W_j) by
    # tangents, at u = X_jt / most_jt (most: K_j × the interval's room, or W_j in the last)
    most = np.column_stack([tasks[:, None] * overlap, work])  # (job, t ≤ n_t)
    e_scale = most**2 / (2 * tasks * work)[:, None]  # e_jt ≤ e_scale_jt (u = 1)
    e_col = e0 + np.arange(n * (n_t + 1))
    rows, cols, vals = _rows(
        (cap_row[inner], held[inner], np.ones(inner.sum())),
        (slot_row[inner], held[inner], np.ones(inner.sum())),
        (done_row[x_job], col, mean_time),
        (done_row.repeat(n_t + 1), e_col, np.ones(e_col.size)),
        (done_row, c0 + np.arange(n), -np.ones(n)),
    )
    # rounds by their slowest class: for each threshold pair (j, c), the tasks of j on classes
    # at least as slow as c (GPU time / compute) lie in rounds whose slowest class is too,
    # K_j tasks each; and C_j ≥ a_j + Σ_q (round duration with slowest class q) · y_jq
    pace = compute + sync
    label_rows, pace_row = done_row[-1] + 1, done_row[-1] + 1 + len(pair_job)
    blocks = [(rows, cols, vals)]
    for k, (j, c) in enumerate(zip(pair_job, pair_class, strict=True)):
        if k % 64 == 0 and budget.expired():
            return CapacityLP(None, "time limit", variables, nonzeros)
        slower = np.flatnonzero((pair_job == j) & (pace[j, pair_class] >= pace[j, c]))
        x_cols = (slower[:, None] * (n_t + 1) + np.arange(n_t + 1)[None, :]).ravel()
        blocks.append(
            (
                np.full(x_cols.size + slower.size, label_rows + k),
                np.concatenate([x_cols, y0 + slower]),
                np.concatenate(
                    [1.0 / compute[j, x_class[x_cols]], np.full(slower.size, -tasks[j])]
                ),
            )
        )
    duration = np.maximum(round_time[pair_job], pace[pair_job, pair_class])
    blocks += [
        (pace_row + pair_job, y0 + np.arange(len(pair_job)), duration),
        (pace_row + np.arange(n), c0 + np.arange(n), -np.ones(n)),
    ]
    n_rows, rest_b = pace_row + n, []  # right-hand sides of the rows after pacing
    if gang:
        # a task computes inside its hold: x ≤ h in every interval; and over the whole time a
        # hold lasts compute + sync at least: U[pair, T − 1] + (pace / p) x − h ≤ 0 in the
        # last interval (U, the running sum of (pace / p) x − h, is defined in A_eq)
        ratio = pace[x_job, x_class] / compute[x_job, x_class]
        last = np.flatnonzero(~inner)  # one x column per pair
        end_row = n_rows + n_x + np.arange(last.size)
        blocks += [
            (n_rows + col, col, np.ones(n_x)),
            (n_rows + col, h0 + col, -np.ones(n_x)),
            (end_row, col[last], ratio[last]),
            (end_row, h0 + col[last], -np.ones(last.size)),
            (end_row, u0 + np.arange(last.size) * n_t + n_t - 1, np.ones(last.size)),
        ]
        rest_b = [np.zeros(n_x + last.size)]
        n_rows += n_x + last.size
    # slow work (module doc): each job's pairs by rate, fastest first; slow pair k (rank
    # i ≥ 1) has f_k, the share of W_j done on j's classes of rank ≥ i, and g_k ≥ f_k² by
    # tangents; C_j ≥ M_j + s_j + (R_j / 2) (p_j + Σ_k (compute of rank i − of rank i − 1) g_k)
    by_rate = np.lexsort((pair_class, -rate[pair_job, pair_class], pair_job))
    sorted_job = pair_job[by_rate]
    first = np.searchsorted(sorted_job, sorted_job)
    at = np.flatnonzero(np.arange(len(by_rate)) > first)  # sorted positions of slow pairs
    slow_pair, faster_pair = by_rate[at], by_rate[at - 1]
    slow_job = pair_job[slow_pair]
    g_cols = f0 + n_slow + np.arange(n_slow)
    tangent_row = n_rows + np.arange(n_slow * TANGENTS)
    slow_row = n_rows + n_slow * TANGENTS + np.arange(n)
    step = compute[slow_job, pair_class[slow_pair]] - compute[slow_job, pair_class[faster_pair]]
    blocks += [
        (tangent_row, f0 + np.arange(n_slow).repeat(TANGENTS), np.tile(2 * TANGENT, n_slow)),
        (tangent_row, g_cols.repeat(TANGENTS), -np.ones(tangent_row.size)),
        (slow_row[x_job], col, mean_time),
        (slow_row.repeat(n_t + 1), e_col, np.ones(e_col.size)),
        (slow_row, c0 + np.arange(n), -np.ones(n)),
        (slow_row[slow_job], g_cols, rounds[slow_job] * step / 2),
    ]
    rest_b += [np.tile(TANGENT**2, n_slow), -(tail + rounds * fastest / 2)]
    n_rows += n_slow * TANGENTS + n
    # e_jt ≥ e_scale_jt (2 a u − a²), u = X_jt / most_jt, at a = k / SPREAD_TANGENTS, with
    # X_jt = Z_jt − Z_j,t−1 (Z_j,−1 = 0) and, in the last interval, W_j − Z_j,T−1
    slot = np.flatnonzero(most.ravel() > 0)  # (job, t ≤ n_t) where work can be done
    s_job, s_t = slot // (n_t + 1), slot % (n_t + 1)
    z_now, z_before = z0 + s_job * n_t + s_t, z0 + s_job * n_t + s_t - 1
    now, before = s_t < n_t, s_t > 0
    scale = e_scale.ravel()[slot]
    for k, a in enumerate(SPREAD_TANGENT):
        row = n_rows + k * slot.size + np.arange(slot.size)
        slope = 2 * a * scale / most.ravel()[slot]
        blocks += [
            (row[now], z_now[now], slope[now]),
            (row[before], z_before[before], -slope[before]),
            (row, e0 + slot, -np.ones(slot.size)),
        ]
        rest_b.append(a * a * scale - np.where(now, 0.0, slope * work[s_job]))
    n_rows += SPREAD_TANGENTS * slot.size
    rows, cols, vals = _rows(*blocks)
    a_ub = coo_matrix((vals, (rows, cols)), shape=(n_rows, n_cols)).tocsr()
    b_ub = np.concatenate(
        [
            (size[:, None] * np.diff(edges)[None, :]).ravel(),
            (tasks[:, None] * overlap).ravel(),
            -after,
            np.zeros(len(pair_job)),
            -arrival,
            *rest_b,
        ]
    )
    # = rows: all work done (job); Z[j, t] = Z[j, t-1] + work of j in interval t
    z_row = n + x_job * n_t + x_t
    zt = np.arange(n * n_t) % n_t
    later = zt > 0
    rounds_row = n + n * n_t  # Σ_q y_jq = R_j
    rows, cols, vals = _rows(
        (x_job, col, x_rate),
        (z_row[inner], col[inner], x_rate[inner]),
        (n + np.arange(n * n_t), z0 + np.arange(n * n_t), -np.ones(n * n_t)),
        (n + np.flatnonzero(later), z0 + np.flatnonzero(later) - 1, np.ones(later.sum())),
        (rounds_row + pair_job, y0 + np.arange(len(pair_job)), np.ones(len(pair_job))),
    )
    n_eq = rounds_row + n
    if gang:  # U[pair, t] = U[pair, t − 1] + (pace / p) x − h
        u_col = u0 + col // (n_t + 1) * n_t + x_t
        row = n_eq + u_col - u0
        step = inner & (x_t > 0)
        rows, cols, vals = _rows(
            (rows, cols, vals),
            (row[inner], u_col[inner], np.ones(inner.sum())),
            (row[inner], col[inner], -ratio[inner]),
            (row[inner], h0 + col[inner], np.ones(inner.sum())),
            (row[step], u_col[step] - 1, -np.ones(step.sum())),
        )
        n_eq += len(pair_job) * n_t
    # f_k = f_(next slower pair of j) + this pair's work / W_j: the share on ranks ≥ i
    x_cols = (slow_pair[:, None] * (n_t + 1) + np.arange(n_t + 1)).ravel()
    chained = np.flatnonzero(slow_job[1:] == slow_job[:-1])
    f_row = n_eq + np.arange(n_slow)
    rows, cols, vals = _rows(
        (rows, cols, vals),
        (f_row, f0 + np.arange(n_slow), np.ones(n_slow)),
        (f_row[chained], f0 + chained + 1, -np.ones(chained.size)),
        (f_row.repeat(n_t + 1), x_cols, -x_rate[x_cols] / work[x_job[x_cols]]),
    )
    n_eq += n_slow
    a_eq = coo_matrix((vals, (rows, cols)), shape=(n_eq, n_cols)).tocsr()
    b_eq = np.concatenate([work, np.zeros(n * n_t), rounds, np.zeros(n_eq - rounds_row - n)])

    # boxes; Z[j, t] ≤ the work of the rounds that can have started by the end of interval t
    # (round r starts at or after a_j + r·ρ̂_j; by then a round has done at most K_j·elapsed)
    lo, hi = np.zeros(n_cols), np.empty(n_cols)
    room = np.column_stack([overlap, np.full(n, np.inf)])[x_job, x_t]
    hi[:n_x] = np.minimum(np.minimum(size[x_class], tasks[x_job]) * room, work[x_job] / x_rate)
    elapsed = np.clip((edges[1:][None, :] - arrival[:, None]) / round_time[:, None], 0.0, None)
    whole = np.floor(elapsed)
    started = whole + np.minimum(1.0, (elapsed - whole) * (round_time / fastest)[:, None])
    hi[z0:c0] = (tasks * fastest)[:, None].repeat(n_t, axis=1).ravel() * np.minimum(
        started, rounds[:, None]
    ).ravel()
    lo[c0:y0], hi[c0:y0] = path, np.maximum(path, upper / weight - origin)
    hi[y0:h0] = rounds[pair_job]
    if gang:  # held at most K_j at once, and at most every round for its longest pace
        longest = np.zeros(n)  # the job's longest round: its largest pace-row duration
        np.maximum.at(longest, pair_job, duration)
        hi[h0:u0] = np.minimum(
            np.minimum(size[x_class], tasks[x_job]) * room, (tasks * rounds * longest)[x_job]
        )
        # at the end of interval t, the tasks of j on class c still held are at most
        # min(K_j, n_c), each short of at most s ((pace / p) × its compute so far, less its
        # hold so far)
        u_pair = np.arange(len(pair_job)).repeat(n_t)
        lo[u0:f0] = -hi[h0:u0].reshape(len(pair_job), n_t + 1).sum(axis=1)[u_pair]
        short = sync * np.minimum(tasks[:, None], size[None, :])
        hi[u0:f0] = short[pair_job, pair_class][u_pair]
    lo[f0:e0], hi[f0:e0] = 0.0, 1.0  # shares and their squares
    lo[e0:], hi[e0:] = 0.0, e_scale.ravel()
    cost = np.zeros(n_cols)
    cost[c0:y0] = weight

    left = budget.solver_seconds(variables, nonzeros)
    if left is not None and left < MIN_SOLVER_SECONDS:
        return CapacityLP(None, "time limit", variables, nonzeros)
    lp: dict[str, Any] = {
        "A_ub": a_ub,
        "b_ub": b_ub,
        "A_eq": a_eq,
        "b_eq": b_eq,
        "bounds": np.column_stack([lo, hi]),
    }
    # module doc: the interior point without crossover is faster than the simplex and than
    # crossing over
    res = linprog(cost, **lp, time_limit=left, method="central")
    left = budget.solver_seconds(variables, nonzeros)
    if res.status == 4 and not res.interrupted and (left is None or left >= MIN_SOLVER_SECONDS):
        # it stalled short of an optimum (HiGHS's "Unknown"): again, with crossover, which
        # ends at a vertex, in the time left
        res = linprog(cost, **lp, time_limit=left, method="ipm")
    if res.interrupted:
        return CapacityLP(None, "interrupted", variables, nonzeros)
    if res.status == 1:
        return CapacityLP(None, "time limit", variables, nonzeros)
    if res.status != 0:
        return CapacityLP(None, f"not optimal: {res.message}", variables, nonzeros)
    # Lagrangian bound of the dual solution: valid for any multipliers of the right sign
    dual_ub = np.minimum(res.ineqlin.marginals, 0.0)
    dual_eq = res.eqlin.marginals
    reduced = cost - a_ub.T @ dual_ub - a_eq.T @ dual_eq
    value = float(
        dual_ub @ b_ub + dual_eq @ b_eq + np.where(reduced >= 0, reduced * lo, reduced * hi).sum()
    )
    # back from times after the origin; on integer data, up to the optimum's granularity
    bound = integral_bound(instance, from_origin(value, origin, weight, _MARGIN))
    solver = float(res.fun) + origin * float(weight.sum())
    prices = ClassPrices(edges + origin, -dual_ub[: size.size * n_t].reshape(size.size, n_t))
    share = np.zeros_like(rate)
    np.add.at(share, (x_job, x_class), np.clip(res.x[:n_x], 0.0, None) * x_rate)
    share /= np.maximum(share.sum(axis=1, keepdims=True), np.finfo(float).tiny)
    return CapacityLP(bound, "optimal", variables, nonzeros, solver, prices, share)


def _relative_edges(edges: npt.ArrayLike, origin: float, n_t: int, path: float) -> np.ndarray:
    """Given grid ``edges`` as times after ``origin`` (the first arrival), the last moved
    to ``path`` when that is later; an InputError unless they are ``n_t`` + 1 finite,
    increasing times from the origin."""
    given = np.asarray(edges, dtype=float)
    if given.shape != (n_t + 1,):
        raise InputError(f"edges: expected {n_t + 1} times (intervals + 1), got {given.size}")
    if not np.isfinite(given).all():
        raise InputError("edges: the grid's times must be finite")
    if given[0] != origin:
        raise InputError(f"edges: the grid starts at the first arrival ({origin:g})")
    rel = given - origin
    if not (np.diff(rel) > 0).all():
        raise InputError("edges: the grid's times must increase")
    rel[-1] = max(rel[-1], path)
    return rel


def open_weight_edges(
    instance: Instance, completion: npt.ArrayLike, horizon: float, intervals: int
) -> np.ndarray:
    """A grid for :func:`capacity_bound` that is fine where a schedule (each job's
    ``completion``, e.g. a policy's) keeps much weight waiting: ``intervals`` + 1 times from
    the first arrival to the later of ``horizon`` and the last completion, of which about
    :data:`OPEN_SHARE` at equal steps of the schedule's open weight (∫ Σ w_j over the jobs
    arrived and not completed), :data:`ARRIVAL_SHARE` at equal steps of the arrivals and the
    rest uniform. Σ_j w_j C_j grows at the rate of the open weight, and the LP reads each
    job's work at its interval's start, so a coarse interval costs in proportion to the
    weight open during it: on a trace whose jobs mostly end within minutes while a few run
    for days, a uniform grid spends nearly all its intervals where little is left. Any grid
    gives a valid bound; this one only places it. Meant for grids of hundreds of intervals
    (merging the points takes time quadratic in their number).

    Raises
    ------
    InputError
        ``intervals`` not an integer ≥ 1, or ``completion`` not one finite time per job,
        at or after its arrival, or ``horizon`` not finite.
    """
    check_intervals(intervals)
    arrival = np.array([job.arrival for job in instance.jobs], dtype=float)
    weight = np.array([job.weight for job in instance.jobs], dtype=float)
    done = np.asarray(completion, dtype=float)
    if done.shape != arrival.shape or not np.isfinite(done).all() or (done < arrival).any():
        raise InputError("completion: expected one finite time per job, at or after its arrival")
    if not math.isfinite(horizon):
        raise InputError(f"horizon must be finite, got {horizon!r}")
    origin = float(arrival.min())
    # times after the first arrival throughout, so that the grid does not depend on it
    arrival, done = arrival - origin, done - origin
    end = max(float(horizon) - origin, float(done.max()))
    uniform = np.linspace(0.0, end, intervals + 1)
    # the open weight is piecewise constant between events: +w at an arrival, −w at a
    # completion; its integral at the event times is the mass whose equal steps we take
    times = np.concatenate([arrival, done])
    change = np.concatenate([weight, -weight])
    order = np.argsort(times, kind="stable")
    times, change = times[order], change[order]
    mass = np.concatenate([[0.0], np.cumsum(np.cumsum(change)[:-1] * np.diff(times))])
    mass = np.maximum.accumulate(mass)  # float sums may dip below an open weight of 0
    rel = uniform
    if intervals >= 2 and end > 0 and mass[-1] > 0:
        k_open = int(intervals * OPEN_SHARE)
        k_arrival = max(1, int(intervals * ARRIVAL_SHARE))
        k_uniform = max(1, intervals - k_open - k_arrival)
        points = np.concatenate(
            [
                uniform[:: max(1, intervals // k_uniform)],
                np.interp(np.linspace(0.0, mass[-1], k_open + 1), mass, times),
                np.quantile(arrival, np.linspace(0.0, 1.0, k_arrival + 1)),
            ]
        )
        rel = np.unique(np.clip(points, 0.0, end))
        rel = rel[np.concatenate([[True], np.diff(rel) > 1e-9 * end])]
        rel = _resized(rel, intervals)
        rel[0], rel[-1] = 0.0, end
    out = origin + rel
    if not (np.diff(out - origin) > 0).all():  # collapsed in floating point: uniform
        return origin + uniform
    return out


def _resized(points: np.ndarray, intervals: int) -> np.ndarray:
    """``points`` (increasing, from 0) made ``intervals`` + 1, keeping both ends: a point
    whose two intervals together are shortest is dropped while there are too many, and the
    longest interval is halved while there are too few."""
    points = points.copy()
    while points.size > intervals + 1:
        pair = points[2:] - points[:-2]  # the interval left by dropping points[i + 1]
        points = np.delete(points, int(np.argmin(pair)) + 1)
    while points.size < intervals + 1:
        i = int(np.argmax(np.diff(points)))
        points = np.insert(points, i + 1, (points[i] + points[i + 1]) / 2)
    return points


@register(
    "capacity-bound",
    options=CapacityBoundOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    imports=("highspy", "scipy.sparse"),
    description="ECT schedule + the class-capacity LP bound (contention for each GPU "
    "type over time; both modes)",
)
def _capacity_bound(
    instance: Instance, context: SolveContext[CapacityBoundOptions]
) -> MethodOutput:
    budget = Budget(context.time_limit)
    intervals = context.options.intervals
    variables, nonzeros = capacity_lp_size(instance, intervals)
    if lp_too_large(variables, nonzeros):  # before any work
        raise InputError(
            f"capacity-bound: intervals={intervals}: the LP would have "
            f"{size_text(variables, nonzeros)}; choose fewer intervals"
        )
    start = incumbent(instance, context.hint, budget)
    context.report(start.objective)  # progress lines show it while the LP solves
    extra: dict[str, Any] = {
        "intervals": intervals,
        "lp_nonzeros": nonzeros,
        "start": start.origin,
    }
    if budget.expired():  # the incumbent took the time: no LP
        return MethodOutput(
            schedule=start.schedule,
            extra={**extra, "lp_status": "time limit", "stopped": "time limit"},
        )
    lp = capacity_bound(
        instance, start.objective, start.makespan, intervals, time_limit=budget.left()
    )
    interrupted = lp.status == "interrupted"
    return MethodOutput(
        schedule=start.schedule,
        bound=lp.bound,
        extra={
            **extra,
            "lp_status": lp.status,
            "interrupted": interrupted,
            "stopped": "interrupted"
            if interrupted
            else "time limit"
            if lp.status == "time limit"
            else "done",
        },
    )
