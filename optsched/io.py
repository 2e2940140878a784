"""Reading and writing the JSON contracts (docs/formats.md): instance@1/@2 and schedule@1/@2.

The ``@2`` formats accept every ``@1`` file (with its format name changed) and add the
cluster fields of Liquid's model: GPU memory, GPU sharing and link contention, and per job
the fields of its :class:`~optsched.instance.ClusterProfile` as flat keys (instance@2),
each task's training start and failed attempts (schedule@2). Writers write ``@1`` whenever
the object needs nothing of ``@2``.

Readers dispatch on ``format``, reject unknown keys by name, and build objects through their
validating constructors, so a file is exactly as valid as the object it describes. Writers
write atomically: a failed write leaves no half-written file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from optsched.cluster_model import ClusterProfile, ClusterSpec
from optsched.errors import InputError
from optsched.instance import GPU, Instance, Job
from optsched.jsonfile import read_file
from optsched.limits import MIN_POSITIVE, is_bounded
from optsched.output import json_text, write_file
from optsched.schedule import Schedule, Task
from optsched.topology import Topology
from optsched.workloads import Catalog

if TYPE_CHECKING:
    from optsched.placement.model import Placement, PlacementInstance

T = TypeVar("T")

INSTANCE_FORMATS = ("optsched/instance@1", "optsched/instance@2")
SCHEDULE_FORMATS = ("optsched/schedule@1", "optsched/schedule@2")

_INSTANCE_KEYS = {"format", "name", "mode", "gpus", "topology", "jobs"}
_INSTANCE_KEYS_2 = {*_INSTANCE_KEYS, "share_cap", "link_contention", "space_sharing"}
_GPU_KEYS = {"id", "type"}
_GPU_KEYS_2 = {*_GPU_KEYS, "host", "memory"}
_JOB_REQUIRED = ("id", "arrival", "weight", "rounds", "tasks_per_round")
_JOB_KEYS = {
    *_JOB_REQUIRED,
    "compute",
    "workload",
    "iters_per_task",
    "sync",
    "sync_by_gpu",
    "sync_bytes",
    "ps",
    "meta",
}
#: instance@2's per-job cluster keys, flat in the job object: the ClusterProfile fields
#: and their defaults.
_JOB_CLUSTER = {f.name: f.default for f in fields(ClusterProfile)}
_JOB_KEYS_2 = _JOB_KEYS | set(_JOB_CLUSTER)
_SCHEDULE_KEYS = {"format", "instance", "mode", "tasks"}
_TASK_KEYS = {"job", "round", "task", "gpu", "start"}
_TASK_KEYS_2 = {*_TASK_KEYS, "train_start", "failed_at"}


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _keys(
    obj: Mapping[str, Any], allowed: set[str], required: tuple[str, ...], where: str
) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise InputError(f"{where}: unknown key {unknown[0]!r}")
    for key in required:
        if key not in obj:
            raise InputError(f"{where}: missing key {key!r}")


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"{where} must be a JSON array, got {type(value).__name__}")
    return value


def _format(obj: Mapping[str, Any], known: tuple[str, ...], where: str) -> str:
    if "format" not in obj:
        raise InputError(f"{where}: missing key 'format' (expected {', '.join(known)})")
    fmt = obj["format"]
    if fmt not in known:
        raise InputError(f"{where}: unknown format {fmt!r} (expected {', '.join(known)})")
    return str(fmt)


# -- instance ----------------------------------------------------------------------------------


def instance_from_dict(data: Any, *, catalog: Catalog | None = None) -> Instance:
    """Build an :class:`Instance` from an ``optsched/instance@1`` or ``@2`` object."""
    obj = _object(data, "instance")
    v2 = _format(obj, INSTANCE_FORMATS, "instance") == INSTANCE_FORMATS[1]
    _keys(obj, _INSTANCE_KEYS_2 if v2 else _INSTANCE_KEYS, ("name", "jobs"), "instance")
    gpus = []
    for i, g in enumerate(_list(obj.get("gpus", []), "instance 'gpus'")):
        g = _object(g, f"gpus[{i}]")
        _keys(g, _GPU_KEYS_2 if v2 else _GPU_KEYS, ("id", "type"), f"gpus[{i}]")
        gpus.append(GPU(g["id"], g["type"], g.get("host"), g.get("memory")))
    topology = None
    if "topology" in obj:
        topology = Topology.from_node_link(obj["topology"])
    jobs = []
    for i, j in enumerate(_list(obj["jobs"], "instance 'jobs'")):
        j = _object(j, f"jobs[{i}]")
        where = f"job {j['id']!r}" if isinstance(j.get("id"), str) else f"jobs[{i}]"
        _keys(j, _JOB_KEYS_2 if v2 else _JOB_KEYS, _JOB_REQUIRED, where)
        job = {k: v for k, v in j.items() if k not in _JOB_CLUSTER}
        if v2:
            given = {
                **_meta_fallback(j.get("meta")),
                **{k: v for k, v in j.items() if k in _JOB_CLUSTER},
            }
            job["cluster"] = _profile(given, where) if given else None
        jobs.append(Job(**job))
    return Instance(
        obj["name"],
        tuple(jobs),
        tuple(gpus),
        topology,
        obj.get("mode", "relaxed"),
        catalog,
        ClusterSpec(
            obj.get("share_cap"),
            obj.get("link_contention", False),
            obj.get("space_sharing", False),
        ),
    )


def instance_to_dict(instance: Instance) -> dict[str, Any]:
    """The ``optsched/instance@1`` object of an instance, ``@2`` when it uses cluster fields
    (read back, it is equal)."""
    v2 = instance.needs_cluster_model
    gpus: list[dict[str, Any]] = []
    for g in instance.gpus:
        gpus.append({"id": g.id, "type": g.type})
        if v2 and g.memory is not None:
            gpus[-1]["memory"] = g.memory
        if v2 and g.host is not None and instance.topology is None:
            gpus[-1]["host"] = g.host
    out: dict[str, Any] = {
        "format": INSTANCE_FORMATS[v2],
        "name": instance.name,
        "mode": instance.mode,
        "gpus": gpus,
    }
    if instance.cluster.share_cap is not None:
        out["share_cap"] = instance.cluster.share_cap
    if instance.cluster.link_contention:
        out["link_contention"] = True
    if instance.cluster.space_sharing:
        out["space_sharing"] = True
    if instance.topology is not None:
        out["topology"] = instance.topology.to_node_link()
    jobs = []
    for job in instance.jobs:
        optional = {
            k: v for k in _JOB_KEYS - set(_JOB_REQUIRED) if (v := getattr(job, k)) is not None
        }
        if v2:
            optional |= _profile_keys(job)
        d: dict[str, Any] = {k: getattr(job, k) for k in _JOB_REQUIRED}
        for key, value in sorted(optional.items()):
            d[key] = (
                dict(value)
                if isinstance(value, Mapping)
                else list(value)
                if isinstance(value, tuple)
                else value
            )
        jobs.append(d)
    out["jobs"] = jobs
    return out


def _profile(given: Mapping[str, Any], where: str) -> ClusterProfile:
    """The ClusterProfile of a job's instance@2 keys; its InputError names the job."""
    try:
        return ClusterProfile(**given)
    except InputError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _meta_fallback(meta: Any) -> dict[str, Any]:
    """What files written before instance@2 jobs had ``bandwidth`` and ``model`` keys say in
    the free-form ``meta``: ``meta["bandwidth"]`` when it is a valid bandwidth weight,
    ``meta["model"]`` when it is a non-empty string (otherwise meta is just data). The
    reader takes them where the job has no such key; meta itself is kept as it is."""
    if not isinstance(meta, Mapping):
        return {}
    out: dict[str, Any] = {}
    bandwidth: Any = meta.get("bandwidth")
    model = meta.get("model")
    if is_bounded(bandwidth) and bandwidth >= MIN_POSITIVE:
        out["bandwidth"] = float(bandwidth)
    if isinstance(model, str) and model:
        out["model"] = model
    return out


