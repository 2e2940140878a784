"""The independent placement checker: every violation, and the recomputed cost.

Violation kinds: ``instance`` (the placement names another instance), ``unknown-job``,
``unknown-container``, ``unknown-host``, ``duplicate``,
``missing``, ``gpu-count`` (a container not given exactly as many GPUs as it asks),
``gpu-host`` (a GPU that is unknown or on another host), ``gpu-taken`` (a GPU busy or given
twice), ``gpu-memory`` (a GPU with less memory than the container needs), ``capacity`` (a
host's CPUs or memory exceeded), ``one-per-host`` (two containers of such a job on one host).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from optsched.check import Verdict, Violation
from optsched.placement.cost import CostBreakdown, CostModel, placement_cost
from optsched.placement.model import Placement, PlacementInstance

TOL = 1e-9


def _violation(
    kind: str,
    message: str,
    job: str | None = None,
    container: str | None = None,
    host: str | None = None,
    gpu: str | None = None,
) -> Violation:
    return Violation(kind, message, job, gpu=gpu, container=container, host=host)


@dataclass(frozen=True)
class PlacementReport(Verdict):
    """What :func:`check_placement` found; ``cost`` only when every container is placed once on
    a known host."""

    violations: tuple[Violation, ...]
    cost: CostBreakdown | None


def check_placement(
    instance: PlacementInstance, placement: Placement, model: CostModel | None = None
) -> PlacementReport:
    """Check ``placement`` against ``instance``; recompute its cost under ``model``."""
    out: list[Violation] = []
    topo = instance.topology
    hosts = set(topo.hosts)
    wanted = {(job.id, c.id): c for job in instance.jobs for c in job.containers}
    jobs = {job.id: job for job in instance.jobs}
    host_of: dict[tuple[str, str], str] = {}
    cpus: dict[str, float] = defaultdict(float)
    memory: dict[str, float] = defaultdict(float)
    holder: dict[str, tuple[str, str]] = {}
    per_host: dict[tuple[str, str], list[str]] = defaultdict(list)
    misplaced: set[tuple[str, str]] = set()  # reported as unknown-host, not as missing
    if placement.instance != instance.name:
        out.append(
            _violation(
                "instance",
                f"placement is for instance {placement.instance!r}, not {instance.name!r}",
            )
        )
    for a in placement.assignments:
        key = (a.job, a.container)
        if a.job not in jobs:
            out.append(_violation("unknown-job", f"unknown job {a.job!r}", a.job))
            continue
        if key not in wanted:
            out.append(
                _violation(
                    "unknown-container", f"job {a.job!r} has no container {a.container!r}", *key
                )
            )
            continue
        if a.host not in hosts:
            misplaced.add(key)
            out.append(
                _violation(
                    "unknown-host", f"{a.job}/{a.container}: unknown host {a.host!r}", *key, a.host
                )
            )
            continue
        if key in host_of:
            out.append(
                _violation("duplicate", f"{a.job}/{a.container} is placed twice", *key, a.host)
            )
            continue
        c = wanted[key]
        host_of[key] = a.host
        per_host[a.job, a.host].append(a.container)
        cpus[a.host] += c.cpus
        memory[a.host] += c.memory
        if len(a.gpus) != c.gpus:
            out.append(
                _violation(
                    "gpu-count",
                    f"{a.job}/{a.container} asks for {c.gpus} GPUs, got {len(a.gpus)}",
                    *key,
                    a.host,
                )
            )
        for g in a.gpus:
            if g not in topo.host_of or topo.host_of[g] != a.host:
                out.append(
                    _violation(
                        "gpu-host",
                        f"{a.job}/{a.container}: GPU {g!r} is not a GPU of host {a.host!r}",
                        *key,
                        a.host,
                        g,
                    )
                )
                continue
            if g in instance.busy or g in holder:
                other = "busy" if g in instance.busy else f"given to {'/'.join(holder[g])}"
                out.append(
                    _violation(
                        "gpu-taken",
                        f"{a.job}/{a.container}: GPU {g!r} is {other}",
                        *key,
                        a.host,
                        g,
                    )
                )
            holder.setdefault(g, key)
            if instance.gpu_memory(g) + TOL < c.gpu_memory:
                out.append(
                    _violation(
                        "gpu-memory",
                        f"{a.job}/{a.container} needs "
                        f"{c.gpu_memory:g} MB of GPU memory; {g!r} has "
                        f"{instance.gpu_memory(g):g}",
                        *key,
                        a.host,
                        g,
                    )
                )
    for key in wanted:
        if key not in host_of and key not in misplaced:
            out.append(_violation("missing", f"{key[0]}/{key[1]} is not placed", *key))
    for host in sorted(set(cpus)):
        for name, used in (("cpus", cpus[host]), ("memory", memory[host])):
            cap = instance.capacity(host, name)
            if used > cap * (1 + TOL) + TOL:
                out.append(
                    _violation(
                        "capacity", f"host {host!r}: {name} {used:g} > capacity {cap:g}", host=host
                    )
                )
    for (job_id, host), names in sorted(per_host.items()):
        if jobs[job_id].one_per_host and len(names) > 1:
            out.append(
                _violation(
                    "one-per-host",
                    f"job {job_id!r} has {len(names)} containers on host {host!r}",
                    job_id,
                    host=host,
                )
            )
    complete = len(host_of) == len(wanted)
    cost = placement_cost(instance, host_of, model) if complete else None
    return PlacementReport(tuple(out), cost)
