"""The integer time grid of the exact models (docs/model.md: rounding is never silent).

Exact engines work in integer numbers of steps of ``time_unit``. Step ``k`` is the time
:func:`to_seconds` (k) seconds: ``k / n`` when ``time_unit`` is the float nearest 1/n for an
integer n (1, 0.5, 0.001, …; then a decimal time on the grid, such as 0.3 on the 1 ms grid, is
*exactly* the float of k steps), else ``k × time_unit``; either is nondecreasing in k.

Rounding is exact at every magnitude (no tolerance that grows with the time, no snapping):

- **up** (:func:`to_steps` ``"up"``): the smallest k with ``to_seconds(k) ≥ t``. An instance
  whose compute, sync and arrival times are rounded up has, read back in seconds, only longer
  times and later arrivals, so its feasible schedules are feasible for the original one: a
  start of k steps is ``to_seconds(k)``, never below an arrival rounded up, and a task's end
  ``to_seconds(k) + compute`` is at most the next start on the grid up to the rounding of that
  one addition (a few ulps of the times, within the checker's tolerance).
- **down**: the largest k with ``to_seconds(k) ≤ t`` (t read as up to :data:`DOWN_ULPS` ulps
  larger, so that float noise of decimal data does not cost a step). The optimum of an
  instance rounded down is a lower bound for the original one (OPT is nondecreasing in every
  time), up to that relative 10⁻¹⁵.

When every time is on the grid (``to_seconds(k) == t``) both coincide: the scaled problem *is*
the original one (:attr:`ScaledInstance.exact`), so a bound proved on it is a bound on the
original.

Weights are scaled to integers by the smallest power of ten s (up to 10⁶) for which every
weight w is the float nearest an integer ÷ s (``round(w·s) / s == w``); weights that no such
factor makes integral are rounded (to nearest, at least 1, when scaling up; down when scaling
down, so the bound stays valid), and then :attr:`ScaledInstance.exact` is false.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from optsched.errors import InputError
from optsched.instance import Instance, Job
from optsched.limits import MAX_VALUE, MIN_POSITIVE
from optsched.schedule import Schedule

_WEIGHT_SCALES = (1, 10, 100, 1000, 10**4, 10**5, 10**6)
#: A grid step more than this many times a compute time is refused (InputError): rounding
#: that time up to one step would be a mistake, not a model.
COARSEST_FACTOR = 1e9


def _reciprocal(time_unit: float) -> float | None:
    """n when ``time_unit`` is the float nearest 1/n for an integer n ≥ 1, else None."""
    if not math.isfinite(time_unit) or time_unit <= 0 or time_unit > 1:
        return None
    n = float(round(1.0 / time_unit))
    return n if n >= 1 and 1.0 / n == time_unit else None


def to_seconds(steps: np.ndarray | float, time_unit: float) -> np.ndarray | float:
    """The time of ``steps`` grid steps in seconds: ``steps / n`` when ``time_unit`` is the
    float nearest 1/n (n an integer), else ``steps × time_unit``. Nondecreasing in ``steps``;
    the inverse of :func:`to_steps` on grid points."""
    n = _reciprocal(time_unit)
    return steps / n if n is not None else steps * time_unit


#: The down rounding reads a time as up to this many ulps larger: float noise of decimal
#: data, such as 2.6999999999999997 = 0.9 × 3 for 2.7, must not cost a whole grid step of a
#: bound (on a coarse LP grid, 10 % of the time).
DOWN_ULPS = 2


def to_steps(
    values: np.ndarray | float, time_unit: float, rounding: str
) -> npt.NDArray[np.float64]:
    """``values`` (seconds) in grid steps, as floats holding integers (inf stays inf).

    ``"up"``: the smallest k with ``to_seconds(k) ≥ value``, exactly, so a time of k steps
    is never below the value. ``"down"``: the largest k with ``to_seconds(k) ≤ value`` +
    :data:`DOWN_ULPS` ulps of the value, and never above the ``"up"`` k (so exactly down but
    for float noise far below any tolerance of the checker). Both hold at any magnitude below
    2⁵⁰ steps (beyond, the callers refuse the grid: MAX_VALUE)."""
    if rounding not in ("up", "down"):
        raise ValueError(f"rounding must be 'up' or 'down', got {rounding!r}")
    x = np.asarray(values, dtype=float)
    finite = np.isfinite(x)
    with np.errstate(invalid="ignore", over="ignore"):
        up = _first_at_least(x, time_unit, finite)
        if rounding == "up":
            return up
        limit = np.where(finite, x + DOWN_ULPS * np.spacing(np.abs(x)), x)
        return np.minimum(up, _first_at_least(limit, time_unit, finite, above=True) - 1)


def _first_at_least(
    x: np.ndarray, time_unit: float, finite: np.ndarray, above: bool = False
) -> npt.NDArray[np.float64]:
    """The smallest k with ``to_seconds(k) ≥ x`` (``> x`` with ``above``) where ``finite``,
    else x itself. x / time_unit is within an ulp or two of the exact quotient, so its ceil
    is off by at most a step or two, corrected here against the conversion the schedules
    use."""

    def reached(k: np.ndarray) -> np.ndarray:
        seconds = to_seconds(k, time_unit)
        return seconds > x if above else seconds >= x

    k = np.where(finite, np.ceil(x / time_unit), x)
    for _ in range(8):
        more = finite & ~reached(k)
        less = finite & ~more & reached(k - 1) & (k - 1 != k)
        if not (more.any() or less.any()):
            break
        k = k + more - less
    return k


def on_grid(values: np.ndarray | float, time_unit: float) -> bool:
    """True when every finite value is exactly the time of a whole number of steps."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    return bool(np.all(to_seconds(to_steps(x, time_unit, "up"), time_unit) == x))


