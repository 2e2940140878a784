"""Typed method options: one parser for the command line, grids and Python; every method
declares its options as a dataclass whose fields state their defaults."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.errors import InputError
from optsched.exact.cpsat import CpsatOptions
from optsched.options import (
    Options,
    choice,
    count,
    number,
    numbers,
    period,
    seed,
    switch,
    text,
)
from optsched.placement import CostOptions
from optsched.solve import get_method, methods, register


@dataclass(frozen=True)
class Every(Options):
    mode: str = choice("a, b or c (default a)", ("a", "b", "c"))
    on: bool = switch("1: on (default 0)")
    n: int = count("a count (default 1)")
    s: int = seed("a seed (default 0)")
    x: float = number("in [0, 10] (default 1)", 1.0, high=10.0)
    y: float | None = number("in (0, MAX] (default: derived)", open_low=True)
    p: float = period("a period (default 0)")
    xs: tuple[float, ...] | None = numbers("increasing (default auto)")
    path: str | None = text("a path (default none)")


finite = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)


@given(mode=st.sampled_from("abc"), on=st.booleans(), n=st.integers(1, 10**9),
       s=st.integers(0, 2**63 - 1), x=st.floats(0, 10), y=st.none() | finite,
       p=st.just(0.0) | finite, xs=st.none() | st.lists(finite, min_size=1, max_size=4,
                                                         unique=True).map(sorted),
       path=st.none() | st.text(min_size=1).filter(lambda t: "\x00" not in t))
def test_text_round_trip(mode, on, n, s, x, y, p, xs, path):
    """Options → KEY=VALUE text → the same options, for every kind of field."""
    options = Every(mode, on, n, s, x, y, p, None if xs is None else tuple(xs), path)
    assert Every.parse(options.to_params()) == options
    assert Every.parse({}) == Every() and Every().to_params() == {}


@pytest.mark.parametrize("key, value, message", [
    ("mode", "d", "mode must be 'a' or 'b' or 'c'"),
    ("on", "yes", "on must be '0' or '1'"),
    ("n", "0", "n must be >= 1"),
    ("n", "1.5", "n must be an integer"),
    ("n", str(10**17), "n must be at most"),
    ("s", "-1", r"s must be an integer in \[0, 2\^63\)"),
    ("x", "11", r"x must be in \[0, 10\]"),
    ("x", "nan", "x must be a finite number"),
    ("y", "0", "y must be > 0"),
    ("p", "0.0001", "p must be 0 \\(off\\) or in"),
    ("xs", "2,1", "xs must be increasing positive numbers"),
    ("xs", "1,,2", "xs must be comma-separated numbers with no empty item"),
    ("xs", "1,x", "xs must be a number, got 'x' \\(in xs=1,x\\)"),
    ("path", "", "path must be a non-empty string"),
])
def test_bad_values_name_the_key(key, value, message):
    with pytest.raises(InputError, match=message):
        Every.parse({key: value})


def test_unknown_keys_are_refused_with_the_known_ones():
    with pytest.raises(InputError, match=r"method 'm' has no parameter 'z' \(known: mode, "):
        Every.parse({"z": "1"}, owner="method 'm'")


def test_direct_construction_is_validated_and_typed_values_are_taken():
    assert Every(n=3, x=2).x == 2.0 and isinstance(Every(x=2).x, float)
    assert Every.parse({"n": 4, "on": True, "xs": [1, 2]}) == Every(n=4, on=True, xs=(1.0, 2.0))
    with pytest.raises(InputError, match="n must be >= 1"):
        Every(n=0)
    with pytest.raises(InputError, match="on must be '0' or '1'"):
        Every(on=1)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="workers must be >= 1"):
        CpsatOptions(workers=0)


def test_a_python_keyword_is_an_alias():
    """The cost's ``lambda`` is the field ``lam``."""
    options = CostOptions.parse({"lambda": "0.3"})
    assert options.lam == 0.3 and options.to_params() == {"lambda": "0.3"}
    assert options.cost_model().lam == 0.3
    with pytest.raises(InputError, match=r"lambda must be in \[0, 1\]"):
        CostOptions.parse({"lambda": "2"})


def test_every_method_declares_typed_options_with_stated_defaults():
    for info in methods():
        cls = info.options
        assert issubclass(cls, Options), info.name
        assert cls.parse({}) == cls() and cls().to_params() == {}, info.name
        for key, help_text in cls.describe().items():
            assert "default" in help_text or "required" in help_text, (info.name, key)
        if info.kind == "place":
            assert issubclass(cls, CostOptions), info.name


def test_registration_refuses_options_that_are_not_options():
    @dataclass(frozen=True)
    class Loose(Options):
        k: int = 1  # not declared with a helper

    with pytest.raises(TypeError, match="must be declared with one of"):
        register("test-loose", description="x", options=Loose, replace=True)
    with pytest.raises(InputError, match="must be a subclass of Options"):
        register("test-loose", description="x", options=dict, replace=True)  # type: ignore
    with pytest.raises(InputError, match="must subclass CostOptions"):
        register("test-loose", kind="place", description="x", options=Every, replace=True)


def test_the_method_listing_is_the_options_help():
    info = get_method("cpsat")
    assert info.params == CpsatOptions.describe()
    assert "time_unit" in info.params
