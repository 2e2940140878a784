"""The independent schedule checker: the source of truth for feasibility and objective.

:func:`check` reports **every** violation of the model (docs/model.md) in either execution mode and
recomputes the objective and metrics from scratch. It shares no code with any solver or
heuristic; every method's output goes through it (``optsched.solve`` does so on every call).

Violation kinds
---------------
``instance``       the schedule names another instance
``unknown-job``    job id not in the instance
``unknown-gpu``    GPU id not in the instance
``unknown-index``  round or task index out of range for its job
``duplicate``      a task appears more than once
``missing``        a task does not appear
``ineligible``     the job cannot run on that GPU (its type has no compute time)
``arrival``        a task starts before its job arrives
``barrier``        a task starts before every result of the previous round is ready
``overlap``        two tasks occupy one GPU at once (relaxed: ``[start, start + compute)``;
                   gang: the held interval ``[start, start + max over the round (compute +
                   sync))``)
``gang-start``     gang mode: the tasks of a round do not start together
``gang-distinct``  gang mode: two tasks of a round share a GPU

Cluster instances (instance@2: phases, GPU sharing, space sharing, GPU memory, placement
factors, actual vs predicted resource use, link contention; gang mode) and schedule@2
(training starts, failed attempts) follow :func:`_cluster_rounds`'s model
(models/cluster-execution.md) and add:

``launch``         a task trains before its start (+ the job's launch phase in round 0)
``share-cap``      tasks training together on a GPU whose predicted utilisations sum above
                   the instance's ``share_cap``
``share-gang``     a task of a multi-GPU round trains together with another task (only
                   single-task rounds share GPUs)
``colocation``     space sharing: more than two tasks train together on a GPU, or two whose
                   workloads have no co-location rates on its type
``gpu-memory``     tasks holding GPU memory at once need more (predicted) memory than the GPU
                   has
``oom``            a task starts training while the tasks holding GPU memory there need more
                   *actual* memory than the GPU has (it should have been recorded as failed)
``failed-attempt`` a failed attempt (tasks with ``failed_at``) that is not a whole gang
                   round, did not run out of actual memory at its training start, has a
                   training start, or is followed by an attempt of the same round that
                   starts before it failed

Times are compared within :func:`time_tolerance` (docs/model.md, *Time tolerance*):
1e-9 × the shorter of the two intervals compared plus 2 units in the last place of the
times, which depends on nothing else (other jobs, unused GPU types, where time zero is). A
schedule whose times are too large for its durations (:data:`RESOLUTION`) is refused with
:class:`ResolutionError` rather than checked loosely.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optsched.cluster_model import round_flows, round_pace
from optsched.errors import InputError
from optsched.fairness import fairness_metrics
from optsched.instance import Instance, Job
from optsched.metrics import schedule_metrics
from optsched.schedule import Schedule, Task

REL_TOL = 1e-9
ULPS = 2
#: The checker's resolution: the float rounding of a task's times must stay below this
#: fraction of its duration, else the schedule is refused (:class:`ResolutionError`).
RESOLUTION = 1e-4


def time_tolerance(duration: float, *times: float) -> float:
    """How far apart ``times`` may be and still count as equal when they bound intervals
    whose shorter one lasts ``duration`` (docs/model.md, *Time tolerance*).

    ``1e-9 · duration`` plus ``2`` units in the last place of the largest ``|time|``: the
    first term absorbs a solver's rounding of the durations, the second the rounding of
    one addition at those times. Nothing else enters: not other jobs, not unused GPU types,
    not where time zero is (the second term only grows where floats are coarser, and the
    resolution rule (:data:`RESOLUTION`) refuses a schedule before it grows past 0.01 % of
    a duration).
    """
    return REL_TOL * duration + ULPS * math.ulp(max(map(abs, times), default=0.0))


def before(a: float, b: float, duration: float) -> bool:
    """``a < b`` beyond :func:`time_tolerance` for intervals whose shorter lasts
    ``duration``."""
    return a < b - time_tolerance(duration, a, b)


class ResolutionError(InputError):
    """A schedule whose times are too large for its durations: float rounding there
    exceeds :data:`RESOLUTION` of a task's duration, so an overlap of 0.01 % of it could
    not be told from rounding."""


def resolved(duration: float, latest: float) -> bool:
    """Whether an interval of ``duration`` whose times reach at most ``|latest|`` is checked
    to :data:`RESOLUTION`: its tolerance, taken at twice ``latest`` (a time compared with it
    may lie in the next binade), stays below ``RESOLUTION · duration``."""
    return REL_TOL * duration + ULPS * math.ulp(2.0 * latest) < RESOLUTION * duration


def _exceeds(value: float, limit: float) -> bool:
    """A quantity that is not a time (utilisation, memory) above ``limit``, relatively."""
    return value > limit + REL_TOL * max(1.0, abs(value))


@dataclass(frozen=True)
class Violation:
    """One violated rule of a schedule or a placement, naming what it concerns where there
    is something: the task (job, round, task) and GPU of a schedule, the job, container and
    host of a placement."""

    kind: str
    message: str
    job: str | None = None
    round: int | None = None
    task: int | None = None
    gpu: str | None = None
    container: str | None = None
    host: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``check --json`` object: kind, job, round, task, gpu, message, and container
        and host for a placement's violations."""
        out = {
            "kind": self.kind,
            "job": self.job,
            "round": self.round,
            "task": self.task,
            "gpu": self.gpu,
            "message": self.message,
        }
        if self.container is not None or self.host is not None:
            out.update(container=self.container, host=self.host)
        return out


