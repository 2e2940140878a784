"""Instance model: matrices, workloads, sync rules, groups, and every bad-input error."""

from __future__ import annotations

import copy
import json
import math

import networkx as nx
import numpy as np
import pytest

from optsched import GPU, Instance, Job
from optsched.errors import InputError, UnknownNameError
from optsched.io import instance_from_dict, instance_to_dict
from optsched.topology import tree_topology
from optsched.workloads import default_catalog

BASE = {
    "format": "optsched/instance@1", "name": "toy", "mode": "relaxed",
    "gpus": [{"id": "G1", "type": "V100"}, {"id": "G2", "type": "K80"}],
    "jobs": [{"id": "J1", "arrival": 0, "weight": 1, "rounds": 2, "tasks_per_round": 1,
              "compute": {"V100": 1.5, "K80": 2.0}, "sync": {"V100": 0.1, "K80": 0.2}}],
}


def with_(path, value=None, *, delete=False):
    data = copy.deepcopy(BASE)
    obj = data
    for key in path[:-1]:
        obj = obj[key]
    if delete:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return data


def test_design_example_matrices():
    inst = instance_from_dict(BASE)
    assert inst.compute.tolist() == [[1.5, 2.0]]
    assert inst.sync.tolist() == [[0.1, 0.2]]
    assert not inst.compute.flags.writeable
    assert inst.n_tasks == 2


def test_ineligible_types_and_ignored_types():
    inst = Instance("x", (Job("J", compute={"V100": 1, "A100": 9}),),
                    (GPU("a", "V100"), GPU("b", "K80")))
    assert inst.compute[0, 0] == 1 and math.isinf(inst.compute[0, 1])
    assert math.isinf(inst.sync[0, 1])
    assert inst.eligible(0).tolist() == [0]


def test_workload_from_catalog_times_iters():
    cat = default_catalog()
    inst = Instance("x", (Job("J", workload="ResNet-50 (batch size 64)", iters_per_task=10),),
                    (GPU("a", "V100"), GPU("b", "K80"), GPU("c", "T4")))
    assert inst.compute[0, 0] == pytest.approx(10 * cat.seconds("ResNet-50 (batch size 64)",
                                                                "V100"))
    assert math.isinf(inst.compute[0, 2])  # Gavel has no T4 profile
    with pytest.raises(UnknownNameError, match="unknown workload 'nope'"):
        Instance("x", (Job("J", workload="nope"),), (GPU("a", "V100"),))


def test_sync_by_gpu_and_unknown_gpu():
    inst = Instance("x", (Job("J", compute={"V100": 1}, sync_by_gpu={"a": 0.5, "b": 0.7}),),
                    (GPU("a", "V100"), GPU("b", "V100")))
    assert inst.sync.tolist() == [[0.5, 0.7]]
    with pytest.raises(InputError, match="sync_by_gpu has no value for eligible GPU 'b'"):
        Instance("x", (Job("J", compute={"V100": 1}, sync_by_gpu={"a": 0.5}),),
                 (GPU("a", "V100"), GPU("b", "V100")))
    with pytest.raises(UnknownNameError, match="unknown GPU 'zz'"):
        Instance("x", (Job("J", compute={"V100": 1}, sync_by_gpu={"a": 0, "zz": 1}),),
                 (GPU("a", "V100"),))


def test_sync_bytes_from_topology():
    """2·8·bytes / (1e9·Gb/s) + latency: GPU on the PS host sees 128 Gb/s, others 25 Gb/s."""
    g = tree_topology([["V100"], ["V100"]],
                      latency={"gpu": 0.001, "host": 0.01, "rack": 0, "domain": 0})
    inst = Instance("x", (Job("J", compute={"V100": 1}, sync_bytes=1e8, ps="h0"),),
                    topology=g)
    assert inst.sync[0, 0] == pytest.approx(16e8 / 128e9 + 0.001)
    assert inst.sync[0, 1] == pytest.approx(16e8 / 25e9 + 0.001 + 0.02)
    with pytest.raises(UnknownNameError, match="ps 'h9' is not a host"):
        Instance("x", (Job("J", compute={"V100": 1}, sync_bytes=1, ps="h9"),), topology=g)
    with pytest.raises(InputError, match="needs a topology"):
        Instance("x", (Job("J", compute={"V100": 1}, sync_bytes=1, ps="h0"),),
                 (GPU("a", "V100"),))


def test_gpu_groups_are_identical_columns():
    inst = Instance("x", (Job("J", compute={"A": 1, "B": 2}, sync_by_gpu={
        "a1": 0, "a2": 0, "a3": 1, "b1": 0}),),
        (GPU("a1", "A"), GPU("b1", "B"), GPU("a2", "A"), GPU("a3", "A")))
    assert inst.gpu_groups() == ((0, 2), (1,), (3,))


def test_gang_mode_needs_k_eligible_gpus():
    job = Job("J", tasks_per_round=2, compute={"V100": 1})
    gpus = (GPU("a", "V100"), GPU("b", "K80"))
    Instance("x", (job,), gpus)  # relaxed: tasks may share a GPU
    with pytest.raises(InputError, match=r"job .J.: 1 eligible GPU.*needs 2 in gang mode"):
        Instance("x", (job,), gpus, mode="gang")


