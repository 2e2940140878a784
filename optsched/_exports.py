"""Lazy package attributes (PEP 562): a package names what it exports and the module each
comes from; a module is imported on the first use of one of its names, so importing the
package (and the command line's start-up) stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> None:
    """Make ``exports`` (attribute → the module that defines it under the same name) lazy
    attributes of ``package``, each imported on first use and then cached.

    An export may share its name with a submodule (``optsched.solve``, the function, and
    ``optsched/solve.py``): importing the submodule does not replace the export, which stays
    the attribute, as an eager ``from optsched.solve import solve`` in the package would
    have it."""
    module = sys.modules[package]

    class LazyPackage(ModuleType):
        def __getattr__(self, name: str) -> Any:
            source = exports.get(name)
            if source is None:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            value = getattr(importlib.import_module(source), name)
            self.__dict__[name] = value
            return value

        def __setattr__(self, name: str, value: Any) -> None:
            if (
                name in exports
                and isinstance(value, ModuleType)
                and value.__name__ == f"{package}.{name}"
            ):
                return  # the import system binding a submodule: the export keeps the name
            super().__setattr__(name, value)

        def __dir__(self) -> list[str]:
            return sorted(set(self.__dict__) | set(exports))

    module.__class__ = LazyPackage
