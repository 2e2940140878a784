"""Certified regret of an online run: a lower bound on Σ w_j C_j over every schedule of the
instance it ran on, with the arrivals known (the offline optimum can see them; no online
policy can do better than it), and the policy's ratio to that bound. Nothing heavy is
imported until a bound is computed (the CLI reads the levels at start-up).

Four levels, each including the ones before (docs/model.md, *regret*):

- ``critical-path``: every job alone on the fastest GPUs (:mod:`optsched.critical_path`);
- ``fluid`` (default): the better of that and the fluid work bound at GPU-type prices
  (:mod:`optsched.exact.fluid`), any size (seconds at 82,247 jobs);
- ``capacity``: also the class-capacity LP (:mod:`optsched.exact.capacity`) on
  :data:`CAPACITY_INTERVALS` intervals (fewer for traces of many jobs,
  :func:`capacity_intervals`) up to the run's makespan (placed where the run's
  checked schedule keeps weight waiting, :func:`~optsched.exact.capacity.open_weight_edges`;
  uniform without one), within a time limit (its
  status says whether it counted: an LP stopped or interrupted gives none). Where the LP is
  too large to build, the same LP on parts of the longest jobs instead (below);
- ``lagrangian``: also, within the same time limit again, the Lagrangian bound of GPU
  capacity over time (:mod:`optsched.exact.lagrangian`: the time-indexed relaxation, which
  sees that a job's rounds are discrete and a GPU runs one task at a time), its multipliers
  found by column generation on its default grid (:mod:`optsched.exact.columns`; in gang
  mode with the conflict cuts where the master can keep them), started at the LP's prices,
  its first paths taken from a checked schedule's rounds and its deadlines from that
  schedule's objective. Where many short jobs queue in a burst it is the stronger; on jobs
  of many rounds, the LP.

For a trace too large for one LP, :func:`parts_bound` solves it on parts of the jobs (e.g.
:func:`long_job_parts`) and adds the parts up. All of them are for the basic model.

Every value is certified: the LP's from its dual solution, never from the solver's label.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from numbers import Real
from typing import TYPE_CHECKING, Any

from optsched.budget import Budget, check_time_limit
from optsched.errors import InputError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from optsched.exact.capacity import CapacityLP
    from optsched.instance import Instance
    from optsched.schedule import Schedule

#: The bound levels, weakest first.
REGRET_BOUNDS = ("none", "critical-path", "fluid", "capacity", "lagrangian")

#: The levels that solve the class-capacity LP.
LP_LEVELS = ("capacity", "lagrangian")

#: The fields of :attr:`RegretBound.parts` (and of a run's ``extra``) that hold a bound,
#: weakest first.
BOUND_FIELDS = (
    "bound_critical_path",
    "bound_fluid",
    "bound_capacity",
    "bound_capacity_parts",
    "bound_lagrangian",
)

#: Intervals of the capacity LP's grid, and the fewest a large trace gets
#: (:func:`capacity_intervals`).
CAPACITY_INTERVALS = 100
MIN_CAPACITY_INTERVALS = 25

#: Most (job, GPU type, interval) columns of the capacity LP before its grid is coarsened:
#: on the 2-core reference machine, two runs at a time, the LP of 525 jobs on four types
#: (212,100 of them) solves in about two minutes, and of 1,500 jobs on 100 intervals
#: (606,000) not in five.
CAPACITY_COLUMNS = 300_000

#: Seconds the capacity LP may take by default.
CAPACITY_TIME_LIMIT = 60.0

#: Seconds per mode ``optsched compare --offline`` gives its offline method by default.
OFFLINE_TIME_LIMIT = 60.0

#: Where the capacity LP is too large: the share of the jobs, longest critical path first,
#: that :func:`regret_bound` puts in parts, and the jobs per part.
PARTS_LONGEST_SHARE = 0.1
PARTS_SIZE = 500


@dataclass(frozen=True)
class RegretBound:
    """The best certified lower bound on Σ w_j C_j found (``value``, ``source``: the bound
    it came from) and every part computed (``parts``: ``bound_critical_path``,
    ``bound_fluid``, ``bound_capacity``; ``capacity_status`` says why the LP gave none and
    ``capacity_grid`` which grid it had (``open weight, 100 intervals`` or ``uniform, 100
    intervals``); where it was too large, no grid (none is built), ``bound_capacity_parts``
    and ``capacity_parts_status``; at the ``lagrangian`` level ``bound_lagrangian`` and
    ``lagrangian_status``, how it stopped or why it gave none)."""

    value: float
    source: str
    parts: dict[str, float | str] = field(default_factory=dict)


def capacity_intervals(instance: Instance) -> int:
    """The intervals of the capacity LP's grid for ``instance``: :data:`CAPACITY_INTERVALS`,
    or fewer (at least :data:`MIN_CAPACITY_INTERVALS`) so that the LP holds at most
    :data:`CAPACITY_COLUMNS` (job, GPU type, interval) columns. An LP too large at the full
    count keeps it, so that the level falls back to parts as before."""
    import numpy as np

    from optsched.exact.capacity import capacity_lp_too_large

    if capacity_lp_too_large(instance, CAPACITY_INTERVALS):
        return CAPACITY_INTERVALS
    pairs = int(np.isfinite(instance.class_compute).sum())
    return max(MIN_CAPACITY_INTERVALS, min(CAPACITY_INTERVALS, CAPACITY_COLUMNS // pairs - 1))


def check_level(level: str) -> str:
    """``level`` if it is one of :data:`REGRET_BOUNDS`, else an InputError listing them."""
    if level not in REGRET_BOUNDS:
        raise InputError(
            f"unknown regret bound {level!r}: choose one of {', '.join(REGRET_BOUNDS)}"
        )
    return level


def regret_bound(
    instance: Instance,
    level: str = "fluid",
    *,
    objective: float | None = None,
    makespan: float | None = None,
    time_limit: float | None = CAPACITY_TIME_LIMIT,
    progress: Callable[[int, int, str, float], None] | None = None,
    parts_size: int = PARTS_SIZE,
    schedule: Schedule | None = None,
) -> RegretBound | None:
    """The best lower bound of ``level`` (module doc) on every schedule of ``instance``;
    None for ``none``. For ``capacity``: ``objective`` is that of a checked schedule of the
    instance (it bounds each C_j of an optimal one by objective / w_j; without it, the weight
    of every job at the :func:`~optsched.exact.bounds.horizon`), ``makespan`` ends the
    LP's grid (default the horizon), ``schedule`` (that checked schedule, optional) places
    its intervals by the weight it keeps waiting (uniform without it), and ``time_limit``
    bounds the LP's build and solve.
    For ``lagrangian``, the Lagrangian bound too (``bound_lagrangian``;
    ``lagrangian_status`` says how it stopped, or why it gave none: it needs ``objective``
    and an LP that is not too large), priced up to ``makespan``, within ``time_limit`` again;
    ``schedule`` gives its first paths. Where the LP is too
    large to build (a trace of many jobs), the bound is instead :func:`parts_bound` on the
    :data:`PARTS_LONGEST_SHARE` of the jobs with the longest critical paths, in arrival
    order, ``parts_size`` per part (default :data:`PARTS_SIZE`; larger parts see more of the
    contention between the jobs, for a larger LP each), within the same time limit
    (``bound_capacity_parts``; ``capacity_parts_status`` says how many parts were solved),
    with ``progress`` called after each part as :func:`parts_bound` does. An ``objective``
    or ``makespan`` that no schedule of the instance has (not a finite number, below the
    instance's critical-path bound or longest critical path, or an objective below what the
    Lagrangian bound certifies) is an InputError."""
    if check_level(level) == "none":
        return None
    check_time_limit(time_limit, "time_limit")
    check_parts_size(parts_size)
    _basic_model(instance)
    from optsched.critical_path import critical_path, critical_path_bound
    from optsched.exact.fluid import fluid_bound

    path = critical_path(instance)
    parts: dict[str, float | str] = {"bound_critical_path": critical_path_bound(instance, path)}
    _check_run(objective, "objective", float(parts["bound_critical_path"]), "critical-path bound")
    _check_run(makespan, "makespan", float(path.max()), "longest critical path")
    if level != "critical-path":
        parts["bound_fluid"] = fluid_bound(instance, path=path).bound
    if level in LP_LEVELS:
        from optsched.ect import completions
        from optsched.exact import capacity
        from optsched.exact.bounds import horizon

        weight = math.fsum(job.weight for job in instance.jobs)
        end = horizon(instance)
        grid_end = makespan if makespan is not None else end
        intervals, edges = capacity_intervals(instance), None
        too_large = capacity.capacity_lp_too_large(instance, intervals)
        if schedule is not None and not too_large:  # fine where the schedule keeps jobs open
            done = completions(instance, schedule)
            edges = capacity.open_weight_edges(instance, done, grid_end, intervals)
        lp = capacity.capacity_bound(
            instance,
            objective if objective is not None else weight * end,
            grid_end,
            intervals,
            time_limit=time_limit,
            edges=edges,
        )
        parts["capacity_status"] = lp.status
        if too_large:  # no LP: its longest jobs in parts
            cut = _longest_parts(instance, path.tolist(), parts_size)
            found = parts_bound(instance, cut, time_limit=time_limit, progress=progress)
            parts["bound_capacity_parts"] = found.value
            parts["capacity_parts_status"] = _parts_status(found.statuses, len(cut))
        else:
            grid = "uniform" if edges is None else "open weight"
            parts["capacity_grid"] = f"{grid}, {intervals} intervals"
            if lp.bound is not None:
                parts["bound_capacity"] = lp.bound
        if level == "lagrangian":
            parts.update(_lagrangian(instance, objective, grid_end, lp, time_limit, schedule))
    values = bound_levels(parts)
    best = max(values, key=lambda k: values[k])
    return RegretBound(values[best], best, parts)


def bound_levels(fields: Mapping[str, Any]) -> dict[str, float]:
    """Each bound that ``fields`` hold (:data:`BOUND_FIELDS`: a RegretBound's ``parts``, or
    a run's ``extra``) by its name, the ``source`` a RegretBound gives it (``critical-path``,
    ``capacity-parts``, ...)."""
    return {
        key.removeprefix("bound_").replace("_", "-"): float(fields[key])
        for key in BOUND_FIELDS
        if fields.get(key) is not None
    }


#: How far below the critical path a run's objective or makespan may lie (relative): a
#: checked schedule lies above it within the checker's tolerance, far less than this.
_RUN_SLACK = 1e-6


def _check_run(value: float | None, name: str, least: float, what: str) -> None:
    """An InputError unless ``value`` (a run's ``name``, optional) is a finite number at
    least ``least`` (the instance's ``what``), as that of any schedule of the instance is."""
    if value is None:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, Real)
        or not math.isfinite(value)
        or value < least - _RUN_SLACK * max(1.0, abs(least))
    ):
        raise InputError(
            f"{name} must be a schedule's: a finite number at least the instance's {what} "
            f"({least:g}), got {value!r}"
        )


