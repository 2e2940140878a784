"""Round-based allocation: the LPs (optsched.exact.allocation) by hand, against PuLP/CBC and
for feasibility; the policies (optsched.online.allocation) through the checker."""

from __future__ import annotations

from typing import Any

import numpy as np
import pulp
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optsched import simulate
from optsched.errors import InputError
from optsched.exact.allocation import (
    AllocationProblem,
    max_min_share,
    max_total_share,
    min_makespan,
    min_max_rho,
)
from optsched.instance import GPU, Instance, Job
from optsched.output import json_text
from optsched.testing import instances
from tests.conftest import n_examples

# the CBC cross-check builds its models the way PuLP 3 documents (deprecated for PuLP 4)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulp")

POLICIES = (
    "max-min-fairness",
    "max-throughput",
    "min-makespan",
    "finish-time-fairness",
    "isolated",
)


@st.composite
def problems(draw: st.DrawFn) -> AllocationProblem:
    """1–6 jobs on 1–3 types of 0–4 GPUs, K in 1–3, rates 0 (cannot run) or in [0.1, 5];
    the jobs drawn from 1–6 kinds, so identical jobs (grouped by the LPs) are common."""
    n, m = draw(st.integers(1, 6)), draw(st.integers(1, 3))
    rate = st.one_of(st.just(0.0), st.floats(0.1, 5.0))
    kinds = [
        (
            [draw(rate) for _ in range(m)],
            draw(st.integers(1, 3)),
            draw(st.sampled_from([1.0, 2.0, 0.5])),
        )
        for _ in range(draw(st.integers(1, 6)))
    ]
    jobs = [kinds[draw(st.integers(0, len(kinds) - 1))] for _ in range(n)]
    rates = np.array([row for row, _, _ in jobs])
    capacity = np.array([draw(st.integers(0, 4)) for _ in range(m)], dtype=float)
    scale = np.array([k for _, k, _ in jobs], dtype=float)
    weights = np.array([w for _, _, w in jobs])
    problem = AllocationProblem(rates, scale, capacity, weights)
    assume(problem.runnable().any(axis=1).all())  # every job can run somewhere
    return problem


def pair_variables(problem: AllocationProblem, name: str) -> dict[tuple[int, int], Any]:
    """A non-negative PuLP variable per (job, type) pair the job can run on."""
    n, m = problem.shape
    runnable = problem.runnable()
    return {
        (j, t): pulp.LpVariable(f"{name}_{j}_{t}", 0)
        for j in range(n)
        for t in range(m)
        if runnable[j, t]
    }


def cbc_max_min(problem: AllocationProblem, reference: np.ndarray) -> float:
    """The max-min LP written independently in PuLP and solved by CBC."""
    n, m = problem.shape
    lp = pulp.LpProblem("maxmin", pulp.LpMaximize)
    z = pulp.LpVariable("z")
    x = pair_variables(problem, "x")
    lp += z
    for j in range(n):
        lp += pulp.lpSum(v for (i, _), v in x.items() if i == j) <= 1
        lp += z * reference[j] * problem.weights[j] <= pulp.lpSum(
            problem.rates[j, t] * v for (i, t), v in x.items() if i == j
        )
    for t in range(m):
        lp += pulp.lpSum(problem.scale[j] * v for (j, s), v in x.items() if s == t) <= float(
            problem.capacity[t]
        )
    assert lp.solve(pulp.PULP_CBC_CMD(msg=False)) == pulp.LpStatusOptimal
    return float(z.value())


def cbc_makespan(problem: AllocationProblem, remaining: np.ndarray) -> float:
    """min T with Y = T·X, written independently in PuLP and solved by CBC."""
    n, m = problem.shape
    lp = pulp.LpProblem("span", pulp.LpMinimize)
    span = pulp.LpVariable("T", 0)
    y = pair_variables(problem, "y")
    lp += span
    for j in range(n):
        lp += pulp.lpSum(v for (i, _), v in y.items() if i == j) <= span
        lp += pulp.lpSum(problem.rates[j, t] * v for (i, t), v in y.items() if i == j) >= float(
            remaining[j]
        )
    for t in range(m):
        lp += (
            pulp.lpSum(problem.scale[j] * v for (j, s), v in y.items() if s == t)
            <= float(problem.capacity[t]) * span
        )
    assert lp.solve(pulp.PULP_CBC_CMD(msg=False)) == pulp.LpStatusOptimal
    return float(span.value())


