"""Branching on completion times over column-bound (optsched.exact.branching)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, solve
from optsched.ect import completions, evaluate, incumbent
from optsched.exact.branching import _split, _within, branch_on_completions
from optsched.exact.columns import column_bound, column_time_unit
from optsched.exact.grid import to_steps
from optsched.exact.lagrangian import _problem
from optsched.result import OPTIMAL_TOL
from optsched.schedule import Schedule
from optsched.testing import instances, instances_with_schedules
from tests.conftest import n_examples
from tests.test_lagrangian_bound import _queue


@settings(deadline=None, max_examples=n_examples(60))
@given(instances(max_jobs=4), st.booleans())
def test_branching_stays_at_most_the_optimum_and_proves_it_from_the_optimum(instance, ect):
    """From ECT's schedule or CP-SAT's: the value never passes the optimum and never falls
    below the root's; where no node below the incumbent is left, the incumbent is optimal.
    (A lowest node whose master mixes no completions need not be a schedule: a round wider
    than its group takes one slot in its path.)"""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = incumbent(instance).schedule if ect else optimum.schedule
    upper, makespan = evaluate(instance, start)
    unit = column_time_unit(instance, makespan, None)
    # a work budget too: on coarse grids relaxed nodes price exact compute times, whose
    # masters settle slowly on some draws (minutes without it)
    found = branch_on_completions(
        column_bound, instance, upper, unit, start=start, max_nodes=200, work=5
    )
    root = found.root.bound
    assert found.bound is not None and root is not None
    assert min(root, upper) <= found.bound <= optimum.objective * (1 + OPTIMAL_TOL)
    proved = optimum.status == "optimal"
    if found.stopped == "optimal":
        assert found.bound == upper and found.open == 0
        if proved:
            assert upper <= optimum.objective * (1 + OPTIMAL_TOL)


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_branching_proves_what_the_root_leaves_open(mode):
    """Six jobs queue for two fast GPUs: branching from an optimal schedule proves it; in
    gang mode the root stays below the optimum (160) and a few nodes close the gap (CP-SAT's
    own bound was 157 after 20 s)."""
    inst = _queue().with_mode(mode)
    optimum = solve(inst, "cpsat", time_limit=20)
    found = branch_on_completions(
        column_bound, inst, optimum.objective, 1.0, start=optimum.schedule
    )
    assert found.stopped == "optimal" and found.bound == optimum.objective
    if mode == "gang":
        assert found.root.bound is not None and found.root.bound < optimum.objective
        assert found.nodes > 1


def test_a_ctrl_c_between_two_children_keeps_their_parent_open():
    """A node leaves the open set only once both its children are bounded: a Ctrl-C while
    the second one is bounded keeps the value at the parent's."""
    inst = _queue().with_mode("gang")
    start = incumbent(inst)
    calls = {"n": 0}

    def interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # the root, the first child, then the second
            raise KeyboardInterrupt
        return column_bound(*args, **kwargs)

    found = branch_on_completions(interrupted, inst, start.objective, 1.0, start=start.schedule)
    assert found.stopped == "interrupted" and found.open == 1
    assert found.bound == found.root.bound


def test_a_ctrl_c_during_the_root_stops_the_branching():
    """column-bound reports a Ctrl-C as its status: branching stops there, at the root's
    value, and bounds no node."""
    inst = _queue().with_mode("gang")
    start = incumbent(inst)
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(kwargs["restrict"])
        return replace(column_bound(*args, **kwargs), stopped="interrupted")

    found = branch_on_completions(interrupted, inst, start.objective, 1.0, start=start.schedule)
    assert found.stopped == "interrupted" and calls == [{}] and found.nodes == 1
    assert found.bound == found.root.bound


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=4))
def test_a_child_priced_from_its_parents_values_runs_as_if_priced_in_full(instance):
    """A child's first pricing at its parent's multipliers, with every job but the one split
    taken from the parent's values, gives the same run as pricing them all (every later
    iteration, the bound, the paths), for less work."""
    start = incumbent(instance)
    unit = column_time_unit(instance, start.makespan, None)
    root = column_bound(instance, start.objective, unit, cuts=False)
    split = _split(_problem(instance, start.objective, unit, None), {}, root.spread)
    if split is None or root.values is None:
        return
    j, least, cut, greatest = split
    weight = _problem(instance, start.objective, unit, None).jobs[j].weight
    for limits in ((least, cut), (cut + 1, greatest)):
        paths, state = _within(root, j, limits, weight)
        child = {
            "restrict": {j: limits},
            "with_paths": paths,
            "state": state,
            "multipliers": root.multipliers,
        }
        known = {i: v for i, v in enumerate(root.values) if i != j}
        try:
            full = column_bound(instance, start.objective, unit, cuts=False, **child)
        except ValueError:  # an empty box
            continue
        part = column_bound(instance, start.objective, unit, cuts=False, known=known, **child)
        assert (part.bound, part.trace, part.iterations, part.paths) == (
            full.bound,
            full.trace,
            full.iterations,
            full.paths,
        )
        assert part.work < full.work


