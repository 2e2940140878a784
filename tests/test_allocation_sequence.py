"""Allocation LPs edited and warm-started across a run (optsched.exact.allocation_sequence):
every solve against the same LP solved from scratch, as the jobs come and go."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
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
from optsched.exact.allocation_sequence import GROUPED, AllocationSequence
from optsched.testing import instances
from tests.conftest import n_examples
from tests.test_allocation import gang_instance_for_allocation

OBJECTIVES = ("max-min-fairness", "max-throughput", "min-makespan", "finish-time-fairness")


@st.composite
def runs(draw: st.DrawFn) -> tuple[np.ndarray, list[dict[str, np.ndarray]]]:
    """A cluster of 1–3 types and a run of 2–8 solves over a pool of up to 8 jobs of 1–4
    kinds (identical jobs common), each solve's jobs a random subset of the pool, with
    random remaining work, elapsed time and ideal time; rates at a scale of 1, 1/360 or
    10⁻⁴, and ideal times up to 1,000× the work (demands far below HiGHS's tolerance)."""
    m = draw(st.integers(1, 3))
    capacity = np.array([draw(st.integers(1, 6)) for _ in range(m)], dtype=float)
    unit = draw(st.sampled_from([1.0, 1 / 360, 1e-4]))
    rate = st.one_of(st.just(0.0), st.floats(0.1, 5.0))
    kinds = []
    for _ in range(draw(st.integers(1, 4))):
        rates = [draw(rate) for _ in range(m)]
        k = draw(st.integers(1, 3))
        if not any(r > 0 and k <= c for r, c in zip(rates, capacity, strict=True)):
            rates[int(np.argmax(capacity))], k = 1.0, 1  # it must run somewhere
        kinds.append((rates, k, draw(st.sampled_from([1.0, 2.0, 0.5]))))
    pool = [kinds[draw(st.integers(0, len(kinds) - 1))] for _ in range(draw(st.integers(1, 8)))]
    steps = []
    for _ in range(draw(st.integers(2, 8))):
        jobs = sorted(draw(st.sets(st.integers(0, len(pool) - 1), min_size=1)))
        n = len(jobs)
        remaining = np.array([draw(st.sampled_from([0.01, 0.5, 3.0, 20.0])) for _ in range(n)])
        elapsed = np.array([draw(st.sampled_from([0.0, 1.0, 30.0])) for _ in range(n)])
        steps.append(
            {
                "keys": np.array(jobs),
                "rates": np.array([pool[j][0] for j in jobs]) * unit,
                "scale": np.array([pool[j][1] for j in jobs], dtype=float),
                "weights": np.array([pool[j][2] for j in jobs]),
                "remaining": remaining,
                "elapsed": elapsed,
                "ideal": elapsed + remaining * draw(st.sampled_from([0.5, 1.0, 3.0, 1000.0])),
            }
        )
    return capacity, steps


@settings(max_examples=n_examples(60), deadline=None)
@given(runs(), st.sampled_from(OBJECTIVES), st.sampled_from([0, 64]), st.booleans())
def test_each_solve_of_a_sequence_is_an_optimum_of_its_lp(run, objective, kept, keyed):
    """Every solve of the edited, warm-started model is feasible and has the optimum of the
    same LP solved from scratch (finish-time: the certified brackets overlap and the point's
    level is the one returned), whether the rows of jobs that left are deleted at once
    (``kept`` 0: as soon as they outnumber the live ones) or kept retired, and whether the
    grouped objectives find identical jobs by their keys or by their data (``keyed``)."""
    capacity, steps = run
    sequence = AllocationSequence(objective, capacity)
    sequence.retired_kept = kept
    for step in steps:
        problem = AllocationProblem(step["rates"], step["scale"], capacity, step["weights"])
        reference = problem.reference()
        keys = step["keys"].tolist() if keyed or objective not in GROUPED else None
        got = sequence.solve(
            problem,
            keys,
            reference=reference,
            remaining=step["remaining"],
            elapsed=step["elapsed"],
            ideal=step["ideal"],
        )
        assert problem.violation(got.x) <= 1e-7
        if objective == "max-min-fairness":
            want = max_min_share(problem, reference)
            level = problem.throughput(got.x) / (reference * problem.weights)
            assert level.min() >= got.value * (1 - 1e-6) - 1e-12
        elif objective == "max-throughput":
            want = max_total_share(problem, reference)
            total = problem.weights * problem.throughput(got.x) / reference
            assert total.sum() == pytest.approx(got.value, rel=1e-6)
        elif objective == "min-makespan":
            want = min_makespan(problem, step["remaining"])
            done = problem.throughput(got.x) * got.value
            assert np.all(done >= step["remaining"] * (1 - 1e-6))
        else:
            terms = step["elapsed"], step["remaining"], step["ideal"]
            want = min_max_rho(problem, *terms)
            # certified: the returned point's own level is the upper end
            assert got.lower <= _own_level(problem, got.x, terms) <= got.upper * (1 + 1e-12)
            least = (terms[1] / (got.upper * terms[2] - terms[0])).min()
            if least > 1e-5:  # every demand well above HiGHS's tolerance: as tight as asked
                assert got.upper <= got.lower * (1 + 1e-4) * (1 + 1e-9)
            if _own_level(problem, want.x, terms) <= want.upper * (1 + 1e-6):
                # (from scratch, a tiny demand can be met within tolerance only: no bracket)
                assert got.lower <= want.upper * (1 + 1e-6) and want.lower <= got.upper * (
                    1 + 1e-9
                )
            continue
        assert got.value == pytest.approx(want.value, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("kept", [0, 4, 64])
def test_a_job_leaving_and_coming_back_keeps_the_model_consistent(kept):
    """Jobs leave (their rows retired, then deleted together with the basis mended once
    they outnumber the live ones and ``kept``) and come back (added again) many times: the
    model always has its jobs' rows and at most that many retired ones, and solves to the
    optimum."""
    rng = np.random.default_rng(7)
    capacity = np.array([4.0, 8.0, 2.0])
    rates = rng.random((12, 3)) + 0.1
    sequence = AllocationSequence("min-makespan", capacity)
    sequence.retired_kept = kept
    deletions, rows_before = 0, 0
    for _ in range(60):
        jobs = np.flatnonzero(rng.random(12) < 0.5)
        if not len(jobs):
            continue
        problem = AllocationProblem(rates[jobs], np.ones(len(jobs)), capacity, np.ones(len(jobs)))
        remaining = rng.random(len(jobs)) * 10 + 1
        got = sequence.solve(problem, jobs.tolist(), remaining=remaining)
        assert got.value == pytest.approx(min_makespan(problem, remaining).value, rel=1e-7)
        rows, live = len(sequence._keys), int(sequence._live.sum())
        assert live == len(jobs) and rows - live <= max(kept, live)
        deletions, rows_before = deletions + (rows < rows_before), rows
        assert sequence._highs.getNumRow() == 3 + 2 * rows
        assert sequence._highs.getNumCol() == 1 + 3 * rows
    assert deletions > 0  # the retired rows were deleted (and the basis mended)
    assert sequence.iterations < 40 * sequence.solves  # warm: a few pivots a solve


def test_total_throughput_keeps_an_optimum_its_edits_leave_optimal():
    """A kind with no share (its time row slack) gains and loses jobs, and leaves: the last
    optimum stays optimal, so no LP is solved, and the value is that of a solve from scratch;
    a job joining the kind that has the whole GPU is solved again."""
    capacity = np.array([1.0])
    fast, slow = [4.0], [1.0]  # max-throughput gives the one GPU to the fast kind
    sequence = AllocationSequence("max-throughput", capacity)
    runs = []
    for jobs in ([fast, slow], [fast, slow, slow], [fast, slow], [fast], [fast, fast]):
        problem = AllocationProblem(jobs, np.ones(len(jobs)), capacity, np.ones(len(jobs)))
        reference = np.ones(len(jobs))
        got = sequence.solve(problem, list(range(len(jobs))), reference=reference)
        assert got.value == pytest.approx(max_total_share(problem, reference).value, rel=1e-9)
        assert problem.violation(got.x) <= 1e-9
        runs.append(got.solves)
    assert runs == [1, 0, 0, 0, 1]


def test_a_sequence_refuses_what_it_cannot_solve():
    capacity = np.array([2.0])
    problem = AllocationProblem(np.ones((2, 1)), [1, 1], capacity, [1, 1])
    with pytest.raises(InputError, match="capacity"):
        AllocationSequence("max-min-fairness", np.array([3.0])).solve(
            problem, reference=np.ones(2)
        )
    with pytest.raises(InputError, match="reference"):
        AllocationSequence("max-min-fairness", capacity).solve(problem)
    with pytest.raises(InputError, match="distinct key"):
        AllocationSequence("min-makespan", capacity).solve(problem, [1, 1], remaining=np.ones(2))
    with pytest.raises(InputError, match="remaining"):
        AllocationSequence("min-makespan", capacity).solve(problem, [1, 2])


@settings(max_examples=n_examples(20), deadline=None)
@given(instances(mode="gang", max_rounds=3), st.sampled_from(OBJECTIVES), st.data())
def test_allocation_policies_pass_the_checker_warm_or_from_scratch(inst, policy, data):
    """Both ways of solving the LPs give checked schedules."""
    inst = gang_instance_for_allocation(inst)
    period = data.draw(st.sampled_from(["0", "5"]))
    for warm in ("0", "1"):
        result = simulate(inst, policy, params={"warm": warm, "period": period})
        assert result.extra["checked"] and result.extra["policy"]["solves"] >= 1


def _tiny_demand() -> tuple[AllocationProblem, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Job A is slow with a tiny ideal time (its least ρ is about 2,000); job B is fast,
    with little work left and a long ideal time, so at ρ ≈ 2,000 it needs a throughput of
    0.1 / (2,000 · 1,000) = 5·10⁻⁸: below HiGHS's absolute feasibility tolerance (10⁻⁷)."""
    problem = AllocationProblem([[1e-3], [1.0]], [1, 1], [1.0], [1, 1])
    return problem, (np.zeros(2), np.array([0.165, 0.1]), np.array([0.0826, 1000.0]))


def _own_level(problem: AllocationProblem, x: np.ndarray, terms: tuple[np.ndarray, ...]):
    elapsed, remaining, ideal = terms
    with np.errstate(divide="ignore"):
        return float(((elapsed + remaining / problem.throughput(x)) / ideal).max())


def test_a_demand_below_the_solvers_tolerance_is_still_met():
    """The sequence scales each demand row to a right-hand side near 1, so job B gets its
    throughput and the bracket is certified by the returned point (found by review: unscaled,
    B got nothing and the level was infinite)."""
    problem, terms = _tiny_demand()
    sequence = AllocationSequence("finish-time-fairness", problem.capacity)
    elapsed, remaining, ideal = terms
    got = sequence.solve(problem, ["A", "B"], elapsed=elapsed, remaining=remaining, ideal=ideal)
    assert got.lower <= _own_level(problem, got.x, terms) == got.upper
    assert got.upper <= got.lower * (1 + 1e-4) * (1 + 1e-9)
    assert problem.throughput(got.x)[1] > 0


@pytest.mark.xfail(
    strict=True,
    reason="known: every test from scratch (warm=0) meets a demand "
    "below HiGHS's absolute tolerance with no throughput; the sequence scales it",
)
def test_from_scratch_the_returned_point_has_the_level_returned():
    problem, terms = _tiny_demand()
    got = min_max_rho(problem, *terms)
    assert _own_level(problem, got.x, terms) <= got.upper * (1 + 1e-6)
