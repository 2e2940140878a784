"""The Lagrangian bound of GPU capacity over time: at most the optimum for every multiplier
it tries (both modes, any grid, priced horizon and time origin), anytime, repeatable, and
stronger than the critical path when jobs queue for GPUs."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, InputError, Instance, Job, solve
from optsched.budget import Budget
from optsched.critical_path import critical_path_bound
from optsched.ect import incumbent
from optsched.exact import lagrangian
from optsched.exact.lagrangian import lagrangian_bound, lagrangian_time_unit
from optsched.result import OPTIMAL_TOL
from optsched.testing import instances
from tests.conftest import n_examples


def _shifted(inst: Instance, origin: float) -> Instance:
    jobs = tuple(dataclasses.replace(j, arrival=j.arrival + origin) for j in inst.jobs)
    return Instance(inst.name, jobs, inst.gpus, mode=inst.mode)


@settings(deadline=None, max_examples=n_examples(60))
@given(instances(max_jobs=4), st.sampled_from([None, 0.5, 0.1]))
def test_every_iteration_is_at_most_the_optimum(instance, cut):
    """Each iteration's value ≤ OPT ≤ CP-SAT's objective, on the data's grid or a coarser one,
    with capacity priced to the end or only over part of the incumbent's makespan."""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = incumbent(instance)
    unit = lagrangian_time_unit(instance, start.makespan, None)
    for grid in (unit, 2 * unit):
        if grid > min(float(c) for c in instance.class_compute[instance.class_compute > 0]):
            continue
        until = None if cut is None else cut * start.makespan
        found = lagrangian_bound(
            instance, start.objective, grid, iterations=40, priced_until=until
        )
        assert found.bound is not None and found.bound == max(found.trace)
        assert found.bound <= optimum.objective * (1 + OPTIMAL_TOL)
        # never below the critical path by more than a step per job (the floor gives back
        # what rounding the times down took)
        weight = sum(j.weight for j in instance.jobs)
        assert found.bound >= critical_path_bound(instance) - weight * grid * (1 + 1e-9)
    # the method: checked like every method's bound
    result = solve(instance, "lagrangian-bound", params={"iterations": 40})
    assert result.bound >= critical_path_bound(instance) * (1 - 1e-9)


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
    result = solve(inst, "lagrangian-bound", params={"iterations": 40})
    assert result.bound <= optimum.objective * (1 + OPTIMAL_TOL)


@settings(deadline=None, max_examples=n_examples(20))
@given(instances(max_jobs=3, integer=True))
def test_an_epoch_scale_origin_changes_nothing_but_the_shift(instance):
    """At an origin of 1.7e9 s every schedule's objective grows by Σ w × origin; the bound
    (integer data) grows by exactly that too, and its grid stays the data's."""
    origin = 1.7e9
    start = incumbent(instance)
    here = lagrangian_bound(instance, start.objective, 1.0, iterations=20)
    weight = sum(j.weight for j in instance.jobs)
    there = lagrangian_bound(
        _shifted(instance, origin), start.objective + weight * origin, 1.0, iterations=20
    )
    assert there.bound == pytest.approx(here.bound + weight * origin, rel=0, abs=1e-6 * origin)


def _queue() -> Instance:
    """Six two-task jobs of 3 rounds at once on two fast and two slow GPUs."""
    jobs = tuple(
        Job(
            f"j{k}",
            weight=1 + k % 3,
            rounds=3,
            tasks_per_round=2,
            compute={"fast": 1.0, "slow": 3.0},
            sync={"fast": 1.0, "slow": 1.0},
        )
        for k in range(6)
    )
    gpus = (GPU("f0", "fast"), GPU("f1", "fast"), GPU("s0", "slow"), GPU("s1", "slow"))
    return Instance("queue", jobs, gpus)


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_sees_the_queue_and_gang_rounds(mode):
    """The jobs queue for the fast GPUs: far above the critical path (each job alone),
    below CP-SAT's schedules; in gang mode a round holds its GPUs while its results sync,
    so the bound is higher than in relaxed mode."""
    inst = _queue().with_mode(mode)
    result = solve(inst, "lagrangian-bound")
    assert result.bound_source == "method"
    assert result.bound > 1.3 * critical_path_bound(inst)
    assert result.bound <= solve(inst, "cpsat", time_limit=2).objective * (1 + OPTIMAL_TOL)
    if mode == "gang":
        relaxed = solve(_queue(), "lagrangian-bound").bound
        assert result.bound > relaxed