def test_hand_computed_allocations_on_one_gpu():
    """Two jobs share one GPU, rates 1 and 2. Max-min: x1 = 2 x2 = z, x1 + x2 = 1, so
    z = 2/3. Makespan with 1 and 2 units left: both need 1 s of the GPU, T = 2. Finish-time
    fairness with elapsed 0 and ideal 1 each: ρ_j = R_j / (rate_j x_j), equal at x = ½, ρ = 2."""
    problem = AllocationProblem(np.array([[1.0], [2.0]]), [1, 1], [1.0], [1.0, 1.0])
    share = max_min_share(problem, np.ones(2))
    assert share.value == pytest.approx(2 / 3)
    assert share.x[:, 0] == pytest.approx([2 / 3, 1 / 3])
    span = min_makespan(problem, np.array([1.0, 2.0]))
    assert span.value == pytest.approx(2.0) and span.x.sum() == pytest.approx(1.0)
    rho = min_max_rho(problem, np.zeros(2), np.array([1.0, 2.0]), np.ones(2), tolerance=1e-6)
    assert rho.lower <= 2.0 <= rho.upper <= rho.lower * (1 + 1e-6)
    assert rho.x[:, 0] == pytest.approx([0.5, 0.5], abs=1e-5)
    best = max_total_share(problem, np.ones(2))
    assert best.value == pytest.approx(2.0) and best.x[1, 0] == pytest.approx(1.0)


def test_fill_keeps_the_max_min_level_and_uses_the_rest():
    """One job can run only on type 0, the other on both: the plain LP may leave type 1
    idle above the optimum; with fill the second job takes all of it."""
    problem = AllocationProblem(np.array([[1.0, 0.0], [1.0, 1.0]]), [1, 1], [1, 1], [1, 1])
    plain = max_min_share(problem, np.ones(2))
    filled = max_min_share(problem, np.ones(2), fill="throughput")
    assert plain.value == pytest.approx(1.0) == filled.value
    assert problem.throughput(filled.x) == pytest.approx([1.0, 1.0])
    assert filled.x[1, 1] == pytest.approx(1.0)


@settings(max_examples=n_examples(30), deadline=None)
@given(problems(), st.data())
def test_every_allocation_is_feasible_and_matches_cbc(problem, data):
    n, _ = problem.shape
    reference = np.asarray(
        data.draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n, max_size=n))
    )
    remaining = np.asarray(data.draw(st.lists(st.floats(0.5, 10.0), min_size=n, max_size=n)))
    for fill in ("none", "throughput"):
        share = max_min_share(problem, reference, fill=fill)
        assert problem.violation(share.x) <= 1e-7
        level = problem.throughput(share.x) / (reference * problem.weights)
        assert level.min() >= share.value * (1 - 1e-6) - 1e-9
    central = max_min_share(problem, reference, central=True)  # interior point: tolerances
    assert problem.violation(central.x) <= 1e-6
    assert central.value == pytest.approx(share.value, rel=1e-5, abs=1e-7)
    assert share.value == pytest.approx(cbc_max_min(problem, reference), rel=1e-6, abs=1e-9)
    span = min_makespan(problem, remaining)
    assert problem.violation(span.x) <= 1e-7
    assert span.value == pytest.approx(cbc_makespan(problem, remaining), rel=1e-6)
    done = problem.throughput(span.x) * span.value
    assert np.all(done >= remaining * (1 - 1e-6))
    total = max_total_share(problem, reference)
    assert problem.violation(total.x) <= 1e-7
    elapsed = np.asarray(data.draw(st.lists(st.floats(0.0, 5.0), min_size=n, max_size=n)))
    ideal = elapsed + remaining
    rho = min_max_rho(problem, elapsed, remaining, ideal)
    assert problem.violation(rho.x) <= 1e-7
    got = ((elapsed + remaining / problem.throughput(rho.x)) / ideal).max()
    assert rho.lower <= got <= rho.upper * (1 + 1e-6)
    assert rho.upper <= rho.lower * (1 + 1e-4)


