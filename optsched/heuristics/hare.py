"""Hare's offline heuristic (HPDC'22 §5.2, Algorithm 1) and its variants, relaxed mode.

Step 1 solves a relaxation for start-time estimates x̂; step 2 lists tasks by
H_i = x̂_i + ½ max_m T^c_{i,m} (ties by job order, round, task) and places each one at
max(previous round synced, φ_m) on a GPU m, φ_m being the moment GPU m becomes free
(it is busy for compute only; the sync overlaps the GPU's next task).

| method        | relaxation (step 1)                          | GPU choice (step 2)       |
|---------------|----------------------------------------------|---------------------------|
| ``hare``        | Hare_Sched_RL, exact (CP-SAT)               | earliest free (published) |
| ``hare-ect``    | Hare_Sched_RL, exact (CP-SAT)               | earliest completion       |
| ``hare-lp``     | interval-indexed LP (scalable)              | earliest free             |
| ``hare-lp-ect`` | interval-indexed LP (scalable)              | earliest completion       |

*Earliest free* is Algorithm 1 as published: argmin_m φ_m over eligible GPUs, ties to the
lowest index, whatever the GPU's speed. *Earliest completion* takes the GPU where the task's
result is ready first (ties to the group's earliest-free GPU, then the lowest index).

Guarantee (Theorem 4, HPDC'22 §5.3): the published method is an α(2+α)-approximation, α the
heterogeneity degree (:func:`~optsched.exact.hare_relaxation.heterogeneity_degree`); the proof
bounds the heuristic by α(2+α) times the optimal relaxation value. Every Result reports α, the
factor, the relaxation value and the achieved ratio; ``covered`` is true only for ``hare``
with a proved relaxation, the one case the published bound speaks about.

Time limit: step 1 gets what is left of ``--time-limit`` after the ECT schedule; step 2 is a
list schedule (no limit needed). When step 1 runs out of time it falls back on the ECT
schedule's start times (``relaxation.solver_status`` ``NOT_BUILT`` for the CP-SAT relaxation,
``relaxation.order`` ``ect`` for the interval LP), so a schedule always comes back in time.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from optsched.errors import InputError, OptschedError
from optsched.exact.bounds import interval_lp
from optsched.exact.budget import Budget
from optsched.exact.grid import parse_time_unit
from optsched.exact.hare_relaxation import (
    check_relaxation_size,
    heterogeneity_degree,
    solve_hare_relaxation,
)
from optsched.heuristics.list_scheduling import ect_schedule
from optsched.instance import Instance
from optsched.params import int_param, positive_float_param
from optsched.schedule import Schedule, Task
from optsched.solve import MethodOutput, SolveContext, register

GPU_CHOICES = ("earliest-free", "earliest-completion")
#: relative slack when testing the published guarantee (floating-point noise only)
GUARANTEE_TOL = 1e-9


def hare_list_schedule(instance: Instance, estimate: Callable[[int, int, int], float],
                       gpu_choice: str = "earliest-free") -> tuple[Schedule, float]:
    """Step 2 of Algorithm 1: the list schedule for start estimates ``estimate(j, r, k)``.

    Returns the schedule and its Σ w_j C_j. Runs in O(T log T + T·Q·log M) for T tasks, Q
    groups of interchangeable GPUs and M GPUs (a heap of free times per group).

    Raises
    ------
    OptschedError
        If the estimates order a task before a task of its job's previous round (every
        relaxation used here implies x̂ of round r+1 > x̂ of round r, so this is a bug).
    """
    if gpu_choice not in GPU_CHOICES:
        raise ValueError(f"gpu_choice must be one of {GPU_CHOICES}, got {gpu_choice!r}")
    compute, sync = instance.compute, instance.sync
    groups = instance.gpu_groups()
    heaps = [[(0.0, g) for g in group] for group in groups]  # (φ_m, m), sorted = a heap
    usable = [[q for q, group in enumerate(groups) if np.isfinite(compute[j, group[0]])]
              for j in range(instance.n_jobs)]
    half_slowest = [0.5 * float(compute[j, instance.eligible(j)].max())
                    for j in range(instance.n_jobs)]
    order = sorted((estimate(j, r, k) + half_slowest[j], j, r, k)
                   for j, job in enumerate(instance.jobs)
                   for r in range(job.rounds) for k in range(job.tasks_per_round))
    placed = [[0] * job.rounds for job in instance.jobs]
    ready = [[float(job.arrival)] + [0.0] * job.rounds for job in instance.jobs]
    earliest_free = gpu_choice == "earliest-free"
    tasks = []
    for _, j, r, k in order:
        job = instance.jobs[j]
        if r > 0 and placed[j][r - 1] < job.tasks_per_round:
            raise OptschedError(f"task {k} of round {r} of job {job.id!r} is listed before "
                                f"its previous round is complete")
        t = ready[j][r]  # arrival for round 0, else all results of round r-1 ready
        best: tuple[float, int, int] | None = None
        for q in usable[j]:
            phi, g = heaps[q][0]
            key = phi if earliest_free else max(t, phi) + compute[j, g] + sync[j, g]
            if best is None or (key, g) < best[:2]:
                best = (key, g, q)
        assert best is not None  # every job has an eligible GPU
        q = best[2]
        phi, g = heapq.heappop(heaps[q])
        start = max(t, phi)
        heapq.heappush(heaps[q], (start + float(compute[j, g]), g))
        tasks.append(Task(job.id, r, k, instance.gpus[g].id, start))
        placed[j][r] += 1
        ready[j][r + 1] = max(ready[j][r + 1], start + float(compute[j, g] + sync[j, g]))
    objective = sum(job.weight * ready[j][job.rounds] for j, job in enumerate(instance.jobs))
    return Schedule(instance.name, tasks, instance.mode), objective


def guarantee(instance: Instance, objective: float, relaxation: float, proved: bool,
              published: bool) -> dict[str, Any] | None:
    """The ``guarantee`` field of a Result (``None`` when α is undefined)."""
    alpha = heterogeneity_degree(instance)
    if alpha is None:
        return None
    factor = alpha * (2 + alpha)
    ratio = objective / relaxation if relaxation > 0 else None
    covered = published and proved
    holds = None
    if covered and ratio is not None:
        holds = ratio <= factor * (1 + GUARANTEE_TOL)
    return {"alpha": alpha, "factor": factor, "ratio": ratio, "covered": covered,
            "holds": holds}


def _solve(instance: Instance, ctx: SolveContext, relaxation: str, gpu_choice: str
           ) -> MethodOutput:
    params = ctx.params
    budget = Budget(ctx.time_limit)
    started = time.perf_counter()
    info: dict[str, Any]
    if relaxation == "rl":
        unit = parse_time_unit(instance, params)
        workers = _rl_params(params)
        check_relaxation_size(instance)  # before the ECT schedule: fail fast
        rl = solve_hare_relaxation(instance, ect_schedule(instance), time_unit=unit,
                                   time_limit=budget.left(), seed=ctx.seed, workers=workers)
        starts = rl.starts

        def estimate(j: int, r: int, k: int) -> float:
            return starts[j, r, k]
        value, proved, bound = rl.objective, rl.proved, rl.bound
        info = {"kind": "hare_sched_rl", "objective": value, "proved": proved,
                "bound": bound, "solver_status": rl.solver_status, "time_unit": unit}
    else:
        ratio = _lp_params(params)
        lp = interval_lp(instance, ratio, time_limit=budget.left())
        round_starts = lp.round_starts if lp.round_starts is not None \
            else _ect_round_starts(instance)

        def estimate(j: int, r: int, k: int) -> float:
            return float(round_starts[j][r])
        value, proved, bound = (lp.bound or 0.0), lp.bound is not None, lp.bound
        info = {"kind": "interval_lp", "objective": lp.bound, "proved": proved,
                "bound": bound, "intervals": lp.intervals, "variables": lp.variables,
                "interval_ratio": ratio, "bound_status": lp.bound_status,
                "order_status": lp.order_status,
                "order": "interval_lp" if lp.round_starts is not None else "ect"}
    info["runtime_s"] = time.perf_counter() - started
    step2 = time.perf_counter()
    schedule, objective = hare_list_schedule(instance, estimate, gpu_choice)
    published = relaxation == "rl" and gpu_choice == "earliest-free"
    return MethodOutput(schedule=schedule, bound=bound, extra={
        "relaxation": info, "gpu_choice": gpu_choice,
        "list_scheduling_s": time.perf_counter() - step2,
        "guarantee": guarantee(instance, objective, value, proved, published),
    })


def _ect_round_starts(instance: Instance) -> list[np.ndarray]:
    """Each round's start in the ECT schedule (its earliest task), per job: the order used
    when the interval LP could not be solved in time."""
    starts = [np.full(job.rounds, np.inf) for job in instance.jobs]
    for t in ect_schedule(instance).tasks:
        j = instance.job_index[t.job]
        starts[j][t.round] = min(starts[j][t.round], t.start)
    return starts


_RL_PARAMS: Mapping[str, str] = {
    "time_unit": "grid step of the relaxation in seconds (default 1 for integer data, "
                 "else 0.001)",
    "workers": "CP-SAT worker threads for the relaxation (default 1)",
}
_LP_PARAMS: Mapping[str, str] = {
    "interval_ratio": "growth factor of the LP's geometric intervals (default 1.2)",
}


def _rl_params(params: Mapping[str, str]) -> int:
    """CP-SAT workers of the exact relaxation; ``time_unit``'s form checked."""
    positive_float_param(params, "time_unit")
    return int_param(params, "workers", 1)


