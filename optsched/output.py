"""The one way optsched writes files: validated targets, atomic replacement, JSON that is JSON.

Guarantees (README, "What optsched promises"):

- **Validated before the work starts.** :func:`output_target` refuses, as bad input naming the
  option and the path, an empty path, a directory, a folder that does not exist or cannot be
  written (a temporary file is created there and removed, so a read-only mount or a folder
  such as ``/sys`` is refused for root too), anything that is not a regular file, a
  character device or a FIFO (a block device, a socket), a path equal to one of the
  command's inputs (``--out`` over the instance), and two outputs of one command that are
  the same file.
- **Atomic.** A regular file (new or existing) is written to a temporary file in its own
  folder, flushed to disk and renamed over the target, so a reader or a kill sees either the
  old file whole or the new file whole, never a truncated one. A new file gets the mode the
  umask gives (0666 & ~umask); an existing file keeps its mode.
- **Non-plain targets.** A symbolic link is followed: its target is replaced atomically and
  the link stays. A character device (``/dev/null``, a terminal) or a FIFO is written
  through, never replaced by a regular file.
- **All or nothing across outputs.** :func:`write_outputs` stages every regular file before
  renaming any, so a failure while writing leaves every target as it was.
- **JSON.** :func:`json_text` refuses NaN and ±Infinity (``ValueError``): they are not JSON.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from optsched.errors import InputError

Data = str | bytes


def plain(value: Any) -> Any:
    """``json.dumps``' ``default``: a NumPy scalar as the Python number or bool it holds, a
    NumPy array as a list, so that no NumPy type reaches (or breaks) JSON output."""
    np = sys.modules.get("numpy")  # not imported: no value can be a NumPy one
    if np is not None and isinstance(value, np.generic):
        return value.item()
    if np is not None and isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def json_text(data: Any, *, indent: int | None = 1) -> str:
    """``data`` as JSON text (one trailing newline; NumPy values as Python ones,
    :func:`plain`); non-finite numbers raise ValueError."""
    try:
        return json.dumps(data, indent=indent, allow_nan=False, default=plain) + "\n"
    except ValueError:
        raise ValueError(
            "refusing to write a non-finite number (NaN or Infinity) as JSON"
        ) from None


def _resolve(path: str | Path) -> Path:
    """The file ``path`` names, symbolic links followed; a new file (or a link to one) is
    fine, a link loop raises OSError (ELOOP). A character device or FIFO, also behind a
    link, is ``path`` as given (written through it)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):  # written through as named: /dev/stdout
        return Path(path)  # into a pipe resolves to /proc/PID/fd/pipe:[N], which open() can't
    try:
        return Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        return Path(os.path.realpath(path))


