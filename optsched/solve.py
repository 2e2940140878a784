"""One entry point, :func:`solve`, over a registry of methods keyed by (kind, name).

Methods register themselves with :func:`register`; users add their own the same way from
their code, or through the ``optsched.methods`` entry-point group of an installed package (each
entry point names a module to import). Kinds: ``solve`` (offline scheduling), ``simulate``
(online policies), ``place`` (Liquid placement), so names of different kinds never clash.

Every schedule a method returns goes through the independent checker; the Result's objective
and metrics are the checker's, and its bound is the best of the method's own certified bound
and the critical-path bound (both kept in ``extra`` as ``bound_method`` and
``bound_critical_path``).

Plug-in guarantees (README, "What optsched promises"):

- **Import failures are bad input.** Anything a plug-in module raises while it is imported
  (any exception, a ``SyntaxError``, and ``SystemExit`` or ``KeyboardInterrupt`` raised by its
  own code), and a module that does not exist, is an :class:`InputError` naming the module
  and what it raised (type and first line of the message); the methods it registered before
  failing are unregistered again. A broken ``optsched.methods`` entry point is reported the
  same way, naming the entry point.
- **A method that raises is a bug in the method.** Anything other than an
  :class:`InputError` escaping a method while it runs, ``SystemExit`` and a
  ``KeyboardInterrupt`` the method raised itself included, becomes a :class:`MethodError`
  (exit 70 on the command line) reading "method 'NAME' (plug-in MODULE) raised TYPE:
  message", never a silent exit with the method's own code. Only a genuine Ctrl-C (SIGINT
  received while the method runs, in the main thread) still aborts as ``KeyboardInterrupt``.
- **What a method returns is validated.** A result of the wrong type, a bound that is not a
  finite number (NaN, ±Infinity), a non-finite checked objective, and a bound above the
  checked objective are refused as :class:`MethodError` naming the method, never reported.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
import numbers
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from optsched.check import check
from optsched.errors import InputError, OptschedError, UnknownNameError
from optsched.exact.bounds import critical_path_bound
from optsched.exact.budget import (
    CTRL_C_SECONDS,
    EXIT_SECONDS,
    MIN_METHOD_SECONDS,
    check_seconds,
)
from optsched.instance import MODES, Instance
from optsched.limits import MAX_VALUE, check_seed
from optsched.options import Options
from optsched.result import _RESULT_KEYS, Result, Status, is_optimal, tolerance_of
from optsched.schedule import Schedule

KINDS = ("solve", "simulate", "place")


class MethodError(OptschedError):
    """A registered method misbehaved: it raised, exited, or returned something invalid (a bug
    in the method, never repaired; exit 70 on the command line). The message names the method
    and, when it came from one, its plug-in module."""


#: Default time limits (s) of the exact methods and of Hare's relaxation (its step 1 takes
#: up to about 3 minutes at the paper's scale on a 2-core machine).
EXACT_TIME_LIMIT, RELAXATION_TIME_LIMIT = 60.0, 300.0

#: Modules whose import registers the built-in methods.
BUILTIN_MODULES = (
    "optsched.heuristics.list_scheduling",
    "optsched.heuristics.hare",
    "optsched.heuristics.priority_search",
    "optsched.heuristics.task_moves",
    "optsched.exact.cpsat",
    "optsched.exact.milp",
    "optsched.exact.lp",
    "optsched.exact.lns",
    "optsched.exact.fluid",
    "optsched.exact.capacity",
    "optsched.online.policies",
    "optsched.online.liquid",
    "optsched.online.baselines",
    "optsched.placement.heuristics",
    "optsched.placement.exact",
    "optsched.placement.gga",
)


@dataclass(frozen=True)
class SolveContext:
    """What a method is given besides the instance (already in ``mode``): ``options`` are
    its typed options (:meth:`options_as`), ``params`` the same as ``KEY=VALUE`` text (what
    the Result records)."""

    mode: str
    time_limit: float | None = None
    seed: int = 0
    params: Mapping[str, str] = field(default_factory=dict)
    hint: Schedule | None = None
    #: Receives the method's progress (:meth:`report`); None: nobody listens.
    progress: Callable[[float | None, float | None], None] | None = None
    options: Options = field(default_factory=Options)

    def options_as(self, cls: type[OptionsT]) -> OptionsT:
        """:attr:`options`, typed as the method's own class ``cls`` (the registry built them
        from that class; a TypeError otherwise)."""
        return options_as(self.options, cls)

    def report(self, incumbent: float | None = None, bound: float | None = None) -> None:
        """Tell the caller the objective of the best schedule found so far and the best
        certified lower bound (either may be None when unknown); cheap, call it freely."""
        if self.progress is not None:
            self.progress(incumbent, bound)


@dataclass(frozen=True)
class MethodOutput:
    """What a method returns.

    ``schedule`` None means no solution; then ``status`` says why (``infeasible`` only when
    proved). ``bound`` must be a certified lower bound on Σ w_j C_j, or None.
    """

    schedule: Schedule | None = None
    bound: float | None = None
    status: Status | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


Method = Callable[[Instance, SolveContext], MethodOutput]
OptionsT = TypeVar("OptionsT", bound=Options)


def options_as(options: Options, cls: type[OptionsT]) -> OptionsT:
    """``options`` typed as ``cls`` (a TypeError when they are of another class)."""
    if not isinstance(options, cls):
        raise TypeError(f"expected {cls.__name__} options, got {type(options).__name__}")
    return options


@dataclass(frozen=True)
class MethodInfo:
    """A registered method: what it is, which modes it supports, its parameters."""

    kind: str
    name: str
    func: Callable[..., Any]
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
        started = time.perf_counter()
        for module in self.imports:
            if module not in sys.modules:
                with method_running(self):
                    importlib.import_module(module)
        return time.perf_counter() - started

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
            raise InputError(f"method {self.name!r} does not support mode {mode!r} "
                             f"(supports: {', '.join(sorted(self.modes))}; choose the mode "
                             "with --mode, or mode= in Python)")


_REGISTRY: dict[tuple[str, str], MethodInfo] = {}
_loaded = False
#: Plug-in modules being imported now (innermost last); register() records the innermost.
_importing: list[str] = []


def _origin(func: Callable[..., Any]) -> str | None:
    if _importing:
        return _importing[-1]
    module = getattr(func, "__module__", None)
    if not isinstance(module, str) or module == "optsched" or module.startswith("optsched."):
        return None
    return module


def _raised(exc: BaseException) -> str:
    """``TYPE: first line of the message`` (just ``TYPE`` without a message)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def register(
    name: str,
    *,
    description: str,
    kind: str = "solve",
    modes: Iterable[str] = MODES,
    options: type[Options] | None = None,
    replace: bool = False,
    default_time_limit: float | None = None,
    imports: Iterable[str] = (),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``func`` as method ``name`` of ``kind``.

    ``options`` is the method's frozen dataclass of typed options (:mod:`optsched.options`;
    default: none); ``--param`` keys it does not declare are refused, and values are converted
    and checked before the method runs. A ``solve`` method is called as ``func(instance,
    context) -> MethodOutput`` and reads its options as ``context.options_as(TheirClass)``. A
    ``place`` method's options subclass :class:`~optsched.placement.CostOptions` (the cost
    model's ``cost``, ``lambda``, ``cross_domain``, ``contention``; the default), it receives
    the cost model as ``context.model`` and is called as ``func(instance, context) ->
    PlaceOutput`` (:mod:`optsched.placement`). A ``simulate`` method is a factory
    ``func(options, seed) -> policy`` (``seed``: the run's, for a policy's random choices).
    ``default_time_limit`` (seconds) is the limit a method runs under when the caller gives none
    (exact methods and relaxations, which may otherwise run for hours). ``imports`` names solver
    packages the method loads on its first run; they are imported before its clock starts, so a
    result's ``runtime_s`` excludes that one-off start-up, reported as ``extra["startup_s"]``.

    Examples
    --------
    >>> from optsched.solve import MethodOutput, register
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
        raise TypeError(f"method {name!r}: options class {options.__name__} must be "
                        "decorated with @dataclass(frozen=True)")
    options.describe()  # every field declared with an option helper (TypeError otherwise)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        if (kind, name) in _REGISTRY and not replace:
            raise InputError(f"a {kind} method named {name!r} is already registered")
        _REGISTRY[kind, name] = MethodInfo(
            kind, name, func, description, modes, options, _origin(func),
            default_time_limit, tuple(imports))
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
        raise InputError(f"{what}: {_raised(exc)}") from exc
    finally:
        _importing.pop()


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    try:
        for module in BUILTIN_MODULES:
            importlib.import_module(module)
        for ep in entry_points(group="optsched.methods"):
            _import_plugin(ep.module, ep.load,
                           f"cannot load plug-in entry point {ep.name!r} ({ep.value}) of "
                           "group optsched.methods")
    except BaseException:
        _loaded = False  # report the failure again on the next call
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
    _load()
    if module.endswith(".py") or os.sep in module or "/" in module:
        path = Path(module)
        if not path.is_file():
            raise InputError(f"cannot import plug-in file {module!r}: no such file")
        name = path.stem
        if not name.isidentifier():
            raise InputError(f"cannot import plug-in file {module!r}: {name!r} is not a "
                             "valid module name")
        loaded = sys.modules.get(name)
        if loaded is not None:  # imported once already (like a module name), or a clash
            if Path(getattr(loaded, "__file__", None) or "").resolve() == path.resolve():
                return
            raise InputError(f"cannot import plug-in file {module!r}: a module named {name!r} "
                             "is already imported; rename the file")
        _import_plugin(name, lambda: _import_file(name, path),
                       f"cannot import plug-in file {module!r}")
        return
    _import_plugin(module, lambda: _import_here(module),
                   f"cannot import plug-in module {module!r}")


