"""task-search: checker-clean, OPT ≤ objective ≤ its start, an incrementally evaluated move
gives the starts a full evaluation does, undo restores the schedule exactly, seeded runs
repeat, and task moves improve ECT under load."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GeneratorSpec, generate, solve
from optsched.check import check
from optsched.ect import ect_schedule
from optsched.heuristics.task_moves import SequenceSchedule
from optsched.instance import GPU, Instance, Job
from optsched.io import instance_from_dict, instance_to_dict
from optsched.result import OPTIMAL_TOL
from optsched.schedule import Schedule, Task
from optsched.testing import assert_schedule, instances
from tests.conftest import n_examples


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=4, integer=True), st.integers(0, 3))
def test_checker_clean_and_between_the_optimum_and_ect(instance, seed):
    optimum = solve(instance, "cpsat", time_limit=5)
    result = solve(instance, "task-search", params={"steps": 60}, seed=seed)
    assert_schedule(instance, result.schedule, bound=optimum.bound)
    assert result.objective <= solve(instance, "ect").objective * (1 + 1e-12)
    if optimum.status == "optimal":
        assert result.objective >= optimum.objective * (1 - OPTIMAL_TOL)


def _random_move(state: SequenceSchedule, rng: np.random.Generator) -> float | None:
    """Any move the search may make: a random operation, GPU and place in the window."""
    o = int(rng.integers(len(state.start)))
    g = state.op_gpus[o][int(rng.integers(len(state.op_gpus[o])))]
    job = state.round_job[state.op_round[o]]
    choices = [
        h
        for h in np.flatnonzero(np.isfinite(state.inst.compute[job])).tolist()
        if h == g or h not in state.op_gpus[o]
    ]
    h = choices[int(rng.integers(len(choices)))]
    lo, hi = state.window(o, g, h)
    try:
        return state.apply(o, g, h, int(rng.integers(lo, hi + 1)))
    except ValueError:
        return None


@settings(deadline=None, max_examples=n_examples(25))
@given(st.integers(0, 10**6), st.sampled_from(["relaxed", "gang"]))
def test_incremental_evaluation_equals_a_full_evaluation(seed, mode):
    inst = generate(
        GeneratorSpec(jobs=12, gpus=6, gpu_types=2, hosts=2, load=3.0), seed=seed % 50
    ).with_mode(mode)
    state = SequenceSchedule(inst, ect_schedule(inst))
    assert state.objective <= check(inst, ect_schedule(inst)).objective * (1 + 1e-12)
    rng = np.random.default_rng(seed)
    for _ in range(15):
        kept = list(state.start), state.objective
        for _ in range(int(rng.integers(1, 4))):  # moves stack up until commit or undo
            _random_move(state, rng)
            starts, objective = state.recompute()
            assert state.start == starts
            assert state.objective == pytest.approx(objective, rel=1e-12)
        report = check(inst, state.schedule())
        assert report.feasible, report.violations[:3]
        assert report.objective == pytest.approx(state.objective, rel=1e-12)
        if rng.random() < 0.5:
            state.undo()
            assert (state.start, state.objective) == kept
            assert state.recompute()[0] == state.start
        else:
            state.commit()


def test_seeded_runs_repeat_improve_ect_and_polish_a_hint():
    inst = generate(GeneratorSpec(jobs=30, gpus=8, gpu_types=2, hosts=2, load=4.0), seed=1)
    for mode in ("relaxed", "gang"):
        one = inst.with_mode(mode)
        first = solve(one, "task-search", params={"steps": 400}, seed=5)
        again = solve(one, "task-search", params={"steps": 400}, seed=5)
        assert first.schedule.to_dict() == again.schedule.to_dict()
        assert first.extra["steps"] == 400 and first.extra["start"] == "ect"
        assert first.extra["improvements"] >= 1
        assert first.objective < solve(one, "ect").objective
        hint = solve(one, "priority-search", params={"steps": 20}, seed=5)
        polished = solve(one, "task-search", params={"steps": 200}, hint=hint.schedule)
        assert polished.extra["start"] == "hint"
        assert polished.objective <= hint.objective * (1 + 1e-12)


def test_moving_time_zero_changes_nothing():
    # integer times stay exact at 2**30: the same steps, kept and counted alike
    inst = generate(GeneratorSpec(jobs=20, gpus=6, gpu_types=2, hosts=2, load=4.0), seed=3)
    late = instance_from_dict(
        {
            **instance_to_dict(inst),
            "jobs": [
                {**job, "arrival": job["arrival"] + 2**30}
                for job in instance_to_dict(inst)["jobs"]
            ],
        }
    )
    runs = [solve(one, "task-search", params={"steps": 300}, seed=2) for one in (inst, late)]
    assert runs[0].extra["improvements"] == runs[1].extra["improvements"] >= 1
    assert runs[1].objective - runs[0].objective == 2**30 * sum(j.weight for j in inst.jobs)


def test_a_hint_whose_next_round_starts_early_within_the_checkers_tolerance():
    """Round 1 starts 5e-9 s before round 0 is ready (the checker allows 1e-9 of the 10 s
    task): the search reads the hint's order as it is and returns a checked schedule."""
    jobs = (
        Job("a", arrival=0.0, rounds=2, compute={"T": 10.0}),
        Job("b", arrival=0.0, compute={"T": 10.0}),
    )
    inst = Instance("tol", jobs, tuple(GPU(f"g{k}", "T") for k in range(3)))
    hint = Schedule(
        "tol",
        [
            Task("a", 0, 0, "g0", 0.0),
            Task("a", 1, 0, "g1", 10.0 - 5e-9),
            Task("b", 0, 0, "g2", 0.0),
        ],
        "relaxed",
    )
    assert check(inst, hint).feasible
    result = solve(inst, "task-search", params={"steps": 10}, hint=hint)
    assert_schedule(inst, result.schedule)


def test_a_move_to_a_gpu_the_round_cannot_use_is_refused():
    inst = generate(GeneratorSpec(jobs=6, gpus=6, gpu_types=2, hosts=2), seed=0).with_mode("gang")
    state = SequenceSchedule(inst, ect_schedule(inst))
    o = max(range(len(state.op_gpus)), key=lambda q: len(state.op_gpus[q]))
    g, other = state.op_gpus[o][0], state.op_gpus[o][-1]
    if other != g:
        with pytest.raises(ValueError, match="already in it"):
            state.apply(o, g, other, 0)
    job = state.round_job[state.op_round[o]]
    for h in np.flatnonzero(~np.isfinite(inst.compute[job])).tolist():
        with pytest.raises(ValueError, match="not eligible"):
            state.apply(o, g, h, 0)
    assert state.recompute()[0] == state.start
