"""The scheduling instance: GPUs, jobs, execution mode (docs/model.md).

An :class:`Instance` is validated once at construction and immutable afterwards. It exposes
the dense matrices ``compute[j, g]`` and ``sync[j, g]`` over jobs × GPUs (seconds; ``inf``
marks a GPU the job cannot use) that every method reads. It stores them compactly, per GPU
*class* (GPUs whose columns agree by construction: one type, and one GPU each when some job's
sync depends on the GPU), so that a trace of 100,000 jobs on 2,000 GPUs fits in memory; the
dense matrices are built on first use. Building and validating an instance needs no NumPy
(:meth:`Instance.compute_of` and :meth:`Instance.sync_of` read single values), so the checker
starts without importing it; the arrays are NumPy views made on first use.
"""

from __future__ import annotations

import bisect
import copyreg
import math
import sys
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from optsched.cluster_model import NO_PROFILE, ClusterProfile, ClusterSpec
from optsched.errors import InputError, UnknownNameError
from optsched.limits import MAX_FACTOR, MAX_TASKS, MAX_VALUE, MIN_POSITIVE, is_bounded, seconds_map
from optsched.schedule import MODES
from optsched.topology import Topology
from optsched.workloads import Catalog, default_catalog

if TYPE_CHECKING:
    import numpy as np


