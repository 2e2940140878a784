"""Parsing the string ``--param KEY=VALUE`` values that methods accept.

Every parser raises :class:`~optsched.errors.InputError` naming the key, so a bad value is
bad input (exit 2), never a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from optsched.errors import InputError


def choice_param(params: Mapping[str, str], key: str, options: Sequence[str]) -> str:
    """``params[key]``, one of ``options``; the first option is the default."""
    value = params.get(key, options[0])
    if value not in options:
        listed = " or ".join(repr(o) for o in options)
        raise InputError(f"{key} must be {listed}, got {value!r}")
    return value


def int_param(params: Mapping[str, str], key: str, default: int) -> int:
    """``params[key]`` as an integer ≥ 1."""
    try:
        value = int(params.get(key, default))
    except ValueError:
        raise InputError(f"{key} must be an integer, got {params[key]!r}") from None
    if value < 1:
        raise InputError(f"{key} must be >= 1")
    return value


def positive_float_param(params: Mapping[str, str], key: str) -> float | None:
    """``params[key]`` as a finite number > 0, or ``None`` when absent."""
    if key not in params:
        return None
    try:
        value = float(params[key])
    except ValueError:
        raise InputError(f"{key} must be a number, got {params[key]!r}") from None
    if not (value > 0 and math.isfinite(value)):
        raise InputError(f"{key} must be > 0, got {value!r}")
    return value


def float_list_param(params: Mapping[str, str], key: str, default: tuple[float, ...]
                     ) -> tuple[float, ...]:
    """``params[key]`` as increasing comma-separated numbers > 0."""
    if key not in params:
        return default
    try:
        values = tuple(float(x) for x in params[key].split(",") if x.strip())
    except ValueError:
        raise InputError(f"{key} must be comma-separated numbers, got {params[key]!r}") from None
    if any(not v > 0 for v in values) or list(values) != sorted(values):
        raise InputError(f"{key} must be increasing positive numbers, got {params[key]!r}")
    return values


def nonnegative_float_param(params: Mapping[str, str], key: str) -> float:
    """``params[key]`` as a number ≥ 0 (default 0)."""
    try:
        value = float(params.get(key, 0))
    except ValueError:
        raise InputError(f"{key} must be a number, got {params[key]!r}") from None
    if not 0 <= value < float("inf"):
        raise InputError(f"{key} must be >= 0, got {value!r}")
    return value
