"""Liquid's cluster model: instance@2/schedule@2, the checker's cluster rules, the cluster
simulator and the liquid policy (sharing, pre-scheduling, heartbeats, batch placement)."""

from __future__ import annotations

import dataclasses
import itertools
import json
from importlib import resources

import jsonschema
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import GPU, ClusterProfile, Instance, Job, check
from optsched.cluster_model import ClusterSpec, placement_pattern
from optsched.errors import InputError
from optsched.generate import GeneratorSpec, LiquidSpec, generate, generate_liquid
from optsched.io import instance_from_dict, instance_to_dict, schedule_from_dict
from optsched.online.baselines import FIFO
from optsched.online.cluster import simulate_cluster
from optsched.online.liquid import Liquid
from optsched.online.run import simulate
from optsched.online.simulator import PolicyError, run_simulation
from optsched.placement.durations import DURATIONS
from optsched.schedule import Schedule, Task
from optsched.topology import tree_topology


def schema(name):
    path = resources.files("optsched").joinpath("data", "schemas", f"{name}.schema.json")
    return json.loads(path.read_text())


JOB_FIELDS = {f.name for f in dataclasses.fields(Job)}


def cluster_job(job_id, **kw):
    """A Job; the keywords that are not Job fields make its ClusterProfile."""
    own = {k: v for k, v in kw.items() if k in JOB_FIELDS}
    profile = ClusterProfile(**{k: v for k, v in kw.items() if k not in JOB_FIELDS})
    return Job(job_id, cluster=profile, **own)


def single(name, work=100.0, **kw):
    """A one-task T4 job (cluster fields as in :func:`cluster_job`)."""
    return cluster_job(name, compute={"T4": work}, **kw)


def reprofile(job, **changes):
    """The job with these fields of its ClusterProfile changed."""
    return dataclasses.replace(job, cluster=dataclasses.replace(job.profile, **changes))


def one_gpu(*jobs, share_cap=None, memory=None):
    return Instance(
        "c",
        jobs,
        (GPU("g", "T4", "h", memory),),
        mode="gang",
        cluster=ClusterSpec(share_cap=share_cap),
    )


def kinds(inst, tasks):
    return check(inst, Schedule(inst.name, tasks, "gang")).kinds()


# -- formats -----------------------------------------------------------------------------------


def test_placement_patterns():
    roles = ("ps", "worker", "worker")
    assert placement_pattern(roles, ("a", "a", "a")) == "pww"
    assert placement_pattern(roles, ("a", "a", "b")) == "pw:w"
    assert placement_pattern(roles, ("b", "a", "b")) == "pw:w"
    assert placement_pattern(roles, ("a", "b", "b")) == "p:ww"
    assert placement_pattern(roles, ("a", "b", "c")) == "p:w:w"
    assert placement_pattern(("worker",), ("x",)) == "w"


def test_instance_v2_round_trips_and_matches_its_schema():
    inst = generate_liquid(LiquidSpec(hosts=3, jobs=6, distributed=0.5, interarrival=10), 4)
    data = instance_to_dict(inst)
    assert data["format"] == "optsched/instance@2" and inst.needs_cluster_model
    jsonschema.validate(data, schema("instance-v2"))
    assert instance_from_dict(json.loads(json.dumps(data))) == inst
    plain = generate(GeneratorSpec(jobs=3, gpus=2), 0)
    assert instance_to_dict(plain)["format"] == "optsched/instance@1"
    # every @1 file is an @2 file; @2 keys are unknown to @1
    v1 = instance_to_dict(plain)
    assert instance_from_dict({**v1, "format": "optsched/instance@2"}) == plain
    bad = json.loads(json.dumps(v1))
    bad["jobs"][0]["launch"] = 5
    with pytest.raises(InputError, match="unknown key 'launch'"):
        instance_from_dict(bad)