def _lagrangian(
    instance: Instance,
    objective: float | None,
    end: float,
    lp: CapacityLP,
    time_limit: float | None,
    schedule: Schedule | None,
) -> dict[str, float | str]:
    """The Lagrangian part of :func:`regret_bound`, priced up to ``end`` (the LP's grid's):
    ``bound_lagrangian`` where it gave one, and ``lagrangian_status``."""
    if objective is None:
        return {"lagrangian_status": "no checked schedule"}
    if lp.status in ("too large", "interrupted"):  # a trace's programme is too large too;
        return {"lagrangian_status": lp.status}  # a Ctrl-C stops the level
    from optsched.exact.columns import (
        ColumnBound,
        MasterTooLarge,
        column_bound,
        column_time_unit,
    )
    from optsched.exact.lagrangian import AboveUpper, BelowCriticalPath, TooLarge

    def bound(cuts: bool) -> ColumnBound:
        return column_bound(
            instance,
            objective,
            column_time_unit(instance, end, None),
            cuts=cuts,
            priced_until=end,
            budget=Budget(time_limit),
            start=schedule,
            prices=lp.prices,
        )

    try:
        try:
            # relaxed mode without the conflict cuts: their exact pricing of staggered rounds
            # would spend the time limit on small windows (as in `cpsat`)
            found = bound(cuts=instance.mode == "gang")
        except MasterTooLarge:  # gang mode: without the conflict cuts, a master of blocks
            found = bound(cuts=False)
    except TooLarge as err:  # more (row, step) or (round, step) cells than it prices
        return {"lagrangian_status": f"too large ({err.size})"}  # time_unit: no option here
    except BelowCriticalPath:  # an objective within the checker's tolerance below it
        return {"lagrangian_status": "objective below the critical path"}
    except AboveUpper:  # a bound above it: no schedule has it (every caller here checks one)
        raise InputError(
            f"objective must be a schedule's: the Lagrangian bound certifies more than "
            f"{objective!r}"
        ) from None
    out: dict[str, float | str] = {"lagrangian_status": found.stopped}
    if found.bound is not None:
        out["bound_lagrangian"] = found.bound
    return out