def _frozen(values: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(values)


# Instances, jobs and profiles hold read-only mappings; pickle them (worker processes, Results
# with their simulation) as the plain dicts they wrap, frozen again on loading.
copyreg.pickle(MappingProxyType, lambda proxy: (_frozen, (dict(proxy),)))

_is_number = is_bounded  # a finite int or float (not a bool) of magnitude <= MAX_VALUE


def _is_int(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int)


@dataclass(frozen=True)
class GPU:
    """One GPU: its id, its type, its host (from a topology, or given) and its memory (MB;
    None = not limited; instance@2)."""

    id: str
    type: str
    host: str | None = None
    memory: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InputError(f"GPU id must be a non-empty string, got {self.id!r}")
        if not isinstance(self.type, str) or not self.type:
            raise InputError(f"GPU {self.id!r}: type must be a non-empty string")
        if self.host is not None and (not isinstance(self.host, str) or not self.host):
            raise InputError(f"GPU {self.id!r}: host must be a non-empty string")
        if self.memory is not None:
            if not _is_number(self.memory) or self.memory <= 0:
                raise InputError(
                    f"GPU {self.id!r}: memory must be a number in "
                    f"(0, {MAX_VALUE:g}], got {self.memory!r}"
                )
            object.__setattr__(self, "memory", float(self.memory))


@dataclass(frozen=True, slots=True)
class Job:
    """A data-parallel training job: ``rounds`` rounds of ``tasks_per_round`` tasks.

    Compute time per task comes from ``compute`` ({GPU type: seconds}) or from a catalog
    ``workload`` × ``iters_per_task`` (exactly one of the two). Sync time comes from at most
    one of ``sync`` ({GPU type: s}), ``sync_by_gpu`` ({GPU id: s}) or ``sync_bytes`` + ``ps``
    (see :class:`Instance`); with none, sync is 0. Types absent from the cluster are ignored.

    ``cluster`` holds the job's fields of Liquid's cluster model (instance@2); None when
    it has none. A profile equal to ``ClusterProfile()`` is stored as None, so
    ``cluster is not None`` says whether the job uses the cluster model, and
    :attr:`profile` reads the fields either way. ``meta`` is free-form data, preserved.
    """

    id: str
    arrival: float = 0.0
    weight: float = 1.0
    rounds: int = 1
    tasks_per_round: int = 1
    compute: Mapping[str, float] | None = None
    workload: str | None = None
    iters_per_task: int | None = None
    sync: Mapping[str, float] | None = None
    sync_by_gpu: Mapping[str, float] | None = None
    sync_bytes: float | None = None
    ps: str | None = None
    cluster: ClusterProfile | None = None
    meta: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InputError(f"job id must be a non-empty string, got {self.id!r}")
        where = f"job {self.id!r}"
        if not _is_number(self.arrival) or self.arrival < 0:
            raise InputError(
                f"{where}: arrival must be a number in [0, {MAX_VALUE:g}], got {self.arrival!r}"
            )
        if not _is_number(self.weight) or self.weight < MIN_POSITIVE:
            raise InputError(
                f"{where}: weight must be a number in [{MIN_POSITIVE:g}, "
                f"{MAX_VALUE:g}], got {self.weight!r}"
            )
        for name in ("rounds", "tasks_per_round"):
            value = getattr(self, name)
            if not _is_int(value) or not 1 <= value <= MAX_TASKS:
                raise InputError(
                    f"{where}: {name} must be an integer in [1, {MAX_TASKS:,}], got {value!r}"
                )
        if self.rounds * self.tasks_per_round > MAX_TASKS:
            raise InputError(
                f"{where}: rounds × tasks_per_round = "
                f"{self.rounds * self.tasks_per_round:,} tasks; at most "
                f"{MAX_TASKS:,} tasks fit in memory"
            )
        if (self.compute is None) == (self.workload is None):
            raise InputError(f"{where}: give exactly one of 'compute' and 'workload'")
        if self.compute is not None:
            object.__setattr__(
                self, "compute", seconds_map(self.compute, f"{where}: compute", positive=True)
            )
            if self.iters_per_task is not None:
                raise InputError(f"{where}: iters_per_task goes with 'workload', not 'compute'")
        else:
            if not isinstance(self.workload, str) or not self.workload:
                raise InputError(f"{where}: workload must be a non-empty string")
            if self.iters_per_task is not None and (
                not _is_int(self.iters_per_task) or not 1 <= self.iters_per_task <= MAX_FACTOR
            ):
                raise InputError(
                    f"{where}: iters_per_task must be an integer in "
                    f"[1, {MAX_FACTOR:g}], got {self.iters_per_task!r}"
                )
        given = [k for k in ("sync", "sync_by_gpu", "sync_bytes") if getattr(self, k) is not None]
        if len(given) > 1:
            raise InputError(
                f"{where}: give at most one of 'sync', 'sync_by_gpu', "
                f"'sync_bytes' (got {', '.join(given)})"
            )
        for name in ("sync", "sync_by_gpu"):
            if getattr(self, name) is not None:
                object.__setattr__(
                    self,
                    name,
                    seconds_map(getattr(self, name), f"{where}: {name}", positive=False),
                )
        if (self.sync_bytes is None) != (self.ps is None):
            raise InputError(f"{where}: 'sync_bytes' and 'ps' go together")
        if self.sync_bytes is not None and (
            not _is_number(self.sync_bytes) or self.sync_bytes < 0
        ):
            raise InputError(
                f"{where}: sync_bytes must be a number in [0, {MAX_VALUE:g}], "
                f"got {self.sync_bytes!r}"
            )
        if self.ps is not None and (not isinstance(self.ps, str) or not self.ps):
            raise InputError(f"{where}: ps must be a host id")
        if self.cluster is not None:
            if not isinstance(self.cluster, ClusterProfile):
                raise InputError(
                    f"{where}: cluster must be a ClusterProfile or None, got "
                    f"{type(self.cluster).__name__}"
                )
            roles = self.cluster.roles
            if roles is not None and len(roles) != self.tasks_per_round:
                raise InputError(
                    f"{where}: roles must list 'ps' or 'worker' for each of the "
                    f"{self.tasks_per_round} tasks of a round, got {roles!r}"
                )
            if self.cluster == NO_PROFILE:
                object.__setattr__(self, "cluster", None)
        if isinstance(self.meta, Mapping):  # free-form; a mapping is frozen at the top
            object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))

    @property
    def n_tasks(self) -> int:
        """Number of tasks of the job, ``rounds × tasks_per_round``."""
        return self.rounds * self.tasks_per_round

    @property
    def profile(self) -> ClusterProfile:
        """The job's cluster profile: ``cluster``, or the defaults when it is None."""
        return NO_PROFILE if self.cluster is None else self.cluster


