"""priority-search: checker-clean, bound ≤ OPT ≤ objective, never worse than ECT, seeded runs
repeat, and an evaluation restarted from a checkpoint decodes exactly what a decode from
time 0 does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GeneratorSpec, generate, solve
from optsched.check import ResolutionError, check
from optsched.contracts import SolveContext
from optsched.errors import InputError
from optsched.heuristics.priority_search import (
    PrioritySearchOptions,
    _Decoder,
    _move,
    lp_classes,
    priority_search,
    smith_priorities,
)
from optsched.instance import GPU, Instance, Job
from optsched.result import OPTIMAL_TOL
from optsched.testing import assert_schedule, instances
from tests.conftest import n_examples


@settings(deadline=None, max_examples=n_examples(40))
@given(
    instances(max_jobs=4, integer=True),
    st.integers(0, 3),
    st.sampled_from(["auto", "reserve", "greedy"]),
    st.sampled_from(["earliest", "tight"]),
)
def test_checker_clean_and_above_the_optimum(instance, seed, decoder, fit):
    optimum = solve(instance, "cpsat", time_limit=5)
    params = {"steps": 30, "decoder": decoder, "fit": fit}
    result = solve(instance, "priority-search", params=params, seed=seed)
    assert result.extra["fit"] == fit
    assert result.extra["decoder"] in ({"reserve", "greedy"} if decoder == "auto" else {decoder})
    assert_schedule(instance, result.schedule, bound=optimum.bound)
    ect = solve(instance, "ect")
    assert result.objective <= ect.objective * (1 + 1e-12)
    if optimum.status == "optimal":
        assert result.objective >= optimum.objective * (1 - OPTIMAL_TOL)


@settings(deadline=None, max_examples=n_examples(40))
@given(st.integers(0, 10**6), st.sampled_from(["relaxed", "gang"]), st.booleans(), st.booleans())
def test_incremental_evaluation_equals_a_full_decode(seed, mode, reserve, tight):
    inst = generate(
        GeneratorSpec(jobs=12, gpus=6, gpu_types=3, hosts=2, load=3.0), seed=seed % 50
    ).with_mode(mode)
    decoder = _Decoder(inst, reserve, tight)
    rng = np.random.default_rng(seed)
    priority = smith_priorities(inst)
    current = decoder.run(priority, decoder.start(), None, 0)
    for _ in range(10):
        trial, changed = _move(priority, rng)
        assert len(set(trial)) == inst.n_jobs  # priorities stay distinct
        restart = int(min(current.entry[j] for j in changed))
        fast = decoder.run(trial, current.checkpoints[restart], current, restart)
        full = decoder.run(trial, decoder.start(), None, 0)
        assert fast.tasks == full.tasks and fast.objective == full.objective
        assert list(fast.entry) == list(full.entry)
        assert len(fast.checkpoints) == len(full.checkpoints)
        report = check(inst, decoder.schedule(full))
        assert report.feasible and report.objective == pytest.approx(full.objective)
        if fast.objective <= current.objective:
            priority, current = trial, fast


def test_seeded_runs_repeat_and_load_lets_priorities_matter():
    inst = generate(GeneratorSpec(jobs=30, gpus=8, gpu_types=2, hosts=2, load=4.0), seed=1)
    first = solve(inst, "priority-search", params={"steps": 60}, seed=5)
    again = solve(inst, "priority-search", params={"steps": 60}, seed=5)
    assert first.objective == again.objective and first.extra["steps"] == 60
    assert first.schedule.to_dict() == again.schedule.to_dict()
    assert 0 < first.extra["replayed"] <= 1
    # under load the queue is long: Smith's order and the search beat ECT's ready-time order
    assert first.objective < solve(inst, "ect").objective
    assert first.extra["improvements"] >= 1
    assert first.extra["anytime"][-1][1] == first.objective


def _three_jobs() -> Instance:
    """A fast GPU F and a slow one S; C (first in Smith's order) takes F until 0.2, then A
    waits for F, and B, last, may start on S at once."""
    compute = [
        ("C", 10.0, {"F": 0.2, "S": 0.3}),
        ("A", 5.0, {"F": 1.0, "S": 1.5}),
        ("B", 1.0, {"F": 1.0, "S": 1.5}),
    ]
    return Instance(
        "three",
        tuple(Job(name, arrival=0.0, weight=w, compute=c) for name, w, c in compute),
        (GPU("f", "F"), GPU("s", "S")),
    )


def test_reserve_sends_a_lower_priority_round_to_an_idle_slower_gpu():
    inst = _three_jobs()
    starts = {}
    for reserve in (True, False):
        decoder = _Decoder(inst, reserve)
        decoded = decoder.run(smith_priorities(inst), decoder.start(), None, 0)
        tasks = {t.job: t for t in decoder.schedule(decoded).tasks}
        assert (tasks["C"].gpu, tasks["A"].gpu, tasks["B"].gpu) == ("f", "f", "s")
        starts[reserve] = tasks["B"].start
    # A waits for F; reserving it lets B start on S at once, not when F frees
    assert starts == {True: 0.0, False: pytest.approx(0.2)}


@pytest.mark.parametrize("decoder", ["auto", "reserve", "greedy"])
def test_a_round_length_lost_in_the_addition_to_its_start(decoder):
    """At 1e9 a gang round of 2e-8 s ends when it starts (floats are 2.4e-7 s apart): the
    decoder runs without giving its GPU twice, and the result is refused as too coarse to
    check; 1e9 s less (time zero at the first arrival) it is checked and feasible."""
    for origin in (1e9, 0.0):
        jobs = tuple(Job(name, arrival=origin, compute={"F": 2e-8, "S": 1.0}) for name in "ab")
        inst = Instance("absorb", jobs, (GPU("g0", "F"), GPU("g1", "S")), mode="gang")
        if origin:
            with pytest.raises(ResolutionError, match="time zero to the first arrival"):
                solve(inst, "priority-search", params={"steps": 1, "decoder": decoder})
            continue
        result = solve(inst, "priority-search", params={"steps": 1, "decoder": decoder})
        assert_schedule(inst, result.schedule)
        assert result.extra["left_shift"] >= 0


def _reference_relaxed_event(decoder, moment, free, queue):
    """The relaxed event as its docstring states it, on plain per-GPU free times: each
    queued round (priority order) places its tasks one by one where the result is ready
    earliest (the class whose earliest-free GPU, lowest index on ties, gives it first);
    an idle GPU takes the task, a busy one is reserved (reserve: the rounds after it see
    it busy until the task would end) or ends the round's turn (greedy). Returns the
    placements and the work count: classes looked at, one per class priced per task, none
    when no GPU is idle."""
    classes = decoder.members
    virtual, tasks = free.copy(), []

    def idle() -> bool:
        return any(virtual[members].min() <= moment for members in classes)

    visits = len(classes) if idle() else 0
    for item in queue:
        if not idle():
            break
        j, waiting = int(item[1]), 0
        while item[4] > waiting:
            visits += len(decoder.class_choices[j])
            best, best_gpu, best_compute = np.inf, -1, 0.0
            for c, compute, pace in decoder.class_choices[j]:
                g = min(classes[c], key=lambda g: (virtual[g], g))
                ready = max(moment, virtual[g]) + pace
                if ready < best:
                    best, best_gpu, best_compute = ready, g, compute
            g = best_gpu
            if virtual[g] > moment:
                if not decoder.reserve:
                    break
                virtual[g] += best_compute
                waiting += 1
                continue
            free[g] = virtual[g] = moment + best_compute
            tasks.append((j, int(item[2]), decoder.tasks_per_round[j] - int(item[4]), g, moment))
            item[4] -= 1
            item[5] = max(item[5], best)
    return tasks, visits


@settings(deadline=None, max_examples=n_examples(60))
@given(st.integers(0, 10**6), st.booleans())
def test_relaxed_event_follows_its_rule(seed, reserve):
    """The event's heaps (free times only, idle classes counted) place and reserve exactly
    as the rule on plain free times does, on random busy states."""
    rng = np.random.default_rng(seed)
    inst = generate(
        GeneratorSpec(jobs=8, gpus=7, gpu_types=3, hosts=2, load=3.0), seed=seed % 40
    ).with_mode("relaxed")
    decoder = _Decoder(inst, reserve)
    moment = 5.0
    free = np.where(rng.random(inst.n_gpus) < 0.6, moment + rng.integers(1, 6, inst.n_gpus), 0.0)
    if rng.random() < 0.1:  # every GPU idle
        free[:] = 0.0
    queue = sorted(
        [-float(p), j, 0, 0.0, int(rng.integers(1, inst.jobs[j].tasks_per_round + 1)), 0.0]
        for j, p in enumerate(rng.permutation(inst.n_jobs))
    )
    heaps = [sorted((float(free[g]), int(g)) for g in members) for members in decoder.members]
    ours_free, ours_queue, ours = free.copy(), [list(item) for item in queue], []
    visits = decoder._relaxed_event(moment, ours_free, heaps, ours_queue, ours)
    ref_queue = [list(item) for item in queue]
    reference, ref_visits = _reference_relaxed_event(decoder, moment, free, ref_queue)
    assert ours == reference and visits == ref_visits
    assert list(ours_free) == list(free) and ours_queue == ref_queue


def _reference_gang_event(decoder, moment, free, queue):
    """The gang event as its docstring states it, on plain per-GPU free times: each queued
    round (priority order) takes, for each pace p of its GPUs, the K earliest-free GPUs of
    pace ≤ p, and keeps the p that finishes first; it starts now on the slowest idle GPUs of
    that prefix, or (reserve) holds the K earliest-free ones until it would end there, or
    (greedy) waits. Returns the placements and the work count."""
    virtual = free.copy() if decoder.reserve else free
    tasks, visits = [], 0
    for item in queue:
        if not any(virtual <= moment):
            break
        j = int(item[1])
        k_tasks, order = decoder.tasks_per_round[j], [int(g) for g in decoder.by_pace[j]]
        visits += 1 + len(decoder.thresholds[j])
        if not decoder.reserve and sum(virtual[g] <= moment for g in order) < k_tasks:
            continue
        best, best_start, best_end = np.inf, np.inf, 0
        for end, pace in decoder.thresholds[j]:
            start = max(moment, sorted(virtual[g] for g in order[:end])[k_tasks - 1])
            if start + pace < best:
                best, best_start, best_end = start + pace, start, end
        eligible = order[:best_end]
        if best_start > moment:
            if decoder.reserve:  # the K earliest free, earlier in pace order on ties
                waits = sorted(eligible, key=lambda g: (virtual[g], eligible.index(g)))[:k_tasks]
                until = best_start + max(decoder.pace[j, g] for g in waits)
                for g in waits:
                    virtual[g] = until
            continue
        chosen = [g for g in eligible if virtual[g] <= moment][-k_tasks:]
        if len(chosen) < k_tasks:
            continue
        length = max(decoder.pace[j, g] for g in chosen)
        for k, g in enumerate(sorted(chosen)):
            tasks.append((j, int(item[2]), k, g, moment))
            free[g] = virtual[g] = moment + length
        item[4], item[5] = 0, moment + length
    return tasks, visits


@settings(deadline=None, max_examples=n_examples(60))
@given(st.integers(0, 10**6), st.booleans())
def test_gang_event_follows_its_rule(seed, reserve):
    """The gang event starts, holds and reserves exactly as its rule on plain per-GPU free
    times does, on random busy states (integer free times: many ties)."""
    rng = np.random.default_rng(seed)
    inst = generate(
        GeneratorSpec(jobs=12, gpus=8, gpu_types=4, hosts=2, load=3.0), seed=seed % 40
    ).with_mode("gang")
    decoder = _Decoder(inst, reserve)
    moment = 5.0
    free = np.where(rng.random(inst.n_gpus) < 0.5, moment + rng.integers(1, 6, inst.n_gpus), 0.0)
    queue = sorted(
        [-float(p), j, 0, 0.0, inst.jobs[j].tasks_per_round, 0.0]
        for j, p in enumerate(rng.permutation(inst.n_jobs))
    )
    ours_free, ours_queue, ours = free.copy(), [list(item) for item in queue], []
    visits = decoder._gang_event(moment, ours_free, ours_queue, ours)
    ref_queue = [list(item) for item in queue]
    reference, ref_visits = _reference_gang_event(decoder, moment, free, ref_queue)
    assert ours == reference and visits == ref_visits
    assert list(ours_free) == list(free) and ours_queue == ref_queue


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_kicks_restart_from_the_best_and_only_add_improvements(mode):
    """With ``kick``, the search runs as without it up to its first local optimum, then
    restarts from the best priorities changed by ``kick`` random moves: the same improvements
    and more, the best schedule kept; without a budget it stops at the local optimum."""
    inst = generate(GeneratorSpec(jobs=20, gpus=6, gpu_types=2, hosts=2, load=3.0), 1)
    inst = inst.with_mode(mode)
    params = {"steps": 1500, "patience": 100}
    plain = solve(inst, "priority-search", params=params, seed=3)
    kicked = solve(inst, "priority-search", params={**params, "kick": 4}, seed=3)
    assert plain.extra["stopped"] == "patience" and plain.extra["kicks"] == 0
    assert kicked.extra["stopped"] == "steps" and kicked.extra["steps"] == 1500
    assert kicked.extra["kicks"] >= 1
    assert kicked.extra["improvements"] >= plain.extra["improvements"]
    found = [objective for _, objective in kicked.extra["anytime"]]
    assert (
        found[: len(plain.extra["anytime"]) - 1]
        == [objective for _, objective in plain.extra["anytime"]][
            : len(plain.extra["anytime"]) - 1
        ]
    )
    assert_schedule(inst, kicked.schedule)
    options = PrioritySearchOptions(patience=100, kick=4)
    endless = priority_search(inst, SolveContext(mode, options, None, 3))  # no budget
    assert endless.extra["stopped"] == "patience" and endless.extra["kicks"] == 0


@pytest.mark.parametrize("reserve", [True, False])
def test_tight_fit_leaves_the_fast_gpus_a_slow_task_would_not_use(reserve):
    """A round of 3 tasks on 2 fast GPUs (compute 1) and 2 slow ones (compute 2) is ready at
    2 either way: earliest puts two tasks on the fast GPUs, tight puts them on the slow ones
    and keeps a fast GPU idle for the next job, ready at 1 instead of 2."""
    compute = {"fast": 1.0, "slow": 2.0}
    jobs = (
        Job("wide", 0.0, 2.0, 1, 3, compute=compute),
        Job("next", 0.0, 1.0, 1, 1, compute=compute),
    )
    gpus = tuple(GPU(f"{kind}{i}", kind) for kind in ("fast", "slow") for i in range(2))
    inst = Instance("tight", jobs, gpus)
    priority = np.array([2.0, 1.0])  # the wide job first
    objective = {}
    for tight in (False, True):
        decoder = _Decoder(inst, reserve, tight)
        decoded = decoder.run(priority, decoder.start(), None, 0)
        assert check(inst, decoder.schedule(decoded)).feasible
        objective[tight] = decoded.objective
    assert objective == {False: 2.0 * 2 + 2.0, True: 2.0 * 2 + 1.0}


def test_fit_changes_nothing_in_gang_mode():
    inst = generate(GeneratorSpec(jobs=12, gpus=6, gpu_types=3, hosts=2, load=3.0), 3)
    inst = inst.with_mode("gang")
    earliest, tight = (
        solve(inst, "priority-search", params={"steps": 50, "fit": fit}, seed=1)
        for fit in ("earliest", "tight")
    )
    assert earliest.schedule == tight.schedule
    assert (earliest.extra["fit"], tight.extra["fit"]) == ("earliest", "tight")


def _two_speeds(mode: str, tasks: int = 1) -> Instance:
    """One fast and one slow GPU; ``vision`` is 7 times slower on the slow one, ``graph``
    only 2 times. The optimum (relaxed, one task per round) is 25: ``vision`` on the fast
    GPU (C = 10), ``graph`` 5 rounds on the slow one meanwhile, then 5 on the fast one."""
    jobs = (
        Job("vision", 0.0, 1.0, 10, 1, compute={"fast": 1.0, "slow": 7.0}),
        Job("graph", 0.0, 1.0, 10, tasks, compute={"fast": 1.0, "slow": 2.0}),
    )
    return Instance("two-speeds", jobs, (GPU("f", "fast"), GPU("s", "slow")), mode=mode)


def test_lp_classes_keep_each_job_where_the_lp_puts_its_work():
    inst = _two_speeds("relaxed")
    upper = solve(inst, "ect")
    cut, lp = lp_classes(inst, upper.objective, upper.metrics["makespan"], 0.3, None)
    assert lp.status == "optimal" and lp.class_share is not None
    assert np.allclose(lp.class_share.sum(axis=1), 1.0)
    assert dict(cut.jobs[0].compute) == {"fast": 1.0}  # its work on the slow GPU: < 1 %
    assert dict(cut.jobs[1].compute) == {"fast": 1.0, "slow": 2.0}  # about half there
    result = solve(inst, "priority-search", params={"classes": "lp", "share": 0.3, "steps": 20})
    with pytest.raises(InputError, match="share applies with classes=lp only"):
        solve(inst, "priority-search", params={"share": 0.3, "steps": 20})
    assert_schedule(inst, result.schedule)
    assert result.bound == pytest.approx(25.0)  # the LP's bound, certified: the optimum here
    assert 25.0 <= result.objective <= upper.objective
    # a job keeps the type where the LP does most of its work, whatever the share
    whole, _ = lp_classes(inst, upper.objective, upper.metrics["makespan"], 1.0, None)
    assert all(len(job.compute) == 1 for job in whole.jobs)
    # gang mode: a round of 2 tasks needs both GPUs, so both types stay open to it
    gang = _two_speeds("gang", tasks=2)
    upper = solve(gang, "ect")
    cut, _ = lp_classes(gang, upper.objective, upper.metrics["makespan"], 1.0, None)
    assert set(cut.jobs[1].compute) == {"fast", "slow"}


def test_classes_lp_without_an_lp_solution_searches_every_type_and_a_ctrl_c_stops(monkeypatch):
    from optsched.exact.capacity import CapacityLP
    from optsched.heuristics import priority_search as module

    inst = _two_speeds("relaxed")
    monkeypatch.setattr(
        module, "capacity_bound", lambda *args, **kwargs: CapacityLP(None, "time limit", 1, 1)
    )
    result = solve(inst, "priority-search", params={"classes": "lp", "steps": 20})
    assert result.extra["lp_status"] == "time limit" and result.extra["cut_pairs"] == 0
    assert result.extra["bound_source"] != "method"
    assert_schedule(inst, result.schedule)

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "capacity_bound", ctrl_c)  # while the LP is built
    result = solve(inst, "priority-search", params={"classes": "lp", "steps": 20})
    assert result.extra["stopped"] == "interrupted" and result.extra["returned"].startswith("ect")
    assert_schedule(inst, result.schedule)


@settings(deadline=None, max_examples=n_examples(30))
@given(instances(max_jobs=4, integer=True), st.integers(0, 3), st.sampled_from([0.0, 0.5, 1.0]))
def test_classes_lp_checker_clean_with_its_lp_bound_below_the_optimum(instance, seed, share):
    optimum = solve(instance, "cpsat", time_limit=5)
    params = {"steps": 30, "classes": "lp", "share": share}
    result = solve(instance, "priority-search", params=params, seed=seed)
    assert result.extra["lp_status"] == "optimal"
    assert_schedule(instance, result.schedule, bound=optimum.bound)
    assert result.bound is not None
    assert result.bound <= optimum.objective * (1 + OPTIMAL_TOL)
    assert result.objective <= solve(instance, "ect").objective * (1 + 1e-12)
    if optimum.status == "optimal":
        assert result.objective >= optimum.objective * (1 - OPTIMAL_TOL)
