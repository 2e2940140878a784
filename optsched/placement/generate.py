"""Seeded placement instances in the settings of Liquid's evaluation (TPDS'22 §7).

Defaults follow the reference code's distributed jobs: 1 PS + 2 workers, every container
1 GPU, 4 CPUs, 4 GB of memory and 8 GB of GPU memory (the released experiments'
``jobModel.py``), on ``hosts`` hosts of
``gpus_per_host`` GPUs (``jobs_per_host`` × ``hosts`` jobs when given, so the load stays put as
the cluster grows). ``workers`` draws the number of workers per job, ``bandwidth`` the
job's predicted network weight; ``busy`` is the fraction of GPUs already held by other work.
Liquid's two clusters: 5 hosts × 4 K80 (12 GB, 24 cores, 188 GB, 10 Gbit/s) and 20 hosts ×
2 T4 (16 GB, 48 vCPUs, 186 GB, 15 Gbit/s); ``host_gbps`` sets the host links' speed (default:
:data:`~optsched.topology.DEFAULT_BANDWIDTH`'s). The placement cost does not depend on link
speeds (:mod:`optsched.placement.cost`), only durations do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from optsched.errors import InputError
from optsched.generate import check_generation_size
from optsched.limits import MAX_VALUE
from optsched.placement.model import Container, PlacementInstance, PlacementJob
from optsched.topology import DEFAULT_BANDWIDTH, Topology, tree_topology


@dataclass(frozen=True)
class PlacementSpec:
    """Parameters of :func:`generate_placement` (ranges are inclusive pairs)."""

    jobs: int = 4
    jobs_per_host: float | None = None
    hosts: int = 5
    gpus_per_host: int = 4
    gpu_type: str = "K80"
    gpu_memory: float = 12288.0
    cpus: float = 24.0
    memory: float = 188 * 1024.0
    hosts_per_rack: int | None = None
    racks_per_domain: int | None = None
    workers: tuple[int, int] = (2, 2)
    ps_gpus: int = 1
    bandwidth: tuple[int, int] = (1, 1)
    busy: float = 0.0
    host_gbps: float | None = None

    def __post_init__(self) -> None:
        if min(self.jobs, self.hosts, self.gpus_per_host) < 1:
            raise InputError("placement generator: jobs, hosts, gpus_per_host must be >= 1")
        if not 1 <= self.workers[0] <= self.workers[1]:
            raise InputError("placement generator: workers must be a range of integers >= 1")
        if not 0 <= self.busy < 1:
            raise InputError(
                f"placement generator: busy (--busy) must be in [0, 1), got {self.busy!r}"
            )
        for name in ("gpu_memory", "cpus", "memory"):
            value = getattr(self, name)
            if not 0 < value <= MAX_VALUE:
                raise InputError(
                    f"placement generator: {name} must be in (0, {MAX_VALUE:g}], got {value!r}"
                )
        if self.host_gbps is not None and not 0 < self.host_gbps <= MAX_VALUE:
            raise InputError(
                f"placement generator: host_gbps must be in (0, {MAX_VALUE:g}], "
                f"got {self.host_gbps!r}"
            )
        if self.jobs_per_host is not None and not 0 < self.jobs_per_host <= MAX_VALUE:
            raise InputError(
                f"placement generator: jobs_per_host must be > 0, got {self.jobs_per_host!r}"
            )
        check_generation_size(
            f"--jobs {self.n_jobs} --hosts {self.hosts} --gpus-per-host {self.gpus_per_host}",
            jobs=self.n_jobs,
            gpus=self.hosts * self.gpus_per_host,
            tasks=self.n_jobs * (1 + self.workers[1]),
        )

    @property
    def n_jobs(self) -> int:
        """The number of jobs: ``jobs``, or ``jobs_per_host`` × ``hosts`` when given."""
        return (
            self.jobs
            if self.jobs_per_host is None
            else max(1, round(self.jobs_per_host * self.hosts))
        )


def generate_placement(
    spec: PlacementSpec, seed: int, *, name: str | None = None
) -> PlacementInstance:
    """A random placement instance drawn from ``spec`` with ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    n_jobs = spec.n_jobs
    links = dict(DEFAULT_BANDWIDTH)
    if spec.host_gbps is not None:
        links["host"] = spec.host_gbps
    graph = tree_topology(
        [[spec.gpu_type] * spec.gpus_per_host] * spec.hosts,
        hosts_per_rack=spec.hosts_per_rack,
        racks_per_domain=spec.racks_per_domain,
        bandwidth=links,
    )
    for _, attrs in graph.nodes(data=True):
        if attrs["kind"] == "host":
            attrs.update(cpus=spec.cpus, memory=spec.memory)
        elif attrs["kind"] == "gpu":
            attrs.update(gpu_memory=spec.gpu_memory, busy=bool(rng.random() < spec.busy))
    jobs = []
    for j in range(n_jobs):
        n_workers = int(rng.integers(spec.workers[0], spec.workers[1] + 1))
        containers = [
            Container(
                "ps0",
                "ps",
                gpus=spec.ps_gpus,
                cpus=4,
                memory=4096,
                gpu_memory=8192 if spec.ps_gpus else 0,
            )
        ]
        containers += [
            Container(f"w{k}", "worker", gpus=1, cpus=4, memory=4096, gpu_memory=8192)
            for k in range(n_workers)
        ]
        jobs.append(
            PlacementJob(
                f"j{j}",
                tuple(containers),
                float(rng.integers(spec.bandwidth[0], spec.bandwidth[1] + 1)),
            )
        )
    label = name or f"place-s{seed}-j{n_jobs}-h{spec.hosts}"
    return PlacementInstance(label, Topology(graph), tuple(jobs))
