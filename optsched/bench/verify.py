"""Verifying a submitted solution against an instance set's best known values.

:func:`verify` finds the solution's instance in the set (by the name the file gives), checks
it with the independent checker (:func:`~optsched.check.check` for a schedule,
:func:`~optsched.placement.check.check_placement` for a placement, under the cost its
``params`` name) and compares its checked objective with the manifest's best known objective
and best bound for that mode (a placement: that cost form; relaxed mode: a gang schedule's
objective too, gang mode: a relaxed bound too, as the benchmark library shows them). It
never changes the manifest: a result enters the library by a recorded run (``optsched bench
run``), which keeps its provenance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optsched.bench.manifest import Manifest, best_bound, best_key, best_objective
from optsched.errors import InputError
from optsched.result import PLACEMENT_MODE, absolute_gap, gap, tolerance_of


@dataclass(frozen=True)
class Verification:
    """What :func:`verify` found. ``objective`` is the checker's (None when the solution is
    infeasible: ``violations`` then counts what the checker refused, ``first`` names the
    first); ``best_objective``/``best_bound`` are the manifest's for ``key`` with the runs
    that found them (None when unknown; relaxed: perhaps a gang schedule's objective, gang:
    perhaps a relaxed bound); ``improves`` whether the objective beats the best
    known one beyond the optimality tolerance (True when none is known)."""

    instance: str
    key: str
    feasible: bool
    objective: float | None
    violations: int
    first: str | None
    best_objective: float | None
    best_objective_by: Mapping[str, Any] | None
    best_bound: float | None
    best_bound_by: Mapping[str, Any] | None
    improves: bool

    @property
    def gap(self) -> float | None:
        """The objective's relative gap to the best bound (None for a placement, whose cost
        can be negative, or when either is missing)."""
        if self.key.startswith(PLACEMENT_MODE):
            return None
        return gap(self.objective, self.best_bound)

    @property
    def absolute_gap(self) -> float | None:
        """objective − best bound."""
        return absolute_gap(self.objective, self.best_bound)

    def to_dict(self) -> dict[str, Any]:
        """The JSON object ``optsched bench verify --json`` prints."""
        return {
            "instance": self.instance,
            "key": self.key,
            "feasible": self.feasible,
            "objective": self.objective,
            "violations": self.violations,
            "first_violation": self.first,
            "best_objective": self.best_objective,
            "best_objective_by": self.best_objective_by,
            "best_bound": self.best_bound,
            "best_bound_by": self.best_bound_by,
            "improves": self.improves,
            "gap": self.gap,
            "absolute_gap": self.absolute_gap,
        }


def verify(
    solution_path: str | Path, instance_set: str | Path, params: Mapping[str, str] | None = None
) -> Verification:
    """Check the schedule or placement file ``solution_path`` on its instance in the set
    ``instance_set`` (a folder written by ``optsched bench gen``) and compare it with the best
    known values. ``params`` are a placement's cost options (``cost``, ``lambda``,
    ``cross_domain``, ``contention``; :class:`~optsched.placement.cost.CostOptions`).

    Raises
    ------
    InputError
        An unreadable file, a file that is neither a schedule nor a placement, an instance the
        set does not hold, a solution of the other kind than the set's instances, or cost
        options with a schedule.
    """
    from optsched.check import check
    from optsched.io import load_any
    from optsched.placement.check import check_placement
    from optsched.placement.cost import CostOptions
    from optsched.placement.model import Placement, PlacementInstance
    from optsched.schedule import Schedule

    manifest = Manifest.of_set(instance_set)
    solution = load_any(solution_path)
    if not isinstance(solution, Schedule | Placement):
        raise InputError(f"{solution_path}: not a schedule or a placement")
    entry = manifest.instances.get(solution.instance)
    if entry is None:
        raise InputError(
            f"{solution_path}: instance {solution.instance!r} is not in the set {instance_set}"
        )
    instance = load_any(manifest.path.parent / entry["file"])
    params = dict(params or {})
    if isinstance(solution, Schedule):
        if params:
            raise InputError("cost options (--param) apply to placements, not schedules")
        if isinstance(instance, PlacementInstance):
            raise InputError(
                f"{solution_path}: a schedule, but {solution.instance!r} is a placement instance"
            )
        report = check(instance, solution)
        objective, violations, tolerance = report.objective, report.violations, report.tolerance
        key = best_key({"mode": solution.mode or instance.mode})
    else:
        if not isinstance(instance, PlacementInstance):
            raise InputError(
                f"{solution_path}: a placement, but {solution.instance!r} is a scheduling instance"
            )
        options = CostOptions.parse(params, owner="the placement cost")
        placed = check_placement(instance, solution, options.cost_model())
        violations = placed.violations
        objective = None if placed.cost is None or violations else placed.cost.total
        tolerance = None
        key = best_key({"mode": PLACEMENT_MODE, "params": options.to_params()})
    feasible = objective is not None and not violations
    known, known_by = best_objective(entry["best"], key)
    bound, bound_by = best_bound(entry["best"], key)
    improves = feasible and (
        known is None
        or (objective is not None and known - objective > tolerance_of(known, tolerance))
    )
    return Verification(
        solution.instance,
        key,
        feasible,
        objective if feasible else None,
        len(violations),
        violations[0].message if violations else None,
        known,
        known_by,
        bound,
        bound_by,
        bool(improves),
    )
