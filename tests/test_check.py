"""The independent checker: every violation kind, in both modes, on hand-checked schedules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, Schedule, Task, check
from optsched.io import load_instance, load_schedule
from tests.conftest import EXAMPLES, ROOT

# Two GPUs of two types. J1 arrives at 1 (weight 2): two rounds of two tasks, 2 s + 1 s sync on
# A, 3 s + 0 s on B. J2 arrives at 0: one task, only on A, 1 s.
TINY = Instance(
    "tiny",
    (
        Job(
            "J1",
            arrival=1,
            weight=2,
            rounds=2,
            tasks_per_round=2,
            compute={"A": 2, "B": 3},
            sync={"A": 1, "B": 0},
        ),
        Job("J2", arrival=0, weight=1, rounds=1, tasks_per_round=1, compute={"A": 1}),
    ),
    (GPU("g0", "A"), GPU("g1", "B")),
)

# Feasible in both modes: J2 on g0 [0,1); J1 round 0 at 1 (ready 4), round 1 at 4 (ready 7).
GOOD = {
    ("J2", 0, 0): ("g0", 0.0),
    ("J1", 0, 0): ("g0", 1.0),
    ("J1", 0, 1): ("g1", 1.0),
    ("J1", 1, 0): ("g0", 4.0),
    ("J1", 1, 1): ("g1", 4.0),
}


def schedule(changes: dict | None = None, *, drop=(), extra=(), mode=None, name="tiny"):
    tasks = dict(GOOD)
    tasks.update(changes or {})
    out = [Task(j, r, k, g, s) for (j, r, k), (g, s) in tasks.items() if (j, r, k) not in drop]
    out += [Task(*t) for t in extra]
    return Schedule(name, out, mode)


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_good_schedule_is_feasible_with_hand_computed_objective(mode):
    """C_J1 = 7 and C_J2 = 1, so Σ w C = 2·7 + 1 = 15 in both modes."""
    report = check(TINY, schedule(mode=mode))
    assert report.feasible, report.violations
    assert report.objective == 15
    assert report.completion == {"J1": 7, "J2": 1}


def test_metrics_by_hand():
    """JCTs 6 and 1; g0 busy 5 of 7 s, g1 busy 6 of 7 s (relaxed: compute only)."""
    m = check(TINY, schedule()).metrics
    assert m["total_weighted_jct"] == 2 * 6 + 1
    assert m["mean_jct"] == 3.5
    assert m["makespan"] == 7
    assert m["utilisation"] == pytest.approx({"g0": 5 / 7, "g1": 6 / 7})


def test_gang_utilisation_counts_held_intervals():
    """In gang mode g0 is held for the round's pace (3 s), not its own 2 s."""
    m = check(TINY, schedule(mode="gang")).metrics
    assert m["utilisation"] == pytest.approx({"g0": 7 / 7, "g1": 6 / 7})


CASES = {
    "unknown-job": dict(extra=[("JX", 0, 0, "g0", 10.0)]),
    "unknown-gpu": dict(changes={("J2", 0, 0): ("gX", 0.0)}),
    "unknown-index": dict(extra=[("J1", 2, 0, "g0", 20.0)]),
    "duplicate": dict(extra=[("J2", 0, 0, "g0", 10.0)]),
    "missing": dict(drop=[("J1", 1, 1)]),
    "ineligible": dict(changes={("J2", 0, 0): ("g1", 8.0)}),
    "arrival": dict(changes={("J1", 0, 1): ("g1", 0.5)}),
    "barrier": dict(changes={("J1", 1, 0): ("g0", 3.5)}),
    "overlap": dict(changes={("J2", 0, 0): ("g0", 1.5)}),
    "instance": dict(name="other"),
}


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_violation_kind_is_caught_and_named(kind, mode):
    """Each hand-made fault yields exactly its own violation kind."""
    sched = schedule(mode=mode, **CASES[kind])
    report = check(TINY, sched)
    expected = {kind}
    if mode == "gang" and kind in ("arrival", "barrier"):
        expected.add("gang-start")  # moving one task of a gang round also splits the round
    if mode == "gang" and kind == "barrier":
        expected.add("overlap")  # and g0 is still held by round 0 until 4
    assert report.kinds() == expected, report.violations
    assert not report.feasible


def test_violation_names_the_task():
    report = check(TINY, schedule({("J1", 1, 0): ("g0", 3.5)}))
    (v,) = report.violations
    assert (v.kind, v.job, v.round, v.task, v.gpu) == ("barrier", "J1", 1, 0, "g0")
    assert "ready at 4" in v.message


def test_objective_only_when_every_task_appears_exactly_once():
    assert check(TINY, schedule(drop=[("J2", 0, 0)])).objective is None
    assert check(TINY, schedule(extra=[("J2", 0, 0, "g0", 10.0)])).objective is None
    assert check(TINY, schedule(extra=[("JX", 0, 0, "g0", 10.0)])).objective is None
    # a timing fault still has an objective
    assert check(TINY, schedule({("J1", 1, 0): ("g0", 3.5)})).objective == 15


