"""Hare's online policy HLAS, and the helpers every policy shares.

``hlas`` — Hare's heterogeneity-aware least-attained-service policy (TCC'24). Only its name
and goal are public, so this is our reconstruction from the journal's abstract and Tiresias'
LAS: service in reference-GPU seconds, discretised priority queues, starvation promotion, three
GPU mappings (A fastest idle GPU, B relative-speed-up matching, C earliest-available GPU).
Registered as a ``simulate`` method; the baselines are in :mod:`optsched.online.baselines`.

Every policy is deterministic: ties go to the earlier arrival, then the lower job index, and
to the lower GPU index.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from optsched.online.simulator import Decision, JobState, SizeDistribution, View
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


def quantile_thresholds(sizes: Sequence[float], quantiles: Sequence[float]
                        ) -> tuple[float, ...]:
    """Queue thresholds at the ``quantiles`` of the job ``sizes``: increasing, positive,
    duplicates dropped (empty when there is no size)."""
    if not len(sizes):
        return ()
    values = np.quantile(np.asarray(sizes, dtype=float), list(quantiles))
    return tuple(sorted({float(v) for v in values if v > 0}))


@dataclass
class HLAS:
    """Heterogeneity-aware least attained service: our reconstruction of Hare's online policy
    (TCC'24, whose text is not public), on Tiresias' discretised LAS
    (Gu et al., NSDI'19 §4).

    *Service* S_j = tasks started × the job's fastest profiled compute time: progress in
    reference-GPU seconds, so a job is not charged more for having run on a slow GPU.
    *Queues* (``form="queues"``, the default): a job's level is the number of thresholds at
    or below its service / w_j since it last entered queue 0; jobs are served by (level,
    arrival, index), FIFO inside a level. ``thresholds=None`` (default) derives them from
    the workload: the ``quantiles`` of the job sizes in reference-GPU seconds (the
    simulator's :class:`~optsched.online.simulator.SizeDistribution`), so with the default
    (0.5, 0.8) half of the jobs finish inside queue 0 and a fifth reach queue 2 whatever
    the unit of work. *Starvation*: a job in a lower queue that has waited longer than
    ``starvation`` × S_j since its last start re-enters queue 0 and stays there until it
    attains the first threshold again (0 turns this off). ``form="continuous"`` orders by
    (level, S_j / w_j, arrival, index) with no thresholds unless given: the continuous LAS.

    *GPU mapping*: A — each waiting task, in order, on its fastest idle GPU; B (default) —
    within the best level, each idle GPU (fastest first) to the job with the highest
    speed-up there (its slowest eligible GPU's time / this GPU's; ties in queue order), then
    A for the rest; C — the idle GPU free the longest (Algorithm 1's earliest-available
    rule), speed-oblivious.

    Guarantees: work-conserving (a GPU stays idle only if no waiting task can use it);
    non-clairvoyant about each job (it sees no job's rounds; only the size distribution,
    sorted, when thresholds are derived); deterministic.
    """

    thresholds: tuple[float, ...] | None = None
    starvation: float = 0.5
    mapping: str = "B"
    form: str = "queues"
    quantiles: tuple[float, ...] = (0.5, 0.8)
    name: str = "hlas"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed"}))
    levels: tuple[float, ...] = field(default=(), init=False)
    _entered: dict[int, float] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.levels = self.thresholds or ()

    def calibrate(self, sizes: SizeDistribution) -> None:
        """Set the thresholds for a run (derived unless given) and forget promotions."""
        self._entered = {}
        if self.thresholds is not None:
            self.levels = self.thresholds
        elif self.form == "continuous":
            self.levels = ()
        else:
            self.levels = quantile_thresholds(sizes.reference, self.quantiles)

    def _key(self, job: JobState, now: float) -> tuple[float, float, float, int]:
        service = job.tasks_started * float(np.min(job.compute))
        own = (service - self._entered.get(job.index, 0.0)) / job.weight
        level = sum(own >= q for q in self.levels)
        if level and self.starvation > 0 and now - job.last_start > self.starvation * service:
            self._entered[job.index] = service  # back to queue 0 until Q1 more service
            level = 0
        if self.form == "continuous":
            return level, service / job.weight, job.arrival, job.index
        return level, job.arrival, job.arrival, job.index

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


def thresholds_param(params: Mapping[str, str]) -> tuple[float, ...] | None:
    """``thresholds``: ``auto`` or absent (None: derive from the workload), else increasing
    positive numbers."""
    if params.get("thresholds", "auto") == "auto":
        return None
    return float_list_param(params, "thresholds", ())


HLAS_PARAMS = {
    "form": "queues (discretised LAS, FIFO inside a queue; default) or continuous (one "
            "queue ordered by service / weight, unless thresholds are given)",
    "thresholds": "service thresholds between queues, in reference-GPU seconds, "
                  "comma-separated, or auto (default: the 0.5 and 0.8 quantiles of the "
                  "workload's job sizes; none for form=continuous)",
    "starvation": "a job in a lower queue waiting longer than this × its service re-enters "
                  "queue 0 (default 0.5; 0: off)",
    "mapping": "B (speed-up matching, default), A (fastest idle GPU) or C (earliest "
               "available)",
}


@register("hlas", kind="simulate", modes=("relaxed",), params=HLAS_PARAMS,
          description="Hare's heterogeneity-aware least attained service (reconstruction: "
                      "discretised LAS, speed-up matching)")
def _hlas(params: Mapping[str, str]) -> HLAS:
    starvation = (nonnegative_float_param(params, "starvation") if "starvation" in params
                  else HLAS.starvation)
    return HLAS(thresholds_param(params), starvation,
                choice_param(params, "mapping", ("B", "A", "C")),
                choice_param(params, "form", ("queues", "continuous")))
