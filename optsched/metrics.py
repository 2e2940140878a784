"""Schedule metrics of the model (docs/model.md), computed from completion times and GPU intervals.

Used by the checker only, so that every reported figure comes from the independent check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def union_length(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of half-open intervals ``[a, b)``."""
    total = 0.0
    cur_a = cur_b = None
    for a, b in sorted(intervals):
        if cur_b is None or a > cur_b:
            if cur_b is not None and cur_a is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None and cur_a is not None:
        total += cur_b - cur_a
    return total


def schedule_metrics(
    completion: Mapping[str, float],
    arrival: Mapping[str, float],
    weight: Mapping[str, float],
    gpu_intervals: Mapping[str, list[tuple[float, float]]],
) -> dict[str, Any]:
    """``total_weighted_jct`` Σ w_j (C_j − a_j), ``mean_jct``, ``makespan`` max C_j, and
    ``utilisation[g]`` = length of the union of GPU g's busy (relaxed) or held (gang)
    intervals ÷ makespan."""
    makespan = max(completion.values())
    jct = {j: completion[j] - arrival[j] for j in completion}
    return {
        "total_weighted_jct": sum(weight[j] * jct[j] for j in jct),
        "mean_jct": sum(jct.values()) / len(jct),
        "makespan": makespan,
        "utilisation": {
            g: (union_length(iv) / makespan if makespan > 0 else 0.0)
            for g, iv in gpu_intervals.items()
        },
    }