def _import_file(name: str, path: Path) -> None:
    """Import the file ``path`` as module ``name`` (kept in ``sys.modules``, so pickling
    its objects for worker processes works)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"not a Python module: {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


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


#: When the last SIGINT seen by :func:`_sigint_watch` arrived (``time.perf_counter()``).
_sigint_at: list[float | None] = [None]


@contextmanager
def _sigint_watch() -> Iterator[list[bool]]:
    """Record whether SIGINT arrives (main thread, Python-level handler only); the handler in
    place is still called, so a genuine Ctrl-C still raises KeyboardInterrupt."""
    hit = [False]
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield hit
        return
    handler = previous

    def on_sigint(signum: int, frame: Any) -> Any:
        hit[0] = True
        _sigint_at[0] = time.perf_counter()
        return handler(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield hit
    finally:
        signal.signal(signal.SIGINT, handler)


@contextmanager
def method_running(info: MethodInfo, passthrough: tuple[type[BaseException], ...] = ()
                   ) -> Iterator[None]:
    """Run the body as ``info``'s method: an :class:`InputError`, a :class:`MethodError`,
    one of ``passthrough`` and a genuine Ctrl-C propagate; anything else raised (``SystemExit``
    and a ``KeyboardInterrupt`` the method raised itself included) becomes a
    :class:`MethodError` "method 'NAME' (plug-in MODULE) raised TYPE: message"."""
    keep: tuple[type[BaseException], ...] = (InputError, MethodError, *passthrough)
    with _sigint_watch() as hit:
        try:
            yield
        except InputError as exc:  # bad input; a plug-in's message is prefixed with its name
            if info.plugin is None or str(exc).startswith(info.label):
                raise
            raise type(exc)(f"{info.label}: {exc}") from exc
        except keep:
            raise
        except KeyboardInterrupt as exc:
            if hit[0]:
                raise
            raise MethodError(f"{info.label} raised {_raised(exc)}") from exc
        except BaseException as exc:
            raise MethodError(f"{info.label} raised {_raised(exc)}") from exc


def finite_bound(info: MethodInfo, bound: Any) -> float | None:
    """A method's bound as a float, or None; anything but a finite real number (a NaN,
    ±Infinity, a string) is a bug in the method (:class:`MethodError` naming it)."""
    if bound is None:
        return None
    if isinstance(bound, bool) or not isinstance(bound, numbers.Real):
        raise MethodError(f"{info.label} returned a bound of type {type(bound).__name__}, "
                          "not a number")
    value = float(bound)
    if not math.isfinite(value):
        raise MethodError(f"{info.label} returned a non-finite bound {value}")
    return value


def check_bound(info: MethodInfo, bound: float | None, objective: float,
                what: str = "objective", tolerance: float | None = None) -> None:
    """Refuse (:class:`MethodError` naming the method) a checked ``objective`` that is not
    finite, or a ``bound`` above it beyond the objective's optimality ``tolerance`` (None:
    :func:`~optsched.result.relative_tolerance`, for placement costs)."""
    if not math.isfinite(objective):
        raise MethodError(f"{info.label}: the checked {what} is not finite ({objective})")
    if bound is not None and bound - objective > tolerance_of(objective, tolerance):
        raise MethodError(f"{info.label}: bound {bound} exceeds the checked {what} "
                          f"{objective}")


def methods(kind: str | None = None) -> list[MethodInfo]:
    """Registered methods (of one kind), sorted by kind and name."""
    _load()
    return [info for key, info in sorted(_REGISTRY.items()) if kind in (None, info.kind)]


def get_method(name: str, kind: str = "solve") -> MethodInfo:
    """The registered method ``name`` of ``kind`` (``solve``, ``simulate`` or ``place``):
    its description, modes, default time limit and options class (``.options``, e.g.
    ``get_method("hlas", "simulate").options(starvation=0)``).

    Raises
    ------
    UnknownNameError
        No such method of that kind (the message lists the known ones).
    """
    _load()
    try:
        return _REGISTRY[kind, name]
    except KeyError:
        known = ", ".join(i.name for i in methods(kind)) or "none"
        other = [k for k in KINDS if (k, name) in _REGISTRY]
        hint = f"; {name!r} is a {other[0]} method" if other else ""
        raise UnknownNameError(f"unknown {kind} method {name!r}{hint} (known: {known})") \
            from None


def checked(instance: Instance, schedule: Schedule, method: str, kind: str = "solve"
            ) -> tuple[float, dict[str, Any], float]:
    """The checker's objective, metrics and optimality tolerance
    (:func:`~optsched.check.objective_tolerance`) of a method's schedule; an infeasible or
    incomplete schedule, or a non-finite objective, is a bug in the method and raises
    :class:`MethodError` (an :class:`OptschedError`), never repaired."""
    info = _REGISTRY.get((kind, method)) or MethodInfo(kind, method, checked, "")
    report = check(instance, schedule)
    if not report.feasible or report.objective is None or report.metrics is None \
            or report.tolerance is None:
        first = report.violations[0].message if report.violations else "incomplete"
        raise MethodError(f"{info.label} produced an infeasible schedule "
                          f"({len(report.violations)} violations; first: {first})")
    check_bound(info, None, report.objective)
    return report.objective, report.metrics, report.tolerance


def check_time_limit(time_limit: Any) -> None:
    """Refuse (InputError naming --time-limit) a time limit that is not a finite number in
    (0, MAX_VALUE]; None means unlimited."""
    if time_limit is None:
        return
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real) \
            or not math.isfinite(float(time_limit)) or not 0 < float(time_limit) <= MAX_VALUE:
        raise InputError(f"--time-limit: time limit must be > 0 and a finite number of "
                         f"seconds at most {MAX_VALUE:g}, got {time_limit!r}")


def check_hint(instance: Instance, hint: Schedule) -> None:
    """Refuse (InputError naming the hint) a hint schedule of another instance, or one naming
    jobs or GPUs the instance does not have."""
    if hint.instance != instance.name:
        raise InputError(f"--hint: the schedule is for instance {hint.instance!r}, not "
                         f"{instance.name!r}")
    for t in hint.tasks:
        if t.job not in instance.job_index:
            raise InputError(f"--hint: unknown job {t.job!r}")
        if t.gpu not in instance.gpu_index:
            raise InputError(f"--hint: unknown GPU {t.gpu!r} (task of job {t.job!r})")


class ProgressLine:
    """Prints a method's progress to ``stream``: at most one line every ``every`` seconds,
    the first once the run has lasted that long, so short runs print nothing. A line
    gives the elapsed time, the incumbent, the best bound (the method's, else the critical
    path ``floor``) and their gap; without a ``floor`` (placement costs) and before any
    bound, the incumbent alone.

    Used as a context manager it is also a heartbeat: a background thread prints the latest
    state every ``every`` seconds even while the method reports nothing (a MILP solver, an
    LP, a long CP-SAT stretch without a new solution)."""

    def __init__(self, stream: Any, floor: float | None, every: float = 5.0) -> None:
        self.stream, self.floor, self.every = stream, floor, every
        self.started = self.last = time.perf_counter()
        self.incumbent: float | None = None
        self.bound = floor
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None

    def __call__(self, incumbent: float | None, bound: float | None) -> None:
        with self._lock:
            if incumbent is not None and math.isfinite(incumbent):
                self.incumbent = incumbent if self.incumbent is None else \
                    min(self.incumbent, incumbent)
            if bound is not None and math.isfinite(bound):
                self.bound = bound if self.bound is None else max(self.bound, bound)
        self._print()

    def _print(self) -> None:
        with self._lock:
            now = time.perf_counter()
            if now - self.last < self.every:
                return
            self.last = now
            elapsed = f"{now - self.started:7.1f} s"
            if self.bound is None:
                line = f"{elapsed}  incumbent " + (
                    "-" if self.incumbent is None else f"{self.incumbent:.6g}")
            elif self.incumbent is None:
                line = f"{elapsed}  bound {self.bound:.6g}"
            else:
                gap = (self.incumbent - self.bound) / max(abs(self.incumbent), 1e-12)
                line = (f"{elapsed}  incumbent {self.incumbent:.6g}  bound "
                        f"{self.bound:.6g}  gap {100 * max(gap, 0.0):.2f} %")
            print(line, file=self.stream, flush=True)

    def __enter__(self) -> ProgressLine:
        def beat() -> None:
            while not self._stopped.wait(max(self.every - (time.perf_counter() - self.last),
                                             0.05)):
                self._print()

        self._beat = threading.Thread(target=beat, name="optsched-progress", daemon=True)
        self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        if self._beat is not None:
            self._beat.join()


@dataclass(frozen=True)
class Prepared:
    """A method ready to run: its registration, the time limit that applies, its typed
    options and the same as ``KEY=VALUE`` text (recorded in the Result)."""

    info: MethodInfo
    time_limit: float | None
    options: Options
    params: dict[str, str]


def prepare(method: str, kind: str, *, seed: int, time_limit: float | None,
            params: Mapping[str, Any] | Options | None) -> Prepared:
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
            raise InputError(f"{info.label} takes {info.options.__name__}, not "
                             f"{type(params).__name__}")
        return Prepared(info, limit, params, params.to_params())
    if params is not None and not isinstance(params, Mapping):
        raise InputError(f"params must be a mapping or {info.options.__name__}, got "
                         f"{type(params).__name__} {params!r}")
    options = info.parse_options(params or {})
    return Prepared(info, limit, options, options.to_params(list(params or {})))


def method_share(time_limit: float | None, started: float | None, reserve: float
                 ) -> float | None:
    """The seconds a method gets of ``time_limit`` (None: unlimited) counted from
    ``started`` (a ``time.perf_counter()`` value; None: now), ``reserve`` seconds kept for
    what follows it; at least :data:`~optsched.exact.budget.MIN_METHOD_SECONDS`, so a
    method always returns its fallback (at worst the ECT schedule) rather than nothing."""
    if time_limit is None:
        return None
    spent = 0.0 if started is None else max(0.0, time.perf_counter() - started)
    return max(time_limit - spent - reserve, MIN_METHOD_SECONDS)


def run_timed(info: MethodInfo, call: Callable[[], Any], *, listener: Any = None,
              start_up: bool = True) -> tuple[Any, float, float]:
    """Run ``call`` (the method) as every verb does: its solver packages imported first
    (unless ``start_up`` is false: the caller did, or chose not to), then timed under
    :func:`method_running` (and a :class:`ProgressLine` heartbeat when ``listener`` is one).
    Returns (its output, runtime_s, startup_s)."""
    startup = info.start_up() if start_up else 0.0
    started = time.perf_counter()
    with method_running(info), listener if isinstance(listener, ProgressLine) else \
            nullcontext():
        out = call()
    return out, time.perf_counter() - started, startup


def solve(
    instance: Instance,
    method: str,
    *,
    mode: str | None = None,
    time_limit: float | None = None,
    seed: int = 0,
    params: Mapping[str, Any] | Options | None = None,
    hint: Schedule | None = None,
    progress: Any = None,
    started: float | None = None,
) -> Result[Schedule]:
    """Solve ``instance`` with a registered ``solve`` method and check the schedule.

    ``time_limit`` (seconds; default: the method's ``default_time_limit``, see
    ``optsched methods``) bounds the whole call, counted from ``started`` (a
    ``time.perf_counter()`` value; default: when ``solve`` is called; the command line
    passes its own start): the method gets what is left once its solver packages are
    imported, less the time checking its schedule is expected to take
    (:func:`~optsched.exact.budget.check_seconds`), never less than
    :data:`~optsched.exact.budget.MIN_METHOD_SECONDS` (then its solver packages are not
    imported first: it has only the time to return its fallback). The limit given is in
    ``extra["time_limit"]``, the method's share in ``extra["method_time_limit"]``.
    ``progress``: a text stream (e.g. ``sys.stderr``) on which a long run prints a line
    every few seconds (elapsed time, incumbent, bound, gap), or a callable
    ``progress(incumbent, bound)`` receiving every report; None: silent.

    Raises
    ------
    InputError
        Unknown method, a mode the method does not support, an unknown parameter, or an
        instance that is invalid in the requested mode.
    MethodError
        (an :class:`OptschedError`) If the method raises anything but an InputError (or
        exits), returns something other than a :class:`MethodOutput`, a schedule the checker
        rejects, a bound that is not a finite number, or a bound above the checked
        objective: all bugs in the method, never silently repaired. The message names the
        method and its plug-in module.
    """
    ready = prepare(method, "solve", seed=seed, time_limit=time_limit, params=params)
    info, time_limit, params = ready.info, ready.time_limit, ready.params
    mode = mode or instance.mode
    info.check_mode(mode)
    if instance.cluster:
        raise InputError(f"method {method!r} does not model phases, GPU sharing or placement "
                         "factors (instance@2); simulate a cluster policy such as liquid")
    if hint is not None:
        check_hint(instance, hint)
    inst = instance if mode == instance.mode else instance.with_mode(mode)
    listener = progress if callable(progress) or progress is None else \
        ProgressLine(progress, critical_path_bound(inst))
    reserve = check_seconds(inst)
    share = method_share(time_limit, started, reserve)
    startup = 0.0  # with no time left, the method returns its fallback without its solvers
    if share is None or share > MIN_METHOD_SECONDS:
        startup = info.start_up()  # before the method's share is worked out
        share = method_share(time_limit, started, reserve)
    ctx = SolveContext(mode, share, seed, MappingProxyType(params), hint, listener,
                       ready.options)
    out, runtime, _ = run_timed(info, lambda: info.func(inst, ctx), listener=listener,
                                start_up=False)
    _check_output(info, out)
    if out.extra.get("interrupted") and out.schedule is not None:
        _in_time_after_ctrl_c(inst)
    method_bound = finite_bound(info, out.bound)

    bound = critical_path_bound(inst)
    extra: dict[str, Any] = {**out.extra, "bound_critical_path": bound,
                             "bound_method": method_bound, "time_limit": time_limit,
                             "method_time_limit": share, "startup_s": startup}
    # the gap is to the better of the two bounds; say which
    extra["bound_source"] = "critical_path"
    if method_bound is not None and method_bound > bound:
        bound, extra["bound_source"] = method_bound, "method"
    common: dict[str, Any] = {"method": method, "mode": mode, "runtime_s": runtime, "seed": seed,
              "params": params, "extra": extra}
    if out.schedule is None:
        status = Status(out.status or Status.UNKNOWN)
        if status in (Status.OPTIMAL, Status.FEASIBLE):
            raise MethodError(f"{info.label} reported {status} without a schedule")
        return Result(status, objective=None,
                      bound=None if status is Status.INFEASIBLE else bound, **common)

    schedule = Schedule(out.schedule.instance, out.schedule.tasks, mode)
    objective, metrics, tolerance = checked(inst, schedule, method)
    check_bound(info, bound, objective, tolerance=tolerance)
    status = Status.OPTIMAL if is_optimal(objective, bound, tolerance) else Status.FEASIBLE
    return Result(status, objective=objective, bound=bound, metrics=metrics,
                  solution=schedule, tolerance=tolerance, **common)


def _in_time_after_ctrl_c(instance: Instance) -> None:
    """After a method stopped by a Ctrl-C: raise KeyboardInterrupt (exit 130) when checking
    its schedule (:func:`~optsched.exact.budget.check_seconds`) would end the command more
    than :data:`~optsched.exact.budget.CTRL_C_SECONDS` after the signal (counted from
    Python's handler; from now when the solver caught it), so a Ctrl-C always ends a run
    within that time: with the best result when it can be checked in time, else without."""
    since = 0.0 if _sigint_at[0] is None else time.perf_counter() - _sigint_at[0]
    if since > CTRL_C_SECONDS:  # an old signal: the solver caught this one
        since = 0.0
    if since + check_seconds(instance) + EXIT_SECONDS > CTRL_C_SECONDS:
        raise KeyboardInterrupt


def _check_output(info: MethodInfo, out: Any) -> None:
    """Refuse (MethodError naming the method) a return value that is not a well-formed
    :class:`MethodOutput`: wrong type, schedule, status or extra."""
    if not isinstance(out, MethodOutput):
        raise MethodError(f"{info.label} returned {type(out).__name__}, not a MethodOutput")
    if out.schedule is not None and not isinstance(out.schedule, Schedule):
        raise MethodError(f"{info.label} returned a schedule of type "
                          f"{type(out.schedule).__name__}, not a Schedule")
    if out.status is not None and out.status not in tuple(Status):
        raise MethodError(f"{info.label} returned status {out.status!r} (one of "
                          f"{', '.join(Status)})")
    if not isinstance(out.extra, Mapping):
        raise MethodError(f"{info.label} returned extra of type {type(out.extra).__name__}, "
                          "not a mapping")
    clash = sorted(_RESULT_KEYS & set(out.extra))
    if clash:
        raise MethodError(f"{info.label} returned extra field {clash[0]!r}, which clashes "
                          "with a Result field")