def test_known_values_need_their_multipliers():
    inst = _queue()
    start = incumbent(inst)
    fine = column_bound(inst, start.objective, 1.0, cuts=False, iterations=3)
    assert fine.values is not None
    known = dict(enumerate(fine.values))
    for bad in (
        {"known": known},  # without the multipliers they hold at
        {"known": {inst.n_jobs: 0.0}, "multipliers": fine.multipliers},
        {"known": {0: float("nan")}, "multipliers": fine.multipliers},
    ):
        with pytest.raises(ValueError, match="known"):
            column_bound(inst, start.objective, 1.0, **bad)


def test_a_node_stopped_by_its_iterations_is_not_called_integral():
    """After one pricing round the root's master has no solution to show a mix: branching
    stops on the root's reason, not as if its master mixed nothing."""
    inst = _queue().with_mode("gang")
    start = incumbent(inst)
    found = branch_on_completions(
        column_bound, inst, start.objective, 1.0, start=start.schedule, iterations=1
    )
    assert found.stopped == "iterations" and found.root.spread == ()


def test_an_empty_box_and_paths_off_the_grid_are_refused():
    inst = Instance(
        "e",
        (
            Job("a", rounds=2, compute={"T": 3.0}),
            Job("b", compute={"T": 2.0}),
        ),
        (GPU("g0", "T"),),
    )
    for box in ({0: (0, 2)}, {0: (7, 3)}):  # a completes at 6 at the earliest
        with pytest.raises(ValueError, match="holds no schedule"):
            column_bound(inst, 11.0, 1.0, cuts=False, restrict=box)
    fine = column_bound(inst, 11.0, 0.5, cuts=False)
    assert fine.paths
    with pytest.raises(ValueError, match="outside this grid"):
        column_bound(inst, 11.0, 1.0, cuts=False, with_paths=fine.paths)


def test_a_weight_floored_to_zero_on_the_grid_is_no_division():
    """A weight of 1e-7 beside 1/3 floors to 0 on the grid: the master's mix skips it."""
    jobs = (
        Job("a", weight=1 / 3, compute={"T": 2.0}),
        Job("b", weight=1e-7, compute={"T": 1.0}),
    )
    inst = Instance("tiny", jobs, (GPU("g0", "T"),))
    for params in ({}, {"branch": True}):
        assert solve(inst, "column-bound", params=params).bound is not None


def test_the_method_reports_its_nodes():
    inst = _queue().with_mode("gang")
    best = solve(inst, "cpsat", time_limit=20).schedule
    plain = solve(inst, "column-bound", params={"cuts": False}, hint=best)
    branched = solve(inst, "column-bound", params={"branch": True}, hint=best)
    assert branched.extra["nodes"] > 1 and plain.extra["nodes"] == 0
    assert plain.bound < branched.bound == 160 and branched.extra["stopped"] == "optimal"


def _wide() -> Instance:
    """Rounds wider than their group: 2 and 3 tasks on 1 GPU."""
    jobs = (
        Job(
            "j0",
            arrival=2.0,
            rounds=3,
            tasks_per_round=2,
            compute={"T0": 0.701},
            sync={"T0": 2.66},
        ),
        Job(
            "j1",
            arrival=5.0,
            weight=3.0,
            rounds=3,
            tasks_per_round=3,
            compute={"T0": 5.836},
            sync={"T0": 2.523},
        ),
    )
    return Instance("wide", jobs, (GPU("g0", "T0"),), mode="relaxed")


def _boxed_bound(instance: Instance, schedule: Schedule) -> tuple[float | None, float]:
    """(column-bound on the box of ``schedule``'s own completions, its objective)."""
    upper, makespan = evaluate(instance, schedule)
    unit = column_time_unit(instance, makespan, None)
    # a completion a few ulps below a grid point stands for that point: the box holds both
    done = completions(instance, schedule)
    slack = 1e-12 * max(1.0, float(abs(done).max()))
    least, greatest = (to_steps(done + d, unit, "down") for d in (-slack, slack))
    origin = int(to_steps(min(job.arrival for job in instance.jobs), unit, "down"))
    box = {
        j: (int(a) - origin, int(b) - origin)
        for j, (a, b) in enumerate(zip(least, greatest, strict=True))
    }
    gang = instance.mode == "gang"  # the cuts as branching's nodes price them
    found = column_bound(instance, upper, unit, cuts=gang, restrict=box, iterations=30)
    return found.bound, upper


@settings(deadline=None, max_examples=n_examples(100))
@given(instances_with_schedules(max_jobs=4, max_k=4))
def test_a_box_that_holds_a_schedule_bounds_it(case):
    """The box of a schedule's own completions (grid steps, rounded down) holds that
    schedule, so its bound is at most the schedule's objective: the property every split
    of the branching rests on."""
    bound, objective = _boxed_bound(*case)
    assert bound is None or bound <= objective * (1 + OPTIMAL_TOL)


def test_a_path_completes_before_the_schedule_it_stands_for():
    """A round wider than its group runs its tasks one after another, but the programme's
    path of it takes one slot and completes earlier than the schedule: a box limits a
    path's completion from above and its cost from below, never its completion from below
    (a limit from below, and windows cut for every round, once proved 241.88 here against
    the optimum 224.239)."""
    inst = _wide()
    for schedule in (incumbent(inst).schedule, solve(inst, "cpsat", time_limit=20).schedule):
        bound, objective = _boxed_bound(inst, schedule)
        assert bound is not None and bound <= objective * (1 + OPTIMAL_TOL)
