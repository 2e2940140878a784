"""Hare's step 1 at scale: the LP relaxation of Hare_Sched_RL with lazy Queyranne cuts
(optsched/exact/hare_lp.py, models/hare-rl-lp.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from optsched import Status, check, solve
from optsched.ect import ect_schedule
from optsched.exact.hare_lp import _Model, solve_hare_lp
from optsched.exact.hare_relaxation import heterogeneity_degree, relaxation_fits
from optsched.generate import HareSpec, generate_hare
from optsched.heuristics.hare import hare_list_schedule
from optsched.io import load_instance
from optsched.testing import instances
from tests.conftest import ROOT, assert_out_of_time, n_examples

TOL = 1e-6
SMALL = sorted((ROOT / "instances" / "hare-small").glob("hare-small-jobs[34]-s*.json"))


def _algorithm1(inst, lp):
    """Step 2 of Algorithm 1 (published GPU rule) ordered by the LP's x̂; checked."""
    schedule, objective = hare_list_schedule(
        inst, lambda j, r, k: float(lp.round_starts[j][r]), "earliest-free"
    )
    report = check(inst, schedule)
    assert report.feasible, report.violations[:3]
    assert report.objective == pytest.approx(objective, rel=1e-9)
    return objective


def _assert_step1(inst, exact):
    """LP bound ≤ OPT, x̂ respects rounds, Algorithm 1's schedule is feasible, at least OPT
    and within α(2+α) of the LP bound when α is defined. OPT lies between the bound and the
    objective of ``exact`` (a CP-SAT result on integer data: both are OPT once proved, and a
    result short of a proof ran out of time)."""
    if exact.status is not Status.OPTIMAL:
        assert_out_of_time(exact)
    upper, lower = exact.objective, exact.bound
    lp = solve_hare_lp(inst, time_limit=30)
    assert lp.bound is not None and lp.converged
    assert lp.bound <= upper + TOL * max(1.0, upper)
    for j, starts in enumerate(lp.round_starts):
        job = inst.jobs[j]
        assert starts[0] >= job.arrival - TOL
        assert np.all(np.diff(starts) > 0)
    objective = _algorithm1(inst, lp)
    assert objective >= lower - TOL * max(1.0, lower)
    alpha = heterogeneity_degree(inst)
    if alpha is not None and lp.bound > 0:
        assert objective <= alpha * (2 + alpha) * lp.bound * (1 + 1e-9)
    return lp


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.stem)
def test_lp_bound_below_the_optimum_and_hare_within_its_factor(path):
    inst = load_instance(path).with_mode("relaxed")
    _assert_step1(inst, solve(inst, "cpsat", time_limit=60, params={"lp_bound": "0"}))


@settings(max_examples=n_examples(25), deadline=None)
@given(
    instances(
        mode="relaxed",
        max_jobs=3,
        max_gpus=3,
        max_rounds=2,
        max_k=2,
        integer=True,
        positive_sync=True,
    )
)
def test_lp_bound_below_the_optimum_on_random_instances(inst):
    _assert_step1(inst, solve(inst, "cpsat", time_limit=5, params={"lp_bound": "0"}))


@settings(max_examples=n_examples(25), deadline=None)
@given(instances(mode="relaxed", max_jobs=4, max_gpus=4, max_rounds=3, max_k=3))
def test_every_schedule_satisfies_every_cut(inst):
    """Validity of the subset inequalities: the LP point of a feasible schedule violates
    none of them, in any order of the rounds (the most violated set is a prefix of the
    mean-busy-time order, which is one of the orders tried)."""
    model = _Model(inst)
    x = model.point(ect_schedule(inst))
    rng = np.random.default_rng(0)
    for q in range(len(model.m)):
        orders = [model.fresh_order(x, q)]
        orders += [rng.permutation(orders[0]) for _ in range(3)]
        for order in orders:
            a, b = model.terms(x, q, order)
            assert np.all(np.cumsum(b) ** 2 / (2 * model.m[q]) <= np.cumsum(a) * (1 + 1e-9) + 1e-9)