class Verdict:
    """What a check report says, for schedules (:class:`CheckReport`) and placements
    (:class:`~optsched.placement.check.PlacementReport`) alike."""

    violations: tuple[Violation, ...]

    @property
    def feasible(self) -> bool:
        return not self.violations

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}


@dataclass(frozen=True)
class CheckReport(Verdict):
    """What :func:`check` found.

    ``objective`` (Σ w_j C_j), ``completion``, ``metrics`` and ``tolerance`` are ``None``
    unless every task appears exactly once on a known, eligible GPU. ``tolerance`` is the
    objective's absolute optimality tolerance (:func:`objective_tolerance`). ``timeline``
    gives each task on a known, eligible GPU (job, round, task) → (start, training start,
    training end, end of its hold on the GPU), as the checker computed them.
    """

    mode: str
    violations: tuple[Violation, ...]
    objective: float | None = None
    completion: dict[str, float] | None = None
    metrics: dict[str, Any] | None = field(default=None, repr=False)
    tolerance: float | None = None
    timeline: dict[tuple[str, int, int], tuple[float, float, float, float]] = field(
        default_factory=dict, repr=False
    )

    def to_dict(self) -> dict[str, Any]:
        """The ``optsched check --json`` object."""
        return {
            "feasible": self.feasible,
            "mode": self.mode,
            "objective": self.objective,
            "tolerance": self.tolerance,
            "metrics": self.metrics,
            "violations": [v.to_dict() for v in self.violations],
        }


def _name(t: Task) -> str:
    return f"task ({t.job!r}, round {t.round}, task {t.task})"


def _flag(out: list[Violation], kind: str, message: str, t: Task | None = None) -> None:
    ids = () if t is None else (t.job, t.round, t.task, t.gpu)
    out.append(Violation(kind, message, *ids))


def _time(t: float) -> str:
    """A time as the shortest text that reads back as the same float, so that two times in
    one message differ visibly however far from zero they are (1000000.0004, not 1e+06)."""
    return repr(float(t))


def _start_rules(
    out: list[Violation], t: Task, job: Job, duration: float, prev: tuple[float, float] | None
) -> None:
    """A task (of ``duration``) starts after its job arrives and after the previous round is
    ready (``prev``: its ready time and the duration of the interval that ends then)."""
    if before(t.start, job.arrival, duration):
        _flag(
            out,
            "arrival",
            f"{_name(t)} starts at {_time(t.start)}, before job {t.job!r} "
            f"arrives at {_time(job.arrival)}",
            t,
        )
    if prev is not None and before(t.start, prev[0], min(duration, prev[1])):
        _flag(
            out,
            "barrier",
            f"{_name(t)} starts at {_time(t.start)}, before round "
            f"{t.round - 1} of job {t.job!r} is ready at {_time(prev[0])}",
            t,
        )


def _gang_rules(
    out: list[Violation],
    job: Job,
    r: int,
    pace: float,
    entries: list[tuple[Task, int]],
    trains: list[float] | None = None,
) -> None:
    """A gang round's tasks (each lasting ``pace``) start (and train) together on distinct
    GPUs."""
    for what, values in (("start", [t.start for t, _ in entries]), ("train", trains or [])):
        if values and before(min(values), max(values), pace):
            out.append(
                Violation(
                    "gang-start",
                    f"gang round {r} of job {job.id!r}: tasks "
                    f"{what} at {_time(min(values))}..{_time(max(values))}, "
                    "not together",
                    job.id,
                    r,
                )
            )
    seen: dict[int, Task] = {}
    for t, g in entries:
        if g in seen:
            _flag(
                out,
                "gang-distinct",
                f"{_name(t)} shares GPU {t.gpu!r} with {_name(seen[g])} in one gang round",
                t,
            )
        seen.setdefault(g, t)


