"""Predicted vs actual resource use and link contention in the cluster model
(models/cluster-execution.md): instance@2 ``actual``/``flow_time``/``link_contention``,
schedule@2 ``failed_at``, :func:`with_actuals`, the simulator's interference, out-of-memory
failures and link contention, and the checker's verification of them."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import GPU, Instance, check
from optsched.cluster_model import ClusterSpec, round_flows
from optsched.errors import InputError
from optsched.generate import LiquidSpec, generate_liquid, with_actuals
from optsched.io import instance_from_dict, instance_to_dict, schedule_from_dict
from optsched.online.cluster import simulate_cluster
from optsched.online.run import simulate
from optsched.schedule import Schedule, Task
from optsched.topology import tree_topology
from tests.test_cluster import cluster_job, one_gpu, reprofile, schema, single


def ps2(name, work=100.0, **kw):
    return cluster_job(
        name, tasks_per_round=3, compute={"T4": work}, roles=("ps", "worker", "worker"), **kw
    )


def hosts(n, per_host=2):
    """GPUs ``h{i}/g{k}`` on ``n`` hosts."""
    return tuple(GPU(f"h{i}/g{k}", "T4", f"h{i}") for i in range(n) for k in range(per_host))


@dataclasses.dataclass
class Scripted:
    """A cluster policy that starts job j on the GPUs ``plan[j]`` (sharing them when they
    are held) as soon as it is offered; ``log`` records every offer."""

    plan: dict
    name: str = "scripted"
    tick: float | None = None
    event_driven: bool = True
    log: list = dataclasses.field(default_factory=list)

    def decide(self, view):
        out, taken = [], set()
        for job in view.waiting:
            self.log.append((view.time, job.id))
            gpus = self.plan[job.index]
            held = any(view.holders[g] or g in taken for g in gpus)
            if held and job.tasks_per_round > 1 and any(g in taken for g in gpus):
                continue
            out.append((job.index, gpus, held and job.tasks_per_round == 1))
            taken |= set(gpus)
        return out


def agrees(inst, sim):
    """The checker passes the simulated schedule and recomputes its completion times."""
    report = check(inst, sim.schedule)
    assert report.feasible, report.violations[:3]
    assert [report.completion[j.id] for j in inst.jobs] == pytest.approx(sim.completion)
    assert report.metrics["oom_failures"] == sim.metrics["oom_failures"]
    assert report.metrics["lost_gpu_s"] == pytest.approx(sim.metrics["lost_gpu_s"])
    return report


# -- formats -----------------------------------------------------------------------------------


def test_actuals_flow_time_and_contention_round_trip_and_match_the_schema():
    gpus = hosts(2)
    inst = Instance(
        "a",
        (
            ps2("p", flow_time=12.5, actual={"bandwidth": 3.0}, bandwidth=2.0),
            single("s", util=0.5, gpu_memory=4000, actual={"util": 0.7, "gpu_memory": 5000}),
        ),
        gpus,
        mode="gang",
        cluster=ClusterSpec(share_cap=1.3, link_contention=True),
    )
    data = instance_to_dict(inst)
    assert data["link_contention"] is True
    assert data["jobs"][0]["flow_time"] == 12.5
    assert data["jobs"][1]["actual"] == {"util": 0.7, "gpu_memory": 5000.0}
    jsonschema.validate(data, schema("instance-v2"))
    assert instance_from_dict(json.loads(json.dumps(data))) == inst
    p, s = (job.profile for job in inst.jobs)
    assert (s.actual_util, s.actual_gpu_memory, s.actual_bandwidth) == (0.7, 5000.0, 1.0)
    assert (p.actual_util, p.actual_gpu_memory, p.bandwidth) == (1.0, 0.0, 2.0)
    assert p.actual_flow_time == pytest.approx(12.5 * 3.0 / 2.0)
    with pytest.raises(InputError, match="unknown key"):
        instance_from_dict({**data, "format": "optsched/instance@1"})


def test_actuals_are_validated():
    with pytest.raises(InputError, match="actual"):
        single("a", actual={"util": 1.5})
    with pytest.raises(InputError, match="unknown key 'cpu'"):
        single("a", actual={"cpu": 1})
    with pytest.raises(InputError, match="bandwidth"):
        single("a", actual={"bandwidth": 0})
    with pytest.raises(InputError, match="flow_time"):
        single("a", flow_time=-1)
    # a job must fit its actual memory alone on every GPU it can run on
    with pytest.raises(InputError, match="actual GPU memory"):
        one_gpu(single("a", gpu_memory=4000, actual={"gpu_memory": 12000}), memory=10000)
    with pytest.raises(InputError, match="host"):
        Instance(
            "c",
            (single("a"),),
            (GPU("g", "T4"),),
            mode="gang",
            cluster=ClusterSpec(link_contention=True),
        )
    with pytest.raises(InputError, match="link_contention"):
        Instance(
            "c",
            (single("a"),),
            (GPU("g", "T4", "h"),),
            mode="gang",
            cluster=ClusterSpec(link_contention=1),
        )


def test_failed_attempts_round_trip_and_match_the_schema():
    sched = Schedule(
        "c", [Task("a", 0, 0, "g", 0.0, failed_at=20.0), Task("a", 0, 0, "g", 100.0)], "gang"
    )
    data = sched.to_dict()
    assert data["format"] == "optsched/schedule@2"
    assert data["tasks"][0]["failed_at"] == 20.0 and "failed_at" not in data["tasks"][1]
    jsonschema.validate(data, schema("schedule-v2"))
    assert schedule_from_dict(data) == sched
    with pytest.raises(InputError, match="failed_at"):
        schedule_from_dict({**data, "format": "optsched/schedule@1"})


def test_flows_count_remote_ps_worker_pairs_on_worker_links():
    inst = Instance("f", (ps2("p"),), hosts(3), mode="gang")
    by_host = {"pww": (0, 1, 1), "pw:w": (0, 1, 2), "p:ww": (0, 2, 3), "p:w:w": (0, 2, 4)}
    flows = {m: round_flows(inst, 0, gpus) for m, gpus in by_host.items()}
    assert flows == {"pww": {}, "pw:w": {"h1": 1}, "p:ww": {"h1": 2}, "p:w:w": {"h1": 1, "h2": 1}}


# -- drawing actuals ---------------------------------------------------------------------------


def test_with_actuals_draws_around_predictions_reproducibly():
    inst = generate_liquid(LiquidSpec(jobs=40, distributed=0.3), 2)
    drawn = with_actuals(inst, 0.2, 7)
    assert drawn == with_actuals(inst, 0.2, 7) and drawn != with_actuals(inst, 0.2, 8)
    ratios = []
    for pred, job in zip(
        (j.profile for j in inst.jobs), (j.profile for j in drawn.jobs), strict=True
    ):
        assert set(job.actual) == {"util", "gpu_memory", "bandwidth"}
        assert dataclasses.replace(job, actual=None) == pred
        assert 0.01 <= job.actual_util <= 1
        assert 0 <= job.actual_gpu_memory <= 16384
        assert job.actual_bandwidth > 0
        ratios.append(job.actual_gpu_memory / pred.gpu_memory)
    assert 0.85 < np.mean(ratios) < 1.15 and np.std(ratios) > 0.1
    assert with_actuals(drawn, 0, 1) == inst  # error 0: actual = predicted
    # memory clipped to the GPUs: it always fits alone
    big = with_actuals(inst, 5.0, 1)
    assert max(j.profile.actual_gpu_memory for j in big.jobs) == 16384
    for bad in (-0.1, float("nan"), 11, True):
        with pytest.raises(InputError, match="prediction error"):
            with_actuals(inst, bad, 0)


def test_liquid_generator_flags():
    plain = generate_liquid(LiquidSpec(jobs=6, distributed=0.5), 3)
    data = instance_to_dict(plain)
    assert "link_contention" not in data
    assert all("actual" not in j and "flow_time" not in j for j in data["jobs"])
    noisy = generate_liquid(
        LiquidSpec(jobs=6, distributed=0.5, prediction_error=0.3, link_contention=True), 3
    )
    assert noisy.cluster.link_contention
    assert [(j.profile.util, j.profile.gpu_memory) for j in noisy.jobs] == [
        (j.profile.util, j.profile.gpu_memory) for j in plain.jobs
    ]
    assert all(j.profile.actual is not None for j in noisy.jobs)
    from optsched.placement.durations import contention_durations

    for p in (job.profile for job in noisy.jobs):
        assert p.model is not None
        assert p.flow_time == (contention_durations(p.model)[0] if p.roles else 0.0)
    jsonschema.validate(instance_to_dict(noisy), schema("instance-v2"))
    with pytest.raises(InputError, match="prediction-error"):
        LiquidSpec(prediction_error=-1)
    with pytest.raises(InputError, match="link-contention"):
        LiquidSpec(link_contention="yes")


@pytest.mark.slow  # 9 s: two forests; test_cluster checks the forest-predicted instances
def test_actuals_are_drawn_around_the_forest_predictions():
    pytest.importorskip("sklearn")
    predicted = generate_liquid(LiquidSpec(jobs=6, distributed=0.5, predict_from=100), 3)
    noisy = generate_liquid(
        LiquidSpec(jobs=6, distributed=0.5, predict_from=100, prediction_error=0.2), 3
    )
    assert noisy == with_actuals(predicted, 0.2, 3)
    assert [j.profile.util for j in noisy.jobs] == [j.profile.util for j in predicted.jobs]


def test_cli_generates_actuals_and_contention(tmp_path, capsys):
    from optsched.cli import main

    inst = tmp_path / "l.json"
    assert (
        main(
            [
                "gen",
                "--family",
                "liquid",
                "--seed",
                "2",
                "--jobs",
                "6",
                "--distributed",
                "0.5",
                "--prediction-error",
                "0.3",
                "--link-contention",
                "--out",
                str(inst),
            ]
        )
        == 0
    )
    data = json.loads(inst.read_text())
    jsonschema.validate(data, schema("instance-v2"))
    assert data["link_contention"] and all("actual" in j for j in data["jobs"])
    capsys.readouterr()
    assert main(["simulate", str(inst), "--policy", "liquid", "--param", "share=1", "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert {"oom_failures", "lost_gpu_s"} <= set(metrics)
    assert main(["gen", "--family", "exact", "--seed", "0", "--link-contention"]) == 2


# -- interference by actual utilisation --------------------------------------------------------


def test_actual_utilisation_above_the_prediction_slows_a_shared_gpu():
    """Two 60 %-predicted jobs share a GPU under the 1.3 cap as planned (1.2 → 120 s each);
    they really use 80 %, so both progress at 1/1.6 and end at 160 s."""
    a = single("a", util=0.6, actual={"util": 0.8})
    b = single("b", util=0.6, actual={"util": 0.8})
    inst = one_gpu(a, b, share_cap=1.3)
    sim = simulate_cluster(inst, Scripted({0: (0,), 1: (0,)}))
    assert sim.completion.tolist() == pytest.approx([160.0, 160.0])
    agrees(inst, sim)
    planned = one_gpu(single("a", util=0.6), single("b", util=0.6), share_cap=1.3)
    assert simulate_cluster(
        planned, Scripted({0: (0,), 1: (0,)})
    ).completion.tolist() == pytest.approx([120.0, 120.0])
    # the cap is checked on predictions: 1.6 actual is no share-cap violation
    report = check(inst, sim.schedule)
    assert report.feasible
    # and the liquid policy, which shares on the same predictions, sees the same slowdown
    topo = Instance(
        "c",
        (a, b),
        topology=tree_topology([["T4"]]),
        mode="gang",
        cluster=ClusterSpec(share_cap=1.3),
    )
    result = simulate(topo, "liquid", params={"share": "1"})
    shared = result.simulation
    assert shared.completion.tolist() == pytest.approx([160.0, 160.0])
    assert result.objective == pytest.approx(320.0)


def test_unequal_actual_utilisations_by_hand():
    """a (actual 0.9, 100 s of work) and b (actual 0.5, 150 s) share from 0 at rates 1/1.4:
    a ends at 140, when b has done 100; b finishes alone at 140 + 50 = 190."""
    inst = one_gpu(
        single("a", util=0.6, actual={"util": 0.9}),
        single("b", 150.0, util=0.6, actual={"util": 0.5}),
        share_cap=1.3,
    )
    sim = simulate_cluster(inst, Scripted({0: (0,), 1: (0,)}))
    assert sim.completion.tolist() == pytest.approx([140.0, 190.0])
    agrees(inst, sim)


# -- out of memory -----------------------------------------------------------------------------


def oom_instance(launch_b=20.0):
    a = single("a", util=0.5, gpu_memory=4000, save=10, actual={"gpu_memory": 6000})
    b = single("b", util=0.5, gpu_memory=4000, launch=launch_b, actual={"gpu_memory": 6000})
    return one_gpu(a, b, share_cap=1.3, memory=10000)


def test_a_round_out_of_actual_memory_fails_at_its_training_start_and_is_requeued():
    """a trains [0, 100) and saves [100, 110) holding 6000 MB; b is shared onto the GPU at 0
    (predicted 4000 + 4000 fit), launches for 20 s and at 20 needs 6000 + 6000 > 10000 MB:
    it fails, releasing the GPU, having held it 20 s. Offered again at a's training end
    (100), it is shared again, launches again and trains at 120 (a has left at 110): it
    ends at 220."""
    inst = oom_instance()
    policy = Scripted({0: (0,), 1: (0,)})
    sim = simulate_cluster(inst, policy)
    assert sim.completion.tolist() == pytest.approx([110.0, 220.0])
    assert sim.metrics["oom_failures"] == 1 and sim.metrics["lost_gpu_s"] == 20.0
    failed = [t for t in sim.schedule.tasks if t.failed_at is not None]
    assert failed == [Task("b", 0, 0, "g", 0.0, failed_at=20.0)]
    assert Task("b", 0, 0, "g", 100.0, 120.0) in sim.schedule.tasks
    assert (100.0, "b") in policy.log and (20.0, "b") not in policy.log
    report = agrees(inst, sim)
    assert report.metrics["oom_failures"] == 1 and report.metrics["lost_gpu_s"] == 20.0
    # predictions alone: no failure, b trains at 20 next to a
    exact = one_gpu(*(reprofile(j, actual=None) for j in inst.jobs), share_cap=1.3, memory=10000)
    plain = simulate_cluster(exact, Scripted({0: (0,), 1: (0,)}))
    assert plain.metrics["oom_failures"] == 0 and plain.completion[1] < 220


def test_a_requeued_round_is_not_retried_in_the_instant_it_failed():
    """Without a launch phase b fails at once (0 GPU-seconds lost) at 0 and again at 100
    (a still saves, holding its memory), then is offered at a's release (110) and trains
    alone: the simulation never loops within one instant."""
    inst = oom_instance(launch_b=0.0)
    policy = Scripted({0: (0,), 1: (0,)})
    sim = simulate_cluster(inst, policy)
    assert sim.completion.tolist() == pytest.approx([110.0, 210.0])
    assert sim.metrics["oom_failures"] == 2 and sim.metrics["lost_gpu_s"] == 0.0
    assert [t.failed_at for t in sim.schedule.tasks if t.failed_at is not None] == [0.0, 100.0]
    assert [t for t, j in policy.log if j == "b"] == [0.0, 100.0, 110.0]
    agrees(inst, sim)


def test_multi_gpu_round_fails_when_one_of_its_gpus_overflows():
    gpus = tuple(GPU(f"g{k}", "T4", "h", 10000.0) for k in range(3))
    s = single("s", util=0.5, gpu_memory=5000, actual={"gpu_memory": 7000})
    p = cluster_job(
        "p",
        arrival=1.0,
        tasks_per_round=3,
        compute={"T4": 50},
        gpu_memory=4000,
        launch=10,
        actual={"gpu_memory": 4000},
    )
    inst = Instance("m", (s, p), gpus, mode="gang")
    plan = {0: (0,), 1: (0, 1, 2)}

    # p arrives at 1 and is pre-scheduled onto g0 (s trains there) with g1, g2; it
    # launches [1, 11), then waits for s to stop training (100) and for the predicted
    # memory (5000 + 4000) to fit; s saves nothing, so it has left at 100 and p trains at
    # 100: no failure
    sim = simulate_cluster(inst, Scripted(plan))
    assert sim.metrics["oom_failures"] == 0
    assert sim.completion.tolist() == pytest.approx([100.0, 150.0])
    agrees(inst, sim)
    saving = Instance("m", (reprofile(s, save=30), p), gpus, mode="gang")
    # with s saving [100, 130) holding 7000 actual MB, p's 4000 overflow g0 at 100: p fails
    # (held 3 GPUs × 99 s) and is offered again at the next event (130, s released)
    sim = simulate_cluster(saving, Scripted(plan))
    assert sim.metrics["oom_failures"] == 1 and sim.metrics["lost_gpu_s"] == 297.0
    failed = sorted(t.gpu for t in sim.schedule.tasks if t.failed_at == 100.0)
    assert failed == ["g0", "g1", "g2"]
    assert sim.completion.tolist() == pytest.approx([130.0, 130.0 + 10 + 50])
    agrees(saving, sim)


def test_the_checker_verifies_failed_attempts():
    inst = oom_instance()
    good = [
        Task("a", 0, 0, "g", 0.0),
        Task("b", 0, 0, "g", 0.0, failed_at=20.0),
        Task("b", 0, 0, "g", 100.0, 120.0),
    ]
    report = check(inst, Schedule("c", good, "gang"))
    assert report.feasible and report.completion == pytest.approx({"a": 110.0, "b": 220.0})
    assert report.metrics["utilisation"]["g"] == pytest.approx(1.0)

    def kinds(tasks):
        return check(inst, Schedule("c", tasks, "gang")).kinds()

    # a failure where actual memory fits (a has left at 110)
    assert kinds(
        [good[0], Task("b", 0, 0, "g", 100.0, failed_at=120.0), Task("b", 0, 0, "g", 120.0, 140.0)]
    ) == {"failed-attempt"}
    # training on where it should have failed
    assert kinds([good[0], Task("b", 0, 0, "g", 0.0, 20.0)]) == {"oom"}
    # re-run before the failure
    assert kinds(
        [good[0], Task("b", 0, 0, "g", 0.0, failed_at=20.0), Task("b", 0, 0, "g", 10.0, 120.0)]
    ) == {"failed-attempt"}
    # failing before the launch phase is over
    assert kinds([good[0], Task("b", 0, 0, "g", 0.0, failed_at=10.0), good[2]]) == {"launch"}
    # a failed attempt with a training start
    assert kinds([good[0], Task("b", 0, 0, "g", 0.0, 20.0, failed_at=20.0), good[2]]) == {
        "failed-attempt"
    }
    # a failed attempt alone is no substitute for the round
    assert "missing" in kinds(good[:2])
    # a failed attempt of a multi-GPU round must be whole
    gpus = tuple(GPU(f"g{k}", "T4", "h", 100.0) for k in range(2))
    two = Instance(
        "t",
        (cluster_job("p", tasks_per_round=2, compute={"T4": 5}, gpu_memory=10),),
        gpus,
        mode="gang",
    )
    part = [
        Task("p", 0, 0, "g0", 0.0, failed_at=0.0),
        Task("p", 0, 0, "g0", 1.0),
        Task("p", 0, 1, "g1", 1.0),
    ]
    assert check(two, Schedule("t", part, "gang")).kinds() == {"failed-attempt"}


# -- link contention ---------------------------------------------------------------------------


def contention_instance(on=True, b_flow=20.0, **b_kw):
    a = ps2("a", flow_time=10.0)
    b = ps2("b", flow_time=b_flow, **b_kw)
    return Instance("l", (a, b), hosts(4, 3), mode="gang", cluster=ClusterSpec(link_contention=on))


def on(inst, *names):
    """GPU indices by id."""
    return tuple(inst.gpu_index[n] for n in names)


def test_two_jobs_on_one_worker_link_slow_each_other_by_hand():
    """a: PS on h0, workers on h1 and h2; b: PS on h3, workers on h1 and h2 (both p:w:w, one
    own flow per link). Training together, each busiest link carries 2 flows, 1 more than
    their own: a trains at 100/110, b at 100/120. a ends at 110; b has 110·100/120 done and
    finishes the rest alone: 110 + 100 − 91.67 = 118.33."""
    inst = contention_instance()
    plan = {0: on(inst, "h0/g0", "h1/g0", "h2/g0"), 1: on(inst, "h3/g0", "h1/g1", "h2/g1")}
    sim = simulate_cluster(inst, Scripted(plan))
    assert sim.completion.tolist() == pytest.approx([110.0, 110.0 + 100.0 - 110.0 / 1.2])
    agrees(inst, sim)
    off = contention_instance(on=False)
    assert simulate_cluster(off, Scripted(plan)).completion.tolist() == [100.0, 100.0]
    # workers on different links (a's on h1, b's on h3): nothing changes
    apart = simulate_cluster(
        inst,
        Scripted({0: on(inst, "h0/g0", "h1/g0", "h1/g1"), 1: on(inst, "h0/g1", "h3/g0", "h3/g1")}),
    )
    assert apart.completion.tolist() == [100.0, 100.0]
    agrees(inst, apart)


def test_contention_changes_rates_as_rounds_start_and_stop():
    """b arrives at 50: a alone [0, 50) at rate 1, then both (a 100/110, b 100/120): a ends
    at 50 + 55 = 105; b has 55·100/120 done then and ends at 105 + 100 − 45.83."""
    inst = contention_instance(arrival=50.0)
    sim = simulate_cluster(
        inst,
        Scripted({0: on(inst, "h0/g0", "h1/g0", "h2/g0"), 1: on(inst, "h3/g0", "h1/g1", "h2/g1")}),
    )
    assert sim.completion.tolist() == pytest.approx([105.0, 105.0 + 100.0 - 55.0 / 1.2])
    agrees(inst, sim)


def test_contention_counts_the_busiest_link_and_actual_bandwidth():
    """a p:ww (2 own flows on h1) and b p:w:w with one worker on h1: a's busiest link has 3
    flows, 1 more than its own 2 (+10 s); b's has 3 on h1 against its own 1 (+2 flows ×
    flow_time). b's actual bandwidth twice its prediction doubles its flow time: 2·2·20."""
    inst = contention_instance(b_flow=20.0, actual={"bandwidth": 2.0})
    sim = simulate_cluster(
        inst,
        Scripted({0: on(inst, "h0/g0", "h1/g0", "h1/g1"), 1: on(inst, "h3/g0", "h1/g2", "h2/g0")}),
    )
    # a: rate 100/110 → 110; b: rate 100/180 until 110, then alone
    assert sim.completion.tolist() == pytest.approx([110.0, 110.0 + 100.0 - 110.0 / 1.8])
    agrees(inst, sim)


