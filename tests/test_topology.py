"""Topology validation, widest paths with latency tie-break, distance classes, builders."""

from __future__ import annotations

import math

import networkx as nx
import pytest

from optsched.errors import InputError, UnknownNameError
from optsched.topology import Distance, Topology, hosts_of, tree_topology


def two_path_graph() -> nx.Graph:
    """h0 to h1 over a wide, slow path (s1, 10 Gb/s, 5 ms) or a narrow, fast one (s2)."""
    g = nx.Graph()
    g.add_node("h0", kind="host")
    g.add_node("h1", kind="host")
    g.add_node("g0", kind="gpu", gpu_type="V100")
    g.add_node("s1", kind="switch")
    g.add_node("s2", kind="switch")
    g.add_node("s3", kind="switch")
    g.add_edge("g0", "h0", bandwidth=100, latency=0.001)
    g.add_edge("h0", "s1", bandwidth=10, latency=0.002)
    g.add_edge("s1", "h1", bandwidth=10, latency=0.003)
    g.add_edge("h0", "s2", bandwidth=5, latency=0.0)
    g.add_edge("s2", "h1", bandwidth=5, latency=0.0)
    # a second widest path, slower than the first
    g.add_edge("h0", "s3", bandwidth=10, latency=0.004)
    g.add_edge("s3", "h1", bandwidth=10, latency=0.004)
    return g


def test_widest_path_then_least_latency():
    topo = Topology(two_path_graph())
    assert topo.bottleneck_gbps("g0", "h1") == 10
    assert topo.latency_s("g0", "h1") == pytest.approx(0.006)
    assert topo.bottleneck_gbps("h1", "g0") == 10
    assert topo.latency_s("h0", "h0") == 0
    assert math.isinf(topo.bottleneck_gbps("h0", "h0"))


def test_tree_topology_levels_and_distances():
    g = tree_topology(
        [["V100"] * 2, ["V100"] * 2, ["K80"], ["K80"]], hosts_per_rack=2, racks_per_domain=1
    )
    topo = Topology(g)
    assert topo.gpus == ("h0/g0", "h0/g1", "h1/g0", "h1/g1", "h2/g0", "h3/g0")
    assert topo.distance("h0/g0", "h0/g1") is Distance.SAME_HOST
    assert topo.distance("h0/g0", "h1/g0") is Distance.SAME_RACK
    assert topo.distance("h2/g0", "h3/g0") is Distance.SAME_RACK
    assert topo.distance("h0/g0", "h2/g0") is Distance.FARTHER
    assert topo.rack("h1") == "r0" and topo.domain("h3/g0") == "d1"
    # GPU link 128, host NIC 25: GPUs on different hosts see 25 Gb/s
    assert topo.bottleneck_gbps("h0/g0", "h1") == 25
    g2 = tree_topology([["V100"]] * 4, hosts_per_rack=1, racks_per_domain=2)
    assert Topology(g2).distance("h0", "h1") is Distance.SAME_DOMAIN


def test_hosts_of_packs_types():
    assert hosts_of({"V100": 5, "K80": 2}, 4) == [["V100"] * 4, ["V100"], ["K80"] * 2]


def bad(mutate) -> nx.Graph:
    g = tree_topology([["V100"], ["K80"]])
    mutate(g)
    return g


@pytest.mark.parametrize(
    "mutate,match",
    [
        (lambda g: g.edges["h0/g0", "h0"].pop("bandwidth"), "edge 'h0'-'h0/g0' has no bandwidth"),
        (lambda g: g.edges["h0", "core"].update(bandwidth=0), "bandwidth must be >= 1e-09"),
        (lambda g: g.edges["h0", "core"].update(latency=-1), "latency must be >= 0"),
        (lambda g: g.remove_edge("h1", "core"), "disconnected"),
        (
            lambda g: g.add_edge("h0/g0", "h1", bandwidth=1),
            "GPU 'h0/g0' must have exactly one edge",
        ),
        (lambda g: g.nodes["h0/g0"].pop("gpu_type"), "GPU 'h0/g0': gpu_type"),
        (lambda g: g.nodes["h0"].update(kind="server"), "node 'h0': kind must be"),
        (lambda g: g.add_node(7, kind="host"), "node id 7 must be a non-empty string"),
    ],
)
def test_bad_topologies_name_the_culprit(mutate, match):
    with pytest.raises(InputError, match=match):
        Topology(bad(mutate))


def test_unknown_node():
    with pytest.raises(UnknownNameError, match="unknown topology node 'nope'"):
        Topology(tree_topology([["V100"]])).bottleneck_gbps("h0", "nope")


def test_node_link_round_trip_and_edge_count():
    topo = Topology(tree_topology([["V100", "K80"]], hosts_per_rack=1))
    data = topo.to_node_link()
    assert Topology.from_node_link(data) == topo
    data["edges"].append(dict(data["edges"][0]))
    with pytest.raises(InputError, match="edges but"):
        Topology.from_node_link(data)
    with pytest.raises(InputError, match="'nodes' and 'edges'"):
        Topology.from_node_link({"nodes": [], "links": []})
