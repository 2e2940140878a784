"""The class-capacity LP bound: never above the optimum, certified from its dual, stronger than
the critical path and the fluid bound when jobs compete for the fast GPUs."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, InputError, Instance, Job, solve
from optsched.critical_path import critical_path_bound
from optsched.ect import completions
from optsched.exact.capacity import capacity_bound, open_weight_edges
from optsched.exact.fluid import fluid_bound
from optsched.io import load_instance
from optsched.result import OPTIMAL_TOL
from optsched.testing import instances
from tests.conftest import ROOT, n_examples


@settings(deadline=None, max_examples=n_examples(60))
@given(instances(max_jobs=4, integer=True))
def test_never_above_the_optimum(instance):
    """bound ≤ OPT ≤ CP-SAT's objective (OPT itself once CP-SAT proves it)."""
    optimum = solve(instance, "cpsat", time_limit=5)
    assert optimum.bound is not None
    result = solve(instance, "capacity-bound", params={"intervals": 20})  # checked as always
    assert result.extra["lp_status"] == "optimal"
    assert result.bound >= critical_path_bound(instance) * (1 - 1e-9)
    assert result.bound <= optimum.objective * (1 + OPTIMAL_TOL)


def test_one_job_at_an_epoch_scale_origin_is_solved():
    """The case that failed when the LP was built on absolute times: one task of 1 s (sync
    1 s) arriving at 1.7e9 s, where HiGHS stopped at "Unknown" and the LP gave no bound."""
    job = Job(
        "j0", arrival=1.7e9, rounds=1, tasks_per_round=1, compute={"T0": 1.0}, sync={"T0": 1.0}
    )
    inst = Instance("one", (job,), (GPU("g0", "T0"),))
    found = capacity_bound(inst, 1.7e9 + 2.0, 1.7e9 + 2.0, 20)
    assert found.status == "optimal"
    # C = a + 1 + 1, less the margin on the LP's own value and two units in the last place
    assert 1.7e9 + 2.0 - 1e-6 <= found.bound <= 1.7e9 + 2.0


@settings(deadline=None, max_examples=n_examples(30))
@given(instances(max_jobs=4, integer=True))
def test_an_epoch_scale_origin_moves_the_bound_by_its_weighted_shift(instance):
    """Every arrival 1.7e9 s later (a Unix time): the LP is solved on times from the first
    arrival, so it still solves, and its bound and its prices' grid only move with the
    origin (the prices themselves, dual values, need not be unique)."""
    origin = 1.7e9
    shifted = replace(
        instance, jobs=tuple(replace(j, arrival=j.arrival + origin) for j in instance.jobs)
    )
    weight = sum(j.weight for j in instance.jobs)
    ect = solve(instance, "ect")
    upper, end = ect.objective, ect.metrics["makespan"]
    near = capacity_bound(instance, upper, end, 20)
    far = capacity_bound(shifted, upper + origin * weight, end + origin, 20)
    assert near.status == far.status == "optimal"
    # the same LP, its safety margin taken on its own value: the origin moves the bound by
    # the weighted shift and float rounding there (it gave away 1.7 s per unit of weight)
    assert abs(far.bound - (near.bound + origin * weight)) <= 16 * math.ulp(far.bound)
    assert far.bound <= solve(shifted, "cpsat", time_limit=5).objective * (1 + OPTIMAL_TOL)
    assert far.prices.edges - origin == pytest.approx(near.prices.edges)


@settings(deadline=None, max_examples=n_examples(60))
@given(instances(mode="gang", max_jobs=4, integer=True, positive_sync=True))
def test_gang_holding_never_above_the_gang_optimum(instance):
    """The gang LP (GPU time held, not only computed) keeps every relaxed row, so it is at
    least the relaxed LP's bound, and at most the proved gang optimum."""
    optimum = solve(instance, "cpsat", time_limit=5)
    gang = capacity_bound(instance, optimum.objective, optimum.objective, 20)
    relaxed = capacity_bound(
        replace(instance, mode="relaxed"), optimum.objective, optimum.objective, 20
    )
    assert gang.status == relaxed.status == "optimal"
    assert gang.bound is not None and relaxed.bound is not None
    # each certificate comes from interior-point duals, within about 1e-7 of its LP's optimum
    assert gang.bound >= relaxed.bound * (1 - 1e-6)
    assert gang.bound <= optimum.objective * (1 + OPTIMAL_TOL)


def _contended() -> Instance:
    """Five two-task jobs of 3 rounds at once; two fast GPUs and two four times slower."""
    jobs = tuple(
        Job(
            f"j{k}",
            weight=1 + k % 3,
            rounds=3,
            tasks_per_round=2,
            compute={"fast": 1.0, "slow": 4.0},
            sync={"fast": 0.5, "slow": 0.5},
        )
        for k in range(5)
    )
    gpus = (GPU("f0", "fast"), GPU("f1", "fast"), GPU("s0", "slow"), GPU("s1", "slow"))
    return Instance("contended", jobs, gpus)


