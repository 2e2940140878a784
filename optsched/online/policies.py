"""Hare's online policy HLAS, and the helpers every policy shares.

``hlas`` — Hare's heterogeneity-aware least-attained-service policy (TCC'24). Only its name
and goal are public, so this is the reconstruction of research/seeds.md §1.7: service in
reference-GPU seconds, discretised priority queues, starvation promotion, three GPU mappings
(A fastest idle GPU, B relative-speed-up matching, C earliest-available GPU). Registered as a
``simulate`` method; the baselines are in :mod:`optsched.online.baselines`.

Every policy is deterministic: ties go to the earlier arrival, then the lower job index, and
to the lower GPU index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from optsched.online.simulator import Decision, JobState, View
from optsched.params import choice_param, float_list_param, nonnegative_float_param
from optsched.solve import register


def _fastest_idle(job: JobState, idle: list[int], taken: set[int]) -> int | None:
    """The idle GPU where the job's task computes fastest (ties: lowest index)."""
    best, best_time = None, np.inf
    for g in idle:
        if g not in taken and job.compute[g] < best_time:
            best, best_time = g, job.compute[g]
    return best


def fill_fastest(order: Iterable[JobState], view: View, taken: set[int] | None = None,
                  left: Mapping[int, int] | None = None) -> list[Decision]:
    """In ``order``, each waiting task (``left[job]`` of them, default all) on the fastest
    idle GPU not ``taken`` (HLAS's mapping A; also used by the baselines)."""
    taken = set() if taken is None else taken
    out: list[Decision] = []
    for job in order:
        for _ in range(job.waiting if left is None else left.get(job.index, job.waiting)):
            g = _fastest_idle(job, view.idle, taken)
            if g is None:
                break
            taken.add(g)
            out.append((job.index, g))
        if len(taken) == len(view.idle):
            break
    return out


@dataclass
class HLAS:
    """Heterogeneity-aware least attained service (reconstruction, seeds.md §1.7).

    Service S_j = Σ over started tasks of the job's fastest compute time (reference-GPU
    seconds: progress, not the GPU-seconds a slow GPU burnt); queue level = number of
    ``thresholds`` below S_j; a job waiting longer than ``starvation`` × S_j since its last
    start is promoted to level 0 (0 turns promotion off). Order: (level, S_j / w_j, arrival,
    index). ``mapping``: A — each waiting task, in order, on the fastest idle GPU; B — within
    the best level, each idle GPU (fastest first) to the job with the highest speed-up there
    (slowest eligible / this GPU), then A for the rest; C — the idle GPU free the longest
    (Algorithm 1's earliest-available rule), ties to the lowest index.
    """

    thresholds: tuple[float, ...] = ()
    starvation: float = 0.0
    mapping: str = "A"
    name: str = "hlas"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed"}))

    def _key(self, job: JobState, now: float) -> tuple[float, float, float, int]:
        service = job.tasks_started * float(np.min(job.compute))
        level = sum(service >= q for q in self.thresholds)
        if self.starvation > 0 and now - job.last_start > self.starvation * service > 0:
            level = 0
        return level, service / job.weight, job.arrival, job.index

    def decide(self, view: View) -> list[Decision]:
        keyed = sorted((self._key(job, view.time), job) for job in view.waiting)
        order = [job for _, job in keyed]
        if self.mapping == "A":
            return fill_fastest(order, view)
        if self.mapping == "C":
            return fill_earliest_available(order, view)
        best = keyed[0][0][0]
        return _speedup_matching([job for key, job in keyed if key[0] == best], order, view)


def fill_earliest_available(order: list[JobState], view: View) -> list[Decision]:
    """Each waiting task, in ``order``, on the eligible idle GPU free the longest (ties: lowest
    index) — speed-oblivious (HLAS's mapping C, Algorithm 1's earliest-available rule)."""
    gpus = sorted(view.idle, key=lambda g: (view.free_since[g], g))
    out: list[Decision] = []
    for job in order:
        left = job.waiting
        for g in list(gpus):
            if left == 0:
                break
            if np.isfinite(job.compute[g]):
                out.append((job.index, g))
                gpus.remove(g)
                left -= 1
    return out


def _speedup_matching(top: list[JobState], order: list[JobState], view: View
                      ) -> list[Decision]:
    """Mapping B: idle GPUs (fastest first) to the ``top`` job that gains most there, then
    mapping A for the other jobs and the tasks left."""
    left = {job.index: job.waiting for job in top}
    taken: set[int] = set()
    out: list[Decision] = []
    for g in sorted(view.idle, key=lambda g: (min(job.compute[g] for job in top), g)):
        candidates = [job for job in top if left[job.index] and np.isfinite(job.compute[g])]
        if candidates:
            job = max(candidates, key=lambda job: _speedup(job, g))
            left[job.index] -= 1
            taken.add(g)
            out.append((job.index, g))
    return out + fill_fastest(order, view, taken, left)


def _speedup(job: JobState, g: int) -> float:
    """How much faster ``g`` runs the job's task than its slowest eligible GPU."""
    return float(np.max(job.compute[np.isfinite(job.compute)]) / job.compute[g])


HLAS_PARAMS = {
    "thresholds": "service thresholds between priority queues, in reference-GPU seconds, "
                  "comma-separated (default: none, a single queue)",
    "starvation": "promote a job waiting longer than this × its service (default 0: off)",
    "mapping": "A (fastest idle GPU, default), B (speed-up matching) or C (earliest available)",
}


@register("hlas", kind="simulate", modes=("relaxed",), params=HLAS_PARAMS,
          description="Hare's heterogeneity-aware least attained service (reconstruction)")
def _hlas(params: Mapping[str, str]) -> HLAS:
    return HLAS(float_list_param(params, "thresholds", ()),
                nonnegative_float_param(params, "starvation"),
                choice_param(params, "mapping", ("A", "B", "C")))