#: Largest accepted ``interval_ratio``: coarser intervals make the LP bound useless, and huge
#: ratios overflow the interval ends to infinity.
MAX_INTERVAL_RATIO = 100.0


def _lp_params(params: Mapping[str, str]) -> float:
    """The interval LP's ``interval_ratio`` (in (1, 100], default 1.2)."""
    ratio = positive_float_param(params, "interval_ratio") or 1.2
    if not 1 < ratio <= MAX_INTERVAL_RATIO:
        raise InputError(f"interval_ratio must be in (1, {MAX_INTERVAL_RATIO:g}], "
                         f"got {ratio!r}")
    return ratio


_VARIANTS = {
    "hare": ("rl", "earliest-free", "Hare's Algorithm 1 as published: exact relaxation "
             "(CP-SAT) + earliest-free GPU; α(2+α) guarantee"),
    "hare-ect": ("rl", "earliest-completion", "Hare's ordering (exact relaxation) with "
                 "earliest-completion GPU choice"),
    "hare-lp": ("interval-lp", "earliest-free", "Hare's list scheduling ordered by the "
                "scalable interval-indexed LP, earliest-free GPU"),
    "hare-lp-ect": ("interval-lp", "earliest-completion", "Hare's list scheduling ordered by "
                    "the interval-indexed LP, earliest-completion GPU"),
}


def _register(name: str, relaxation: str, gpu_choice: str, description: str) -> None:
    @register(name, description=description, modes=("relaxed",),
              params=_RL_PARAMS if relaxation == "rl" else _LP_PARAMS,
              parse=_rl_params if relaxation == "rl" else _lp_params)
    def method(instance: Instance, context: SolveContext) -> MethodOutput:
        return _solve(instance, context, relaxation, gpu_choice)


for _name, (_relaxation, _choice, _description) in _VARIANTS.items():
    _register(_name, _relaxation, _choice, _description)