# -- properties --------------------------------------------------------------------------------


@given(
    seed=st.integers(0, 1000),
    hosts_=st.integers(2, 4),
    jobs=st.integers(2, 8),
    distributed=st.sampled_from([0.0, 0.3, 1.0]),
    interarrival=st.sampled_from([0, 20]),
    error=st.sampled_from([0.0, 0.2, 0.6]),
    memory=st.sampled_from([(2, 8), (5, 10)]),
    share=st.booleans(),
    pre=st.booleans(),
    contention=st.booleans(),
    heartbeat=st.sampled_from([0, 5]),
    placement=st.sampled_from(["bestfit", "random"]),
    rounds=st.integers(1, 3),
)
def test_liquid_with_actuals_and_contention_passes_the_checker(
    seed,
    hosts_,
    jobs,
    distributed,
    interarrival,
    error,
    memory,
    share,
    pre,
    contention,
    heartbeat,
    placement,
    rounds,
):
    """Every switch combination of mispredictions, sharing, pre-scheduling and link
    contention yields a schedule the checker passes, with the simulator's completion times,
    failures and lost work."""
    spec = LiquidSpec(
        hosts=hosts_,
        jobs=jobs,
        distributed=distributed,
        interarrival=interarrival,
        prediction_error=error,
        gpu_memory_gb=memory,
        link_contention=contention,
    )
    inst = generate_liquid(spec, seed)
    inst = dataclasses.replace(
        inst, jobs=tuple(dataclasses.replace(j, rounds=rounds) for j in inst.jobs)
    )
    params = {
        "placement": placement,
        "share": str(int(share)),
        "preschedule": str(int(pre)),
        "heartbeat": str(heartbeat),
    }
    result = simulate(inst, "liquid", params=params, seed=seed)
    sim = result.simulation
    agrees(inst, sim)
    assert result.objective == pytest.approx(sim.objective)
    assert result.metrics["oom_failures"] == sim.metrics["oom_failures"]