def test_every_violation_is_reported_not_just_the_first():
    sched = schedule(
        {("J2", 0, 0): ("g0", 1.5), ("J1", 1, 0): ("g0", 3.5)},
        drop=[("J1", 1, 1)],
        extra=[("JX", 0, 0, "g9", 0.0)],
    )
    kinds = [v.kind for v in check(TINY, sched).violations]
    assert sorted(set(kinds)) == ["barrier", "missing", "overlap", "unknown-gpu", "unknown-job"]


def test_gang_start_and_distinct():
    """Gang rounds start together on distinct GPUs."""
    late = check(TINY, schedule({("J1", 1, 1): ("g1", 4.5)}, mode="gang"))
    assert late.kinds() == {"gang-start"}
    assert late.violations[0].round == 1
    assert check(TINY, schedule({("J1", 1, 1): ("g1", 4.5)})).feasible  # fine when relaxed
    same = check(TINY, schedule({("J1", 0, 1): ("g0", 1.0)}, mode="gang"))
    assert "gang-distinct" in same.kinds()


def test_gang_holds_the_gpu_for_the_whole_round():
    """J2 at 3 on g0 fits relaxed ([1,3) then [3,4)) but not gang (round held [1,4))."""
    changed = {("J2", 0, 0): ("g0", 3.0)}
    assert check(TINY, schedule(changed)).feasible
    gang = check(TINY, schedule(changed, mode="gang"))
    assert gang.kinds() == {"overlap"}


def test_schedule_mode_overrides_instance_mode():
    gang_instance = TINY.with_mode("gang")
    changed = {("J2", 0, 0): ("g0", 3.0)}
    assert not check(gang_instance, schedule(changed)).feasible
    assert check(gang_instance, schedule(changed, mode="relaxed")).feasible


def test_tolerance_near_zero():
    """Starts within 1e-9·max(1, longest task) of the limit pass; beyond it they fail
    (tests/test_check_tolerance.py: far from zero)."""
    assert check(TINY, schedule({("J1", 1, 0): ("g0", 4 - 1e-12)})).feasible
    assert not check(TINY, schedule({("J1", 1, 0): ("g0", 4 - 1e-6)})).feasible


def test_half_open_intervals_may_touch():
    assert check(TINY, schedule({("J2", 0, 0): ("g0", 3.0)})).feasible


@pytest.mark.parametrize(
    "name,optimum", [("example-1", 206), ("example-2", 343), ("example-3", 83)]
)
def test_examples_proven_optima_are_accepted(name, optimum):
    inst = load_instance(EXAMPLES / f"{name}.instance.json")
    report = check(inst, load_schedule(EXAMPLES / f"{name}.optimal.schedule.json"))
    assert report.feasible, report.violations
    assert report.objective == optimum


def test_hare_toy_paper_schedule_is_accepted_with_8_5():
    """Hare HPDC'22 Fig. 1: total JCT 8.5, makespan 3."""
    inst = load_instance(ROOT / "instances/hare-toy/hare-toy.instance.json")
    report = check(inst, load_schedule(ROOT / "instances/hare-toy/hare-fig1.schedule.json"))
    assert report.feasible, report.violations
    assert report.objective == 8.5
    assert report.metrics["makespan"] == 3
    assert report.completion == {"J1": 2.5, "J2": 3, "J3": 3}


def test_bundled_demo_copies_match_instances_folder():
    for folder, name in (
        ("hare-toy", "hare-toy.instance.json"),
        ("hare-toy", "hare-fig1.schedule.json"),
        ("liquid-demo", "liquid-demo.instance.json"),
    ):
        shipped = (ROOT / "optsched/data/instances" / name).read_text()
        assert shipped == (ROOT / "instances" / folder / name).read_text()


@given(
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(1, 10), st.sampled_from([0.0, 1e-12, -1e-12])),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([1.0, 1e9]),
)
def test_spans_open_near_a_start_include_every_one_open_there(raw, scale):
    """The checker's sweep (_open_near) returns, for each span, a superset of the spans open
    at its start within tolerance (what the quadratic rule it replaces would find), with
    starts nudged by a rounding error and at a far time origin."""
    from optsched.check import _open_near, before

    spans = [((s + e) * scale, (s + d) * scale) for s, d, e in raw]
    near = _open_near(spans)
    for (a, b), maybe in zip(spans, near, strict=True):
        exact = {
            i
            for i, (h0, h1) in enumerate(spans)
            if not before(a, h0, min(b - a, h1 - h0)) and before(a, h1, min(b - a, h1 - h0))
        }
        assert exact <= set(maybe) and maybe == sorted(maybe)
