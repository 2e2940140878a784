"""Typed method options: one parser for the command line, grids and Python; every method
declares its options as a dataclass whose fields state their defaults."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import GeneratorSpec, generate, solve
from optsched.errors import InputError
from optsched.exact.cpsat import CpsatOptions
from optsched.online import simulate
from optsched.options import (
    Options,
    choice,
    count,
    number,
    numbers,
    period,
    switch,
    text,
)
from optsched.placement import CostOptions
from optsched.registry import get_method, methods, register


@dataclass(frozen=True)
class Every(Options):
    mode: str = choice("a, b or c (default a)", ("a", "b", "c"))
    on: bool = switch("1: on (default 0)")
    n: int = count("a count (default 1)")
    x: float = number("in [0, 10] (default 1)", 1.0, high=10.0)
    y: float | None = number("in (0, MAX] (default: derived)", open_low=True)
    p: float = period("a period (default 0)")
    xs: tuple[float, ...] | None = numbers("increasing (default auto)")
    path: str | None = text("a path (default none)")


finite = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False)


@given(
    mode=st.sampled_from("abc"),
    on=st.booleans(),
    n=st.integers(1, 10**9),
    x=st.floats(0, 10),
    y=st.none() | finite,
    p=st.just(0.0) | finite,
    xs=st.none() | st.lists(finite, min_size=1, max_size=4, unique=True).map(sorted),
    path=st.none() | st.text(min_size=1).filter(lambda t: "\x00" not in t),
)
def test_text_round_trip(mode, on, n, x, y, p, xs, path):
    """Options → KEY=VALUE text → the same options, for every kind of field."""
    options = Every(mode, on, n, x, y, p, None if xs is None else tuple(xs), path)
    assert Every.parse(options.to_params()) == options
    assert Every.parse({}) == Every() and Every().to_params() == {}


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("mode", "d", "mode must be 'a' or 'b' or 'c'"),
        ("on", "yes", "on must be '0' or '1'"),
        ("n", "0", "n must be >= 1"),
        ("n", "1.5", "n must be an integer"),
        ("n", str(10**17), "n must be at most"),
        ("x", "11", r"x must be in \[0, 10\]"),
        ("x", "nan", "x must be a finite number"),
        ("y", "0", "y must be > 0"),
        ("p", "0.0001", "p must be 0 \\(off\\) or in"),
        ("xs", "2,1", "xs must be increasing positive numbers"),
        ("xs", "1,,2", "xs must be comma-separated numbers with no empty item"),
        ("xs", "1,x", "xs must be a number, got 'x' \\(in xs=1,x\\)"),
        ("path", "", "path must be a non-empty string"),
    ],
)
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
    assert Every(on=1).on is True and Every.parse({"n": np.int64(3)}).n == 3
    with pytest.raises(InputError, match="on must be '0' or '1'"):
        Every(on=2)  # type: ignore[arg-type]
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


def test_records_are_canonical_whatever_the_spelling():
    """Text, typed values and options objects of one setting are recorded alike, so that a
    benchmark resumes them as one configuration."""
    instance = generate(GeneratorSpec(jobs=3, gpus=2), seed=0)
    spellings = (
        {"workers": "02", "hint": "ect"},
        {"workers": 2, "hint": "ect"},
        {"workers": np.int64(2), "hint": "ect"},
    )
    assert {json.dumps(dict(solve(instance, "cpsat", params=p).params)) for p in spellings} == {
        json.dumps({"workers": "2", "hint": "ect"})
    }
    typed = solve(instance, "cpsat", params=CpsatOptions(workers=2, hint="ect"))
    assert typed.params == {"workers": "2"}  # an object: what differs from the defaults
    text = {"thresholds": "100,500.0", "starvation": "1"}
    assert (
        simulate(instance, "hlas", params=text).params
        == simulate(instance, "hlas", params={"thresholds": [100, 500], "starvation": 1.0}).params
        == {"thresholds": "100,500", "starvation": "1"}
    )
    with pytest.raises(InputError, match="params must be a mapping or CpsatOptions"):
        solve(instance, "cpsat", params="workers=2")  # type: ignore[arg-type]


def test_the_defaults_are_listed_as_text():
    assert Every.defaults()["n"] == "1" and Every.defaults()["y"] is None
    assert CostOptions.defaults() == {
        "cost": "paper",
        "lambda": "0.5",
        "cross_domain": None,
        "contention": "0",
    }


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

    class Undecorated(Options):  # no @dataclass: its fields would silently not exist
        k: int = count("a count (default 1)")

    with pytest.raises(TypeError, match="must be decorated with @dataclass"):
        register("test-loose", description="x", options=Undecorated, replace=True)


def test_the_method_listing_is_the_options_help():
    info = get_method("cpsat")
    assert info.params == CpsatOptions.describe()
    assert "time_unit" in info.params


def test_methods_json_lists_defaults(capsys):
    from optsched.cli import main

    assert main(["methods", "--json"]) == 0
    listed = {(m["kind"], m["name"]): m for m in json.loads(capsys.readouterr().out)}
    cpsat = listed["solve", "cpsat"]
    assert cpsat["defaults"]["workers"] == "1" and cpsat["defaults"]["time_unit"] is None
    assert set(cpsat["defaults"]) == set(cpsat["params"])
    assert listed["place", "gga"]["modes"] == ["placement"]


def test_a_group_holds_another_methods_options_under_their_own_keys():
    """Liquid's placement options: flat keys on the command line, typed values inside, and
    the chosen placement method receives exactly its own options class."""
    from optsched.online.liquid import Liquid, LiquidOptions, placement_options
    from optsched.placement.gga import GgaOptions
    from optsched.placement.heuristics import BestfitOptions

    options = LiquidOptions.parse(
        {"placement": "gga", "repair": "firstfit", "cost": "code", "batch": "5"}
    )
    assert options.place == GgaOptions(repair="firstfit", cost="code")
    assert options.to_params() == {
        "placement": "gga",
        "cost": "code",
        "repair": "firstfit",
        "batch": "5",
    }
    assert LiquidOptions.parse(options.to_params()) == options
    assert "repair" in LiquidOptions.describe() and "place" not in LiquidOptions.describe()
    assert placement_options(options) == GgaOptions(repair="firstfit", cost="code")
    best = placement_options(LiquidOptions.parse({"line18": "1"}))
    assert type(best) is BestfitOptions and best.line18
    with pytest.raises(InputError, match="repair is not a parameter of placement=bestfit"):
        placement_options(LiquidOptions.parse({"repair": "firstfit"}))
    with pytest.raises(InputError, match="takes BestfitOptions, not GgaOptions"):
        Liquid(place_options=GgaOptions())
