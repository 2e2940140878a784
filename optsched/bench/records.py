"""Run records: one JSON object per line (``optsched/bench-record@1``), appended as runs end.

Guarantees:

- **Whole lines.** A record is written with a single ``write`` of a whole line, flushed and
  synced before the next run is reported, so a killed runner loses at most the runs still in
  flight. A torn last line (the runner died while writing it) is recognised and cut off when
  the file is reopened by a runner.
- **One runner per file.** :class:`RecordWriter` holds an exclusive advisory lock
  (``flock``) on the records file for as long as it is open; a second writer fails at once
  with an :class:`InputError` saying another runner holds the file. The kernel drops the lock
  when the holder dies, however it dies.
- **Validated on read.** :func:`load_records` refuses, naming ``path:line``, a line that is
  not JSON (NaN and Infinity are not JSON), not an ``optsched/bench-record@1`` object, or a
  record missing a field the runner, the manifest and the reports rely on, or holding one of
  the wrong type: a status other than optimal/feasible/infeasible/unknown/error, an
  objective, bound or runtime that is negative or above MAX_VALUE (1e15).
"""

from __future__ import annotations

import errno
import json
import math
import os
import platform
import stat
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from optsched.errors import InputError
from optsched.limits import MAX_VALUE, is_bounded
from optsched.output import output_target, plain
from optsched.result import PLACEMENT_MODE

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

RECORD_FORMAT = "optsched/bench-record@1"
#: Fields that differ between two executions of the same deterministic run (and, in
#: ``extra``, ``startup_s``: the one-off solver start-up).
TIMING_FIELDS = ("runtime_s", "cpu_s", "finished_at", "machine")


def run_key(
    instance: str,
    method: str,
    mode: str,
    seed: int,
    params: Mapping[str, str],
    time_limit: float | None,
    code: str | None = None,
) -> str:
    """The identity of a run: what a resumed runner compares to skip finished work. ``code``:
    the hash of the plug-in that defines the method, so that another version of it is
    another run (built-in methods have none, and their keys stay as they were)."""
    parts: list[Any] = [instance, method, mode, seed, dict(sorted(params.items())), time_limit]
    if code is not None:
        parts.append({"plugin": code})
    return json.dumps(parts, separators=(",", ":"))


def key_plugin(key: str) -> str | None:
    """The plug-in hash a run key ends with (:func:`run_key`'s ``code``), if any; None for a
    built-in method's key or a key not written by :func:`run_key`."""
    try:
        parts = json.loads(key)
    except (TypeError, ValueError):
        return None
    if isinstance(parts, list) and len(parts) > 6 and isinstance(parts[6], dict):
        code = parts[6].get("plugin")
        return code if isinstance(code, str) else None
    return None


