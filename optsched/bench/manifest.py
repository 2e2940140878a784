"""The manifest of an instance set: best known objective and best proven bound per instance.

``manifest.json`` (``optsched/manifest@1``) lists every instance of a set with its grid cell
and seed and, per execution mode (for placements: per cost form, :func:`best_key`), the best
objective and the best certified bound found so far, each with the run that found it. Runs
update it (:meth:`Manifest.fold`); nobody edits it by hand, and :meth:`Manifest.rebuild`
recomputes it from records alone.

Guarantees:

- **Validated on load.** :meth:`Manifest.load` refuses, as an :class:`InputError` naming the
  file and the entry, anything but an ``optsched/manifest@1`` object whose ``instances`` map
  names to entries with a ``file`` that is a plain relative path inside the set's folder
  (no absolute path, no ``..``), a ``cell`` object, an integer (or null) ``seed`` and
  ``best`` values per mode whose ``objective`` and ``bound`` are null or finite numbers in
  [0, MAX_VALUE] (placement costs: [−MAX_VALUE, MAX_VALUE], Liquid's fitness terms being
  negative) with the bound not above the objective.
- **Atomic and merged.** Saving replaces the file atomically (:mod:`optsched.output`);
  :meth:`Manifest.fold` holds an exclusive lock on the set's folder while it re-reads the
  file, folds records in and saves, so runners with different records files on one set
  never lose each other's improvements.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from optsched.errors import InputError
from optsched.io import write_json
from optsched.jsonfile import read_json
from optsched.limits import MAX_VALUE, is_number
from optsched.result import OPTIMAL_TOL, PLACEMENT_MODE

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

MANIFEST_FORMAT = "optsched/manifest@1"


def _by(record: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance of a best value: the run (method, seed, parameters, status, record key),
    its runtime and when it finished (for records that say)."""
    by = {
        "method": record["method"],
        "seed": record["seed"],
        "params": record["params"],
        "status": record["status"],
        "key": record["key"],
    }
    for name in ("runtime_s", "finished_at"):
        if record.get(name) is not None:
            by[name] = record[name]
    return by


def _above(bound: float, objective: float) -> bool:
    """Whether ``bound`` exceeds ``objective`` beyond the optimality tolerance."""
    return bound - objective > OPTIMAL_TOL * max(1.0, abs(objective))


def _check_entry(path: Path, name: Any, entry: Any) -> dict[str, Any]:
    where = f"{path}: instance {name!r}"
    if not isinstance(name, str) or not name:
        raise InputError(f"{path}: instance names must be non-empty strings, got {name!r}")
    if not isinstance(entry, dict):
        raise InputError(f"{where}: entry must be an object")
    file = entry.get("file")
    if not isinstance(file, str) or not file:
        raise InputError(f"{where}: needs a 'file' string")
    parts = PurePosixPath(file).parts
    if (
        file.startswith(("/", "\\"))
        or "\\" in file
        or ".." in parts
        or not parts
        or ":" in parts[0]
    ):
        raise InputError(f"{where}: file {file!r} must be a relative path inside the set's folder")
    if not isinstance(entry.get("cell", {}), dict):
        raise InputError(f"{where}: 'cell' must be an object")
    seed = entry.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise InputError(f"{where}: 'seed' must be an integer, got {seed!r}")
    best = entry.get("best", {})
    if not isinstance(best, dict) or not all(isinstance(v, dict) for v in best.values()):
        raise InputError(f"{where}: 'best' must be an object of objects")
    return {
        **entry,
        "best": {
            mode: _check_best(
                f"{where}: best[{mode!r}]", value, signed=mode.startswith(PLACEMENT_MODE)
            )
            for mode, value in best.items()
        },
    }


