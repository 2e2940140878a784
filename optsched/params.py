"""Parsing the string ``--param KEY=VALUE`` values that methods accept.

Every parser raises :class:`~optsched.errors.InputError` naming the key and the value, so a
bad value is bad input (exit 2), never a traceback. Numbers must be finite and at most
:data:`~optsched.limits.MAX_VALUE`; lists may not have empty items.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from optsched.errors import InputError
from optsched.limits import MAX_VALUE

#: Shortest accepted period (tick, heartbeat, batch interval) in seconds: shorter ones make
#: a simulation run through billions of periodic events.
MIN_PERIOD = 1e-3


def choice_param(params: Mapping[str, str], key: str, options: Sequence[str]) -> str:
    """``params[key]``, one of ``options``; the first option is the default."""
    value = params.get(key, options[0])
    if value not in options:
        listed = " or ".join(repr(o) for o in options)
        raise InputError(f"{key} must be {listed}, got {value!r}")
    return value


def int_param(params: Mapping[str, str], key: str, default: int) -> int:
    """``params[key]`` as an integer in [1, MAX_VALUE]."""
    try:
        value = int(params.get(key, default))
    except ValueError:
        raise InputError(f"{key} must be an integer, got {params[key]!r}") from None
    if value < 1:
        raise InputError(f"{key} must be >= 1, got {params.get(key, default)!r}")
    if value > MAX_VALUE:
        raise InputError(f"{key} must be at most {MAX_VALUE:g}, got {params[key]!r}")
    return value


def _number(key: str, text: str, shown: str | None = None) -> float:
    """``text`` as a finite float of magnitude at most MAX_VALUE; the error names ``key``
    and ``shown`` (default ``text``)."""
    shown = text if shown is None else shown
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{key} must be a number, got {shown!r}") from None
    if not math.isfinite(value) or abs(value) > MAX_VALUE:
        raise InputError(f"{key} must be a finite number of magnitude at most {MAX_VALUE:g}, "
                         f"got {shown!r}")
    return value


def positive_float_param(params: Mapping[str, str], key: str) -> float | None:
    """``params[key]`` as a number in (0, MAX_VALUE], or ``None`` when absent."""
    if key not in params:
        return None
    value = _number(key, params[key])
    if not value > 0:
        raise InputError(f"{key} must be > 0, got {params[key]!r}")
    return value


def float_list_param(params: Mapping[str, str], key: str, default: tuple[float, ...]
                     ) -> tuple[float, ...]:
    """``params[key]`` as increasing comma-separated numbers in (0, MAX_VALUE]."""
    if key not in params:
        return default
    text = params[key]
    items = text.split(",")
    if any(not item.strip() for item in items):
        raise InputError(f"{key} must be comma-separated numbers with no empty item, "
                         f"got {text!r}")
    values: list[float] = []
    for item in items:
        try:
            values.append(_number(key, item.strip()))
        except InputError as e:
            raise InputError(f"{e} (in {key}={text})") from None
    if any(not v > 0 for v in values) or list(values) != sorted(values):
        raise InputError(f"{key} must be increasing positive numbers, got {text!r}")
    return tuple(values)


def nonnegative_float_param(params: Mapping[str, str], key: str) -> float:
    """``params[key]`` as a number in [0, MAX_VALUE] (default 0)."""
    if key not in params:
        return 0.0
    value = _number(key, params[key])
    if not value >= 0:
        raise InputError(f"{key} must be >= 0, got {params[key]!r}")
    return value


def period_param(params: Mapping[str, str], key: str) -> float:
    """``params[key]`` as a period in seconds: 0 (off, the default) or in
    [:data:`MIN_PERIOD`, MAX_VALUE]."""
    value = nonnegative_float_param(params, key)
    if 0 < value < MIN_PERIOD:
        raise InputError(f"{key} must be 0 (off) or in [{MIN_PERIOD:g}, {MAX_VALUE:g}] s, "
                         f"got {params[key]!r}")
    return value
