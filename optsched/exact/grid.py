"""The integer time grid of the exact models (docs/model.md: rounding is never silent).

Exact engines work in integer multiples of ``time_unit``. Scaling an instance **up** (every
compute, sync and arrival rounded up to the grid) gives an instance whose feasible schedules,
read back in seconds, are feasible for the original one (all times only shrink). Scaling **down**
gives an instance whose optimum is a valid lower bound for the original (OPT is nondecreasing in
every time). When the data are already on the grid both coincide and
the scaled problem *is* the original one, so a bound proved on it is a bound on the original.

Weights are scaled to integers by the smallest power of ten that makes them integral (up to
10⁶); weights that no such factor makes integral are rounded (down when scaling down, so the
bound stays valid), and then :attr:`ScaledInstance.exact` is false.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from optsched.errors import InputError
from optsched.instance import Instance, Job
from optsched.limits import MAX_VALUE

_EPS = 1e-9


def _on_grid(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(np.all(np.abs(finite - np.round(finite)) <= _EPS * np.maximum(1, finite)))


def default_time_unit(instance: Instance) -> float:
    """1 when all times are integers, else 0.001 (docs/cli.md, ``time_unit``)."""
    arrivals = np.array([job.arrival for job in instance.jobs])
    data = np.concatenate([instance.compute.ravel(), instance.sync.ravel(), arrivals])
    return 1.0 if _on_grid(data) else 0.001


def time_unit_or_default(instance: Instance, unit: float | None) -> float:
    """The ``time_unit`` option ``unit``, else :func:`default_time_unit`."""
    return default_time_unit(instance) if unit is None else unit


def _weight_scale(weights: np.ndarray) -> tuple[int, bool]:
    for scale in (1, 10, 100, 1000, 10**4, 10**5, 10**6):
        if _on_grid(weights * scale):
            return scale, True
    return 10**6, False


@dataclass(frozen=True)
class ScaledInstance:
    """An instance on the integer grid: times in units of ``time_unit``, integer weights.

    ``instance`` has the same jobs, GPUs and mode; its compute/sync/arrival values are the
    integers ``ceil`` (``rounding="up"``) or ``floor`` (``"down"``) of the original ÷ unit and
    its weights are the original × ``weight_scale``. ``exact`` is true when no value had to
    be rounded, i.e. the scaled problem equals the original one.
    """

    instance: Instance
    time_unit: float
    weight_scale: int
    exact: bool

    def to_seconds(self, value: float) -> float:
        return value * self.time_unit

    def objective_to_original(self, value: float) -> float:
        """A scaled Σ w C (grid units × scaled weights) in the original units."""
        return value * self.time_unit / self.weight_scale


def scale(instance: Instance, time_unit: float, rounding: str = "up") -> ScaledInstance:
    """``instance`` on the grid of ``time_unit``, rounding times ``up`` or ``down``."""
    if rounding not in ("up", "down"):
        raise ValueError(f"rounding must be 'up' or 'down', got {rounding!r}")
    op = np.ceil if rounding == "up" else np.floor

    def grid(values: np.ndarray) -> np.ndarray:
        # snap values within the tolerance of a grid point before rounding
        x = values / time_unit
        near = np.round(x)
        with np.errstate(invalid="ignore"):  # inf (ineligible) stays inf
            return np.where(np.abs(x - near) <= _EPS * np.maximum(1, np.abs(x)), near, op(x))

    c = grid(instance.compute)
    s = grid(instance.sync)
    if np.any(c == 0):  # rounded down, or snapped to 0 by a grid far coarser than the data
        raise InputError(f"time_unit {time_unit:g} is coarser than a compute time of "
                         f"{float(instance.compute[c == 0].min()):g} s; choose a finer grid")
    arrivals = grid(np.array([job.arrival for job in instance.jobs], dtype=float))
    steps = max(float(np.max(v[np.isfinite(v)], initial=0.0)) for v in (c, s, arrivals))
    if steps > MAX_VALUE:
        raise InputError(f"time_unit {time_unit:g} is too fine: a time of {steps:.3g} steps "
                         f"exceeds {MAX_VALUE:g}; choose a coarser grid")
    weights = np.array([job.weight for job in instance.jobs], dtype=float)
    wscale, w_exact = _weight_scale(weights)
    exact = (w_exact and _on_grid(instance.compute / time_unit)
             and _on_grid(instance.sync / time_unit)
             and _on_grid(np.array([job.arrival for job in instance.jobs]) / time_unit))
    # weights: rounded down for a lower bound (never 0), to nearest for schedules
    def wround(x: float) -> float:
        return float(round(x)) if w_exact or rounding == "up" else max(1.0, math.floor(x))

    jobs = []
    for j, job in enumerate(instance.jobs):
        eligible = np.flatnonzero(np.isfinite(c[j]))
        compute = {instance.gpus[g].type: float(c[j, g]) for g in eligible}
        jobs.append(Job(
            id=job.id, arrival=float(arrivals[j]), weight=float(wround(weights[j] * wscale)),
            rounds=job.rounds, tasks_per_round=job.tasks_per_round, compute=compute,
            sync_by_gpu={instance.gpus[g].id: float(s[j, g]) for g in eligible},
        ))
    scaled = Instance(instance.name, tuple(jobs), instance.gpus, mode=instance.mode)
    return ScaledInstance(scaled, time_unit, wscale, exact)