def _check_best(where: str, best: dict[str, Any], *, signed: bool = False) -> dict[str, Any]:
    """One mode's best values: ``objective`` and ``bound`` null or finite numbers in
    [0, MAX_VALUE] with bound <= objective (within the optimality tolerance), each with its
    ``*_by`` run (an object, or null when the value is null)."""
    for name in ("objective", "bound"):
        if name not in best:
            raise InputError(f"{where}: no {name!r} field")
        value = best[name]
        if value is None:
            continue
        if not is_number(value) or not (-MAX_VALUE if signed else 0) <= value <= MAX_VALUE:
            low = -MAX_VALUE if signed else 0
            raise InputError(
                f"{where}: {name!r} must be null or a finite number in "
                f"[{low:g}, {MAX_VALUE:g}], got {value!r}"
            )
        by = best.get(f"{name}_by")
        if by is not None and not isinstance(by, dict):
            raise InputError(f"{where}: '{name}_by' must be an object or null, got {by!r}")
    obj, bound = best["objective"], best["bound"]
    if obj is not None and bound is not None and _above(bound, obj):
        raise InputError(
            f"{where}: 'bound' {bound!r} exceeds 'objective' {obj!r} (a lower "
            "bound cannot exceed a known objective)"
        )
    return {
        **best,
        "objective_by": best.get("objective_by"),  # the file's key order kept
        "bound_by": best.get("bound_by"),
    }