def test_sees_the_queue_for_the_fast_gpus():
    inst = _contended()
    result = solve(inst, "capacity-bound")
    assert result.bound_source == "method"
    path, fluid = critical_path_bound(inst), fluid_bound(inst).bound
    assert result.bound > 1.5 * path and result.bound > 1.05 * fluid
    # CP-SAT does not prove this optimum quickly; its best schedule is above the bound
    assert result.bound <= solve(inst, "cpsat", time_limit=1).objective


def test_gang_rounds_hold_their_gpus_through_the_sync():
    """In gang mode a fast GPU is held 1.5 times its compute (sync 0.5 after compute 1.0), so
    on the same grid the queue for the fast GPUs is longer than in relaxed mode."""
    gang = replace(_contended(), mode="gang")
    held = capacity_bound(gang, upper=1e3, horizon=40.0, intervals=100)
    computing = capacity_bound(
        replace(gang, mode="relaxed"), upper=1e3, horizon=40.0, intervals=100
    )
    assert held.bound is not None and computing.bound is not None
    assert held.bound > 1.05 * computing.bound
    assert held.bound <= solve(gang, "cpsat", time_limit=1).objective
    assert (
        solve(gang, "capacity-bound").bound
        > solve(replace(gang, mode="relaxed"), "capacity-bound").bound
    )


def test_bound_is_the_dual_certificate_of_the_lp_optimum():
    """The certificate agrees with HiGHS's optimum, finer grids never weaken it much, a grid
    that ends early still gives a bound, and shifting every arrival shifts the bound."""
    inst = _contended()
    lp = capacity_bound(inst, upper=1e4, horizon=40.0, intervals=40)
    finer = capacity_bound(inst, upper=1e4, horizon=40.0, intervals=80)
    assert lp.status == finer.status == "optimal"
    assert lp.bound is not None and finer.bound is not None
    assert lp.solver_objective is not None
    assert lp.bound == pytest.approx(lp.solver_objective, rel=1e-7)
    assert finer.bound >= lp.bound * 0.99
    short = capacity_bound(inst, upper=1e4, horizon=5.0, intervals=40)  # most work beyond
    assert short.bound is not None and critical_path_bound(inst) <= short.bound * (1 + 1e-9)
    late = Instance("late", tuple(replace(job, arrival=1000.0) for job in inst.jobs), inst.gpus)
    shifted = capacity_bound(late, upper=1e6, horizon=1040.0, intervals=40)
    weight = sum(job.weight for job in inst.jobs)
    assert shifted.bound == pytest.approx(lp.bound + 1000.0 * weight, rel=1e-6)


def test_on_whole_seconds_the_bound_rounds_up_to_the_optimums_granularity(monkeypatch):
    """Times in whole seconds and weights in tenths: every schedule's Σ w C is a multiple
    of 0.1 (shifted left, each start is an arrival or an end), so the LP's bound rounds up
    to one; with a half-second sync it stays as the LP gave it."""
    import optsched.exact.capacity as capacity

    halves = _contended()
    whole = replace(
        halves,
        jobs=tuple(
            replace(j, compute={"fast": 2.0, "slow": 7.0}, sync={"fast": 1.0, "slow": 1.0})
            for j in halves.jobs
        ),
    )
    whole = replace(whole, jobs=tuple(replace(j, weight=j.weight / 2) for j in whole.jobs))
    found = {
        name: capacity_bound(x, 1e4, 60.0, 40).bound
        for name, x in (("whole", whole), ("halves", halves))
    }
    monkeypatch.setattr(capacity, "integral_bound", lambda instance, bound: bound)
    raw = {
        name: capacity_bound(x, 1e4, 60.0, 40).bound
        for name, x in (("whole", whole), ("halves", halves))
    }
    assert found["whole"] == pytest.approx(math.ceil(raw["whole"] * 10) / 10)
    assert found["whole"] > raw["whole"] and found["halves"] == raw["halves"]
    assert found["whole"] <= solve(whole, "ect").objective


@pytest.mark.parametrize("method", ["capacity-bound", "lp-bound"])
def test_the_incumbent_is_reported_before_the_lp(method):
    """Progress lines show the start schedule's objective while the LP solves."""
    inst = load_instance(ROOT / "optsched" / "data" / "instances" / "hare-toy.instance.json")
    heard: list[tuple[float | None, float | None]] = []
    result = solve(
        inst, method, progress=lambda incumbent, bound: heard.append((incumbent, bound))
    )
    assert heard[0] == (result.objective, None)