@dataclass(frozen=True)
class Instance:
    """A validated scheduling instance (docs/model.md).

    Parameters
    ----------
    name
        Instance name; schedules refer to it.
    jobs
        The jobs; ids must be unique.
    gpus
        The GPUs in index order. May be omitted when ``topology`` is given (then GPU order is
        the topology's node order); if both are given, ids and types must agree.
    topology
        A networkx graph (or :class:`~optsched.topology.Topology`), needed for ``sync_bytes``.
    mode
        ``relaxed`` (Hare) or ``gang``; the mode the checker enforces by default.
    catalog
        Where ``workload`` names are looked up (default: the shipped catalog).
    cluster
        instance@2: the instance's part of Liquid's cluster model
        (:class:`~optsched.cluster_model.ClusterSpec`: GPU sharing under a ``share_cap``,
        ``link_contention``); the default changes nothing.

    Attributes
    ----------
    compute, sync
        Read-only ``float`` arrays of shape (jobs, GPUs); ``inf`` where a job is ineligible.
        With ``sync_bytes`` + ``ps``: ``sync[j, g] = 2·8·sync_bytes / (1e9·bottleneck(g, ps))
        + latency(g, ps)`` (push gradients, pull parameters). Built on first use from the
        compact form below, so an instance of many jobs and GPUs that only the simulator
        reads never holds the dense matrices.
    gpu_class, class_compute, class_sync
        The compact form: each GPU's class, and read-only (jobs, classes) arrays with
        ``compute[j, g] == class_compute[j, gpu_class[g]]`` (the same for ``sync``).
    class_members
        The GPUs of each class, in index order.

    Raises
    ------
    InputError
        On any invalid value; :class:`UnknownNameError` for references to unknown GPUs,
        hosts or workloads. The message names the job, GPU or field.
    """

    name: str
    jobs: tuple[Job, ...]
    gpus: tuple[GPU, ...] = ()
    topology: Topology | None = None
    mode: str = "relaxed"
    catalog: Catalog | None = field(default=None, repr=False, compare=False)
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    class_members: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    # the compact form without NumPy: each GPU's class, and the (jobs, classes) times row
    # by row; the NumPy arrays are views of these, made on first use
    _class_of: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _compute: array[float] = field(init=False, repr=False, compare=False)
    _sync: array[float] = field(init=False, repr=False, compare=False)
    _arrays: dict[str, np.ndarray] = field(init=False, repr=False, compare=False)
    # space sharing: (workload, other workload, GPU type) -> the rate of the first
    _colocation: Mapping[tuple[str, str, str], float] = field(
        init=False, repr=False, compare=False
    )
    job_index: Mapping[str, int] = field(init=False, repr=False, compare=False)
    gpu_index: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"instance name must be a non-empty string, got {self.name!r}")
        if self.mode not in MODES:
            raise InputError(f"mode must be one of {MODES}, got {self.mode!r}")
        jobs = tuple(self.jobs)
        if not jobs:
            raise InputError("instance has no job")
        for job in jobs:
            if not isinstance(job, Job):
                raise InputError(f"jobs must be Job objects, got {type(job).__name__}")
        tasks = sum(job.n_tasks for job in jobs)
        if tasks > MAX_TASKS:
            raise InputError(f"instance has {tasks:,} tasks; at most {MAX_TASKS:,} fit in memory")
        set_(self, "jobs", jobs)
        topo = self.topology
        if topo is not None and not isinstance(topo, Topology):
            networkx = sys.modules.get("networkx")  # not imported: topo cannot be a Graph
            if networkx is None or not isinstance(topo, networkx.Graph):
                raise InputError("topology must be a networkx.Graph or a Topology")
            topo = Topology(topo)
        set_(self, "topology", topo)
        set_(self, "gpus", self._resolve_gpus(tuple(self.gpus), topo))
        if not isinstance(self.cluster, ClusterSpec):
            raise InputError(f"cluster must be a ClusterSpec, got {self.cluster!r}")
        if self.cluster.link_contention and any(g.host is None for g in self.gpus):
            raise InputError(
                "link_contention needs every GPU's host (a topology or 'host' in 'gpus')"
            )
        if self.needs_cluster_model:
            if self.mode != "gang":
                raise InputError(
                    "the cluster fields of instance@2 (GPU sharing and memory, "
                    "link contention, a job's cluster profile) need gang mode"
                )
            if any(j.profile.placement_factor for j in jobs) and any(
                g.host is None for g in self.gpus
            ):
                raise InputError(
                    "placement_factor needs every GPU's host (a topology or 'host' in 'gpus')"
                )
        set_(self, "job_index", MappingProxyType(_index(jobs, "job")))
        set_(self, "gpu_index", MappingProxyType(_index(self.gpus, "GPU")))
        set_(self, "_arrays", {})
        classes = self._classes()
        members: list[list[int]] = [[] for _ in range(max(classes) + 1)]
        for g, c in enumerate(classes):
            members[c].append(g)
        set_(self, "_class_of", classes)
        set_(self, "class_members", tuple(tuple(m) for m in members))
        # the shipped catalog is read only for jobs that name a workload
        uses_catalog = any(job.compute is None for job in self.jobs)
        catalog = self.catalog or (default_catalog() if uses_catalog else Catalog({}))
        compute = self._compute_matrix(catalog, self.class_members)
        set_(self, "_compute", compute)
        self._check_actual_memory(self.class_members)
        set_(self, "_sync", self._sync_matrix(self.class_members))
        self._check_horizon()
        set_(self, "_colocation", self._colocation_rates(catalog))

    def __getstate__(self) -> dict[str, Any]:
        # pickle the compact form only: the NumPy views are made again on first use
        return {**self.__dict__, "_arrays": {}}

    @staticmethod
    def _resolve_gpus(gpus: tuple[GPU, ...], topo: Topology | None) -> tuple[GPU, ...]:
        for gpu in gpus:
            if not isinstance(gpu, GPU):
                raise InputError(f"gpus must be GPU objects, got {type(gpu).__name__}")
        if topo is None:
            if not gpus:
                raise InputError("instance needs 'gpus' or 'topology'")
            return gpus
        from_topo = {
            g: (t, topo.host_of[g]) for g, t in zip(topo.gpus, topo.gpu_types, strict=True)
        }
        memory = {g: topo.graph.nodes[g].get("gpu_memory") for g in topo.gpus}
        if not gpus:
            return tuple(GPU(g, t, h, memory[g]) for g, (t, h) in from_topo.items())
        listed = {g.id for g in gpus}
        for gpu in gpus:
            if gpu.id not in from_topo:
                raise InputError(f"GPU {gpu.id!r} is in 'gpus' but not in the topology")
            ttype, host = from_topo[gpu.id]
            if gpu.type != ttype:
                raise InputError(
                    f"GPU {gpu.id!r}: type {gpu.type!r} in 'gpus' but {ttype!r} in the topology"
                )
            if gpu.host is not None and gpu.host != host:
                raise InputError(
                    f"GPU {gpu.id!r}: host {gpu.host!r} in 'gpus' but {host!r} in the topology"
                )
        missing = [g for g in from_topo if g not in listed]
        if missing:
            raise InputError(f"GPU {missing[0]!r} is in the topology but not in 'gpus'")
        return tuple(
            replace(
                g,
                host=from_topo[g.id][1],
                memory=g.memory if g.memory is not None else memory[g.id],
            )
            for g in gpus
        )

    def _types(self) -> tuple[list[str], tuple[int, ...]]:
        """The distinct GPU types, and each GPU's index into them."""
        types = sorted({g.type for g in self.gpus})
        position = {t: i for i, t in enumerate(types)}
        return types, tuple(position[g.type] for g in self.gpus)

    def _classes(self) -> tuple[int, ...]:
        """Each GPU's class: its type's index, or its own index when some job's sync is per
        GPU (``sync_by_gpu``, ``sync_bytes``)."""
        if any(job.sync_by_gpu is not None or job.sync_bytes is not None for job in self.jobs):
            return tuple(range(len(self.gpus)))
        return self._types()[1]

    def _colocation_rates(self, catalog: Catalog) -> dict[tuple[str, str, str], float]:
        """With space sharing, the catalog's co-location rates of every pair of the
        instance's workloads on its GPU types, where both directions are listed."""
        if not self.cluster.space_sharing:
            return {}
        names = sorted({job.workload for job in self.jobs if job.workload is not None})
        types = sorted({gpu.type for gpu in self.gpus})
        out = {}
        for a in names:
            for b in names:
                for t in types:
                    rate = catalog.colocated_rate(a, b, t)
                    if rate is not None and catalog.colocated_rate(b, a, t) is not None:
                        out[a, b, t] = rate
        return out

    def _rows(self, flat: array[float]) -> Sequence[array[float]]:
        """The rows (jobs) of a compact (jobs, classes) table."""
        width = len(self.class_members)
        return [flat[j * width : (j + 1) * width] for j in range(len(self.jobs))]

    def _compute_matrix(self, catalog: Catalog, members: Sequence[Sequence[int]]) -> array[float]:
        types = self._types()[0]
        class_type = [self.gpus[m[0]].type for m in members]
        size = [len(m) for m in members]
        compute = array("d")
        for job in self.jobs:
            if job.compute is not None:
                per_type = {t: job.compute.get(t, math.inf) for t in types}
            else:
                assert job.workload is not None  # guaranteed by Job
                if job.workload not in catalog.workloads:
                    raise UnknownNameError(
                        f"job {job.id!r}: unknown workload "
                        f"{job.workload!r} (not in the catalog; "
                        "optsched workloads lists it)"
                    )
                iters = job.iters_per_task or 1
                per_type = {
                    t: iters * (catalog.seconds(job.workload, t) or math.inf) for t in types
                }
            row = [per_type[t] for t in class_type]
            compute.extend(row)
            finite = [c for c, v in enumerate(row) if math.isfinite(v)]
            if job.workload is not None and any(row[c] > MAX_VALUE for c in finite):
                raise InputError(
                    f"job {job.id!r}: iters_per_task {job.iters_per_task} × "
                    f"workload {job.workload!r} exceeds {MAX_VALUE:g} s a task"
                )
            eligible = sum(size[c] for c in finite)
            need = job.tasks_per_round if self.mode == "gang" else 1
            if eligible < need:
                own = [t for t in types if per_type[t] < math.inf]
                raise InputError(
                    f"job {job.id!r}: {eligible} eligible GPU(s), needs {need} in {self.mode} "
                    f"mode (its GPU types in the cluster: {own or 'none'}; cluster types: "
                    f"{types})"
                )
        return compute

    def _check_actual_memory(self, members: Sequence[Sequence[int]]) -> None:
        """A job's predicted GPU memory must fit enough of the GPUs it can run on for one
        round (else no scheduler could start it), and with ``actual`` values its actual GPU
        memory must fit alone on every GPU it can run on: a round that runs out of memory is
        re-run (models/cluster-execution.md), and this keeps a re-run alone on a GPU from
        failing for ever."""
        # per class, its GPUs' memory limits ascending (inf: none)
        limits = [sorted(_limit(self.gpus[g].memory) for g in m) for m in members]
        for job, row in zip(self.jobs, self._rows(self._compute), strict=True):
            usable = [c for c, v in enumerate(row) if math.isfinite(v)]
            profile = job.profile
            if profile.gpu_memory:
                room = sum(
                    len(limits[c]) - bisect.bisect_left(limits[c], profile.gpu_memory)
                    for c in usable
                )
                if room < job.tasks_per_round:
                    raise InputError(
                        f"job {job.id!r}: predicted GPU memory "
                        f"{profile.gpu_memory:g} MB fits {room} of the GPUs it can "
                        f"run on, fewer than its {job.tasks_per_round} tasks per "
                        "round (it could never be started)"
                    )
            if profile.actual is None:
                continue
            need = profile.actual_gpu_memory
            if not any(limits[c][0] < need for c in usable):
                continue
            for g in sorted(g for c in usable for g in members[c]):
                gpu = self.gpus[g]
                if need > _limit(gpu.memory):
                    raise InputError(
                        f"job {job.id!r}: actual GPU memory {need:g} MB exceeds "
                        f"the {gpu.memory:g} MB of GPU {gpu.id!r}, which it can "
                        "run on (it could never train there)"
                    )

    def _sync_matrix(self, members: Sequence[Sequence[int]]) -> array[float]:
        """The sync table, ``inf`` where the job cannot run."""
        sync = array("d")
        for job, compute in zip(self.jobs, self._rows(self._compute), strict=True):
            where = f"job {job.id!r}"
            usable = [c for c, v in enumerate(compute) if math.isfinite(v)]
            row = [0.0 if math.isfinite(v) else math.inf for v in compute]
            if job.sync is not None:
                for c in usable:
                    gpu = self.gpus[members[c][0]]
                    if gpu.type not in job.sync:
                        raise InputError(
                            f"{where}: sync has no value for GPU type "
                            f"{gpu.type!r} (eligible GPU {gpu.id!r})"
                        )
                    row[c] = job.sync[gpu.type]
            elif job.sync_by_gpu is not None:  # one GPU per class
                for gid in job.sync_by_gpu:
                    if gid not in self.gpu_index:
                        raise UnknownNameError(f"{where}: sync_by_gpu names unknown GPU {gid!r}")
                for c in usable:
                    gpu = self.gpus[members[c][0]]
                    if gpu.id not in job.sync_by_gpu:
                        raise InputError(
                            f"{where}: sync_by_gpu has no value for eligible GPU {gpu.id!r}"
                        )
                    row[c] = job.sync_by_gpu[gpu.id]
            elif job.sync_bytes is not None:  # one GPU per class
                for c in usable:
                    row[c] = self._sync_from_bytes(job, self.gpus[members[c][0]])
            sync.extend(row)
        return sync

    def _sync_from_bytes(self, job: Job, gpu: GPU) -> float:
        topo = self.topology
        if topo is None:
            raise InputError(f"job {job.id!r}: sync_bytes + ps needs a topology")
        assert job.ps is not None and job.sync_bytes is not None  # guaranteed by Job
        if job.ps not in topo.hosts:
            raise UnknownNameError(f"job {job.id!r}: ps {job.ps!r} is not a host of the topology")
        gbps = topo.bottleneck_gbps(gpu.id, job.ps)
        seconds = 2 * 8 * job.sync_bytes / (1e9 * gbps) + topo.latency_s(gpu.id, job.ps)
        if not seconds <= MAX_VALUE:
            raise InputError(
                f"job {job.id!r}: sync_bytes {job.sync_bytes:g} over "
                f"{gbps:g} Gbit/s to ps {job.ps!r} takes {seconds:g} s > "
                f"{MAX_VALUE:g} s"
            )
        return seconds

    def _check_horizon(self) -> None:
        """Refuse an instance whose horizon — its latest arrival plus all its work done one
        task after another, each on its slowest eligible GPU — exceeds MAX_VALUE: every
        schedule a method builds without idling finishes within it, so every derived time
        stays representable."""
        work = []
        # link contention: at most every remote PS-worker pair of the instance at once
        flows = (
            sum(
                (job.profile.roles or ()).count("ps") * (job.profile.roles or ()).count("worker")
                for job in self.jobs
            )
            if self.cluster.link_contention
            else 0
        )
        rows = zip(self._rows(self._compute), self._rows(self._sync), strict=True)
        for job, (compute, sync) in zip(self.jobs, rows, strict=True):
            slowest = max(c + s for c, s in zip(compute, sync, strict=True) if math.isfinite(c))
            profile = job.profile
            factor = max((profile.placement_factor or {}).values(), default=1.0)
            work.append(
                job.n_tasks * slowest * max(1.0, factor)
                + profile.launch
                + profile.save
                + job.rounds * profile.actual_flow_time * flows
            )
        total = max(job.arrival for job in self.jobs) + sum(work)
        if not total <= MAX_VALUE:
            largest = self.jobs[work.index(max(work))].id
            raise InputError(
                f"instance {self.name!r}: latest arrival + all work done one task "
                f"after another is {total:.3g} s > {MAX_VALUE:g} s (largest: "
                f"job {largest!r}, {max(work):.3g} s)"
            )

    # -- derived views ----------------------------------------------------------------------

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    @property
    def n_gpus(self) -> int:
        return len(self.gpus)

    @property
    def n_tasks(self) -> int:
        return sum(job.n_tasks for job in self.jobs)

    def job(self, job_id: str) -> Job:
        """The job with id ``job_id``."""
        try:
            return self.jobs[self.job_index[job_id]]
        except KeyError:
            raise UnknownNameError(f"unknown job {job_id!r}") from None

    def compute_of(self, j: int, g: int) -> float:
        """``compute[j, g]`` as a float, read from the compact form (no NumPy)."""
        return self._compute[j * len(self.class_members) + self._class_of[g]]

    def class_times(self, j: int) -> tuple[array[float], array[float]]:
        """Job ``j``'s compute and sync times per GPU class (``class_members`` order), from
        the compact form (no NumPy)."""
        width = len(self.class_members)
        return (
            self._compute[j * width : (j + 1) * width],
            self._sync[j * width : (j + 1) * width],
        )

    def sync_of(self, j: int, g: int) -> float:
        """``sync[j, g]`` as a float, read from the compact form (no NumPy)."""
        return self._sync[j * len(self.class_members) + self._class_of[g]]

    def colocated_rate(self, j: int, k: int, g: int) -> float | None:
        """With space sharing, the rate at which a task of job ``j`` trains on GPU ``g``
        while one of job ``k`` trains there too (its throughput next to it over alone); None
        where the two cannot share: no rates for their workloads on its type, or either cannot
        run on it (models/cluster-execution.md)."""
        a, b = self.jobs[j].workload, self.jobs[k].workload
        if a is None or b is None or math.inf in (self.compute_of(j, g), self.compute_of(k, g)):
            return None
        return self._colocation.get((a, b, self.gpus[g].type))

    @property
    def gpu_class(self) -> np.ndarray:
        """Each GPU's class (read-only)."""
        return self._array("gpu_class")

    @property
    def class_compute(self) -> np.ndarray:
        """``class_compute[j, c]``: read-only (jobs, classes)."""
        return self._array("class_compute")

    @property
    def class_sync(self) -> np.ndarray:
        """``class_sync[j, c]``: read-only (jobs, classes)."""
        return self._array("class_sync")

    @property
    def compute(self) -> np.ndarray:
        """``compute[j, g]``: read-only (jobs, GPUs), built from the compact form once."""
        return self._array("compute")

    @property
    def sync(self) -> np.ndarray:
        """``sync[j, g]``: read-only (jobs, GPUs), built from the compact form once."""
        return self._array("sync")

    def _array(self, name: str) -> np.ndarray:
        """The NumPy form of ``name``, made on first use and kept."""
        made = self._arrays.get(name)
        if made is None:
            import numpy as np

            if name == "gpu_class":
                made = np.array(self._class_of, dtype=np.intp)
            elif name.startswith("class_"):
                flat = self._compute if name == "class_compute" else self._sync
                made = np.frombuffer(flat, dtype=float).reshape(self.n_jobs, -1)
            else:  # the dense form
                made = self._array(f"class_{name}")[:, self.gpu_class]
            made.setflags(write=False)
            self._arrays[name] = made
        return made

    def row(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job ``j``'s compute and sync times per GPU (new arrays; no dense matrix built)."""
        return self.class_compute[j, self.gpu_class], self.class_sync[j, self.gpu_class]

    def eligible(self, j: int) -> np.ndarray:
        """Indices of the GPUs job index ``j`` can run on."""
        import numpy as np

        return np.flatnonzero(np.isfinite(self.class_compute[j])[self.gpu_class])

    def gpu_groups(self) -> tuple[tuple[int, ...], ...]:
        """Groups of interchangeable GPUs: identical ``compute`` and ``sync`` columns.

        Groups are in order of their first GPU; GPUs inside a group in index order.
        """
        key_of = [
            self.class_compute[:, c].tobytes() + self.class_sync[:, c].tobytes()
            for c in range(len(self.class_members))
        ]
        groups: dict[bytes, list[int]] = {}
        for g, c in enumerate(self._class_of):
            groups.setdefault(key_of[c], []).append(g)
        return tuple(tuple(members) for members in groups.values())

    @property
    def needs_cluster_model(self) -> bool:
        """Whether the instance uses instance@2's cluster fields (sharing, GPU memory, link
        contention, or a job with a cluster profile: phases, placement factors, actuals, …);
        only cluster simulations handle those."""
        return (
            self.cluster != ClusterSpec()
            or any(g.memory is not None for g in self.gpus)
            or any(job.cluster is not None for job in self.jobs)
        )

    def with_mode(self, mode: str) -> Instance:
        """The same instance in another execution mode (re-validated)."""
        return replace(self, mode=mode)


def _limit(memory: float | None) -> float:
    """A GPU's memory limit (MB; inf: none)."""
    return math.inf if memory is None else memory


def _index(items: Sequence[Job | GPU], what: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for i, item in enumerate(items):
        if item.id in index:
            raise InputError(f"duplicate {what} id {item.id!r}")
        index[item.id] = i
    return index
