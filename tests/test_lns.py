"""Large-neighbourhood search: checker-clean, never worse than its start, never below the
proved optimum, reproducible for a seed and a number of steps (its Ctrl-C:
test_solver_experience)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from optsched import (
    GPU,
    GeneratorSpec,
    Instance,
    Job,
    Schedule,
    Task,
    check,
    generate,
    load_instance,
    solve,
)
from optsched.check import ResolutionError
from optsched.testing import assert_result, instances
from tests.conftest import n_examples

ROOT = Path(__file__).resolve().parents[1]


@settings(deadline=None, max_examples=n_examples(25))
@given(instances(max_jobs=4, integer=True))
def test_lns_is_feasible_no_worse_than_ect_and_no_better_than_the_optimum(instance):
    ect = solve(instance, "ect")
    result = solve(instance, "lns", params={"steps": 4, "step": 0.2})
    optimum = solve(instance, "cpsat", time_limit=5)
    assert_result(instance, result, bound=optimum.bound)  # bound ≤ OPT ≤ objective
    assert result.objective <= ect.objective + 1e-9
    assert result.extra["steps"] <= 4


def test_lns_is_reproducible_for_a_seed_and_improves_a_committed_instance():
    instance = load_instance(ROOT / "instances" / "exact" / "exact-jobs10-s0.json")
    params = {"steps": 4, "step": 0.1, "size": 2, "start": "ect"}
    runs = [solve(instance, "lns", seed=7, params=params) for _ in range(2)]
    assert runs[0].schedule == runs[1].schedule  # a fixed number of steps: deterministic
    ect = solve(instance, "ect")
    assert runs[0].objective < ect.objective
    assert runs[0].extra["improvements"] >= 1 and runs[0].extra["start"] == "ect"
    assert runs[0].extra["start_stopped"] is None
    assert runs[0].bound_source == "critical_path"  # LNS proves no bound of its own


def test_the_default_start_is_priority_search_and_lns_only_improves_on_it():
    """The start: priority-search (seeded like the run, on a work budget), better than
    ECT here; LNS returns no worse, and repeats exactly for a seed and a number of steps."""
    instance = load_instance(ROOT / "instances" / "exact" / "exact-jobs20-s0.json").with_mode(
        "gang"
    )
    searched = solve(instance, "priority-search", seed=7)
    runs = [solve(instance, "lns", seed=7, params={"steps": 3, "step": 0.1}) for _ in range(2)]
    assert runs[0].schedule == runs[1].schedule
    assert runs[0].extra["start"] == "priority-search"
    assert runs[0].extra["start_stopped"] in ("work", "patience")  # not the clock
    assert runs[0].extra["start_objective"] == searched.objective
    assert searched.objective < runs[0].extra["ect_objective"]
    assert_result(instance, runs[0])
    assert runs[0].objective <= searched.objective + 1e-9


def test_a_work_budget_is_shared_with_the_start():
    """start=priority-search gets a tenth of the work budget; LNS the rest."""
    instance = load_instance(ROOT / "instances" / "exact" / "exact-jobs20-s0.json")
    result = solve(instance, "lns", seed=1, params={"work": "2", "step": 0.1})
    assert result.extra["start"] == "priority-search"
    assert result.extra["start_stopped"] in ("work", "patience")
    assert result.extra["work"] <= 2 + 0.2  # the whole budget, and the last step's overrun


def test_lns_starts_from_a_better_hint():
    instance = generate(GeneratorSpec(jobs=6, gpus=3, gpu_types=2), seed=1)
    best = solve(instance, "cpsat", time_limit=20)
    result = solve(instance, "lns", hint=best.schedule, params={"steps": 2, "step": 0.2})
    assert result.extra["start"] == "hint" and result.objective <= best.objective + 1e-9


def test_steps_limited_in_deterministic_time_repeat_exactly():
    """Steps that hit their limit end on CP-SAT's deterministic time, not the clock."""
    instance = load_instance(ROOT / "instances" / "exact" / "exact-jobs20-s0.json")
    params = {"steps": 3, "step": 0.05, "size": 12}
    runs = [solve(instance, "lns", seed=3, params=params) for _ in range(2)]
    assert runs[0].schedule == runs[1].schedule
    assert runs[0].extra["final_size"] == runs[1].extra["final_size"]


def test_a_better_hint_off_the_grid_is_never_lost():
    """A hint whose starts are off the integer grid still counts: the result is never worse.
    The hint: priority search for a fixed number of moves (seeded: the same on any machine)."""
    instance = load_instance(ROOT / "instances" / "exact" / "exact-jobs10-s0.json")
    best = solve(instance, "priority-search", seed=7, params={"steps": 200}).schedule
    shifted = Schedule(
        best.instance,
        [Task(t.job, t.round, t.task, t.gpu, t.start + 0.5) for t in best.tasks],
        best.mode,
    )
    given = check(instance, shifted)
    assert given.feasible and given.objective < solve(instance, "ect").objective
    result = solve(instance, "lns", hint=shifted, params={"steps": 2, "step": 0.05})
    assert result.objective <= given.objective + 1e-9


def test_lns_refuses_times_floats_cannot_check_in_seconds_not_grid_steps():
    # a 1 ms task at an epoch-scale origin: every method refuses it, naming seconds (lns
    # once named its 1 ms grid's steps: "lasts 1 s ... reach 1700000004092.0 s")
    instance = Instance(
        "epoch",
        (
            Job("j0", arrival=1_700_000_004.091, rounds=1, compute={"T0": 0.001}),
            Job("j1", arrival=1_700_000_002.202, rounds=1, compute={"T0": 3.0}),
        ),
        (GPU("g0", "T0"), GPU("g1", "T0")),
        mode="relaxed",
    )
    for method in ("ect", "lns"):
        with pytest.raises(
            ResolutionError,
            match=r"lasts 0\.001 s .*\(shift every arrival and "
            r"start by -1700000002\.202\)",
        ):
            solve(instance, method, params={"steps": 2} if method == "lns" else None)
    # cpsat checks a user's hint on its grid the same way
    hint = Schedule(
        "epoch",
        [Task("j1", 0, 0, "g0", 1_700_000_002.202), Task("j0", 0, 0, "g1", 1_700_000_004.091)],
        "relaxed",
    )
    with pytest.raises(ResolutionError, match=r"lasts 0\.001 s"):
        solve(instance, "cpsat", hint=hint, params={"time_unit": 0.001})
