"""One entry point, :func:`solve`, over a registry of methods keyed by (kind, name).

Methods register themselves with :func:`register`; users add their own the same way from
their code, or through the ``optsched.methods`` entry-point group of an installed package (each
entry point names a module to import). Kinds: ``solve`` (offline scheduling), ``simulate``
(online policies), ``place`` (Liquid placement), so names of different kinds never clash.

Every schedule a method returns goes through the independent checker; the Result's objective
and metrics are the checker's, and its bound is the best of the method's own certified bound
and the critical-path bound (both kept in ``extra`` as ``bound_method`` and
``bound_critical_path``).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from types import MappingProxyType
from typing import Any

from optsched.check import check
from optsched.errors import InputError, OptschedError, UnknownNameError
from optsched.exact.bounds import critical_path_bound
from optsched.instance import MODES, Instance
from optsched.result import OPTIMAL_TOL, Result, Status, is_optimal
from optsched.schedule import Schedule

KINDS = ("solve", "simulate", "place")

#: Modules whose import registers the built-in methods.
BUILTIN_MODULES = (
    "optsched.heuristics.list_scheduling",
    "optsched.heuristics.hare",
    "optsched.exact.cpsat",
    "optsched.exact.milp",
    "optsched.exact.lp",
    "optsched.online.policies",
    "optsched.online.liquid",
    "optsched.online.baselines",
    "optsched.placement.heuristics",
    "optsched.placement.exact",
    "optsched.placement.gga",
)


@dataclass(frozen=True)
class SolveContext:
    """What a method is given besides the instance (already in ``mode``)."""

    mode: str
    time_limit: float | None = None
    seed: int = 0
    params: Mapping[str, str] = field(default_factory=dict)
    hint: Schedule | None = None


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


@dataclass(frozen=True)
class MethodInfo:
    """A registered method: what it is, which modes it supports, its parameters."""

    kind: str
    name: str
    func: Callable[..., Any]
    description: str
    modes: frozenset[str] = frozenset(MODES)
    params: Mapping[str, str] = field(default_factory=dict)

    def check_params(self, params: Mapping[str, str]) -> None:
        """Refuse a ``--param`` key the method does not accept (InputError naming it)."""
        for key in params:
            if key not in self.params:
                known = ", ".join(sorted(self.params)) or "none"
                raise InputError(f"method {self.name!r} has no parameter {key!r} "
                                 f"(known: {known})")

    def check_mode(self, mode: str) -> None:
        """Refuse a mode the method does not support (InputError naming it)."""
        if mode not in self.modes:
            raise InputError(f"method {self.name!r} does not support mode {mode!r} "
                             f"(supports: {', '.join(sorted(self.modes))})")


_REGISTRY: dict[tuple[str, str], MethodInfo] = {}
_loaded = False


def register(
    name: str,
    *,
    description: str,
    kind: str = "solve",
    modes: Iterable[str] = MODES,
    params: Mapping[str, str] | None = None,
    replace: bool = False,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator registering ``func`` as method ``name`` of ``kind``.

    ``params`` maps each accepted ``--param`` key to a one-line description; other keys are
    refused. A ``solve`` method is called as ``func(instance, context) -> MethodOutput``.

    Examples
    --------
    >>> from optsched.solve import MethodOutput, register
    >>> @register("do-nothing", description="finds nothing", replace=True)
    ... def do_nothing(instance, context):
    ...     return MethodOutput()
    """
    if kind not in KINDS:
        raise InputError(f"method kind must be one of {KINDS}, got {kind!r}")
    modes = frozenset(modes)
    if not modes or not modes <= set(MODES):
        raise InputError(f"method {name!r}: modes must be a non-empty subset of {MODES}")

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        if (kind, name) in _REGISTRY and not replace:
            raise InputError(f"a {kind} method named {name!r} is already registered")
        _REGISTRY[kind, name] = MethodInfo(kind, name, func, description, modes,
                                           MappingProxyType(dict(params or {})))
        return func

    return decorate


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    for ep in entry_points(group="optsched.methods"):
        ep.load()


