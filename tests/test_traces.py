"""Trace readers and the trace-to-instance mapping (own fixtures; peer data when present)."""

from __future__ import annotations

import math

import pytest

from optsched import check
from optsched.errors import InputError
from optsched.online.run import run_policy
from optsched.traces import (
    TraceMapping,
    parse_cluster,
    read_gavel_trace,
    read_philly_csv,
    read_tiresias_csv,
    read_trace,
    trace_instance,
)
from optsched.workloads import default_catalog
from tests.conftest import DATA

TRACES = DATA / "traces"
CLUSTER = parse_cluster("V100:2,K80:2")


def test_gavel_10_and_7_field_traces():
    ten = read_gavel_trace(TRACES / "gavel10.trace")
    assert [(j.arrival, j.gpus, j.weight, j.workload, j.steps) for j in ten.jobs] == [
        (0.0, 2, 2.0, "ResNet-50 (batch size 64)", 3000), (7.5, 1, 1.0, "A3C", 100)]
    assert ten.skipped == 1 and "0 steps" in ten.first_skip
    seven = read_trace(TRACES / "msr7.trace")
    assert [(j.arrival, j.gpus, j.steps) for j in seven.jobs] == [(0.0, 1, 95121),
                                                                  (6.0, 4, 10000)]


def test_step_trace_mapping_rule():
    """iters_per_task = round(quantum / s per step on K80); rounds = ceil(steps / iters)."""
    trace = read_gavel_trace(TRACES / "gavel10.trace")
    inst = trace_instance(trace, CLUSTER, TraceMapping(quantum=600))
    k80 = default_catalog()["ResNet-50 (batch size 64)"].cells["K80"].seconds
    iters = round(600 / k80)
    job = inst.jobs[0]
    assert (job.iters_per_task, job.rounds, job.tasks_per_round) == (iters,
                                                                     math.ceil(3000 / iters), 2)
    assert inst.compute[0, inst.gpu_index["K80-0"]] == pytest.approx(iters * k80)


def test_duration_traces_and_their_mapping():
    tiresias = read_tiresias_csv(TRACES / "tiresias.csv")
    assert [(j.arrival, j.gpus, j.duration) for j in tiresias.jobs] == [(0.0, 1, 7200.0),
                                                                         (30.0, 4, 1800.0)]
    assert tiresias.skipped == 1
    philly = read_philly_csv(TRACES / "philly.csv")
    assert [(j.arrival, j.gpus, j.duration) for j in philly.jobs] == [(0.0, 2, 10951.0),
                                                                      (2932.0, 1, 66.0)]
    inst = trace_instance(philly, CLUSTER, TraceMapping(quantum=3600, seed=1))
    job = inst.jobs[0]
    assert job.rounds == 3  # round(10951 / 3600)
    k80 = inst.compute[0, inst.gpu_index["K80-0"]]
    assert job.rounds * k80 == pytest.approx(10951.0)  # the duration, on the reference type
    assert inst == trace_instance(philly, CLUSTER, TraceMapping(quantum=3600, seed=1))


def test_traces_simulate_and_check():
    for name in ("gavel10.trace", "msr7.trace", "tiresias.csv", "philly.csv"):
        inst = trace_instance(read_trace(TRACES / name), parse_cluster("V100:4,K80:4"),
                              TraceMapping(quantum=600))
        result, sim = run_policy(inst, "hlas")
        assert check(sim.instance, result.schedule).feasible
        gang, _ = run_policy(inst.with_mode("gang"), "tiresias")
        assert gang.objective >= gang.bound


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