def _not_json(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


def _is_value(value: Any) -> bool:
    """A finite number in [0, MAX_VALUE] (an objective or a bound)."""
    return is_bounded(value) and value >= 0


#: Modes whose objective is signed (Liquid's placement cost has negative fitness terms).
SIGNED_MODES = (PLACEMENT_MODE,)


#: The statuses a record may hold (:class:`optsched.result.Status`).
STATUSES = ("optimal", "feasible", "infeasible", "unknown", "error")


#: Required fields and their check, and optional ones (absent or null allowed).
_REQUIRED: dict[str, tuple[str, Any]] = {
    "key": ("a string", lambda v: isinstance(v, str)),
    "instance": ("a string", lambda v: isinstance(v, str)),
    "method": ("a string", lambda v: isinstance(v, str)),
    "mode": ("a string", lambda v: isinstance(v, str)),
    "status": (f"one of {', '.join(STATUSES)}", lambda v: v in STATUSES),
    "seed": (
        "an integer or null",
        lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    ),
    "params": ("an object", lambda v: isinstance(v, dict)),
    "runtime_s": (f"a number in [0, {MAX_VALUE:g}]", _is_value),
}
_OPTIONAL: dict[str, tuple[str, Any]] = {
    "objective": (f"a number in [0, {MAX_VALUE:g}] or null", _is_value),
    "bound": (f"a number in [0, {MAX_VALUE:g}] or null", _is_value),
    "gap": (f"a number of magnitude at most {MAX_VALUE:g} or null", is_bounded),
    "cpu_s": (f"a number in [0, {MAX_VALUE:g}] or null", _is_value),
    "cell": ("an object", lambda v: isinstance(v, dict)),
}


def check_record(record: Any, where: str) -> dict[str, Any]:
    """``record`` if it is a well-formed record, else an :class:`InputError` at ``where``."""
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise InputError(f"{where}: not an {RECORD_FORMAT} record")
    for name, (what, ok) in _REQUIRED.items():
        if name not in record:
            raise InputError(f"{where}: record has no {name!r} field")
        if not ok(record[name]):
            raise InputError(f"{where}: field {name!r} must be {what}, got {record[name]!r}")
    for name, (what, ok) in _OPTIONAL.items():
        if name in ("objective", "bound") and record["mode"] in SIGNED_MODES:
            what, ok = f"a number of magnitude at most {MAX_VALUE:g} or null", is_bounded
        if record.get(name) is not None and not ok(record[name]):
            raise InputError(f"{where}: field {name!r} must be {what}, got {record[name]!r}")
    return record


def check_records_path(
    path: str | Path, option: str = "--records", *, inputs: Iterable[str | Path] = ()
) -> Path:
    """Refuse a records path that exists but is not a regular file (a folder, a FIFO, a
    device: records are appended under a lock), and everything
    :func:`~optsched.output.output_target` refuses (an empty path, a missing folder, one of
    ``inputs`` such as the manifest or an instance), naming ``option``."""
    if str(path):
        try:
            mode = Path(path).stat().st_mode
        except FileNotFoundError:
            mode = 0
        except OSError as exc:
            raise InputError(f"{option} {str(path)!r}: {exc.strerror or exc}") from None
        if stat.S_ISDIR(mode):
            raise InputError(f"{option} {str(path)!r} is a folder, not a records file")
        if mode and not stat.S_ISREG(mode):
            raise InputError(f"{option} {str(path)!r} is not a regular file")
    return output_target(path, option, inputs=inputs)


def load_records(
    path: str | Path, *, repair: bool = False, must_exist: bool = False
) -> list[dict[str, Any]]:
    """Every complete record of a JSON-lines file (missing file: none, or an
    :class:`InputError` with ``must_exist``).

    A last line that is not newline-terminated is a torn write: it is ignored, and cut from
    the file when ``repair`` is set (only a runner holding the file's lock may repair). A bad
    line elsewhere is an :class:`InputError` naming ``path:line``.
    """
    path = Path(path)
    if not path.exists():
        if must_exist:
            raise InputError(f"{path}: no such records file")
        return []
    check_records_path(path, "records file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    *complete, tail = raw.split(b"\n")  # only the unterminated tail can be torn
    records: list[dict[str, Any]] = []
    for i, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line, parse_constant=_not_json, parse_float=_finite)
        except (ValueError, RecursionError):
            raise InputError(f"{path}:{i}: not a JSON record") from None
        records.append(check_record(record, f"{path}:{i}"))
    if repair and tail:
        with path.open("r+b") as fh:
            fh.truncate(len(raw) - len(tail))
    return records


class RecordWriter:
    """Appends records to a JSON-lines file, one synced line each, holding its lock.

    Opening takes an exclusive non-blocking ``flock`` on the file: if another runner holds
    it, :class:`InputError` at once. On a filesystem without locks (``locked`` False) the
    writer works unlocked.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = check_records_path(path)
        try:
            self._fh = self.path.open("a", encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"--records {str(self.path)!r}: cannot open for writing: {exc.strerror or exc}"
            ) from None
        self.locked = False
        if fcntl is not None:
            try:
                fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.locked = True
            except OSError as exc:
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    self._fh.close()
                    raise InputError(
                        f"--records {str(self.path)!r}: another runner holds "
                        "this records file (it is locked); wait for it to end "
                        "or choose another file"
                    ) from None

    def identity(self) -> tuple[int, int, int]:
        """(descriptor, device, inode) of the open file, so a forked worker can let go of
        its copy of the descriptor (and of the lock with it)."""
        st = os.fstat(self._fh.fileno())
        return self._fh.fileno(), st.st_dev, st.st_ino

    def write(self, record: Mapping[str, Any]) -> None:
        self._fh.write(
            json.dumps(record, allow_nan=False, separators=(",", ":"), default=plain) + "\n"
        )
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def versions(
    packages: Sequence[str] = ("optsched", "numpy", "networkx", "ortools", "pulp", "highspy"),
) -> dict[str, str | None]:
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
    return {"host": platform.node(), "platform": platform.platform(), "cpus": os.cpu_count()}
