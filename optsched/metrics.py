"""Schedule metrics of the model (docs/model.md), computed from completion times and GPU intervals.

Used by the checker, so that every reported figure comes from the independent check; the
plots draw the checker's times with :func:`union` too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def union(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The union of half-open intervals ``[a, b)``, as disjoint intervals in order (touching
    ones joined)."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def union_length(intervals: Iterable[tuple[float, float]]) -> float:
    """Length of the union of half-open intervals ``[a, b)``."""
    total = 0.0
    for a, b in union(intervals):
        total += b - a
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
