"""The critical-path bound (models/critical-path-bound.md): a closed-form, certified lower
bound on every job's completion time, and so on Σ w_j C_j, whatever else runs on the cluster.
Every ``solve`` result reports it as a floor; the exact models build their horizons on it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from optsched.instance import Instance

if TYPE_CHECKING:
    import numpy as np


def round_lower_bound(instance: Instance, j: int) -> float:
    """A lower bound on the time from the start of any round of job ``j`` to its results.

    Relaxed mode: the K tasks of a round alone on the whole cluster. The k-th task placed on
    GPU g is ready no earlier than ``sync[j,g] + k·compute[j,g]`` (tasks on one GPU run one
    after the other), so choosing the K smallest of these values over all (g, k) is an
    optimal single-round schedule: its K-th smallest value is the bound.

    Gang mode: K distinct GPUs held for the slowest ``compute + sync`` among them, so the
    K-th smallest ``compute[j,g] + sync[j,g]``.
    """
    k_tasks = instance.jobs[j].tasks_per_round
    # the same values per GPU class (GPUs with equal times), each class's at most K times:
    # the K-th smallest of the multiset needs no more copies of any one value
    classes = [
        (instance.compute_of(j, m[0]), instance.sync_of(j, m[0]), min(len(m), k_tasks))
        for m in instance.class_members
    ]
    eligible = [(c, s, n) for c, s, n in classes if math.isfinite(c)]
    values: Iterable[tuple[float, int]]  # (value, copies), ascending
    if instance.mode == "gang":
        values = sorted((c + s, n) for c, s, n in eligible)
    else:  # each class's values s + k·c ascend in k = 1..K: merge them
        values = heapq.merge(
            *[[(s + c * k, n) for k in range(1, k_tasks + 1)] for c, s, n in eligible]
        )
    seen = 0
    for value, copies in values:
        seen += copies
        if seen >= k_tasks:
            return value
    raise AssertionError("every job has K eligible GPU slots")  # Instance ensures it


def round_lower_bounds(instance: Instance) -> list[float]:
    """:func:`round_lower_bound` of every job, in job order, computed once per distinct
    (tasks per round, per-class times) profile: jobs of one workload share theirs."""
    seen: dict[tuple[int, bytes, bytes], float] = {}
    out = []
    for j, job in enumerate(instance.jobs):
        compute, sync = instance.class_times(j)
        key = (job.tasks_per_round, compute.tobytes(), sync.tobytes())
        value = seen.get(key)
        if value is None:
            value = seen[key] = round_lower_bound(instance, j)
        out.append(value)
    return out


def class_sizes(instance: Instance) -> np.ndarray:
    """How many GPUs each of the instance's GPU classes holds (``Instance.gpu_class``)."""
    import numpy as np

    return np.bincount(instance.gpu_class, minlength=instance.class_compute.shape[1])


def critical_path(instance: Instance) -> np.ndarray:
    """Per-job lower bounds on C_j: ``arrival + rounds × round_lower_bound`` (in job order).

    The classical per-job critical path, sharpened: rounds are sequential (round r+1 starts
    after all results of round r are ready) and every round takes at least
    :func:`round_lower_bound`, whatever else runs on the cluster.
    """
    import numpy as np

    return np.array(
        [
            job.arrival + job.rounds * bound
            for job, bound in zip(instance.jobs, round_lower_bounds(instance), strict=True)
        ]
    )


def critical_path_bound(instance: Instance, path: np.ndarray | None = None) -> float:
    """Σ_j w_j · (per-job critical path): a certified lower bound on the objective
    (``path``: :func:`critical_path` of the instance, when the caller has it already)."""
    import numpy as np

    weights = np.array([job.weight for job in instance.jobs])
    return float(weights @ (critical_path(instance) if path is None else path))


def from_origin(value: float, origin: float, weights: Iterable[float], margin: float) -> float:
    """A certified lower bound on Σ w_j C_j from ``value``, a lower bound on Σ w_j (C_j −
    ``origin``) computed in floats (a relaxation built on times from the first arrival): less
    a relative ``margin`` for its sums, plus Σ w_j × origin (the weights summed exactly), less
    two units in the last place for that product and its addition. Taking the margin before
    adding the origin back keeps it from growing with the origin (at 1.7e9 s, 1e-9 of the
    whole would give away 1.7 s per unit of weight)."""
    bound = value - abs(value) * margin + origin * math.fsum(weights)
    return bound - 2 * math.ulp(bound)
