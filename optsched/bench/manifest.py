"""The manifest of an instance set: best known objective and best proven bound per instance.

``manifest.json`` (``optsched/manifest@1``) lists every instance of a set with its grid cell
and seed and, per execution mode, the best objective and the best certified bound found so far,
each with the run that found it. Runs update it (:meth:`Manifest.update`); nobody edits it by
hand, and :meth:`Manifest.rebuild` recomputes it from records alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optsched.errors import InputError
from optsched.io import read_json, write_json

MANIFEST_FORMAT = "optsched/manifest@1"


def _by(record: Mapping[str, Any]) -> dict[str, Any]:
    return {"method": record["method"], "seed": record["seed"], "params": record["params"],
            "status": record["status"], "key": record["key"]}


@dataclass
class Manifest:
    """An instance set's manifest, bound to its file."""

    path: Path
    grid: str
    instances: dict[str, dict[str, Any]]

    @classmethod
    def new(cls, path: str | Path, grid: str, entries: Mapping[str, Mapping[str, Any]]
            ) -> Manifest:
        return cls(Path(path), grid, {name: {**dict(e), "best": {}}
                                      for name, e in entries.items()})

    @classmethod
    def load(cls, path: str | Path) -> Manifest:
        data = read_json(path)
        if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
            raise InputError(f"{path}: not an {MANIFEST_FORMAT} file")
        return cls(Path(path), data["grid"], data["instances"])

    def save(self) -> None:
        write_json(self.path, {"format": MANIFEST_FORMAT, "grid": self.grid,
                               "instances": self.instances})

    def update(self, record: Mapping[str, Any]) -> bool:
        """Fold one run record in; True if it improved the best objective or bound."""
        entry = self.instances.get(record["instance"])
        if entry is None:
            return False
        best = entry["best"].setdefault(record["mode"], {
            "objective": None, "objective_by": None, "bound": None, "bound_by": None})
        changed = False
        obj, bound = record.get("objective"), record.get("bound")
        if obj is not None and (best["objective"] is None or obj < best["objective"]):
            best["objective"], best["objective_by"] = obj, _by(record)
            changed = True
        if bound is not None and (best["bound"] is None or bound > best["bound"]):
            best["bound"], best["bound_by"] = bound, _by(record)
            changed = True
        return changed

    def rebuild(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Forget every best value and fold ``records`` in again."""
        for entry in self.instances.values():
            entry["best"] = {}
        for record in records:
            self.update(record)