def gang_instance_for_allocation(inst: Instance) -> Instance:
    """The instance when every job fits on K GPUs of one type it runs on, else reject."""
    try:
        from optsched.online.allocation import AllocationPolicy

        AllocationPolicy().validate(inst)
    except InputError:
        assume(False)
    return inst


@settings(max_examples=n_examples(20), deadline=None)
@given(instances(mode="gang", max_rounds=3), st.sampled_from(POLICIES), st.data())
def test_every_allocation_policy_passes_the_checker(inst, policy, data):
    inst = gang_instance_for_allocation(inst)
    params = {"period": str(data.draw(st.sampled_from([0, 1, 5])))}
    params["backfill"] = data.draw(st.sampled_from(["0", "1"]))
    if policy != "isolated":  # no LP: nothing to be agnostic about
        params["agnostic"] = data.draw(st.sampled_from(["0", "1"]))
    if policy == "max-min-fairness":
        params["fill"] = data.draw(st.sampled_from(["none", "throughput"]))
        params["parts"] = data.draw(st.sampled_from(["1", "2"]))
    result = simulate(inst, policy, params=params)
    assert result.extra["checked"] and result.metrics["max_rho"] > 0
    json_text(dict(result.extra))  # the policy's report too: finite, JSON
    report = result.extra["policy"]
    assert report["solves"] >= 1
    if params.get("parts") == "2":  # pieces (or the whole LP where a piece is too small)
        assert 0 <= report["certified_gap"]["median"] <= report["certified_gap"]["max"] < 1


def test_options_belong_to_the_policies_they_change():
    """fill is max-min's; agnostic and solution are the LP policies'; isolated has neither."""
    jobs = (Job(id="a", rounds=2, compute={"V100": 1.0}),)
    inst = Instance("one", jobs, (GPU("g", "V100"),), mode="gang")
    with pytest.raises(InputError, match="no parameter 'fill'"):
        simulate(inst, "min-makespan", params={"fill": "throughput"})
    with pytest.raises(InputError, match="no parameter 'agnostic'"):
        simulate(inst, "isolated", params={"agnostic": "1"})
    assert simulate(inst, "max-throughput", params={"solution": "central"}).extra["checked"]


def test_a_job_that_fits_no_single_type_is_refused():
    inst = Instance(
        "split",
        (Job(id="a", tasks_per_round=2, compute={"V100": 1.0, "K80": 2.0}),),
        (GPU("g0", "V100"), GPU("g1", "K80")),
        mode="gang",
    )
    with pytest.raises(InputError, match="needs 2 GPUs of one type"):
        simulate(inst, "max-min-fairness")


def test_max_min_fairness_shares_one_gpu_evenly():
    """Two equal jobs of 4 one-second rounds on one GPU: LAS alternates them, so both
    finish near the end (7 and 8 s), where FIFO would finish one at 4 s."""
    jobs = tuple(Job(id=j, rounds=4, compute={"V100": 1.0}) for j in ("a", "b"))
    inst = Instance("two", jobs, (GPU("g", "V100"),), mode="gang")
    done = simulate(inst, "max-min-fairness").simulation.completion
    assert sorted(done) == [7.0, 8.0]
    assert sorted(simulate(inst, "fifo-perf").simulation.completion) == [4.0, 8.0]


