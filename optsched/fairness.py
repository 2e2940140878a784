"""Fairness and tail metrics of a schedule, from its completion times (docs/model.md,
*Metrics*): every checked schedule reports them, online and offline.

For job j with arrival a_j, completion C_j and JCT_j = C_j − a_j:

- ``T_alone_j``: its completion time alone on the cluster, rounds × the shortest round
  (:func:`~optsched.critical_path.round_lower_bound`; exact: alone, each round takes its
  shortest possible time), so JCT_j ≥ T_alone_j always;
- ``slowdown_j`` = JCT_j / T_alone_j (≥ 1);
- ``contention_j`` = N̄_j, the time-average number of jobs in the system (arrived, not
  completed, j included) over j's lifetime [a_j, C_j);
- ``ideal_j``: its completion time alone on a 1/N̄_j share of the cluster — n_t / N̄_j GPUs of
  each type t, time-shared: with its K_j tasks per round on one type at a time, the job's
  best rate on that share is the fractional knapsack max Σ_t x_t / pace_jt over Σ_t x_t ≤ 1,
  0 ≤ x_t ≤ n_t / (N̄_j K_j) (pace_jt: its round's compute + sync on type t), and
  ideal_j = T_alone_j × (its best single-type rate / that rate): T_alone_j when the share
  holds K_j GPUs of its best type, longer when it does not. On a homogeneous cluster of G
  GPUs this is Themis' T_alone × max(1, N̄·K / G);
- ``rho_j`` = JCT_j / ideal_j: finish-time fairness (Themis, NSDI'20, §3: the time in the
  shared cluster over the time on a dedicated 1/N̄ share of it). ρ_j ≤ 1 means the job did at
  least as well as on its fair share.

Summaries (the keys added to a checked schedule's metrics, :func:`fairness_metrics`):
``max_rho``, ``mean_rho``, ``jain_rho`` (Jain's index of the ρ_j, (Σρ)² / (n Σρ²), 1 when
every job is slowed down alike), ``unfair_fraction`` (the fraction of jobs with ρ_j > 1,
beyond :data:`UNFAIR_TOLERANCE`),
``mean_slowdown``, ``max_slowdown``, and ``p50_jct``, ``p95_jct``, ``p99_jct`` (NumPy's
linear-interpolation percentiles). ρ and slowdown are left out for instances with Liquid's
cluster model, whose launch phases, sharing and placement factors the shortest round ignores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.critical_path import round_lower_bound
from optsched.instance import Instance

#: How far above 1 a ρ must be to count as unfair: a job alone on its fastest GPUs has ρ = 1
#: up to the rounding of its times (1 + 3e-13 seen on a Gavel trace).
UNFAIR_TOLERANCE = 1e-9

#: The fairness and tail keys of a checked schedule's metrics, in display order.
FAIRNESS_KEYS = (
    "max_rho",
    "mean_rho",
    "jain_rho",
    "unfair_fraction",
    "mean_slowdown",
    "max_slowdown",
    "p50_jct",
    "p95_jct",
    "p99_jct",
)


@dataclass(frozen=True)
class FairnessSummary:
    """The fairness and tail metrics of a checked schedule, typed (module docstring); a
    field is None where the instance does not define it (ρ and slowdown under the cluster
    model) or the result has no checked schedule."""

    max_rho: float | None = None
    mean_rho: float | None = None
    jain_rho: float | None = None
    unfair_fraction: float | None = None
    mean_slowdown: float | None = None
    max_slowdown: float | None = None
    p50_jct: float | None = None
    p95_jct: float | None = None
    p99_jct: float | None = None

    @classmethod
    def of(cls, metrics: Mapping[str, Any] | None) -> FairnessSummary:
        """The summary held in a result's ``metrics`` (:data:`FAIRNESS_KEYS`)."""
        metrics = metrics or {}
        return cls(**{key: metrics[key] for key in FAIRNESS_KEYS if key in metrics})


@dataclass(frozen=True)
class Fairness:
    """Per-job fairness of a schedule (module docstring), arrays in job order; ``alone``,
    ``slowdown`` and ``rho`` are None for instances with the cluster model."""

    jct: np.ndarray
    contention: np.ndarray
    alone: np.ndarray | None
    slowdown: np.ndarray | None
    rho: np.ndarray | None

    def summary(self) -> dict[str, float]:
        """The summary metrics (:data:`FAIRNESS_KEYS`, those defined for this instance)."""
        p50, p95, p99 = percentiles(self.jct, (50, 95, 99))
        out = {"p50_jct": float(p50), "p95_jct": float(p95), "p99_jct": float(p99)}
        if self.rho is not None and self.slowdown is not None:
            rho = self.rho
            out.update(
                max_rho=float(rho.max()),
                mean_rho=float(rho.mean()),
                # Jain's index is at most 1; its rounding can pass it by an ulp
                jain_rho=min(1.0, float(rho.sum() ** 2 / (len(rho) * (rho**2).sum()))),
                unfair_fraction=float(np.mean(rho > 1 + UNFAIR_TOLERANCE)),
                mean_slowdown=float(self.slowdown.mean()),
                max_slowdown=float(self.slowdown.max()),
            )
        return {key: out[key] for key in FAIRNESS_KEYS if key in out}


