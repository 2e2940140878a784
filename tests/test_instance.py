"""Instance model: matrices, workloads, sync rules, groups, and every bad-input error."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import re
from importlib import resources

import jsonschema
import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, ClusterProfile, Instance, Job
from optsched.cluster_model import ClusterSpec
from optsched.errors import InputError, UnknownNameError
from optsched.io import instance_from_dict, instance_to_dict
from optsched.testing import cluster_profiles
from optsched.topology import tree_topology
from optsched.workloads import default_catalog
from tests.conftest import n_examples

BASE = {
    "format": "optsched/instance@1",
    "name": "toy",
    "mode": "relaxed",
    "gpus": [{"id": "G1", "type": "V100"}, {"id": "G2", "type": "K80"}],
    "jobs": [
        {
            "id": "J1",
            "arrival": 0,
            "weight": 1,
            "rounds": 2,
            "tasks_per_round": 1,
            "compute": {"V100": 1.5, "K80": 2.0},
            "sync": {"V100": 0.1, "K80": 0.2},
        }
    ],
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
    inst = Instance(
        "x", (Job("J", compute={"V100": 1, "A100": 9}),), (GPU("a", "V100"), GPU("b", "K80"))
    )
    assert inst.compute[0, 0] == 1 and math.isinf(inst.compute[0, 1])
    assert math.isinf(inst.sync[0, 1])
    assert inst.eligible(0).tolist() == [0]


def test_workload_from_catalog_times_iters():
    cat = default_catalog()
    inst = Instance(
        "x",
        (Job("J", workload="ResNet-50 (batch size 64)", iters_per_task=10),),
        (GPU("a", "V100"), GPU("b", "K80"), GPU("c", "T4")),
    )
    assert inst.compute[0, 0] == pytest.approx(
        10 * cat.seconds("ResNet-50 (batch size 64)", "V100")
    )
    assert math.isinf(inst.compute[0, 2])  # Gavel has no T4 profile
    with pytest.raises(UnknownNameError, match="unknown workload 'nope'"):
        Instance("x", (Job("J", workload="nope"),), (GPU("a", "V100"),))


def test_sync_by_gpu_and_unknown_gpu():
    inst = Instance(
        "x",
        (Job("J", compute={"V100": 1}, sync_by_gpu={"a": 0.5, "b": 0.7}),),
        (GPU("a", "V100"), GPU("b", "V100")),
    )
    assert inst.sync.tolist() == [[0.5, 0.7]]
    with pytest.raises(InputError, match="sync_by_gpu has no value for eligible GPU 'b'"):
        Instance(
            "x",
            (Job("J", compute={"V100": 1}, sync_by_gpu={"a": 0.5}),),
            (GPU("a", "V100"), GPU("b", "V100")),
        )
    with pytest.raises(UnknownNameError, match="unknown GPU 'zz'"):
        Instance(
            "x",
            (Job("J", compute={"V100": 1}, sync_by_gpu={"a": 0, "zz": 1}),),
            (GPU("a", "V100"),),
        )


def test_sync_bytes_from_topology():
    """2·8·bytes / (1e9·Gb/s) + latency: GPU on the PS host sees 128 Gb/s, others 25 Gb/s."""
    g = tree_topology(
        [["V100"], ["V100"]], latency={"gpu": 0.001, "host": 0.01, "rack": 0, "domain": 0}
    )
    inst = Instance("x", (Job("J", compute={"V100": 1}, sync_bytes=1e8, ps="h0"),), topology=g)
    assert inst.sync[0, 0] == pytest.approx(16e8 / 128e9 + 0.001)
    assert inst.sync[0, 1] == pytest.approx(16e8 / 25e9 + 0.001 + 0.02)
    with pytest.raises(UnknownNameError, match="ps 'h9' is not a host"):
        Instance("x", (Job("J", compute={"V100": 1}, sync_bytes=1, ps="h9"),), topology=g)
    with pytest.raises(InputError, match="needs a topology"):
        Instance("x", (Job("J", compute={"V100": 1}, sync_bytes=1, ps="h0"),), (GPU("a", "V100"),))


def test_gpu_groups_are_identical_columns():
    inst = Instance(
        "x",
        (Job("J", compute={"A": 1, "B": 2}, sync_by_gpu={"a1": 0, "a2": 0, "a3": 1, "b1": 0}),),
        (GPU("a1", "A"), GPU("b1", "B"), GPU("a2", "A"), GPU("a3", "A")),
    )
    assert inst.gpu_groups() == ((0, 2), (1,), (3,))


def test_gang_mode_needs_k_eligible_gpus():
    job = Job("J", tasks_per_round=2, compute={"V100": 1})
    gpus = (GPU("a", "V100"), GPU("b", "K80"))
    Instance("x", (job,), gpus)  # relaxed: tasks may share a GPU
    with pytest.raises(InputError, match=r"job .J.: 1 eligible GPU.*needs 2 in gang mode"):
        Instance("x", (job,), gpus, mode="gang")


def test_topology_and_gpus_must_agree():
    g = tree_topology([["V100", "K80"]])
    both = Instance(
        "x", (Job("J", compute={"V100": 1}),), (GPU("h0/g1", "K80"), GPU("h0/g0", "V100")), g
    )
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
    (with_(["format"], delete=True), "instance: missing key 'format'"),
    (with_(["colour"], "red"), "instance: unknown key 'colour'"),
    (with_(["name"], delete=True), "instance: missing key 'name'"),
    (with_(["jobs", 0, "speed"], 2), "job 'J1': unknown key 'speed'"),
    (with_(["jobs", 0, "rounds"], delete=True), "job 'J1': missing key 'rounds'"),
    (
        with_(["jobs", 0, "rounds"], "2"),
        r"job 'J1': rounds must be an integer in \[1, 5,000,000\], got '2'",
    ),
    (with_(["jobs", 0, "rounds"], 10**18), "rounds must be an integer in"),
    (with_(["jobs", 0, "arrival"], 1e308), r"arrival must be a number in \[0, 1e\+15\]"),
    (with_(["jobs", 0, "rounds"], 1.5), "rounds must be an integer"),
    (with_(["jobs", 0, "arrival"], -1), r"job 'J1': arrival must be a number in \[0, 1e\+15\]"),
    (with_(["jobs", 0, "weight"], 0), r"job 'J1': weight must be a number in \[1e-09, 1e\+15\]"),
    (with_(["jobs", 0, "compute", "K80"], -2), r"job 'J1': compute\['K80'\] must be"),
    (
        with_(["jobs", 0, "compute", "K80"], 0),
        r"compute\['K80'\] must be a number >= 1e-09 and <= 1e\+15",
    ),
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
    data["topology"] = json.loads(json.dumps(nx.node_link_data(g, edges="edges")))
    if gpus is None:
        del data["gpus"]
    else:
        data["gpus"] = gpus
    return data


def test_topology_instance_json():
    inst = instance_from_dict(topo_instance())
    assert [g.id for g in inst.gpus] == ["h0/g0", "h1/g0"]
    assert instance_from_dict(instance_to_dict(inst)) == inst


@pytest.mark.parametrize(
    "data,match",
    [
        (
            lambda: topo_instance(lambda g: g.edges["h1", "core"].pop("bandwidth")),
            "edge 'core'-'h1' has no bandwidth",
        ),
        (lambda: topo_instance(lambda g: g.remove_edge("h1", "core")), "disconnected"),
        (
            lambda: topo_instance(
                gpus=[{"id": "h0/g0", "type": "K80"}, {"id": "h1/g0", "type": "K80"}]
            ),
            "GPU 'h0/g0': type 'K80' in 'gpus' but 'V100' in the topology",
        ),
    ],
)
def test_topology_errors_through_json(data, match):
    with pytest.raises(InputError, match=match):
        instance_from_dict(data())


def test_matrices_dtype():
    assert instance_from_dict(BASE).compute.dtype == np.float64


# -- cluster profiles (instance@2) -------------------------------------------------------------

V2 = {**BASE, "format": "optsched/instance@2", "mode": "gang"}

BAD_PROFILES = [
    ("launch", -1),
    ("save", "10"),
    ("util", 0),
    ("util", 1.5),
    ("gpu_memory", math.inf),
    ("roles", ["boss"]),
    ("roles", []),
    ("roles", "ps"),
    ("roles", [["ps"]]),
    ("placement_factor", {}),
    ("placement_factor", {"pww": 0}),
    ("placement_factor", {"pww": 2e6}),
    ("actual", [0.5]),
    ("actual", {"cpu": 1}),
    ("actual", {"util": 2}),
    ("flow_time", -0.5),
    ("bandwidth", 0),
    ("bandwidth", True),
    ("model", ""),
    ("model", 5),
]


@pytest.mark.parametrize("field,value", BAD_PROFILES, ids=[f"{f}={v!r}" for f, v in BAD_PROFILES])
def test_bad_cluster_profiles_name_the_field_and_in_files_the_job(field, value):
    with pytest.raises(InputError, match=f"^{field}"):
        ClusterProfile(**{field: value})
    with pytest.raises(InputError, match=re.escape(f"job 'J1': {field}")):
        instance_from_dict(
            with_(("jobs", 0, field), value) | {"format": V2["format"], "mode": "gang"}
        )


def test_roles_must_match_the_tasks_of_a_round():
    with pytest.raises(InputError, match=r"job 'J': roles .* each of the 2 tasks"):
        Job("J", tasks_per_round=2, compute={"V100": 1}, cluster=ClusterProfile(roles=("ps",)))
    with pytest.raises(InputError, match="job 'J': cluster must be a ClusterProfile"):
        Job("J", compute={"V100": 1}, cluster={"launch": 1.0})


def test_a_profile_of_defaults_is_no_profile():
    job = Job("J", compute={"V100": 1}, cluster=ClusterProfile(util=1, bandwidth=1))
    assert job.cluster is None and job.profile == ClusterProfile()
    assert job == Job("J", compute={"V100": 1})
    # an instance@2 file without (or with default) cluster keys: a plain job, written as @1
    for extra in ({}, {"util": 1.0, "launch": 0}):
        data = copy.deepcopy(V2)
        data["jobs"][0].update(extra)
        inst = instance_from_dict(data)
        assert inst.jobs[0].cluster is None and not inst.needs_cluster_model
        assert instance_to_dict(inst)["format"] == "optsched/instance@1"
    gpus = (GPU("a", "V100", "h0"), GPU("b", "V100", "h1"))
    model_only = Instance(
        "m",
        (Job("J", compute={"V100": 1}, cluster=ClusterProfile(model="vgg16")),),
        gpus,
        mode="gang",
    )
    assert model_only.needs_cluster_model
    assert instance_to_dict(model_only)["format"] == "optsched/instance@2"


def test_every_profile_field_round_trips_flat_in_the_job():
    profile = ClusterProfile(
        launch=30,
        save=10,
        util=0.6,
        gpu_memory=8192,
        roles=("ps", "worker", "worker"),
        placement_factor={"pww": 1.0, "p:w:w": 1.6},
        actual={"util": 0.7, "gpu_memory": 9000, "bandwidth": 2.5},
        flow_time=12.5,
        bandwidth=2.0,
        model="vgg16",
    )
    job = Job("J", tasks_per_round=3, compute={"T4": 100}, cluster=profile, meta={"batch_size": 4})
    inst = Instance(
        "all",
        (job,),
        tuple(GPU(f"h{k}/g0", "T4", f"h{k}", 16384.0) for k in range(3)),
        mode="gang",
        cluster=ClusterSpec(share_cap=1.3, link_contention=True),
    )
    data = json.loads(json.dumps(instance_to_dict(inst)))
    written = data["jobs"][0]
    assert {k: written[k] for k in ("bandwidth", "model", "roles", "meta")} == {
        "bandwidth": 2.0,
        "model": "vgg16",
        "roles": ["ps", "worker", "worker"],
        "meta": {"batch_size": 4},
    }
    assert set(written) >= {f.name for f in dataclasses.fields(ClusterProfile)}
    jsonschema.validate(data, _schema("instance-v2"))
    assert instance_from_dict(data) == inst
    assert inst.jobs[0].profile.actual_flow_time == pytest.approx(12.5 * 2.5 / 2.0)


def test_older_files_keep_bandwidth_and_model_in_meta():
    meta = {"model": "vgg16", "batch_size": 4, "bandwidth": 2.33}
    data = copy.deepcopy(V2)
    data["jobs"][0]["meta"] = meta
    inst = instance_from_dict(data)
    job = inst.jobs[0]
    assert (job.profile.bandwidth, job.profile.model) == (2.33, "vgg16")
    assert job.meta == meta  # left as it is
    written = instance_to_dict(inst)["jobs"][0]
    assert (written["bandwidth"], written["model"], written["meta"]) == (2.33, "vgg16", meta)
    assert instance_from_dict(json.loads(json.dumps(instance_to_dict(inst)))) == inst
    # a flat key wins; meta values that are no bandwidth or model are just data
    data["jobs"][0].update(bandwidth=3.0)
    assert instance_from_dict(data).jobs[0].profile.bandwidth == 3.0
    data["jobs"][0] = {**BASE["jobs"][0], "meta": {"bandwidth": "high", "model": 7}}
    assert instance_from_dict(data).jobs[0].cluster is None
    # instance@1 never had them: its meta is only data
    v1 = copy.deepcopy(BASE)
    v1["jobs"][0]["meta"] = meta
    assert instance_from_dict(v1).jobs[0].cluster is None


def test_a_default_bandwidth_or_model_next_to_meta_ones_reads_back_equal():
    """A job whose meta says bandwidth 2 and model vgg16 while its profile keeps the
    defaults is written with bandwidth 1 and model null, so the fallback does not apply."""
    job = Job(
        "J",
        compute={"V100": 1},
        cluster=ClusterProfile(launch=5),
        meta={"bandwidth": 2.0, "model": "vgg16"},
    )
    inst = Instance("d", (job,), (GPU("a", "V100"),), mode="gang")
    data = json.loads(json.dumps(instance_to_dict(inst)))
    assert (data["jobs"][0]["bandwidth"], data["jobs"][0]["model"]) == (1.0, None)
    jsonschema.validate(data, _schema("instance-v2"))
    assert instance_from_dict(data) == inst


@settings(max_examples=n_examples(60), deadline=None)
@given(st.data())
def test_drawn_cluster_profiles_round_trip(data):
    meta = st.one_of(
        st.none(),
        st.fixed_dictionaries(
            {},
            optional={
                "bandwidth": st.sampled_from([0, 2, 1.0, "x"]),
                "model": st.sampled_from(["", "vgg16", 3]),
                "note": st.just("kept"),
            },
        ),
    )
    jobs = []
    for j in range(data.draw(st.integers(1, 3))):
        k = data.draw(st.integers(1, 3))
        jobs.append(
            Job(
                f"j{j}",
                tasks_per_round=k,
                compute={"T4": 10.0},
                cluster=data.draw(cluster_profiles(tasks_per_round=k)),
                meta=data.draw(meta),
            )
        )
    inst = Instance(
        "p",
        tuple(jobs),
        tuple(GPU(f"g{k}", "T4", f"h{k % 2}", 8192.0) for k in range(3)),
        mode="gang",
        cluster=ClusterSpec(share_cap=data.draw(st.sampled_from([None, 1.3]))),
    )
    written = json.loads(json.dumps(instance_to_dict(inst)))
    assert instance_from_dict(written) == inst
    assert [j.get("meta") for j in written["jobs"]] == [
        None if j.meta is None else dict(j.meta) for j in inst.jobs
    ]
    if inst.needs_cluster_model:
        jsonschema.validate(written, _schema("instance-v2"))


def _schema(name):
    path = resources.files("optsched").joinpath("data", "schemas", f"{name}.schema.json")
    return json.loads(path.read_text())