def _profile_keys(job: Job) -> dict[str, Any]:
    """A job's instance@2 cluster keys: the profile fields that differ from their default,
    and any that the reader's meta fallback would otherwise change (so that a job with
    ``meta["bandwidth"]`` but the default bandwidth reads back equal)."""
    profile, fallback = job.profile, _meta_fallback(job.meta)
    return {
        key: value
        for key, default in _JOB_CLUSTER.items()
        if (value := getattr(profile, key)) != default or fallback.get(key, default) != value
    }


# -- schedule ----------------------------------------------------------------------------------


def schedule_from_dict(data: Any) -> Schedule:
    """Build a :class:`Schedule` from an ``optsched/schedule@1`` or ``@2`` object."""
    obj = _object(data, "schedule")
    v2 = _format(obj, SCHEDULE_FORMATS, "schedule") == SCHEDULE_FORMATS[1]
    _keys(obj, _SCHEDULE_KEYS, ("instance", "tasks"), "schedule")
    tasks = []
    for i, t in enumerate(_list(obj["tasks"], "schedule 'tasks'")):
        t = _object(t, f"tasks[{i}]")
        _keys(
            t,
            _TASK_KEYS_2 if v2 else _TASK_KEYS,
            tuple(sorted(_TASK_KEYS)),
            f"schedule tasks[{i}]",
        )
        tasks.append(Task(**t))
    return Schedule(obj["instance"], tasks, obj.get("mode"))


