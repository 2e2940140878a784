"""Liquid's placement → duration table (TPDS'22 §7, Fig. 1 and Fig. 6).

Job execution times in seconds of a 1-PS + 2-worker job (and of single-task jobs) by how its
containers share hosts, as the reference implementation's mock executor uses them
(PasaLab/Liquid @ 2e70203, ``Liquid-scheduler/src/mocker.go``, which scales them by (95 +
U{0..4}) %, i.e. −5 … −1 %; figures quoted, not code; optsched uses them noise-free). Modes:
``s1`` one GPU, ``s2`` two GPUs of one host (single-task jobs); ``pww`` PS and both workers on
one host; ``pw:w`` PS with one worker, the other worker elsewhere; ``p:ww`` PS alone, both
workers together elsewhere; ``p:w:w`` all on different hosts. VGG-16 is the bandwidth-sensitive
job (p:ww 2.33× the co-located time).
"""

from __future__ import annotations

from collections import Counter

from optsched.cluster_model import placement_pattern
from optsched.errors import InputError, UnknownNameError
from optsched.placement.model import Placement, PlacementInstance

PATTERNS = ("s1", "s2", "pww", "pw:w", "p:ww", "p:w:w")
DURATIONS = {
    "vgg16": dict(zip(PATTERNS, (220.0, 227.0, 510.0, 767.0, 1190.0, 810.0), strict=True)),
    "resnet50": dict(zip(PATTERNS, (146.0, 164.0, 203.0, 204.0, 255.0, 210.0), strict=True)),
    "inceptionv3": dict(zip(PATTERNS, (253.0, 257.0, 289.0, 295.0, 310.0, 290.0), strict=True)),
}


def placement_mode(ps_host: str, worker_hosts: tuple[str, str]) -> str:
    """The mode of a 1-PS + 2-worker job from the hosts of its PS and workers: the
    cluster model's :func:`~optsched.cluster_model.placement_pattern`, the one place patterns are
    named."""
    return placement_pattern(("ps", "worker", "worker"), (ps_host, *worker_hosts))


def job_duration(
    instance: PlacementInstance, placement: Placement, job_id: str, model: str
) -> float:
    """Execution time of job ``job_id`` of ``model`` under ``placement`` (table lookup)."""
    if model not in DURATIONS:
        raise UnknownNameError(
            f"no duration table for model {model!r} (known: {', '.join(DURATIONS)})"
        )
    job = instance.job(job_id)
    hosts = {a.container: a.host for a in placement.assignments if a.job == job_id}
    roles = Counter(c.role for c in job.containers)
    if len(hosts) != len(job.containers):
        raise InputError(f"job {job_id!r} is not fully placed")
    if len(job.containers) == 1:
        gpus = job.containers[0].gpus
        if gpus not in (1, 2):
            raise InputError(f"job {job_id!r}: the table covers single tasks of 1 or 2 GPUs")
        return DURATIONS[model]["s1" if gpus == 1 else "s2"]
    if roles != Counter({"ps": 1, "worker": 2}):
        raise InputError(f"job {job_id!r}: the table covers 1 PS + 2 workers, got {dict(roles)}")
    ps = next(hosts[c.id] for c in job.containers if c.role == "ps")
    w1, w2 = (hosts[c.id] for c in job.containers if c.role == "worker")
    return DURATIONS[model][placement_mode(ps, (w1, w2))]


#: Flows through the busiest worker-host link of a 1-PS + 2-worker job in each mode (a remote
#: PS–worker pair is a flow; the worker side is the bottleneck, see placement/cost.py).
WORKER_LINK_FLOWS = {"pww": 0, "pw:w": 1, "p:ww": 2, "p:w:w": 1}


def contention_durations(model: str) -> tuple[float, dict[str, float]]:
    """Liquid's 1-PS + 2-worker durations from link contention instead of the table.

    An iteration waits for its slowest flow; a flow's rate is its worker-host link split
    equally among the flows through it, so the time over the co-located ``pww`` one is
    ``c`` × the flows on the busiest worker link (:data:`WORKER_LINK_FLOWS`), ``c`` the
    model's remote-flow time fitted to the table by least squares. Returns ``c`` and the
    predicted durations of the four modes.
    """
    if model not in DURATIONS:
        raise UnknownNameError(
            f"no duration table for model {model!r} (known: {', '.join(DURATIONS)})"
        )
    table = DURATIONS[model]
    loads = WORKER_LINK_FLOWS
    c = sum(n * (table[m] - table["pww"]) for m, n in loads.items()) / sum(
        n * n for n in loads.values()
    )
    return c, {m: table["pww"] + c * n for m, n in loads.items()}