@dataclasses.dataclass
class RandomCluster:
    """Starts each offered job on random eligible GPUs: vacant ones, or (single-task jobs)
    a held GPU it shares within the predicted cap or is pre-scheduled onto."""

    name: str = "random-cluster"
    tick: float | None = None
    event_driven: bool = True

    def decide(self, view):
        out, taken = [], set()
        for job in view.waiting:
            eligible = [
                g
                for g in range(len(view.holders))
                if np.isfinite(job.compute[g]) and g not in taken
            ]
            vacant = [g for g in eligible if g in view.vacant]
            if job.tasks_per_round > 1:
                if len(vacant) >= job.tasks_per_round and view.rng.random() < 0.8:
                    gpus = tuple(
                        int(g) for g in view.rng.permutation(vacant)[: job.tasks_per_round]
                    )
                    out.append((job.index, gpus, False))
                    taken |= set(gpus)
                continue
            if not eligible:
                continue
            g = int(view.rng.choice(eligible))
            rounds = view.holders[g]
            if g in view.vacant:
                out.append((job.index, (g,), False))
            elif (
                view.instance.cluster.share_cap is not None
                and rounds
                and all(h.tasks == 1 for h in rounds)
                and job.util + sum(h.job.util for h in rounds) <= view.instance.cluster.share_cap
                and view.rng.random() < 0.7
            ):
                out.append((job.index, (g,), True))
            elif rounds and all(h.training or not np.isnan(h.train_end) for h in rounds):
                out.append((job.index, (g,), False))
            else:
                continue
            taken.add(g)
        if view.waiting:
            view.wake(view.time + 7.0)
        return out