def _parse(path: Path, data: Any) -> tuple[str, dict[str, dict[str, Any]]]:
    if not isinstance(data, dict) or data.get("format") != MANIFEST_FORMAT:
        raise InputError(f"{path}: not an {MANIFEST_FORMAT} file")
    grid, instances = data.get("grid"), data.get("instances")
    if not isinstance(grid, str):
        raise InputError(f"{path}: 'grid' must be a string")
    if not isinstance(instances, dict):
        raise InputError(f"{path}: 'instances' must be an object")
    return grid, {name: _check_entry(path, name, entry) for name, entry in instances.items()}


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``folder`` (a no-op where locks are unavailable)."""
    fd = None
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


#: The placement parameters that define what a placement's objective measures.
_COST_KEYS = (("cost", "paper"), ("lambda", "0.5"), ("cross_domain", None), ("contention", "0"))


def best_bound(
    best: Mapping[str, Mapping[str, Any]], key: str
) -> tuple[float | None, Mapping[str, Any] | None]:
    """The best bound for ``key`` among an instance's best values, and the run that found it
    (``bound_by``, when known): for ``gang`` the better of the gang and the relaxed bounds (a
    gang schedule is relaxed-feasible with the same objective, so the relaxed optimum is never
    above the gang optimum)."""
    found = [
        (v["bound"], v.get("bound_by"))
        for k in ((key, "relaxed") if key == "gang" else (key,))
        if (v := best.get(k, {})).get("bound") is not None
    ]
    return max(found, key=lambda f: f[0]) if found else (None, None)


def best_objective(
    best: Mapping[str, Mapping[str, Any]], key: str
) -> tuple[float | None, Mapping[str, Any] | None]:
    """The best objective for ``key`` among an instance's best values, and the run that
    found it (``objective_by``, when known): for ``relaxed`` the better of the relaxed and
    the gang objectives (a gang schedule is relaxed-feasible with the same objective)."""
    found = [
        (v["objective"], v.get("objective_by"))
        for k in ((key, "gang") if key == "relaxed" else (key,))
        if (v := best.get(k, {})).get("objective") is not None
    ]
    return min(found, key=lambda f: f[0]) if found else (None, None)


def best_key(record: Mapping[str, Any]) -> str:
    """Which best values a record competes for: its mode, and for placements the cost it is
    measured with (``placement[cost=code]``: costs of different forms are not comparable)."""
    if record["mode"] != PLACEMENT_MODE:
        return str(record["mode"])
    params = record.get("params") or {}
    parts = [
        f"{k}={params.get(k, default)}"
        for k, default in _COST_KEYS
        if params.get(k, default) is not None
    ]
    return f"placement[{','.join(parts)}]"


@dataclass
class Manifest:
    """An instance set's manifest, bound to its file."""

    path: Path
    grid: str
    instances: dict[str, dict[str, Any]]
    #: (inode, size, mtime) of the file as last read or written here: unchanged, no re-read.
    _stamp: tuple[int, int, int] | None = field(default=None, repr=False, compare=False)

    def _file_stamp(self) -> tuple[int, int, int] | None:
        try:
            st = self.path.stat()
        except OSError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    @classmethod
    def new(
        cls, path: str | Path, grid: str, entries: Mapping[str, Mapping[str, Any]]
    ) -> Manifest:
        return cls(
            Path(path), grid, {name: {**dict(e), "best": {}} for name, e in entries.items()}
        )

    @classmethod
    def load(cls, path: str | Path) -> Manifest:
        """Read and validate a manifest (see the module's guarantees)."""
        path = Path(path)
        grid, instances = _parse(path, read_json(path))
        manifest = cls(path, grid, instances)
        manifest._stamp = manifest._file_stamp()
        return manifest

    @classmethod
    def of_set(cls, folder: str | Path) -> Manifest:
        """The manifest of the instance set in ``folder`` (written by ``optsched bench gen``);
        InputError when ``folder`` is not a folder or holds no ``manifest.json``."""
        path = Path(folder)
        if not path.is_dir():
            raise InputError(
                f"{folder}: not a folder (an instance set written by optsched bench gen)"
            )
        if not (path / "manifest.json").is_file():
            raise InputError(
                f"{folder}: no manifest.json (not an instance set written by optsched bench gen)"
            )
        return cls.load(path / "manifest.json")

    @classmethod
    def of(cls, where: str | Path) -> Manifest:
        """The manifest of an instance set given as its folder or its ``manifest.json``."""
        path = Path(where)
        return cls.load(path / "manifest.json" if path.is_dir() else path)

    def files(self) -> list[Path]:
        """The manifest's file and its instances' files (what a run reads)."""
        return [self.path, *(self.path.parent / e["file"] for e in self.instances.values())]

    def save(self) -> None:
        write_json(
            self.path, {"format": MANIFEST_FORMAT, "grid": self.grid, "instances": self.instances}
        )
        self._stamp = self._file_stamp()

    def update(self, record: Mapping[str, Any]) -> bool:
        """Fold one run record in; True if it improved the best objective or bound."""
        entry = self.instances.get(record["instance"])
        if entry is None:
            return False
        best = entry["best"].setdefault(
            best_key(record),
            {"objective": None, "objective_by": None, "bound": None, "bound_by": None},
        )
        changed = False
        obj, bound = record.get("objective"), record.get("bound")
        if obj is not None and (best["objective"] is None or obj < best["objective"]):
            best["objective"], best["objective_by"] = obj, _by(record)
            changed = True
            if best["bound"] is not None and _above(best["bound"], obj):
                # a checked schedule beats the claimed bound: the claim was wrong
                best["bound"], best["bound_by"] = None, None
        if (
            bound is not None
            and (best["bound"] is None or bound > best["bound"])
            and (best["objective"] is None or not _above(bound, best["objective"]))
        ):
            best["bound"], best["bound_by"] = bound, _by(record)
            changed = True
        return changed

    def fold(self, records: Iterable[Mapping[str, Any]]) -> bool:
        """Fold ``records`` into the manifest on disk and save it if anything improved.

        Under an exclusive lock on the set's folder the file is re-read first (another
        runner may have improved it), so concurrent runners merge rather than overwrite.
        Returns True if the file changed.
        """
        records = list(records)
        if not records:
            return False
        with _folder_lock(self.path.parent):
            stamp = self._file_stamp()
            if stamp is not None and stamp != self._stamp:  # changed by someone else
                self.grid, self.instances = _parse(self.path, read_json(self.path))
                self._stamp = stamp
            changed = any([self.update(r) for r in records])
            if changed:
                self.save()
        return changed

    def rebuild(self, records: Iterable[Mapping[str, Any]]) -> None:
        """Forget every best value and fold ``records`` in again."""
        for entry in self.instances.values():
            entry["best"] = {}
        for record in records:
            self.update(record)