def test_time_limit_and_size_are_reported():
    inst = _contended()
    assert capacity_bound(inst, 1e4, 40.0, 40, time_limit=0.0).status == "time limit"
    result = solve(inst, "capacity-bound", time_limit=1e-9)
    assert result.bound == pytest.approx(critical_path_bound(inst))
    assert result.extra["lp_status"] == "time limit"
    with pytest.raises(InputError, match=r"intervals=.*choose fewer intervals"):
        solve(inst, "capacity-bound", params={"intervals": 5 * 10**6})
    with pytest.raises(InputError, match=r"intervals must be at most 5e\+06"):
        solve(inst, "capacity-bound", params={"intervals": 10**7})


def test_a_stalled_interior_point_is_solved_again_with_crossover(monkeypatch):
    """HiGHS's interior point without crossover can end short of an optimum ("Unknown",
    seen on a part of the loaded Philly trace): the LP is solved again with crossover, and
    the bound is the same as that of a first solve that succeeds."""
    import optsched.exact.highs as highs

    inst = _contended()
    expected = capacity_bound(inst, 1e4, 40.0, 40).bound
    methods = []
    solve_lp = highs.linprog

    def stalling(*args, method="dual", **kwargs):
        methods.append(method)
        if method == "central":
            return highs._failed(4, "Unknown")
        return solve_lp(*args, method=method, **kwargs)

    monkeypatch.setattr(highs, "linprog", stalling)
    again = capacity_bound(inst, 1e4, 40.0, 40)
    assert methods == ["central", "ipm"]
    assert again.status == "optimal" and again.bound == pytest.approx(expected, rel=1e-6)


def _without_tangents(monkeypatch, points, instance, **lp):
    """capacity_bound with the tangent rows of ``points`` (``TANGENT`` or ``SPREAD_TANGENT``,
    counted by the same name + ``S``) left out."""
    from optsched.exact import capacity

    with monkeypatch.context() as patch:
        patch.setattr(capacity, points + "S", 0)
        patch.setattr(capacity, points, getattr(capacity, points)[:0])
        return capacity_bound(instance, **lp)


def test_slow_work_rows_charge_work_left_for_slow_gpus(monkeypatch):
    """Three one-task jobs of 4 rounds on one fast GPU and one twice slower: some job ends
    on the slow GPU, later than its mean busy time at full speed says. Without the slow-work
    rows (no tangents: g ≥ 0 only) the bound is 2.8 % lower; with them it stays below
    CP-SAT's schedule (the optimum, 33, in both modes)."""
    jobs = tuple(
        Job(f"j{k}", weight=1 + k, rounds=4, compute={"fast": 1.0, "slow": 2.0}) for k in range(3)
    )
    for mode in ("relaxed", "gang"):
        inst = Instance("slow", jobs, (GPU("f", "fast"), GPU("s", "slow")), mode=mode)
        schedule = solve(inst, "cpsat", time_limit=10)
        lp = {"upper": 1e3, "horizon": 20.0, "intervals": 80}
        with_rows = capacity_bound(inst, **lp)
        without = _without_tangents(monkeypatch, "TANGENT", inst, **lp)
        assert with_rows.bound is not None and without.bound is not None
        assert with_rows.bound > 1.02 * without.bound
        assert with_rows.bound <= schedule.objective * (1 + OPTIMAL_TOL)


def test_spread_rows_read_an_intervals_work_at_its_earliest_mean_time(monkeypatch):
    """Two jobs of one 10-s task on one GPU, two intervals of 10 s: the LP shares the GPU
    half and half in each interval, and reading the work at each interval's start makes
    both jobs' mean times 5 s and the bound the critical paths', 20. Within an interval a job
    does its 5 s of work at rate at most 1, so its mean time there is at least 2.5 s later:
    the bound is 25 with the spread rows, below the optimum 30, in both modes."""
    jobs = tuple(Job(f"j{k}", compute={"g": 10.0}) for k in range(2))
    for mode in ("relaxed", "gang"):
        inst = Instance("spread", jobs, (GPU("a", "g"),), mode=mode)
        schedule = solve(inst, "cpsat", time_limit=10)
        lp = {"upper": 1e3, "horizon": 20.0, "intervals": 2}
        with_rows = capacity_bound(inst, **lp)
        without = _without_tangents(monkeypatch, "SPREAD_TANGENT", inst, **lp)
        assert schedule.objective == pytest.approx(30.0)
        assert without.bound == pytest.approx(20.0, rel=1e-6)
        assert with_rows.bound == pytest.approx(25.0, rel=1e-6)


