"""The registry of methods, keyed by (kind, name): :func:`register`, :func:`get_method`,
:func:`methods`, :func:`load_plugin`, and :func:`prepare`, the look-up every verb starts with.

Kinds (:data:`KINDS`): ``solve`` (offline scheduling), ``simulate`` (online policies),
``place`` (Liquid placement), so names of different kinds never clash; what a method of each
kind is called with is in :mod:`optsched.contracts`.

One mechanism registers every method: importing a module runs its :func:`register`
decorators. The built-in methods are the modules of the method packages
(:data:`METHOD_PACKAGES`), imported on the first look-up of their kind; a plug-in is a module
imported by :func:`load_plugin` (``--plugin``) or named by an entry point of the
``optsched.methods`` group of an installed package, imported on the first look-up.

Plug-in guarantees (docs/promises.md): **import failures are bad input.** Anything a plug-in
module raises while it is imported (any exception, a ``SyntaxError``, and ``SystemExit`` or
``KeyboardInterrupt`` raised by its own code), and a module that does not exist, is an
:class:`~optsched.errors.InputError` naming the module and what it raised (type and first line
of the message); the methods it registered before failing are unregistered again. A broken
``optsched.methods`` entry point is reported the same way, naming the entry point. What
happens while a method runs is :mod:`optsched.runtime`'s.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import os
import pkgutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, overload

from optsched.budget import check_time_limit
from optsched.contracts import PlaceMethod, PolicyFactory, SolveMethod
from optsched.errors import InputError, UnknownNameError
from optsched.limits import check_seed
from optsched.options import Options
from optsched.result import KINDS, Kind
from optsched.runtime import method_running, raised, start_up
from optsched.schedule import MODES

#: The packages whose modules are the built-in methods of each kind (every module of a kind's
#: packages is imported on the first look-up of that kind; those that define methods
#: register them).
METHOD_PACKAGES: dict[Kind, tuple[str, ...]] = {
    "solve": ("optsched.heuristics", "optsched.exact"),
    "simulate": ("optsched.online",),
    "place": ("optsched.placement",),
}

F = TypeVar("F", bound=Callable[..., Any])
S = TypeVar("S", bound=SolveMethod[Any])
P = TypeVar("P", bound=PolicyFactory[Any])
L = TypeVar("L", bound=PlaceMethod[Any])


@dataclass(frozen=True)
class MethodInfo(Generic[F]):
    """A registered method: its kind, name and function (of the kind's contract,
    :mod:`optsched.contracts`), which modes it supports, its options class."""

    kind: Kind
    name: str
    func: F
    description: str
    modes: frozenset[str] = frozenset(MODES)
    #: The method's typed options (:mod:`optsched.options`).
    options: type[Options] = Options
    #: The module that registered the method when it is not part of optsched: the plug-in
    #: being imported (``--plugin``, an entry point), else the function's own module.
    plugin: str | None = None
    #: The time limit (s) a run gets when none is given (None: unlimited).
    default_time_limit: float | None = None
    #: Solver packages the method imports on its first run (e.g. ``ortools.sat.python
    #: .cp_model``): imported before the clock starts, the one-off cost reported apart.
    imports: tuple[str, ...] = ()

    def start_up(self) -> float:
        """Import :attr:`imports` (a no-op once imported); return the seconds it took, the
        one-off start-up that a run's ``runtime_s`` excludes (``extra["startup_s"]``)."""
        return start_up(self, self.imports)

    @property
    def label(self) -> str:
        """How messages name the method: ``method 'NAME' (plug-in MODULE)``."""
        kind = "" if self.kind == "solve" else f"{self.kind} "
        origin = f" (plug-in {self.plugin})" if self.plugin else ""
        return f"{kind}method {self.name!r}{origin}"

    @property
    def params(self) -> Mapping[str, str]:
        """Each ``--param`` key the method accepts → its help text."""
        return self.options.describe()

    def parse_options(self, params: Mapping[str, Any]) -> Options:
        """The method's options of ``params`` (text or typed values), before it runs:
        InputError naming the method and an unknown key or a value its option refuses."""
        with method_running(self):
            try:
                return self.options.parse(params, owner=self.label)
            except InputError as exc:
                if str(exc).startswith(self.label):
                    raise
                raise InputError(f"{self.label}: {exc}") from None

    def check_mode(self, mode: str) -> None:
        """Refuse a mode the method does not support (InputError naming it)."""
        if mode not in self.modes:
            raise InputError(
                f"method {self.name!r} does not support mode {mode!r} "
                f"(supports: {', '.join(sorted(self.modes))}; choose the mode "
                "with --mode, or mode= in Python)"
            )