def test_anytime_repeatable_and_stopped():
    inst = _queue()
    start = incumbent(inst)
    one = lagrangian_bound(inst, start.objective, 1.0, iterations=1)
    assert one.iterations == 1 and one.stopped == "iterations"
    assert one.bound == critical_path_bound(inst)  # λ = 0: every job alone
    runs = [lagrangian_bound(inst, start.objective, 1.0, iterations=30) for _ in range(2)]
    assert runs[0] == runs[1] and runs[0].bound > one.bound
    expired = Budget(0.0)
    none = lagrangian_bound(inst, start.objective, 1.0, budget=expired)
    assert none.bound is None and none.stopped == "time limit"


def test_rounds_past_the_priced_horizon_are_not_overpriced():
    """A round whose tasks start at or after the priced horizon T gives the next barrier no
    earlier than T + its quickest compute + sync, not T + a whole round: two tasks of 1 s on
    one GPU make a round of 2 s, but its second task alone starts at T = 1."""
    inst = Instance("stack", (Job("j", tasks_per_round=2, compute={"A": 1.0}),), (GPU("g", "A"),))
    assert solve(inst, "cpsat").objective == 2.0
    found = lagrangian_bound(inst, 3.0, 1.0, iterations=50, priced_until=1.0)
    assert found.bound == 2.0


def test_a_grid_too_fine_is_refused_and_the_time_limit_holds_within_an_iteration():
    inst = _queue()
    with pytest.raises(InputError, match=r"time_unit 1e-09.*coarser"):
        solve(inst, "lagrangian-bound", params={"time_unit": "1e-9"})

    class Expiring:
        """Expires at its 8th look: during the second iteration (6 jobs each)."""

        def __init__(self) -> None:
            self.looks = 0

        def expired(self) -> bool:
            self.looks += 1
            return self.looks >= 8

    start = incumbent(inst)
    found = lagrangian_bound(inst, start.objective, 1.0, budget=Expiring())
    assert found.stopped == "time limit" and found.iterations == 1
    assert found.bound == found.trace[0]


def test_a_ctrl_c_keeps_the_best_bound_so_far(monkeypatch):
    inst = _queue()
    start = incumbent(inst)
    calls = {"n": 0}
    price = lagrangian._price

    def interrupted(job, prefix):
        calls["n"] += 1
        if calls["n"] > 3 * inst.n_jobs:  # during the fourth iteration
            raise KeyboardInterrupt
        return price(job, prefix)

    monkeypatch.setattr(lagrangian, "_price", interrupted)
    found = lagrangian_bound(inst, start.objective, 1.0)
    assert found.stopped == "interrupted" and found.iterations == 3
    assert found.bound == max(found.trace)


def _multisets(capacity: int, largest: int) -> list[list[int]]:
    """Every multiset of widths 1..``largest`` (nonincreasing lists) summing to ≤ ``capacity``."""
    out: list[list[int]] = [[]]
    for width in range(min(largest, capacity), 0, -1):
        out += [[width, *rest] for rest in _multisets(capacity - width, width)]
    return out


@pytest.mark.parametrize("capacity", range(1, 13))
def test_the_cuts_hold_for_every_set_of_rounds_that_fits(capacity):
    """Σ v(K_i) ≤ 1 for every set of rounds with Σ K_i ≤ capacity (all of them, enumerated),
    and each cut gives some width more than K / capacity (else it adds nothing)."""
    widths = list(range(1, capacity + 2))  # one width too wide for the capacity
    cuts = lagrangian.dual_feasible(capacity, widths)
    assert len(cuts) <= lagrangian.MAX_CUTS
    assert (capacity >= 3) <= bool(cuts)  # on 3 GPUs or more two rounds of 2 can't fit
    for cut in cuts:
        assert cut[-1] == 0.0  # the width above the capacity
        assert any(v * capacity > w for v, w in zip(cut, widths, strict=True))
        for rounds in _multisets(capacity, capacity):
            assert sum(cut[widths.index(k)] for k in rounds) <= 1 + 1e-12, (cut, rounds)


def _pair() -> Instance:
    """Two jobs of one gang round of 3 tasks (1 s, weight 3) on a group of 4 GPUs: they run
    one after another, optimum 3 · (1 + 2) = 9, critical path 6."""
    jobs = tuple(Job(f"j{k}", weight=3.0, tasks_per_round=3, compute={"A": 1.0}) for k in range(2))
    return Instance("pair", jobs, tuple(GPU(f"g{i}", "A") for i in range(4)), mode="gang")


def test_gang_rounds_that_cannot_share_a_group_run_one_after_another():
    """Two rounds of 3 tasks on one group of 4 GPUs cannot run at once: the capacity row
    alone allows 4/3 rounds at a time (weights 3: an LP value of 3 · (1 + 5/3) = 8); the
    cut u⁽¹⁾ gives each round the whole group, so the bound reaches the optimum
    3 · (1 + 2) = 9."""
    inst = _pair()
    assert solve(inst, "cpsat").objective == 9.0
    assert lagrangian_bound(inst, 9.0, 1.0, iterations=500).bound == 9.0


