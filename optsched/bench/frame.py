"""Results and benchmark records as a pandas DataFrame, in one call (the ``frame`` extra).

>>> from optsched.bench.frame import to_frame
>>> df = to_frame("benchmarks/results/hare/records.jsonl")          # doctest: +SKIP
>>> df.groupby(["method", "cell.jobs"])["gap"].median()              # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from optsched.bench.records import load_records
from optsched.output import plain
from optsched.result import Result


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


def to_frame(rows: str | Path | Iterable[Mapping[str, Any] | Result[Any]]) -> Any:
    """A pandas DataFrame with one row per record or result.

        ``rows``: a records file written by ``optsched bench run`` (path), or records (dicts),
        or :class:`~optsched.result.Result` objects (their JSON fields; method-specific
        ``extra`` fields under ``extra.``). Nested fields are flattened (:func:`flatten`); a field
    that is a mapping in some rows and missing or None in the others gives only its dotted
    columns.

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
    flat = []
    for row in rows:
        if isinstance(row, Result):
            data = row.to_dict()
            fields = {k: v for k, v in data.items() if k not in row.extra}
            row = {**fields, "extra": dict(row.extra)}
        flat.append(flatten(row))
    frame = pd.DataFrame(flat)
    # a field that is a mapping in some rows and None in others: keep its dotted columns only
    empty = [
        c
        for c in frame.columns
        if frame[c].isna().all() and any(other.startswith(f"{c}.") for other in frame.columns)
    ]
    return frame.drop(columns=empty)