def _resolve(instance: Instance, t: Task, duration: float, latest: float) -> None:
    """Refuse (:class:`ResolutionError`) a task of ``duration`` whose times reach
    ``latest`` where floats are too coarse to check it to :data:`RESOLUTION`."""
    if resolved(duration, latest):
        return
    first = min(job.arrival for job in instance.jobs)
    move = (
        f"move time zero to the first arrival (shift every arrival and start by -{_time(first)})"
        if first > 0 and resolved(duration, latest - first)
        else "bring its times closer to time zero or lengthen the task"
    )
    raise ResolutionError(
        f"{_name(t)} on GPU {t.gpu!r} lasts {duration:.6g} s but its times reach "
        f"{_time(latest)} s, where float rounding ({ULPS * math.ulp(2.0 * latest):.3g} s) "
        f"is not below {RESOLUTION:g} of its duration: an overlap of 0.01 % of it cannot be "
        f"checked there; {move}"
    )


def check(instance: Instance, schedule: Schedule) -> CheckReport:
    """Check ``schedule`` against ``instance`` in the schedule's mode (else the instance's).

    Returns every violation found, never just the first, and the recomputed objective and
    metrics when every task appears exactly once on a known, eligible GPU.
    """
    mode = schedule.mode or instance.mode
    out: list[Violation] = []

    def flag(kind: str, message: str, t: Task | None = None) -> None:
        _flag(out, kind, message, t)

    if schedule.instance != instance.name:
        flag("instance", f"schedule is for instance {schedule.instance!r}, not {instance.name!r}")

    # 1. references, indices, eligibility; group the timed tasks by round, the failed
    #    attempts (schedule@2 failed_at) by round and start
    count: dict[tuple[str, int, int], int] = defaultdict(int)
    rounds: dict[tuple[int, int], list[tuple[Task, int]]] = defaultdict(list)
    failed: dict[tuple[int, int, float], list[tuple[Task, int]]] = defaultdict(list)

    def ineligible(t: Task, j: int, g: int, what: str) -> bool:
        """Flag (and say) that job j's task ``t`` may not run on GPU g."""
        if instance.compute_of(j, g) != float("inf"):
            return False
        flag(
            "ineligible",
            f"{what}: job {t.job!r} cannot run on GPU {t.gpu!r} (type {instance.gpus[g].type!r})",
            t,
        )
        return True

    for t in schedule.tasks:
        j = instance.job_index.get(t.job)
        g = instance.gpu_index.get(t.gpu)
        if j is None:
            flag("unknown-job", f"{_name(t)}: unknown job {t.job!r}", t)
        if g is None:
            flag("unknown-gpu", f"{_name(t)}: unknown GPU {t.gpu!r}", t)
        if j is None:
            continue
        job = instance.jobs[j]
        if not (0 <= t.round < job.rounds and 0 <= t.task < job.tasks_per_round):
            flag(
                "unknown-index",
                f"{_name(t)}: job {t.job!r} has rounds 0..{job.rounds - 1} "
                f"and tasks 0..{job.tasks_per_round - 1}",
                t,
            )
            continue
        if t.failed_at is not None:
            if g is not None and not ineligible(t, j, g, f"failed attempt {_name(t)}"):
                failed[j, t.round, t.start].append((t, g))
            continue
        count[t.key] += 1
        if count[t.key] > 1:  # only the first occurrence is timed
            if count[t.key] == 2:
                flag("duplicate", f"{_name(t)} appears more than once", t)
            continue
        if g is not None and not ineligible(t, j, g, _name(t)):
            rounds[j, t.round].append((t, g))

    complete = not out or all(v.kind == "instance" for v in out)
    for job in instance.jobs:
        for r in range(job.rounds):
            for k in range(job.tasks_per_round):
                if (job.id, r, k) not in count:
                    complete = False
                    out.append(
                        Violation(
                            "missing",
                            f"task ({job.id!r}, round {r}, task {k}) is not scheduled",
                            job.id,
                            r,
                            k,
                        )
                    )

    # 2. timing: arrival, round barriers, gang rules; GPU occupancy
    ready: dict[tuple[int, int], float] = {}
    occupancy: dict[int, list[tuple[float, float, Task]]] = defaultdict(list)
    timeline: dict[tuple[str, int, int], tuple[float, float, float, float]] = {}
    cluster = instance.needs_cluster_model or any(
        t.train_start is not None or t.failed_at is not None for t in schedule.tasks
    )
    lost = (0, 0.0)
    if cluster:
        if mode != "gang":
            flag(
                "instance",
                "phases, sharing, training starts and failed attempts "
                "(instance@2, schedule@2) are checked in gang mode only",
            )
        ready, lost = _cluster_rounds(instance, rounds, failed, occupancy, timeline, out)
    # each round's ready time and the length of the result interval that ends then
    spans: dict[tuple[int, int], tuple[float, float]] = {}
    for (j, r), entries in sorted(rounds.items()) if not cluster else ():
        job = instance.jobs[j]
        result = [instance.compute_of(j, g) + instance.sync_of(j, g) for _, g in entries]
        pace = max(result)
        spans[j, r] = max((t.start + d, d) for (t, _), d in zip(entries, result, strict=True))
        ready[j, r] = spans[j, r][0]
        prev = spans.get((j, r - 1))
        for (t, g), d in zip(entries, result, strict=True):
            busy = instance.compute_of(j, g) if mode == "relaxed" else pace
            _resolve(instance, t, busy, max(abs(t.start), abs(t.start + busy)))
            _resolve(instance, t, d, max(abs(t.start), abs(t.start + d)))
            _start_rules(out, t, job, busy, prev)
            occupancy[g].append((t.start, t.start + busy, t))
            timeline[t.key] = (t.start, t.start, t.start + busy, t.start + busy)
        if mode == "gang":
            _gang_rules(out, job, r, pace, entries)

    for g, intervals in occupancy.items() if not cluster else ():
        intervals.sort(key=lambda iv: (iv[0], iv[1]))
        holder = intervals[0]
        for iv in intervals[1:]:
            if before(iv[0], holder[1], min(iv[1] - iv[0], holder[1] - holder[0])):
                other = holder[2]
                flag(
                    "overlap",
                    f"{_name(iv[2])} on GPU {instance.gpus[g].id!r} starts at "
                    f"{_time(iv[0])}, while {_name(other)} occupies it until "
                    f"{_time(holder[1])}",
                    iv[2],
                )
            if iv[1] > holder[1]:
                holder = iv

    if not complete:
        return CheckReport(mode, tuple(out), timeline=timeline)
    completion = {job.id: ready[j, job.rounds - 1] for j, job in enumerate(instance.jobs)}
    objective = sum(job.weight * completion[job.id] for job in instance.jobs)
    metrics = schedule_metrics(
        completion,
        {job.id: job.arrival for job in instance.jobs},
        {job.id: job.weight for job in instance.jobs},
        {
            gpu.id: [(a, b) for a, b, _ in occupancy.get(g, [])]
            for g, gpu in enumerate(instance.gpus)
        },
    )
    if not out:  # fairness compares feasible completion times only
        metrics.update(fairness_metrics(instance, completion))
    if cluster:  # failed attempts (out of actual GPU memory) and the GPU-seconds they held
        metrics["oom_failures"], metrics["lost_gpu_s"] = lost
    tolerance = objective_tolerance(instance, completion, objective, mode)
    return CheckReport(mode, tuple(out), objective, completion, metrics, tolerance, timeline)