def test_the_realisation_of_each_allocation_is_reported():
    """Two equal jobs of 4 one-second rounds on one GPU: the first allocation promises each
    half the GPU (z = ½) until a completes at 7, by when b has held it 3 s of 7 (realised
    3/7); then b alone is promised and gets the whole GPU. Tracking compares each job's work
    with the work its promised throughput would have done."""
    jobs = tuple(Job(id=j, rounds=4, compute={"V100": 1.0}) for j in ("a", "b"))
    inst = Instance("two", jobs, (GPU("g", "V100"),), mode="gang")
    report = simulate(inst, "max-min-fairness").extra["policy"]
    assert report["solves"] == 2
    real = report["realisation"]
    flat = [v for interval in real["intervals"] for v in interval]
    assert flat == pytest.approx([0, 7, 0.5, 3 / 7, 7, 8, 1, 1], abs=1e-6)
    assert real["promised_mean"] == pytest.approx((0.5 * 7 + 1) / 8)
    assert real["realised_mean"] == pytest.approx((3 + 1) / 8, abs=1e-6)
    assert real["starved"] == 0
    # a was promised 3.5 rounds of work and did 4; b was promised 3.5 + 1 and did 3 + 1
    assert report["tracking"]["mean"] == pytest.approx((4 / 3.5 + 4 / 4.5) / 2)
    assert report["tracking"]["min"] == pytest.approx(4 / 4.5)


def test_large_max_min_lps_take_the_interior_point_path_to_the_same_optimum(monkeypatch):
    """From IPM_MIN_COLUMNS columns the max-min vertex comes from HiGHS's interior point and
    crossover: the same optimum as the primal simplex, feasible."""
    from optsched.exact import allocation

    rng = np.random.default_rng(3)
    n = 1200  # 3,600 columns
    problem = AllocationProblem(
        rng.uniform(0.2, 2.0, (n, 3)),
        rng.choice([1, 2, 4], n).astype(float),
        np.array([200.0, 200.0, 200.0]),
        rng.choice([1.0, 2.0], n),
    )
    reference = problem.rates.mean(axis=1)
    by_ipm = max_min_share(problem, reference)
    monkeypatch.setattr(allocation, "IPM_MIN_COLUMNS", 10**9)
    by_simplex = max_min_share(problem, reference)
    assert by_ipm.value == pytest.approx(by_simplex.value, rel=1e-7)
    assert problem.violation(by_ipm.x) <= 1e-7


def test_a_jobs_reference_throughput_does_not_depend_on_the_other_jobs():
    """The reference a policy normalises by is computed row by row: a job's is the same,
    to the last bit, whichever jobs it is solved with (a matrix product's can differ with
    the number of rows, which split identical jobs into kinds of their own)."""
    rng = np.random.default_rng(5)
    rates = rng.random((300, 3)) * (rng.random((300, 3)) < 0.8) + 1e-3
    scale = rng.integers(1, 5, 300).astype(float)
    capacity = np.array([12.0, 12.0, 12.0])
    alone = [
        AllocationProblem(rates[i : i + 1], scale[i : i + 1], capacity, [1.0]).reference()[0]
        for i in range(300)
    ]
    for n in (2, 3, 5, 8, 17, 64, 150, 300):
        together = AllocationProblem(rates[:n], scale[:n], capacity, np.ones(n)).reference()
        assert together.tolist() == alone[:n]
    wide = rng.random((40, 9)) + 1e-3  # nine types, rows stored column-major
    columns = AllocationProblem(np.asfortranarray(wide), np.ones(40), np.ones(9), np.ones(40))
    assert columns.reference().tolist() == [
        AllocationProblem(wide[i : i + 1], [1.0], np.ones(9), [1.0]).reference()[0]
        for i in range(40)
    ]


def test_identical_jobs_get_identical_shares():
    """Four identical jobs and one other: the grouped LP gives the four the same shares,
    and its optimum is the one CBC finds without grouping."""
    rates = np.array([[1.0, 2.0]] * 4 + [[3.0, 0.5]])
    problem = AllocationProblem(rates, [1, 1, 1, 1, 2], [2.0, 3.0], [1.0] * 5)
    reference = np.ones(5)
    share = max_min_share(problem, reference)
    assert np.allclose(share.x[:4], share.x[0])
    assert share.value == pytest.approx(cbc_max_min(problem, reference), rel=1e-7)
    assert problem.violation(share.x) <= 1e-9