def _same(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def output_target(
    path: str | Path | None, option: str = "--out", *, inputs: Iterable[str | Path | None] = ()
) -> Path:
    """Check that ``path`` (given as ``option``) can be written, before any work is done.

    Returns the path. Raises :class:`InputError` naming ``option`` and the path when it is
    empty, a directory, neither a regular file nor a character device nor a FIFO, in a
    missing folder or one where a new file cannot be made (a temporary one is created and
    removed: permissions alone say yes to root), or the same file as one of ``inputs``.
    """
    if path is None or str(path) == "":
        raise InputError(f"{option}: empty path")
    target = Path(path)
    where = f"{option} {str(path)!r}"
    if str(path).endswith(os.sep):
        raise InputError(f"{where} names a folder, not a file")
    try:
        real = _resolve(target)
    except OSError as exc:  # a symbolic link loop
        raise InputError(f"{where}: {exc.strerror or exc}") from None
    if real.exists():
        mode = real.stat().st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{where} is a directory")
        if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            raise InputError(f"{where} is not a regular file, character device or FIFO")
        if not stat.S_ISREG(mode):
            if not os.access(real, os.W_OK):
                raise InputError(f"{where}: not writable")
            return target
    folder = real.parent
    if not folder.is_dir():
        raise InputError(f"{where}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{where}: folder {str(folder)!r} is not writable")
    try:  # os.access says yes to root everywhere, even on /sys or a read-only mount
        fd, probe = _temporary_beside(real)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(
            f"{where}: cannot write in folder {str(folder)!r} ({exc.strerror or exc})"
        ) from None
    for given in inputs:
        if given is not None and str(given) and _same(real, Path(given)):
            raise InputError(
                f"{where} is the input file {str(given)!r}: refusing to overwrite an input"
            )
    return target


def distinct_targets(targets: Sequence[tuple[str, str | Path | None]]) -> None:
    """Refuse two outputs of one command that name the same file (``(option, path)``)."""
    seen: dict[str, str] = {}
    for option, path in targets:
        if path is None or str(path) == "":
            continue
        real = os.path.realpath(path)
        if real in seen and not stat.S_ISCHR(_mode(Path(real))):
            raise InputError(f"{option} and {seen[real]} name the same file {str(path)!r}")
        seen[real] = option


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode
    except OSError:
        return 0


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


class _Staged:
    """One output prepared for :func:`write_outputs`: a temporary file beside a regular
    target, or nothing yet for a character device or FIFO (written through at commit)."""

    def __init__(self, path: str | Path, data: Data) -> None:
        self.path = Path(path)
        self.real = _resolve(self.path)
        self.data = data.encode("utf-8") if isinstance(data, str) else data
        self.tmp: str | None = None
        mode = _mode(self.real)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            return
        keep = stat.S_IMODE(mode) if stat.S_ISREG(mode) else _umask_mode()
        fd, self.tmp = _temporary_beside(self.real)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(self.data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(self.tmp, keep)
        except BaseException:
            self.discard()
            raise

    def commit(self) -> None:
        if self.tmp is None:
            try:
                with open(self.real, "wb") as fh:  # device or FIFO: write through
                    fh.write(self.data)
            except OSError as exc:
                raise OSError(exc.errno, exc.strerror, str(self.path)) from None
            return
        os.replace(self.tmp, self.real)
        self.tmp = None

    def discard(self) -> None:
        if self.tmp is not None:
            Path(self.tmp).unlink(missing_ok=True)
            self.tmp = None


def write_outputs(items: Sequence[tuple[str | Path, Data]]) -> None:
    """Write every ``(path, data)`` or none: all regular files are staged first, then renamed
    into place; devices and FIFOs are written through last."""
    staged: list[_Staged] = []
    try:
        for path, data in items:
            staged.append(_Staged(path, data))
        for s in sorted(staged, key=lambda s: s.tmp is None):
            s.commit()
    finally:
        for s in staged:
            s.discard()


class StreamedFile:
    """One output written piece by piece (e.g. a schedule too large to hold in memory), with
    the guarantees above: a regular file is written to a temporary file beside it and renamed
    over it by :meth:`commit` (nothing is replaced if the work fails: :meth:`discard`); a
    character device or FIFO is written through as the pieces come."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.real = _resolve(self.path)
        mode = _mode(self.real)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        self.tmp: str | None = None
        if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
            self.keep = None
            self.fh = open(self.real, "w", encoding="utf-8")  # noqa: SIM115
            return
        self.keep = stat.S_IMODE(mode) if stat.S_ISREG(mode) else _umask_mode()
        fd, self.tmp = _temporary_beside(self.real)
        self.fh = os.fdopen(fd, "w", encoding="utf-8")

    def write(self, text: str) -> None:
        self.fh.write(text)

    def commit(self) -> None:
        """Flush, and put the file in place."""
        self.fh.flush()
        if self.tmp is not None:
            os.fsync(self.fh.fileno())
        self.fh.close()
        if self.tmp is not None:
            assert self.keep is not None
            os.chmod(self.tmp, self.keep)
            os.replace(self.tmp, self.real)
            self.tmp = None

    def discard(self) -> None:
        """Drop what was written (the target stays as it was)."""
        self.fh.close()
        if self.tmp is not None:
            Path(self.tmp).unlink(missing_ok=True)
            self.tmp = None


def write_file(path: str | Path, data: Data) -> None:
    """Write one output atomically (see the module's guarantees)."""
    write_outputs([(path, data)])


def _temporary_beside(real: Path) -> tuple[int, str]:
    """A new temporary file in ``real``'s folder (its descriptor and path), named after it;
    an OSError names ``real``, not the temporary file."""
    import tempfile  # only when writing: it costs every command's start-up otherwise

    try:  # the name cut short: the temporary file's must fit where the target's does
        return tempfile.mkstemp(prefix=f".{real.name[:200]}.", suffix=".tmp", dir=real.parent)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(real)) from None
