"""The fluid work bound: never above the optimum, exact where the relaxation is, stronger than
the critical path when jobs compete for the cluster."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from optsched import GPU, GeneratorSpec, Instance, Job, generate, solve
from optsched.critical_path import critical_path_bound
from optsched.exact.fluid import fluid_bound, preemptive_wspt_mean_busy
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
    bound, capacity = fluid_bound(instance)
    assert 0 < capacity <= instance.n_gpus
    assert optimum.bound is not None
    assert bound <= optimum.objective * (1 + OPTIMAL_TOL)
    result = solve(instance, "fluid-bound")  # checked like every method's bound
    assert result.bound >= max(bound, critical_path_bound(instance)) - 1e-9


def test_exact_for_single_task_jobs_on_one_gpu():
    """1||Σ w_j C_j: WSPT is optimal, and so is the bound. WSPT's order j2, j0, j3, j1
    completes at 1, 3, 4, 8: Σ w_j C_j = 2 + 9 + 4 + 8 = 23."""
    jobs = tuple(
        Job(f"j{k}", weight=w, compute={"V100": p})
        for k, (w, p) in enumerate([(3, 2.0), (1, 4.0), (2, 1.0), (1, 1.0)])
    )
    inst = Instance("one-gpu", jobs, (GPU("g", "V100"),))
    assert_optimum(solve(inst, "cpsat"), 23.0)
    assert fluid_bound(inst)[0] == pytest.approx(23.0, rel=1e-8)
    assert critical_path_bound(inst) < 23.0


def test_stronger_than_the_critical_path_when_jobs_compete():
    """Heavier load (arrivals closer together): the critical path ignores the queue."""
    inst = generate(GeneratorSpec(jobs=20, gpus=8, gpu_types=2, hosts=2, load=4.0), seed=0)
    assert fluid_bound(inst)[0] > 1.2 * critical_path_bound(inst)
    result = solve(inst, "fluid-bound")
    assert result.bound_source == "method" and result.extra["capacity"] <= 8