def test_a_round_spread_over_two_groups_waits_for_the_slower():
    """A round of 3 tasks on two fast and two slow GPUs must use a slow one, and in gang mode
    holds all its GPUs for the slow time (3 s). Two such jobs cannot run at once (4 GPUs):
    the optimum is 3 + 6, and the bound, which holds a spread round for its second-quickest
    group's time, reaches it."""
    jobs = tuple(
        Job(f"j{k}", tasks_per_round=3, compute={"fast": 1.0, "slow": 3.0}) for k in range(2)
    )
    gpus = (GPU("f0", "fast"), GPU("f1", "fast"), GPU("s0", "slow"), GPU("s1", "slow"))
    inst = Instance("spread", jobs, gpus, mode="gang")
    assert solve(inst, "cpsat").objective == 9.0
    assert lagrangian_bound(inst, 9.0, 1.0, iterations=500).bound == 9.0


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(mode="gang", max_jobs=5, max_gpus=5, max_k=4, integer=True))
def test_gang_cuts_stay_below_the_optimum(instance):
    """With many iterations (multipliers far from 0 on every row, cuts included) every
    iteration's value is at most the optimum of gang instances with wide rounds."""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = incumbent(instance)
    found = lagrangian_bound(instance, start.objective, 1.0, iterations=300)
    assert found.bound is not None
    assert max(found.trace) <= optimum.objective * (1 + OPTIMAL_TOL)


def _gpus(**counts: int) -> tuple[GPU, ...]:
    return tuple(GPU(f"{kind}{i}", kind) for kind, n in counts.items() for i in range(n))


#: Gang instances where a wrong price of a spread round or of the cuts shows: (jobs, GPUs,
#: the optimum, the bound after 1,000 iterations).
SPREAD_CASES = {
    # a spread round pays no group's own cut: charging them lifts the bound to 9
    "spread-pays-no-group-cut": (
        tuple(Job(f"j{k}", tasks_per_round=2, compute={"A": 2.0, "B": 3.0}) for k in range(3)),
        _gpus(A=3, B=3),
        8.0,
        8.0,
    ),
    # a spread round pays the cheapest split of its 3 GPUs over the groups (2 + 1), which
    # reaches the optimum; paying the dearest group for all 3 would lift the bound to 31
    "spread-pays-the-cheapest-split": (
        (
            Job("x", weight=3.0, compute={"A": 4.0}),
            Job("x2", weight=3.0, compute={"A": 4.0}),
            Job("y", tasks_per_round=3, compute={"A": 1.0, "B": 2.0}),
        ),
        _gpus(A=2, B=2),
        30.0,
        30.0,
    ),
    # rounds of 3 fit twice in 8 GPUs but once per group of 4: only a group's own cut sees
    # that the fast group takes one round at a time (without it: 8)
    "a-group-cut-matters": (
        tuple(
            Job(f"j{k}", weight=3.0, tasks_per_round=3, compute={"A": 1.0, "B": 9.0})
            for k in range(2)
        ),
        _gpus(A=4, B=4),
        9.0,
        9.0,
    ),
    # a round of 5 spread over three groups of 2 holds its GPUs for the slowest (6), the
    # job's least round time, not only for the second-quickest group's time (2)
    "a-wide-spread-round-holds-for-its-round-time": (
        tuple(
            Job(f"j{k}", tasks_per_round=5, compute={"A": 1.0, "B": 2.0, "C": 6.0})
            for k in range(2)
        ),
        _gpus(A=2, B=2, C=2),
        18.0,
        18.0,
    ),
}


@pytest.mark.parametrize("case", sorted(SPREAD_CASES))
def test_spread_rounds_and_cuts_are_priced_right(case):
    jobs, gpus, optimum, expected = SPREAD_CASES[case]
    inst = Instance(case, jobs, gpus, mode="gang")
    assert solve(inst, "cpsat").objective == optimum
    # deadlines of a looser incumbent: at the optimum's own, the ascent stops on reaching it
    assert lagrangian_bound(inst, optimum + 5, 1.0, iterations=1000).bound == expected