@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(2, 10),
    error=st.sampled_from([0.3, 1.0]),
    contention=st.booleans(),
    launch=st.sampled_from([0.0, 5.0]),
    rounds=st.integers(1, 3),
    distributed=st.sampled_from([0.0, 0.4]),
)
def test_random_sharing_with_actuals_passes_the_checker(
    seed, jobs, error, contention, launch, rounds, distributed
):
    """A policy that shares and pre-schedules at random on small GPUs: many out-of-memory
    failures, every one verified by the checker, same completion times."""
    spec = LiquidSpec(
        hosts=2,
        jobs=jobs,
        distributed=distributed,
        interarrival=5,
        prediction_error=error,
        gpu_memory=12288.0,
        gpu_memory_gb=(3, 6),
        launch=launch,
        save=5.0,
        link_contention=contention,
        share_cap=2.0 if seed % 2 else 1.3,
    )
    inst = generate_liquid(spec, seed)
    inst = dataclasses.replace(
        inst, jobs=tuple(dataclasses.replace(j, rounds=rounds) for j in inst.jobs)
    )
    sim = simulate_cluster(inst, RandomCluster(), seed=seed)
    agrees(inst, sim)


def test_random_sharing_does_run_out_of_memory():
    """The property above exercises failures: over a few seeds, some rounds fail."""
    spec = LiquidSpec(
        hosts=2,
        jobs=10,
        distributed=0.0,
        interarrival=5,
        prediction_error=1.0,
        gpu_memory=12288.0,
        gpu_memory_gb=(3, 6),
        launch=5.0,
        save=5.0,
        share_cap=2.0,
    )
    failures = 0
    for seed in range(5):
        inst = generate_liquid(spec, seed)
        sim = simulate_cluster(inst, RandomCluster(), seed=seed)
        agrees(inst, sim)
        failures += sim.metrics["oom_failures"]
    assert failures > 0


