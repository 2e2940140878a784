"""Liquid's cluster model (instance@2, models/cluster-execution.md), in one place: what an
instance adds (:class:`ClusterSpec`: GPU sharing, link contention), what a job adds
(:class:`ClusterProfile`: launch and save phases, utilisation, GPU memory, PS and worker roles,
placement factors, actual use), and how a gang round's training time follows from where its
tasks run (:func:`round_pace`, :func:`round_flows`, :func:`placement_pattern`). A GPU's
``memory`` and ``host`` are fields of :class:`~optsched.instance.GPU`.

Every default means "no effect": an instance whose spec is ``ClusterSpec()``, whose GPUs have
no memory and whose jobs have no profile is a plain instance, which every method handles; the
cluster fields are handled by the cluster simulations only (:mod:`optsched.online.cluster`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from optsched.errors import InputError
from optsched.limits import MAX_FACTOR, MAX_VALUE, MIN_POSITIVE, is_bounded, seconds_map

if TYPE_CHECKING:
    from optsched.instance import Instance

#: The roles of a data-parallel job's tasks: parameter server or worker (Liquid).
ROLES = ("ps", "worker")
#: The quantities a profile's ``actual`` may give (instance@2): the true mean GPU
#: utilisation, GPU memory (MB) and bandwidth weight, where the profile's own are predictions.
ACTUALS = ("util", "gpu_memory", "bandwidth")


@dataclass(frozen=True)
class ClusterSpec:
    """What an instance adds in Liquid's cluster model (instance@2).

    Attributes
    ----------
    share_cap
        GPU sharing is allowed while the predicted utilisations of the tasks training on a
        GPU sum to at most ``share_cap`` (>= 1; Liquid's 1.3); None: a GPU trains one task
        at a time.
    link_contention
        Remote PS–worker pairs of rounds training at once share their worker hosts' links,
        each extra flow adding the job's ``flow_time`` to a round's training
        (models/cluster-execution.md); False: a round's time depends on its own placement
        only. Needs every GPU's host.
    space_sharing
        Two single-task rounds may train together on a GPU when their workloads' pair has
        co-location rates on its type (the catalog's ``colocated``, Gavel's pairwise
        throughputs), each progressing at its rate (models/cluster-execution.md); a sharing
        model of its own, so not with ``share_cap``.
    """

    share_cap: float | None = None
    link_contention: bool = False
    space_sharing: bool = False

    def __post_init__(self) -> None:
        if self.share_cap is not None:
            if not is_bounded(self.share_cap) or self.share_cap < 1:
                raise InputError(f"share_cap must be a number >= 1, got {self.share_cap!r}")
            object.__setattr__(self, "share_cap", float(self.share_cap))
        for name in ("link_contention", "space_sharing"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if self.space_sharing and self.share_cap is not None:
            raise InputError(
                "space_sharing (pairwise co-location rates) and share_cap (sharing by "
                "utilisation) are two sharing models; give one"
            )


@dataclass(frozen=True)
class ClusterProfile:
    """What a job adds in Liquid's cluster model (instance@2, models/cluster-execution.md).

    Every default means "no effect": a job whose profile equals ``ClusterProfile()`` runs as
    a plain gang job, and :class:`Job` stores ``cluster=None`` for it.

    Attributes
    ----------
    launch, save
        Seconds the job holds its GPUs without computing: before its first round trains
        (starting its containers) and after its last round ends (saving the model).
    util
        Predicted mean GPU utilisation of one task, in (0, 1]. GPU sharing lets tasks train
        together while their predicted utilisations sum to at most the instance's
        ``share_cap``.
    gpu_memory
        Predicted GPU memory one task holds while it trains and saves, MB (0: none).
    roles
        ``"ps"`` (parameter server) or ``"worker"`` for each task of a round, in task order;
        None: every task is a worker. :class:`Job` checks that there is one per task.
    placement_factor
        {placement pattern: factor > 0}: how much a round's training stretches when its PS
        and workers share hosts that way (patterns as :func:`placement_pattern` names them,
        e.g. ``pw:w``; a pattern not listed has factor 1). A key ``pattern@TYPE`` gives the
        factor on GPU type TYPE (the type of the round's slowest GPU), before ``pattern``
        (:func:`factor_of`). None: no factor.
    actual
        What the job really uses, where ``util``, ``gpu_memory`` and ``bandwidth`` are the
        predictions the scheduler decides on: a mapping with any of the keys ``util``,
        ``gpu_memory`` (MB) and ``bandwidth``. A missing key, or None, means the prediction
        is exact. Execution (interference, running out of memory, link contention) uses the
        actual values.
    flow_time
        Seconds that each extra flow on a round's busiest worker link adds to its training
        when the instance has ``link_contention`` (scaled by actual / predicted bandwidth);
        0: no slowdown.
    bandwidth
        Predicted bandwidth weight: the network traffic of the job's PS–worker pairs
        relative to a default job's 1; it weights the job's pairs in Liquid's placement cost.
    model
        The job's model name (e.g. ``"vgg16"``), its type for the resource estimator;
        None: unknown.

    Numbers are stored as floats, ``roles`` as a tuple, mappings frozen. An invalid value
    raises :class:`InputError` naming the field.
    """

    launch: float = 0.0
    save: float = 0.0
    util: float = 1.0
    gpu_memory: float = 0.0
    roles: tuple[str, ...] | None = None
    placement_factor: Mapping[str, float] | None = None
    actual: Mapping[str, float] | None = None
    flow_time: float = 0.0
    bandwidth: float = 1.0
    model: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("launch", "save", "gpu_memory", "flow_time"):
            value = getattr(self, name)
            if not is_bounded(value) or value < 0:
                raise InputError(f"{name} must be a number in [0, {MAX_VALUE:g}], got {value!r}")
            set_(self, name, float(value))
        if not is_bounded(self.util) or not 0 < self.util <= 1:
            raise InputError(f"util must be a number in (0, 1], got {self.util!r}")
        set_(self, "util", float(self.util))
        if not is_bounded(self.bandwidth) or self.bandwidth < MIN_POSITIVE:
            raise InputError(
                f"bandwidth must be a number in [{MIN_POSITIVE:g}, "
                f"{MAX_VALUE:g}], got {self.bandwidth!r}"
            )
        set_(self, "bandwidth", float(self.bandwidth))
        if self.roles is not None:
            roles = tuple(self.roles) if isinstance(self.roles, list | tuple) else ()
            if not roles or not all(isinstance(r, str) and r in ROLES for r in roles):
                raise InputError(
                    f"roles must list 'ps' or 'worker' for each task of a round, "
                    f"got {self.roles!r}"
                )
            set_(self, "roles", roles)
        if self.placement_factor is not None:
            factors = seconds_map(self.placement_factor, "placement_factor", positive=True)
            for pattern, value in factors.items():
                shape, at, gpu_type = pattern.partition("@")
                if not shape or (at and not gpu_type):
                    raise InputError(
                        f"placement_factor key {pattern!r} must be a pattern or pattern@TYPE"
                    )
                if value > MAX_FACTOR:
                    raise InputError(
                        f"placement_factor[{pattern!r}] must be <= {MAX_FACTOR:g}, got {value!r}"
                    )
            set_(self, "placement_factor", factors)
        if self.actual is not None:
            set_(self, "actual", _actuals(self.actual))
        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise InputError(f"model must be a non-empty string, got {self.model!r}")

    @property
    def actual_util(self) -> float:
        """The GPU utilisation a task really has (``actual["util"]``, else ``util``)."""
        return (self.actual or {}).get("util", self.util)

    @property
    def actual_gpu_memory(self) -> float:
        """The GPU memory (MB) a task really needs (``actual["gpu_memory"]``, else
        ``gpu_memory``)."""
        return (self.actual or {}).get("gpu_memory", self.gpu_memory)

    @property
    def actual_bandwidth(self) -> float:
        """The bandwidth weight the job really has (``actual["bandwidth"]``, else
        ``bandwidth``)."""
        return (self.actual or {}).get("bandwidth", self.bandwidth)

    @property
    def actual_flow_time(self) -> float:
        """The seconds one more flow on a link adds to a round: ``flow_time`` × actual /
        predicted bandwidth (a job moving more data than predicted suffers more)."""
        if not self.flow_time:
            return 0.0
        return self.flow_time * (self.actual_bandwidth / self.bandwidth)


#: The profile of a job without one (``Job.cluster`` None): every field at its default.
NO_PROFILE = ClusterProfile()


def _actuals(values: Any) -> Mapping[str, float]:
    """A profile's ``actual`` mapping, validated: keys among :data:`ACTUALS`, ``util`` in
    (0, 1], ``gpu_memory`` in [0, MAX_VALUE], ``bandwidth`` in [MIN_POSITIVE, MAX_VALUE]."""
    if not isinstance(values, Mapping):
        raise InputError(f"actual must be a mapping of {', '.join(ACTUALS)}, got {values!r}")
    out = {}
    for key, value in values.items():
        if key not in ACTUALS:
            raise InputError(f"actual has unknown key {key!r} (known: {', '.join(ACTUALS)})")
        low = {"util": 0.0, "gpu_memory": 0.0, "bandwidth": MIN_POSITIVE}[key]
        ok = is_bounded(value) and (0 < value <= 1 if key == "util" else value >= low)
        if not ok:
            bounds = "(0, 1]" if key == "util" else f"[{low:g}, {MAX_VALUE:g}]"
            raise InputError(f"actual[{key!r}] must be a number in {bounds}, got {value!r}")
        out[key] = float(value)
    return MappingProxyType(out)


def placement_pattern(roles: Sequence[str], hosts: Sequence[str]) -> str:
    """How a round's tasks share hosts: per host a ``p`` per PS and a ``w`` per worker,
    hosts joined by ``:``, hosts with a PS first, then larger ones (Liquid's modes ``pww``,
    ``pw:w``, ``p:ww``, ``p:w:w`` for 1 PS + 2 workers; ``w`` for a single worker)."""
    per_host: dict[str, list[str]] = {}
    for role, host in zip(roles, hosts, strict=True):
        per_host.setdefault(host, []).append("p" if role == "ps" else "w")
    groups = ["".join(sorted(v)) for v in per_host.values()]
    return ":".join(sorted(groups, key=lambda grp: ("p" not in grp, -len(grp), grp)))


def spread_patterns(k: int) -> list[str]:
    """The placement patterns of ``k`` workers (no PS) on two or more hosts, e.g. ``ww:w``
    and ``w:w:w`` for three."""

    def partitions(left: int, most: int) -> Iterator[list[int]]:  # largest part first
        if left == 0:
            yield []
        for part in range(min(left, most), 0, -1):
            for rest in partitions(left - part, part):
                yield [part, *rest]

    return [":".join("w" * n for n in parts) for parts in partitions(k, k) if len(parts) > 1]


def factor_of(factors: Mapping[str, float], pattern: str, gpu_type: str) -> float:
    """The placement factor of ``pattern`` on ``gpu_type``: ``pattern@gpu_type`` if listed,
    else ``pattern``, else 1."""
    return factors.get(f"{pattern}@{gpu_type}", factors.get(pattern, 1.0))


def round_pace(instance: Instance, j: int, gpus: Sequence[int]) -> float:
    """Training time of one gang round of job ``j`` on ``gpus`` (task k on ``gpus[k]``): the
    slowest compute + sync × the job's factor for the round's placement pattern on the type
    of the (first) slowest GPU."""
    job = instance.jobs[j]
    paces = [instance.compute_of(j, g) + instance.sync_of(j, g) for g in gpus]
    base = max(paces)
    factors = job.profile.placement_factor
    if not factors:
        return base
    roles = job.profile.roles or ("worker",) * job.tasks_per_round
    hosts = [instance.gpus[g].host or "" for g in gpus]
    slowest = instance.gpus[gpus[paces.index(base)]].type
    return base * factor_of(factors, placement_pattern(roles, hosts), slowest)


def round_flows(instance: Instance, j: int, gpus: Sequence[int]) -> dict[str, int]:
    """The flows of a round of job ``j`` on ``gpus`` (task k on ``gpus[k]``) by worker host:
    every PS–worker pair of the round on different hosts is one flow, counted on the link
    of the worker's host (the worker side is the bottleneck, Liquid §2.7 and
    :func:`~optsched.placement.durations.contention_durations`). Empty when the job has
    no roles or every pair is co-located."""
    roles = instance.jobs[j].profile.roles or ()
    hosts = [instance.gpus[g].host for g in gpus]
    out: dict[str, int] = {}
    pairs = list(zip(roles, hosts, strict=False))
    for role_p, host_p in pairs:
        if role_p != "ps":
            continue
        for role_w, host_w in pairs:
            if role_w == "worker" and host_w != host_p and host_w is not None:
                out[host_w] = out.get(host_w, 0) + 1
    return out