def test_cluster_fields_are_validated():
    with pytest.raises(InputError, match="util"):
        single("a", util=1.5)
    with pytest.raises(InputError, match="roles"):
        Job("a", tasks_per_round=2, compute={"T4": 1}, cluster=ClusterProfile(roles=("ps",)))
    with pytest.raises(InputError, match="gang mode"):
        Instance("c", (single("a", launch=1),), (GPU("g", "T4"),))
    with pytest.raises(InputError, match="host"):
        Instance("c", (single("a", placement_factor={"w": 2}),), (GPU("g", "T4"),), mode="gang")
    with pytest.raises(InputError, match="share_cap"):
        one_gpu(single("a"), share_cap=0.5)


def test_schedule_v2_round_trip():
    sched = Schedule("c", [Task("a", 0, 0, "g", 0.0, 30.0)], "gang")
    data = sched.to_dict()
    assert data["format"] == "optsched/schedule@2"
    jsonschema.validate(data, schema("schedule-v2"))
    assert schedule_from_dict(data) == sched
    with pytest.raises(InputError, match="train_start"):
        schedule_from_dict({**data, "format": "optsched/schedule@1"})


def test_other_methods_refuse_cluster_instances():
    inst = one_gpu(single("a", launch=5))
    with pytest.raises(InputError, match="cluster policy"):
        run_simulation(inst, FIFO())
    from optsched.solve import solve

    with pytest.raises(InputError, match="cluster policy"):
        solve(inst, "ect")


# -- the checker's cluster rules -----------------------------------------------------------------


def test_phases_and_pre_scheduling_by_hand():
    inst = one_gpu(single("a", launch=30, save=10), single("b", launch=30, save=10))
    # a: launch [0,30), train [30,130), save [130,140); b pre-scheduled at 100, trains at 130
    ok = [Task("a", 0, 0, "g", 0.0), Task("b", 0, 0, "g", 100.0, 130.0)]
    report = check(inst, Schedule("c", ok, "gang"))
    assert report.feasible and report.completion == {"a": 140.0, "b": 240.0}
    assert kinds(inst, [Task("a", 0, 0, "g", 0.0), Task("b", 0, 0, "g", 80.0)]) == {"overlap"}
    assert kinds(inst, [Task("a", 0, 0, "g", 0.0, 20.0), Task("b", 0, 0, "g", 200.0)]) == {
        "launch"
    }


def test_sharing_slows_by_summed_utilisation():
    a, b = single("a", util=0.6), single("b", util=0.6)
    inst = one_gpu(a, b, share_cap=1.3)
    report = check(
        inst, Schedule("c", [Task("a", 0, 0, "g", 0.0), Task("b", 0, 0, "g", 0.0)], "gang")
    )
    assert report.feasible and report.completion == pytest.approx({"a": 120.0, "b": 120.0})
    # b joins at 50: a ran 50 alone, then both at 1/1.2 → a ends at 50 + 60 = 110, b alone
    # from 110 having done 50 → ends at 160
    report = check(
        inst, Schedule("c", [Task("a", 0, 0, "g", 0.0), Task("b", 0, 0, "g", 50.0)], "gang")
    )
    assert report.completion == pytest.approx({"a": 110.0, "b": 160.0})
    heavy = one_gpu(single("a", util=0.8), single("b", util=0.8), share_cap=1.3)
    assert kinds(heavy, [Task("a", 0, 0, "g", 0.0), Task("b", 0, 0, "g", 0.0)]) == {"share-cap"}


def test_memory_and_gang_sharing_rules():
    inst = one_gpu(
        single("a", util=0.5, gpu_memory=6000),
        single("b", util=0.5, gpu_memory=6000),
        share_cap=1.3,
        memory=10000,
    )
    assert kinds(inst, [Task("a", 0, 0, "g", 0.0), Task("b", 0, 0, "g", 0.0)]) == {"gpu-memory"}
    gpus = (GPU("g0", "T4", "h"), GPU("g1", "T4", "h"))
    two = Instance(
        "c",
        (
            Job("p", tasks_per_round=2, compute={"T4": 50}, cluster=ClusterProfile(util=0.5)),
            single("s", util=0.5),
        ),
        gpus,
        mode="gang",
        cluster=ClusterSpec(share_cap=1.3),
    )
    tasks = [Task("p", 0, 0, "g0", 0.0), Task("p", 0, 1, "g1", 0.0), Task("s", 0, 0, "g0", 0.0)]
    assert kinds(two, tasks) == {"share-gang"}