def test_topology_and_gpus_must_agree():
    g = tree_topology([["V100", "K80"]])
    both = Instance("x", (Job("J", compute={"V100": 1}),),
                    (GPU("h0/g1", "K80"), GPU("h0/g0", "V100")), g)
    assert [x.id for x in both.gpus] == ["h0/g1", "h0/g0"]  # the order of gpus wins
    assert both.gpus[0].host == "h0"
    with pytest.raises(InputError, match="GPU 'h0/g0': type 'K80' in 'gpus' but 'V100'"):
        Instance("x", (Job("J", compute={"V100": 1}),), (GPU("h0/g0", "K80"),), g)
    with pytest.raises(InputError, match="GPU 'zz' is in 'gpus' but not in the topology"):
        Instance("x", (Job("J", compute={"V100": 1}),), (GPU("zz", "V100"),), g)
    with pytest.raises(InputError, match="GPU 'h0/g1' is in the topology but not in 'gpus'"):
        Instance("x", (Job("J", compute={"V100": 1}),), (GPU("h0/g0", "V100"),), g)


BAD = [
    (with_(["format"], "optsched/instance@9"), "unknown format 'optsched/instance@9'"),
    (with_(["colour"], "red"), "instance: unknown key 'colour'"),
    (with_(["name"], delete=True), "instance: missing key 'name'"),
    (with_(["jobs", 0, "speed"], 2), "job 'J1': unknown key 'speed'"),
    (with_(["jobs", 0, "rounds"], delete=True), "job 'J1': missing key 'rounds'"),
    (with_(["jobs", 0, "rounds"], "2"),
     r"job 'J1': rounds must be an integer in \[1, 5,000,000\], got '2'"),
    (with_(["jobs", 0, "rounds"], 10**18), "rounds must be an integer in"),
    (with_(["jobs", 0, "arrival"], 1e308), r"arrival must be a number in \[0, 1e\+15\]"),
    (with_(["jobs", 0, "rounds"], 1.5), "rounds must be an integer"),
    (with_(["jobs", 0, "arrival"], -1), r"job 'J1': arrival must be a number in \[0, 1e\+15\]"),
    (with_(["jobs", 0, "weight"], 0), r"job 'J1': weight must be a number in \[1e-09, 1e\+15\]"),
    (with_(["jobs", 0, "compute", "K80"], -2), r"job 'J1': compute\['K80'\] must be"),
    (with_(["jobs", 0, "compute", "K80"], 0),
     r"compute\['K80'\] must be a number >= 1e-09 and <= 1e\+15"),
    (with_(["jobs", 0, "compute", "K80"], 1e308), r"compute\['K80'\] must be a number >= 1e-09"),
    (with_(["jobs", 0, "sync", "K80"], -0.1), r"job 'J1': sync\['K80'\] must be"),
    (with_(["jobs", 0, "sync"], {"V100": 0.1}), "sync has no value for GPU type 'K80'"),
    (with_(["jobs", 0, "compute"], {"A100": 1}), "job 'J1': 0 eligible GPU"),
    (with_(["jobs", 0, "workload"], "LM (batch size 5)"), "exactly one of 'compute' and"),
    (with_(["jobs", 0, "sync_bytes"], 10), "at most one of"),
    (with_(["jobs", 0, "id"], 3), "job id must be a non-empty string, got 3"),
    (with_(["jobs"], []), "instance has no job"),
    (with_(["jobs"], {"id": "J1"}), "instance 'jobs' must be a JSON array"),
    (with_(["gpus", 1, "id"], "G1"), "duplicate GPU id 'G1'"),
    (with_(["gpus", 0, "type"], ""), "GPU 'G1': type must be a non-empty string"),
    (with_(["gpus"], delete=True), "instance needs 'gpus' or 'topology'"),
    (with_(["mode"], "async"), "mode must be one of"),
    ([1, 2], "instance must be a JSON object"),
]


@pytest.mark.parametrize("data,match", BAD, ids=[m for _, m in BAD])
def test_bad_instances_raise_input_error_naming_the_culprit(data, match):
    with pytest.raises(InputError, match=match):
        instance_from_dict(data)


def test_duplicate_job_ids():
    data = copy.deepcopy(BASE)
    data["jobs"].append(copy.deepcopy(data["jobs"][0]))
    with pytest.raises(InputError, match="duplicate job id 'J1'"):
        instance_from_dict(data)


def topo_instance(mutate=None, gpus=None):
    g = tree_topology([["V100"], ["K80"]])
    if mutate:
        mutate(g)
    data = copy.deepcopy(BASE)
    data["topology"] = json.loads(json.dumps(
        nx.node_link_data(g, edges="edges")))
    if gpus is None:
        del data["gpus"]
    else:
        data["gpus"] = gpus
    return data


def test_topology_instance_json():
    inst = instance_from_dict(topo_instance())
    assert [g.id for g in inst.gpus] == ["h0/g0", "h1/g0"]
    assert instance_from_dict(instance_to_dict(inst)) == inst


@pytest.mark.parametrize("data,match", [
    (lambda: topo_instance(lambda g: g.edges["h1", "core"].pop("bandwidth")),
     "edge 'core'-'h1' has no bandwidth"),
    (lambda: topo_instance(lambda g: g.remove_edge("h1", "core")), "disconnected"),
    (lambda: topo_instance(gpus=[{"id": "h0/g0", "type": "K80"},
                                 {"id": "h1/g0", "type": "K80"}]),
     "GPU 'h0/g0': type 'K80' in 'gpus' but 'V100' in the topology"),
])
def test_topology_errors_through_json(data, match):
    with pytest.raises(InputError, match=match):
        instance_from_dict(data())


def test_matrices_dtype():
    assert instance_from_dict(BASE).compute.dtype == np.float64