def objective_tolerance(
    instance: Instance, completion: dict[str, float], objective: float, mode: str
) -> float:
    """How far above a lower bound an objective Σ w_j C_j may be and still be optimal
    (docs/model.md, *Optimality*): Σ_j w_j × (:func:`time_tolerance` (C_j − a_j, C_j) plus
    ``2·ULPS`` units in the last place of C_j per link of job j's chain) plus the rounding of
    the sum (one unit in the last place of the objective per job).

    A job's completion ends a chain: each of its rounds may start up to the checker's
    tolerance before the previous one is ready, and in ``relaxed`` mode each of its tasks
    may start that much before the end of the task it follows on a shared GPU; every ready
    time is a float sum of a start and durations. So a schedule the checker accepts may
    complete up to that much per link before the exact sum of its times: at 1.7e9 s, ECT's
    sums drift 0.3–0.8 units in the last place per round of one task, 9.5e-5 s over 500
    rounds. The links are the job's tasks in ``relaxed`` mode and its rounds in ``gang``
    mode (a round's tasks start together). The 1e-9 share of each link's duration sums to
    1e-9 of the job's time in the system. It is absolute: a distant time origin adds only
    the coarser float spacing there, never a share of the objective."""
    total = 0.0
    for job in instance.jobs:
        c = completion[job.id]
        links = job.n_tasks if mode == "relaxed" else job.rounds
        total += job.weight * (time_tolerance(c - job.arrival, c) + 2 * ULPS * links * math.ulp(c))
    return total + len(instance.jobs) * math.ulp(objective)


