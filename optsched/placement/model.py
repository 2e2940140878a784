"""Placement contracts (Liquid, TPDS'22): containers of jobs onto hosts of a topology.

``optsched/placement-instance@1``::

    {"format": "optsched/placement-instance@1", "name": "...",
     "topology": {...node-link data; hosts carry "cpus" and "memory" (MB), GPUs "gpu_memory"
                  (MB); a GPU with "busy": true is held by work outside the instance...},
     "jobs": [{"id": "j0", "bandwidth": 1.0, "one_per_host": false,
               "containers": [{"id": "ps0", "role": "ps", "gpus": 0, "cpus": 4,
                               "memory": 4096, "gpu_memory": 0}, ...]}]}

``optsched/placement@1``::

    {"format": "optsched/placement@1", "instance": "...",
     "assignments": [{"job": "j0", "container": "w0", "host": "h0", "gpus": ["h0/g1"]}]}

``bandwidth`` is the job's predicted network weight (Liquid §2.2: it weighs every PS–worker
pair of the job); ``one_per_host`` asks for at most one container of the job per host (the
paper's Algorithm 1). Everything is validated at construction; errors name the job, container,
host or field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optsched.cluster_model import ROLES
from optsched.errors import InputError, UnknownNameError
from optsched.limits import MAX_VALUE, is_number
from optsched.topology import Topology

INSTANCE_FORMAT = "optsched/placement-instance@1"
PLACEMENT_FORMAT = "optsched/placement@1"


def _amount(value: Any, what: str, *, integer: bool = False) -> float:
    """``value`` checked: a number (``integer``: an int, so 1.0 and -0.0 are refused too; bool
    never) in [0, MAX_VALUE]; InputError naming ``what`` otherwise."""
    if (
        not is_number(value)
        or (integer and not isinstance(value, int))
        or not 0 <= value <= MAX_VALUE
    ):
        kind = "an integer" if integer else "a number"
        raise InputError(f"{what} must be {kind} in [0, {MAX_VALUE:g}], got {value!r}")
    return value


@dataclass(frozen=True)
class Container:
    """A parameter server or worker and what it needs on one host."""

    id: str
    role: str
    gpus: int = 0
    cpus: float = 0.0
    memory: float = 0.0
    gpu_memory: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InputError(f"container id must be a non-empty string, got {self.id!r}")
        if self.role not in ROLES:
            raise InputError(
                f"container {self.id!r}: role must be one of {ROLES}, got {self.role!r}"
            )
        _amount(self.gpus, f"container {self.id!r}: gpus", integer=True)
        for name in ("cpus", "memory", "gpu_memory"):
            _amount(getattr(self, name), f"container {self.id!r}: {name}")


@dataclass(frozen=True)
class PlacementJob:
    """A job: containers, predicted bandwidth weight, optional one-container-per-host rule."""

    id: str
    containers: tuple[Container, ...]
    bandwidth: float = 1.0
    one_per_host: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InputError(f"job id must be a non-empty string, got {self.id!r}")
        object.__setattr__(self, "containers", tuple(self.containers))
        if not self.containers:
            raise InputError(f"job {self.id!r} has no container")
        ids = [c.id for c in self.containers]
        if len(set(ids)) != len(ids):
            raise InputError(f"job {self.id!r}: duplicate container id")
        _amount(self.bandwidth, f"job {self.id!r}: bandwidth")
        if not isinstance(self.one_per_host, bool):
            raise InputError(f"job {self.id!r}: one_per_host must be true or false")


@dataclass(frozen=True)
class PlacementInstance:
    """Jobs to place on the hosts of a topology; capacities come from node attributes.

    Derived at construction: ``host_gpus`` (each host's GPUs), ``busy`` (GPUs held by work
    outside the instance) and the hosts' ``capacity(host, "cpus" | "memory")`` and each GPU's
    ``gpu_memory(gpu)``; the hosts are ``topology.hosts``."""

    name: str
    topology: Topology
    jobs: tuple[PlacementJob, ...]
    host_gpus: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    busy: frozenset[str] = field(init=False, repr=False, compare=False)
    group_size: Mapping[tuple[str, str], int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError("placement instance name must be a non-empty string")
        object.__setattr__(self, "jobs", tuple(self.jobs))
        if not self.jobs:
            raise InputError("placement instance has no job")
        ids = [j.id for j in self.jobs]
        if len(set(ids)) != len(ids):
            raise InputError("duplicate job id in the placement instance")
        graph = self.topology.graph
        for h in self.topology.hosts:
            for name in ("cpus", "memory"):
                _amount(graph.nodes[h].get(name, 0), f"host {h!r}: {name}")
        host_gpus: dict[str, list[str]] = {h: [] for h in self.topology.hosts}
        for g in self.topology.gpus:
            _amount(graph.nodes[g].get("gpu_memory", 0), f"GPU {g!r}: gpu_memory")
            host_gpus[self.topology.host_of[g]].append(g)
        object.__setattr__(self, "host_gpus", {h: tuple(v) for h, v in host_gpus.items()})
        for g in self.topology.gpus:
            if not isinstance(graph.nodes[g].get("busy", False), bool):
                raise InputError(
                    f"GPU {g!r}: busy must be true or false, got {graph.nodes[g]['busy']!r}"
                )
        object.__setattr__(
            self,
            "busy",
            frozenset(g for g in self.topology.gpus if graph.nodes[g].get("busy", False)),
        )
        # hosts per rack and per domain, for the paper's distance (keyed by level, host)
        sizes: dict[tuple[str, str], int] = {}
        for level, of in (("rack", self.topology.rack), ("domain", self.topology.domain)):
            groups = [of(h) for h in self.topology.hosts]
            for h, grp in zip(self.topology.hosts, groups, strict=True):
                sizes[level, h] = groups.count(grp)
        object.__setattr__(self, "group_size", sizes)

    def capacity(self, host: str, resource: str) -> float:
        """``cpus`` or ``memory`` of a host (0 when the topology does not say)."""
        return float(self.topology.graph.nodes[host].get(resource, 0))

    def gpu_memory(self, gpu: str) -> float:
        return float(self.topology.graph.nodes[gpu].get("gpu_memory", 0))

    def job(self, job_id: str) -> PlacementJob:
        for job in self.jobs:
            if job.id == job_id:
                return job
        raise UnknownNameError(f"unknown job {job_id!r}")


@dataclass(frozen=True)
class Assignment:
    """One container on one host (and on these GPUs of that host)."""

    job: str
    container: str
    host: str
    gpus: tuple[str, ...] = ()


@dataclass(frozen=True)
class Placement:
    """Container → host assignments for a placement instance."""

    instance: str
    assignments: tuple[Assignment, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "assignments", tuple(self.assignments))


# -- dict I/O ------------------------------------------------------------------------------


def _only(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}")


def _object(data: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise InputError(f"{where} must be a JSON object")
    return data


def _check_format(data: Mapping[str, Any], expected: str) -> None:
    if "format" not in data:
        raise InputError(f"not an {expected} object: missing key 'format'")
    if data["format"] != expected:
        raise InputError(f"not an {expected} object (format {data['format']!r})")


def placement_instance_from_dict(data: Any) -> PlacementInstance:
    """Read a ``placement-instance@1`` object through the validating constructors."""
    data = _object(data, "placement instance")
    _check_format(data, INSTANCE_FORMAT)
    _only(data, {"format", "name", "topology", "jobs"}, "placement instance")
    for key in ("name", "topology", "jobs"):
        if key not in data:
            raise InputError(f"placement instance: missing {key!r}")
    if not isinstance(data["jobs"], list):
        raise InputError("placement instance: jobs must be a list")
    jobs = []
    for n, raw in enumerate(data["jobs"]):
        raw = _object(raw, f"job {n}")
        _only(raw, {"id", "containers", "bandwidth", "one_per_host"}, f"job {raw.get('id', n)!r}")
        if not isinstance(raw.get("containers"), list):
            raise InputError(f"job {raw.get('id', n)!r}: containers must be a list")
        containers = []
        for c in raw["containers"]:
            c = _object(c, f"job {raw.get('id', n)!r}: container")
            where = f"job {raw.get('id', n)!r}: container {c.get('id')!r}"
            _only(c, {"id", "role", "gpus", "cpus", "memory", "gpu_memory"}, where)
            for key in ("id", "role"):
                if key not in c:
                    raise InputError(f"{where}: missing {key!r}")
            if "gpus" in c:
                _amount(c["gpus"], f"{where}: gpus", integer=True)
            containers.append(Container(**c))
        jobs.append(
            PlacementJob(
                raw.get("id", ""),
                tuple(containers),
                raw.get("bandwidth", 1.0),
                raw.get("one_per_host", False),
            )
        )
    return PlacementInstance(data["name"], Topology.from_node_link(data["topology"]), tuple(jobs))


def placement_instance_to_dict(instance: PlacementInstance) -> dict[str, Any]:
    return {
        "format": INSTANCE_FORMAT,
        "name": instance.name,
        "topology": instance.topology.to_node_link(),
        "jobs": [
            {
                "id": j.id,
                "bandwidth": j.bandwidth,
                "one_per_host": j.one_per_host,
                "containers": [
                    {
                        "id": c.id,
                        "role": c.role,
                        "gpus": c.gpus,
                        "cpus": c.cpus,
                        "memory": c.memory,
                        "gpu_memory": c.gpu_memory,
                    }
                    for c in j.containers
                ],
            }
            for j in instance.jobs
        ],
    }


def placement_from_dict(data: Any) -> Placement:
    """Read a ``placement@1`` object (semantic problems are left to the checker)."""
    data = _object(data, "placement")
    _check_format(data, PLACEMENT_FORMAT)
    _only(data, {"format", "instance", "assignments"}, "placement")
    if not isinstance(data.get("instance"), str) or not data["instance"]:
        raise InputError(
            f"placement: instance must be the placement instance's name, got "
            f"{data.get('instance')!r}"
        )
    if not isinstance(data.get("assignments"), list):
        raise InputError("placement: assignments must be a list")
    out = []
    for n, a in enumerate(data["assignments"]):
        a = _object(a, f"assignment {n}")
        _only(a, {"job", "container", "host", "gpus"}, f"assignment {n}")
        for key in ("job", "container", "host"):
            if not isinstance(a.get(key), str):
                raise InputError(f"assignment {n}: {key} must be a string")
        gpus = a.get("gpus", [])
        if not isinstance(gpus, list) or not all(isinstance(g, str) for g in gpus):
            raise InputError(f"assignment {n}: gpus must be a list of GPU ids")
        out.append(Assignment(a["job"], a["container"], a["host"], tuple(gpus)))
    return Placement(data["instance"], tuple(out))


def placement_to_dict(placement: Placement) -> dict[str, Any]:
    return {
        "format": PLACEMENT_FORMAT,
        "instance": placement.instance,
        "assignments": [
            {"job": a.job, "container": a.container, "host": a.host, "gpus": list(a.gpus)}
            for a in placement.assignments
        ],
    }


def containers(instance: PlacementInstance) -> Sequence[tuple[PlacementJob, Container]]:
    """Every (job, container) of the instance, in file order."""
    return [(job, c) for job in instance.jobs for c in job.containers]


def placement_from_hosts(
    instance: PlacementInstance, host_of: Mapping[tuple[str, str], str]
) -> Placement:
    """The placement of a (job id, container id) → host map, with concrete GPUs: on each
    host, containers with the largest GPU-memory needs first take the free GPUs with the most
    memory (never fails when the host's threshold counts hold, the GPU sets being nested).
    A container the rule cannot serve gets fewer GPUs, which the checker reports."""
    free = {
        h: sorted(
            (g for g in gpus if g not in instance.busy), key=instance.gpu_memory, reverse=True
        )
        for h, gpus in instance.host_gpus.items()
    }
    given: dict[tuple[str, str], tuple[str, ...]] = {}
    pairs = sorted(containers(instance), key=lambda jc: -jc[1].gpu_memory)
    for job, c in pairs:
        host = host_of[job.id, c.id]
        take = [g for g in free.get(host, []) if instance.gpu_memory(g) >= c.gpu_memory][: c.gpus]
        free[host] = [g for g in free.get(host, []) if g not in take]
        given[job.id, c.id] = tuple(take)
    return Placement(
        instance.name,
        tuple(
            Assignment(job.id, c.id, host_of[job.id, c.id], given[job.id, c.id])
            for job, c in containers(instance)
        ),
    )