def test_placement_factors_reproduce_the_duration_table():
    """A 1-PS + 2-worker VGG-16 job takes the §2.7 table's time in every mode."""
    table = DURATIONS["vgg16"]
    graph = tree_topology([["T4"]] * 3)
    phases = 30.0 + 10.0
    profile = ClusterProfile(
        launch=30,
        save=10,
        roles=("ps", "worker", "worker"),
        placement_factor={
            m: (table[m] - phases) / (table["pww"] - phases)
            for m in ("pww", "pw:w", "p:ww", "p:w:w")
        },
    )
    job = Job("v", tasks_per_round=3, compute={"T4": table["pww"] - phases}, cluster=profile)
    inst = Instance("v", (job,), topology=graph, mode="gang")
    gpus = [g.id for g in inst.gpus]
    for hosts, mode in (((0, 1, 1), "p:ww"), ((0, 1, 2), "p:w:w")):
        tasks = [Task("v", 0, k, gpus[h], 0.0) for k, h in enumerate(hosts)]
        assert check(inst, Schedule("v", tasks, "gang")).completion["v"] == pytest.approx(
            table[mode]
        )


@given(st.integers(0, 10_000), st.floats(0, 3))
def test_cluster_rules_reduce_to_gang_mode(seed, shift):
    """With cluster fields that change nothing, the cluster checker agrees with the gang
    checker on FIFO's schedules and on perturbed ones."""
    inst = generate(GeneratorSpec(jobs=4, gpus=3, mode="gang"), seed)
    cluster = Instance(
        inst.name,
        inst.jobs,
        tuple(dataclasses.replace(g, memory=1.0) for g in inst.gpus),
        mode="gang",
    )
    assert cluster.needs_cluster_model
    sched = run_simulation(inst, FIFO()).schedule
    moved = Schedule(
        sched.instance,
        [
            dataclasses.replace(t, start=t.start - shift) if t.job == sched.tasks[-1].job else t
            for t in sched.tasks
        ],
        "gang",
    )
    for s in (sched, moved):
        plain, rich = check(inst, s), check(cluster, s)
        assert plain.feasible == rich.feasible
        assert plain.kinds() == rich.kinds()
        if plain.objective is not None:
            assert rich.objective == pytest.approx(plain.objective)


# -- the cluster simulator and the liquid policy ------------------------------------------------


def test_sharing_and_pre_scheduling_decisions():
    a, b = single("a", util=0.5, launch=30, save=10), single("b", util=0.5, launch=30, save=10)
    inst = Instance(
        "c",
        (a, b),
        topology=tree_topology([["T4"]]),
        mode="gang",
        cluster=ClusterSpec(share_cap=1.3),
    )
    alone = simulate_cluster(inst, Liquid())
    assert alone.completion.tolist() == [140.0, 280.0]  # b waits for a to release the GPU
    shared = simulate_cluster(inst, Liquid(share=True))
    assert shared.completion.tolist() == [140.0, 140.0]  # both train together (U = 1)
    pre = simulate_cluster(inst, Liquid(preschedule=True))
    # b is pre-scheduled once a's training end (130) is within its launch + 15 s, at t=85,
    # and trains at 130
    starts = {t.job: (t.start, t.train_start) for t in pre.schedule.tasks}
    assert starts["b"] == (85.0, 130.0) and pre.completion.tolist() == [140.0, 240.0]
    for sim in (alone, shared, pre):
        assert check(inst, sim.schedule).completion == pytest.approx(
            dict(zip("ab", sim.completion, strict=True))
        )