def _cluster_rounds(
    instance: Instance,
    rounds: dict[tuple[int, int], list[tuple[Task, int]]],
    failed: dict[tuple[int, int, float], list[tuple[Task, int]]],
    occupancy: dict[int, list[tuple[float, float, Task]]],
    timeline: dict[tuple[str, int, int], tuple[float, float, float, float]],
    out: list[Violation],
) -> tuple[dict[tuple[int, int], float], tuple[int, float]]:
    """Timing of a cluster instance (the gang mode of docs/model.md with instance@2's fields,
    or any schedule@2); returns each round's ready time and (failed attempts, GPU-seconds they
    held), and fills ``occupancy`` with each task's held interval and ``timeline`` with its
    phases (models/cluster-execution.md).

    A round of job j on GPUs G (all tasks start together at ``start``) launches for
    ``launch`` (round 0 only), trains from ``train_start`` (given, else right after the launch)
    for ``pace`` = max over G of (compute + sync) × the job's placement factor of G's pattern,
    then saves for ``save`` (last round only); the GPU is held from start to the end of the
    save. Launch and save use no GPU compute, so they may overlap other tasks' phases (Liquid's
    pre-scheduling). Training: with neither ``share_cap`` nor ``space_sharing``, one task at a
    time per GPU (``overlap``); with ``share_cap``, single-task rounds may train together
    while their *predicted* utilisations sum to at most the cap, each progressing at rate
    1 / max(1, U(t)), U(t) the summed *actual* utilisation of the tasks training on the GPU
    (the GPU's compute shared in proportion: our interference model; Liquid publishes none);
    with ``space_sharing`` instead, two single-task rounds whose workloads have co-location
    rates on the GPU's type may train together (``colocation``), each at its rate; a
    multi-GPU round trains alone, at rate 1, or with ``link_contention`` at rate
    pace / (pace + flow_time·(F − n)) while its busiest worker link carries F flows of the
    rounds training, n of them its own (:func:`_contended`).
    GPU memory is held from training start to the end of the save and must fit in predicted
    (``gpu-memory``) and in actual (``oom``) memory. A failed attempt (``failed_at``) held its
    GPUs from its start to ``failed_at``, when the actual memory held on one of its GPUs plus
    its own exceeded the GPU's; the round's next attempt starts no earlier.
    """

    def flag(kind: str, message: str, t: Task | None = None) -> None:
        _flag(out, kind, message, t)

    jobs = instance.jobs
    spaced = instance.cluster.space_sharing
    shared = instance.cluster.share_cap is not None or spaced
    cap = instance.cluster.share_cap if instance.cluster.share_cap is not None else math.inf
    # per GPU: (train start, pace, actual util, exclusive, task, job index)
    on_gpu: dict[int, list[tuple[float, float, float, bool, Task, int]]] = defaultdict(list)
    flowing: list[tuple[float, float, float, dict[str, int]]] = []
    flowing_keys: list[tuple[int, int]] = []
    paces: dict[tuple[int, int], float] = {}
    for (j, r), entries in rounds.items():
        job = jobs[j]
        order = sorted(entries, key=lambda e: e[0].task)
        gpus = [g for _, g in order]
        complete = len(order) == job.tasks_per_round
        pace = paces[j, r] = (
            round_pace(instance, j, gpus)
            if complete
            else max(instance.compute_of(j, g) + instance.sync_of(j, g) for g in gpus)
        )
        earliest = job.profile.launch if r == 0 else 0.0
        trains = []
        for t, g in order:
            train = t.start + earliest if t.train_start is None else t.train_start
            if before(train, t.start + earliest, pace):
                flag(
                    "launch",
                    f"{_name(t)} trains at {_time(train)}, before its start "
                    f"{_time(t.start)} + launch {earliest:g}",
                    t,
                )
            on_gpu[g].append(
                (train, pace, job.profile.actual_util, not shared or len(entries) > 1, t, j)
            )
            trains.append(train)
        _gang_rules(out, job, r, pace, entries, trains)
        flows = (
            round_flows(instance, j, gpus) if instance.cluster.link_contention and complete else {}
        )
        if flows:
            flowing.append((max(trains), pace, job.profile.actual_flow_time, flows))
            flowing_keys.append((j, r))
    contended = dict(zip(flowing_keys, _contended(flowing), strict=True))

    ends: dict[tuple[str, int, int], float] = {}
    # per GPU: (train start, train end, hold end, predicted util, exclusive, task,
    # predicted memory, actual memory)
    holds: dict[int, list[tuple[float, float, float, float, bool, Task, float, float]]] = {}
    for g, items in on_gpu.items():
        gpu = instance.gpus[g]
        fixed = {
            i: contended[j, t.round]
            for i, (*_, t, j) in enumerate(items)
            if (j, t.round) in contended
        }
        of_job = [j for *_, j in items]

        def pair_rate(i: int, k: int, g: int = g, of_job: list[int] = of_job) -> float | None:
            return instance.colocated_rate(of_job[i], of_job[k], g)

        train_end = _progress(
            [(a, p, u, x) for a, p, u, x, _, _ in items], fixed, pair_rate if spaced else None
        )
        held = holds[g] = []
        for (a, p, _, x, t, j), b in zip(items, train_end, strict=True):
            profile = jobs[j].profile
            end = b + (profile.save if t.round == jobs[j].rounds - 1 else 0.0)
            _resolve(instance, t, p, max(abs(t.start), abs(end)))
            ends[t.key] = end
            occupancy[g].append((t.start, end, t))
            timeline[t.key] = (t.start, a, b, end)
            held.append(
                (a, b, end, profile.util, x, t, profile.gpu_memory, profile.actual_gpu_memory)
            )
        near = _open_near([(h[0], h[1]) for h in held])
        for (a, b, *_, t, _, _), maybe in zip(held, near, strict=True):
            # the tasks training at a (a task ending at a no longer trains)
            training = [
                h
                for h in (held[i] for i in maybe)
                if not before(a, h[0], min(b - a, h[1] - h[0]))
                and before(a, h[1], min(b - a, h[1] - h[0]))
            ]
            if len(training) < 2:
                continue
            if not shared:
                flag(
                    "overlap",
                    f"{_name(t)} trains on GPU {gpu.id!r} from {_time(a)} while "
                    f"{len(training) - 1} other task(s) train there",
                    t,
                )
            elif any(h[4] for h in training):
                flag(
                    "share-gang",
                    f"on GPU {gpu.id!r} at {_time(a)} a multi-GPU round "
                    f"trains together with another task",
                    t,
                )
            elif spaced and len(training) > 2:
                names = ", ".join(repr(h[5].job) for h in training)
                flag(
                    "colocation",
                    f"on GPU {gpu.id!r} at {_time(a)} {len(training)} tasks (jobs {names}) "
                    "train together; space sharing allows two",
                    t,
                )
            elif spaced and _unrated(instance, [h[5] for h in training], g):
                names = " and ".join(repr(h[5].job) for h in training)
                flag(
                    "colocation",
                    f"on GPU {gpu.id!r} at {_time(a)} jobs {names} train together without "
                    f"co-location rates on {gpu.type} (their workloads' pair is not in the "
                    "catalog there, or one cannot run there)",
                    t,
                )
            elif _exceeds(load := sum(h[3] for h in training), cap):
                flag(
                    "share-cap",
                    f"on GPU {gpu.id!r} at {_time(a)} tasks training together "
                    f"use {load:g} > share_cap {cap:g}",
                    t,
                )
        if gpu.memory is not None:
            near = _open_near([(h[0], h[2]) for h in held])
            for (a, b, *_, t, _, _), maybe in zip(held, near, strict=True):
                holding = [
                    h
                    for h in (held[i] for i in maybe)
                    if not before(a, h[0], min(b - a, h[2] - h[0]))
                    and before(a, h[2], min(b - a, h[2] - h[0]))
                ]
                if _exceeds(need := sum(h[6] for h in holding), gpu.memory):
                    flag(
                        "gpu-memory",
                        f"on GPU {gpu.id!r} at {_time(a)} tasks hold {need:g} "
                        f"MB of GPU memory > {gpu.memory:g}",
                        t,
                    )
                elif _exceeds(need := sum(h[7] for h in holding), gpu.memory):
                    flag(
                        "oom",
                        f"{_name(t)} starts training on GPU {gpu.id!r} at {_time(a)} "
                        f"while the tasks holding memory there need {need:g} MB of "
                        f"actual GPU memory > {gpu.memory:g}: it runs out of memory",
                        t,
                    )

    ready: dict[tuple[int, int], float] = {}
    for (j, r), entries in rounds.items():
        ready[j, r] = max(ends[t.key] for t, _ in entries)
    for (j, r), entries in rounds.items():
        prev = (ready[j, r - 1], paces[j, r - 1]) if (j, r - 1) in ready else None
        for t, _ in entries:
            _start_rules(out, t, jobs[j], paces[j, r], prev)
    return ready, _failed_attempts(instance, rounds, failed, holds, ready, paces, occupancy, out)


