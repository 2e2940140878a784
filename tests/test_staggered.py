"""Exact pricing of staggered relaxed rounds: CP-SAT's least cost equals a brute force over
every placement of the job's tasks, its lower bound never exceeds it, and at prices linear
in the GPUs held it is the Lagrangian programme's value (staggering never pays there)."""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.exact.lagrangian import _Job, _Option, _price
from optsched.exact.staggered import price_staggered
from tests.conftest import n_examples


@st.composite
def priced_jobs(draw):
    """(job, λ per group and step, group sizes, conflict prefix sums per group, horizon): one
    or two rounds, 1–3 tasks (two rounds: at most 2), one or two groups."""
    n_groups = draw(st.integers(1, 2))
    sizes = [draw(st.integers(1, 3)) for _ in range(n_groups)]
    rounds = draw(st.integers(1, 2))
    k_tasks = draw(st.integers(1, 3 if rounds == 1 else 2))
    options = []
    for q in range(n_groups):
        hold = draw(st.integers(1, 3))
        options.append(_Option((q,), hold, hold + draw(st.integers(0, 1))))
    rho = min(o.ready for o in options)
    first = draw(st.integers(0, 2))
    window = draw(st.integers(0, 3))
    job = _Job(
        first=first,
        floor=first + rounds * rho - draw(st.integers(0, 1)),
        window=window,
        rho=rho,
        k_tasks=k_tasks,
        rounds=rounds,
        weight=float(draw(st.integers(1, 3))),
        options=tuple(options),
    )
    horizon = first + (rounds + 1) * rho + window + 4
    cost = st.floats(0, 3, allow_nan=False)
    lam = np.array([[draw(cost) for _ in range(horizon)] for _ in range(n_groups)])
    conflicts = []
    for q in range(n_groups):
        prices = {}
        for k in range(1, min(k_tasks, sizes[q]) + 1):
            steps = [draw(st.sampled_from([0.0, 0.0, 0.5, 2.0])) for _ in range(horizon)]
            prices[k] = np.concatenate([[0.0], np.cumsum(steps)])
        conflicts.append(prices)
    return job, lam, sizes, conflicts, horizon


def _brute_force(job, lam, sizes, conflicts, horizon) -> float:
    """The least cost over every placement of the job's tasks, round by round."""
    options = {o.rows[0]: o for o in job.options}
    best = math.inf

    def task_cost(q: int, t: int) -> float:
        o = options[q]
        return float(lam[q, t : min(t + o.hold, horizon)].sum() / sizes[q])

    def go(r: int, barrier: int, paid: float, held: np.ndarray) -> None:
        nonlocal best
        earliest = job.first + r * job.rho
        if r == job.rounds:
            done = job.weight * max(barrier, earliest, job.floor) + paid
            conflict = sum(
                float(np.diff(conflicts[q][k])[t])
                for q in range(len(sizes))
                for t in range(horizon)
                for k in conflicts[q]
                if held[q, t] >= k
            )
            best = min(best, done + conflict)
            return
        barrier = max(barrier, earliest)
        if barrier > earliest + job.window:
            return
        deadline = job.first + (r + 1) * job.rho + job.window  # the round's results by then
        slots = [
            (q, t) for q, o in options.items() for t in range(barrier, deadline - o.ready + 1)
        ]
        for tasks in itertools.combinations_with_replacement(slots, job.k_tasks):
            now = held.copy()
            for q, t in tasks:
                now[q, t : t + options[q].hold] += 1
            if (now > np.array(sizes)[:, None]).any():
                continue
            end = max(t + options[q].ready for q, t in tasks)
            go(r + 1, end, paid + sum(task_cost(q, t) for q, t in tasks), now)

    span = horizon + 2 * max(o.ready for o in job.options) + job.window + 8
    go(0, job.first, 0.0, np.zeros((len(sizes), span), dtype=int))
    return best


@settings(deadline=None, max_examples=n_examples(60))
@given(priced_jobs())
def test_the_least_cost_is_the_brute_forces(case):
    job, lam, sizes, conflicts, horizon = case
    found = price_staggered(job, lam, sizes, conflicts, horizon)
    least = _brute_force(job, lam, sizes, conflicts, horizon)
    if least == math.inf:  # more tasks than GPUs at once: no schedule within the windows
        assert found.path is None and not found.optimal
        return
    assert found.optimal
    assert found.lower <= least + 1e-9
    assert found.lower >= least - 1e-6 * max(1.0, least) - 1e-3  # coefficients rounded down


@settings(deadline=None, max_examples=n_examples(40))
@given(priced_jobs())
def test_at_linear_prices_it_is_the_programmes_value(case):
    """Without conflict prices, rounds that fit their group: K tasks on the cheapest slot
    are optimal, so the exact price is the Lagrangian programme's; with them, between the
    programme's values without and with the conflict prices."""
    job, lam, sizes, conflicts, horizon = case
    table = np.zeros((len(sizes), horizon + 1))
    table[:, 1:] = np.cumsum(lam * (job.k_tasks / np.array(sizes))[:, None], axis=1)
    linear, _ = _price(job, table)
    plain = price_staggered(job, lam, sizes, None, horizon)
    priced, path = _price(job, table, conflicts, 0)
    found = price_staggered(job, lam, sizes, conflicts, horizon, hint=path)
    assert plain.lower <= linear + 1e-6 or job.k_tasks > min(sizes)
    assert found.lower >= plain.lower - 1e-6
    if job.k_tasks <= min(sizes):
        assert abs(plain.lower - linear) <= 1e-3
        assert found.lower <= priced + 1e-6