def test_heartbeat_delays_freed_gpus_to_the_next_report():
    inst = Instance(
        "c",
        (single("a", work=12), single("b", work=12)),
        topology=tree_topology([["T4"]]),
        mode="gang",
    )
    assert simulate_cluster(inst, Liquid()).completion.tolist() == [12.0, 24.0]
    assert simulate_cluster(inst, Liquid(heartbeat=5)).completion.tolist() == [12.0, 27.0]


def test_batch_mode_places_at_batch_ticks_only():
    inst = generate_liquid(LiquidSpec(hosts=3, jobs=3, interarrival=7), 1)
    policy = Liquid(placement="gga", batch=5)
    sim = simulate_cluster(inst, policy)
    assert all(t.start % 5 == 0 for t in sim.schedule.tasks)
    assert check(inst, sim.schedule).feasible
    assert simulate_cluster(inst, policy).schedule == sim.schedule  # no state kept


def test_impossible_decisions_raise():
    inst = one_gpu(single("a"), single("b"))

    @dataclasses.dataclass
    class Greedy:
        name: str = "greedy"
        tick: float | None = None
        event_driven: bool = True

        def decide(self, view):
            return [(j.index, (0,), True) for j in view.waiting]

    with pytest.raises(PolicyError, match="share"):
        simulate_cluster(inst, Greedy())


@given(
    seed=st.integers(0, 1000),
    hosts=st.integers(2, 4),
    jobs=st.integers(1, 7),
    distributed=st.sampled_from([0.0, 0.5, 1.0]),
    interarrival=st.sampled_from([0, 40]),
    placement=st.sampled_from(["bestfit", "gga", "random", "spread", "pack"]),
    batch=st.sampled_from([0, 5]),
    share=st.booleans(),
    pre=st.booleans(),
    heartbeat=st.sampled_from([0, 5]),
    cost=st.sampled_from(["paper", "code"]),
    rounds=st.integers(1, 3),
)
def test_liquid_schedules_pass_the_checker(
    seed,
    hosts,
    jobs,
    distributed,
    interarrival,
    placement,
    batch,
    share,
    pre,
    heartbeat,
    cost,
    rounds,
):
    """Every switch combination yields a checked schedule whose completion times the
    checker recomputes independently (jobs of several rounds too)."""
    inst = generate_liquid(
        LiquidSpec(hosts=hosts, jobs=jobs, distributed=distributed, interarrival=interarrival),
        seed,
    )
    inst = dataclasses.replace(
        inst, jobs=tuple(dataclasses.replace(j, rounds=rounds) for j in inst.jobs)
    )
    params = {
        "placement": placement,
        "batch": str(batch),
        "share": str(int(share)),
        "preschedule": str(int(pre)),
        "heartbeat": str(heartbeat),
        "cost": cost,
    }
    result = simulate(inst, "liquid", params=params, seed=seed)
    sim = result.simulation
    report = check(inst, sim.schedule)
    assert report.feasible
    assert [report.completion[j.id] for j in inst.jobs] == pytest.approx(sim.completion)
    assert result.objective == pytest.approx(sim.objective)
    assert np.all(
        sim.completion >= [j.arrival + j.profile.launch + j.profile.save for j in inst.jobs]
    )