def _failed_attempts(
    instance: Instance,
    rounds: dict[tuple[int, int], list[tuple[Task, int]]],
    failed: dict[tuple[int, int, float], list[tuple[Task, int]]],
    holds: dict[int, list[tuple[float, float, float, float, bool, Task, float, float]]],
    ready: dict[tuple[int, int], float],
    paces: dict[tuple[int, int], float],
    occupancy: dict[int, list[tuple[float, float, Task]]],
    out: list[Violation],
) -> tuple[int, float]:
    """Check the failed attempts (tasks with ``failed_at``), one per (job, round, start): a
    whole gang round (one task of each index, distinct GPUs, failing together) that started
    like any attempt (arrival, previous round ready, launch phase done by ``failed_at``), held
    its GPUs until ``failed_at`` only, and ran out of memory then: on one of its GPUs, the
    actual memory of the tasks holding memory at ``failed_at`` (a hold ending then included:
    simultaneous events) plus its own exceeds the GPU's.
    Every later attempt of the round starts no earlier than it failed. Returns the number of
    failed attempts and the GPU-seconds they held."""

    def flag(kind: str, message: str, t: Task | None = None) -> None:
        _flag(out, kind, message, t)

    jobs = instance.jobs
    attempts: dict[tuple[int, int], list[tuple[float, float, Task]]] = defaultdict(list)
    pace: dict[tuple[int, int], float] = {}  # the round's pace, as its attempts' duration
    lost = 0.0
    for (j, r, s), entries in sorted(failed.items(), key=lambda kv: kv[0]):
        job = jobs[j]
        order = sorted(entries, key=lambda e: e[0].task)
        first = order[0][0]
        what = f"failed attempt of round {r} of job {job.id!r} started at {_time(s)}"
        indices = [t.task for t, _ in order]
        if indices != list(range(job.tasks_per_round)):
            flag(
                "failed-attempt",
                f"{what} has tasks {indices}, not one of each of its {job.tasks_per_round}",
                first,
            )
        fails = [t.failed_at for t, _ in order if t.failed_at is not None]
        d = pace[j, r] = max(instance.compute_of(j, g) + instance.sync_of(j, g) for _, g in order)
        _gang_rules(out, job, r, d, entries, fails)
        earliest = job.profile.launch if r == 0 else 0.0
        prev = (ready[j, r - 1], paces[j, r - 1]) if (j, r - 1) in ready else None
        overflow = []
        for t, g in order:
            assert t.failed_at is not None  # grouped so
            f = t.failed_at
            _resolve(instance, t, d, max(abs(t.start), abs(f)))
            _start_rules(out, t, job, d, prev)
            if t.train_start is not None:
                flag(
                    "failed-attempt",
                    f"{what}: {_name(t)} has a train_start; a failed "
                    "attempt never trains (failed_at is its training "
                    "start)",
                    t,
                )
            if before(f, t.start + earliest, d):
                flag(
                    "launch",
                    f"failed attempt {_name(t)} fails at {_time(f)}, before its "
                    f"start {_time(t.start)} + launch {earliest:g}",
                    t,
                )
            occupancy[g].append((t.start, max(t.start, f), t))
            lost += max(0.0, f - t.start)
            memory = instance.gpus[g].memory
            if memory is not None:
                # a hold ending at f itself counts: simultaneous events may be processed
                # in either order
                need = job.profile.actual_gpu_memory + sum(
                    h[7]
                    for h in holds.get(g, ())
                    if not before(f, h[0], min(d, h[2] - h[0]))
                    and not before(h[2], f, min(d, h[2] - h[0]))
                )
                overflow.append(_exceeds(need, memory))
        if not any(overflow):
            flag(
                "failed-attempt",
                f"{what} did not run out of GPU memory at "
                f"{_time(max(fails))}: "
                "the actual memory held on its GPUs plus its own fits",
                first,
            )
        attempts[j, r].append((s, max(fails), first))
    for (j, r), tries in attempts.items():
        tries.sort(key=lambda a: a[:2])
        later = [(s, t) for s, _, t in tries[1:]]
        if (j, r) in rounds:
            final = min(rounds[j, r], key=lambda e: e[0].start)[0]
            later.append((final.start, final))
        for (_, f, _), (s, t) in zip(tries, later, strict=False):
            if before(s, f, pace[j, r]):
                flag(
                    "failed-attempt",
                    f"round {r} of job {jobs[j].id!r} starts again at "
                    f"{_time(s)}, before its failed attempt failed at "
                    f"{_time(f)}",
                    t,
                )
    return len(failed), lost


