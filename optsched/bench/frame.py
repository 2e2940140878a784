"""Results and benchmark records as a pandas DataFrame, in one call (the ``frame`` extra).

>>> from optsched.bench.frame import to_frame
>>> df = to_frame("benchmarks/results/hare/records.jsonl")          # doctest: +SKIP
>>> df.groupby(["method", "cell.jobs"])["gap"].median()              # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from optsched.bench.manifest import Manifest, best_key
from optsched.bench.records import load_records
from optsched.bench.report import dedupe, references
from optsched.output import plain
from optsched.result import Result, gap


def flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """One level of columns: nested mappings become dotted names (``cell.jobs``,
    ``metrics.makespan``, ``extra.solver_status``); NumPy values become Python ones; lists
    stay as they are."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            try:
                out[name] = plain(value)
            except TypeError:
                out[name] = value
    return out


def to_frame(
    rows: str | Path | Iterable[Mapping[str, Any] | Result[Any]],
    manifest: str | Path | Sequence[str | Path] | None = None,
    *,
    superseded: bool = False,
) -> Any:
    """A pandas DataFrame with one row per record or result.

        ``rows``: a records file written by ``optsched bench run`` (path), or records (dicts),
        or :class:`~optsched.result.Result` objects (their JSON fields; method-specific
        ``extra`` fields under ``extra.``). Nested fields are flattened (:func:`flatten`); a field
    that is a mapping in some rows and missing or None in the others gives only its dotted
    columns.

    ``manifest``: one or more instance sets (a folder or its ``manifest.json``). Records then
    gain ``best.objective`` and ``best.bound``, the best known over the records and the sets
    (as ``optsched bench report`` takes them; for gang mode the relaxed bound counts too),
    and ``gap_best``, the row's gap to that best bound (``gap`` stays the run's own).

    Records keep only the rows the reports use (:func:`~optsched.bench.report.dedupe`): of a
    run recorded as an error and then retried, its new record; of a plug-in method, the runs
    of its newest code. ``superseded=True`` keeps every row.

        Raises
        ------
        ImportError
            pandas is not installed (``pip install 'optsched[frame]'``).
        InputError
            A records file that cannot be read.
    """
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError("to_frame needs pandas: pip install 'optsched[frame]'") from exc
    if isinstance(rows, (str, Path)):
        rows = load_records(rows, must_exist=True)
    rows = list(rows)
    if not superseded and rows and all(isinstance(r, Mapping) and "key" in r for r in rows):
        rows = list(dedupe(rows))  # type: ignore[arg-type]
    best = _references(rows, manifest) if manifest is not None else None
    flat = []
    for row in rows:
        if isinstance(row, Result):
            data = row.to_dict()
            fields = {k: v for k, v in data.items() if k not in row.extra}
            row = {**fields, "extra": dict(row.extra)}
        elif best is not None and "instance" in row:
            ref = best.get((row["instance"], best_key(row)), {})
            row = {
                **row,
                "best": {"objective": ref.get("objective"), "bound": ref.get("bound")},
                "gap_best": gap(row.get("objective"), ref.get("bound"), row.get("tolerance")),
            }
        flat.append(flatten(row))
    frame = pd.DataFrame(flat)
    # a field that is a mapping in some rows and None in others: keep its dotted columns only
    empty = [
        c
        for c in frame.columns
        if frame[c].isna().all() and any(other.startswith(f"{c}.") for other in frame.columns)
    ]
    return frame.drop(columns=empty)


def _references(
    rows: Sequence[Mapping[str, Any] | Result[Any]], manifest: str | Path | Sequence[str | Path]
) -> dict[tuple[str, str], dict[str, Any]]:
    """The best known values per (instance, mode) over the records among ``rows`` and the
    sets ``manifest`` names."""
    paths = [manifest] if isinstance(manifest, (str, Path)) else list(manifest)
    manifests = [Manifest.of(p) for p in paths]
    records = [r for r in rows if not isinstance(r, Result) and "instance" in r]
    return references(records, manifests)