def test_deficits_keep_a_job_from_starving_across_re_solves(monkeypatch):
    """Three equal long jobs on one GPU, and a short job arriving every 2 s, each arrival a
    re-solve that resets the received shares: every unserved job then has priority ∞, and
    without the deficits carried across solves the earlier arrivals would win every tie
    (c starved for 20 rounds in this run); with them the three take turns."""
    from optsched.online import allocation

    jobs = [Job(id=name, rounds=30, compute={"V100": 1.0}) for name in "abc"]
    jobs += [
        Job(id=f"t{k}", arrival=2.0 * k + 0.5, rounds=1, compute={"V100": 0.01})
        for k in range(1, 12)
    ]
    inst = Instance("turns", tuple(jobs), (GPU("g", "V100"),), mode="gang")

    def turns() -> str:
        schedule = simulate(inst, "max-min-fairness").schedule
        starts = sorted(schedule.tasks, key=lambda t: t.start)
        return "".join(t.job for t in starts if len(t.job) == 1)[:21]

    fair = turns()
    assert min(fair.count(name) for name in "abc") >= 6, fair
    monkeypatch.setattr(
        allocation.AllocationPolicy, "_carry_deficits", lambda self, now, held: None
    )
    assert turns().count("c") <= 4


@settings(max_examples=n_examples(30), deadline=None)
@given(problems(), st.integers(2, 3))
def test_partitioned_max_min_brackets_the_optimum(problem, parts):
    """POP-style pieces: a feasible allocation whose least utility is at most the optimum,
    and a dual bound at least the optimum (up to HiGHS's tolerances)."""
    from optsched.exact.allocation import max_min_partitioned

    n, _ = problem.shape
    reference = np.ones(n)
    # each piece gets the drawn capacity, so every job still fits in its piece
    problem = AllocationProblem(
        problem.rates, problem.scale, problem.capacity * parts, problem.weights
    )
    pop = max_min_partitioned(problem, reference, parts)
    best = max_min_share(problem, reference).value
    assert problem.violation(pop.x) <= 1e-7
    assert pop.lower <= best + 1e-7 and best <= pop.upper + 1e-7
    assert pop.value == pytest.approx(
        (problem.throughput(pop.x) / (reference * problem.weights)).min(), abs=1e-9
    )


@settings(max_examples=n_examples(40), deadline=None)
@given(st.data())
def test_stacked_blocks_are_the_column_matrix_scipy_would_build(data):
    """The allocation LPs stack their blocks (triplets or scipy matrices) straight into
    canonical column-wise form; it must be the matrix scipy's conversions make (HiGHS then
    solves the very same model), and blocks with repeated entries go through scipy, which
    sums them."""
    from scipy.sparse import coo_array, csc_array, csr_array, vstack

    from optsched.exact.allocation import _block, _vstack
    from optsched.exact.highs import ColumnMatrix

    n_cols = data.draw(st.integers(1, 6))
    blocks, given, repeated = [], [], False
    for _ in range(data.draw(st.integers(1, 3))):
        n_rows = data.draw(st.integers(1, 5))
        cells = data.draw(
            st.lists(
                st.tuples(st.integers(0, n_rows - 1), st.integers(0, n_cols - 1)),
                max_size=n_rows * n_cols + 3,
            )
        )
        values = data.draw(
            st.lists(st.floats(-5, 5, allow_nan=False), min_size=len(cells), max_size=len(cells))
        )
        repeated |= len(set(cells)) < len(cells)
        rows, cols = (np.array([c[i] for c in cells], dtype=np.int64) for i in (0, 1))
        blocks.append(coo_array((np.array(values), (rows, cols)), shape=(n_rows, n_cols)))
        triplets = _block(np.array(values), rows, cols, (n_rows, n_cols))
        given.append(triplets if data.draw(st.booleans()) else blocks[-1])
    ours = _vstack(given)
    theirs = csc_array(vstack([csr_array(b) for b in blocks]))
    assert ours.shape == theirs.shape
    if repeated:
        np.testing.assert_array_equal(ours.toarray(), theirs.toarray())
    else:
        assert isinstance(ours, ColumnMatrix)
        for name in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))
    with pytest.raises(ValueError, match="same columns"):
        _vstack([*blocks, coo_array((1, n_cols + 1))])


