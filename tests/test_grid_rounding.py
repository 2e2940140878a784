"""The integer time grid of the exact methods (docs/model.md, "Exact models and rounding").

Times that constrain starts are rounded up, so a grid schedule is feasible for the original
instance; what gives bounds is rounded down; both at every magnitude of time (an arrival of
1000000.0004 s on the 1 ms grid is not 1000000 s). Every method that takes ``time_unit``
returns a schedule the checker accepts and a bound no larger than the proved optimum, on
continuous data, on non-unit grids and far from time zero.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, Status, check, solve
from optsched.critical_path import critical_path_bound
from optsched.errors import InputError
from optsched.exact.grid import (
    DOWN_ULPS,
    default_time_unit,
    on_grid,
    scale,
    to_seconds,
    to_steps,
)
from optsched.heuristics.lns import _delay_weights
from optsched.registry import methods
from optsched.testing import assert_result, instances
from tests.conftest import assert_out_of_time

#: Every solve method whose grid is the ``time_unit`` option (checked against the registry).
GRID_METHODS = (
    "column-bound",
    "cpsat",
    "cpsat-pergpu",
    "hare",
    "hare-ect",
    "lagrangian-bound",
    "lns",
    "lp-bound",
)
RELAXED_ONLY = ("hare", "hare-ect")
#: Short runs: tiny instances are proved (or bounded) well within them.
PARAMS = {
    "cpsat": {},
    "cpsat-pergpu": {},
    "hare": {},
    "hare-ect": {},
    "lp-bound": {},
    "lagrangian-bound": {"iterations": "30"},
    "column-bound": {"iterations": "30"},
    "lns": {"steps": "3", "step": "0.05"},
}
UNITS = (1.0, 0.5, 0.25, 0.1, 0.001, 0.3, 2.0, 1e-6)
#: Far time origins: the reported one, one past 2^30 s with a fraction, and their integer parts.
ORIGINS = (0.0, 1000000.0004, 1000000.0006, 1_700_000_000.3217, 1000000.0, 1_700_000_000.0)


def _two_jobs(arrival: float, second: float | None = None, fast: float = 0.5) -> Instance:
    """Two jobs (weights 1 and 2) on two GPUs, J1 arriving at ``arrival``, J2 at ``second``
    (default: the same), the faster GPU computing J2's tasks in ``fast`` s."""
    return Instance(
        "far",
        (
            Job("J1", arrival=arrival, rounds=2, compute={"T1": 1.5, "T2": 2.0}),
            Job(
                "J2",
                arrival=arrival if second is None else second,
                weight=2.0,
                tasks_per_round=2,
                compute={"T1": 1.0, "T2": fast},
            ),
        ),
        (GPU("G1", "T1"), GPU("G2", "T2")),
    )


def _shifted(inst: Instance, origin: float) -> Instance:
    return Instance(
        inst.name,
        tuple(dataclasses.replace(job, arrival=job.arrival + origin) for job in inst.jobs),
        inst.gpus,
        mode=inst.mode,
    )


def _bounds(result) -> list[float]:
    """Every bound a result reports: its own, the solver's, the LP's, the relaxation's."""
    out = [result.bound]
    for key in ("bound_method", "solver_bound", "lp_bound", "makespan_bound"):
        out.append(result.extra.get(key))
    relaxation = result.extra.get("relaxation")
    if isinstance(relaxation, dict):
        out.append(relaxation.get("bound"))
    return [float(b) for b in out if b is not None]


def _slack(value: float) -> float:
    """Float noise of a sum of a few checked completions: far below one grid step × weight
    (10⁻³ s at 1.7e9 s is 6e-13 relative)."""
    return 1e-14 * max(1.0, abs(value))


# -- rounding, exactly at every magnitude ---------------------------------------------------


