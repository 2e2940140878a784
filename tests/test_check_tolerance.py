"""The checker's time tolerance depends only on the intervals compared (docs/model.md).

1e-9 × the shorter interval plus 2 units in the last place of the times compared: no other
job, unused GPU type or launch phase loosens it; an overlap of 0.01 % of the shorter task is
caught at any time origin, or the schedule is refused (ResolutionError) where floats are too
coarse to tell; an exact shift of every time never turns such a violation into a pass.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, Schedule, Task, check, solve
from optsched.check import ResolutionError, _progress, time_tolerance
from optsched.cli import main
from optsched.contracts import MethodOutput
from optsched.errors import InputError, OptschedError
from optsched.instance import ClusterProfile
from optsched.io import save_instance, save_schedule
from optsched.limits import MAX_VALUE
from optsched.registry import register
from optsched.testing import instances

EPOCH = 1_700_000_000.0


def _one_gpu(n: int, compute: float, arrival: float, rounds: int = 1) -> Instance:
    jobs = tuple(
        Job(
            f"j{i}",
            arrival=arrival,
            weight=1,
            rounds=rounds,
            tasks_per_round=1,
            compute={"A": compute},
            sync={"A": 0.0},
        )
        for i in range(n)
    )
    return Instance("t", jobs, (GPU("g", "A"),))


def test_epoch_times_overlap_is_caught():
    """Two 1 s tasks 0.5 s apart on one GPU at t = 1.7e9."""
    inst = _one_gpu(2, 1.0, EPOCH)
    tasks = [Task("j0", 0, 0, "g", EPOCH), Task("j1", 0, 0, "g", EPOCH + 0.5)]
    assert check(inst, Schedule("t", tasks)).kinds() == {"overlap"}
    touching = [Task("j0", 0, 0, "g", EPOCH), Task("j1", 0, 0, "g", EPOCH + 1.0)]
    assert check(inst, Schedule("t", touching)).feasible


def test_stacked_tasks_at_1e12_break_overlap_and_barriers():
    """Six 10 s tasks (three jobs of two rounds) within 10 s on one GPU at t = 1e12."""
    t0 = 1e12
    inst = _one_gpu(3, 10.0, t0, rounds=2)
    tasks = [Task(f"j{i}", r, 0, "g", t0 + 2.0 * (2 * i + r)) for i in range(3) for r in range(2)]
    report = check(inst, Schedule("t", tasks))
    assert {"overlap", "barrier"} <= report.kinds()
    assert sum(v.kind == "barrier" for v in report.violations) == 3


def test_tolerance_depends_on_the_compared_intervals_and_times_only():
    assert time_tolerance(5000.0, 0.0) == pytest.approx(5e-6)
    assert time_tolerance(1.0, 1e6, 1e6 + 1) == 1e-9 + 2 * math.ulp(1e6 + 1)
    assert time_tolerance(1e-9, 0.0, 1e-9) == pytest.approx(1e-18 + 2 * math.ulp(1e-9))


def _stacked(short: float, long: float, launch: float = 0.0) -> Instance:
    """Three one-task jobs of ``short`` s on GPUs of type A, beside a job made long by a GPU
    type nobody uses (``long`` s there) or by a launch phase (``launch`` s, gang mode; its
    task then trains for ``long`` s, long enough to be checked after the launch)."""
    jobs = [Job(f"j{i}", compute={"A": short}) for i in range(3)]
    jobs.append(
        Job(
            "long",
            compute={"A": long if launch else short, "slow": long},
            cluster=ClusterProfile(launch=launch) if launch else None,
        )
    )
    return Instance(
        "t", tuple(jobs), (GPU("g", "A"), GPU("other", "A")), mode="gang" if launch else "relaxed"
    )


def _stacked_tasks() -> list[Task]:
    return [*(Task(f"j{i}", 0, 0, "g", 0.0) for i in range(3)), Task("long", 0, 0, "other", 0.0)]


@pytest.mark.parametrize(
    "short, long, launch", [(1.0, 1e9, 0.0), (1e-9, 1e9, 0.0), (1.0, 1e9, 1e12)]
)
def test_a_long_time_elsewhere_hides_no_overlap(short, long, launch):
    """Three tasks stacked at t = 0 on one GPU beside a job with a 1e9 s time on an unused
    type (1 s and 1e-9 s tasks) or with a 1e12 s launch phase: both overlaps are caught."""
    report = check(_stacked(short, long, launch), Schedule("t", _stacked_tasks()))
    assert report.kinds() == {"overlap"}
    assert {v.gpu for v in report.violations} == {"g"} and len(report.violations) >= 2


def test_solve_refuses_a_stacked_schedule_beside_a_long_unused_time():
    """A plug-in that stacks three 1 s tasks and claims half the optimum as its bound is
    refused, never reported optimal."""
    inst = _stacked(1.0, 1e9)

    @register("test-stacked-zero", description="stacks every task at 0", replace=True)
    def stacked(instance, context):
        return MethodOutput(Schedule(instance.name, _stacked_tasks()), bound=4.0)

    with pytest.raises(OptschedError, match=r"infeasible schedule.*occupies"):
        solve(inst, "test-stacked-zero")


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


@pytest.mark.parametrize(
    "rounds, tasks, compute, sync",
    [
        (500, 1, 1.1, 0.1),
        (500, 1, 0.3, 0.1),
        (500, 1, 3.3, 0.1),
        (1, 64, 0.7, 0.1),
        (20, 25, 1.1, 0.1),
    ],
)
def test_long_chains_at_an_epoch_origin_stay_above_their_critical_path(
    rounds, tasks, compute, sync
):
    """One job on one GPU at 1.7e9 s, relaxed mode: ECT's float sums drift 0.3–0.8 units in
    the last place per link below the exact sum (a round, or a task after another on the
    GPU), up to 9.5e-5 s under the critical path over 500 links, 40 × the tolerance of one
    completion. The objective's tolerance counts the job's chain (its tasks in relaxed mode),
    so the solve is neither refused nor wrongly not optimal; a schedule ten times the
    tolerance late is not optimal."""
    job = Job(
        "j",
        arrival=EPOCH,
        rounds=rounds,
        tasks_per_round=tasks,
        compute={"A": compute},
        sync={"A": sync},
    )
    inst = Instance("t", (job,), (GPU("g", "A"),))
    result = solve(inst, "ect")  # raised "bound exceeds the checked objective" before
    assert result.status == "optimal"
    exact = EPOCH + rounds * (tasks * compute + sync)
    assert abs(result.objective - exact) <= result.tolerance
    assert result.tolerance < 1e-3  # 4 units in the last place (2.4e-7 s) per link
    late = 10 * result.tolerance

    @register("test-late", description="ECT's schedule ten tolerances late", replace=True)
    def delayed(instance, context):
        tasks = [dataclasses.replace(t, start=t.start + late) for t in result.schedule.tasks]
        return MethodOutput(Schedule(instance.name, tasks), bound=None)

    assert solve(inst, "test-late").status != "optimal"


@pytest.mark.parametrize(
    "arrival, start, length, apart", [(9e14, 9e14, 1.0, 0.5), (0.0, 9.9e15, 10.0, 4.0)]
)
def test_times_too_coarse_for_the_durations_are_refused(arrival, start, length, apart):
    """Two overlapping tasks where floats are spaced too widely to check them to 0.01 % of
    their length (arrival 9e14; start 9.9e15): refused, naming the task."""
    inst = _one_gpu(2, length, arrival)
    tasks = [Task("j0", 0, 0, "g", start), Task("j1", 0, 0, "g", start + apart)]
    with pytest.raises(ResolutionError, match=r"task \('j0', round 0, task 0\).*time zero"):
        check(inst, Schedule("t", tasks))


def test_an_exact_shift_keeps_an_overlap_caught():
    """A 4·2⁻²² s (9.5e-7 s) overlap of 1 s tasks, caught at t = 0, is still caught after an
    exact shift to 1.7e9 (where floats are 2⁻²² apart)."""
    overlap = 4 * 2.0**-22
    for t0 in (0.0, EPOCH):
        inst = _one_gpu(2, 1.0, t0)
        second = t0 + 1.0 - overlap
        assert Fraction(second) - Fraction(t0) == 1 - Fraction(overlap)  # exact
        tasks = [Task("j0", 0, 0, "g", t0), Task("j1", 0, 0, "g", second)]
        assert check(inst, Schedule("t", tasks)).kinds() == {"overlap"}


def test_check_refuses_coarse_times_with_exit_2(tmp_path, capsys):
    inst = _one_gpu(2, 1.0, 9e14)
    sched = Schedule("t", [Task("j0", 0, 0, "g", 9e14), Task("j1", 0, 0, "g", 9e14 + 0.5)])
    save_instance(tmp_path / "i.json", inst)
    save_schedule(tmp_path / "s.json", sched)
    code = main(["check", str(tmp_path / "i.json"), str(tmp_path / "s.json")])
    err = capsys.readouterr().err
    assert code == 2 and "0.01 %" in err and "-900000000000000.0" in err


# durations from 1e-9 s to 1e15 s, on a log scale
DURATIONS = st.floats(-9, 15).map(lambda e: float(f"{10**e:.6g}"))


@settings(max_examples=300, deadline=None)
@given(DURATIONS, DURATIONS, DURATIONS, st.floats(1e-4, 1.0), st.floats(0, 15), st.booleans())
def test_no_overlap_or_early_start_of_a_ten_thousandth_is_accepted(
    d1, d2, other, fraction, log_origin, barrier
):
    """Random durations (1e-9 to 1e15 s), a random long time on an unused type, a time
    origin up to 1e15 s, and a second interval that starts at least 0.01 % of the shorter
    one before the first ends (on the same GPU, or as the job's next round on another GPU):
    the checker reports it or refuses the schedule, never accepts it."""
    origin = float(int(10**log_origin))
    assume(origin + 2 * (d1 + d2) + other + 1 <= MAX_VALUE)
    if barrier:  # round 1 (on GPU h) starts before round 0 (on g) is ready
        jobs: tuple[Job, ...] = (
            Job("a", rounds=2, arrival=origin, compute={"A": d1, "B": d2, "slow": other}),
        )
    else:
        jobs = (
            Job("a", compute={"A": d1}, arrival=origin),
            Job("b", compute={"A": d2}, arrival=origin),
            Job("c", compute={"A": 1.0, "slow": other}, arrival=origin),
        )
    inst = Instance("t", jobs, (GPU("g", "A"), GPU("h", "B"), GPU("x", "A")))
    second = origin + d1 - fraction * min(d1, d2)
    assume(second >= origin)
    depth = Fraction(origin) + Fraction(d1) - Fraction(second)  # the exact overlap
    assume(depth >= Fraction(1, 10**4) * Fraction(min(d1, d2)))
    if barrier:
        tasks = [Task("a", 0, 0, "g", origin), Task("a", 1, 0, "h", second)]
    else:
        tasks = [
            Task("a", 0, 0, "g", origin),
            Task("b", 0, 0, "g", second),
            Task("c", 0, 0, "x", origin),
        ]
    try:
        report = check(inst, Schedule("t", tasks))
    except ResolutionError:
        return
    assert report.kinds() == {"barrier" if barrier else "overlap"}


def _shifted(inst: Instance, schedule: Schedule, c: float) -> tuple[Instance, Schedule]:
    jobs = tuple(dataclasses.replace(j, arrival=j.arrival + c) for j in inst.jobs)
    tasks = [dataclasses.replace(t, start=t.start + c) for t in schedule.tasks]
    return (
        Instance(inst.name, jobs, inst.gpus, mode=inst.mode),
        Schedule(schedule.instance, tasks, schedule.mode),
    )


def _found(report) -> list[tuple]:
    return sorted(
        (v.kind, v.job or "", v.round or 0, v.task or 0, v.gpu or "") for v in report.violations
    )


# Shifts up to 1e12: integer data on a 1/8 grid shifted by an integer stays exact, so the
# schedules compared are the same schedule, only further from time zero.
SHIFTS = st.sampled_from([0.0, 1e3, EPOCH, 1e12]) | st.integers(0, 10**12).map(float)


@given(instances(integer=True), st.data(), SHIFTS)
def test_shifting_time_changes_no_verdict(inst, data, shift):
    """A feasible (ECT) schedule, then the same with random tasks moved by multiples of
    1/8 (more than 0.01 % of any integer duration up to 1250 s): the verdict and the
    violations (kind, task, GPU) are the same at every shift, unless the shifted schedule
    is refused as too coarse to check, and the objective moves by exactly Σ w × shift."""
    sched = solve(inst, "ect").schedule
    tasks = list(sched.tasks)
    for i in data.draw(st.lists(st.integers(0, len(tasks) - 1), max_size=3)):
        delta = data.draw(st.integers(-40, 40)) / 8
        tasks[i] = dataclasses.replace(tasks[i], start=tasks[i].start + delta)
    sched = Schedule(sched.instance, tasks, sched.mode)
    base = check(inst, sched)
    moved_inst, moved = _shifted(inst, sched, shift)
    try:
        report = check(moved_inst, moved)
    except ResolutionError:
        assert shift > 0
        return
    assert report.feasible == base.feasible
    assert _found(report) == _found(base)
    if base.objective is not None:
        total = sum(j.weight for j in inst.jobs)
        assert report.objective == pytest.approx(
            base.objective + total * shift, rel=1e-15, abs=1e-9
        )


def test_processor_sharing_ends_where_a_step_is_below_the_float_spacing():
    """Processor sharing at t = 1e16 (float spacing 2 s; inputs that large are refused, but
    the checker's loop must end on any times): every task ends, none before it starts."""
    t0 = 1e16
    items = [
        (t0, 1.0, 0.6, False),
        (t0, 1.0, 0.6, False),
        (t0 + 8, 1.0, 0.6, False),
        (t0 + 8, 0.3, 0.5, False),
    ]
    ends = _progress(items)
    assert all(e >= a for e, (a, *_) in zip(ends, items, strict=True))


def test_times_beyond_the_input_bound_are_bad_input():
    with pytest.raises(InputError, match="start must be a number in"):
        Task("j0", 0, 0, "g", 1.7e308)
    with pytest.raises(InputError, match="arrival must be a number in"):
        _one_gpu(1, 1.0, 1e16)