@given(seed=st.integers(0, 1000), share=st.booleans(), pre=st.booleans())
def test_explicit_actuals_equal_to_predictions_change_nothing(seed, share, pre):
    """actual = predicted (given explicitly) and contention with no flow time simulate
    exactly as the plain instance."""
    inst = generate_liquid(LiquidSpec(hosts=3, jobs=6, distributed=0.5, interarrival=20), seed)
    same = dataclasses.replace(
        inst,
        jobs=tuple(
            reprofile(j, actual={"util": j.profile.util, "gpu_memory": j.profile.gpu_memory})
            for j in inst.jobs
        ),
        cluster=ClusterSpec(link_contention=True),
    )
    params = {"share": str(int(share)), "preschedule": str(int(pre))}
    a = simulate(inst, "liquid", params=params, seed=seed).simulation
    b = simulate(same, "liquid", params=params, seed=seed).simulation
    assert a.completion.tolist() == b.completion.tolist()
    assert [dataclasses.astuple(t) for t in a.schedule.tasks] == [
        dataclasses.astuple(t) for t in b.schedule.tasks
    ]


def test_holds_ending_at_a_training_start_are_released_first():
    """a and b (0.5 + 0.5) share the GPU and both end training at 100 (rate 1), saving
    nothing; c, shared at 80 with a 20 s launch, starts training at 100 needing 8000 actual
    MB: a and b release their 3000 + 3000 at that instant, so c fits and trains."""
    a = single("a", util=0.5, gpu_memory=3000)
    b = single("b", util=0.5, gpu_memory=3000)
    c = single(
        "c", arrival=80.0, util=0.5, gpu_memory=3000, launch=20, actual={"gpu_memory": 8000}
    )
    inst = one_gpu(a, b, c, share_cap=2.0, memory=10000)
    sim = simulate_cluster(inst, Scripted({0: (0,), 1: (0,), 2: (0,)}))
    assert sim.metrics["oom_failures"] == 0
    assert sim.completion.tolist() == pytest.approx([100.0, 100.0, 200.0])
    agrees(inst, sim)
    # a failure recorded at that instant is accepted too (simultaneous events)
    tasks = [t for t in sim.schedule.tasks if t.job != "c"] + [
        Task("c", 0, 0, "g", 80.0, failed_at=100.0),
        Task("c", 0, 0, "g", 100.0),
    ]
    assert check(inst, Schedule("c", tasks, "gang")).feasible


def test_gantt_chart_draws_failed_attempts(tmp_path):
    pytest.importorskip("matplotlib")
    from optsched.plot import plot_gantt

    inst = oom_instance()
    sim = simulate_cluster(inst, Scripted({0: (0,), 1: (0,)}))
    assert sim.metrics["oom_failures"] == 1
    plot_gantt(inst, sim.schedule, tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 1000
