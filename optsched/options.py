"""Typed method options, parsed from ``KEY=VALUE`` text in one place.

Every registered method takes its options as a frozen dataclass, a subclass of
:class:`Options` whose fields are declared with :func:`choice`, :func:`switch`, :func:`count`,
:func:`number`, :func:`numbers`, :func:`period` or :func:`text` (or :func:`group`:
another method's options inside these). Each field
carries its help text (which states the default) and its conversion, so that the command line
(``--param KEY=VALUE``), benchmark grids and Python callers go through the same code:
:meth:`Options.parse` takes text or typed values, and constructing the dataclass directly
(``CpsatOptions(workers=2)``) converts and validates the same way.

What each helper accepts, as text and from Python:

- :func:`choice`: one of its strings;
- :func:`switch`: ``0``/``1``; a bool, or the integer 0 or 1;
- :func:`count`: an integer (NumPy's too; not a bool), or its text; a count whose key is
  ``workers`` or ``threads`` is a number of solver threads, at most :data:`MAX_THREADS`;
- :func:`number`, :func:`period`: a real number (not a bool), or its text;
- :func:`numbers`: comma-separated text, a list or tuple of numbers, or ``auto``;
- :func:`text`: a non-empty string.

Every conversion raises :class:`~optsched.errors.InputError` naming the key and the value, so
a bad value is bad input (exit 2), never a traceback. Numbers must be finite and at most
:data:`~optsched.limits.MAX_VALUE` in magnitude; lists may not have empty items. A field
whose default is None (an optional number, ``numbers``, ``text``) also takes None.

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class MyOptions(Options):
...     depth: int = count("search depth (default 3)", 3)
...     greedy: bool = switch("1: greedy tie-breaking (default 0)")
>>> MyOptions.parse({"depth": "5"})
MyOptions(depth=5, greedy=False)
>>> MyOptions(depth=5).to_params()
{'depth': '5'}
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from numbers import Integral, Real
from typing import Any, Self, TypeVar, overload

from optsched.errors import InputError
from optsched.limits import MAX_VALUE

#: Most solver threads a method may be given (any count keyed ``workers`` or ``threads``, a
#: plug-in's too): more cores than the machines optsched runs on have; a solver asked for
#: far more fails (CP-SAT takes a 32-bit count) or runs out of memory (a model per worker).
MAX_THREADS = 256
_THREAD_KEYS = ("workers", "threads")
#: Shortest accepted period (tick, heartbeat, batch interval) in seconds: shorter ones make
#: a simulation run through billions of periodic events.
MIN_PERIOD = 1e-3
_SPEC = "optsched.option"
_GROUP = "optsched.option-group"
#: A choice's type: ``str``, or a ``Literal`` of its options.
Choice = TypeVar("Choice", bound=str)
_T = TypeVar("_T")


@dataclass(frozen=True)
class OptionSpec:
    """How one option reads and shows its value: ``help`` (one line, with the default),
    ``convert(key, value)`` (text or a typed value → the typed value, or InputError naming
    ``key``), ``render`` (the typed value as ``KEY=VALUE`` text) and ``key`` (the name on the
    command line when it is not the field's, e.g. ``lambda``, a Python keyword)."""

    help: str
    convert: Callable[[str, Any], Any]
    render: Callable[[Any], str] = str
    key: str | None = None


def _option(default: _T, spec: OptionSpec) -> _T:
    """A dataclass field with ``default`` and ``spec``; typed, as :func:`dataclasses.field`
    is, as its default's type, the type the declaring helper gives the option."""
    return field(default=default, metadata={_SPEC: spec})


def _spec(f: Any) -> OptionSpec:
    spec = f.metadata.get(_SPEC)
    if not isinstance(spec, OptionSpec):
        raise TypeError(
            f"option field {f.name!r} must be declared with one of "
            "optsched.options' helpers (choice, switch, count, number, ...)"
        )
    return spec


@dataclass(frozen=True)
class Options:
    """Base class of a method's options (a frozen dataclass; a method without options takes
    this class itself). Fields whose default is None are optional: None means "not given"
    and the method derives a value (the help text says how)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            object.__setattr__(self, f.name, _spec(f).convert(_key(f), value))

    @classmethod
    def keys(cls) -> dict[str, str]:
        """Command-line key → field name of every option (a :func:`group`'s keys → the
        group's field name)."""
        out: dict[str, str] = {}
        for f in fields(cls):
            inner = _group(f)
            out.update(dict.fromkeys(inner.keys(), f.name) if inner else {_key(f): f.name})
        return out

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Command-line key → help text of every option."""
        out: dict[str, str] = {}
        for f in fields(cls):
            inner = _group(f)
            out.update(inner.describe() if inner else {_key(f): _spec(f).help})
        return out

    @classmethod
    def defaults(cls) -> dict[str, str | None]:
        """Command-line key → default as ``KEY=VALUE`` text (None: not given, derived by the
        method as its help text says)."""
        out: dict[str, str | None] = {}
        for f in fields(cls):
            inner = _group(f)
            out.update(
                inner.defaults()
                if inner
                else {_key(f): None if _default(f) is None else _spec(f).render(_default(f))}
            )
        return out

    @classmethod
    def parse(cls, params: Mapping[str, Any] | None = None, *, owner: str | None = None) -> Self:
        """The options of ``params`` (command-line key → text or typed value); absent keys
        take their defaults.

        Raises
        ------
        InputError
            An unknown key (the message names ``owner``, e.g. ``method 'cpsat'``, and lists
            the known keys) or a value its option refuses (naming the key).
        """
        keys = cls.keys()
        for key in params or {}:
            if key not in keys:
                known = ", ".join(sorted(keys)) or "none"
                raise InputError(
                    f"{owner or cls.__name__} has no parameter {key!r} (known: {known})"
                )
        groups = {f.name: inner for f in fields(cls) if (inner := _group(f)) is not None}
        given: dict[str, Any] = {}
        grouped: dict[str, dict[str, Any]] = {}
        for key, value in (params or {}).items():
            if keys[key] in groups:
                grouped.setdefault(keys[key], {})[key] = value
            else:
                given[keys[key]] = value
        for name, values in grouped.items():
            given[name] = groups[name].parse(values, owner=owner)
        return cls(**given)

    def to_params(self, keys: Iterable[str] | None = None) -> dict[str, str]:
        """The options as canonical ``KEY=VALUE`` text (what :meth:`parse` reads back to
        equal options): those that differ from their defaults, or with ``keys`` (command-line
        keys, e.g. the ones a caller gave) those, in that order, whatever their values (a
        key whose value is None, "not given", is left out)."""
        flat: dict[str, tuple[Options, Any]] = {}  # key → (the options holding it, field)
        for f in fields(self):
            inner = getattr(self, f.name) if _group(f) else None
            if isinstance(inner, Options):
                flat.update({_key(g): (inner, g) for g in fields(inner)})
            else:
                flat[_key(f)] = (self, f)
        chosen = (
            list(keys)
            if keys is not None
            else [k for k, (owner, f) in flat.items() if getattr(owner, f.name) != _default(f)]
        )
        return {
            k: _spec(flat[k][1]).render(getattr(flat[k][0], flat[k][1].name))
            for k in chosen
            if getattr(flat[k][0], flat[k][1].name) is not None
        }


def _key(f: Any) -> str:
    return _spec(f).key or f.name


def _group(f: Any) -> type[Options] | None:
    """The options class of a :func:`group` field, else None."""
    cls = f.metadata.get(_GROUP)
    return cls if isinstance(cls, type) and issubclass(cls, Options) else None


def _default(f: Any) -> Any:
    return f.default_factory() if f.default is MISSING else f.default


# -- field helpers --------------------------------------------------------------------------

OptionsT = TypeVar("OptionsT", bound=Options)


def group(cls: type[OptionsT], help: str) -> OptionsT:
    """Another method's options inside these: their keys are these options' own keys (on the
    command line ``--param KEY=VALUE`` as if declared here), their values an instance of
    ``cls`` (default ``cls()``), handed over typed, e.g. to the method a policy calls."""

    def convert(name: str, value: Any) -> Options:
        if not isinstance(value, cls):
            raise InputError(f"{name} must be {cls.__name__} options, got {value!r}")
        return value

    return field(default_factory=cls, metadata={_SPEC: OptionSpec(help, convert), _GROUP: cls})


def choice(
    help: str, options: Sequence[Choice], default: Choice | None = None, *, key: str | None = None
) -> Choice:
    """One of ``options`` (text); the default is ``default``, else the first option. The
    field's type is that of the options: declare ``Literal["a", "b"]`` choices as a tuple of
    that type (``MODES: tuple[Literal["a", "b"], ...] = ("a", "b")``) to have a type checker
    see every value."""

    def convert(name: str, value: Any) -> str:
        if value not in options:
            listed = " or ".join(repr(o) for o in options)
            raise InputError(f"{name} must be {listed}, got {value!r}")
        return str(value)

    return _option(options[0] if default is None else default, OptionSpec(help, convert, key=key))


def switch(help: str, default: bool = False) -> bool:
    """On or off: ``1``/``0`` on the command line; a bool, or the integer 0 or 1, in
    Python."""

    def convert(name: str, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if value in ("0", "1") or (isinstance(value, Integral) and value in (0, 1)):
            return value in ("1", 1)
        raise InputError(f"{name} must be '0' or '1', got {value!r}")

    return _option(default, OptionSpec(help, convert, lambda v: "1" if v else "0"))


def _integer(name: str, value: Any, low: int, high: int | float) -> int:
    """``value`` (text or an integer, NumPy's included; not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, Integral | str):
        raise InputError(f"{name} must be an integer, got {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise InputError(f"{name} must be an integer, got {value!r}") from None
    if number < low:
        raise InputError(f"{name} must be >= {low}, got {value!r}")
    if number > high:
        raise InputError(f"{name} must be at most {high:g}, got {value!r}")
    return number


@overload
def count(help: str, default: int = 1, *, high: int | float = MAX_VALUE) -> int: ...
@overload
def count(help: str, default: None, *, high: int | float = MAX_VALUE) -> int | None: ...
def count(help: str, default: int | None = 1, *, high: int | float = MAX_VALUE) -> Any:
    """An integer in [1, ``high``] (at most :data:`MAX_THREADS` when its key is ``workers``
    or ``threads``), default ``default`` (1; None: optional). The help text states the
    default; pass the same value here."""

    def convert(name: str, value: Any) -> int:
        return _integer(name, value, 1, min(high, MAX_THREADS) if name in _THREAD_KEYS else high)

    return _option(default, OptionSpec(help, convert))


def _float(name: str, value: Any) -> float:
    """``value`` (text or a real number) as a finite float of magnitude at most MAX_VALUE."""
    if isinstance(value, bool) or not isinstance(value, Real | str):
        raise InputError(f"{name} must be a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise InputError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(number) or abs(number) > MAX_VALUE:
        raise InputError(
            f"{name} must be a finite number of magnitude at most {MAX_VALUE:g}, got {value!r}"
        )
    return number


@overload
def number(
    help: str,
    default: float,
    *,
    low: float = 0.0,
    high: float = MAX_VALUE,
    open_low: bool = False,
    key: str | None = None,
) -> float: ...
@overload
def number(
    help: str,
    default: None = None,
    *,
    low: float = 0.0,
    high: float = MAX_VALUE,
    open_low: bool = False,
    key: str | None = None,
) -> float | None: ...
def number(
    help: str,
    default: float | None = None,
    *,
    low: float = 0.0,
    high: float = MAX_VALUE,
    open_low: bool = False,
    key: str | None = None,
) -> Any:
    """A number in [``low``, ``high``] (``open_low``: in (``low``, ``high``]); a None
    default makes it optional."""

    def convert(name: str, value: Any) -> float:
        out = _float(name, value)
        if not (out > low if open_low else out >= low) or out > high:
            if high == MAX_VALUE:  # _float already refused values above MAX_VALUE
                raise InputError(
                    f"{name} must be {'>' if open_low else '>='} {low:g}, got {value!r}"
                )
            bounds = f"{'(' if open_low else '['}{low:g}, {high:g}]"
            raise InputError(f"{name} must be in {bounds}, got {value!r}")
        return out

    return _option(default, OptionSpec(help, convert, _number_text, key=key))


def _number_text(value: float) -> str:
    """A number as text that reads back equal: integral values without ``.0`` (``5``)."""
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def period(help: str) -> float:
    """A period in seconds: 0 (off, the default) or in [:data:`MIN_PERIOD`, MAX_VALUE]."""

    def convert(name: str, value: Any) -> float:
        out = _float(name, value)
        if not (out == 0 or MIN_PERIOD <= out <= MAX_VALUE):
            raise InputError(
                f"{name} must be 0 (off) or in [{MIN_PERIOD:g}, {MAX_VALUE:g}] s, got {value!r}"
            )
        return out

    return _option(0.0, OptionSpec(help, convert, _number_text))


def numbers(help: str) -> tuple[float, ...] | None:
    """Increasing numbers in (0, MAX_VALUE]: comma-separated text or a sequence; ``auto``
    (the default, None) lets the method derive them."""

    def convert(name: str, value: Any) -> tuple[float, ...] | None:
        if value == "auto":
            return None
        if isinstance(value, str):
            items: Sequence[Any] = value.split(",")
            if any(not item.strip() for item in items):
                raise InputError(
                    f"{name} must be comma-separated numbers with no empty item, got {value!r}"
                )
            items = [item.strip() for item in items]
        elif isinstance(value, Sequence) and value:
            items = value
        else:
            raise InputError(f"{name} must be comma-separated numbers, got {value!r}")
        try:
            out = tuple(_float(name, item) for item in items)
        except InputError as e:
            raise InputError(f"{e} (in {name}={value})") from None
        if any(not v > 0 for v in out) or list(out) != sorted(out):
            raise InputError(f"{name} must be increasing positive numbers, got {value!r}")
        return out

    return _option(None, OptionSpec(help, convert, lambda v: ",".join(map(_number_text, v))))


def text(help: str, check: Callable[[str, str], None] | None = None) -> str | None:
    """Free text, e.g. a path (optional: default None); ``check(key, value)`` may refuse it
    with an InputError."""

    def convert(name: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise InputError(f"{name} must be a non-empty string, got {value!r}")
        if check is not None:
            check(name, value)
        return value

    return _option(None, OptionSpec(help, convert))