@pytest.mark.parametrize("intervals", [0, -1, 2.5, True])
def test_intervals_must_be_a_positive_integer(intervals):
    """Zero intervals would leave the gang rows' last interval without its running sum (an
    infeasible LP, not a bound): refused with the argument's name, in both modes."""
    jobs = (Job("a", compute={"g": 1.0}),)
    for mode in ("relaxed", "gang"):
        inst = Instance("one", jobs, (GPU("x", "g"),), mode=mode)
        with pytest.raises(InputError, match="intervals"):
            capacity_bound(inst, upper=10.0, horizon=5.0, intervals=intervals)


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=4, integer=True), st.lists(st.floats(0.01, 0.99), max_size=8))
def test_any_grid_stays_below_the_optimum(instance, cuts):
    """Both non-uniform grids, the schedule's open-weight grid and an arbitrary one, bound
    the optimum from below: the grid only places the intervals."""
    optimum = solve(instance, "cpsat", time_limit=5)
    done = completions(instance, optimum.schedule)
    first = min(job.arrival for job in instance.jobs)
    end = float(done.max())
    for edges in (
        open_weight_edges(instance, done, end, 6),
        np.concatenate([[first], first + np.unique(cuts) * (end - first), [end]]),
    ):
        found = capacity_bound(instance, optimum.objective, end, len(edges) - 1, edges=edges)
        assert found.status == "optimal"
        assert found.bound <= optimum.objective * (1 + OPTIMAL_TOL)


def test_the_open_weight_grid_is_fine_where_jobs_wait():
    """A hundred short jobs arrive within 20 s and queue on one GPU, while one job runs for
    1,000 s: 37 % of the open weight lies in the first 50 s, and so do 20 of the grid's 51
    times (a uniform grid puts 3 there), which lifts the bound; the times increase from the
    first arrival to the end, the same at an epoch-scale origin."""
    for origin in (0.0, 1.7e9):
        jobs = tuple(
            Job(f"j{k}", arrival=origin + 0.2 * k, compute={"g": 0.3}) for k in range(100)
        )
        jobs += (Job("long", arrival=origin, compute={"g": 1000.0}),)
        inst = Instance("wait", jobs, (GPU("x", "g"),))
        done = origin + np.array([0.3 * (k + 1) for k in range(100)] + [1030.0])
        edges = open_weight_edges(inst, done, origin + 1030.0, 50)
        assert edges.shape == (51,)
        assert edges[0] == origin and edges[-1] == origin + 1030.0
        assert (np.diff(edges - origin) > 0).all()
        assert ((edges - origin) <= 50.0).sum() >= 15
        uniform = capacity_bound(inst, float(done.sum()), origin + 1030.0, 50)
        placed = capacity_bound(inst, float(done.sum()), origin + 1030.0, 50, edges=edges)
        # below the schedule's Σ C_j by 385 s on the uniform grid, by 83 s on this one
        assert placed.bound > uniform.bound + 250.0


@pytest.mark.parametrize(
    "edges", [[0.0, 2.0], [1.0, 2.0, 3.0], [0.0, 3.0, 2.0], [0.0, math.nan, 3.0]]
)
def test_given_edges_are_checked(edges):
    """Three increasing times from the first arrival, or an InputError naming them, also
    where the critical path (5 s) would move the last time past the others."""
    inst = Instance("one", (Job("a", compute={"g": 5.0}),), (GPU("x", "g"),))
    with pytest.raises(InputError, match="edges"):
        capacity_bound(inst, upper=10.0, horizon=5.0, intervals=2, edges=edges)


@pytest.mark.parametrize(
    ("completion", "horizon", "intervals"),
    [
        ([1.0], 5.0, 2),
        ([5.0, math.inf], 5.0, 2),
        ([5.0, 0.5], 5.0, 2),
        ([5.0, 5.0], math.nan, 2),
        ([5.0, 5.0], 5.0, 0),
    ],
)
def test_the_open_weight_grid_checks_its_schedule(completion, horizon, intervals):
    """One finite completion per job, at or after its arrival, a finite horizon and at
    least one interval, or an InputError."""
    jobs = (Job("a", compute={"g": 1.0}), Job("b", arrival=1.0, compute={"g": 1.0}))
    inst = Instance("two", jobs, (GPU("x", "g"),))
    with pytest.raises(InputError):
        open_weight_edges(inst, completion, horizon, intervals)


def test_the_open_weight_grid_is_uniform_where_nothing_waits():
    """Jobs that complete as they arrive keep no weight open: the grid is uniform."""
    jobs = (Job("a", compute={"g": 1.0}), Job("b", arrival=1.0, compute={"g": 1.0}))
    inst = Instance("two", jobs, (GPU("x", "g"),))
    edges = open_weight_edges(inst, [0.0, 1.0], 4.0, 4)
    assert edges.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
