"""The one result type of every method, whatever the verb (docs/formats.md, *Result*)."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from optsched.schedule import Schedule

if TYPE_CHECKING:
    from optsched.fairness import FairnessSummary
    from optsched.online.engine import Simulation
    from optsched.placement.model import Placement

#: The kinds of method (:mod:`optsched.registry`), one per verb: what produced a Result.
Kind = Literal["solve", "simulate", "place"]
KINDS: tuple[Kind, ...] = ("solve", "simulate", "place")

#: The mode a placement's Result (and its benchmark record) is in: a placement has no
#: execution mode, and its cost, unlike a sum of times, may be negative.
PLACEMENT_MODE = "placement"

#: What a method produced: a :class:`~optsched.schedule.Schedule` (``solve``, ``simulate``)
#: or a :class:`~optsched.placement.model.Placement` (``place``).
SolutionT = TypeVar("SolutionT")

#: The optimality tolerance of an objective that is not a sum of times (Liquid's placement
#: cost), and of a result that states none: OPTIMAL_TOL · max(1, |objective|). A schedule's
#: tolerance is absolute: Σ w_j × the checker's time tolerance at C_j
#: (:attr:`optsched.check.CheckReport.tolerance`).
OPTIMAL_TOL = 1e-6
OBJECTIVE_NAME = "total_weighted_completion_time"
_RESULT_KEYS = {
    "status",
    "objective",
    "objective_name",
    "bound",
    "gap",
    "absolute_gap",
    "tolerance",
    "runtime_s",
    "method",
    "mode",
    "seed",
    "params",
    "metrics",
}


class Status(StrEnum):
    """Outcome of a method. "No solution" is a status, never an exception."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"
    ERROR = "error"


def relative_tolerance(objective: float) -> float:
    """:data:`OPTIMAL_TOL` · max(1, |objective|): the optimality tolerance of an objective that
    is not a sum of times, such as a placement cost."""
    return OPTIMAL_TOL * max(1.0, abs(objective))


def tolerance_of(objective: float, tolerance: float | None) -> float:
    """``tolerance`` when one is stated (a schedule's, absolute), else
    :func:`relative_tolerance` of ``objective``."""
    return relative_tolerance(objective) if tolerance is None else tolerance


def gap(
    objective: float | None, bound: float | None, tolerance: float | None = None
) -> float | None:
    """(objective − bound) / objective, exactly; ``None`` when either is missing or
    objective ≤ 0. An objective within ``tolerance`` of its bound (:func:`is_optimal`) has
    gap 0, never a residue like 1e-16 or a negative one."""
    if objective is None or bound is None or objective <= 0:
        return None
    if abs(objective - bound) <= tolerance_of(objective, tolerance):
        return 0.0  # optimal; a bound above the objective beyond it shows as a negative gap
    return (objective - bound) / objective


def absolute_gap(
    objective: float | None, bound: float | None, tolerance: float | None = None
) -> float | None:
    """objective − bound (0 when :func:`is_optimal`, a bound above the objective by less than
    ``tolerance`` included); ``None`` when either is missing. The gap of objectives that may
    be ≤ 0, such as Liquid's placement cost, where a ratio means nothing."""
    if objective is None or bound is None:
        return None
    if abs(objective - bound) <= tolerance_of(objective, tolerance):
        return 0.0
    return objective - bound


def is_optimal(
    objective: float | None, bound: float | None, tolerance: float | None = None
) -> bool:
    """Optimal (docs/model.md): objective − bound ≤ ``tolerance``, the absolute tolerance of
    the objective (a schedule's: Σ w_j × the checker's time tolerance at C_j, see
    :attr:`optsched.check.CheckReport.tolerance`); without one, :func:`relative_tolerance`
    (placement costs)."""
    if objective is None or bound is None:
        return False
    return objective - bound <= tolerance_of(objective, tolerance)


