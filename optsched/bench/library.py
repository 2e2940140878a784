"""The benchmark library's table: every instance set's best known values, from its manifest.

:func:`library_markdown` renders, for instance sets written by ``optsched bench gen`` (each
with its ``manifest.json``), a summary per set and mode (instances, how many have a best
known objective, how many are proved optimal, the median and largest certified gap between
the best known objective and the best bound) and one row per instance with both values and
the runs that found them. :func:`library_page` is the documentation page of every set in a folder
(``scripts/benchmark_library.py`` writes it for ``instances/``);
``optsched bench verify`` compares a submitted solution with the same values.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from optsched.bench.manifest import Manifest, best_bound, best_objective
from optsched.result import PLACEMENT_MODE, absolute_gap, gap, is_optimal


def _by(by: Mapping[str, Any] | None) -> str:
    if not by:
        return "–"
    params = ",".join(f"{k}={v}" for k, v in sorted(by.get("params", {}).items()))
    date = str(by.get("finished_at", ""))[:10]
    runtime = by.get("runtime_s")
    parts = [
        f"`{by['method']}`" + (f" ({params})" if params else ""),
        f"{runtime:.3g} s" if isinstance(runtime, int | float) else "",
        date,
    ]
    return ", ".join(p for p in parts if p)


def _bound(
    best: Mapping[str, Mapping[str, Any]], key: str
) -> tuple[float | None, Mapping[str, Any] | None, str]:
    """The best bound for ``key`` (a gang one may be the relaxed bound:
    :func:`~optsched.bench.manifest.best_bound`), the run that found it, and where from."""
    value, by = best_bound(best, key)
    relaxed = value is not None and best.get(key, {}).get("bound") != value
    return value, by, " (relaxed)" if relaxed else ""


def _objective(
    best: Mapping[str, Mapping[str, Any]], key: str
) -> tuple[float | None, Mapping[str, Any] | None, str]:
    """The best objective for ``key`` (a relaxed one may be a gang schedule's:
    :func:`~optsched.bench.manifest.best_objective`), the run that found it, and where
    from."""
    value, by = best_objective(best, key)
    gang = value is not None and best.get(key, {}).get("objective") != value
    return value, by, " (gang)" if gang else ""


def _gap(objective: float | None, bound: float | None, key: str) -> float | None:
    """The certified gap: relative, or absolute for placements (costs can be negative)."""
    if key.startswith(PLACEMENT_MODE):
        return absolute_gap(objective, bound)
    return gap(objective, bound)


def _gap_text(value: float | None, key: str) -> str:
    if value is None:
        return "–"
    return f"{value:.4g}" if key.startswith(PLACEMENT_MODE) else f"{100 * value:.2f} %"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.6g}"


def library_markdown(sets: Sequence[str | Path]) -> str:
    """The Markdown tables of the instance sets in ``sets`` (folders), in the order given."""
    manifests = [Manifest.of_set(folder) for folder in sets]
    lines = [
        "| set | mode / cost | instances | best known | proved optimal | median gap "
        "| largest gap |",
        "|---|---|---|---|---|---|---|",
    ]
    for manifest in manifests:
        keys = sorted({k for e in manifest.instances.values() for k in e["best"]})
        for key in keys:
            pairs = [
                (_objective(e["best"], key)[0], _bound(e["best"], key)[0])
                for e in manifest.instances.values()
            ]
            known = [(obj, bound) for obj, bound in pairs if obj is not None]
            optimal = sum(is_optimal(obj, bound) for obj, bound in known)
            gaps = [g for obj, bound in known if (g := _gap(obj, bound, key)) is not None]
            median = _gap_text(statistics.median(gaps), key) if gaps else "–"
            largest = _gap_text(max(gaps), key) if gaps else "–"
            lines.append(
                f"| {manifest.path.parent.name} | {key} | {len(pairs)} | "
                f"{len(known)} | {optimal} | {median} | {largest} |"
            )
    for manifest in manifests:
        lines += [
            "",
            f"### {manifest.path.parent.name}",
            "",
            f"Grid `{manifest.grid}`, {len(manifest.instances)} instances.",
            "",
            "| instance | mode / cost | best known | found by | best bound | found by | gap |",
            "|---|---|---|---|---|---|---|",
        ]
        for name, entry in manifest.instances.items():
            for key in sorted(entry["best"]):
                obj, obj_by, obj_source = _objective(entry["best"], key)
                bound, by, source = _bound(entry["best"], key)
                lines.append(
                    f"| {name} | {key} | {_number(obj)} | "
                    f"{_by(obj_by)}{obj_source} | {_number(bound)} | "
                    f"{_by(by)}{source} | {_gap_text(_gap(obj, bound, key), key)} |"
                )
    return "\n".join(lines) + "\n"


def library_page(folder: str | Path) -> str:
    """The benchmark library's documentation page: every instance set in ``folder`` (the
    subfolders with a ``manifest.json``, by name)."""
    sets = sorted(p for p in Path(folder).iterdir() if (p / "manifest.json").is_file())
    return (
        "# Benchmark library\n\n"
        "Every committed instance set with the best known objective and the best certified "
        "lower bound per instance and mode (placements: per cost form), each with the run "
        "that found it (method and parameters, runtime, date), as the sets' manifests keep "
        "them; a relaxed value may be a gang schedule's, marked (gang), and a gang bound a "
        "relaxed one, marked (relaxed): a gang schedule is relaxed-feasible with the same "
        "objective. The gap is (best known − best bound) / best known; for placements, whose "
        "cost can be negative, best known − best bound. Check a schedule or placement of "
        "your own against these values with `optsched bench verify SOLUTION --set "
        "instances/SET`; record it with `optsched bench run` to enter it here. This page is "
        "generated by `scripts/benchmark_library.py`.\n\n"
        "## Summary\n\n" + library_markdown(sets)
    )
