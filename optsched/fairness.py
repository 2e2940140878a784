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
cluster model, whose launch phases, sharing and placement factors the shortest round ignores
(space sharing alone keeps them: a job next to another trains at most as fast as alone).
Plain Python, O(n log n): the checker computes these for every schedule without NumPy.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from optsched.cluster_model import ClusterSpec
from optsched.critical_path import round_lower_bounds
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
    """Per-job fairness of a schedule (module docstring), in job order; ``alone``,
    ``slowdown`` and ``rho`` are None for instances with the cluster model."""

    jct: tuple[float, ...]
    contention: tuple[float, ...]
    alone: tuple[float, ...] | None
    slowdown: tuple[float, ...] | None
    rho: tuple[float, ...] | None

    def summary(self) -> dict[str, float]:
        """The summary metrics (:data:`FAIRNESS_KEYS`, those defined for this instance)."""
        p50, p95, p99 = percentiles(self.jct, (50, 95, 99))
        out = {"p50_jct": p50, "p95_jct": p95, "p99_jct": p99}
        if self.rho is not None and self.slowdown is not None:
            rho, n = self.rho, len(self.rho)
            out.update(
                max_rho=max(rho),
                mean_rho=math.fsum(rho) / n,
                # Jain's index is at most 1; its rounding can pass it by an ulp
                jain_rho=min(1.0, math.fsum(rho) ** 2 / (n * math.fsum(r * r for r in rho))),
                unfair_fraction=sum(r > 1 + UNFAIR_TOLERANCE for r in rho) / n,
                mean_slowdown=math.fsum(self.slowdown) / n,
                max_slowdown=max(self.slowdown),
            )
        return {key: float(out[key]) for key in FAIRNESS_KEYS if key in out}


def percentiles(values: Sequence[float], qs: tuple[float, ...]) -> list[float]:
    """The ``qs`` percentiles of ``values`` by linear interpolation between the closest
    ranks, the same floats as ``np.percentile``'s default."""
    ordered = sorted(values)
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


def alone_times(instance: Instance) -> list[float]:
    """T_alone per job: rounds × the shortest round alone on the cluster."""
    return [
        job.rounds * bound
        for job, bound in zip(instance.jobs, round_lower_bounds(instance), strict=True)
    ]


def mean_contention(arrival: Sequence[float], completion: Sequence[float]) -> list[float]:
    """N̄_j: the time-average number of jobs in the system over each [a_j, C_j), computed
    exactly from the piecewise-constant count n(t) (its integral is piecewise linear
    between events, so interpolating it at a_j and C_j is exact). O(n log n)."""
    # events by time, arrivals before completions at one time: n(t) just after each event
    events = sorted(
        [(float(a), 1) for a in arrival] + [(float(c), -1) for c in completion],
        key=lambda e: e[0],
    )
    times = [t for t, _ in events]
    count, integral = [], [0.0]  # n after each event; ∫ n up to each event
    n = 0
    for i, (t, step) in enumerate(events):
        n += step
        count.append(n)
        if i + 1 < len(events):
            integral.append(integral[-1] + n * (events[i + 1][0] - t))

    def last_event(t: float) -> int:  # the last event at or before t
        return bisect.bisect_right(times, t) - 1

    def area_until(t: float) -> float:  # ∫_0^t n(s) ds
        last = last_event(t)
        return integral[last] + count[last] * (t - times[last])

    out = []
    for a, c in zip(arrival, completion, strict=True):
        lifetime = c - a
        # a zero lifetime (only in a schedule the checker refuses) sees the jobs at its arrival
        out.append(
            (area_until(c) - area_until(a)) / lifetime
            if lifetime > 0
            else float(count[last_event(a)])
        )
    return out


def fairness(instance: Instance, completion: Mapping[str, float] | Iterable[float]) -> Fairness:
    """The per-job fairness of a schedule whose jobs complete at ``completion`` (by job id,
    or a sequence in job order), every job completed after its arrival."""
    if isinstance(completion, Mapping):
        done = [float(completion[job.id]) for job in instance.jobs]
    else:
        done = [float(c) for c in completion]
    arrival = [float(job.arrival) for job in instance.jobs]
    jct = tuple(c - a for c, a in zip(done, arrival, strict=True))
    contention = tuple(mean_contention(arrival, done))
    if not _alone_is_exact(instance):
        return Fairness(jct, contention, None, None, None)
    alone = tuple(alone_times(instance))
    stretch = share_stretch(instance, contention)
    return Fairness(
        jct,
        contention,
        alone,
        tuple(x / t for x, t in zip(jct, alone, strict=True)),
        tuple(x / (t * f) for x, t, f in zip(jct, alone, stretch, strict=True)),
    )


def _alone_is_exact(instance: Instance) -> bool:
    """Whether the shortest round is a job's round time alone: without the cluster model, or
    with space sharing as its only field (a co-location rate is at most 1)."""
    if not instance.needs_cluster_model:
        return True
    return (
        instance.cluster == ClusterSpec(space_sharing=True)
        and all(gpu.memory is None for gpu in instance.gpus)
        and all(job.cluster is None for job in instance.jobs)
    )


def share_stretch(instance: Instance, contention: Sequence[float]) -> list[float]:
    """Per job, how much slower it runs on a 1/N̄_j share of the cluster than alone on it:
    its best single-type rate over its best rate on the share (module docstring), ≥ 1."""
    types = sorted({gpu.type for gpu in instance.gpus})
    counts = [float(sum(gpu.type == t for gpu in instance.gpus)) for t in types]
    # each GPU class (GPUs with equal times) is of one type: per job, the best round time
    # of each type over its classes
    firsts = [members[0] for members in instance.class_members]
    of_type = [[g for g in firsts if instance.gpus[g].type == t] for t in types]
    out = []
    for j, job in enumerate(instance.jobs):
        pace = [
            min(instance.compute_of(j, g) + instance.sync_of(j, g) for g in gs) for gs in of_type
        ]
        k = job.tasks_per_round
        fits = [math.isfinite(p) and n >= k for p, n in zip(pace, counts, strict=True)]
        if not any(fits):  # relaxed rounds spread over types: the share of all GPUs
            fits = [math.isfinite(p) for p in pace]
        rate = [1.0 / p if fit else 0.0 for p, fit in zip(pace, fits, strict=True)]
        left, got = 1.0, 0.0
        for t in sorted(range(len(types)), key=lambda t: -rate[t]):  # fastest type first
            cap = counts[t] / (contention[j] * k)
            take = min(left, cap) if rate[t] > 0 else 0.0
            got, left = got + take * rate[t], left - take
        out.append(max(1.0, max(rate) / got))
    return out


def fairness_metrics(
    instance: Instance, completion: Mapping[str, float] | Iterable[float]
) -> dict[str, Any]:
    """The summary of :func:`fairness` (:meth:`Fairness.summary`)."""
    return fairness(instance, completion).summary()
