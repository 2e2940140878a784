"""C loops shipped with the package as source, compiled on first use and called through ctypes.

A kernel is one C file beside the module that drives it (``_hlas_kernel.c`` for the compiled
HLAS engine, ``_priority_kernel.c`` for ``priority-search``'s decoder). It exports
``<name>_fields``, the list of its state's arrays (``"<C type> <name>"`` lines) and sizes
(``"size <name>"`` lines) in the order of its state structure, and ``int <name>_run(state *)``.
:func:`load` compiles it with the machine's C compiler (``$CC``, else ``cc``, ``gcc`` or
``clang``) into a cache (``$XDG_CACHE_HOME/optsched``, else ``~/.cache/optsched``), keyed by
the source, the command and the platform, and loads it; :func:`bind` fills a state with the
driver's numpy arrays, checked for type and layout. No Python API, no build step at install.

Guarantees: a library in the cache is loaded only when its SHA-256 beside it matches (a file
cut short by a crash or a full disk would kill the process that maps it); both files are
written atomically; a missing compiler, a failed compilation (with the compiler's message) or
a library that does not load is an :class:`ImportError`, so that a caller can fall back to
its Python code.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from optsched.output import write_outputs

#: The C compiler's flags: no fused multiply-adds (-ffp-contract=off), so that every
#: floating-point expression rounds as Python's does.
CFLAGS = ("-O2", "-std=c11", "-ffp-contract=off", "-fPIC", "-shared")

#: The C types of a kernel's arrays as numpy types.
DTYPES = {
    "double": np.float64,
    "i64": np.int64,
    "i32": np.int32,
    "u8": np.bool_,
    "u64": np.uint64,
}


class Kernel(NamedTuple):
    """A compiled loop: ``<name>_run``, the state it takes (a ctypes structure of array
    pointers and sizes, then ``extra``), its arrays' names and types, and its sizes' names."""

    run: Any
    state: type[ctypes.Structure]
    arrays: tuple[tuple[str, Any], ...]
    sizes: tuple[str, ...]


def load(
    source: Path,
    name: str,
    cflags: Sequence[str] = CFLAGS,
    extra: Sequence[tuple[str, Any]] = (),
) -> Kernel:
    """The kernel ``name`` of the C file ``source``, compiled into the cache when it is not
    there whole. ``extra``: ctypes fields the state structure has after the sizes.

    Raises
    ------
    ImportError
        No C compiler, compiling failed (with the compiler's message), or the library does
        not load.
    """
    fields, run = _library(source, name, [*_compiler(), *cflags])
    typed = [line.split() for line in fields.decode().splitlines()]
    arrays = tuple((field, DTYPES[ctype]) for ctype, field in typed if ctype != "size")
    sizes = tuple(field for ctype, field in typed if ctype == "size")
    state = type(
        f"{name.title()}State",
        (ctypes.Structure,),
        {
            "_fields_": [(field, ctypes.c_void_p) for field, _ in arrays]
            + [(field, ctypes.c_int64) for field in sizes]
            + list(extra)
        },
    )
    run.argtypes, run.restype = [ctypes.POINTER(state)], ctypes.c_int
    return Kernel(run, state, arrays, sizes)


def bind(
    kernel: Kernel, arrays: Mapping[str, np.ndarray], sizes: Mapping[str, int]
) -> ctypes.Structure:
    """The kernel's state: a pointer to each of its arrays, found by name in ``arrays`` and
    checked for type and layout, and its sizes. The arrays must outlive the state."""
    state = kernel.state()
    for field, dtype in kernel.arrays:
        array = arrays[field]
        if array.dtype != dtype or not array.flags.c_contiguous:
            raise TypeError(f"{field}: {array.dtype} array, the kernel takes contiguous {dtype}")
        setattr(state, field, array.ctypes.data)
    for field in kernel.sizes:
        setattr(state, field, sizes[field])
    return state


def _library(source: Path, name: str, command: list[str]) -> tuple[bytes, Any]:
    """The field list and the run function of ``source``'s library, loaded from the cache
    when it is there whole (its SHA-256 beside it), else compiled and written there (both
    files atomically), so that a truncated file is never loaded."""
    made_by = [*command, platform.machine(), platform.system()]
    key = hashlib.sha256(
        b"\0".join([source.read_bytes(), *(part.encode() for part in made_by)])
    ).hexdigest()[:16]
    folder, temporary = _cache()
    library, digest = folder / f"{name}-{key}.so", folder / f"{name}-{key}.sha256"
    try:
        if not _whole(library, digest):
            built = _compile(command, source, name)
            write_outputs([(library, built), (digest, hashlib.sha256(built).hexdigest())])
        try:
            loaded = ctypes.CDLL(str(library))
            fields = ctypes.c_char.in_dll(loaded, f"{name}_fields")
            return ctypes.string_at(ctypes.addressof(fields)), getattr(loaded, f"{name}_run")
        except (OSError, AttributeError, ValueError) as exc:
            raise ImportError(
                f"the compiled {name} kernel {library} does not load: {exc}"
            ) from None
    finally:
        if temporary:  # a loaded library stays mapped without its file
            shutil.rmtree(folder, ignore_errors=True)


def _compiler() -> list[str]:
    """The C compiler's command: ``$CC``, else the first of ``cc``, ``gcc``, ``clang``."""
    given = shlex.split(os.environ.get("CC", ""))
    found = given or [path for path in map(shutil.which, ("cc", "gcc", "clang")) if path][:1]
    if not found:
        raise ImportError("no C compiler found (set CC, or install cc, gcc or clang)")
    if shutil.which(found[0]) is None:
        raise ImportError(f"the C compiler $CC={found[0]!r} was not found")
    return found


def _whole(library: Path, digest: Path) -> bool:
    try:
        return hashlib.sha256(library.read_bytes()).hexdigest() == digest.read_text().strip()
    except OSError:
        return False


def _compile(command: list[str], source: Path, name: str) -> bytes:
    """The shared library ``command`` makes of ``source``, built in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="optsched-cc-") as work:
        out = Path(work) / f"{name}.so"
        try:
            done = subprocess.run(
                [*command, "-o", str(out), str(source), "-lm"],
                capture_output=True,
                text=True,
                timeout=300,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ImportError(
                f"compiling the {name} kernel with {command[0]} failed: {exc}"
            ) from None
        if done.returncode:
            raise ImportError(
                f"compiling the {name} kernel with {' '.join(command)} failed: "
                + " ".join(done.stderr.split())[-400:]
            )
        return out.read_bytes()


def _cache() -> tuple[Path, bool]:
    """The folder for compiled loops: the user's cache (``$XDG_CACHE_HOME/optsched``, else
    ``~/.cache/optsched``), else a private temporary one (True: removed once the library is
    loaded, compiled again by each process)."""
    folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "optsched"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder, False
    except OSError:
        pass
    return Path(tempfile.mkdtemp(prefix="optsched-")), True
