"""priority-search's compiled decoder against the Python one: the same schedule task by task,
objective, work counts, job entries and checkpoints, from time 0 and from checkpoints after
moves, on random instances of both modes and both rules; the same search result; and how a
run chooses its engine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, GeneratorSpec, Instance, Job, generate, solve
from optsched.budget import OutOfTime
from optsched.errors import InputError
from optsched.generate import HareSpec, generate_hare
from optsched.heuristics import _priority_compiled as priority_compiled
from optsched.heuristics.priority_search import _Decoder, _move, smith_priorities
from optsched.testing import assert_schedule, instances
from tests.conftest import n_examples


def _tasks(decoded) -> list[tuple[int, int, int, int, float]]:
    rows = decoded.task[: decoded.n_tasks].tolist()
    starts = decoded.start[: decoded.n_tasks].tolist()
    return [(j, r, k, g, s) for (j, r, k, g), s in zip(rows, starts, strict=True)]


def _assert_same(python, compiled) -> None:
    assert compiled.objective == python.objective
    assert _tasks(compiled) == [tuple(task) for task in python.tasks]
    assert (compiled.events, compiled.scanned) == (python.events, python.scanned)
    assert list(compiled.entry) == list(python.entry)
    for k, checkpoint in enumerate(python.checkpoints):
        mark = compiled.checkpoints[k]
        assert (mark.events, mark.scanned) == (checkpoint.events, checkpoint.scanned)


def _replay(
    inst: Instance, reserve: bool, seed: int, moves: int = 12, room: int = 0, tight: bool = False
) -> None:
    """Smith's order, then ``moves`` moves decoded from checkpoints, by both decoders."""
    python = _Decoder(inst, reserve, tight)
    compiled = priority_compiled.CompiledDecoder(python, 64)
    if room:
        compiled.room = room  # too small: the decode grows it and starts again
    rng = np.random.default_rng(seed)
    priority = smith_priorities(inst)
    a = python.run(priority, python.start(), None, 0)
    b = compiled.run(priority, compiled.start(), None, 0)
    _assert_same(a, b)
    for _ in range(moves):
        trial, changed = _move(priority, rng)
        restart = int(min(a.entry[j] for j in changed))
        if room:  # smaller than the records it restarts after: grown again
            compiled.room = room
        next_a = python.run(trial, a.checkpoints[restart], a, restart)
        next_b = compiled.run(trial, b.checkpoints[restart], b, restart)
        _assert_same(next_a, next_b)
        if next_a.objective <= a.objective:
            priority, a, b = trial, next_a, next_b
    assert compiled.schedule(b) == python.schedule(a)
    assert len(b.checkpoints) == len(a.checkpoints)
    with pytest.raises(IndexError):
        b.checkpoints[len(a.checkpoints)]


@settings(deadline=None, max_examples=n_examples(150))
@given(
    instances(max_jobs=7, max_gpus=6, max_rounds=5, max_k=4),
    st.booleans(),
    st.integers(0, 10**6),
    st.sampled_from([0.0, 0.0, 1e6, 1.7e9]),
    st.booleans(),
)
def test_the_same_decodes_as_the_python_decoder(instance, reserve, seed, origin, tight):
    """Random instances of both modes (ties in free times and paces, arrivals at once,
    integer and real times, epoch-scale origins), both rules, both fits."""
    if origin:
        jobs = tuple(
            Job(
                job.id,
                origin + job.arrival,
                job.weight,
                job.rounds,
                job.tasks_per_round,
                compute=dict(job.compute),
                sync=dict(job.sync),
            )
            for job in instance.jobs
        )
        instance = Instance(instance.name, jobs, instance.gpus, mode=instance.mode)
    _replay(instance, reserve, seed, tight=tight)


@pytest.mark.parametrize(
    ("mode", "tight"), [("relaxed", False), ("relaxed", True), ("gang", False)]
)
@pytest.mark.parametrize("reserve", [True, False])
def test_the_same_decodes_on_loaded_clusters(mode, tight, reserve):
    """Many jobs waiting at once on classes of several GPUs, and a Hare-setting instance of
    2,000 tasks; with an arena too small at first, which the decode grows."""
    for seed in range(3):
        spec = GeneratorSpec(jobs=30, gpus=8, gpu_types=3, hosts=2, load=4.0, rounds=(1, 6))
        inst = generate(spec, seed).with_mode(mode)
        _replay(inst, reserve, seed, moves=20, room=seed * 50, tight=tight)
    hare = generate_hare(HareSpec(jobs=20, gpus=15, total_tasks=2000), 0).with_mode(mode)
    _replay(hare, reserve, 1, moves=10, tight=tight)


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_the_search_returns_the_same_schedule_with_either_engine(mode):
    inst = generate(GeneratorSpec(jobs=15, gpus=6, gpu_types=2, hosts=2, load=3.0), 4)
    inst = inst.with_mode(mode)
    results = [
        solve(inst, "priority-search", params={"steps": 200, "engine": engine}, seed=2)
        for engine in ("python", "compiled")
    ]
    assert [r.extra["engine"] for r in results] == ["python", "compiled"]
    assert results[0].schedule == results[1].schedule
    assert results[0].objective == results[1].objective
    assert results[0].extra["improvements"] == results[1].extra["improvements"]
    assert_schedule(inst, results[1].schedule)


def test_a_passed_deadline_stops_the_decode():
    inst = generate(GeneratorSpec(jobs=30, gpus=4, gpu_types=2, hosts=2, load=4.0), 0)
    decoder = priority_compiled.CompiledDecoder(_Decoder(inst, True), 1)
    with pytest.raises(OutOfTime):
        decoder.run(smith_priorities(inst), decoder.start(), None, 0, deadline=0.0)


def test_without_a_c_compiler_auto_decodes_in_python_and_compiled_says_why(monkeypatch):
    inst = Instance("one", (Job("a", 0.0, 1.0, 2, 1, compute={"A": 1.0}),), (GPU("g", "A"),))
    monkeypatch.setattr(priority_compiled, "_kernel", [])  # not loaded yet in this process
    monkeypatch.setenv("CC", "/nonexistent/cc")
    result = solve(inst, "priority-search", params={"steps": 5})
    assert result.extra["engine"] == "python"
    with pytest.raises(InputError, match=r"engine=compiled is unavailable: the C compiler"):
        solve(inst, "priority-search", params={"steps": 5, "engine": "compiled"})
