"""Cluster topology: a validated, read-only view of a networkx graph of GPUs, hosts, switches.

docs/model.md: every node has ``kind`` = ``gpu`` | ``host`` | ``switch`` and a string id; a GPU
has ``gpu_type`` and exactly one edge, to its host; switches may carry ``level`` (``rack``,
``domain``, ``core``, …); every edge has ``bandwidth`` in Gbit/s and optional ``latency`` in s.
Between two nodes the toolkit uses the *widest* path (largest bottleneck bandwidth) and, among
widest paths, the one with the least summed latency.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Any

from optsched.errors import InputError, UnknownNameError
from optsched.limits import MAX_VALUE, MIN_POSITIVE, is_bounded

if TYPE_CHECKING:
    import networkx as nx

NODE_KINDS = ("gpu", "host", "switch")


class Distance(IntEnum):
    """How far apart two GPUs or hosts are (Liquid's node/rack/domain levels)."""

    SAME_HOST = 0
    SAME_RACK = 1
    SAME_DOMAIN = 2
    FARTHER = 3


def _number(value: Any, what: str, *, positive: bool) -> float:
    if not is_bounded(value):
        raise InputError(f"{what} must be a number <= {MAX_VALUE:g}, got {value!r}")
    if positive and value < MIN_POSITIVE:
        raise InputError(f"{what} must be >= {MIN_POSITIVE:g}, got {value!r}")
    if value < 0:
        raise InputError(f"{what} must be >= 0, got {value!r}")
    return float(value)


class Topology:
    """A validated, immutable cluster topology.

    Parameters
    ----------
    graph
        An undirected ``networkx.Graph`` as described in docs/model.md. It is copied; later
        changes to it do not affect the topology.

    Attributes
    ----------
    gpus, gpu_types
        The GPU nodes (in node order) and their types.
    hosts
        The host nodes, in node order.
    host_of
        Each GPU's host.
    graph
        The frozen ``networkx.Graph`` (node and edge attributes as given).

    Raises
    ------
    InputError
        On a missing or wrong ``kind``, a GPU without ``gpu_type`` or not attached to exactly
        one host, an edge without a positive ``bandwidth``, a negative ``latency``, a
        non-string node id, a topology without GPUs, or a disconnected graph. The message
        names the node or edge.
    """

    def __init__(self, graph: nx.Graph) -> None:
        import networkx as nx

        if not isinstance(graph, nx.Graph) or graph.is_directed() or graph.is_multigraph():
            raise InputError("topology must be an undirected networkx.Graph")
        g = nx.Graph()
        for node, attrs in graph.nodes(data=True):
            if not isinstance(node, str) or not node:
                raise InputError(f"topology node id {node!r} must be a non-empty string")
            kind = attrs.get("kind")
            if kind not in NODE_KINDS:
                raise InputError(
                    f"topology node {node!r}: kind must be one of {NODE_KINDS}, got {kind!r}"
                )
            if kind == "gpu":
                gtype = attrs.get("gpu_type")
                if not isinstance(gtype, str) or not gtype:
                    raise InputError(f"topology GPU {node!r}: gpu_type must be a non-empty string")
            level = attrs.get("level")
            if level is not None and not isinstance(level, str):
                raise InputError(f"topology node {node!r}: level must be a string")
            g.add_node(node, **attrs)
        for u, v, attrs in graph.edges(data=True):
            if u == v:
                raise InputError(f"topology edge {u!r}-{v!r} is a self-loop")
            if "bandwidth" not in attrs:
                raise InputError(f"topology edge {u!r}-{v!r} has no bandwidth")
            bw = _number(attrs["bandwidth"], f"topology edge {u!r}-{v!r} bandwidth", positive=True)
            lat = _number(
                attrs.get("latency", 0.0), f"topology edge {u!r}-{v!r} latency", positive=False
            )
            g.add_edge(u, v, **{**attrs, "bandwidth": bw, "latency": lat})
        kind = nx.get_node_attributes(g, "kind")
        gpus = [n for n in g if kind[n] == "gpu"]
        if not gpus:
            raise InputError("topology has no GPU node")
        host_of: dict[str, str] = {}
        for n in gpus:
            nbrs = list(g.neighbors(n))
            if len(nbrs) != 1 or kind[nbrs[0]] != "host":
                raise InputError(
                    f"topology GPU {n!r} must have exactly one edge, to a host; "
                    f"it is linked to {sorted(nbrs)}"
                )
            host_of[n] = nbrs[0]
        if not nx.is_connected(g):
            parts = sorted(sorted(c)[0] for c in nx.connected_components(g))
            raise InputError(
                f"topology is disconnected: {len(parts)} components, containing "
                f"{', '.join(repr(p) for p in parts[:4])}"
            )
        self._graph = nx.freeze(g)
        self._kind: dict[str, str] = kind
        self.gpus: tuple[str, ...] = tuple(gpus)
        self.gpu_types: tuple[str, ...] = tuple(g.nodes[n]["gpu_type"] for n in gpus)
        self.hosts: tuple[str, ...] = tuple(n for n in g if kind[n] == "host")
        self.host_of: Mapping[str, str] = host_of
        self._group = {lvl: self._nearest_switch(lvl) for lvl in ("rack", "domain")}
        self._paths: dict[str, tuple[dict[str, float], dict[str, float]]] = {}

    def __eq__(self, other: object) -> bool:
        import networkx as nx

        if not isinstance(other, Topology):
            return NotImplemented
        return self.gpus == other.gpus and bool(nx.utils.graphs_equal(self._graph, other._graph))

    __hash__ = None  # type: ignore[assignment]

    @property
    def graph(self) -> nx.Graph:
        """A frozen copy of the graph (structure is read-only)."""
        return self._graph

    def kind(self, node: str) -> str:
        """The ``kind`` of a node."""
        self._require(node)
        return self._kind[node]

    def _require(self, node: str) -> None:
        if node not in self._kind:
            raise UnknownNameError(f"unknown topology node {node!r}")

    # -- paths ------------------------------------------------------------------------------

    def _from(self, source: str) -> tuple[dict[str, float], dict[str, float]]:
        """Widest-path bottleneck and, among widest paths, least latency, from ``source``."""
        import networkx as nx

        if source not in self._paths:
            self._require(source)
            width = _widest(self._graph, source)
            latency: dict[str, float] = {}
            for b in sorted(set(width.values())):
                sub = self._graph.edge_subgraph(
                    (u, v) for u, v, d in self._graph.edges(data=True) if d["bandwidth"] >= b
                )
                dist = (
                    nx.single_source_dijkstra_path_length(sub, source, weight="latency")
                    if source in sub
                    else {}
                )
                for node, w in width.items():
                    if w == b:
                        latency[node] = dist.get(node, 0.0)
            self._paths[source] = (width, latency)
        return self._paths[source]

    def bottleneck_gbps(self, u: str, v: str) -> float:
        """Bottleneck bandwidth (Gbit/s) of the widest path between ``u`` and ``v``.

        A node's bandwidth to itself is infinite.
        """
        self._require(v)
        return self._from(u)[0][v]

    def latency_s(self, u: str, v: str) -> float:
        """Summed latency (s) of the least-latency widest path between ``u`` and ``v``."""
        self._require(v)
        return self._from(u)[1][v]

    # -- levels -----------------------------------------------------------------------------

    def _nearest_switch(self, level: str) -> dict[str, str | None]:
        """For each host, the switch of ``level`` fewest hops away (ties: smallest id)."""
        import networkx as nx

        out: dict[str, str | None] = {}
        for h in self.hosts:
            best: tuple[int, str] | None = None
            for node, hops in nx.single_source_shortest_path_length(self._graph, h).items():
                if self._kind[node] == "switch" and self._graph.nodes[node].get("level") == level:
                    cand = (hops, node)
                    best = cand if best is None or cand < best else best
            out[h] = best[1] if best else None
        return out

    def _host(self, node: str) -> str:
        self._require(node)
        kind = self._kind[node]
        if kind == "gpu":
            return self.host_of[node]
        if kind == "host":
            return node
        raise InputError(f"topology node {node!r} is a switch, not a GPU or host")

    def rack(self, node: str) -> str | None:
        """The rack switch of a GPU's or host's host (the nearest switch with level 'rack')."""
        return self._group["rack"][self._host(node)]

    def domain(self, node: str) -> str | None:
        """The domain switch of a GPU's or host's host (nearest switch with level 'domain')."""
        return self._group["domain"][self._host(node)]

    def distance(self, u: str, v: str) -> Distance:
        """Distance class of two GPUs or hosts: same host, same rack, same domain, farther."""
        hu, hv = self._host(u), self._host(v)
        if hu == hv:
            return Distance.SAME_HOST
        for level, cls in (("rack", Distance.SAME_RACK), ("domain", Distance.SAME_DOMAIN)):
            a, b = self._group[level][hu], self._group[level][hv]
            if a is not None and a == b:
                return cls
        return Distance.FARTHER

    # -- I/O --------------------------------------------------------------------------------

    def to_node_link(self) -> dict[str, Any]:
        """networkx node-link data with ``edges="edges"`` (the instance@1 ``topology``)."""
        import networkx as nx

        data: dict[str, Any] = nx.node_link_data(self._graph, edges="edges")
        return data

    @classmethod
    def from_node_link(cls, data: Mapping[str, Any]) -> Topology:
        """Read node-link data written with ``edges="edges"``; the edge count is checked."""
        import networkx as nx

        if not isinstance(data, Mapping):
            raise InputError("topology must be a JSON object (networkx node-link data)")
        if "edges" not in data or "nodes" not in data:
            raise InputError(
                "topology must have 'nodes' and 'edges' (node-link data written "
                'with edges="edges")'
            )
        if data.get("directed") or data.get("multigraph"):
            raise InputError("topology must be undirected and not a multigraph")
        nodes = data["nodes"]
        if not isinstance(nodes, list) or not all(isinstance(n, Mapping) for n in nodes):
            raise InputError("topology 'nodes' must be a list of objects")
        seen: set[Any] = set()
        for n in nodes:
            node_id = n.get("id")
            if isinstance(node_id, Hashable) and node_id in seen:
                raise InputError(f"topology lists node {node_id!r} twice")
            if isinstance(node_id, Hashable):
                seen.add(node_id)
        try:
            graph = nx.node_link_graph(dict(data), directed=False, multigraph=False, edges="edges")
        except (KeyError, TypeError, ValueError, nx.NetworkXError) as exc:
            raise InputError(f"topology is not valid node-link data: {exc}") from None
        if graph.number_of_edges() != len(data["edges"]):
            raise InputError(
                f"topology lists {len(data['edges'])} edges but "
                f"{graph.number_of_edges()} are distinct"
            )
        return cls(graph)


def _widest(graph: nx.Graph, source: str) -> dict[str, float]:
    """Max-bottleneck (widest path) values from ``source`` by a Dijkstra variant."""
    best = {source: math.inf}
    heap = [(-math.inf, source)]
    done: set[str] = set()
    while heap:
        negw, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, d in graph[u].items():
            w = min(-negw, d["bandwidth"])
            if w > best.get(v, -1.0):
                best[v] = w
                heapq.heappush(heap, (-w, v))
    return best


#: Default link parameters of :func:`tree_topology`, by the lower end of the link. Assumed
#: values: PCIe 3.0 x16 (~128 Gbit/s) between a GPU and its host, 25 Gbit/s host NICs (the Hare
#: testbed), 100 Gbit/s rack and 400 Gbit/s domain uplinks.
DEFAULT_BANDWIDTH: Mapping[str, float] = {
    "gpu": 128.0,
    "host": 25.0,
    "rack": 100.0,
    "domain": 400.0,
}
DEFAULT_LATENCY: Mapping[str, float] = {"gpu": 1e-6, "host": 5e-6, "rack": 1e-5, "domain": 2e-5}


def tree_topology(
    host_gpus: Sequence[Sequence[str]],
    *,
    hosts_per_rack: int | None = None,
    racks_per_domain: int | None = None,
    bandwidth: Mapping[str, float] = DEFAULT_BANDWIDTH,
    latency: Mapping[str, float] = DEFAULT_LATENCY,
) -> nx.Graph:
    """Build a tree cluster: GPUs → hosts → racks → domains → one core switch. Node ids are
    ``h{i}`` for hosts, ``h{i}/g{k}`` for GPUs, ``r{i}``, ``d{i}`` and ``core``.

    Parameters
    ----------
    host_gpus
        For each host, the GPU types of its GPUs, e.g. ``[["V100"] * 4, ["K80", "K80"]]``.
    hosts_per_rack, racks_per_domain
        Group consecutive hosts into racks and consecutive racks into domains; ``None`` skips
        the level (hosts, or racks, link straight to the level above).
    bandwidth, latency
        Per link level, keyed by the lower end: ``gpu`` (GPU–host), ``host`` (host uplink),
        ``rack`` (rack uplink), ``domain`` (domain uplink).
    """
    import networkx as nx

    for key in ("gpu", "host", "rack", "domain"):
        if key not in bandwidth:
            raise InputError(f"tree_topology: bandwidth has no value for level {key!r}")
    for name, value in (
        ("hosts_per_rack", hosts_per_rack),
        ("racks_per_domain", racks_per_domain),
    ):
        if value is not None and (not isinstance(value, int) or value < 1):
            raise InputError(f"tree_topology: {name} must be a positive integer")
    g = nx.Graph()
    g.add_node("core", kind="switch", level="core")

    def link(u: str, v: str, level: str) -> None:
        g.add_edge(u, v, bandwidth=float(bandwidth[level]), latency=float(latency.get(level, 0.0)))

    n_racks = 0
    for h, types in enumerate(host_gpus):
        host = f"h{h}"
        g.add_node(host, kind="host")
        for k, gtype in enumerate(types):
            gpu = f"{host}/g{k}"
            g.add_node(gpu, kind="gpu", gpu_type=gtype)
            link(gpu, host, "gpu")
        if hosts_per_rack is None:
            link(host, "core", "host")
            continue
        rack = h // hosts_per_rack
        if f"r{rack}" not in g:
            n_racks += 1
            g.add_node(f"r{rack}", kind="switch", level="rack")
            if racks_per_domain is None:
                link(f"r{rack}", "core", "rack")
            else:
                dom = f"d{rack // racks_per_domain}"
                if dom not in g:
                    g.add_node(dom, kind="switch", level="domain")
                    link(dom, "core", "domain")
                link(f"r{rack}", dom, "rack")
        link(host, f"r{rack}", "host")
    return g


def hosts_of(
    types: Mapping[str, int] | Iterable[tuple[str, int]], gpus_per_host: int
) -> list[list[str]]:
    """Pack GPU counts by type onto hosts of ``gpus_per_host`` GPUs, one type per host.

    ``hosts_of({"V100": 8, "K80": 4}, 4)`` gives two V100 hosts and one K80 host; a last,
    partly filled host per type is allowed.
    """
    if gpus_per_host < 1:
        raise InputError("gpus_per_host must be >= 1")
    items = types.items() if isinstance(types, Mapping) else types
    hosts: list[list[str]] = []
    for gtype, count in items:
        for start in range(0, count, gpus_per_host):
            hosts.append([gtype] * min(gpus_per_host, count - start))
    return hosts
