"""Plug-ins that travel with benchmark runs.

A run carries each plug-in file it needs as :class:`PluginCode`: its module name, the source
it ran in the runner and that source's SHA-256. A worker installs the plug-in from that
source, so it needs neither the file nor a shared filesystem, whatever the path given on the
command line (a relative path works from any directory); and records name the code that ran
(``plugins`` in a record; a plug-in method's run key holds its hash, so editing the plug-in
never reuses the records of another version). The one-file modules beside the plug-in that
it imports (its helpers: loaded modules from the plug-in's own folder) travel and are hashed
with it; a one-file module given by name travels by content too. A package or a dotted
module name travels by name: the workers must be able to import it, and its hash covers the
runner's copy of its ``.py`` files, which nothing checks on the workers.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from optsched.errors import InputError
from optsched.registry import PLUGIN_SOURCE, load_plugin

#: The attribute that records, on a loaded plug-in module, the hash of the code it ran.
_HASH = "__optsched_sha256__"

#: One install at a time per process (a Dask worker runs several threads).
_installing = threading.Lock()


@dataclass(frozen=True)
class PluginCode:
    """A plug-in as runs carry it: its module ``name``, its ``source`` (None: installed by
    name) and ``sha256``, the hash of its code."""

    name: str
    source: str | None
    sha256: str
    #: The one-file modules beside it that it imported: (module name, source).
    helpers: tuple[tuple[str, str], ...] = ()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def capture(module: str) -> PluginCode:
    """Load the plug-in ``module`` (a file path or a module name, as ``--plugin`` takes it)
    and return its code (InputError as :func:`~optsched.registry.load_plugin`): for a file,
    the text the import ran."""
    load_plugin(module)
    is_file = module.endswith(".py") or "/" in module or "\\" in module
    name = Path(module).stem if is_file else module
    loaded = sys.modules[name]
    source = getattr(loaded, PLUGIN_SOURCE, None)  # a file: the text its import ran
    file = getattr(loaded, "__file__", None)
    package = getattr(loaded, "__path__", None)
    if source is None and package is None and "." not in name and file:
        source = Path(file).read_text()  # a one-file module by name: sent by content too
    if source is not None:
        helpers = _helpers(name, Path(module if is_file else str(file)).resolve().parent)
        digest = _digest(source + "".join(f"\n{n}\n{text}" for n, text in helpers))
        setattr(loaded, _HASH, digest)
        return PluginCode(name, source, digest, helpers)
    # a package or a dotted module: the workers import it by name
    files = sorted(f for p in package for f in Path(p).rglob("*.py")) if package else []
    if not files and file:
        files = [Path(file)]
    return PluginCode(name, None, _digest("".join(f"{f.name}\n{f.read_text()}" for f in files)))


def _helpers(name: str, folder: Path) -> tuple[tuple[str, str], ...]:
    """(name, source) of the loaded one-file modules from ``folder`` other than ``name``."""
    found = []
    for other, loaded in list(sys.modules.items()):
        file = getattr(loaded, "__file__", None)
        if other == name or "." in other or hasattr(loaded, "__path__") or not file:
            continue
        path = Path(file)
        if path.suffix == ".py" and path.resolve().parent == folder:
            found.append((other, path.read_text()))
    return tuple(sorted(found))


def install(code: PluginCode) -> None:
    """Make the plug-in's methods available in this process, from its source (by name when
    it has none). Nothing to do when this version is loaded already (installed before, or
    captured by the runner this worker was forked from); another version of the same module
    in this process is refused (InputError saying what to do)."""
    with _installing:
        if code.source is None:
            load_plugin(code.name)
            return
        loaded = sys.modules.get(code.name)
        if loaded is not None:  # installed before, or a worker forked from the runner
            if getattr(loaded, _HASH, None) != code.sha256:
                raise InputError(
                    f"plug-in {code.name!r}: this worker runs another version of it; restart "
                    "the workers (Dask: client.restart()) and rerun with --retry-errors"
                )
            return
        folder = Path(tempfile.mkdtemp(prefix="optsched-plugin-"))
        try:
            for helper, text in code.helpers:  # beside it, as in the runner's folder
                (folder / f"{helper}.py").write_text(text)
            path = folder / f"{code.name}.py"
            path.write_text(code.source)
            load_plugin(str(path))
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # the module runs from memory
        setattr(sys.modules[code.name], _HASH, code.sha256)
