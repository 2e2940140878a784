"""Certified regret of online runs (optsched.regret): every bound level is at most the
proved optimum, the levels only add bounds, and simulate reports and prints them."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import given, settings

from optsched import solve
from optsched.cli import main
from optsched.errors import InputError
from optsched.io import load_instance
from optsched.online.run import simulate
from optsched.regret import regret_bound, weighted_arrivals
from optsched.result import OPTIMAL_TOL
from optsched.testing import instances
from tests.conftest import ROOT, n_examples

TOY = ROOT / "optsched" / "data" / "instances" / "hare-toy.instance.json"


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=4, integer=True))
def test_every_level_is_at_most_the_optimum(instance):
    """critical path ≤ fluid ≤ capacity (each level adds bounds) ≤ OPT ≤ CP-SAT's objective,
    with the capacity LP placed by an ECT schedule's objective and makespan or by the
    horizon."""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = solve(instance, "ect")
    assert regret_bound(instance, "none") is None
    found = [regret_bound(instance, level) for level in ("critical-path", "fluid")]
    found += [
        regret_bound(
            instance,
            "capacity",
            objective=start.objective,
            makespan=start.metrics["makespan"],
        ),
        regret_bound(instance, "capacity"),
    ]
    values = [f.value for f in found if f is not None]
    assert values[0] <= values[1] <= min(values[2:])
    assert max(values) <= optimum.objective * (1 + OPTIMAL_TOL)
    for f in found:
        assert f is not None and f.value == max(
            v for k, v in f.parts.items() if k.startswith("bound_")
        )


def test_an_unknown_level_is_bad_input():
    with pytest.raises(InputError, match=r"unknown regret bound .lp.*capacity"):
        simulate(_toy(), "hlas", bound="lp")


def _toy():
    return load_instance(TOY)


def test_simulate_reports_the_capacity_level_and_the_jct_regret():
    inst = _toy()
    fluid = simulate(inst, "hlas")
    capacity = simulate(inst, "hlas", bound="capacity")
    assert "bound_capacity" not in fluid.extra and capacity.extra["capacity_status"] == "optimal"
    assert capacity.extra["regret_bound"] >= fluid.extra["regret_bound"]
    assert capacity.regret is not None and 1 - 1e-9 <= capacity.regret <= fluid.regret
    least = capacity.extra["regret_bound"] - weighted_arrivals(inst)
    assert capacity.regret_jct == pytest.approx(capacity.metrics["total_weighted_jct"] / least)
    none = simulate(inst, "hlas", bound="none")
    assert none.regret is None and "regret_bound" not in none.extra


def cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def test_the_cli_prints_the_regret_and_its_source():
    code, out, _ = cli("simulate", TOY, "--policy", "hlas", "--bound", "capacity")
    assert code == 0 and "regret     ≤ " in out and "weighted JCT ≤ " in out
    assert "the class-capacity LP" in out or "the fluid work bound" in out
    code, out, _ = cli("simulate", TOY, "--policy", "hlas", "--bound", "none", "--json")
    assert code == 0 and "regret" not in json.loads(out)
    code, _, err = cli("simulate", TOY, "--policy", "hlas", "--bound", "lp")
    assert code == 2 and "--bound" in err
