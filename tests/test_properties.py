"""Hypothesis properties on random small instances (both modes)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from optsched import GeneratorSpec, Schedule, Task, check, generate, solve
from optsched.critical_path import critical_path_bound
from optsched.io import instance_from_dict, instance_to_dict, schedule_from_dict
from optsched.testing import instances


@given(instances())
def test_instance_json_round_trip_is_identity(inst):
    text = json.dumps(instance_to_dict(inst))
    assert instance_from_dict(json.loads(text)) == inst
    assert json.dumps(instance_to_dict(instance_from_dict(json.loads(text)))) == text


@given(instances())
def test_baseline_schedules_pass_the_checker_above_the_bound(inst):
    result = solve(inst, "ect")
    report = check(inst, result.schedule)
    assert report.feasible, report.violations
    assert report.objective == result.objective
    assert critical_path_bound(inst) <= result.objective + 1e-9
    again = schedule_from_dict(json.loads(json.dumps(result.schedule.to_dict())))
    assert again == result.schedule


@given(instances(mode="gang"))
def test_gang_feasible_is_relaxed_feasible_with_same_objective(inst):
    gang = solve(inst, "ect").schedule
    assert check(inst, gang).feasible
    relaxed = Schedule(gang.instance, gang.tasks, "relaxed")
    report = check(inst, relaxed)
    assert report.feasible, report.violations
    assert report.objective == check(inst, gang).objective


def _replace(schedule: Schedule, i: int, task: Task) -> Schedule:
    tasks = list(schedule.tasks)
    tasks[i] = task
    return Schedule(schedule.instance, tasks, schedule.mode)


@given(instances(), st.data())
def test_moving_a_task_across_a_round_barrier_is_caught_and_named(inst, data):
    sched = solve(inst, "ect").schedule
    later = [i for i, t in enumerate(sched.tasks) if t.round >= 1]
    if not later:
        return
    i = data.draw(st.sampled_from(later))
    t = sched.tasks[i]
    # the earliest start in the previous round is before that round's results are ready
    prev_start = min(u.start for u in sched.tasks if u.job == t.job and u.round == t.round - 1)
    moved = Task(t.job, t.round, t.task, t.gpu, prev_start)
    report = check(inst, _replace(sched, i, moved))
    assert any(
        v.kind == "barrier" and v.job == t.job and v.round == t.round and v.task == t.task
        for v in report.violations
    ), report.violations


@given(instances(), st.data())
def test_moving_a_task_onto_a_busy_gpu_is_caught_and_named(inst, data):
    sched = solve(inst, "ect").schedule
    n = len(sched.tasks)
    if n < 2:
        return
    a = data.draw(st.integers(0, n - 1))
    b = data.draw(st.integers(0, n - 1).filter(lambda x: x != a))
    ta, tb = sched.tasks[a], sched.tasks[b]
    j = inst.job_index[tb.job]
    if inst.compute[j, inst.gpu_index[ta.gpu]] == float("inf"):
        return  # b cannot run there at all: that is another violation
    moved = Task(tb.job, tb.round, tb.task, ta.gpu, ta.start)
    report = check(inst, _replace(sched, b, moved))
    named = {
        (v.job, v.round, v.task)
        for v in report.violations
        if v.kind in ("overlap", "gang-distinct")
    }
    assert named & {ta.key, tb.key}, report.violations


@given(instances(), st.data())
def test_checker_never_crashes_on_arbitrary_schedules(inst, data):
    jobs = [j.id for j in inst.jobs] + ["ghost"]
    gpus = [g.id for g in inst.gpus] + ["nowhere"]
    tasks = data.draw(
        st.lists(
            st.builds(
                Task,
                st.sampled_from(jobs),
                st.integers(-1, 3),
                st.integers(-1, 3),
                st.sampled_from(gpus),
                st.floats(-5, 50, allow_nan=False),
            ),
            max_size=12,
        )
    )
    report = check(inst, Schedule(inst.name, tasks))
    assert report.feasible == (not report.violations)
    if report.feasible:
        assert report.objective is not None


@given(st.integers(0, 2**32 - 1))
def test_generator_is_deterministic_for_a_seed(seed):
    spec = GeneratorSpec(jobs=4, gpus=4, hosts=2)
    assert generate(spec, seed) == generate(spec, seed)
