"""The independent schedule checker: the source of truth for feasibility and objective.

:func:`check` reports **every** violation of DESIGN.md §1 in either execution mode and
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
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from optsched.instance import Instance
from optsched.metrics import schedule_metrics
from optsched.schedule import Schedule, Task

REL_TOL = 1e-9


def _tol(*values: float) -> float:
    return REL_TOL * max(1.0, *(abs(v) for v in values))


def _before(a: float, b: float) -> bool:
    """``a < b`` beyond the tolerance 1e-9 · max(1, |a|, |b|)."""
    return a < b - _tol(a, b)


@dataclass(frozen=True)
class Violation:
    """One violated rule, naming the task (and GPU) concerned where there is one."""

    kind: str
    message: str
    job: str | None = None
    round: int | None = None
    task: int | None = None
    gpu: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "job": self.job, "round": self.round, "task": self.task,
                "gpu": self.gpu, "message": self.message}


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check` found.

    ``objective`` (Σ w_j C_j), ``completion`` and ``metrics`` are ``None`` unless every task
    appears exactly once on a known, eligible GPU.
    """

    mode: str
    violations: tuple[Violation, ...]
    objective: float | None = None
    completion: dict[str, float] | None = None
    metrics: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def feasible(self) -> bool:
        return not self.violations

    def kinds(self) -> set[str]:
        return {v.kind for v in self.violations}

    def to_dict(self) -> dict[str, Any]:
        """The ``optsched check --json`` object."""
        return {"feasible": self.feasible, "mode": self.mode, "objective": self.objective,
                "metrics": self.metrics,
                "violations": [v.to_dict() for v in self.violations]}


def _name(t: Task) -> str:
    return f"task ({t.job!r}, round {t.round}, task {t.task})"


def check(instance: Instance, schedule: Schedule) -> CheckReport:
    """Check ``schedule`` against ``instance`` in the schedule's mode (else the instance's).

    Returns every violation found, never just the first, and the recomputed objective and
    metrics when every task appears exactly once on a known, eligible GPU.
    """
    mode = schedule.mode or instance.mode
    out: list[Violation] = []

    def flag(kind: str, message: str, t: Task | None = None) -> None:
        ids = () if t is None else (t.job, t.round, t.task, t.gpu)
        out.append(Violation(kind, message, *ids))

    if schedule.instance != instance.name:
        flag("instance", f"schedule is for instance {schedule.instance!r}, "
                         f"not {instance.name!r}")

    # 1. references, indices, eligibility; group the timed tasks by round
    count: dict[tuple[str, int, int], int] = defaultdict(int)
    rounds: dict[tuple[int, int], list[tuple[Task, int]]] = defaultdict(list)
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
            flag("unknown-index", f"{_name(t)}: job {t.job!r} has rounds 0..{job.rounds - 1} "
                                  f"and tasks 0..{job.tasks_per_round - 1}", t)
            continue
        count[t.key] += 1
        if count[t.key] > 1:  # only the first occurrence is timed
            if count[t.key] == 2:
                flag("duplicate", f"{_name(t)} appears more than once", t)
            continue
        if g is None:
            continue
        if instance.compute[j, g] == float("inf"):
            flag("ineligible", f"{_name(t)}: job {t.job!r} cannot run on GPU {t.gpu!r} "
                               f"(type {instance.gpus[g].type!r})", t)
            continue
        rounds[j, t.round].append((t, g))

    complete = not out or all(v.kind == "instance" for v in out)
    for job in instance.jobs:
        for r in range(job.rounds):
            for k in range(job.tasks_per_round):
                if (job.id, r, k) not in count:
                    complete = False
                    out.append(Violation("missing", f"task ({job.id!r}, round {r}, task {k}) "
                                         "is not scheduled", job.id, r, k))

    # 2. timing: arrival, round barriers, gang rules; GPU occupancy
    ready: dict[tuple[int, int], float] = {}
    occupancy: dict[int, list[tuple[float, float, Task]]] = defaultdict(list)
    for (j, r), entries in sorted(rounds.items()):
        job = instance.jobs[j]
        finish = [t.start + instance.compute[j, g] + instance.sync[j, g] for t, g in entries]
        ready[j, r] = max(finish)
        pace = max(instance.compute[j, g] + instance.sync[j, g] for _, g in entries)
        prev = ready.get((j, r - 1))
        for t, g in entries:
            if _before(t.start, job.arrival):
                flag("arrival", f"{_name(t)} starts at {t.start:g}, before job {t.job!r} "
                                f"arrives at {job.arrival:g}", t)
            if prev is not None and _before(t.start, prev):
                flag("barrier", f"{_name(t)} starts at {t.start:g}, before round {r - 1} of "
                                f"job {t.job!r} is ready at {prev:g}", t)
            busy = instance.compute[j, g] if mode == "relaxed" else pace
            occupancy[g].append((t.start, t.start + busy, t))
        if mode == "gang":
            starts = [t.start for t, _ in entries]
            if _before(min(starts), max(starts)):
                out.append(Violation("gang-start", f"gang round {r} of job {job.id!r}: tasks "
                                     f"start at {min(starts):g}..{max(starts):g}, not together",
                                     job.id, r))
            seen: dict[int, Task] = {}
            for t, g in entries:
                if g in seen:
                    flag("gang-distinct", f"{_name(t)} shares GPU {t.gpu!r} with "
                                          f"{_name(seen[g])} in one gang round", t)
                seen.setdefault(g, t)

    for g, intervals in occupancy.items():
        intervals.sort(key=lambda iv: (iv[0], iv[1]))
        holder = intervals[0]
        for iv in intervals[1:]:
            if _before(iv[0], holder[1]):
                other = holder[2]
                flag("overlap", f"{_name(iv[2])} on GPU {instance.gpus[g].id!r} starts at "
                                f"{iv[0]:g}, while {_name(other)} occupies it until "
                                f"{holder[1]:g}", iv[2])
            if iv[1] > holder[1]:
                holder = iv

    if not complete:
        return CheckReport(mode, tuple(out))
    completion = {job.id: ready[j, job.rounds - 1] for j, job in enumerate(instance.jobs)}
    objective = sum(job.weight * completion[job.id] for job in instance.jobs)
    metrics = schedule_metrics(
        completion,
        {job.id: job.arrival for job in instance.jobs},
        {job.id: job.weight for job in instance.jobs},
        {gpu.id: [(a, b) for a, b, _ in occupancy.get(g, [])]
         for g, gpu in enumerate(instance.gpus)},
    )
    return CheckReport(mode, tuple(out), objective, completion, metrics)
