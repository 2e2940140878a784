"""Plug-ins that travel with benchmark runs.

A run carries each plug-in it needs as :class:`PluginCode`: its module name, its source and
the source's SHA-256. A worker installs the plug-in from that source, so it needs neither the
file nor a shared filesystem, whatever the path given on the command line (a relative path
works from any directory); and records name the code that ran (``plugins`` in a record, and a
plug-in method's run key holds its hash, so editing a plug-in never reuses the records of
another version). A plug-in package (a directory) travels by name: the workers must have it
installed; its hash covers all its ``.py`` files.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from optsched.errors import InputError
from optsched.registry import load_plugin

#: The attribute that records, on a loaded plug-in module, the hash of the code it ran.
_HASH = "__optsched_sha256__"


@dataclass(frozen=True)
class PluginCode:
    """A plug-in as runs carry it: its module ``name``, its ``source`` (None for a package,
    installed by name) and ``sha256``, the hash of its code."""

    name: str
    source: str | None
    sha256: str


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def capture(module: str) -> PluginCode:
    """Load the plug-in ``module`` (a file path or a module name, as ``--plugin`` takes it)
    and return its code (InputError as :func:`~optsched.registry.load_plugin`)."""
    load_plugin(module)
    is_file = module.endswith(".py") or "/" in module or "\\" in module
    name = Path(module).stem if is_file else module
    loaded = sys.modules[name]
    paths = getattr(loaded, "__path__", None)
    if paths is not None:  # a package: by name, hashed over its files
        files = sorted(f for p in paths for f in Path(p).rglob("*.py"))
        text = "".join(f"{f.relative_to(Path(paths[0]))}\n{f.read_text()}" for f in files)
        return PluginCode(name, None, _digest(text))
    file = getattr(loaded, "__file__", None)
    if not file:
        raise InputError(f"plug-in {module!r}: no source file to send to the workers")
    source = Path(file).read_text()
    digest = _digest(source)
    if getattr(loaded, _HASH, digest) != digest:
        raise InputError(
            f"plug-in {module!r} changed since this process loaded it; run again in a new process"
        )
    setattr(loaded, _HASH, digest)  # what this process runs
    return PluginCode(name, source, digest)


def install(code: PluginCode) -> None:
    """Make the plug-in's methods available in this process, from its source (a package: by
    name). Nothing to do when this version is loaded already (installed before, or captured
    by the runner this worker was forked from); another version of the same module in this
    process is refused (InputError)."""
    if code.source is None:
        load_plugin(code.name)
        return
    loaded = sys.modules.get(code.name)
    if loaded is not None:  # installed before, or a worker forked from the runner
        if getattr(loaded, _HASH, None) != code.sha256:
            raise InputError(
                f"plug-in {code.name!r}: another version of it is loaded in this worker"
            )
        return
    folder = Path(tempfile.mkdtemp(prefix="optsched-plugin-"))
    path = folder / f"{code.name}.py"
    path.write_text(code.source)
    load_plugin(str(path))
    setattr(sys.modules[code.name], _HASH, code.sha256)