@settings(deadline=None, max_examples=n_examples(40))
@given(
    instances(mode="gang", max_jobs=4, max_gpus=5, max_k=4, integer=True),
    st.integers(0, 2**32 - 1),
    st.sampled_from([None, 0.5]),
)
def test_every_multiplier_gives_a_bound(instance, seed, cut):
    """L(λ) ≤ OPT at random multipliers on every row, cuts included (not only where the
    subgradient steps lead), with capacity priced to the end or over half the makespan."""
    optimum = solve(instance, "cpsat", time_limit=5).objective
    start = incumbent(instance)
    until = None if cut is None else cut * start.makespan
    problem = lagrangian._problem(instance, start.objective, 1.0, until)
    rng = np.random.default_rng(seed)
    for scale in (0.1, 1.0, 10.0, 100.0):
        shape = (problem.rows.rows, problem.horizon)
        lam = scale * rng.random(shape) * (rng.random(shape) < 0.5)
        value, _ = lagrangian._evaluate(problem, lam)
        bound = problem.scaled.objective_to_original(
            float(math.ceil(value - 1e-9 * abs(value) - 1e-9) + problem.shift)
        )
        assert bound <= optimum * (1 + OPTIMAL_TOL)


@settings(deadline=None, max_examples=n_examples(30))
@given(instances(max_jobs=4, integer=True), st.sampled_from([None, 0.5]))
def test_a_start_at_the_lps_prices_stays_a_bound(instance, cut):
    """Started at the class-capacity LP's prices (both modes; an epoch-scale origin
    too, which moves the LP's grid and the programme's steps together): every iteration
    ≤ OPT."""
    from optsched.exact.capacity import capacity_bound

    optimum = solve(instance, "cpsat", time_limit=5).objective
    for origin in (0.0, 1.7e9):
        inst = _shifted(instance, origin)
        start = incumbent(inst)
        lp = capacity_bound(inst, start.objective, start.makespan, 20)
        assert lp.prices is not None
        until = None if cut is None else cut * start.makespan
        found = lagrangian_bound(
            inst, start.objective, 1.0, iterations=10, priced_until=until, start=lp.prices
        )
        assert found.bound is not None
        assert found.bound <= (optimum + origin * sum(j.weight for j in inst.jobs)) * (
            1 + OPTIMAL_TOL
        )


def test_the_lps_prices_start_where_zero_prices_take_iterations_to_reach():
    """On jobs that queue for the fast GPUs, λ at the LP's prices is worth more at once than
    λ = 0 (the critical path): the prices land on the groups' rows."""
    from optsched.exact.capacity import capacity_bound

    inst = _queue()
    start = incumbent(inst)
    lp = capacity_bound(inst, start.objective, start.makespan, 20)
    cold, warm = (
        lagrangian_bound(inst, start.objective, 1.0, iterations=1, start=prices)
        for prices in (None, lp.prices)
    )
    assert warm.trace[0] > cold.trace[0]


def test_start_prices_of_the_wrong_shape_are_refused():
    from optsched.exact.capacity import ClassPrices

    inst = _queue()
    start = incumbent(inst)
    bad = ClassPrices(np.array([0.0, 10.0]), np.ones((5, 1)))
    with pytest.raises(InputError, match="one row per GPU class"):
        lagrangian_bound(inst, start.objective, 1.0, iterations=1, start=bad)


@settings(deadline=None, max_examples=n_examples(100))
@given(
    st.lists(st.integers(1, 4), min_size=2, max_size=4),
    st.integers(2, 8),
    st.lists(st.integers(0, 9), min_size=4, max_size=4),
)
def test_a_spread_round_takes_the_cheapest_split(caps, k_tasks, prices):
    """Greedy against every split of K GPUs over two groups or more (at most caps[i] each)."""
    if sum(caps) < k_tasks:
        return
    price = np.array(prices[: len(caps)], dtype=float)
    cost, counts = lagrangian._split(price[:, None], tuple(caps), k_tasks)
    best = min(
        float(np.dot(split, price))
        for split in itertools.product(*(range(c + 1) for c in caps))
        if sum(split) == k_tasks and sum(1 for n in split if n) >= 2
    )
    assert cost[0] == best
    assert counts[:, 0].sum() == k_tasks and (counts[:, 0] <= np.array(caps)).all()
    assert np.count_nonzero(counts[:, 0]) >= 2


def test_an_upper_below_the_optimum_is_refused_once_a_bound_passes_it():
    """``upper`` sets the deadlines and must be a feasible schedule's objective: on the pair
    of gang rounds above (optimum 9) an upper of 8.5 would have the bound certify 9, above it,
    so the run refuses it; a checked schedule's objective runs as before."""
    inst = _pair()
    with pytest.raises(lagrangian.AboveUpper, match=r"upper = 8\.5"):
        lagrangian_bound(inst, 8.5, 1.0, iterations=500)
    assert lagrangian_bound(inst, incumbent(inst).objective, 1.0, iterations=500).bound == 9.0