def percentiles(values: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """The ``qs`` percentiles of ``values`` by linear interpolation between the closest
    ranks, the same floats as ``np.percentile``'s default (whose first call imports
    ``numpy.ma``, a fifth of ``optsched check``'s start-up)."""
    ordered = np.sort(values)
    last = len(ordered) - 1
    out = []
    for q in qs:
        at = last * (q / 100)
        below = min(math.floor(at), last)
        lo, hi = float(ordered[below]), float(ordered[min(below + 1, last)])
        t = at - below
        # interpolate from the nearer end, as NumPy does, so the floats agree
        out.append(hi - (hi - lo) * (1 - t) if t >= 0.5 else lo + (hi - lo) * t)
    return out


def alone_times(instance: Instance) -> np.ndarray:
    """T_alone per job: rounds × the shortest round alone on the cluster."""
    return np.array(
        [job.rounds * round_lower_bound(instance, j) for j, job in enumerate(instance.jobs)]
    )


def mean_contention(arrival: np.ndarray, completion: np.ndarray) -> np.ndarray:
    """N̄_j: the time-average number of jobs in the system over each [a_j, C_j), computed
    exactly from the piecewise-constant count n(t) (its integral is piecewise linear
    between events, so interpolating it at a_j and C_j is exact). O(n log n)."""
    times = np.concatenate([arrival, completion])
    steps = np.concatenate([np.ones(len(arrival)), -np.ones(len(completion))])
    order = np.argsort(times, kind="stable")
    times, count = times[order], np.cumsum(steps[order])  # n(t) just after each event
    integral = np.concatenate([[0.0], np.cumsum(count[:-1] * np.diff(times))])

    def area_until(t: np.ndarray) -> np.ndarray:  # ∫_0^t n(s) ds, from the last event ≤ t
        last = np.searchsorted(times, t, side="right") - 1
        return np.asarray(integral[last] + count[last] * (t - times[last]))

    lifetime = completion - arrival
    area = area_until(completion) - area_until(arrival)
    at_arrival = count[np.searchsorted(times, arrival, side="right") - 1]
    # a zero lifetime (only in a schedule the checker refuses) sees the jobs at its arrival
    return np.where(lifetime > 0, area / np.where(lifetime > 0, lifetime, 1.0), at_arrival)


def fairness(instance: Instance, completion: Mapping[str, float] | np.ndarray) -> Fairness:
    """The per-job fairness of a schedule whose jobs complete at ``completion`` (by job id,
    or an array in job order), every job completed after its arrival."""
    if isinstance(completion, Mapping):
        done = np.array([completion[job.id] for job in instance.jobs], dtype=float)
    else:
        done = np.asarray(completion, dtype=float)
    arrival = np.array([job.arrival for job in instance.jobs], dtype=float)
    jct = done - arrival
    contention = mean_contention(arrival, done)
    if instance.needs_cluster_model:
        return Fairness(jct, contention, None, None, None)
    alone = alone_times(instance)
    ideal = alone * share_stretch(instance, contention)
    return Fairness(jct, contention, alone, jct / alone, jct / ideal)


def share_stretch(instance: Instance, contention: np.ndarray) -> np.ndarray:
    """Per job, how much slower it runs on a 1/N̄_j share of the cluster than alone on it:
    its best single-type rate over its best rate on the share (module docstring), ≥ 1."""
    types = sorted({gpu.type for gpu in instance.gpus})
    of_type = np.array([types.index(gpu.type) for gpu in instance.gpus])
    counts = np.bincount(of_type, minlength=len(types)).astype(float)
    # each GPU class (GPUs with equal times) is of one type: its type, and per job the
    # round time on each class, then the best class of each type
    class_type = np.zeros(instance.class_compute.shape[1], dtype=int)
    class_type[instance.gpu_class] = of_type
    class_pace = instance.class_compute + instance.class_sync
    type_pace = np.stack(
        [class_pace[:, class_type == t].min(axis=1) for t in range(len(types))], axis=1
    )
    out = np.ones(instance.n_jobs)
    for j, job in enumerate(instance.jobs):
        pace = type_pace[j]
        fits = np.isfinite(pace) & (counts >= job.tasks_per_round)
        if not fits.any():  # relaxed rounds spread over types: the share of all GPUs
            fits = np.isfinite(pace)
        rate = np.where(fits, 1.0 / pace, 0.0)
        cap = counts / (contention[j] * job.tasks_per_round)
        left, got = 1.0, 0.0
        for t in np.argsort(-rate, kind="stable"):  # fastest type first
            take = min(left, cap[t]) if rate[t] > 0 else 0.0
            got, left = got + take * rate[t], left - take
        out[j] = max(1.0, rate.max() / got)
    return out


def fairness_metrics(
    instance: Instance, completion: Mapping[str, float] | np.ndarray
) -> dict[str, Any]:
    """The summary of :func:`fairness` (:meth:`Fairness.summary`)."""
    return fairness(instance, completion).summary()
