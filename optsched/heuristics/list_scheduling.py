"""Earliest-completion-time (ECT) list scheduling, the simple baseline of both modes.

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

import numpy as np

from optsched.instance import Instance
from optsched.schedule import Schedule, Task
from optsched.solve import MethodOutput, SolveContext, register


def _gang_round(pace: np.ndarray, free: np.ndarray, ready: float, k_tasks: int
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
            start, pace, chosen = _gang_round(compute[j] + sync[j], free, ready,
                                              job.tasks_per_round)
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


@register("ect", description="earliest-completion-time list scheduling (baseline, both modes)")
def _ect(instance: Instance, context: SolveContext) -> MethodOutput:
    return MethodOutput(schedule=ect_schedule(instance))
