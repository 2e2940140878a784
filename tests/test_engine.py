"""The one event engine (optsched/online/engine.py) under both execution models: one decision
type, one entry point, shared observers (metrics, recording, streaming, progress)."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import check
from optsched.fairness import FAIRNESS_KEYS
from optsched.generate import LiquidSpec, generate_liquid
from optsched.io import load_schedule, schedule_from_dict
from optsched.online.cluster import simulate_cluster
from optsched.online.engine import (
    STALL_INSTANTS,
    MetricsObserver,
    Observer,
    PhaseMetricsObserver,
    PolicyError,
    ScheduleStreamer,
    Start,
)
from optsched.online.liquid import Liquid
from optsched.online.run import simulate
from optsched.online.simulator import run_simulation
from tests.conftest import n_examples
from tests.test_cluster_actuals import RandomCluster
from tests.test_online import TOY, load_instance


def liquid_instance(seed, rounds=2, error=1.0):
    """Small GPUs, mispredicted memory: sharing and pre-scheduling fail now and then."""
    spec = LiquidSpec(
        hosts=2,
        jobs=8,
        distributed=0.3,
        interarrival=5,
        prediction_error=error,
        gpu_memory=12288.0,
        gpu_memory_gb=(3, 6),
        launch=5.0,
        save=5.0,
        share_cap=2.0,
        link_contention=seed % 2 == 1,
    )
    inst = generate_liquid(spec, seed)
    return dataclasses.replace(
        inst, jobs=tuple(dataclasses.replace(j, rounds=rounds) for j in inst.jobs)
    )


class Counter(Observer):
    def __init__(self):
        self.calls = {"task": 0, "train": 0, "fail": 0, "done": 0}
        self.held = 0.0

    def on_task(self, *args):
        self.calls["task"] += 1

    def on_train(self, job, start):
        self.calls["train"] += 1

    def on_fail(self, job, gpus, start, at):
        self.calls["fail"] += 1

    def on_held(self, gpu, start, end):
        assert end >= start
        self.held += end - start

    def on_job_done(self, job, completion):
        self.calls["done"] += 1


def sorted_tasks(schedule):
    return sorted(schedule.tasks, key=lambda t: (t.job, t.round, t.task, t.start, t.gpu))


@settings(max_examples=n_examples(25), deadline=None)
@given(seed=st.integers(0, 10_000), rounds=st.integers(1, 3))
def test_cluster_observers_stream_and_count_what_is_recorded(seed, rounds):
    """Under the cluster model the streamed schedule (schedule@2, each task written at its
    training start or failure) holds the recorded one's tasks, the checker passes it, and an
    observer sees one training start or failure per round attempt; the metrics observer's
    failures are the checker's."""
    inst = liquid_instance(seed, rounds)
    out, counter = io.StringIO(), Counter()
    streamer = ScheduleStreamer(inst, out)
    sim = simulate_cluster(inst, RandomCluster(), seed=seed, observers=[streamer, counter])
    streamer.close()
    data = json.loads(out.getvalue())
    assert data["format"] == "optsched/schedule@2"
    streamed = schedule_from_dict(data)
    assert sorted_tasks(streamed) == sorted_tasks(sim.schedule)
    report = check(inst, streamed)
    assert report.feasible, report.violations[:3]
    assert report.metrics["oom_failures"] == sim.metrics["oom_failures"] == counter.calls["fail"]
    attempts = {(t.job, t.round, t.start) for t in sim.schedule.tasks}
    assert counter.calls["train"] + counter.calls["fail"] == len(attempts)
    assert counter.calls["task"] == len(sim.schedule.tasks)
    assert counter.calls["done"] == inst.n_jobs
    span = sim.metrics["makespan"]
    assert sum(sim.metrics["utilisation"].values()) * span == pytest.approx(counter.held)


def test_liquid_streams_its_schedule_through_simulate(tmp_path):
    """``--no-record --out`` works for the cluster model too: the file holds the recorded
    schedule's tasks, checker-clean."""
    inst = liquid_instance(3, error=0.0)
    params = {"share": "1", "preschedule": "1"}
    kept = simulate(inst, "liquid", params=params)
    target = tmp_path / "s.json"
    streamed = simulate(inst, "liquid", params=params, record=False, stream_to=target)
    sim = streamed.simulation
    assert streamed.extra["checked"] is False and sim.schedule is None
    schedule = load_schedule(target)
    assert sorted_tasks(schedule) == sorted_tasks(kept.schedule)
    assert check(inst, schedule).feasible
    assert streamed.objective == pytest.approx(kept.objective)
    assert streamed.extra["gpu_idle_s"] == pytest.approx(kept.extra["gpu_idle_s"])


def test_one_entry_point_dispatches_on_the_execution_model():
    """run_simulation() runs a cluster policy with the cluster model, as simulate_cluster does,
    and refuses the basic model's options for it."""
    inst = liquid_instance(5)
    policy = Liquid(share=True, preschedule=True)
    a, b = run_simulation(inst, policy, seed=2), simulate_cluster(inst, policy, seed=2)
    assert a.schedule == b.schedule and a.completion.tolist() == b.completion.tolist()
    assert a.metrics == b.metrics
    with pytest.raises(Exception, match="no noise"):
        run_simulation(inst, policy, noise=0.1)