@dataclass(frozen=True)
class Result(Generic[SolutionT]):
    """What a method produced, as ``--json`` prints it: ``solve``, ``simulate`` and
    ``place`` all return one.

    ``solution`` is the checked schedule (``solve``, ``simulate``) or placement (``place``),
    or ``None`` when there is none (or a simulation did not record it); :attr:`schedule` and
    :attr:`placement` name it by kind. ``objective`` and ``metrics`` are the checker's,
    recomputed from the solution (a simulation run without recording its schedule reports
    its own streamed ones); ``bound`` is a certified lower bound on the objective (or
    ``None``); ``simulation`` holds a simulation's own details (events, completion times,
    the realised instance); ``extra`` holds method-specific fields such as a guarantee,
    and the ones every method may set are typed properties (:attr:`bound_source`,
    :attr:`time_limit`, :attr:`startup_s`, :attr:`interrupted`). ``tolerance`` is the
    objective's absolute optimality tolerance (:func:`is_optimal`): the checker's for a
    schedule; None means :func:`relative_tolerance` (placement costs).
    """

    status: Status
    method: str
    mode: str
    objective: float | None
    bound: float | None
    runtime_s: float
    seed: int | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    metrics: Mapping[str, Any] | None = None
    solution: SolutionT | None = field(default=None, repr=False)
    extra: Mapping[str, Any] = field(default_factory=dict)
    objective_name: str = OBJECTIVE_NAME
    simulation: Simulation | None = field(default=None, repr=False)
    tolerance: float | None = None
    #: Which verb produced it (``solve``, ``simulate`` or ``place``).
    kind: Kind = "solve"

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        if not (self.runtime_s >= 0 and math.isfinite(self.runtime_s)):
            raise ValueError(f"runtime_s must be finite and >= 0, got {self.runtime_s!r}")
        has_schedule = self.status in (Status.OPTIMAL, Status.FEASIBLE)
        if has_schedule and self.objective is None:
            raise ValueError(f"status {self.status} needs an objective")
        if self.status is Status.OPTIMAL and not is_optimal(
            self.objective, self.bound, self.tolerance
        ):
            raise ValueError("status optimal needs objective - bound within tolerance")
        clash = sorted(set(self.extra) & _RESULT_KEYS)
        if clash:
            raise ValueError(f"method-specific field {clash[0]!r} clashes with a Result field")
        for name in ("objective", "bound", "tolerance"):  # plain floats, never NumPy scalars
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, float(value))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and deep-copy) through plain dicts: the read-only views do not pickle."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(params=dict(self.params), extra=dict(self.extra))
        return (_rebuild, (type(self), values))

    @property
    def schedule(self) -> Schedule | None:
        """The solution when it is a schedule (``solve``, ``simulate``)."""
        return self.solution if isinstance(self.solution, Schedule) else None

    @property
    def placement(self) -> Placement | None:
        """The solution when it is a placement (``place``)."""
        from optsched.placement.model import Placement

        return self.solution if isinstance(self.solution, Placement) else None

    @property
    def gap(self) -> float | None:
        """The relative gap (:func:`gap`); ``None`` for a placement, whose cost can be zero or
        negative (see :attr:`absolute_gap`)."""
        return None if self.kind == "place" else gap(self.objective, self.bound, self.tolerance)

    @property
    def absolute_gap(self) -> float | None:
        """objective − bound (:func:`absolute_gap`): the gap of every kind of result,
        placements included."""
        return absolute_gap(self.objective, self.bound, self.tolerance)

    @property
    def regret(self) -> float | None:
        """An online result's certified regret: its objective over the best lower bound on
        every schedule of its instance computed for it (``extra["regret_bound"]``, from
        ``extra["regret_source"]``: the critical path, the fluid work bound, the capacity
        LP or, on a trace too large for it, the LP on parts, or the Lagrangian bound), so at
        least its true ratio to the optimum; None elsewhere."""
        value = self.extra.get("regret")
        return None if value is None else float(value)

    @property
    def regret_jct(self) -> float | None:
        """An online result's certified regret on the total weighted JCT Σ w_j (C_j − a_j):
        its value over the regret bound less Σ w_j a_j (at least the policy's true ratio to
        the least total weighted JCT); None elsewhere."""
        value = self.extra.get("regret_jct")
        return None if value is None else float(value)

    @property
    def bound_source(self) -> str | None:
        """Which bound the gap uses: ``method`` (the method's certified bound) or
        ``critical_path`` (``solve``); None where a result has no such choice."""
        return self.extra.get("bound_source")

    @property
    def fairness(self) -> FairnessSummary:
        """The checked schedule's fairness and tail metrics (finish-time fairness ρ, Jain's
        index, slowdown, JCT percentiles; :mod:`optsched.fairness`), typed."""
        from optsched.fairness import FairnessSummary

        return FairnessSummary.of(self.metrics)

    @property
    def time_limit(self) -> float | None:
        """The time limit (s) the run had, the method's default when none was given (None:
        unlimited)."""
        return self.extra.get("time_limit")

    @property
    def startup_s(self) -> float:
        """The one-off import of the method's solver packages (s), which ``runtime_s``
        excludes; 0 when they were already imported."""
        return float(self.extra.get("startup_s", 0.0))

    @property
    def interrupted(self) -> bool:
        """Whether a Ctrl-C stopped the method (its best solution is returned)."""
        return bool(self.extra.get("interrupted", False))

    def to_dict(self) -> dict[str, Any]:
        """The Result JSON object (the schedule itself is written separately)."""
        out = {
            "status": str(self.status),
            "objective": self.objective,
            "objective_name": self.objective_name,
            "bound": self.bound,
            "gap": self.gap,
            "absolute_gap": self.absolute_gap,
            "tolerance": self.tolerance,
            "runtime_s": self.runtime_s,
            "method": self.method,
            "mode": self.mode,
            "seed": self.seed,
            "params": dict(self.params),
            "metrics": None if self.metrics is None else _plain(dict(self.metrics)),
        }
        out.update(_plain(dict(self.extra)))
        return out


def _rebuild(cls: type[Result[Any]], values: dict[str, Any]) -> Result[Any]:
    return cls(**values)


def _plain(value: Any) -> Any:
    """``value`` with NumPy scalars inside dicts, lists and tuples as Python numbers."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    np = sys.modules.get("numpy")  # not imported: no value can be a NumPy one
    return value.item() if np is not None and isinstance(value, np.generic) else value
