"""The checker's time tolerance does not depend on where time zero is (docs/model.md).

max(1e-9 · max(1, longest task time), 4 units in the last place of |t|): shifting every
arrival and start by a constant changes neither the verdict nor the violations, and schedules
at Unix-epoch times (1.7e9) or at 1e12 are checked as strictly as near zero.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, Schedule, Task, check, solve
from optsched.check import Tolerance, _progress
from optsched.errors import InputError, OptschedError
from optsched.solve import MethodOutput, register
from optsched.testing import instances

EPOCH = 1_700_000_000.0


def _one_gpu(n: int, compute: float, arrival: float, rounds: int = 1) -> Instance:
    jobs = tuple(Job(f"j{i}", arrival=arrival, weight=1, rounds=rounds, tasks_per_round=1,
                     compute={"A": compute}, sync={"A": 0.0}) for i in range(n))
    return Instance("t", jobs, (GPU("g", "A"),))


def test_epoch_times_overlap_is_caught():
    """Two 1 s tasks 0.5 s apart on one GPU at t = 1.7e9 (the issue's reproduction)."""
    inst = _one_gpu(2, 1.0, EPOCH)
    tasks = [Task("j0", 0, 0, "g", EPOCH), Task("j1", 0, 0, "g", EPOCH + 0.5)]
    assert check(inst, Schedule("t", tasks)).kinds() == {"overlap"}
    touching = [Task("j0", 0, 0, "g", EPOCH), Task("j1", 0, 0, "g", EPOCH + 1.0)]
    assert check(inst, Schedule("t", touching)).feasible


def test_stacked_tasks_at_1e12_break_overlap_and_barriers():
    """Six 10 s tasks (three jobs of two rounds) within 10 s on one GPU at t = 1e12."""
    t0 = 1e12
    inst = _one_gpu(3, 10.0, t0, rounds=2)
    tasks = [Task(f"j{i}", r, 0, "g", t0 + 2.0 * (2 * i + r)) for i in range(3)
             for r in range(2)]
    report = check(inst, Schedule("t", tasks))
    assert {"overlap", "barrier"} <= report.kinds()
    assert sum(v.kind == "barrier" for v in report.violations) == 3


def test_tolerance_grows_with_the_longest_task_not_with_time():
    inst = _one_gpu(1, 5000.0, 0.0)
    tol = Tolerance.of(inst)
    assert tol.absolute == pytest.approx(5e-6)
    assert tol.at(0.0) == tol.at(1e6) == tol.absolute
    assert tol.at(1e16) == 4 * math.ulp(1e16)  # 8 s: the spacing of floats there


def test_a_method_returning_stacked_tasks_at_large_times_is_not_optimal():
    """solve() runs the checker: a method that stacks tasks at t = 1e12 and claims a bound
    equal to its objective is refused, not reported optimal."""
    inst = _one_gpu(2, 10.0, 1e12)

    @register("test-stacked", description="stacks every task at 1e12", replace=True)
    def stacked(instance, context):
        tasks = [Task(j.id, 0, 0, "g", 1e12) for j in instance.jobs]
        return MethodOutput(Schedule(instance.name, tasks), bound=2e12 + 20)

    with pytest.raises(OptschedError, match=r"infeasible schedule.*occupies"):
        solve(inst, "test-stacked")


def _shifted(inst: Instance, schedule: Schedule, c: float) -> tuple[Instance, Schedule]:
    jobs = tuple(dataclasses.replace(j, arrival=j.arrival + c) for j in inst.jobs)
    tasks = [dataclasses.replace(t, start=t.start + c) for t in schedule.tasks]
    return (Instance(inst.name, jobs, inst.gpus, mode=inst.mode),
            Schedule(schedule.instance, tasks, schedule.mode))


def _found(report) -> list[tuple]:
    return sorted((v.kind, v.job or "", v.round or 0, v.task or 0, v.gpu or "")
                  for v in report.violations)


# Shifts up to 1e12: integer data on a 1/8 grid shifted by an integer stays exact, so the
# schedules compared are the same schedule, only further from time zero.
SHIFTS = st.sampled_from([0.0, 1e3, EPOCH, 1e12]) | st.integers(0, 10**12).map(float)


@given(instances(integer=True), st.data(), SHIFTS)
def test_shifting_time_changes_no_verdict(inst, data, shift):
    """A feasible (ECT) schedule, then the same with random tasks moved by multiples of
    1/8: the verdict and the violations (kind, task, GPU) are the same at every shift, and
    the objective moves by exactly Σ w × shift."""
    sched = solve(inst, "ect").schedule
    tasks = list(sched.tasks)
    for i in data.draw(st.lists(st.integers(0, len(tasks) - 1), max_size=3)):
        delta = data.draw(st.integers(-40, 40)) / 8
        tasks[i] = dataclasses.replace(tasks[i], start=tasks[i].start + delta)
    sched = Schedule(sched.instance, tasks, sched.mode)
    base = check(inst, sched)
    moved_inst, moved = _shifted(inst, sched, shift)
    report = check(moved_inst, moved)
    assert report.feasible == base.feasible
    assert _found(report) == _found(base)
    if base.objective is not None:
        total = sum(j.weight for j in inst.jobs)
        assert report.objective == pytest.approx(base.objective + total * shift, rel=1e-15,
                                                 abs=1e-9)


def test_processor_sharing_ends_where_a_step_is_below_the_float_spacing():
    """Processor sharing at t = 1e16 (float spacing 2 s; inputs that large are refused, but
    the checker's loop must end on any times): every task ends, none before it starts."""
    t0 = 1e16
    items = [(t0, 1.0, 0.6, False), (t0, 1.0, 0.6, False), (t0 + 8, 1.0, 0.6, False),
             (t0 + 8, 0.3, 0.5, False)]
    ends = _progress(items)
    assert all(e >= a for e, (a, *_) in zip(ends, items, strict=True))


def test_times_beyond_the_input_bound_are_bad_input():
    with pytest.raises(InputError, match="start must be a number in"):
        Task("j0", 0, 0, "g", 1.7e308)
    with pytest.raises(InputError, match="arrival must be a number in"):
        _one_gpu(1, 1.0, 1e16)