@dataclass(frozen=True)
class PartsBound:
    """The outcome of :func:`parts_bound`: ``value``, a certified lower bound on Σ w_j C_j,
    and per part solved its LP's status and its ``gains`` over the part's critical paths (0
    where the LP gave no bound)."""

    value: float
    statuses: tuple[str, ...]
    gains: tuple[float, ...]
    interrupted: bool = False  # a Ctrl-C stopped it: the parts after the last one counted


def check_parts_size(size: object) -> None:
    """An InputError unless ``size`` (jobs per part) is an integer ≥ 1."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InputError(f"a part must hold at least one job, got size={size!r}")


def long_job_parts(instance: Instance, longer_than: float, size: int) -> list[list[int]]:
    """The indices of the jobs whose critical path exceeds ``longer_than`` seconds after
    their arrival, in arrival order, cut into consecutive parts of ``size`` jobs (the last
    one shorter): the jobs that contend for days, in parts small enough for the LP."""
    from optsched.critical_path import critical_path

    _basic_model(instance)
    check_parts_size(size)
    if not (isinstance(longer_than, int | float) and 0 <= longer_than < math.inf):
        raise InputError(f"longer_than must be a finite time >= 0 s, got {longer_than!r}")
    path = critical_path(instance)
    long = [j for j, job in enumerate(instance.jobs) if path[j] - job.arrival > longer_than]
    return _in_arrival_parts(instance, long, size)


def parts_bound(
    instance: Instance,
    parts: list[list[int]],
    *,
    intervals: int = CAPACITY_INTERVALS,
    time_limit: float | None = CAPACITY_TIME_LIMIT,
    progress: Callable[[int, int, str, float], None] | None = None,
) -> PartsBound:
    """A lower bound on Σ w_j C_j of every schedule of ``instance`` for traces too large for
    one class-capacity LP: for each part (disjoint lists of job indices), the LP bound of
    those jobs alone on ``intervals`` up to their ECT schedule's makespan, plus w_j × its
    critical path for every job in no part. The parts are solved in order within
    ``time_limit`` seconds in all (None: unlimited); those left when it runs out count their
    critical paths (status ``time limit``).

    Valid in both modes: restricted to some of its jobs, any schedule is a schedule of those
    jobs alone (dropping tasks only frees GPUs; the kept jobs' rounds and arrivals are
    unchanged), so an optimal schedule pays for each part at least that part's own optimum,
    which its LP bounds from below, and for every other job at least its critical path. A
    part whose LP gives no bound (too large, out of time, interrupted) counts its critical
    paths. Jobs that contend gain only when they share a part. ``progress(k, parts, status,
    gain)`` is called after each part; a Ctrl-C during a part's LP stops there, with the
    parts solved so far (``interrupted``). Basic model only: GPU sharing and placement
    factors (instance@2) can make jobs faster together than alone."""
    from dataclasses import replace

    from optsched.critical_path import critical_path
    from optsched.ect import incumbent
    from optsched.exact.capacity import capacity_bound, check_intervals

    _basic_model(instance)
    check_intervals(intervals)
    check_time_limit(time_limit, "parts_bound")
    seen: set[int] = set()
    for k, part in enumerate(parts):
        if not part:
            raise InputError(f"parts: part {k} is empty")
        for j in part:
            if isinstance(j, bool) or not isinstance(j, int):
                raise InputError(f"parts: job indices are integers, got {j!r}")
            if not 0 <= j < instance.n_jobs or j in seen:
                raise InputError(
                    f"parts: job index {j} is out of range or in two parts "
                    f"(the instance has {instance.n_jobs} jobs)"
                )
            seen.add(j)
    weight = [job.weight for job in instance.jobs]
    floor = [w * c for w, c in zip(weight, critical_path(instance), strict=True)]
    budget = Budget(time_limit)
    statuses, gains = [], []
    for part in parts:
        if budget.expired():  # no time for this part's LP: its critical paths count
            statuses.append("time limit")
            gains.append(0.0)
        else:
            alone = replace(instance, jobs=tuple(instance.jobs[j] for j in part))
            start = incumbent(alone)
            lp = capacity_bound(
                alone, start.objective, start.makespan, intervals, time_limit=budget.left()
            )
            statuses.append(lp.status)
            own = math.fsum(floor[j] for j in part)
            gains.append(max(0.0, lp.bound - own) if lp.bound is not None else 0.0)
        if progress is not None:
            progress(len(gains), len(parts), statuses[-1], gains[-1])
        if statuses[-1] == "interrupted":
            break
    value = math.fsum(floor) + math.fsum(gains)
    return PartsBound(value, tuple(statuses), tuple(gains), "interrupted" in statuses)


def _longest_parts(
    instance: Instance, path: Sequence[float], size: int = PARTS_SIZE
) -> list[list[int]]:
    """The :data:`PARTS_LONGEST_SHARE` of the jobs of longest critical path (``path``, the
    completion bounds; ties by index), in arrival order, in parts of ``size``."""
    jobs = instance.jobs
    longest = sorted(range(len(jobs)), key=lambda j: (jobs[j].arrival - path[j], j))
    return _in_arrival_parts(instance, longest[: math.ceil(PARTS_LONGEST_SHARE * len(jobs))], size)


def _in_arrival_parts(instance: Instance, jobs: list[int], size: int) -> list[list[int]]:
    """``jobs`` (indices) by arrival (ties by index), cut into consecutive parts of ``size``
    (the last one shorter)."""
    ordered = sorted(jobs, key=lambda j: (instance.jobs[j].arrival, j))
    return [ordered[k : k + size] for k in range(0, len(ordered), size)]


def _parts_status(statuses: Sequence[str], parts: int) -> str:
    """``3 of 17 parts solved (13 time limit, 1 interrupted)``: the parts whose LP gave a
    bound, then the others by status (``not reached`` after a Ctrl-C)."""
    counts = Counter(status for status in statuses if status != "optimal")
    if len(statuses) < parts:
        counts["not reached"] = parts - len(statuses)
    others = ", ".join(f"{n} {status}" for status, n in counts.items())
    solved = parts - sum(counts.values())
    return f"{solved} of {parts} parts solved" + (f" ({others})" if others else "")


def _basic_model(instance: Instance) -> None:
    """An InputError for an instance the bounds do not model (instance@2's GPU sharing and
    placement factors can make jobs faster together than alone, or than the profiles say)."""
    if instance.needs_cluster_model:
        raise InputError(
            f"{instance.name!r}: the lower bounds are for the basic model; this instance "
            "has phases, GPU sharing or placement factors (instance@2)"
        )


def regret_ratio(value: float, least: float) -> float:
    """``value`` over a positive lower bound ``least`` on it, at least 1: a regret. A bound
    above the value by no more than its float rounding (the callers check that it is within
    the checker's tolerance) leaves the ratio at 1."""
    return max(1.0, value / least)


def ratio_text(ratio: float, digits: int = 4, *, up: bool = True) -> str:
    """``ratio`` (≥ 1: a regret) rounded *up* to ``digits`` significant digits (beyond its
    float noise), so that a printed regret still bounds the true one: 1.000234 is
    ``1.001``, never ``1`` (which would read as proved optimal). ``up=False`` rounds down,
    for a regret the true one is at least (over a schedule's objective)."""
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(ratio)))
    if not up:
        return f"{math.floor(ratio * scale + 1e-9) / scale:.{digits}g}"
    return f"{math.ceil(ratio * scale - 1e-9) / scale:.{digits}g}"


def weighted_arrivals(instance: Instance) -> float:
    """Σ w_j a_j: every schedule's objective minus its total weighted JCT."""
    return math.fsum(job.weight * job.arrival for job in instance.jobs)