# -- files -------------------------------------------------------------------------------------


def load_instance(path: str | Path, *, catalog: Catalog | None = None) -> Instance:
    """Read an instance file."""
    return read_file(path, lambda data: instance_from_dict(data, catalog=catalog))


def in_mode(instance: Instance, mode: str | None, source: str | Path) -> Instance:
    """``instance`` in ``mode`` (None: its own); what that mode refuses is an InputError
    naming ``source``, the file it came from, as a load error does."""
    if mode is None or mode == instance.mode:
        return instance
    try:
        return instance.with_mode(mode)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None


def load_schedule(path: str | Path) -> Schedule:
    """Read a schedule file."""
    return read_file(path, schedule_from_dict)


def load_any(path: str | Path) -> Any:
    """Read any optsched file, dispatching on its ``format``: an :class:`Instance`, a
    :class:`Schedule`, a :class:`~optsched.placement.model.PlacementInstance` or a
    :class:`~optsched.placement.model.Placement`.

    Raises
    ------
    InputError
        An unreadable file, an unknown format, or content its format refuses (naming the
        file).
    """
    from optsched.placement.model import (
        INSTANCE_FORMAT,
        PLACEMENT_FORMAT,
        placement_from_dict,
        placement_instance_from_dict,
    )

    readers: dict[Any, Any] = {
        **dict.fromkeys(INSTANCE_FORMATS, instance_from_dict),
        **dict.fromkeys(SCHEDULE_FORMATS, schedule_from_dict),
        INSTANCE_FORMAT: placement_instance_from_dict,
        PLACEMENT_FORMAT: placement_from_dict,
    }

    def read(data: Any) -> Any:
        if isinstance(data, dict) and "format" not in data:
            raise InputError(f"missing key 'format' (known: {', '.join(readers)})")
        kind = data.get("format") if isinstance(data, dict) else None
        if kind not in readers:
            raise InputError(f"unknown format {kind!r} (known: {', '.join(readers)})")
        return readers[kind](data)

    return read_file(path, read)


def write_json(path: str | Path, data: Any) -> None:
    """Write ``data`` as indented JSON through :func:`optsched.output.write_file` (atomic;
    NaN and infinities refused)."""
    write_file(path, json_text(data))


def save_instance(path: str | Path, instance: Instance) -> None:
    """Write an instance file."""
    write_json(path, instance_to_dict(instance))


def save_schedule(path: str | Path, schedule: Schedule) -> None:
    """Write a schedule file."""
    write_json(path, schedule.to_dict())


def load_placement_instance(path: str | Path) -> PlacementInstance:
    """Read a ``placement-instance@1`` file (InputError naming the file on any problem)."""
    from optsched.placement.model import placement_instance_from_dict

    return read_file(path, placement_instance_from_dict)


def load_placement(path: str | Path) -> Placement:
    """Read a ``placement@1`` file (InputError naming the file on any problem)."""
    from optsched.placement.model import placement_from_dict

    return read_file(path, placement_from_dict)


def save_placement_instance(path: str | Path, instance: PlacementInstance) -> None:
    """Write ``instance`` as ``placement-instance@1`` JSON, atomically."""
    from optsched.placement.model import placement_instance_to_dict

    write_json(path, placement_instance_to_dict(instance))


def save_placement(path: str | Path, placement: Placement) -> None:
    """Write ``placement`` as ``placement@1`` JSON, atomically."""
    from optsched.placement.model import placement_to_dict

    write_json(path, placement_to_dict(placement))