def test_cli_gen_simulate_check_round_trip(tmp_path, capsys):
    from optsched.cli import main

    inst, sched = tmp_path / "l.json", tmp_path / "s.json"
    assert (
        main(
            [
                "gen",
                "--family",
                "liquid",
                "--seed",
                "2",
                "--hosts",
                "3",
                "--jobs",
                "5",
                "--distributed",
                "0.4",
                "--interarrival",
                "30",
                "--mix",
                "vgg16:1,resnet50:1",
                "--out",
                str(inst),
            ]
        )
        == 0
    )
    jsonschema.validate(json.loads(inst.read_text()), schema("instance-v2"))
    capsys.readouterr()
    assert (
        main(
            [
                "simulate",
                str(inst),
                "--policy",
                "liquid",
                "--param",
                "share=1",
                "--param",
                "preschedule=1",
                "--out",
                str(sched),
                "--json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    jsonschema.validate(result, schema("result"))
    jsonschema.validate(json.loads(sched.read_text()), schema("schedule-v2"))
    assert main(["check", str(inst), str(sched), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["objective"] == pytest.approx(result["objective"])
    assert main(["gen", "--family", "liquid", "--seed", "0", "--mix", "bert:1"]) == 2
    assert main(["simulate", str(inst), "--policy", "liquid", "--param", "share=2"]) == 2


def test_predictions_feed_utilisation_memory_and_bandwidth():
    pytest.importorskip("sklearn")
    inst = generate_liquid(LiquidSpec(jobs=6, distributed=0.5, predict_from=100), 3)
    plain = generate_liquid(LiquidSpec(jobs=6, distributed=0.5), 3)
    assert [j.profile.model for j in inst.jobs] == [j.profile.model for j in plain.jobs]
    assert [j.meta for j in inst.jobs] == [j.meta for j in plain.jobs]
    for p in (job.profile for job in inst.jobs):
        assert 0.1 <= p.util <= 1 and round(p.util * 10, 9) % 1 == 0
        assert p.gpu_memory > 0 and p.gpu_memory % 1024 == 0
        assert p.bandwidth >= 1
    assert [j.profile.util for j in inst.jobs] != [j.profile.util for j in plain.jobs]
    result = simulate(inst, "liquid", params={"share": "1", "cost": "code"})
    assert result.objective is not None


def test_training_starts_on_a_plain_instance_use_the_cluster_rules():
    inst = Instance("p", (single("a"), single("b")), (GPU("g", "T4"),), mode="gang")
    late = [Task("a", 0, 0, "g", 0.0, 50.0), Task("b", 0, 0, "g", 120.0)]
    report = check(inst, Schedule("p", late, "gang"))
    assert report.kinds() == {"overlap"}  # a trains [50, 150), b from 120
    assert report.timeline[("a", 0, 0)] == (0.0, 50.0, 150.0, 150.0)
    relaxed = Instance("p", (single("a"),), (GPU("g", "T4"),))
    assert "instance" in check(relaxed, Schedule("p", [Task("a", 0, 0, "g", 0.0, 1.0)])).kinds()


def test_gantt_chart_of_a_cluster_schedule(tmp_path):
    pytest.importorskip("matplotlib")
    from optsched.plot import plot_gantt

    inst = generate_liquid(LiquidSpec(hosts=2, jobs=6, distributed=0.3, interarrival=20), 1)
    sim = simulate_cluster(inst, Liquid(share=True, preschedule=True))
    plot_gantt(inst, sim.schedule, tmp_path / "g.png")
    assert (tmp_path / "g.png").stat().st_size > 1000


@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(1, 30), st.integers(1, 10)),
        min_size=1,
        max_size=6,
    )
)
def test_processor_sharing_gives_every_task_its_work(tasks):
    """The checker's training ends satisfy the sharing model's definition: integrating
    1 / max(1, U(t)) from each task's start to its end gives its work."""
    from optsched.check import _progress

    items = [(float(a), float(w), u / 10, False) for a, w, u in tasks]
    ends = _progress(items)
    points = sorted({a for a, _, _, _ in items} | set(ends))
    service = [0.0] * len(items)
    for lo, hi in itertools.pairwise(points):
        active = [i for i, (a, _, _, _) in enumerate(items) if a <= lo and ends[i] >= hi]
        rate = 1 / max(1.0, sum(items[i][2] for i in active))
        for i in active:
            service[i] += (hi - lo) * rate
    assert service == pytest.approx([w for _, w, _, _ in items])
