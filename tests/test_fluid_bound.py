"""The fluid work bound: never above the optimum, exact where the relaxation is, stronger than
the critical path when jobs compete for the cluster."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, GeneratorSpec, Instance, Job, generate, solve
from optsched.critical_path import critical_path_bound
from optsched.exact.fluid import _same_columns, fluid_bound, preemptive_wspt_mean_busy
from optsched.result import OPTIMAL_TOL
from optsched.testing import instances
from tests.conftest import assert_optimum, n_examples


def test_preemptive_wspt_mean_busy_times():
    # both at 0: the larger w/p first
    assert list(
        preemptive_wspt_mean_busy(np.array([0.0, 0.0]), np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    ) == [0.5, 2.0]
    # job 1 runs [0, 1], job 0 (w/p 2) arrives and runs [1, 2], job 1 resumes [2, 3]
    assert list(
        preemptive_wspt_mean_busy(np.array([1.0, 0.0]), np.array([1.0, 2.0]), np.array([2.0, 1.0]))
    ) == [1.5, 1.5]


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=4, integer=True))
def test_never_above_the_optimum(instance):
    """bound ≤ OPT ≤ CP-SAT's objective (OPT itself once CP-SAT proves it)."""
    optimum = solve(instance, "cpsat", time_limit=5)
    fluid, plain = fluid_bound(instance), fluid_bound(instance, search=False)
    assert 0 < fluid.capacity <= instance.n_gpus and max(fluid.prices) == 1.0
    assert optimum.bound is not None
    assert plain.bound <= fluid.bound <= optimum.objective * (1 + OPTIMAL_TOL)
    result = solve(instance, "fluid-bound")  # checked like every method's bound
    assert result.bound >= max(fluid.bound, critical_path_bound(instance)) - 1e-9
    # at an epoch-scale origin every schedule's objective grows by Σ w_j × origin
    origin = 1.7e9
    shifted = Instance(
        "shifted",
        tuple(dataclasses.replace(job, arrival=job.arrival + origin) for job in instance.jobs),
        instance.gpus,
        mode=instance.mode,
    )
    weight = sum(job.weight for job in instance.jobs)
    assert fluid_bound(shifted).bound <= optimum.objective + weight * origin


def test_exact_for_single_task_jobs_on_one_gpu():
    """1||Σ w_j C_j: WSPT is optimal, and so is the bound. WSPT's order j2, j0, j3, j1
    completes at 1, 3, 4, 8: Σ w_j C_j = 2 + 9 + 4 + 8 = 23."""
    jobs = tuple(
        Job(f"j{k}", weight=w, compute={"V100": p})
        for k, (w, p) in enumerate([(3, 2.0), (1, 4.0), (2, 1.0), (1, 1.0)])
    )
    inst = Instance("one-gpu", jobs, (GPU("g", "V100"),))
    assert_optimum(solve(inst, "cpsat"), 23.0)
    assert fluid_bound(inst).bound == pytest.approx(23.0, rel=1e-8)
    assert critical_path_bound(inst) < 23.0


@pytest.mark.parametrize("origin", [1000.0, 1.7e9])
def test_a_distant_time_origin_moves_the_bound_by_its_weighted_shift(origin):
    """Two 10 s jobs on one GPU at the same arrival: the bound (30) is optimal at any origin.
    Its safety margin is taken on times from the first arrival: on the whole value it gave
    away 1e-9 × Σ w × origin (3.4 at 1.7e9 s), and the result was no longer optimal."""

    def two(at: float) -> Instance:
        jobs = tuple(Job(k, arrival=at, compute={"A": 10.0}) for k in "ab")
        return Instance("two", jobs, (GPU("g", "A"),))

    near, far = fluid_bound(two(0.0)).bound, fluid_bound(two(origin)).bound
    assert abs(far - (near + 2 * origin)) <= 8 * np.spacing(far)
    result = solve(two(origin), "fluid-bound")
    assert result.status == "optimal" and result.objective == 2 * origin + 30.0


def test_stronger_than_the_critical_path_when_jobs_compete():
    """Heavier load (arrivals closer together): the critical path ignores the queue."""
    inst = generate(GeneratorSpec(jobs=20, gpus=8, gpu_types=2, hosts=2, load=4.0), seed=0)
    assert fluid_bound(inst).bound > 1.2 * critical_path_bound(inst)
    result = solve(inst, "fluid-bound")
    assert result.bound_source == "method" and result.extra["capacity"] <= 8


def test_a_better_hint_is_the_schedule_it_reports():
    """As every bound method: the hint when it is feasible and better than ECT's schedule."""
    inst = generate(GeneratorSpec(jobs=20, gpus=8, gpu_types=2, hosts=2, load=4.0), seed=0)
    ect = solve(inst, "fluid-bound")
    better = solve(inst, "priority-search", params={"steps": 50})  # deterministic
    assert better.objective < ect.objective and ect.extra["start"] == "ect"
    hinted = solve(inst, "fluid-bound", hint=better.schedule)
    assert hinted.objective == better.objective and hinted.extra["start"] == "hint"
    assert hinted.bound == ect.bound


def test_prices_see_gpu_types_that_suit_few_jobs():
    """Four jobs fast on A (2 s, 20 s on B) and one fast on B: at unit prices the pooled
    cluster does two jobs' work at once (bound 17.5); pricing B low (1/16 of A) shows that
    the A jobs share about one GPU (20.5), still below the optimum 22 (the A jobs one after
    another on A, the B job on B)."""
    jobs = [Job(f"a{k}", compute={"A": 2.0, "B": 20.0}) for k in range(4)]
    jobs.append(Job("b", compute={"A": 20.0, "B": 2.0}))
    inst = Instance("two-types", tuple(jobs), (GPU("ga", "A"), GPU("gb", "B")))
    assert_optimum(solve(inst, "cpsat"), 22.0)
    plain, priced = fluid_bound(inst, search=False), fluid_bound(inst)
    assert plain.bound == pytest.approx(17.5, rel=1e-8)
    assert 20.0 < priced.bound <= 22.0 and priced.prices[1] < 0.2


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 5).flatmap(
        lambda n: st.lists(
            st.lists(st.sampled_from([1.0, 2.0, 3.0, np.inf]), min_size=n, max_size=n),
            min_size=1,
            max_size=6,
        )
    ),
    st.lists(st.integers(0, 5), min_size=1, max_size=8),
)
def test_classes_are_grouped_and_numbered_as_numpy_unique_does(columns, picks):
    """The price groups (GPU types) of the fluid bound's search: the classes with equal
    compute columns, numbered as np.unique(axis=0) numbers them, so that the search visits
    the types in the same order."""
    compute = np.array([columns[p % len(columns)] for p in picks]).T
    _, expected = np.unique(compute.T, axis=0, return_inverse=True)
    assert np.array_equal(_same_columns(compute), expected.ravel())