def _open_near(spans: list[tuple[float, float]]) -> list[list[int]]:
    """For each span i = (start, end) of one GPU, the spans (indices ascending, i included)
    that may be open at its start: starting by s_i + slack and ending from s_i − slack,
    slack bounding every :func:`time_tolerance` among them. A superset of the spans open at
    s_i within tolerance, to which callers apply the exact rule; a sweep in start order, so
    O(n log n + overlaps) instead of comparing every pair."""
    if not spans:
        return []
    longest = max(end - start for start, end in spans)
    largest = max(max(abs(start), abs(end)) for start, end in spans)
    slack = 2 * time_tolerance(longest, largest)
    order = sorted(range(len(spans)), key=lambda i: spans[i][0])
    starts = [spans[i][0] for i in order]
    out: list[list[int]] = [[] for _ in spans]
    active: list[int] = []  # started before, possibly still open
    for pos, i in enumerate(order):
        s = spans[i][0]
        active = [k for k in active if spans[k][1] >= s - slack]
        ahead = order[pos : bisect.bisect_right(starts, s + slack)]
        out[i] = sorted(active + ahead)
        active.append(i)
    return out


def _unrated(instance: Instance, tasks: list[Task], g: int) -> bool:
    """Whether two tasks training together on GPU ``g`` have no co-location rates."""
    j, k = (instance.job_index[t.job] for t in tasks)
    return instance.colocated_rate(j, k, g) is None