def test_the_grid_methods_are_every_method_with_a_time_unit():
    assert (
        tuple(sorted(info.name for info in methods("solve") if "time_unit" in info.params))
        == GRID_METHODS
    )


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(UNITS),
    st.floats(0, 1e15, allow_nan=False)
    | st.sampled_from(ORIGINS).flatmap(lambda o: st.floats(0, 10).map(lambda f: o + round(f, 4))),
)
def test_up_is_the_first_step_at_or_above_and_down_the_last_at_or_below(unit, value):
    assume(value / unit <= 1e15)  # beyond MAX_VALUE steps: refused by scale()
    up, down = float(to_steps(value, unit, "up")), float(to_steps(value, unit, "down"))
    assert up.is_integer() and down.is_integer()
    assert to_seconds(up, unit) >= value  # never below: a start rounded up is feasible
    assert up == 0 or to_seconds(up - 1, unit) < value  # and the first such step
    # down: the last step at or below the value (read with its float noise), at most up
    noisy = value + DOWN_ULPS * math.ulp(value)
    assert to_seconds(down, unit) <= noisy
    assert to_seconds(down + 1, unit) > noisy or down == up
    assert up - 1 <= down <= up
    if on_grid(value, unit):
        assert up == down and to_seconds(up, unit) == value


def test_decimal_times_on_the_grid_are_exact_and_off_it_are_not():
    assert on_grid([0.3, 2.5, 1.2345], 0.00005) and on_grid([0.3, 0.7, 1.1], 0.1)
    assert on_grid([0.3, 1000000.0004, 1_700_000_000.3217], 0.0001)
    assert not on_grid([1000000.0004], 0.001) and not on_grid([1000000.0006], 0.001)
    assert not on_grid([1_700_000_000.3217], 0.001) and not on_grid([0.25], 0.5)
    # 1000000.0004 is not an integer, whatever its magnitude: the 1 ms grid, not 1 s
    assert default_time_unit(_two_jobs(1000000.0004)) == 0.001
    whole = Instance(
        "w", (Job("J", arrival=123456789012345.0, compute={"T": 2.0}),), (GPU("g", "T"),)
    )
    assert default_time_unit(whole) == 1.0
    half = Instance(
        "h", (Job("J", arrival=123456789012345.5, compute={"T": 2.0}),), (GPU("g", "T"),)
    )
    assert default_time_unit(half) == 0.001
    # float noise of decimal data is rounded up a step for schedules, but costs no bound
    assert to_steps(2.6999999999999997, 0.1, "down") == 27
    assert to_steps(2.6999999999999997, 0.1, "up") == 27
    assert to_steps(0.30000000000000004, 0.001, "up") == 301
    assert to_steps(0.30000000000000004, 0.001, "down") == 300
    assert np.isinf(to_steps(np.inf, 0.5, "up")) and np.isinf(to_steps(np.inf, 0.5, "down"))


@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize("unit", [0.001, 0.5, 1.0])
def test_scaled_arrivals_and_times_are_rounded_the_right_way(origin, unit):
    inst = _two_jobs(origin, origin + 0.75, fast=2.5)
    up, down = scale(inst, unit, "up"), scale(inst, unit, "down")
    for sc, sign in ((up, 1), (down, -1)):
        for job, scaled in zip(inst.jobs, sc.instance.jobs, strict=True):
            assert sign * (sc.to_seconds(scaled.arrival) - job.arrival) >= 0
        finite = np.isfinite(inst.compute)
        seconds = to_seconds(sc.instance.compute[finite], unit)
        assert np.all(sign * (seconds - inst.compute[finite]) >= 0)
    assert up.exact == down.exact == on_grid([origin, origin + 0.75, 1.5, 2.5], unit)
    # rounded down, a round's compute + sync is rounded as one time
    total = inst.compute + inst.sync
    finite = np.isfinite(total)
    ready = down.instance.compute[finite] + down.instance.sync[finite]
    assert np.array_equal(ready, to_steps(total[finite], unit, "down"))


def test_weights_are_scaled_exactly_or_rounded_down_for_bounds():
    inst = _two_jobs(0.0)
    tenth = Instance(
        "w",
        tuple(
            dataclasses.replace(j, weight=w)
            for j, w in zip(inst.jobs, (1.1, 1000000.0004), strict=True)
        ),
        inst.gpus,
    )
    sc = scale(tenth, 0.5)
    assert sc.exact and sc.weight_scale == 10**4
    assert [j.weight for j in sc.instance.jobs] == [11000.0, 10000000004.0]
    third = Instance(
        "w", tuple(dataclasses.replace(j, weight=1 / 3) for j in inst.jobs), inst.gpus
    )
    down = scale(third, 0.5, "down")
    assert not down.exact and all(
        j.weight / down.weight_scale <= 1 / 3 for j in down.instance.jobs
    )