_REGISTRY: dict[tuple[Kind, str], MethodInfo[Any]] = {}
#: The kinds whose built-in methods are imported, and whether the entry points are.
_loaded: set[Kind | Literal["plugins"]] = set()
#: Plug-in modules being imported now (innermost last); register() records the innermost.
_importing: list[str] = []


def _origin(func: Callable[..., Any]) -> str | None:
    if _importing:
        return _importing[-1]
    module = getattr(func, "__module__", None)
    if not isinstance(module, str) or module == "optsched" or module.startswith("optsched."):
        return None
    return module


@overload
def register(
    name: str,
    *,
    description: str,
    kind: Literal["solve"] = ...,
    modes: Iterable[str] = ...,
    options: type[Options] | None = ...,
    replace: bool = ...,
    default_time_limit: float | None = ...,
    imports: Iterable[str] = ...,
) -> Callable[[S], S]: ...
@overload
def register(
    name: str,
    *,
    description: str,
    kind: Literal["simulate"],
    modes: Iterable[str] = ...,
    options: type[Options] | None = ...,
    replace: bool = ...,
    default_time_limit: float | None = ...,
    imports: Iterable[str] = ...,
) -> Callable[[P], P]: ...
@overload
def register(
    name: str,
    *,
    description: str,
    kind: Literal["place"],
    modes: Iterable[str] = ...,
    options: type[Options] | None = ...,
    replace: bool = ...,
    default_time_limit: float | None = ...,
    imports: Iterable[str] = ...,
) -> Callable[[L], L]: ...
def register(
    name: str,
    *,
    description: str,
    kind: Kind = "solve",
    modes: Iterable[str] = MODES,
    options: type[Options] | None = None,
    replace: bool = False,
    default_time_limit: float | None = None,
    imports: Iterable[str] = (),
) -> Callable[[F], F]:
    """Decorator registering ``func`` as method ``name`` of ``kind``, called as the kind's
    contract says (:mod:`optsched.contracts`).

    ``options`` is the method's frozen dataclass of typed options (:mod:`optsched.options`;
    default: none); ``--param`` keys it does not declare are refused, and values are converted
    and checked before the method runs; the method receives them typed
    (``context.options``). A ``place`` method's options subclass
    :class:`~optsched.placement.CostOptions` (the cost model's ``cost``, ``lambda``,
    ``cross_domain``, ``contention``; the default) and it receives the cost model as
    ``context.model``. ``default_time_limit`` (seconds) is the limit a method runs under when
    the caller gives none (exact methods and relaxations, which may otherwise run for hours).
    ``imports`` names solver packages the method loads on its first run; they are imported
    before its clock starts, so a result's ``runtime_s`` excludes that one-off start-up,
    reported as ``extra["startup_s"]``.

    Examples
    --------
    >>> from optsched.contracts import MethodOutput
    >>> @register("do-nothing", description="finds nothing", replace=True)
    ... def do_nothing(instance, context):
    ...     return MethodOutput()
    """
    if kind not in KINDS:
        raise InputError(f"method kind must be one of {KINDS}, got {kind!r}")
    modes = frozenset(MODES) if kind == "place" else frozenset(modes)  # place: no modes
    if not modes or not modes <= set(MODES):
        raise InputError(f"method {name!r}: modes must be a non-empty subset of {MODES}")
    check_time_limit(default_time_limit)

    if kind == "place":  # every place method takes the cost model's parameters
        from optsched.placement.cost import CostOptions

        options = options or CostOptions
        if not issubclass(options, CostOptions):
            raise InputError(f"place method {name!r}: options must subclass CostOptions")
    options = options or Options
    if not (isinstance(options, type) and issubclass(options, Options)):
        raise InputError(f"method {name!r}: options must be a subclass of Options")
    if any(isinstance(v, dataclasses.Field) for v in vars(options).values()):
        raise TypeError(
            f"method {name!r}: options class {options.__name__} must be "
            "decorated with @dataclass(frozen=True)"
        )
    options.describe()  # every field declared with an option helper (TypeError otherwise)

    def decorate(func: F) -> F:
        if (kind, name) in _REGISTRY and not replace:
            raise InputError(f"a {kind} method named {name!r} is already registered")
        _REGISTRY[kind, name] = MethodInfo(
            kind,
            name,
            func,
            description,
            modes,
            options,
            _origin(func),
            default_time_limit,
            tuple(imports),
        )
        return func

    return decorate


