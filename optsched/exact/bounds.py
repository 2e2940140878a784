"""Certified lower bounds on Σ w_j C_j (models/critical-path-bound.md, time-indexed-lp.md,
interval-lp.md).

The critical path is closed-form; an LP bound counts only when HiGHS proves the LP optimal.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.instance import Instance
from optsched.params import positive_float_param


def round_lower_bound(instance: Instance, j: int) -> float:
    """A lower bound on the time from the start of any round of job ``j`` to its results.

    Relaxed mode: the K tasks of a round alone on the whole cluster. The k-th task placed on
    GPU g is ready no earlier than ``sync[j,g] + k·compute[j,g]`` (tasks on one GPU run one
    after the other), so choosing the K smallest of these values over all (g, k) is an
    optimal single-round schedule: its K-th smallest value is the bound.

    Gang mode: K distinct GPUs held for the slowest ``compute + sync`` among them, so the
    K-th smallest ``compute[j,g] + sync[j,g]``.
    """
    job = instance.jobs[j]
    k_tasks = job.tasks_per_round
    eligible = instance.eligible(j)
    c = instance.compute[j, eligible]
    s = instance.sync[j, eligible]
    if instance.mode == "gang":
        candidates = c + s
    else:
        k = np.arange(1, k_tasks + 1)
        candidates = (s[:, None] + c[:, None] * k[None, :]).ravel()
    return float(np.partition(candidates, k_tasks - 1)[k_tasks - 1])


def critical_path(instance: Instance) -> np.ndarray:
    """Per-job lower bounds on C_j: ``arrival + rounds × round_lower_bound`` (in job order).

    formulations.md §1.5(1), sharpened: rounds are sequential (round r+1 starts after all
    results of round r are ready) and every round takes at least :func:`round_lower_bound`,
    whatever else runs on the cluster.
    """
    return np.array([job.arrival + job.rounds * round_lower_bound(instance, j)
                     for j, job in enumerate(instance.jobs)])


def critical_path_bound(instance: Instance) -> float:
    """Σ_j w_j · (per-job critical path): a certified lower bound on the objective."""
    weights = np.array([job.weight for job in instance.jobs])
    return float(weights @ critical_path(instance))


def deadlines(instance: Instance, upper: float) -> np.ndarray:
    """Per-job deadlines from an incumbent objective (formulations.md §2.0).

    Every schedule with Σ w C ≤ ``upper`` has C_j ≤ d_j = (upper − Σ_{i≠j} w_i LB_i) / w_j,
    LB the critical path; so restricting a relaxation to them keeps it a bound on the optimum
    whenever ``upper`` is the objective of a feasible schedule.
    """
    lb = critical_path(instance)
    w = np.array([job.weight for job in instance.jobs])
    return (upper - (w @ lb - w * lb)) / w


#: Above this many grid steps in the horizon, :func:`lp_time_unit` coarsens the grid.
MAX_LP_STEPS = 400


def lp_time_unit(instance: Instance, horizon: float, params: Mapping[str, str] | None = None
                 ) -> float:
    """The LP's grid: the ``time_unit`` parameter, else the data's natural unit coarsened ×10
    at a time while the horizon spans more than MAX_LP_STEPS steps and the unit stays at most
    the shortest compute time (a coarser grid only weakens the bound: times are rounded
    down)."""
    from optsched.exact.grid import default_time_unit

    given = positive_float_param(params or {}, "time_unit")
    if given is not None:
        return given
    unit = default_time_unit(instance)
    shortest = float(instance.compute[np.isfinite(instance.compute)].min())
    while horizon / unit > MAX_LP_STEPS and unit * 10 <= shortest:
        unit *= 10
    return unit


def time_indexed_lp_bound(instance: Instance, upper: float, time_unit: float, *,
                          time_limit: float | None = None) -> float | None:
    """The LP relaxation of the grouped time-indexed model (models/time-indexed-lp.md).

    Built on the instance rounded *down* to the grid of ``time_unit`` (a lower bound by
    monotonicity), restricted to the deadlines of :func:`deadlines` from ``upper`` (the
    objective of a checked feasible schedule), solved with HiGHS. In gang mode the rounds'
    tasks start together and hold their GPUs for at least compute + sync, which keeps it a
    relaxation. Returns the bound in the instance's units, rounded up to the grid's integer
    objective, or ``None`` when HiGHS does not prove the LP optimal.
    """
    import pulp

    from optsched.exact.grid import scale
    from optsched.exact.quiet import native_stdout_silenced

    dn = scale(instance, time_unit, "down")
    inst = dn.instance
    gang = inst.mode == "gang"
    groups = inst.gpu_groups()
    w = [int(job.weight) for job in inst.jobs]
    d = [int(np.floor(x / time_unit + 1e-9)) for x in deadlines(instance, upper)]
    prob = pulp.LpProblem("time_indexed_lp", pulp.LpMinimize)
    capacity: dict[tuple[int, int], list[Any]] = defaultdict(list)
    objective = []
    constant = 0.0
    for j, job in enumerate(inst.jobs):
        rho = int(round_lower_bound(inst, j))
        k_tasks = job.tasks_per_round
        data = [(q, int(inst.compute[j, grp[0]]), int(inst.sync[j, grp[0]]))
                for q, grp in enumerate(groups) if np.isfinite(inst.compute[j, grp[0]])]
        prev_z: dict[int, Any] | None = None
        prev_late = 0
        for r in range(job.rounds):
            est = int(job.arrival) + r * rho
            late = d[j] - (job.rounds - 1 - r) * rho  # all results ready by then
            starts: dict[int, list[Any]] = defaultdict(list)  # t -> x started at t
            ready: dict[int, list[Any]] = defaultdict(list)  # t -> x ready at t
            for q, p, sy in data:
                cap = min(k_tasks, len(groups[q]))
                hold = p + sy if gang else p
                for t in range(est, late - p - sy + 1):
                    x = prob.add_variable(f"x_{j}_{r}_{q}_{t}", 0, cap)
                    starts[t].append(x)
                    ready[t + p + sy].append(x)
                    for u in range(t, t + hold):
                        capacity[q, u].append(x)
            prob += pulp.lpSum(x for xs in starts.values() for x in xs) == k_tasks
            if gang:
                ys = []
                for t, xs in starts.items():
                    y = prob.add_variable(f"y_{j}_{r}_{t}", 0, 1)
                    ys.append(y)
                    prob += pulp.lpSum(xs) == k_tasks * y
                prob += pulp.lpSum(ys) == 1
            # z[t]: all results of round r ready by t (0 before est + rho, 1 from late on)
            z = {t: prob.add_variable(f"z_{j}_{r}_{t}", 0, 1) for t in range(est + rho, late)}
            count: Any = 0  # running number of tasks ready by t
            for t in range(est + rho, late):
                count_t = prob.add_variable(f"F_{j}_{r}_{t}", 0)
                prob += count_t == count + pulp.lpSum(
                    x for u in range(est if t == est + rho else t, t + 1) for x in ready[u])
                count = count_t
                prob += k_tasks * z[t] <= count_t
                if t + 1 in z:
                    prob += z[t] <= z[t + 1]
            if prev_z is not None:  # tasks of round r start only once round r-1 is ready
                started: Any = 0
                for t in range(est, late):
                    started_t = prob.add_variable(f"B_{j}_{r}_{t}", 0)
                    prob += started_t == started + pulp.lpSum(starts.get(t, []))
                    started = started_t
                    if t < prev_late:
                        prob += started_t <= k_tasks * prev_z.get(t, 0)
            prev_z, prev_late = z, late
        # C_j = late - Σ_t z_t over the last round's z (z = 0 before, 1 after)
        constant += w[j] * prev_late
        objective += [(v, -w[j]) for v in (prev_z or {}).values()]
    for (q, _), xs in capacity.items():
        prob += pulp.lpSum(xs) <= len(groups[q])
    prob += pulp.LpAffineExpression(objective) + constant
    solver = pulp.HiGHS(mip=False, msg=False, timeLimit=time_limit, threads=1)
    with native_stdout_silenced():
        prob.solve(solver)
    if prob.status != pulp.LpStatusOptimal or prob.sol_status != pulp.LpSolutionOptimal:
        return None
    value = float(pulp.value(prob.objective))
    value = float(np.ceil(value - 1e-6))  # integer data and weights: OPT_down is integral
    return dn.objective_to_original(value)


@dataclass(frozen=True)
class IntervalLP:
    """The interval-indexed LP relaxation (models/interval-lp.md) and the order it suggests.

    ``bound`` is a certified lower bound on Σ w_j C_j (``None`` unless HiGHS proved the LP
    optimal); ``round_starts[j][r]`` is the moment the mean-busy-time LP has processed the
    fraction r / R_j of job j's tasks, an estimate of round r's start used to order rounds.
    """

    bound: float | None
    round_starts: tuple[np.ndarray, ...]
    intervals: int
    variables: int


def interval_lp(instance: Instance, ratio: float = 1.2) -> IntervalLP:
    """Solve the job-level interval-indexed LPs over groups of interchangeable GPUs.

    Geometric intervals (τ_k, τ_{k+1}] with τ_1 = the shortest compute time and τ_{k+1} =
    ratio·τ_k, up to a horizon that every optimal schedule respects. y_{jqk} is the fraction
    of job j's R_j·K_j tasks processed in group q during interval k (in processing time),
    under group capacity, at most K_j of job j's tasks running at once, and release dates.

    - The **bound** LP adds C_j ≥ (mean processing point) + min sync and C_j ≥ the critical
      path and minimises Σ w_j C_j (Hall, Schulz, Shmoys & Wein 1997; formulations.md §2.2,
      aggregated per job). Valid in both modes: gang rounds hold their GPUs at least as long.
    - The **order** LP minimises Σ w_j (mean processing point), each piece at its interval's
      midpoint (the mean-busy-time relaxation behind LP-based list scheduling); the bound LP
      is degenerate wherever the critical path dominates, so it cannot order those jobs.
    """
    from scipy.optimize import linprog
    from scipy.sparse import coo_matrix, hstack, vstack

    if not ratio > 1:
        raise ValueError(f"interval ratio must be > 1, got {ratio!r}")
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
    slowest = np.where(finite, instance.compute + instance.sync, 0).max(axis=1)
    min_sync = np.where(finite, instance.sync, np.inf).min(axis=1)
    # an optimal schedule never leaves every GPU idle with work ready and no result pending
    horizon = arrival.max() + float(n_tasks @ slowest)
    taus = [0.0, float(instance.compute[finite].min())]
    while taus[-1] < horizon:
        taus.append(taus[-1] * ratio)
    tau = np.array(taus)
    n_int = len(tau) - 1
    lo = np.maximum(tau[None, :-1], arrival[:, None])  # (job, k): earliest processing point
    open_ = tau[None, 1:] > arrival[:, None]
    j_idx, q_idx, k_idx = np.nonzero(np.isfinite(work)[:, :, None] & open_[:, None, :])
    n_y = len(j_idx)
    y_cols = np.arange(n_y)
    coef = work[j_idx, q_idx]
    # capacity rows (q, k) then K_j-at-once rows (j, k), over y only
    packing = coo_matrix((np.concatenate([coef, coef]),
                          (np.concatenate([q_idx * n_int + k_idx,
                                           len(groups) * n_int + j_idx * n_int + k_idx]),
                           np.concatenate([y_cols, y_cols]))),
                         shape=((len(groups) + n_jobs) * n_int, n_y))
    packing_rhs = np.concatenate([(size[:, None] * np.diff(tau)[None, :]).ravel(),
                                  (k_tasks[:, None] * np.maximum(0.0, tau[None, 1:] - lo))
                                  .ravel()])
    one_each = coo_matrix((np.ones(n_y), (j_idx, y_cols)), shape=(n_jobs, n_y))

    # bound LP over (y, C): C_j ≥ Σ λ y + min sync, C_j ≥ critical path
    mean_rows = coo_matrix((np.concatenate([lo[j_idx, k_idx], -np.ones(n_jobs)]),
                            (np.concatenate([j_idx, np.arange(n_jobs)]),
                             np.concatenate([y_cols, n_y + np.arange(n_jobs)]))),
                           shape=(n_jobs, n_y + n_jobs))
    no_c = coo_matrix((packing.shape[0], n_jobs))
    res = linprog(np.concatenate([np.zeros(n_y), weight]),
                  A_ub=vstack([hstack([packing, no_c]), mean_rows]).tocsr(),
                  b_ub=np.concatenate([packing_rhs, -min_sync]),
                  A_eq=hstack([one_each, coo_matrix((n_jobs, n_jobs))]).tocsr(),
                  b_eq=np.ones(n_jobs),
                  bounds=np.column_stack([
                      np.concatenate([np.zeros(n_y), critical_path(instance)]),
                      np.concatenate([np.ones(n_y), np.full(n_jobs, np.inf)])]),
                  method="highs")
    bound = float(res.fun) if res.status == 0 else None

    # order LP over y: Σ w_j · (midpoint of the piece's interval)
    midpoint = 0.5 * (lo[j_idx, k_idx] + tau[k_idx + 1])
    order = linprog(weight[j_idx] * midpoint, A_ub=packing.tocsr(), b_ub=packing_rhs,
                    A_eq=one_each.tocsr(), b_eq=np.ones(n_jobs), bounds=(0, 1),
                    method="highs")
    if order.status != 0:  # pragma: no cover - the LP is feasible and bounded
        raise RuntimeError(f"interval order LP: {order.message}")
    mass = np.zeros((n_jobs, n_int))
    np.add.at(mass, (j_idx, k_idx), order.x)
    starts = []
    for j, job in enumerate(instance.jobs):
        cum = np.cumsum(mass[j])
        before = np.concatenate([[0.0], cum[:-1]])
        level = np.arange(job.rounds) / job.rounds
        k = np.minimum(np.searchsorted(cum, level + 1e-12, side="right"), n_int - 1)
        share = np.clip((level - before[k]) / np.maximum(mass[j, k], 1e-300), 0, 1)
        starts.append(np.maximum(arrival[j], lo[j, k] + share * (tau[k + 1] - lo[j, k])))
    return IntervalLP(bound, tuple(starts), n_int, n_y)

