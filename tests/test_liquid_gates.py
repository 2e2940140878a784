"""Liquid's sharing and pre-scheduling gates (paper vs reference code) and the predicted
training end pre-scheduling plans on."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from optsched import Instance, check
from optsched.cluster_model import ClusterSpec
from optsched.errors import InputError
from optsched.generate import LiquidSpec, generate_liquid
from optsched.online.cluster import simulate_cluster
from optsched.online.liquid import Liquid
from optsched.online.run import simulate
from optsched.topology import tree_topology
from tests.test_cluster import single


def cluster(jobs, n=1, memory=(), share_cap=None):
    """One host of ``n`` T4 GPUs (``memory``: the GPUs' memories, MB; default unlimited)."""
    graph = tree_topology([["T4"] * n])
    for k, mb in enumerate(memory):
        graph.nodes[f"h0/g{k}"]["gpu_memory"] = mb
    return Instance(
        "c", tuple(jobs), topology=graph, mode="gang", cluster=ClusterSpec(share_cap=share_cap)
    )


def starts(sim):
    """Job → (GPU index, start, training start) of its first task."""
    return {t.job: (int(t.gpu[-1]), t.start, t.train_start) for t in sim.schedule.tasks}


def checked(inst, sim):
    report = check(inst, sim.schedule)
    assert report.feasible, report.violations
    assert [report.completion[j.id] for j in inst.jobs] == pytest.approx(sim.completion)
    return sim


def test_code_gates_share_first_once_the_load_ratio_is_reached():
    a, b = single("a", util=0.5), single("b", util=0.5, arrival=10.0)
    inst = cluster((a, b), 2, share_cap=1.3)
    # paper: sharing only serves jobs no vacant GPU can take, so b takes the vacant g1
    assert starts(checked(inst, simulate_cluster(inst, Liquid(share=True))))["b"][0] == 1
    # code: load ratio 1/2 at b's arrival; sharing is tried first from ratio 0.5 on ...
    code = Liquid(share=True, gates="code", share_ratio=0.5)
    assert starts(checked(inst, simulate_cluster(inst, code)))["b"][0] == 0
    # ... but not below the released experiment's 0.75
    code = Liquid(share=True, gates="code")
    assert starts(checked(inst, simulate_cluster(inst, code)))["b"][0] == 1


def test_code_gates_compare_the_cap_strictly():
    a, b = single("a", util=0.8), single("b", util=0.5, arrival=10.0)
    inst = cluster((a, b), share_cap=1.3)
    paper = checked(inst, simulate_cluster(inst, Liquid(share=True)))
    assert starts(paper)["b"] == (0, 10.0, 10.0)  # 0.8 + 0.5 = 1.3 is within the cap
    code = checked(inst, simulate_cluster(inst, Liquid(share=True, gates="code")))
    assert starts(code)["b"][1] == 100.0  # 1.3 is not below the cap: b waits for a


def test_code_gates_pre_schedule_onto_a_saving_gpu():
    a = single("a", launch=30.0, save=50.0)  # trains [30, 130), saves [130, 180)
    b = single("b", launch=30.0, arrival=131.0)
    inst = cluster((a, b))
    paper = checked(inst, simulate_cluster(inst, Liquid(preschedule=True)))
    assert starts(paper)["b"][1] == 180.0  # a no longer trains: b waits for the release
    code = checked(inst, simulate_cluster(inst, Liquid(preschedule=True, gates="code")))
    assert starts(code)["b"] == (0, 131.0, 161.0)
    # a threshold of 1 is reached once every GPU is held
    gated = Liquid(preschedule=True, gates="code", preschedule_ratio=1.0)
    assert starts(simulate_cluster(inst, gated))["b"][1] == 131.0


def test_code_gates_pre_schedule_only_above_the_load_ratio():
    a = single("a", launch=30.0, save=10.0)
    b = single("b", launch=30.0, arrival=1.0, gpu_memory=2.0)
    # two GPUs; g1 cannot run b (memory), so b is pre-scheduled onto g0 at ratio 1/2
    inst = cluster((a, b), 2, memory=(4.0, 1.0))
    assert (
        starts(
            checked(
                inst,
                simulate_cluster(
                    inst, Liquid(preschedule=True, gates="code", preschedule_ratio=0.5)
                ),
            )
        )["b"][1]
        == 85.0
    )
    late = checked(
        inst,
        simulate_cluster(inst, Liquid(preschedule=True, gates="code", preschedule_ratio=0.75)),
    )
    assert starts(late)["b"][1] == 140.0  # not pre-scheduled: b starts at a's release


def test_predicted_end_moves_the_pre_scheduling_moment():
    a, b = single("a", launch=30.0, save=10.0), single("b", launch=30.0, save=10.0)
    inst = cluster((a, b))
    oracle = starts(simulate_cluster(inst, Liquid(preschedule=True)))["b"]
    assert oracle == (0, 85.0, 130.0)  # true end 130, lead 30 + 15
    for error in (0.1, 0.3):
        eps = np.random.default_rng([zlib.crc32(b"c"), 0]).normal(0.0, error)
        predicted = 130.0 + eps * 100.0  # a's training time on g0 is 100 s
        sim = checked(inst, simulate_cluster(inst, Liquid(preschedule=True, end_error=error)))
        start = starts(sim)["b"][1]
        if predicted - 45.0 < 130.0:  # pre-scheduled while a still trains
            assert start == pytest.approx(max(0.0, predicted - 45.0))
        else:
            assert start == 130.0 + 10.0  # a finished training first: b waits for the release
    again = simulate_cluster(inst, Liquid(preschedule=True, end_error=0.3))
    assert again.schedule == sim.schedule  # drawn once per (instance, job): reproducible


@pytest.mark.parametrize(
    "params, message",
    [
        ({"gates": "yes"}, "gates"),
        ({"share_ratio": "1.5"}, "share_ratio"),
        ({"preschedule_ratio": "-1"}, "preschedule_ratio"),
        ({"end_error": "nan"}, "end_error"),
        ({"end_error": "11"}, "end_error"),
    ],
)
def test_bad_gate_params_are_refused(params, message):
    inst = cluster((single("a"),))
    with pytest.raises(InputError, match=message):
        simulate(inst, "liquid", params=params)


@given(
    seed=st.integers(0, 1000),
    hosts=st.integers(2, 3),
    jobs=st.integers(1, 7),
    distributed=st.sampled_from([0.0, 0.5]),
    interarrival=st.sampled_from([0, 20]),
    gates=st.sampled_from(["paper", "code"]),
    share=st.booleans(),
    pre=st.booleans(),
    share_ratio=st.sampled_from(["0", "0.5", "0.75"]),
    preschedule_ratio=st.sampled_from(["0", "0.5", "1"]),
    end_error=st.sampled_from(["0", "0.1", "0.4"]),
    heartbeat=st.sampled_from([0, 5]),
    placement=st.sampled_from(
        [
            {},
            {"line18": "1"},
            {"placement": "gga", "batch": "5"},
            {"placement": "gga", "repair": "firstfit", "line18": "1"},
            {"placement": "gga", "fitness": "cost", "cost": "code"},
        ]
    ),
    error=st.sampled_from([0.0, 0.3]),
    contention=st.booleans(),
)
def test_gated_liquid_schedules_pass_the_checker(
    seed,
    hosts,
    jobs,
    distributed,
    interarrival,
    gates,
    share,
    pre,
    share_ratio,
    preschedule_ratio,
    end_error,
    heartbeat,
    placement,
    error,
    contention,
):
    """Every gate, placement variant and prediction-error setting yields a checked schedule
    whose completion times the checker recomputes independently."""
    # line 18 puts each container of a 1 PS + 2 worker job on a host of its own
    assume(hosts >= 3 or "line18" not in placement or not distributed)
    inst = generate_liquid(
        LiquidSpec(
            hosts=hosts,
            jobs=jobs,
            distributed=distributed,
            interarrival=interarrival,
            prediction_error=error,
            link_contention=contention,
        ),
        seed,
    )
    params = {
        "gates": gates,
        "share": str(int(share)),
        "preschedule": str(int(pre)),
        "end_error": end_error,
        "heartbeat": str(heartbeat),
        **placement,
    }
    if gates == "code":  # the ratios are the code gates' thresholds
        params.update(share_ratio=share_ratio, preschedule_ratio=preschedule_ratio)
    result = simulate(inst, "liquid", params=params, seed=seed)
    sim = result.simulation
    report = check(inst, sim.schedule)
    assert report.feasible
    assert [report.completion[j.id] for j in inst.jobs] == pytest.approx(sim.completion)
    assert result.objective == pytest.approx(sim.objective)


def test_placement_parameters_are_passed_through():
    """One 1 PS + 2 worker job alone on 3 hosts × 4 GPUs: best-fit in the code form keeps it
    on one host (pww); with Alg. 1 line 18 each container takes a host of its own (p:w:w)."""
    inst = generate_liquid(
        LiquidSpec(
            jobs=1, hosts=3, gpus_per_host=4, gpu_type="K80", gpu_memory=12288, mix=(("vgg16", 1),)
        ),
        0,
    )

    def hosts(params):
        sim = simulate(inst, "liquid", params=params).simulation
        checked(inst, sim)
        return {t.gpu.split("/")[0] for t in sim.schedule.tasks}

    assert len(hosts({"cost": "code"})) == 1
    assert len(hosts({"cost": "code", "line18": "1"})) == 3
    with pytest.raises(InputError, match="repair is not a parameter of placement=bestfit"):
        simulate(inst, "liquid", params={"repair": "jobfit"})


def test_results_say_which_variant_ran():
    inst = generate_liquid(LiquidSpec(jobs=2, hosts=3), 0)
    result = simulate(inst, "liquid", params={"share": "1"})
    settings = result.extra["settings"]
    assert settings["place_params"] == {"cost": "paper", "line18": "0"}
    assert settings["gates"] == "paper" and settings["share"] is True
    result = simulate(inst, "liquid", params={"placement": "spread", "gates": "code"})
    assert result.extra["settings"]["place_params"] == {"cost": "paper"}
    assert result.extra["settings"]["gates"] == "code"


def test_a_job_that_ran_out_of_memory_is_not_shared_again():
    """b is shared next to a on predictions (6000 + 4000 MB of 10000) but really needs
    6000 MB: it fails at its training start, and from then on waits for a vacant GPU instead
    of failing again at every heartbeat."""
    a = single("a", util=0.4, gpu_memory=6000.0)
    b = single("b", util=0.4, gpu_memory=4000.0, arrival=1.0, actual={"gpu_memory": 6000.0})
    inst = cluster((a, b), memory=(10000.0,), share_cap=1.3)
    sim = checked(inst, simulate_cluster(inst, Liquid(share=True, heartbeat=5)))
    assert sim.metrics["oom_failures"] == 1
    failed = [t for t in sim.schedule.tasks if t.failed_at is not None]
    assert [(t.job, t.start, t.failed_at) for t in failed] == [("b", 1.0, 1.0)]
    assert starts(sim)["b"][1] == 105.0  # a's release (100), reported at the next heartbeat


def test_code_gate_ratios_need_the_code_gates():
    inst = generate_liquid(LiquidSpec(jobs=2, hosts=2), 0)
    with pytest.raises(InputError, match="share_ratio applies to gates=code"):
        simulate(inst, "liquid", params={"share_ratio": "0.5"})
    simulate(inst, "liquid", params={"gates": "code", "share_ratio": "0.5"})
