"""Trace readers and the trace-to-instance mapping (own fixtures; peer data when present)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import check
from optsched.errors import InputError
from optsched.online.run import simulate
from optsched.traces import (
    STEP_TOLERANCE,
    TraceMapping,
    parse_cluster,
    read_gavel_trace,
    read_philly_csv,
    read_tiresias_csv,
    read_trace,
    split_steps,
    trace_instance,
)
from optsched.workloads import default_catalog
from tests.conftest import DATA

TRACES = DATA / "traces"
CLUSTER = parse_cluster("V100:2,K80:2")


def test_gavel_10_and_7_field_traces():
    ten = read_gavel_trace(TRACES / "gavel10.trace")
    assert [(j.arrival, j.gpus, j.weight, j.workload, j.steps) for j in ten.jobs] == [
        (0.0, 2, 2.0, "ResNet-50 (batch size 64)", 3000),
        (7.5, 1, 1.0, "A3C", 100),
    ]
    assert ten.skipped == 1 and "0 steps" in ten.first_skip
    seven = read_trace(TRACES / "msr7.trace")
    assert [(j.arrival, j.gpus, j.steps) for j in seven.jobs] == [(0.0, 1, 95121), (6.0, 4, 10000)]


def test_step_trace_mapping_rule():
    """A 2-GPU job runs Gavel's 2-GPU throughput; R ≈ steps × s per step on K80 / quantum
    and R × i = the trace's 3,000 steps."""
    trace = read_gavel_trace(TRACES / "gavel10.trace")
    inst = trace_instance(trace, CLUSTER, TraceMapping(quantum=600))
    k80 = default_catalog()["ResNet-50 (batch size 64) (scale factor 2)"].cells["K80"].seconds
    job = inst.jobs[0]
    assert job.workload == "ResNet-50 (batch size 64) (scale factor 2)"
    assert (job.rounds, job.tasks_per_round) == (round(3000 * k80 / 600), 2)
    assert job.rounds * job.iters_per_task == 3000
    assert inst.compute[0, inst.gpu_index["K80-0"]] == pytest.approx(job.iters_per_task * k80)


@given(st.integers(1, 10**8), st.floats(1e-4, 1e3), st.floats(1.0, 1e6))
def test_step_split_keeps_the_work_within_one_percent(steps, step_seconds, quantum):
    """Any job, any quantum: R × i within 1 % of the steps; R near the target when a task
    can hold whole steps."""
    rounds, iters = split_steps(steps, step_seconds, quantum)
    assert rounds >= 1 and iters >= 1
    assert abs(rounds * iters - steps) <= STEP_TOLERANCE * steps
    target = max(1, min(steps, round(steps * step_seconds / quantum)))
    if steps >= 2500:
        assert rounds == target or iters == max(1, round(steps / target))


def test_unprofiled_scale_factor_scales_the_nearest_profile(tmp_path):
    """Gavel profiles 1, 2, 4 and 8 GPUs; a 12-GPU job uses 8 GPUs' step time × 8 / 12."""
    trace = tmp_path / "t.trace"
    trace.write_text("ResNet-50 (batch size 64)\tc\tw\t-n\t1\t12000\t12\t1\t-1\t0\n")
    inst = trace_instance(
        read_gavel_trace(trace), parse_cluster("V100:12"), TraceMapping(quantum=600)
    )
    eight = default_catalog()["ResNet-50 (batch size 64) (scale factor 8)"]
    job = inst.jobs[0]
    iters = job.meta["iters_per_task"]
    assert job.tasks_per_round == 12 and job.rounds * iters == 12000
    assert inst.compute[0, 0] == pytest.approx(iters * eight.cells["V100"].seconds * 8 / 12)
    assert "scaled linearly" in job.meta["throughput"]