# -- the reported failures ------------------------------------------------------------------


@pytest.mark.parametrize("method", GRID_METHODS)
@pytest.mark.parametrize("origin", [1000000.0004, 1000000.0006, 1_700_000_000.3217])
def test_a_far_time_origin_off_the_grid_gives_a_feasible_schedule(method, origin):
    """The reported exit 70: arrivals 1000000.0004 s were rounded *down* to 1000000 s (and
    1000000.0006 s up to 1000000.001 s, the grid then called exact: a bound 1.2 ms above the
    optimum)."""
    inst = _two_jobs(origin)
    result = solve(inst, method, time_limit=3, params=PARAMS[method])
    assert_result(inst, result)
    report = check(inst, result.schedule)
    assert report.feasible and all(t.start >= origin for t in result.schedule.tasks)
    if "grid_exact" in result.extra:
        assert result.extra["grid_exact"] is False
    # the optimum, from the integer-shifted copy (exact on the 0.1 ms grid) plus the shift
    base = solve(
        _two_jobs(round(origin - math.floor(origin), 4)),
        "cpsat",
        time_limit=3,
        params={"time_unit": "0.0001", "lp_bound": "0"},
    )
    assert base.extra["grid_exact"]
    if base.status is not Status.OPTIMAL:
        assert_out_of_time(base)
    # the optimum once proved; above it otherwise, so still above every bound
    optimum = base.objective + 3 * math.floor(origin)
    for bound in _bounds(result):
        assert bound <= optimum + _slack(optimum), (bound, optimum)


@pytest.mark.parametrize("method", ["cpsat", "cpsat-pergpu", "lns"])
@pytest.mark.parametrize("origin", [1_700_000_000.0, 4e9])
def test_cpsat_proves_the_true_optimum_at_an_epoch_scale_origin(method, origin):
    """Found by the property below: with its times around 1.7e12 steps of 1 ms, CP-SAT
    proved an optimum one step above the true one (13.876 over 3 × origin instead of
    13.875); the model now counts time from the first arrival."""
    jobs = (
        Job("j0", arrival=origin, compute={"T0": 2.0}),
        Job("j1", arrival=origin, compute={"T0": 1.0}),
        Job("j2", arrival=origin, rounds=2, compute={"T0": 1.625}, sync={"T0": 2.0}),
    )
    inst = Instance("epoch", jobs, (GPU("g0", "T0"),), mode="relaxed")
    params = {"lp_bound": "0"} if method != "lns" else {"steps": "3"}
    result = solve(inst, method, time_limit=5, params=params)
    optimum = 3 * origin + 13.875  # j1, j2's first round, j0, j2's second round
    assert result.objective == optimum
    assert result.bound is not None and result.bound <= optimum


@pytest.mark.parametrize("unit", ["0.5", "0.001", "0.25"])
def test_lns_improving_on_a_non_unit_grid_returns_seconds_once(unit):
    """The reported exit 70: an improved schedule was converted to seconds twice, and the
    delay neighbourhood then drew from negative probabilities."""
    inst = Instance(
        "toy",
        (
            Job("J1", rounds=2, compute={"T1": 1.5, "T2": 2, "T3": 1}),
            Job("J2", rounds=3, compute={"T1": 1, "T2": 2, "T3": 1}),
            Job("J3", rounds=2, tasks_per_round=2, compute={"T1": 2, "T2": 1.5, "T3": 0.5}),
        ),
        (GPU("G1", "T1"), GPU("G2", "T2"), GPU("G3", "T3")),
    )
    ect = solve(inst, "ect")
    for seed in range(2):
        result = solve(
            inst,
            "lns",
            seed=seed,
            time_limit=3,
            # from ECT's schedule: priority-search's may leave the six steps nothing to improve
            params={"time_unit": unit, "steps": "6", "step": "0.1", "size": "2", "start": "ect"},
        )
        assert_result(inst, result)
        assert result.extra["improvements"] >= 1 and result.objective < ect.objective