def _times(instance: Instance) -> np.ndarray:
    arrivals = np.array([job.arrival for job in instance.jobs], dtype=float)
    return np.concatenate([instance.compute.ravel(), instance.sync.ravel(), arrivals])


def default_time_unit(instance: Instance) -> float:
    """1 when all times are integers (exactly), else 0.001 (docs/cli.md, ``time_unit``)."""
    return 1.0 if on_grid(_times(instance), 1.0) else 0.001


def time_unit_or_default(instance: Instance, unit: float | None) -> float:
    """The ``time_unit`` option ``unit``, else :func:`default_time_unit`."""
    return default_time_unit(instance) if unit is None else unit


def _weight_scale(weights: np.ndarray) -> tuple[int, bool]:
    for s in _WEIGHT_SCALES:
        if np.all(np.round(weights * s) / s == weights):
            return s, True
    return _WEIGHT_SCALES[-1], False


def integral_bound(instance: Instance, bound: float) -> float:
    """A lower bound ``bound`` on Σ w_j C_j of ``instance`` rounded up to the next multiple
    of 1 / s where every time is a whole second and every weight a multiple of 1 / s (the
    least of :data:`_WEIGHT_SCALES` that holds them): some optimal schedule then starts
    every task at a whole second (shifted left, each start is an arrival or an end), so the
    optimum is such a multiple too. ``bound`` itself elsewhere."""
    scale, exact = _weight_scale(np.array([job.weight for job in instance.jobs], dtype=float))
    if not exact or not on_grid(_times(instance), 1.0):
        return bound
    # ``bound`` ≤ OPT and OPT·s is a float-exact integer, so the product rounds to at most it
    return max(bound, math.ceil(bound * scale) / scale)


