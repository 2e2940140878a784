"""Fairness and tail metrics (optsched.fairness): a hand computation, the checker's and the
engine's agreement, and their invariants on random instances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import check, simulate
from optsched.fairness import (
    FAIRNESS_KEYS,
    FairnessSummary,
    fairness,
    mean_contention,
    percentiles,
)
from optsched.instance import GPU, Instance, Job
from optsched.schedule import Schedule, Task
from optsched.testing import instances


def two_jobs_one_gpu() -> tuple[Instance, Schedule]:
    """A and B arrive at 0, one round of one 2-s task each, on one GPU: A at 0, B at 2."""
    jobs = tuple(Job(id=j, arrival=0.0, rounds=1, compute={"T": 2.0}) for j in ("A", "B"))
    inst = Instance("two", jobs, (GPU("g0", "T"),))
    return inst, Schedule("two", [Task("A", 0, 0, "g0", 0.0), Task("B", 0, 0, "g0", 2.0)])


def test_hand_computed_fairness_of_two_jobs_in_a_row():
    """JCT 2 and 4, alone 2 each; A sees 2 jobs all its life (N̄ = 2), B 2 then 1 (N̄ = 1.5):
    ρ_A = 2 / (2·2) = 0.5, ρ_B = 4 / (1.5·2) = 4/3."""
    inst, sched = two_jobs_one_gpu()
    report = check(inst, sched)
    assert report.feasible
    m = report.metrics
    assert m["max_rho"] == pytest.approx(4 / 3)
    assert m["mean_rho"] == pytest.approx((0.5 + 4 / 3) / 2)
    assert m["jain_rho"] == pytest.approx((0.5 + 4 / 3) ** 2 / (2 * (0.25 + 16 / 9)))
    assert m["unfair_fraction"] == 0.5
    assert m["mean_slowdown"] == pytest.approx(1.5)
    assert m["max_slowdown"] == pytest.approx(2.0)
    assert (m["p50_jct"], m["p95_jct"], m["p99_jct"]) == pytest.approx((3.0, 3.9, 3.98))
    per_job = fairness(inst, report.completion)
    assert per_job.contention == pytest.approx([2.0, 1.5])
    assert per_job.rho == pytest.approx([0.5, 4 / 3])


@given(
    st.lists(st.floats(0, 1e7, allow_nan=False), min_size=1, max_size=40),
    st.lists(st.floats(0, 100), min_size=1, max_size=4),
)
def test_percentiles_are_numpys_floats(values, qs):
    x = np.array(values)
    assert percentiles(x, tuple(qs)) == [float(v) for v in np.percentile(x, qs)]


def test_contention_counts_overlaps_exactly():
    """[0,10), [0,4), [5,7): the first sees 2 jobs for 4 + 2 s and 1 for 4 s (N̄ = 1.6); ties
    at an instant (a job arriving when another completes) count once."""
    got = mean_contention(np.array([0.0, 0.0, 5.0]), np.array([10.0, 4.0, 7.0]))
    assert got == pytest.approx([1.6, 2.0, 2.0])
    back_to_back = mean_contention(np.array([0.0, 1.0]), np.array([1.0, 2.0]))
    assert back_to_back == pytest.approx([1.0, 1.0])


def test_a_result_reads_its_fairness_typed():
    inst, _ = two_jobs_one_gpu()
    result = simulate(inst, "fifo-perf", mode="gang")
    tail = result.fairness
    assert isinstance(tail, FairnessSummary)
    assert tail.max_rho == pytest.approx(4 / 3) and tail.p50_jct == pytest.approx(3.0)
    assert FairnessSummary.of(None) == FairnessSummary()


@given(instances(mode="gang"), st.sampled_from(["fifo-perf", "srtf", "homo"]))
def test_fairness_invariants_and_the_engine_agrees_with_the_checker(inst, policy):
    """Slowdown ≥ 1 (T_alone is each job's time alone), N̄ ≥ 1, Jain in [1/n, 1], and the
    engine's streamed metrics (no schedule kept) equal the checker's."""
    checked = simulate(inst, policy)
    streamed = simulate(inst, policy, record=False)
    m = checked.metrics
    assert set(FAIRNESS_KEYS) <= set(m)
    for key in FAIRNESS_KEYS:
        assert math.isclose(m[key], streamed.metrics[key], rel_tol=1e-9, abs_tol=1e-9), key
    per_job = fairness(checked.simulation.instance, checked.simulation.completion)
    assert per_job.slowdown is not None and min(per_job.slowdown) >= 1 - 1e-9
    assert min(per_job.contention) >= 1 - 1e-9
    assert 1 / inst.n_jobs - 1e-12 <= m["jain_rho"] <= 1 + 1e-12
    assert m["p50_jct"] <= m["p95_jct"] <= m["p99_jct"] <= max(per_job.jct) + 1e-9


def test_a_job_alone_is_fairly_treated_up_to_rounding():
    """Times that do not add up exactly (0.1 + 0.2): ρ = 1 up to an ulp counts as fair, and
    Jain's index stays at most 1."""
    jobs = tuple(
        Job(id=j, arrival=a, rounds=3, compute={"T": 0.1}, sync={"T": 0.2})
        for j, a in (("A", 0.0), ("B", 1e6))
    )
    result = simulate(Instance("alone", jobs, (GPU("g0", "T"),)), "fifo-perf", mode="gang")
    m = result.metrics
    assert m["max_rho"] == pytest.approx(1.0) and m["unfair_fraction"] == 0.0
    assert m["jain_rho"] <= 1.0


@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(0, 20)).map(lambda p: (min(p), max(p))),
        min_size=1,
        max_size=12,
    )
)
def test_contention_is_the_time_average_of_the_count(lifetimes):
    """N̄_j against a brute-force integral of n(t) over unit steps (integer times, so each
    unit interval has one count); a zero lifetime sees the count after every event up to
    its arrival."""
    arrival = [float(a) for a, _ in lifetimes]
    completion = [float(c) for _, c in lifetimes]
    got = mean_contention(arrival, completion)

    for (a, c), value in zip(lifetimes, got, strict=True):
        if c > a:
            area = sum(sum(a2 <= t < c2 for a2, c2 in lifetimes) for t in range(a, c))
            assert value == pytest.approx(area / (c - a))
        else:  # after every event at or before a
            assert value == sum(a2 <= a for a2, _ in lifetimes) - sum(
                c2 <= a for _, c2 in lifetimes
            )


@given(instances(mode="relaxed") | instances(mode="gang"))
def test_the_shortest_round_is_the_kth_smallest_of_every_slot(inst):
    """round_lower_bound (plain Python, merged per class) against the multiset of every
    GPU's values built in full with NumPy: the K-th smallest of sync + k·compute over GPUs
    and k = 1..K (relaxed), of compute + sync over GPUs (gang); round_lower_bounds (once
    per distinct profile) gives every job's the same."""
    from optsched.critical_path import round_lower_bound, round_lower_bounds

    shared = round_lower_bounds(inst)
    for j, job in enumerate(inst.jobs):
        k = job.tasks_per_round
        compute, sync = inst.row(j)
        ok = np.isfinite(compute)
        if inst.mode == "gang":
            slots = (compute + sync)[ok]
        else:
            slots = (sync[ok, None] + compute[ok, None] * np.arange(1, k + 1)[None, :]).ravel()
        assert round_lower_bound(inst, j) == shared[j] == float(np.sort(slots)[k - 1])
        for g in range(inst.n_gpus):
            assert inst.compute_of(j, g) == inst.compute[j, g]
            assert inst.sync_of(j, g) == inst.sync[j, g]
