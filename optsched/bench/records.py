"""Run records: one JSON object per line (``optsched/bench-record@1``), appended as runs end.

A record is written with a single ``write`` of a whole line, flushed and synced before the next
run is reported, so a killed runner loses at most the runs still in flight. A torn last line
(the runner died while writing it) is recognised and cut off when the file is reopened.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from optsched.errors import InputError

RECORD_FORMAT = "optsched/bench-record@1"
#: Fields that differ between two executions of the same deterministic run.
TIMING_FIELDS = ("runtime_s", "finished_at", "machine")


def run_key(instance: str, method: str, mode: str, seed: int, params: Mapping[str, str],
            time_limit: float | None) -> str:
    """The identity of a run: what a resumed runner compares to skip finished work."""
    return json.dumps([instance, method, mode, seed, dict(sorted(params.items())), time_limit],
                      separators=(",", ":"))


def load_records(path: str | Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """Every complete record of a JSON-lines file (missing file: none).

    A last line that is not newline-terminated valid JSON is a torn write: it is ignored, and
    cut from the file when ``repair`` is set. A bad line elsewhere is an :class:`InputError`.
    """
    path = Path(path)
    if not path.exists():
        return []
    raw = path.read_bytes()
    *complete, tail = raw.split(b"\n")  # only the unterminated tail can be torn
    records: list[dict[str, Any]] = []
    for i, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise InputError(f"{path}:{i}: not a JSON record") from None
        if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
            raise InputError(f"{path}:{i}: not an {RECORD_FORMAT} record")
        records.append(record)
    if repair and tail:
        with path.open("r+b") as fh:
            fh.truncate(len(raw) - len(tail))
    return records


class RecordWriter:
    """Appends records to a JSON-lines file, one synced line each."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="utf-8")

    def write(self, record: Mapping[str, Any]) -> None:
        self._fh.write(json.dumps(record, allow_nan=False, separators=(",", ":")) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def versions(packages: Sequence[str] = ("optsched", "numpy", "networkx", "ortools", "pulp",
                                         "highspy")) -> dict[str, str | None]:
    """Installed versions of the packages a result depends on, and Python's."""
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in packages:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict[str, Any]:
    """Where a run executed."""
    return {"host": platform.node(), "platform": platform.platform(),
            "cpus": os.cpu_count()}
