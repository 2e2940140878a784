"""Earliest-completion-time (ECT) list scheduling, the simple baseline of both modes, and the
schedule every method starts from and returns when it runs out of time (:func:`incumbent`).

Rounds are taken in the order in which they become ready (job arrival for round 0, all
results of the previous round ready otherwise); ties go to the larger Smith ratio
w_j / (R_j K_j min_g compute[j, g]), then to the job listed first. Then:

- relaxed mode: each task of the round, in turn, goes on the eligible GPU where its result is
  ready earliest (``max(round ready, GPU free) + compute + sync``; ties to the lowest GPU
  index); the GPU is busy for ``compute`` only.
- gang mode: the round starts at the earliest moment ``s`` that minimises ``s + pace``, where
  ``pace`` is the K-th smallest ``compute + sync`` among the eligible GPUs free at ``s``; those
  K GPUs are held until ``s + pace``.

No approximation guarantee is claimed; it is the reference every other method must beat.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.instance import Instance
from optsched.schedule import Schedule, Task


def _gang_round(
    pace: np.ndarray, free: np.ndarray, ready: float, k_tasks: int
) -> tuple[float, float, list[int]]:
    """(start, pace, GPUs) of the earliest-finishing gang start for one round."""
    eligible = np.flatnonzero(np.isfinite(pace))
    order = eligible[np.lexsort((eligible, free[eligible]))]
    best: tuple[float, float, list[int]] | None = None
    kept: list[tuple[float, int]] = []  # max-heap (negated) of the K fastest so far
    for i, g in enumerate(order):
        item = (-pace[g], -int(g))
        if len(kept) < k_tasks:
            heapq.heappush(kept, item)
        elif item > kept[0]:
            heapq.heapreplace(kept, item)
        # all GPUs up to position i are free at `start`; wait for ties in free time
        if len(kept) < k_tasks or (i + 1 < len(order) and free[order[i + 1]] == free[g]):
            continue
        start = max(ready, float(free[g]))
        slowest = -kept[0][0]
        if best is None or start + slowest < best[0] + best[1]:
            best = (start, slowest, sorted(-h for _, h in kept))
    assert best is not None  # the instance guarantees K eligible GPUs in gang mode
    return best


def ect_schedule(instance: Instance) -> Schedule:
    """The ECT list schedule of ``instance`` in its mode (see the module docstring)."""
    compute, sync = instance.compute, instance.sync
    free = np.zeros(instance.n_gpus)
    heap = []
    for j, job in enumerate(instance.jobs):
        smith = job.weight / (job.n_tasks * float(compute[j].min()))
        heap.append((float(job.arrival), -smith, j, 0))
    heapq.heapify(heap)
    tasks = []
    gang = instance.mode == "gang"
    while heap:
        ready, smith_key, j, r = heapq.heappop(heap)
        job = instance.jobs[j]
        if gang:
            start, pace, chosen = _gang_round(
                compute[j] + sync[j], free, ready, job.tasks_per_round
            )
            for k, g in enumerate(chosen):
                tasks.append(Task(job.id, r, k, instance.gpus[g].id, start))
                free[g] = start + pace
            done = start + pace
        else:
            done = ready
            for k in range(job.tasks_per_round):
                starts = np.maximum(free, ready)
                g = int(np.argmin(starts + compute[j] + sync[j]))
                tasks.append(Task(job.id, r, k, instance.gpus[g].id, float(starts[g])))
                free[g] = starts[g] + compute[j, g]
                done = max(done, float(free[g] + sync[j, g]))
        if r + 1 < job.rounds:
            heapq.heappush(heap, (done, smith_key, j, r + 1))
    return Schedule(instance.name, tasks, instance.mode)


def completions(instance: Instance, schedule: Schedule) -> np.ndarray:
    """Each job's completion C_j in a *feasible* ``schedule`` of ``instance`` (every task
    once, on an eligible GPU; a KeyError or IndexError otherwise), computed as the checker
    does: the latest ``start + (compute + sync)`` of the job's last round, the same floats
    in a fraction of the checker's time, since it checks nothing. Methods compare and bound
    with it; the schedule they return is checked anyway."""
    jobs, gpus = instance.job_index, instance.gpu_index
    tasks = schedule.tasks
    j = np.fromiter((jobs[t.job] for t in tasks), dtype=np.int64, count=len(tasks))
    g = np.fromiter((gpus[t.gpu] for t in tasks), dtype=np.int64, count=len(tasks))
    r = np.fromiter((t.round for t in tasks), dtype=np.int64, count=len(tasks))
    start = np.fromiter((t.start for t in tasks), dtype=float, count=len(tasks))
    last = r == np.array([job.rounds - 1 for job in instance.jobs], dtype=np.int64)[j]
    end = start[last] + (instance.compute[j[last], g[last]] + instance.sync[j[last], g[last]])
    completion = np.full(instance.n_jobs, -np.inf)
    np.maximum.at(completion, j[last], end)
    return completion


def evaluate(instance: Instance, schedule: Schedule) -> tuple[float, float]:
    """(Σ w_j C_j, makespan) of a *feasible* ``schedule`` of ``instance``, the checker's
    values (:func:`completions`, summed in job order as the checker sums them)."""
    done = completions(instance, schedule).tolist()
    objective = sum(job.weight * c for job, c in zip(instance.jobs, done, strict=True))
    return float(objective), float(max(done))


@dataclass(frozen=True)
class Incumbent:
    """A feasible schedule to start from and fall back on, with its :func:`evaluate` values
    (the checker's own objective and makespan, not re-checked) and where it came from
    (``ect`` or ``hint``)."""

    schedule: Schedule
    objective: float
    makespan: float
    origin: str = "ect"


def incumbent(instance: Instance, hint: Schedule | None = None, budget: Any = None) -> Incumbent:
    """The ECT schedule, or ``hint`` when it is feasible (checked) and better; without a
    hint, nothing is checked, so this costs one ECT schedule. ``budget`` (a
    :class:`~optsched.budget.Budget`): a hint is not even looked at once it has
    expired (it costs a check, about two ECT schedules)."""
    from optsched.check import check

    ect = ect_schedule(instance)
    best = Incumbent(ect, *evaluate(instance, ect))
    if hint is None or (budget is not None and budget.expired()):
        return best
    own = Schedule(instance.name, hint.tasks, instance.mode)
    report = check(instance, own)
    if (
        report.feasible
        and report.objective is not None
        and report.metrics is not None
        and report.objective < best.objective
    ):
        return Incumbent(own, report.objective, report.metrics["makespan"], "hint")
    return best