def test_hosts_give_gavel_jobs_their_spread_factors_in_gang_mode(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text(
        "ResNet-50 (batch size 32)\tc\tw\t-n\t1\t3000\t4\t1\t-1\t0\n"
        "ResNet-50 (batch size 32)\tc\tw\t-n\t1\t3000\t1\t1\t-1\t0\n"
    )
    gpus = parse_cluster("V100:4,K80:4", gpus_per_host=2)
    assert [g.host for g in gpus[:4]] == ["V100-h0", "V100-h0", "V100-h1", "V100-h1"]
    inst = trace_instance(read_gavel_trace(trace), gpus, TraceMapping(quantum=600), mode="gang")
    four = default_catalog()["ResNet-50 (batch size 32) (scale factor 4)"]
    factors = inst.jobs[0].profile.placement_factor
    for t in ("V100", "K80"):
        ratio = four.spread[t].seconds / four.cells[t].seconds
        for pattern in ("www:w", "ww:ww", "ww:w:w", "w:w:w:w"):
            assert factors[f"{pattern}@{t}"] == pytest.approx(ratio)
    assert "wwww@V100" not in factors and inst.jobs[1].cluster is None  # one GPU: none
    result = simulate(inst, "integral-allocation")
    assert check(inst, result.schedule).feasible
    relaxed = trace_instance(read_gavel_trace(trace), gpus, TraceMapping(quantum=600))
    assert all(job.cluster is None for job in relaxed.jobs)  # factors need gang mode
    with pytest.raises(InputError, match="gpus-per-host"):
        parse_cluster("V100:4", gpus_per_host=0)


def test_heavy_gavel_trace_keeps_its_work(peer_data):
    """Gavel's heavy trace at 3,600 s quanta: every job within 1 % of its steps."""
    path = peer_data / "gavel" / "generated" / "gen300_lam120_a2_b4_seed1.trace"
    trace = read_gavel_trace(path)
    inst = trace_instance(
        trace, parse_cluster("V100:12,P100:12,K80:12"), TraceMapping(quantum=3600)
    )
    for tj, job in zip(trace.jobs, inst.jobs, strict=True):
        assert abs(job.rounds * job.iters_per_task - tj.steps) <= 0.01 * tj.steps


def test_duration_traces_and_their_mapping():
    tiresias = read_tiresias_csv(TRACES / "tiresias.csv")
    assert [(j.arrival, j.gpus, j.duration) for j in tiresias.jobs] == [
        (0.0, 1, 7200.0),
        (30.0, 4, 1800.0),
    ]
    assert tiresias.skipped == 1
    philly = read_philly_csv(TRACES / "philly.csv")
    assert [(j.arrival, j.gpus, j.duration) for j in philly.jobs] == [
        (0.0, 2, 10951.0),
        (2932.0, 1, 66.0),
    ]
    inst = trace_instance(philly, CLUSTER, TraceMapping(quantum=3600, seed=1))
    job = inst.jobs[0]
    assert job.rounds == 3  # round(10951 / 3600)
    k80 = inst.compute[0, inst.gpu_index["K80-0"]]
    assert job.rounds * k80 == pytest.approx(10951.0)  # the duration, on the reference type
    assert inst == trace_instance(philly, CLUSTER, TraceMapping(quantum=3600, seed=1))


def test_traces_simulate_and_check():
    for name in ("gavel10.trace", "msr7.trace", "tiresias.csv", "philly.csv"):
        inst = trace_instance(
            read_trace(TRACES / name), parse_cluster("V100:4,K80:4"), TraceMapping(quantum=600)
        )
        result = simulate(inst, "hlas")
        sim = result.simulation
        assert check(sim.instance, result.schedule).feasible
        gang = simulate(inst.with_mode("gang"), "tiresias")
        assert gang.objective >= gang.extra["bound_critical_path"]


def test_bad_traces_and_clusters(tmp_path):
    bad = tmp_path / "bad.trace"
    bad.write_text("a\tb\tc\n")
    with pytest.raises(InputError, match="10 or 7"):
        read_trace(bad)
    (tmp_path / "x.csv").write_text("foo,bar\n1,2\n")
    with pytest.raises(InputError, match="not a Gavel"):
        read_trace(tmp_path / "x.csv")
    with pytest.raises(InputError, match="TYPE:COUNT"):
        parse_cluster("V100")
    with pytest.raises(InputError, match="cannot read"):
        read_trace(tmp_path / "missing.csv", "philly")


def test_peer_traces_are_read(peer_data):
    philly = read_philly_csv(peer_data / "pollux" / "traces" / "philly.csv")
    assert len(philly.jobs) + philly.skipped == 82247
    msr = read_gavel_trace(next((peer_data / "gavel" / "traces" / "msr" / "seed=0").iterdir()))
    assert msr.jobs
    gen = read_gavel_trace(peer_data / "gavel" / "generated" / "gen300_lam2400_seed0.trace")
    assert len(gen.jobs) == 300
    tiresias = read_tiresias_csv(peer_data / "tiresias" / "60_job.csv")
    assert len(tiresias.jobs) == 60
