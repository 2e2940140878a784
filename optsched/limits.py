"""Input limits: the largest values optsched accepts, so that nothing derived overflows.

Every time, weight or amount (seconds, MB, bytes, bandwidth, …) must be at most
:data:`MAX_VALUE` = 1e15 (32 million years in seconds). Sums over millions of tasks and the
objective Σ w·C then stay finite and far from float overflow, and JSON output never holds an
infinity. A larger value is bad input, named by its field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeGuard

from optsched.errors import InputError

#: Largest accepted time, weight or amount; also the largest horizon of an instance (its
#: latest arrival plus all its work done one task after another).
MAX_VALUE = 1e15
#: Smallest accepted positive compute time, weight, bandwidth or factor (1 ns, 1 bit/s, …):
#: smaller positive values (denormals) would stall geometric grids and rounding.
MIN_POSITIVE = 1e-9
#: Largest accepted start time in a schedule: ten times the largest horizon, so that a
#: simulator's periodic events (ticks, heartbeats) beyond the horizon stay representable.
MAX_START = 10 * MAX_VALUE
#: Largest accepted placement factor and iterations per task.
MAX_FACTOR = 1e6
#: Most tasks (Σ rounds × tasks_per_round) one instance may have: solving, simulating and
#: checking take about 3 KB per task (measured: 2.8 GB for 10⁶ tasks with ect), so about
#: 14 GB at the cap.
MAX_TASKS = 5_000_000
#: Largest accepted random seed: CP-SAT takes a 32-bit signed seed; numpy and scikit-learn
#: accept it too.
MAX_SEED = 2**31 - 1


def is_number(value: object) -> TypeGuard[int | float]:
    """A finite int or float (a bool is not a number here). An int is never converted to a
    float, so one beyond float range (``10**400``) is a number, not an OverflowError."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (isinstance(value, int) or math.isfinite(value))
    )


def is_bounded(value: object, bound: float = MAX_VALUE) -> TypeGuard[int | float]:
    """A number (:func:`is_number`) of magnitude at most ``bound``."""
    return is_number(value) and abs(value) <= bound


def check_seed(seed: object, name: str = "seed") -> int:
    """``seed`` if it is an integer in [0, :data:`MAX_SEED`], else an InputError naming
    ``name`` (e.g. ``--seed``)."""
    from optsched.errors import InputError

    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise InputError(f"{name} must be an integer in [0, {MAX_SEED}], got {seed!r}")
    return seed


def seconds_map(values: Any, what: str, *, positive: bool) -> Mapping[str, float]:
    """A {key: seconds} mapping: finite, in [0, MAX_VALUE] (positive: in
    [MIN_POSITIVE, MAX_VALUE])."""
    if not isinstance(values, Mapping) or not values:
        raise InputError(f"{what} must be a non-empty mapping")
    out = {}
    for key, value in values.items():
        if not isinstance(key, str) or not key:
            raise InputError(f"{what}: key {key!r} must be a non-empty string")
        if not is_bounded(value) or value < 0 or (positive and value < MIN_POSITIVE):
            sign = f">= {MIN_POSITIVE:g}" if positive else ">= 0"
            raise InputError(
                f"{what}[{key!r}] must be a number {sign} and <= {MAX_VALUE:g}, got {value!r}"
            )
        out[key] = float(value)
    return MappingProxyType(out)
