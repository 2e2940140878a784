"""The matching AlloX uses is scipy's own ``linear_sum_assignment``, loaded without the
``scipy.optimize`` package (optsched.online.assignment)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment as public

from optsched.online.assignment import linear_sum_assignment
from tests.conftest import ROOT


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 12),
    cols=st.integers(1, 12),
    levels=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_same_assignment_as_scipy_optimize_ties_and_huge_costs_included(
    rows: int, cols: int, levels: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    cost = rng.integers(0, levels, (rows, cols)).astype(float)  # few levels: many ties
    cost[rng.random((rows, cols)) < 0.2] = 1e300  # AlloX's stand-in for "cannot run"
    ours, theirs = linear_sum_assignment(cost), public(cost)
    assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))


def test_it_loads_without_the_scipy_optimize_package() -> None:
    code = (
        "import sys, numpy as np\n"
        "from optsched.online.assignment import linear_sum_assignment as f\n"
        "assert 'scipy.optimize' not in sys.modules, 'scipy.optimize was imported'\n"
        "rows, cols = f(np.array([[4.0, 1.0], [2.0, 3.0]]))\n"
        "assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]\n"
        "import scipy.optimize\n"  # the package still imports afterwards
        "assert scipy.optimize.linear_sum_assignment(1 - np.eye(2))[1].tolist() == [0, 1]\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 40), levels=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_one_column_is_matched_to_its_first_cheapest_row(rows: int, levels: int, seed: int):
    """AlloX matches a single idle GPU without the matching: to the first of the cheapest
    jobs, the row scipy's matching gives, ties and "cannot run" (1e300) included."""
    rng = np.random.default_rng(seed)
    cost = rng.integers(0, levels, (rows, 1)).astype(float)
    cost[rng.random(rows) < 0.3] = 1e300
    assert linear_sum_assignment(cost)[0].tolist() == [int(np.argmin(cost[:, 0]))]


@settings(max_examples=300, deadline=None)
@given(cols=st.integers(1, 40), levels=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_one_row_is_matched_to_its_first_cheapest_column(cols: int, levels: int, seed: int):
    """AlloX matches a single waiting job without the matching: to the first of its
    cheapest GPUs, the column scipy's matching gives, ties and "cannot run" included."""
    rng = np.random.default_rng(seed)
    cost = rng.integers(0, levels, (1, cols)).astype(float)
    cost[0, rng.random(cols) < 0.3] = 1e300
    assert linear_sum_assignment(cost)[1].tolist() == [int(np.argmin(cost[0]))]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), jobs=st.integers(1, 12), gap=st.sampled_from([0.5, 4.0]))
def test_allox_decides_one_waiting_job_as_the_matching_does(seed: int, jobs: int, gap: float):
    """AlloX's path for one waiting job (scalars, no matching) makes the schedules the
    matching makes, on instances with tied GPUs, GPUs a job cannot use and light loads
    (one job waiting at most decisions)."""
    from optsched import simulate
    from optsched.instance import GPU, Instance, Job
    from optsched.online.baselines import AlloX

    rng = np.random.default_rng(seed)
    gpus = tuple(GPU(f"g{i}", ("A", "B", "C")[i % 3]) for i in range(int(rng.integers(1, 6))))
    made = []
    for i in range(jobs):
        compute = {t: float(rng.integers(1, 4)) for t in "ABC" if rng.random() < 0.8}
        made.append(
            Job(
                id=f"j{i}",
                arrival=float(i) * gap,
                rounds=int(rng.integers(1, 4)),
                tasks_per_round=int(rng.integers(1, 3)),
                compute=compute or {"A": 1.0},
                weight=float(rng.integers(1, 3)),
            )
        )
    if not any(g.type in job.compute for job in made for g in gpus):
        return
    usable = [j for j in made if any(g.type in j.compute for g in gpus)]
    inst = Instance("allox", tuple(usable), gpus)
    fast = simulate(inst, "allox").schedule
    one_job = vars(AlloX)["_one_job"]
    try:
        AlloX._one_job = staticmethod(  # type: ignore[method-assign]
            lambda view, oracle, queue, j: AlloX._match(view, oracle, queue, np.array([j]))
        )
        assert simulate(inst, "allox").schedule == fast
    finally:
        AlloX._one_job = one_job