def load_plugin(module: str) -> None:
    """Import ``module`` so that the methods it registers become available."""
    _load()
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise InputError(f"cannot import plug-in module {module!r}: {exc}") from None


def methods(kind: str | None = None) -> list[MethodInfo]:
    """Registered methods (of one kind), sorted by kind and name."""
    _load()
    return [info for key, info in sorted(_REGISTRY.items()) if kind in (None, info.kind)]


def get_method(name: str, kind: str = "solve") -> MethodInfo:
    """The registered method ``name`` of ``kind``."""
    _load()
    try:
        return _REGISTRY[kind, name]
    except KeyError:
        known = ", ".join(i.name for i in methods(kind)) or "none"
        raise UnknownNameError(f"unknown {kind} method {name!r} (known: {known})") from None


def checked(instance: Instance, schedule: Schedule, method: str
            ) -> tuple[float, dict[str, Any]]:
    """The checker's objective and metrics of a method's schedule; an infeasible or
    incomplete schedule is a bug in the method and raises :class:`OptschedError`, never
    repaired."""
    report = check(instance, schedule)
    if not report.feasible or report.objective is None or report.metrics is None:
        first = report.violations[0].message if report.violations else "incomplete"
        raise OptschedError(f"method {method!r} produced an infeasible schedule "
                            f"({len(report.violations)} violations; first: {first})")
    return report.objective, report.metrics


def solve(
    instance: Instance,
    method: str,
    *,
    mode: str | None = None,
    time_limit: float | None = None,
    seed: int = 0,
    params: Mapping[str, str] | None = None,
    hint: Schedule | None = None,
) -> Result:
    """Solve ``instance`` with a registered ``solve`` method and check the schedule.

    Raises
    ------
    InputError
        Unknown method, a mode the method does not support, an unknown parameter, or an
        instance that is invalid in the requested mode.
    OptschedError
        If the method returns a schedule the checker rejects, or a bound above the checked
        objective: both are bugs in the method, never silently repaired.
    """
    info = get_method(method, "solve")
    mode = mode or instance.mode
    info.check_mode(mode)
    if instance.cluster:
        raise InputError(f"method {method!r} does not model phases, GPU sharing or placement "
                         "factors (instance@2); simulate a cluster policy such as liquid")
    params = dict(params or {})
    info.check_params(params)
    if time_limit is not None and not time_limit > 0:
        raise InputError(f"time limit must be > 0, got {time_limit!r}")
    inst = instance if mode == instance.mode else instance.with_mode(mode)
    ctx = SolveContext(mode, time_limit, seed, MappingProxyType(params), hint)
    started = time.perf_counter()
    out = info.func(inst, ctx)
    runtime = time.perf_counter() - started

    bound = critical_path_bound(inst)
    extra: dict[str, Any] = {**out.extra, "bound_critical_path": bound,
                             "bound_method": out.bound}
    if out.bound is not None:
        bound = max(bound, out.bound)
    common: dict[str, Any] = {"method": method, "mode": mode, "runtime_s": runtime, "seed": seed,
              "params": params, "extra": extra}
    if out.schedule is None:
        status = out.status or Status.UNKNOWN
        if status in (Status.OPTIMAL, Status.FEASIBLE):
            raise OptschedError(f"method {method!r} reported {status} without a schedule")
        return Result(status, objective=None,
                      bound=None if status is Status.INFEASIBLE else bound, **common)

    schedule = Schedule(out.schedule.instance, out.schedule.tasks, mode)
    objective, metrics = checked(inst, schedule, method)
    if bound - objective > OPTIMAL_TOL * max(1.0, abs(objective)):
        raise OptschedError(f"method {method!r}: bound {bound} exceeds the checked "
                            f"objective {objective}")
    status = Status.OPTIMAL if is_optimal(objective, bound) else Status.FEASIBLE
    return Result(status, objective=objective, bound=bound, metrics=metrics,
                  schedule=schedule, **common)
