"""The column-generation bound: at most the optimum at every iteration (both modes, conflict
cuts on or off, any time origin), at least the subgradient's Lagrangian bound once converged,
the time-indexed LP's value in relaxed mode without cuts, and with them past both where a
round that fills its group cannot share it."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, solve
from optsched.budget import Budget
from optsched.critical_path import critical_path_bound
from optsched.ect import evaluate, incumbent
from optsched.exact import columns, lagrangian, staggered
from optsched.exact.columns import column_bound, column_time_unit
from optsched.exact.lagrangian import lagrangian_bound
from optsched.io import load_instance
from optsched.result import OPTIMAL_TOL
from optsched.testing import instances, instances_with_schedules
from tests.conftest import ROOT, n_examples
from tests.test_lagrangian_bound import _pair, _queue


def _shifted(inst: Instance, origin: float) -> Instance:
    jobs = tuple(dataclasses.replace(j, arrival=j.arrival + origin) for j in inst.jobs)
    return Instance(inst.name, jobs, inst.gpus, mode=inst.mode)


@settings(deadline=None, max_examples=n_examples(60))
@given(instances(max_jobs=4), st.booleans(), st.sampled_from([None, 0.5]))
def test_every_iteration_is_at_most_the_optimum(instance, cuts, cut):
    """Each iteration's value ≤ OPT ≤ CP-SAT's objective, with capacity priced to the end
    or over half of the incumbent's makespan; once converged, at least the subgradient's
    bound at the same deadlines (the master's optimum is the best multipliers' value) where
    both count tasks alike: relaxed mode's conflict cuts count whole steps, where the
    subgradient may count exact compute times (a compute of 1.875 s on a 0.1-s grid: 13.5
    against 13.6)."""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = incumbent(instance)
    unit = column_time_unit(instance, start.makespan, None)
    until = None if cut is None else cut * start.makespan
    # within a budget: relaxed mode's exact pricing of staggered rounds (CP-SAT) can take
    # minutes on a rare draw, and every iteration's value is a bound however it stops
    found = column_bound(
        instance, start.objective, unit, cuts=cuts, priced_until=until, budget=Budget(20)
    )
    assert found.bound is not None and found.bound == max(found.trace)
    assert found.bound <= optimum.objective * (1 + OPTIMAL_TOL)
    if found.stopped == "converged" and not (cuts and instance.mode == "relaxed"):
        subgradient = lagrangian_bound(
            instance, start.objective, unit, iterations=200, priced_until=until
        )
        assert subgradient.bound is not None and found.bound >= subgradient.bound
    result = solve(instance, "column-bound")  # checked like every method's bound
    assert result.bound >= critical_path_bound(instance) * (1 - 1e-9)


def test_relaxed_cuts_count_whole_steps():
    """Relaxed mode's conflict cuts price staggered rounds in whole steps, so every task is
    counted so: where whole steps leave compute out (1.875 s on a 0.1-s grid), the master
    with the cuts converges below the one without, which counts exact compute times as the
    subgradient does."""
    jobs = (
        Job("j0", 0.0, 1.0, 1, 2, compute={"T0": 1.875}, sync={"T0": 0.0}),
        Job("j1", 0.0, 1.0, 2, 2, compute={"T0": 2.0}, sync={"T0": 0.0}),
    )
    inst = Instance("whole", jobs, (GPU("g0", "T0"), GPU("g1", "T1")), mode="relaxed")
    start = incumbent(inst)
    unit = column_time_unit(inst, start.makespan, None)
    with_cuts = column_bound(inst, start.objective, unit, cuts=True)
    without = column_bound(inst, start.objective, unit, cuts=False)
    subgradient = lagrangian_bound(inst, start.objective, unit, iterations=200)
    assert with_cuts.stopped == without.stopped == "converged"
    assert with_cuts.bound < without.bound
    assert without.bound is not None and subgradient.bound is not None
    assert without.bound >= subgradient.bound


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=4), st.booleans(), st.booleans())
def test_stopping_at_the_masters_ceiling_loses_nothing(instance, cuts, warm):
    """A run that stops once the master's value rounds to the bound certified ends at the
    bound of the run that prices on until no path is left, in fewer iterations; also from
    the multipliers and paths of a finished run (as branching's nodes start)."""
    start = incumbent(instance)
    unit = column_time_unit(instance, start.makespan, None)
    first = column_bound(instance, start.objective, unit, cuts=False, iterations=3)
    more = {"with_paths": first.paths, "multipliers": first.multipliers} if warm else {}
    runs = []
    for ceiling in (True, False):
        columns.STOP_AT_CEILING = ceiling
        try:
            runs.append(
                column_bound(instance, start.objective, unit, cuts=cuts, budget=Budget(20), **more)
            )
        finally:
            columns.STOP_AT_CEILING = True
    early, late = runs
    if late.stopped in ("converged", "optimal") and early.stopped != "time limit":
        assert early.bound == late.bound and early.iterations <= late.iterations


def test_relaxed_cuts_never_stop_at_the_masters_value():
    """Rounds of 3 tasks on 2 GPUs: the exact pricing of their staggered rounds certifies more
    than the master's value over the programme's paths (one slot each), so the stop at the
    ceiling would end at 200 where the run goes on to 202 (the optimum is 211)."""
    gpus = (GPU("g0", "T0"), GPU("g1", "T0"))
    jobs = (
        Job("j0", arrival=6.0, rounds=3, compute={"T0": 4.0}, sync={"T0": 2.0}),
        Job("j1", arrival=5.0, weight=3.0, rounds=2, tasks_per_round=3, compute={"T0": 6.0}),
        Job(
            "j2",
            weight=3.0,
            rounds=2,
            tasks_per_round=3,
            compute={"T0": 4.0},
            sync={"T0": 3.0},
        ),
    )
    inst = Instance("wide", jobs, gpus, mode="relaxed")
    found = columns.column_bound_from(inst, incumbent(inst).schedule)
    assert found.bound == 202 and found.stopped == "converged"


def test_multipliers_and_boxes_off_the_grid_are_refused():
    inst = _queue().with_mode("gang")
    start = incumbent(inst)
    fine = column_bound(inst, start.objective, 1.0, iterations=3)
    assert fine.multipliers is not None
    for lam in (-fine.multipliers - 1.0, fine.multipliers[:, 1:], fine.multipliers * np.nan):
        with pytest.raises(ValueError, match="multipliers"):
            column_bound(inst, start.objective, 1.0, multipliers=lam)
    with pytest.raises(ValueError, match="restrict: jobs are indices"):
        column_bound(inst, start.objective, 1.0, restrict={inst.n_jobs: (0, 5)})


@settings(deadline=None, max_examples=n_examples(30))
@given(instances(max_jobs=4), st.booleans())
def test_a_master_on_blocks_of_steps_stays_below_the_optimum_and_refines_to_the_steps(
    instance, cuts
):
    """With the master's capacity rows on blocks of steps (forced on these small grids: one
    block first, split 4 ways at each convergence), every iteration's value is at most the
    optimum, and once converged the blocks are the grid's steps and the value the master on
    steps gives (the same relaxation's optimum, within one step of the grid's rounding)."""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = incumbent(instance)
    unit = column_time_unit(instance, start.makespan, None)
    # a work budget: relaxed mode's cuts price staggered rounds by CP-SAT, minutes on some
    # draws; the comparison needs both runs converged
    steps = column_bound(instance, start.objective, unit, cuts=cuts, work=5)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(columns, "MAX_STEPS", 1)
        patch.setattr(columns, "FIRST_BLOCKS", 1)
        blocks = column_bound(instance, start.objective, unit, cuts=cuts, work=5)
    assert blocks.bound is not None and max(blocks.trace) == blocks.bound
    assert blocks.bound <= optimum.objective * (1 + OPTIMAL_TOL)
    if blocks.stopped == steps.stopped == "converged":
        assert blocks.blocks == steps.blocks
        assert steps.bound is not None and abs(blocks.bound - steps.bound) <= unit


@settings(deadline=None, max_examples=n_examples(40))
@given(
    st.sampled_from(["gang", "relaxed"]).flatmap(
        lambda mode: instances(mode=mode, max_jobs=5, max_gpus=5, max_k=4, integer=True)
    )
)
def test_conflict_cuts_stay_below_the_optimum_of_wide_rounds(instance):
    """Instances whose rounds fill most of a group: the cuts bind (relaxed mode: priced over
    staggered rounds), and every iteration's value stays at most the optimum."""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = incumbent(instance)
    found = column_bound(instance, start.objective, 1.0, budget=Budget(20))
    assert found.bound is not None
    assert max(found.trace) <= optimum.objective * (1 + OPTIMAL_TOL)


@settings(deadline=None, max_examples=n_examples(30))
@given(instances(max_jobs=2), st.integers(2, 3))
def test_identical_jobs(instance, copies):
    """Copies of one job (the same arrival, weight, rounds and times) beside the others."""
    twins = tuple(
        dataclasses.replace(instance.jobs[0], id=f"{instance.jobs[0].id}~{k}")
        for k in range(copies)
    )
    inst = Instance("twins", twins + instance.jobs[1:], instance.gpus, mode=instance.mode)
    optimum = solve(inst, "cpsat", time_limit=5)
    assert solve(inst, "column-bound").bound <= optimum.objective * (1 + OPTIMAL_TOL)


@settings(deadline=None, max_examples=n_examples(20))
@given(instances(max_jobs=3, integer=True))
def test_an_epoch_scale_origin_changes_nothing_but_the_shift(instance):
    """At an origin of 1.7e9 s every objective grows by Σ w × origin, and so does the bound."""
    origin = 1.7e9
    start = incumbent(instance)
    here = column_bound(instance, start.objective, 1.0)
    weight = sum(j.weight for j in instance.jobs)
    there = column_bound(_shifted(instance, origin), start.objective + weight * origin, 1.0)
    assert there.bound == pytest.approx(here.bound + weight * origin, rel=0, abs=1e-6 * origin)


def _fills_the_group() -> Instance:
    """A 1-task job (weight 2) and a job of two rounds of 4 tasks on 4 GPUs, all 2 s."""
    jobs = (
        Job("one", weight=2.0, compute={"A": 2.0}),
        Job("four", rounds=2, tasks_per_round=4, compute={"A": 2.0}),
    )
    return Instance("fills", jobs, tuple(GPU(f"a{i}", "A") for i in range(4)), mode="gang")


@pytest.mark.parametrize("mode", ["gang", "relaxed"])
def test_a_round_that_fills_its_group_shares_it_with_no_one(mode):
    """The optimum is 10 (gang: the 1-task job first, 2 × 2 + 6; relaxed: three tasks of the
    first 4-task round beside it and the fourth after, 2 × 2 + 6 too). Capacity lets half of
    the 4-task round run beside the 1-task job (3/4 of the GPUs in use), so the bound without
    cuts, and the subgradient's, stay at 9; a conflict cut (the 1-task job and a round holding
    all 4 GPUs do not run at once) lifts it to the optimum (relaxed mode: with the staggered
    round priced exactly)."""
    inst = _fills_the_group().with_mode(mode)
    assert solve(inst, "cpsat").objective == 10.0
    assert column_bound(inst, 12.0, 1.0, cuts=False).bound == 9.0
    assert lagrangian_bound(inst, 12.0, 1.0).bound == 9.0
    found = column_bound(inst, 12.0, 1.0)
    assert found.bound == 10.0 and found.cuts > 0
    assert solve(inst, "column-bound").bound == 10.0


@pytest.mark.parametrize("most", [1, 10])
def test_a_staggered_model_too_large_keeps_the_bound_without_the_cuts(monkeypatch, most):
    """A job whose staggered rounds would make a model of more than ``MAX_STARTS`` start
    counts (here: both jobs, 5 and 14 counts; or the 4-task job alone) is not priced
    exactly: it keeps its value without the conflict prices, so the bound stays valid (at
    most the optimum 10, at least the LP's 9), and the run stops saying why. A model out of
    time before it is built proves nothing either."""
    inst = _fills_the_group().with_mode("relaxed")
    jobs = columns._problem(inst, 12.0, 1.0, None).jobs
    lam = np.zeros((1, 12))
    assert staggered.price_staggered(jobs[0], lam, [4], None, 12, time_limit=0.0).stopped == (
        "time limit"
    )
    monkeypatch.setattr(staggered, "MAX_STARTS", most)
    priced = [staggered.price_staggered(job, lam, [4], None, 12) for job in jobs]
    assert [p.stopped == "too large" for p in priced] == (
        [True, True] if most == 1 else [False, True]
    )
    assert all(p.lower == -math.inf and p.path is None for p in priced if p.stopped)
    found = column_bound(inst, 12.0, 1.0)
    assert 9.0 <= found.bound <= 10.0 and found.stopped == "too large" and found.cuts > 0
    monkeypatch.setattr(staggered, "MAX_STARTS", 100)
    monkeypatch.setattr(staggered, "MAX_TERMS", most)
    assert staggered.price_staggered(jobs[1], lam, [4], None, 12).stopped == "too large"


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_the_relaxed_bound_is_the_time_indexed_lps(mode):
    """Relaxed mode without cuts: the converged value is the time-indexed LP's (the same
    relaxation, convexified per job), within one unit of the LP's own grid rounding; with
    them at least as high. Gang mode: at least as high as relaxed, and below CP-SAT's
    schedules."""
    inst = _queue().with_mode(mode)
    found = solve(inst, "column-bound")
    assert found.extra["stopped"] == "converged"
    assert found.bound <= solve(inst, "cpsat", time_limit=2).objective * (1 + OPTIMAL_TOL)
    if mode == "relaxed":
        plain = solve(inst, "column-bound", params={"cuts": False})
        assert plain.extra["cuts"] == 0
        assert plain.bound == pytest.approx(solve(inst, "lp-bound").bound, abs=1.0)
        assert found.bound >= plain.bound
    else:
        assert found.bound >= solve(_queue(), "column-bound").bound


def test_anytime_repeatable_and_stopped():
    inst = _queue().with_mode("gang")
    start = incumbent(inst)
    one = column_bound(inst, start.objective, 1.0, iterations=1)
    assert one.iterations == 1 and one.stopped == "iterations"
    assert one.bound == critical_path_bound(inst)  # no prices yet: every job alone
    runs = [
        column_bound(inst, start.objective, 1.0, iterations=10, start=start.schedule)
        for _ in range(2)
    ]
    assert runs[0] == runs[1] and runs[0].bound > one.bound
    assert column_bound(inst, start.objective, 1.0, work=1e-9).stopped == "work"
    none = column_bound(inst, start.objective, 1.0, budget=Budget(0.0))
    assert none.bound is None and none.stopped == "time limit"


def test_a_time_limit_while_pricing_drops_that_iteration():
    """The clock is read before each job's programme (one iteration of a large instance can
    take seconds): a budget that runs out while the third iteration prices its jobs ends the
    run with the two iterations before it."""
    inst = _queue().with_mode("gang")
    start = incumbent(inst)

    class Expiring(Budget):
        """No time limit, but expired from the ``reads``-th reading of the clock on."""

        def __init__(self, reads: int) -> None:
            super().__init__(None)
            self.reads = reads

        def expired(self) -> bool:
            self.reads -= 1
            return self.reads < 0

    # per iteration: once before it, once before each job's programme
    reads = 2 * (1 + inst.n_jobs) + 2
    found = column_bound(inst, start.objective, 1.0, budget=Expiring(reads))
    assert found.stopped == "time limit" and found.iterations == 2 and len(found.trace) == 2


def ctrl_c_in_pricing(monkeypatch, inst: Instance, iterations: int) -> None:
    """Make column-bound's pricing raise KeyboardInterrupt (a Ctrl-C) once ``iterations``
    iterations have priced every job of ``inst``."""
    calls = {"n": 0}
    price = lagrangian._price

    def interrupted(*args):
        calls["n"] += 1
        if calls["n"] > iterations * inst.n_jobs:
            raise KeyboardInterrupt
        return price(*args)

    monkeypatch.setattr(columns, "_price", interrupted)


def test_a_ctrl_c_keeps_the_best_bound_so_far(monkeypatch):
    inst = _queue().with_mode("gang")
    start = incumbent(inst)
    ctrl_c_in_pricing(monkeypatch, inst, 3)  # during the fourth iteration
    found = column_bound(inst, start.objective, 1.0)
    assert found.stopped == "interrupted" and found.iterations == 3
    assert found.bound == max(found.trace)


@pytest.mark.parametrize("solves", [1, 3])
def test_a_ctrl_c_while_a_path_is_added_keeps_the_bound_so_far(monkeypatch, solves):
    """A Ctrl-C while the first path after a master's solve is added (here in its
    holdings) ends the run as interrupted with its bound, not with the master's paths and
    columns out of step."""
    inst = load_instance(ROOT / "instances/exact/exact-jobs10-s0.json")
    start = incumbent(inst)
    seen = {"solves": 0, "fresh": False}
    solve, holding = columns._Master.solve, columns._Master._holding

    def counted(self, budget):
        out = solve(self, budget)
        seen["solves"] += 1
        seen["fresh"] = True
        return out

    def interrupted(self, job, path):
        fresh, seen["fresh"] = seen["fresh"], False
        if fresh and seen["solves"] == solves:
            raise KeyboardInterrupt
        return holding(self, job, path)

    monkeypatch.setattr(columns._Master, "solve", counted)
    monkeypatch.setattr(columns._Master, "_holding", interrupted)
    found = column_bound(inst, start.objective, 1.0, start=start.schedule, cuts=False)
    assert found.stopped == "interrupted" and found.bound is not None
    assert len(found.paths) == found.columns


def test_cuts_added_by_the_last_separation_are_priced(monkeypatch):
    """With one separation per iteration every master solve may end with new cuts: the
    master is solved once more, so the multipliers cover every cut."""
    jobs = (
        Job("one", weight=2.0, compute={"A": 2.0}),
        Job("four", rounds=2, tasks_per_round=4, compute={"A": 2.0}),
        Job("three", rounds=2, tasks_per_round=3, compute={"A": 3.0}),
        Job("two", rounds=3, tasks_per_round=2, compute={"A": 1.0}, arrival=1.0),
    )
    inst = Instance("cuts", jobs, tuple(GPU(f"a{i}", "A") for i in range(4)), mode="gang")
    start = incumbent(inst)
    monkeypatch.setattr(columns, "SEPARATIONS", 1)
    found = column_bound(inst, start.objective, 1.0, start=start.schedule)
    assert found.cuts > 0
    assert found.bound <= solve(inst, "cpsat").objective * (1 + OPTIMAL_TOL)


def test_rounds_of_more_than_127_gpus_are_counted():
    """The cuts count a round's GPUs on a group of 200: the case of
    :func:`_fills_the_group` with rounds of 200 tasks has the same optimum, 10."""
    jobs = (
        Job("one", weight=2.0, compute={"A": 2.0}),
        Job("wide", rounds=2, tasks_per_round=200, compute={"A": 2.0}),
    )
    inst = Instance("wide", jobs, tuple(GPU(f"a{i}", "A") for i in range(200)), mode="gang")
    assert column_bound(inst, 12.0, 1.0).bound == 10.0


def test_a_grid_too_fine_for_the_master_is_refused_before_it_is_built():
    """A master of more than MAX_MASTER_STEPS steps is refused with the way out (its memory
    grows with steps × paths: 1.9 GB at time_unit=0.001 on a 20-job instance)."""
    inst = _queue().with_mode("gang")
    start = incumbent(inst)
    steps = start.makespan / 0.001
    assert steps > columns.MAX_MASTER_STEPS  # the case is what it says
    with pytest.raises(columns.MasterTooLarge, match="coarser time_unit"):
        column_bound(inst, start.objective, 0.001)
    assert column_bound(inst, start.objective, 1.0, iterations=1).bound is not None


def _with_late_copy(inst: Instance, delay: float) -> Instance:
    """``inst`` and a copy of its jobs arriving ``delay`` seconds later (ids suffixed ~late)."""
    late = tuple(
        dataclasses.replace(j, id=f"{j.id}~late", arrival=j.arrival + delay) for j in inst.jobs
    )
    return Instance(inst.name, inst.jobs + late, inst.gpus, mode=inst.mode)


def test_parts_where_the_whole_instance_is_too_large_to_price():
    """A grid of few steps, but two jobs of 4,000 rounds whose programmes, with the third
    job's 9,000 s later in the deadlines, are too large to price: the separated parts are
    bounded apart (the first, still too large, by its critical paths less a relative
    10⁻⁹)."""
    jobs = (
        Job("a", rounds=4000, compute={"A": 1.0}),
        Job("b", rounds=4000, compute={"A": 1.0}),
        Job("c", arrival=9000.0, rounds=2, compute={"A": 1.0}),
    )
    inst = Instance("cells", jobs, (GPU("g0", "A"),), mode="relaxed")
    start = incumbent(inst)
    unit = column_time_unit(inst, start.makespan, None)
    assert start.makespan / unit <= columns.MAX_MASTER_STEPS  # the case is what it says
    with pytest.raises(lagrangian.TooLarge, match="would price"):
        column_bound(inst, start.objective, unit)
    found = columns.column_bound_from(inst, start.schedule, iterations=5)
    assert found.parts == 2 and found.stopped == "too large" and found.bound is not None
    assert found.bound >= critical_path_bound(inst) * (1 - 1e-9)


def test_separated_parts_cut_where_the_schedule_leaves_a_gap():
    """Jobs in arrival order, a new part at each arrival after every earlier completion."""
    jobs = (
        Job("b", arrival=1.0, compute={"A": 2.0}),  # runs [1, 3)
        Job("a", compute={"A": 2.0}),  # runs [0, 2)
        Job("c", arrival=3.0, compute={"A": 1.0}),  # arrives as b completes
        Job("d", arrival=3.5, compute={"A": 1.0}),  # overlaps c
    )
    inst = Instance("gaps", jobs, (GPU("g0", "A"), GPU("g1", "A")), mode="relaxed")
    assert columns.separated_parts(inst, incumbent(inst).schedule) == [[1, 0], [2, 3]]


@settings(deadline=None, max_examples=n_examples(20))
@given(instances(max_jobs=3, integer=True))
def test_a_late_copy_is_bounded_by_parts(instance):
    """The jobs twice, the copy 10⁷ s later: one grid from the first arrival would be too
    large to price, so the bound sums the parts alone (two at least: the jobs may
    separate on their own), at most the optimum (each half's optimum, the copy's shifted by
    Σ w × the delay) and at least the critical path; cpsat starts its search from it."""
    delay = 1e7
    inst = _with_late_copy(instance, delay)
    start = incumbent(inst)
    with pytest.raises(lagrangian.TooLarge):
        column_bound(inst, start.objective, column_time_unit(inst, start.makespan, None))
    found = columns.column_bound_from(inst, start.schedule)
    assert found.parts >= 2 and found.bound is not None
    optimum = solve(instance, "cpsat", time_limit=5).objective
    weight = sum(j.weight for j in instance.jobs)
    assert found.bound <= (2 * optimum + weight * delay) * (1 + OPTIMAL_TOL)
    assert found.bound >= critical_path_bound(inst) * (1 - 1e-9)
    result = solve(inst, "cpsat", time_limit=10)
    assert result.extra["lp_parts"] >= 2 and result.extra["lp_status"] != "too large"
    assert result.extra["lp_bound"] <= result.objective * (1 + OPTIMAL_TOL)


@pytest.mark.parametrize("mode", ["gang", "relaxed"])
def test_parts_at_their_critical_paths_at_an_epoch_origin_lose_no_schedule(mode):
    """Two parts 10⁶ s apart near 1.7e9 s, each at its critical paths (its jobs on two
    GPUs): their sum is the optimum to a few units in the last place, which once made
    cpsat's objective floor (⌈bound⌉ on its 1-ms grid) one step above the optimum
    (INFEASIBLE)."""
    jobs = (
        Job("j0", arrival=1700055948.239, compute={"A": 253.561}),
        Job("j1", arrival=1700056048.913, compute={"A": 0.105}),
        Job("j2", arrival=1701055948.239, compute={"A": 274.819}),
        Job("j3", arrival=1701056049.134, compute={"A": 0.989}, weight=2.0),
    )
    inst = Instance("far", jobs, (GPU("g0", "A"), GPU("g1", "A")), mode=mode)
    result = solve(inst, "cpsat")
    assert result.extra["lp_parts"] == 2 and result.extra["solver_status"] == "OPTIMAL"
    assert result.extra["lp_bound"] <= result.objective


def _coarse_unit(instance: Instance, share: float) -> float:
    """A grid step of ``share`` of the shortest compute time (3 decimals, at least 0.001)."""
    shortest = float(np.min(instance.compute[np.isfinite(instance.compute)]))
    return max(0.001, math.floor(share * shortest * 1000) / 1000)


@settings(deadline=None, max_examples=n_examples(40))
@given(
    instances(max_jobs=3, integer=False),
    st.sampled_from([0.3, 0.6, 0.9]),
    st.booleans(),
)
def test_exact_compute_times_on_a_coarse_grid_stay_below_the_optimum(instance, share, cuts):
    """On a grid coarser than the data, relaxed mode prices each task's exact compute time
    (a part of a step beyond its whole steps), and both modes round a round's compute + sync
    down as one time: every iteration of column generation (from a schedule's rounds, in
    relaxed mode at their real occupancy) and of the subgradient, and every branching node's
    bound, stay at most the optimum."""
    from optsched.exact.branching import branch_on_completions

    optimum = solve(instance, "cpsat", time_limit=5).objective * (1 + OPTIMAL_TOL)
    start = incumbent(instance)
    unit = _coarse_unit(instance, share)
    found = column_bound(instance, start.objective, unit, cuts=cuts, start=start.schedule)
    assert found.bound is not None and max(found.trace) <= optimum
    sub = lagrangian_bound(instance, start.objective, unit, iterations=50)
    assert sub.bound is not None and sub.bound <= optimum
    tree = branch_on_completions(
        column_bound, instance, start.objective, unit, start=start.schedule, work=2.0
    )
    assert tree.bound <= optimum


@settings(deadline=None, max_examples=n_examples(60))
@given(
    instances_with_schedules(mode="relaxed", max_jobs=4, integer=False),
    st.sampled_from([0.3, 0.9]),
)
def test_a_schedules_rounds_at_their_real_occupancy_hold_the_capacity(drawn, share):
    """The master's first paths, a feasible schedule's tasks at the share of each step they
    compute in, hold at most every group's GPUs at every step: the master starts feasible."""
    instance, schedule = drawn
    unit = _coarse_unit(instance, share)
    upper = evaluate(instance, schedule)[0]
    problem = lagrangian._problem(instance, upper, unit, None)
    _, jobs, rows, horizon, _, _ = problem
    usage = np.zeros((rows.rows, horizon + 1))
    for j, _, path in columns._schedule_paths(problem, schedule, unit):
        for step in path:
            lagrangian.add_held(usage, step, rows.use[jobs[j].k_tasks])
    assert np.cumsum(usage, axis=1).max() <= 1 + 1e-9


def test_exact_compute_times_count_what_whole_steps_leave_out(monkeypatch):
    """Four tasks of 1.9 s on one GPU, on a grid of 1 s (optimum 1.9 + 3.8 + 5.7 + 7.6 =
    19): whole steps count 1 s of each, so they fit in 4 s, and the bound is 1 + 2 + 3 + 4 =
    10 steps; at their exact 1.9 s of the GPU it is 13. With the conflict cuts (their exact
    pricing counts whole steps) the run is the one in whole steps."""
    gpu = (GPU("g0", "T"),)
    jobs = tuple(Job(f"j{i}", 0.0, 1.0, 1, 1, compute={"T": 1.9}) for i in range(4))
    instance = Instance("four", jobs, gpu, mode="relaxed")
    exact = column_bound(instance, 19.0, 1.0, cuts=False)
    # with relaxed mode's cuts, priced exactly in whole steps, every task counts whole steps
    cut = column_bound(instance, 19.0, 1.0, cuts=True)
    monkeypatch.setattr(lagrangian, "FRACTIONAL_LOSS", math.inf)
    whole = column_bound(instance, 19.0, 1.0, cuts=False)
    assert (whole.bound, exact.bound) == (10.0, 13.0)
    assert exact.stopped == whole.stopped == "converged"
    assert cut.trace == column_bound(instance, 19.0, 1.0, cuts=True).trace


def test_an_upper_below_the_optimum_is_refused_but_not_in_a_box():
    """An ``upper`` below the optimum (9) is no feasible objective: once a bound passes it the
    run refuses it. In a branching node's box the bound may pass the incumbent (no schedule
    in the box is as good), so there it is returned."""
    inst = _pair()
    with pytest.raises(lagrangian.AboveUpper, match=r"upper = 7\.0"):
        column_bound(inst, 7.0, 1.0)
    assert column_bound(inst, 9.0, 1.0).bound == 9.0
    boxed = column_bound(inst, 9.0, 1.0, restrict={0: (2, 2), 1: (2, 2)})
    assert boxed.bound is not None and boxed.bound > 9.0