@pytest.mark.parametrize(
    "completion",
    [
        {"a": 5.0, "b": 7.0, "c": 9.0},  # ordinary delays
        {"a": 1.0, "b": 1.0, "c": 1.0},  # below the critical path: negative delays
        {"a": 2.0, "b": 2.0, "c": 2.0},  # no delay at all
        {"a": math.nan, "b": 3.0, "c": 4.0},  # a NaN
        {"a": math.inf, "b": 3.0, "c": 4.0},  # an overflow
        {"a": 1e300, "b": 1e300, "c": 1e300},  # a sum that overflows
    ],
)
def test_the_delay_neighbourhood_draws_from_valid_probabilities(completion):
    inst = Instance(
        "d", tuple(Job(j, weight=1e15, compute={"T": 1.0}) for j in "abc"), (GPU("g", "T"),)
    )
    p = _delay_weights(inst, completion, [2.0, 2.0, 2.0])
    assert np.all(np.isfinite(p)) and np.all(p > 0) and math.isclose(p.sum(), 1.0)
    np.random.default_rng(0).choice(3, 2, replace=False, p=p)  # numpy accepts it


# -- every grid method, continuous data, non-unit grids, far origins ------------------------


def _optimum(inst: Instance) -> float | None:
    """The optimum of a 3-decimal instance near time zero: CP-SAT on its exact 1 ms grid
    (default search: the core search takes seconds on such tiny models)."""
    result = solve(
        inst,
        "cpsat",
        time_limit=3,
        params={"time_unit": "0.001", "lp_bound": "0", "search": "default"},
    )
    return result.objective if result.status is Status.OPTIMAL else None


@pytest.mark.parametrize("unit", [None, "0.5", "0.001"])
@pytest.mark.parametrize("method", GRID_METHODS)
@settings(max_examples=3, deadline=None)
@given(
    inst=instances(max_jobs=3, max_gpus=2, max_rounds=2, max_k=2), origin=st.sampled_from(ORIGINS)
)
def test_grid_methods_are_feasible_and_bounded_by_the_optimum(method, unit, inst, origin):
    """On continuous or integer data, on the default, 0.5 s and 1 ms grids, at time zero and
    far from it: the schedule passes the checker (solve() runs it) and every bound reported is
    at most the optimum (the unshifted instance's, proved on its exact 1 ms grid, plus the
    shift × Σ w)."""
    if method in RELAXED_ONLY:
        inst = inst.with_mode("relaxed")
    far = _shifted(inst, origin)
    params = dict(PARAMS[method], **({} if unit is None else {"time_unit": unit}))
    try:
        result = solve(far, method, time_limit=1, params=params)
    except InputError as exc:  # named refusals of a bound's grid given by the caller:
        assert method in ("lp-bound", "lagrangian-bound", "column-bound") and unit is not None
        assert "time_unit" in str(exc)
        if unit == "0.5":  # coarser than a compute time
            assert far.compute[np.isfinite(far.compute)].min() < 0.5
        else:  # the 1 ms LP (or master) of a horizon of tens of seconds too large to build
            assert "would" in str(exc) and "choose a coarser time_unit" in str(exc)
        return
    assert_result(far, result)
    optimum = _optimum(inst)
    if optimum is None:
        return
    optimum += origin * sum(job.weight for job in inst.jobs)
    assert result.objective >= optimum - _slack(optimum)
    for bound in _bounds(result):
        assert bound <= optimum + _slack(optimum), (bound, optimum)
    assert critical_path_bound(far) <= optimum + _slack(optimum)


def test_a_given_millisecond_grid_too_large_for_the_lp_is_refused_by_name():
    """Three jobs of two rounds arriving at once, about 30 s of work: on the 1 ms grid the
    caller asked for, the time-indexed LP would hold 2.5 million variables, and lp-bound
    refuses it by name (found by the property test above, which expected refusals on the
    0.5 s grid only)."""
    gpus = (GPU("g0", "T0"), GPU("g1", "T1"))
    two_wide = (
        Job(
            f"j{i}",
            rounds=2,
            tasks_per_round=2,
            compute={"T0": 1.0, "T1": slow},
            sync={"T0": 0.0, "T1": 3.0},
        )
        for i, slow in enumerate((6.0, 3.0))
    )
    jobs = (*two_wide, Job("j2", rounds=2, compute={"T0": 4.0}, sync={"T0": 3.0}))
    inst = Instance("wide", jobs, gpus, mode="gang")
    with pytest.raises(InputError, match=r"would have about .*choose a coarser time_unit"):
        solve(inst, "lp-bound", time_limit=5, params={"time_unit": "0.001"})