def test_bound_at_least_the_earliest_finish_and_lemma_2_prefix_inequality():
    """The LP is at least Σ w (a + R·f); at its optimum, every prefix S of Algorithm 1's
    H order satisfies Σ_{i∈S} T_min,i ≤ 2 α M H_j (models/hare-rl-lp.md, Lemma 2')."""
    inst = generate_hare(HareSpec(jobs=8, gpus=8, total_tasks=160), 0)
    lp = solve_hare_lp(inst, time_limit=60)
    assert lp.bound is not None and lp.converged
    model = _Model(inst)
    w = np.array([job.weight for job in inst.jobs])
    a = np.array([job.arrival for job in inst.jobs])
    r = np.array([job.rounds for job in inst.jobs])
    assert lp.bound >= float(w @ (a + r * model.fastest)) - TOL
    alpha = heterogeneity_degree(inst)
    assert alpha is not None
    tmin = np.array([inst.compute[j, inst.eligible(j)].min() for j in range(inst.n_jobs)])
    tmax = np.array([inst.compute[j, inst.eligible(j)].max() for j in range(inst.n_jobs)])
    h = np.concatenate([lp.round_starts[j] + 0.5 * tmax[j] for j in range(inst.n_jobs)])
    work = np.concatenate(
        [np.full(job.rounds, job.tasks_per_round * tmin[j]) for j, job in enumerate(inst.jobs)]
    )
    order = np.argsort(h, kind="stable")
    prefix = np.cumsum(work[order])
    assert np.all(prefix <= 2 * alpha * inst.n_gpus * h[order] * (1 + 1e-3) + 1e-9)


def test_a_tiny_time_limit_leaves_no_bound_or_a_valid_one():
    inst = generate_hare(HareSpec(jobs=8, gpus=8, total_tasks=160), 0)
    full = solve_hare_lp(inst)
    lp = solve_hare_lp(inst, time_limit=1e-4)
    assert lp.bound is None or lp.bound <= full.bound + TOL * full.bound
    assert lp.status.startswith(("not solved", "time limit", "converged"))
    assert lp.round_starts is None or lp.bound is not None


def test_exact_relaxation_is_used_only_where_it_fits():
    assert relaxation_fits(load_instance(SMALL[0]))
    assert not relaxation_fits(generate_hare(HareSpec(), 0))


@pytest.mark.slow
def test_paper_scale_converges_above_the_critical_path():
    """300 jobs, 160 GPUs, ~50,000 tasks (benchmarks/hare_scale.py)."""
    from optsched.critical_path import critical_path_bound

    inst = generate_hare(HareSpec(), 0)
    lp = solve_hare_lp(inst, time_limit=600)
    assert lp.converged and lp.bound is not None
    assert lp.bound >= critical_path_bound(inst) - TOL * lp.bound
    objective = _algorithm1(inst, lp)
    assert objective >= lp.bound


def test_pulp_highs_still_works_after_the_step1_lp():
    """HiGHS keeps a per-process thread pool; after the step-1 LP, PuLP's HiGHS must still
    solve (it returned 'Not Set' before the pool was released, and the result fell back on
    the ECT schedule at once). Two jobs: proved in milliseconds on a quiet machine."""
    from optsched.generate import GeneratorSpec, generate

    solve_hare_lp(generate_hare(HareSpec(jobs=8, gpus=8, total_tasks=160), 0), time_limit=1e-4)
    solve_hare_lp(generate_hare(HareSpec(jobs=8, gpus=8, total_tasks=160), 0))
    result = solve(generate(GeneratorSpec(jobs=2, gpus=2), 0), "milp-highs", time_limit=20)
    assert result.extra["solver_status"] in ("Optimal", "Time limit reached"), result.extra
    if result.status is not Status.OPTIMAL:
        assert_out_of_time(result)