def _contended(items: list[tuple[float, float, float, dict[str, int]]]) -> list[float]:
    """Training end of each (train start, pace, flow time c, own flows by worker link)
    round under link contention, simulated event by event: while its busiest link carries F
    flows of the rounds training (own included), n = its most own flows on one link, a round
    progresses at pace / (pace + c·(F − n)) (1 when F = n or c = 0); it ends once it has
    received its pace. Each step consumes a start or the earliest projected end, which is
    then final."""
    end = [math.nan] * len(items)
    pending = sorted(range(len(items)), key=lambda i: items[i][0])
    remaining: dict[int, float] = {}
    now, nxt = -math.inf, 0
    while nxt < len(pending) or remaining:
        load: dict[str, int] = defaultdict(int)
        for i in remaining:
            for h, n in items[i][3].items():
                load[h] += n
        rate = {}
        for i in remaining:
            _, pace, c, flows = items[i]
            extra = max(load[h] for h in flows) - max(flows.values())
            rate[i] = 1.0 if extra <= 0 or c <= 0 else pace / (pace + c * extra)
        projected = {i: now + left / rate[i] for i, left in remaining.items()}
        candidates = list(projected.values())
        if nxt < len(pending):
            candidates.append(items[pending[nxt]][0])
        t = min(candidates)
        for i in remaining:
            remaining[i] -= (t - now) * rate[i]
        now = t
        for i in [i for i in remaining if projected[i] <= now]:
            del remaining[i]
            end[i] = now
        while nxt < len(pending) and items[pending[nxt]][0] <= now:
            i = pending[nxt]
            nxt += 1
            remaining[i] = items[i][1]
    return end


def _progress(
    items: list[tuple[float, float, float, bool]],
    given: dict[int, float] | None = None,
    pair_rate: Callable[[int, int], float | None] | None = None,
) -> list[float]:
    """Training end of each (train start, work, util, exclusive) task on one GPU: exclusive
    tasks take exactly their work (or end at ``given[i]`` where given: link contention); the
    others progress at 1 / max(1, summed utilisation of the tasks training) (processor
    sharing, simulated event by event), or with ``pair_rate`` (space sharing) at 1 alone and
    at ``pair_rate(i, k)`` while exactly one other task k trains (1 / n for n tasks or a pair
    without rates, which the caller flags).

    Every step consumes at least one event (a start, an exclusive end, or the earliest
    projected end, which is then final), so the loop ends after at most 2·len(items) steps
    even where a step is too small to move the clock (times near 1e16).
    """
    given = given or {}
    end = [given.get(i, a + w) if x else math.nan for i, (a, w, _, x) in enumerate(items)]
    pending = sorted(range(len(items)), key=lambda i: items[i][0])
    remaining: dict[int, float] = {}
    fixed: set[int] = set()
    now, nxt = -math.inf, 0

    def rates() -> dict[int, float]:
        training = [*remaining, *fixed]
        if pair_rate is None:
            load = sum(items[i][2] for i in training)
            return dict.fromkeys(remaining, 1.0 / max(1.0, load))
        out = {}
        for i in remaining:
            others = [k for k in training if k != i]
            rate = pair_rate(i, others[0]) if len(others) == 1 else None
            out[i] = 1.0 if not others else rate if rate is not None else 1 / len(training)
        return out

    while nxt < len(pending) or remaining or fixed:
        rate = rates()
        projected = {i: now + left / rate[i] for i, left in remaining.items()}
        candidates = [end[i] for i in fixed] + list(projected.values())
        if nxt < len(pending):
            candidates.append(items[pending[nxt]][0])
        t = min(candidates)
        for i in remaining:
            remaining[i] -= (t - now) * rate[i]
        now = t
        for i in [i for i in remaining if projected[i] <= now]:
            del remaining[i]
            end[i] = now
        fixed = {i for i in fixed if end[i] > now}
        while nxt < len(pending) and items[pending[nxt]][0] <= now:
            i = pending[nxt]
            nxt += 1
            if items[i][3]:
                fixed.add(i)
            else:
                remaining[i] = items[i][1]
    return end