@settings(max_examples=n_examples(200), deadline=None)
@given(
    rows=st.integers(1, 30),
    cols=st.integers(1, 5),
    levels=st.sampled_from([1, 2, 3, 0.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_identical_jobs_are_found_as_numpy_unique_finds_them(rows, cols, levels, seed):
    """The grouping of identical jobs orders and indexes the distinct rows as np.unique
    does (the grouped LP, and so the allocation, depends on that order)."""
    from optsched.exact.allocation import _distinct_rows

    rng = np.random.default_rng(seed)
    key = (rng.integers(0, 3, (rows, cols)) * levels).astype(float)  # many equal rows
    key[rng.random((rows, cols)) < 0.1] *= -1.0  # −0.0 where the value is 0
    first, of = _distinct_rows(key)
    _, their_first, their_of = np.unique(key, axis=0, return_index=True, return_inverse=True)
    np.testing.assert_array_equal(first, their_first)
    np.testing.assert_array_equal(of, their_of.reshape(-1))


#: A finish-time allocation whose bisection reaches levels feasible only within HiGHS's
#: tolerance (demands of about 0.002 rounds/s, tolerance 10⁻⁷): a warm-started test that
#: loosened its demands by a relative 10⁻⁶ to confirm "infeasible" answered otherwise than
#: a solve from scratch (Gavel's light trace on 1 V100 + 2 P100 + 3 K80).
BORDERLINE_RHO = {
    "rates": [
        [0.0027781894108441997, 0.0017439613574658256, 0.00044115903567751985],
        [0.002777430266596212, 0.0020578513285304865, 0.0009172120400618773],
        [0.0027775113490899205, 0.0022064317997006794, 0.0005606921735384729],
        [0.002777986613984242, 0.0016557960856997509, 0.0003912947030497202],
    ],
    "capacity": [1.0, 2.0, 3.0],
    "elapsed": [7998.0, 3322.0, 720.0, 0.0],
    "remaining": [26.0, 32.0, 40.0, 30.0],
    "ideal": [31622.26474161787, 24883.95511691543, 27050.021162208042, 24781.568050066475],
}


def _rho_both_ways(problem, elapsed, remaining, ideal, tolerance):
    warm = min_max_rho(problem, elapsed, remaining, ideal, tolerance=tolerance)
    cold = min_max_rho(problem, elapsed, remaining, ideal, tolerance=tolerance, warm_start=False)
    for field in ("value", "lower", "upper"):
        assert getattr(warm, field) == getattr(cold, field), field
    np.testing.assert_array_equal(warm.x, cold.x)


def test_a_warm_started_bisection_answers_as_solves_from_scratch_at_the_tolerance():
    b = BORDERLINE_RHO
    problem = AllocationProblem(b["rates"], np.ones(4), b["capacity"], np.ones(4))
    _rho_both_ways(problem, *(np.array(b[k]) for k in ("elapsed", "remaining", "ideal")), 1e-4)


def test_a_dual_ray_counts_only_for_an_infeasibility_beyond_the_tolerance():
    """One job, one GPU: x ≤ 1 (time), x ≤ 1 (capacity), throughput x ≥ d. The ray
    (1, 0, 1) proves d = 2 infeasible, but not d = 1 + 10⁻⁸, which a solver may call
    feasible within its tolerance."""
    from optsched.exact.allocation import _block, _infeasible_beyond, _vstack

    a_ub = _vstack([_block(np.array([1.0, 1.0, -1.0]), np.arange(3), np.zeros(3), (3, 1))])
    column_of = np.zeros(3, dtype=int)
    ray = np.array([1.0, 0.0, 1.0])
    assert _infeasible_beyond(a_ub, column_of, np.array([1.0, 1.0, -2.0]), ray)
    assert not _infeasible_beyond(a_ub, column_of, np.array([1.0, 1.0, -1 - 1e-8]), ray)
    assert not _infeasible_beyond(a_ub, column_of, np.array([1.0, 1.0, -0.5]), ray)


@settings(max_examples=n_examples(100), deadline=None)
@given(
    n=st.integers(1, 10),
    m=st.integers(1, 3),
    unit=st.sampled_from([1.0, 1e-3, 1e-4, 1e3]),
    tolerance=st.sampled_from([1e-4, 1e-6, 1e-9]),
    seed=st.integers(0, 2**32 - 1),
)
def test_finish_time_bisection_warm_or_from_scratch_is_the_same(n, m, unit, tolerance, seed):
    """Warm-started tests reproduce the bisection whose every test is solved from scratch,
    levels, answers and allocation, at any scale of the rates and down to a relative
    tolerance of 10⁻⁹ (where the last tests are within HiGHS's own tolerance)."""
    rng = np.random.default_rng(seed)
    rates = rng.random((n, m)) * (rng.random((n, m)) > 0.2) * unit
    rates[np.arange(n), rng.integers(0, m, n)] = (rng.random(n) + 0.1) * unit
    problem = AllocationProblem(
        rates, rng.choice([1, 1, 2, 4], n), rng.integers(4, 12, m), rng.choice([1, 2, 0.5], n)
    )
    elapsed = rng.choice([0.0, 1.0, 50.0], n) * rng.random(n)
    _rho_both_ways(problem, elapsed, rng.random(n) * 100 + 0.1, rng.random(n) * 50 + 1, tolerance)


@given(st.lists(st.integers(0, 2**31), min_size=2, max_size=6))
def test_small_lps_share_one_highs_object_without_changing_a_vertex(seeds):
    """Small LPs solved in a row in one thread go through one cleared ``Highs`` object: each
    gives bit for bit the vertex (and duals) of a new object, whatever the LP before it
    asked for (interior point, a time limit, another size, an infeasible model)."""
    from optsched.exact import highs

    def random_lp(seed: int) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        n, m = int(rng.integers(2, 12)), int(rng.integers(1, 8))
        a = np.where(rng.random((m, n)) < 0.6, rng.integers(-3, 4, (m, n)), 0).astype(float)
        return {
            "c": -rng.integers(0, 4, n).astype(float),
            "A_ub": a,
            "b_ub": rng.integers(-1, 6, m).astype(float),
            "bounds": (0, float(rng.integers(1, 3))),
            "method": str(rng.choice(["primal", "dual", "ipm"])),
        }

    def solved(lp: dict[str, Any]) -> tuple[Any, ...]:
        r = highs.linprog(
            lp["c"], A_ub=lp["A_ub"], b_ub=lp["b_ub"], bounds=lp["bounds"], method=lp["method"]
        )
        return (
            r.status,
            r.x.tobytes(),
            r.fun,
            None if r.ineqlin.marginals is None else r.ineqlin.marginals.tobytes(),
        )

    lps = [random_lp(seed) for seed in seeds]
    shared = [solved(lp) for lp in lps]
    fresh = []
    for lp in lps:
        highs._shared.highs = None  # a new object for this one
        fresh.append(solved(lp))
    assert shared == fresh


def test_a_run_in_this_thread_survives_a_scheduler_started_with_another_thread_count(
    monkeypatch,
):
    """``run_here`` runs first at HiGHS's default and then sets ``threads`` to the count
    that default gives; where that is not the scheduler's count, HiGHS refuses the run, and
    it is run again at the default (0), which is kept from then on (in that thread)."""
    import highspy

    from optsched.exact import highs

    model = highs._highs(shared=False)
    model.setOptionValue("output_flag", False)
    model.addCol(-1.0, 0.0, 2.0, 0, np.zeros(0, np.int32), np.zeros(0))
    monkeypatch.delattr(highs._run_threads, "count", raising=False)
    for _ in range(2):  # the first run starts the scheduler (if nothing had), the second pins
        highs.run_here(model)
        assert model.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert highs._run_threads.count == highs._default_threads() >= 1
    monkeypatch.setattr(highs._run_threads, "count", highs._run_threads.count + 1)
    model.changeColBounds(0, 0.0, 3.0)
    for _ in range(2):  # an edited model, then an unchanged one (its old status still there)
        highs.run_here(model)
        assert model.getModelStatus() == highspy.HighsModelStatus.kOptimal
        assert model.getSolution().col_value == [3.0]
        assert highs._run_threads.count == 0
        monkeypatch.setattr(highs._run_threads, "count", highs._default_threads() + 1)


def test_the_policys_own_waiting_queue_changes_no_decision(monkeypatch):
    """The allocation policies keep the engine's waiting queue without its order and queue
    the jobs that entered it: the same schedule as with the engine's ordered queue, where they
    compare every waiting job with those they have queued; the queue still reads in order."""
    from optsched.online import allocation
    from optsched.online.simulator import WaitingQueue

    jobs = [
        Job(id=f"j{i}", arrival=float(i % 5), rounds=3 + i % 4, compute={"V100": 1.0 + i % 3})
        for i in range(12)
    ]
    gpus = tuple(GPU(f"g{i}", "V100") for i in range(3))
    inst = Instance("queue", tuple(jobs), gpus, mode="gang")
    ours = simulate(inst, "max-min-fairness").schedule
    monkeypatch.setattr(
        allocation.AllocationPolicy, "waiting_queue", lambda self, states: WaitingQueue(states)
    )
    assert simulate(inst, "max-min-fairness").schedule == ours
    queue = allocation._EnteredQueue({})
    for j, arrival in ((3, 2.0), (1, 5.0), (2, 1.0)):
        queue.put(j, (arrival,))
    queue.drop(1)
    assert [j for _, j in queue._entries] == [2, 3] and len(queue) == 2
    assert queue.entered == [3, 1, 2]


@pytest.mark.parametrize("policy", ["max-min-fairness", "max-throughput", "min-makespan"])
def test_backfill_queues_filled_on_demand_change_no_decision(monkeypatch, policy):
    """A job queued on its own enters the backfill queues only when the priorities leave
    GPUs idle: the same schedule as putting it there at once, on runs where backfill
    starts rounds."""
    import heapq

    from optsched.online import allocation

    jobs = [
        Job(
            id=f"j{i}",
            arrival=float(i % 7) * 2.5,
            rounds=2 + i % 5,
            tasks_per_round=1 + i % 2,
            compute={"V100": 1.0 + i % 3, "K80": 2.5 + i % 4},
        )
        for i in range(40)
    ]
    gpus = tuple(GPU(f"v{i}", "V100") for i in range(3)) + tuple(
        GPU(f"k{i}", "K80") for i in range(4)
    )
    inst = Instance("backfill", tuple(jobs), gpus, mode="gang")
    filled = []
    fill, one = (
        allocation.AllocationPolicy._fill_arrivals,
        allocation.AllocationPolicy._enqueue_one,
    )

    def counted(self):
        filled.append(len(self._arrivals_one))
        fill(self)

    monkeypatch.setattr(allocation.AllocationPolicy, "_fill_arrivals", counted)
    lazy = simulate(inst, policy).schedule
    assert any(filled)

    def at_once(self, row):
        one(self, row)
        self._arrivals_one.pop()
        for c, pace in enumerate(self._pace_rows[row]):
            if pace < float("inf"):
                heapq.heappush(self._by_arrival[c], (row, self._version[row]))

    monkeypatch.setattr(allocation.AllocationPolicy, "_enqueue_one", at_once)
    assert simulate(inst, policy).schedule == lazy