@dataclass(frozen=True)
class ScaledInstance:
    """An instance on the integer grid: times in steps of ``time_unit``, integer weights.

    ``instance`` has the same jobs, GPUs and mode; its compute/sync/arrival values are the
    steps of the original times rounded up (``rounding="up"``) or down (``"down"``) by
    :func:`to_steps`, and its weights are the original × ``weight_scale`` (rounded when not
    integral). ``exact`` is true when no value had to be rounded, i.e. the scaled problem
    equals the original one.
    """

    instance: Instance
    time_unit: float
    weight_scale: int
    exact: bool

    def to_seconds(self, value: float) -> float:
        """A time of ``value`` steps in seconds (:func:`to_seconds`). A start of k steps
        read back is at least every time of the original that was rounded up to k or
        fewer steps (so never before an arrival rounded up)."""
        return float(to_seconds(value, self.time_unit))

    def schedule_in_seconds(self, schedule: Schedule) -> Schedule:
        """``schedule`` of :attr:`instance` (starts in steps) with its starts in seconds."""
        return Schedule(
            schedule.instance,
            [dataclasses.replace(t, start=self.to_seconds(t.start)) for t in schedule.tasks],
            schedule.mode,
        )

    def objective_to_original(self, value: float) -> float:
        """A scaled Σ w C (grid steps × scaled weights) in the original units."""
        return self.to_seconds(value) / self.weight_scale


def scale(instance: Instance, time_unit: float, rounding: str = "up") -> ScaledInstance:
    """``instance`` on the grid of ``time_unit``, every time rounded ``up`` or ``down``
    exactly (:func:`to_steps`). Raises InputError when the grid is coarser than a compute
    time (one rounded down to 0 steps, or a step more than :data:`COARSEST_FACTOR` times
    it) or so fine that a time exceeds MAX_VALUE steps."""
    if rounding not in ("up", "down"):
        raise ValueError(f"rounding must be 'up' or 'down', got {rounding!r}")
    arrival = np.array([job.arrival for job in instance.jobs], dtype=float)
    c = to_steps(instance.compute, time_unit, rounding)
    s = to_steps(instance.sync, time_unit, rounding)
    if rounding == "down":
        # a round's results are ready compute + sync after its start: rounded down as one
        # time (⌊(p + s) / u⌋, up to a step more than ⌊p / u⌋ + ⌊s / u⌋)
        finite = np.isfinite(c) & np.isfinite(s)
        total = np.where(finite, instance.compute + instance.sync, 0.0)
        ready = to_steps(total, time_unit, rounding) - np.where(finite, c, 0.0)
        s = np.where(finite, np.maximum(s, ready), s)
    # rounded down to nothing, or up by more than COARSEST_FACTOR: a grid coarser than the data
    coarse = (c == 0) | (instance.compute * COARSEST_FACTOR < time_unit)
    if np.any(coarse):
        raise InputError(
            f"time_unit {time_unit:g} is coarser than a compute time of "
            f"{float(instance.compute[coarse].min()):g} s; choose a finer grid"
        )
    arrivals = to_steps(arrival, time_unit, rounding)
    steps = max(float(np.max(v[np.isfinite(v)], initial=0.0)) for v in (c, s, arrivals))
    if steps > MAX_VALUE:
        raise InputError(
            f"time_unit {time_unit:g} is too fine: a time of {steps:.3g} steps "
            f"exceeds {MAX_VALUE:g}; choose a coarser grid"
        )
    weights = np.array([job.weight for job in instance.jobs], dtype=float)
    wscale, w_exact = _weight_scale(weights)
    exact = w_exact and on_grid(_times(instance), time_unit)

    # weights: to nearest for schedules (at least 1); rounded down for a lower bound, where a
    # weight below one step becomes MIN_POSITIVE (a Job's least weight), which every integer
    # use of it (int(weight)) reads as 0
    def wround(x: float) -> float:
        if w_exact or rounding == "up":
            return max(1.0, float(round(x)))
        return float(math.floor(x)) or MIN_POSITIVE

    jobs = []
    for j, job in enumerate(instance.jobs):
        eligible = np.flatnonzero(np.isfinite(c[j]))
        compute = {instance.gpus[g].type: float(c[j, g]) for g in eligible}
        jobs.append(
            Job(
                id=job.id,
                arrival=float(arrivals[j]),
                weight=float(wround(weights[j] * wscale)),
                rounds=job.rounds,
                tasks_per_round=job.tasks_per_round,
                compute=compute,
                sync_by_gpu={instance.gpus[g].id: float(s[j, g]) for g in eligible},
            )
        )
    scaled = Instance(instance.name, tuple(jobs), instance.gpus, mode=instance.mode)
    return ScaledInstance(scaled, time_unit, wscale, exact)