def _import_plugin(module: str, load: Callable[[], Any], what: str) -> None:
    """Run ``load`` (the import of plug-in ``module``); any BaseException it raises becomes
    an InputError starting with ``what``, and the methods ``module`` registered are dropped."""
    before = dict(_REGISTRY)
    _importing.append(module)
    try:
        load()
    except BaseException as exc:
        for key, info in list(_REGISTRY.items()):
            if info is not before.get(key) and info.plugin == module:
                if key in before:
                    _REGISTRY[key] = before[key]
                else:
                    del _REGISTRY[key]
        raise InputError(f"{what}: {raised(exc)}") from exc
    finally:
        _importing.pop()


def builtin_modules(kind: Kind | None = None) -> list[str]:
    """Every module of :data:`METHOD_PACKAGES` (of one kind) but private ones (a name that
    starts with ``_``, which register nothing: e.g. the compiled engine's driver): the
    built-in methods are registered by importing them."""
    found = []
    for package in (p for k in KINDS if kind in (None, k) for p in METHOD_PACKAGES[k]):
        path = importlib.import_module(package).__path__
        found += [
            m.name
            for m in pkgutil.walk_packages(path, package + ".")
            if not m.name.rpartition(".")[2].startswith("_")
        ]
    return found


def _load(kind: Kind | None = None) -> None:
    """Import the built-in methods of ``kind`` (None: every kind), and the entry points'
    plug-ins (once, after every built-in, so that a plug-in never takes a built-in's name;
    a failure is reported again on the next call)."""

    def builtins(kinds: tuple[Kind, ...]) -> None:
        for k in kinds:
            if k not in _loaded:
                for module in builtin_modules(k):
                    importlib.import_module(module)
                _loaded.add(k)

    builtins(KINDS if kind is None else (kind,))
    if "plugins" in _loaded:
        return
    _loaded.add("plugins")
    try:
        points = entry_points(group="optsched.methods")
        if points:
            builtins(KINDS)
        for ep in points:
            _import_plugin(
                ep.module,
                ep.load,
                f"cannot load plug-in entry point {ep.name!r} ({ep.value}) of "
                "group optsched.methods",
            )
    except BaseException:
        _loaded.discard("plugins")  # report the failure again on the next call
        raise


def load_plugin(module: str) -> None:
    """Import ``module`` so that the methods it registers become available.

    ``module`` is a module name (importable from the current directory too, as with
    ``python -m``) or the path of a Python file (``path/to/my_methods.py``), which is
    imported as a module named after the file. Loading a module or file again does nothing.

    Raises
    ------
    InputError
        The module or file does not exist, or importing it raised anything at all (including
        ``SyntaxError``, ``SystemExit`` and ``KeyboardInterrupt``): one line naming the module
        and what it raised. Methods it registered before failing are unregistered.
    """
    _load()  # every built-in first: a plug-in's name may not take a built-in's
    if module.endswith(".py") or os.sep in module or "/" in module:
        path = Path(module)
        if not path.is_file():
            raise InputError(f"cannot import plug-in file {module!r}: no such file")
        name = path.stem
        if not name.isidentifier():
            raise InputError(
                f"cannot import plug-in file {module!r}: {name!r} is not a valid module name"
            )
        loaded = sys.modules.get(name)
        if loaded is not None:  # imported once already (like a module name), or a clash
            if Path(getattr(loaded, "__file__", None) or "").resolve() == path.resolve():
                return
            raise InputError(
                f"cannot import plug-in file {module!r}: a module named {name!r} "
                "is already imported; rename the file"
            )
        _import_plugin(
            name, lambda: _import_file(name, path), f"cannot import plug-in file {module!r}"
        )
        return
    _import_plugin(
        module, lambda: _import_here(module), f"cannot import plug-in module {module!r}"
    )


#: On a plug-in module imported from a file: the source it ran (read once, so that what is
#: recorded and sent to workers is what ran).
PLUGIN_SOURCE = "__optsched_source__"


def _import_file(name: str, path: Path) -> None:
    """Import the file ``path`` as module ``name`` (kept in ``sys.modules``, so pickling
    its objects for worker processes works), reading its text once: the module keeps it as
    :data:`PLUGIN_SOURCE`. The file's folder is searched first while it runs, so it imports
    the modules beside it as a script does."""
    source = path.read_text()
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ImportError(f"not a Python module: {path}")
    module = importlib.util.module_from_spec(spec)
    setattr(module, PLUGIN_SOURCE, source)
    sys.modules[name] = module
    folder = str(path.resolve().parent)  # its own folder first, as for a script
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        exec(compile(source, str(path), "exec"), module.__dict__)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        if added:
            sys.path.remove(folder)