@dataclasses.dataclass
class StartFirst:
    """Starts the first waiting job on the idle GPUs with ``Start`` decisions."""

    share: bool = False
    name: str = "start-first"
    clairvoyant: bool = False
    modes: frozenset = frozenset({"relaxed", "gang"})

    def decide(self, view):
        idle = list(view.idle)
        for job in list(view.waiting):
            k = job.waiting if view.mode == "relaxed" else job.tasks_per_round
            if len(idle) < k:
                break
            if view.mode == "relaxed":
                for _ in range(k):
                    yield Start(job.index, idle.pop(), self.share)
            else:
                yield Start(job.index, tuple(idle.pop() for _ in range(k)), self.share)


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_start_decisions_in_the_basic_model(mode):
    inst = dataclasses.replace(load_instance(TOY), mode=mode)
    sim = run_simulation(inst, StartFirst())
    assert check(inst, sim.schedule).feasible
    with pytest.raises(PolicyError, match="does not share"):
        run_simulation(inst, StartFirst(share=True))


def test_cluster_decisions_may_leave_share_out():
    """A cluster policy's (job, gpus) decision means share=False."""

    class TwoTuples(RandomCluster):
        def decide(self, view):
            return [d[:2] for d in super().decide(view) if not d[2]]

    inst = liquid_instance(7, error=0.0)
    sim = simulate_cluster(inst, TwoTuples(), seed=1)
    assert check(inst, sim.schedule).feasible


def test_a_policy_that_only_waits_is_stalled_in_both_models():
    """Ticks or self-set wake-ups with nothing in flight and nothing started: after
    STALL_INSTANTS instants, a PolicyError, not an endless loop."""

    @dataclasses.dataclass
    class Never:
        name: str = "never"
        clairvoyant: bool = False
        modes: frozenset = frozenset({"relaxed", "gang"})
        tick: float | None = None
        event_driven: bool = True

        def decide(self, view):
            if hasattr(view, "wake"):
                view.wake(view.time + 1.0)
            return []

    with pytest.raises(PolicyError, match=f"stalled.*{STALL_INSTANTS} instants"):
        run_simulation(load_instance(TOY), Never(), tick=1.0)
    with pytest.raises(PolicyError, match=f"stalled.*{STALL_INSTANTS} instants"):
        simulate_cluster(liquid_instance(1), Never())


def test_metrics_observer_is_the_one_place_for_metrics():
    """Both models report their metrics through MetricsObserver: the basic one's keys, the
    cluster one's with its phases; the fairness metrics only where no schedule is recorded
    (else the checker computes them from it)."""
    basic = run_simulation(load_instance(TOY), StartFirst(), record=False)
    cluster = simulate_cluster(liquid_instance(2), RandomCluster(), seed=2, record=False)
    inst = load_instance(TOY)
    plain = MetricsObserver(inst).metrics().keys()  # no job done: no fairness yet
    assert list(basic.metrics) == [*plain, *FAIRNESS_KEYS]
    recorded = run_simulation(load_instance(TOY), StartFirst())
    assert list(recorded.metrics) == list(plain)
    phases = PhaseMetricsObserver(inst).metrics().keys()
    tail = ("p50_jct", "p95_jct", "p99_jct")  # no ρ: the shortest round ignores phases
    assert set(cluster.metrics) == {*phases, *tail}
    assert set(cluster.metrics) - set(plain) - set(tail) == {
        "gpu_idle_s",
        "mean_execution_s",
        "oom_failures",
        "lost_gpu_s",
    }


def test_a_cluster_plug_in_needs_no_execution_attribute():
    """A registered policy with ``tick`` and ``event_driven`` but no ``modes`` (the
    ClusterPolicy protocol) runs under the cluster model, as before ``execution`` existed."""
    from optsched.registry import register

    @register(
        "test-random-cluster",
        kind="simulate",
        modes=("gang",),
        replace=True,
        description="random cluster policy (tests only)",
    )
    def _make(options, seed):
        return RandomCluster()

    inst = liquid_instance(4)
    result = simulate(inst, "test-random-cluster", seed=4)
    sim = result.simulation
    assert result.extra["checked"] and check(inst, sim.schedule).feasible
    assert "oom_failures" in sim.metrics


@pytest.mark.parametrize("bad", [7, (0,), (0, 1, 2, 3), (0, "x"), (0, (1, "y"))])
def test_malformed_decisions_are_policy_errors(bad):
    """Whatever a plug-in returns, a malformed decision names the policy."""

    @dataclasses.dataclass
    class Bad:
        name: str = "bad"
        clairvoyant: bool = False
        modes: frozenset = frozenset({"relaxed", "gang"})
        tick: float | None = None
        event_driven: bool = True
        execution: str = "basic"

        def decide(self, view):
            return [bad]

    for mode in ("relaxed", "gang"):
        inst = dataclasses.replace(load_instance(TOY), mode=mode)
        with pytest.raises(PolicyError, match="'bad'"):
            run_simulation(inst, Bad())
    with pytest.raises(PolicyError, match="'bad'"):
        run_simulation(liquid_instance(1), Bad(execution="cluster"))


def test_a_policy_states_only_what_it_needs():
    """A policy with just ``name`` and ``decide`` runs in both models: the attributes it
    leaves out take their defaults (every mode, not clairvoyant, no tick, event-driven)."""

    class Minimal:
        name = "minimal"

        def decide(self, view):
            return StartFirst().decide(view)

    for mode in ("relaxed", "gang"):
        inst = dataclasses.replace(load_instance(TOY), mode=mode)
        assert check(inst, run_simulation(inst, Minimal()).schedule).feasible

    class MinimalCluster:
        name = "minimal-cluster"
        execution = "cluster"

        def decide(self, view):
            return RandomCluster().decide(view)

    inst = liquid_instance(3, error=0.0)
    assert check(inst, run_simulation(inst, MinimalCluster(), seed=3).schedule).feasible
