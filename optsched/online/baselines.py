"""The baselines of the Hare paper's simulations (HPDC'22 §7, seeds.md §1.8) and Tiresias,
registered as ``simulate`` methods. Each is a reconstruction in the spirit of the cited
system, within DESIGN.md's model; what each assumes is in its docstring.

| policy     | mode    | clairvoyant | in the spirit of                                       |
|------------|---------|-------------|--------------------------------------------------------|
| ``fifo``     | gang    | no          | Gavel's FIFO: arrival order, fastest idle GPUs, strict |
| ``srtf``     | relaxed | yes         | shortest remaining time first                          |
| ``tiresias`` | gang    | no          | Tiresias' discretised 2D-LAS (NSDI'19)                 |
| ``homo``     | relaxed | yes         | Sched_Homo (MobiHoc'20): heterogeneity-oblivious       |
| ``allox``    | relaxed | yes         | AlloX (EuroSys'20): job-level min-cost matching        |
| ``replay``   | both    | yes         | replay of an offline schedule's per-GPU task order     |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.errors import InputError
from optsched.instance import Instance
from optsched.online.policies import fill_earliest_available, fill_fastest
from optsched.online.simulator import Decision, JobState, PolicyError, View
from optsched.params import float_list_param, nonnegative_float_param
from optsched.schedule import Schedule
from optsched.solve import register


def fill_gangs(order: list[JobState], idle: list[int], *, strict: bool,
               rank: Callable[[JobState, int], Any]) -> list[Decision]:
    """Each job, in ``order``, on its K eligible idle GPUs of smallest ``rank(job, g)``; a job
    that does not fit stops everything (``strict``) or is skipped."""
    free = list(idle)
    out: list[Decision] = []
    for job in order:
        usable = sorted((g for g in free if np.isfinite(job.compute[g])),
                        key=lambda g: rank(job, g))
        if len(usable) < job.tasks_per_round:
            if strict:
                break
            continue
        chosen = usable[:job.tasks_per_round]
        out.append((job.index, tuple(chosen)))
        free = [g for g in free if g not in chosen]
    return out


@dataclass
class FIFO:
    """Gavel-style FIFO in gang mode: by arrival, each round on the K idle GPUs with the
    smallest compute + sync; strict order (no backfilling)."""

    name: str = "fifo"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))

    def decide(self, view: View) -> list[Decision]:
        order = sorted(view.waiting, key=lambda j: (j.arrival, j.index))
        return fill_gangs(order, view.idle, strict=True,
                          rank=lambda job, g: (job.compute[g] + job.sync[g], g))


@dataclass
class SRTF:
    """Shortest remaining time first (clairvoyant): remaining tasks × fastest compute time,
    then mapping A (fastest idle GPU); preemption only at task boundaries."""

    name: str = "srtf"
    clairvoyant: bool = True
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed"}))

    def decide(self, view: View) -> list[Decision]:
        oracle = view.oracle
        assert oracle is not None  # the simulator gives clairvoyant policies an oracle
        order = sorted(view.waiting, key=lambda j: (
            oracle.remaining_tasks(j) * float(np.min(j.compute)) / j.weight, j.arrival, j.index))
        return fill_fastest(order, view)


@dataclass
class Tiresias:
    """Discretised two-dimensional LAS (Tiresias, NSDI'19), gang mode, non-clairvoyant.

    Attained service = GPU-seconds held (K × pace per round); level = number of
    ``thresholds`` at or below it (Tiresias' simulator: 3250 and 7200 GPU·s, seeds.md §1.7);
    FIFO by arrival within a level; a job waiting longer than ``starvation`` × its service
    returns to level 0 (0: off). Heterogeneity-oblivious placement: the K eligible idle GPUs
    free the longest (ties: lowest index); a job that does not fit is skipped, so a later one
    may start.
    """

    thresholds: tuple[float, ...] = (3250.0, 7200.0)
    starvation: float = 0.0
    name: str = "tiresias"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))

    def _key(self, job: JobState, now: float) -> tuple[int, float, int]:
        level = sum(job.attained >= q for q in self.thresholds)
        if self.starvation > 0 and now - job.last_start > self.starvation * job.attained > 0:
            level = 0
        return level, job.arrival, job.index

    def decide(self, view: View) -> list[Decision]:
        order = sorted(view.waiting, key=lambda j: self._key(j, view.time))
        return fill_gangs(order, view.idle, strict=False,
                          rank=lambda job, g: (view.free_since[g], g))


@dataclass
class Homo:
    """In the spirit of Sched_Homo (Zhang et al., MobiHoc'20), relaxed mode: clairvoyant
    about a job's size once it arrives, heterogeneity-oblivious, no job preemption.

    A task's time is estimated by the job's mean over its eligible GPU types; jobs that have
    started keep priority in the order they started, the others follow by weighted shortest
    remaining work (w_j / (remaining tasks × estimate)); each task goes on the eligible idle
    GPU free the longest (ties: lowest index; speeds ignored).
    """

    name: str = "homo"
    clairvoyant: bool = True
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed"}))

    def decide(self, view: View) -> list[Decision]:
        oracle = view.oracle
        assert oracle is not None

        def key(job: JobState) -> tuple[int, float, float, int]:
            if job.tasks_started:
                return 0, job.first_start, job.arrival, job.index
            estimate = float(np.mean(job.compute[np.isfinite(job.compute)]))
            return 1, oracle.remaining_tasks(job) * estimate / job.weight, job.arrival, job.index

        return fill_earliest_available(sorted(view.waiting, key=key), view)


@dataclass
class AlloX:
    """In the spirit of AlloX (Le et al., EuroSys'20), relaxed mode, clairvoyant: jobs are
    the unit (no intra-job parallelism: at most one task of a job runs at a time), matched to
    idle GPUs by a min-cost bipartite matching (scipy's ``linear_sum_assignment``) with cost
    remaining tasks × compute on that GPU / w_j — heterogeneity-aware at the job level."""

    name: str = "allox"
    clairvoyant: bool = True
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed"}))

    def decide(self, view: View) -> list[Decision]:
        from scipy.optimize import linear_sum_assignment

        oracle = view.oracle
        assert oracle is not None
        jobs = [job for job in view.waiting if job.running == 0]
        if not jobs:
            return []
        big = 1e300
        cost = np.array([[oracle.remaining_tasks(job) * job.compute[g] / job.weight
                          if np.isfinite(job.compute[g]) else big for g in view.idle]
                         for job in jobs])
        rows, cols = linear_sum_assignment(cost)
        return [(jobs[r].index, view.idle[c]) for r, c in zip(rows, cols, strict=True)
                if cost[r, c] < big]


@dataclass
class Replay:
    """Replays a schedule's per-GPU task order (e.g. Hare's offline schedule): each GPU runs
    its tasks in the schedule's order, each as soon as the GPU is idle and the task's round
    is released — so with the schedule's own instance every task starts no later than in the
    schedule. Gang rounds start when all their GPUs are idle. Clairvoyant: the schedule was
    made knowing every job."""

    schedule: Schedule
    name: str = "replay"
    source: str = ""  # the schedule's path, for messages
    clairvoyant: bool = True
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed", "gang"}))
    _queues: dict[int, list[tuple[str, int]]] | None = field(default=None, repr=False)

    def check(self, instance: Instance) -> None:
        """Refuse a schedule that is not one of ``instance``: another instance's name, a task
        twice or missing, an unknown job or GPU, a GPU the job cannot use — an InputError
        naming the schedule (``--param schedule=PATH``) and the first problem."""
        where = f"--param schedule={self.source}" if self.source else "replay schedule"

        def refuse(problem: str) -> None:
            raise InputError(f"{where}: {problem}")

        if self.schedule.instance != instance.name:
            refuse(f"it is a schedule of instance {self.schedule.instance!r}, not "
                   f"{instance.name!r}")
        seen: set[tuple[str, int, int]] = set()
        for t in self.schedule.tasks:
            if t.job not in instance.job_index:
                refuse(f"unknown job {t.job!r}")
            if t.gpu not in instance.gpu_index:
                refuse(f"unknown GPU {t.gpu!r}")
            j = instance.job_index[t.job]
            job = instance.jobs[j]
            if not (0 <= t.round < job.rounds and 0 <= t.task < job.tasks_per_round):
                refuse(f"job {t.job!r} has no round {t.round} task {t.task}")
            if t.key in seen:
                refuse(f"task ({t.job!r}, round {t.round}, task {t.task}) appears twice")
            seen.add(t.key)
            if not np.isfinite(instance.compute[j, instance.gpu_index[t.gpu]]):
                refuse(f"job {t.job!r} cannot run on GPU {t.gpu!r}")
        if len(seen) != instance.n_tasks:
            for job in instance.jobs:
                for r in range(job.rounds):
                    for k in range(job.tasks_per_round):
                        if (job.id, r, k) not in seen:
                            refuse(f"task ({job.id!r}, round {r}, task {k}) is missing")

    def _queue(self, view: View) -> dict[int, list[tuple[str, int]]]:
        if self._queues is None:
            index = {gid: g for g, gid in enumerate(view.gpu_ids)}
            queues: dict[int, list[tuple[float, str, int]]] = {g: [] for g in index.values()}
            for t in self.schedule.tasks:
                if t.gpu not in index:
                    raise PolicyError(f"replay: the schedule uses unknown GPU {t.gpu!r}")
                queues[index[t.gpu]].append((t.start, t.job, t.round))
            self._queues = {g: [(job, r) for _, job, r in sorted(q, reverse=True)]
                            for g, q in queues.items()}
        return self._queues

    def decide(self, view: View) -> list[Decision]:
        queues = self._queue(view)
        waiting = {job.id: job for job in view.waiting}
        heads: dict[tuple[str, int], list[int]] = {}
        for g in view.idle:
            if queues[g]:
                heads.setdefault(queues[g][-1], []).append(g)
        out: list[Decision] = []
        for (job_id, r), gpus in heads.items():
            job = waiting.get(job_id)
            if job is None or job.rounds_done != r:
                continue
            if view.mode == "gang":
                if len(gpus) < job.tasks_per_round:
                    continue  # some of the round's GPUs are still busy
                gpus = gpus[:job.tasks_per_round]
                out.append((job.index, tuple(gpus)))
            else:
                gpus = gpus[:job.waiting]
                out.extend((job.index, g) for g in gpus)
            for g in gpus:
                queues[g].pop()
        return out


@register("fifo", kind="simulate", modes=("gang",),
          description="Gavel-style FIFO on the fastest idle GPUs (gang, no backfilling)")
def _fifo(params: Mapping[str, str]) -> FIFO:
    return FIFO()


@register("srtf", kind="simulate", modes=("relaxed",),
          description="shortest remaining time first (clairvoyant), fastest idle GPU")
def _srtf(params: Mapping[str, str]) -> SRTF:
    return SRTF()


@register("tiresias", kind="simulate", modes=("gang",), params={
    "thresholds": "attained-service thresholds in GPU-seconds, comma-separated "
                  "(default 3250,7200)",
    "starvation": "promote a job waiting longer than this × its service (default 0: off)"},
    description="Tiresias' discretised 2D-LAS (gang, heterogeneity-oblivious)")
def _tiresias(params: Mapping[str, str]) -> Tiresias:
    return Tiresias(float_list_param(params, "thresholds", (3250.0, 7200.0)),
                    nonnegative_float_param(params, "starvation"))


@register("homo", kind="simulate", modes=("relaxed",),
          description="Sched_Homo-like: heterogeneity-oblivious, no job preemption "
                      "(clairvoyant)")
def _homo(params: Mapping[str, str]) -> Homo:
    return Homo()


@register("allox", kind="simulate", modes=("relaxed",),
          description="AlloX-like job-level min-cost matching, no intra-job parallelism "
                      "(clairvoyant)")
def _allox(params: Mapping[str, str]) -> AlloX:
    return AlloX()


@register("replay", kind="simulate", params={"schedule": "path of the schedule to replay"},
          description="replay an offline schedule's per-GPU task order (both modes)")
def _replay(params: Mapping[str, str]) -> Replay:
    from optsched.io import load_schedule

    if "schedule" not in params:
        raise InputError("replay needs --param schedule=PATH")
    return Replay(load_schedule(params["schedule"]), source=params["schedule"])