def _import_here(module: str) -> None:
    """Import ``module`` with the current directory searched first, as ``python -m`` does."""
    here = os.getcwd()
    added = here not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, here)
    try:
        importlib.import_module(module)
    finally:
        if added:
            sys.path.remove(here)


def methods(kind: Kind | None = None) -> list[MethodInfo[Any]]:
    """Registered methods (of one kind), sorted by kind and name."""
    _load(kind)
    return [info for key, info in sorted(_REGISTRY.items()) if kind in (None, info.kind)]


@overload
def get_method(name: str, kind: Literal["solve"] = ...) -> MethodInfo[SolveMethod[Any]]: ...
@overload
def get_method(name: str, kind: Literal["simulate"]) -> MethodInfo[PolicyFactory[Any]]: ...
@overload
def get_method(name: str, kind: Literal["place"]) -> MethodInfo[PlaceMethod[Any]]: ...
@overload
def get_method(name: str, kind: Kind) -> MethodInfo[Any]: ...
def get_method(name: str, kind: Kind = "solve") -> MethodInfo[Any]:
    """The registered method ``name`` of ``kind`` (``solve``, ``simulate`` or ``place``):
    its description, modes, default time limit and options class (``.options``, e.g.
    ``get_method("hlas", "simulate").options(starvation=0)``).

    Raises
    ------
    UnknownNameError
        No such method of that kind (the message lists the known ones, and says when the
        name is a method of another kind, else how to load one's own: ``--plugin``).
    """
    _load(kind)
    try:
        return _REGISTRY[kind, name]
    except KeyError:
        _load()  # to say when the name is a method of another kind
        known = ", ".join(i.name for i in methods(kind)) or "none"
        other = [k for k in KINDS if (k, name) in _REGISTRY]
        close = difflib.get_close_matches(name, [i.name for i in methods(kind)], n=1)
        hint = (
            f"; {name!r} is a {other[0]} method"
            if other
            else f"; did you mean {close[0]!r}?"
            if close
            else "; a method of your own: load its file or module with --plugin"
        )
        raise UnknownNameError(f"unknown {kind} method {name!r}{hint} (known: {known})") from None


@dataclass(frozen=True)
class Prepared(Generic[F]):
    """A method ready to run: its registration, the time limit that applies, its typed
    options and the same as ``KEY=VALUE`` text (recorded in the Result)."""

    info: MethodInfo[F]
    time_limit: float | None
    options: Options
    params: dict[str, str]


@overload
def prepare(
    method: str,
    kind: Literal["solve"],
    *,
    seed: int,
    time_limit: float | None,
    params: Mapping[str, Any] | Options | None,
) -> Prepared[SolveMethod[Any]]: ...
@overload
def prepare(
    method: str,
    kind: Literal["simulate"],
    *,
    seed: int,
    time_limit: float | None,
    params: Mapping[str, Any] | Options | None,
) -> Prepared[PolicyFactory[Any]]: ...
@overload
def prepare(
    method: str,
    kind: Literal["place"],
    *,
    seed: int,
    time_limit: float | None,
    params: Mapping[str, Any] | Options | None,
) -> Prepared[PlaceMethod[Any]]: ...
def prepare(
    method: str,
    kind: Kind,
    *,
    seed: int,
    time_limit: float | None,
    params: Mapping[str, Any] | Options | None,
) -> Prepared[Any]:
    """What every verb does before it runs a method: look it up, check the seed, the time
    limit (None: the method's default) and the options (InputError naming what is wrong).

    ``params`` are the method's options object, or a mapping of ``KEY=VALUE`` text or typed
    values (``{"workers": "2"}``, ``{"workers": 2}``, ``{"share": True}``), read by
    :meth:`~optsched.options.Options.parse`. The Result records the options in canonical text
    (:meth:`~optsched.options.Options.to_params`): a mapping's keys, each value as its option
    writes it (``{"workers": 2}`` and ``{"workers": "02"}`` both as ``{"workers": "2"}``), and
    an options object's fields that differ from their defaults."""
    info = get_method(method, kind)
    check_seed(seed)
    check_time_limit(time_limit)
    limit = info.default_time_limit if time_limit is None else time_limit
    if isinstance(params, Options):
        if type(params) is not info.options:
            raise InputError(
                f"{info.label} takes {info.options.__name__}, not {type(params).__name__}"
            )
        return Prepared(info, limit, params, params.to_params())
    if params is not None and not isinstance(params, Mapping):
        raise InputError(
            f"params must be a mapping or {info.options.__name__}, got "
            f"{type(params).__name__} {params!r}"
        )
    options = info.parse_options(params or {})
    return Prepared(info, limit, options, options.to_params(list(params or {})))
