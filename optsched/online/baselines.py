"""The baselines of the Hare paper's simulations (HPDC'22 §7) and Tiresias,
registered as ``simulate`` methods. Each is a reconstruction in the spirit of the cited
system, within optsched's model (docs/model.md); what each assumes is in its docstring.

*Execution model.* Hare's relaxed synchronisation (a round's tasks start independently, each
on any GPU, docs/model.md) is Hare's own contribution; the systems below are not Hare-aware,
so each runs in its own model: synchronous data parallelism in **gang** mode (a round's K
tasks start together on K GPUs and hold them for the slowest one plus sync). AlloX runs a
job's tasks one at a time (no intra-job parallelism), which the relaxed mode expresses
without giving it anything of Hare's. SRTF and Homo also accept relaxed instances, where
they do get Hare's model (the variants the first Hare study ran).

- ``fifo-perf`` (gang, non-clairvoyant): Gavel's ``fifo_perf`` (alias ``fifo``), the Hare
  paper's Gavel_FIFO: arrival order on the fastest idle GPUs, strict (no backfilling).
- ``fifo-random`` (gang, non-clairvoyant): Gavel's ``fifo``: one random GPU type per job,
  kept until it ends.
- ``srtf`` (gang, clairvoyant): shortest remaining time first, on the fastest GPUs (in
  relaxed mode optionally paced: no task slower than its round's pace).
- ``tiresias`` (gang, non-clairvoyant): Tiresias' discretised 2D-LAS (NSDI'19).
- ``homo`` (gang, clairvoyant): Sched_Homo (MobiHoc'20), heterogeneity-oblivious.
- ``allox`` (relaxed, clairvoyant): AlloX (EuroSys'20), job-level min-cost matching.
- ``replay`` (both modes, clairvoyant): an offline schedule's per-GPU task order.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Literal

import numpy as np

from optsched.errors import InputError
from optsched.instance import Instance
from optsched.online.engine import Decision, PolicyError
from optsched.online.hlas import (
    CALIBRATIONS,
    FinishedSizes,
    after,
    fill_earliest_available,
    fill_fastest,
    quantile_thresholds,
)
from optsched.online.simulator import (
    IdleGPUs,
    JobState,
    Oracle,
    SizeDistribution,
    View,
    WaitingQueue,
    ordered,
)
from optsched.options import Options, choice, number, numbers, text
from optsched.registry import register
from optsched.schedule import Schedule


def fill_gangs(order: Iterable[JobState], view: View, *, strict: bool, by: str) -> list[Decision]:
    """Each job, in ``order``, on its K eligible idle GPUs first ``by`` ``"speed"`` (smallest
    compute + sync, then index) or ``"age"`` (free the longest, then index); a job that does
    not fit stops everything (``strict``) or is skipped. Reads the idle GPUs' indexes, so a
    job costs O(K + GPUs skipped), not a sort of every idle GPU."""
    idle = view.idle
    taken: set[int] = set()
    out: list[Decision] = []
    for job in order:
        if len(taken) == len(idle):
            break
        chosen = _first_usable(job, view, taken, by)
        if chosen is None:
            if strict:
                break
            continue
        taken.update(chosen)
        out.append((job.index, chosen))
    return out


def _first_usable(job: JobState, view: View, taken: set[int], by: str) -> tuple[int, ...] | None:
    """The job's K first eligible idle GPUs not ``taken`` in ``by`` order (None: fewer)."""
    k, idle = job.tasks_per_round, view.idle
    gpus: Iterator[int]
    if by == "age":
        gpus = (g for _, g in idle.by_age)
    elif job.sync_by_class is not None:  # sync uniform per class: merge the classes' lists
        pace = job.by_class + job.sync_by_class
        gpus = (
            g
            for _, g in heapq.merge(
                *(
                    zip(repeat(float(pace[c])), pool)
                    for c, pool in enumerate(idle.by_class)
                    if pool and pace[c] < math.inf
                )
            )
        )
    else:
        gpus = iter(sorted(idle, key=lambda g: (job.compute[g] + job.sync[g], g)))
    chosen = []
    for g in gpus:
        if g not in taken and np.isfinite(job.compute[g]):
            chosen.append(g)
            if len(chosen) == k:
                return tuple(chosen)
    return None


@dataclass
class FIFO:
    """Gavel's ``fifo_perf`` (Narayanan et al., OSDI'20; ``FIFOPolicyWithPerf``) in gang
    mode: by arrival, each round on the K idle GPUs with the smallest compute + sync (Gavel
    re-picks the fastest type every round); strict order (no backfilling). This is the
    Hare paper's Gavel_FIFO, described there as each job on the fastest available GPUs
    (HPDC'22 §7). Registered as ``fifo-perf`` and, for old scripts, ``fifo``.
    """

    name: str = "fifo-perf"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))

    def decide(self, view: View) -> list[Decision]:
        return fill_gangs(ordered(view, self), view, strict=True, by="speed")  # by arrival


@dataclass
class FIFORandom:
    """Gavel's heterogeneity-agnostic ``fifo`` (``FIFOPolicy`` mode ``base``) in gang mode:
    jobs by arrival; a job's first round goes on a GPU type drawn uniformly (seeded) among
    the types with K eligible idle GPUs, and every later round waits for K idle GPUs of that
    type (Gavel keeps a job on its type until it completes). Strict: the first job that
    cannot start blocks the ones behind it; jobs already started take their GPUs first, as
    in Gavel, where they keep their allocation between rounds. A job that no single type
    can hold (fewer than K eligible GPUs of every type; Gavel would never start it) takes
    any K eligible idle GPUs, lowest index first.
    """

    seed: int = 0
    name: str = "fifo-random"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))
    _type: dict[int, str] = field(default_factory=dict, init=False, repr=False)
    _rng: np.random.Generator = field(
        default_factory=lambda: np.random.default_rng(0), init=False, repr=False
    )
    _fits: dict[int, bool] = field(default_factory=dict, init=False, repr=False)
    _kind: tuple[object, dict[str, int]] = field(default=(None, {}), init=False, repr=False)

    def priority(self, job: JobState, now: float, oracle: object = None) -> tuple[int, str, float]:
        """Started jobs first, grouped by their type, then the others; by arrival."""
        gtype = self._type.get(job.index)
        return (1, "", job.arrival) if gtype is None else (0, gtype, job.arrival)

    def calibrate(self, sizes: SizeDistribution) -> None:
        """Start a run: forget the types drawn, reseed."""
        self._type, self._rng, self._fits = {}, np.random.default_rng(self.seed), {}

    def decide(self, view: View) -> list[Decision]:
        queue = ordered(view, self)
        out: list[Decision] = []
        # per GPU type (a speed class) its idle GPUs; every pick takes the lowest indices of a
        # type, so what is left of a type is the suffix after used[type]
        if self._kind[0] is not view.idle:
            self._kind = (
                view.idle,
                {view.gpu_types[g]: c for g, c in enumerate(view.idle.class_of)},
            )
        kind = self._kind[1]
        pools = {t: view.idle.by_class[c] for t, c in kind.items()}
        used = dict.fromkeys(pools, 0)

        def left(t: str) -> int:
            return len(pools[t]) - used[t]

        def eligible(job: JobState, t: str) -> bool:
            return bool(job.by_class[kind[t]] < math.inf)

        def take(job: JobState, gtype: str) -> tuple[int, ...]:
            """The job's K lowest-index idle GPUs of ``gtype`` ("*": of its types)."""
            types = [gtype] if gtype != "*" else [t for t in pools if eligible(job, t)]
            gpus = tuple(
                heapq.merge(*(pools[t][used[t] : used[t] + job.tasks_per_round] for t in types))
            )[: job.tasks_per_round]
            for g in gpus:
                used[view.gpu_types[g]] += 1
            return gpus

        def room(job: JobState, gtype: str) -> int:
            return sum(left(t) for t in pools if gtype in ("*", t) and eligible(job, t))

        # started jobs take their GPUs first, in arrival order; their types are disjoint, so
        # each type's jobs are served on their own, unless a "*" job (any type) waits
        started: list[tuple[tuple[float, int], Decision]] = []
        if next(iter(queue.after((0, "*"))), ((1,),))[0][:2] == (0, "*"):
            for job in sorted(
                (job for key, job in queue.items() if key[0] == 0),
                key=lambda job: (job.arrival, job.index),
            ):
                gtype = self._type[job.index]
                if room(job, gtype) >= job.tasks_per_round:
                    started.append(((job.arrival, job.index), (job.index, take(job, gtype))))
        else:
            for gtype in pools:
                for key, job in queue.after((0, gtype)):
                    if key[:2] != (0, gtype) or not left(gtype):
                        break
                    if room(job, gtype) >= job.tasks_per_round:
                        started.append(((job.arrival, job.index), (job.index, take(job, gtype))))
        out.extend(decision for _, decision in sorted(started))
        for _, job in queue.after((1,)):
            types = sorted(t for t in pools if left(t) and eligible(job, t))
            fits = [t for t in types if left(t) >= job.tasks_per_round]
            if not fits and not self._fits_one_type(job, view):
                fits = ["*"]  # no type could ever hold K GPUs: any eligible GPUs
            if not fits or room(job, "*") < job.tasks_per_round:
                break
            gtype = self._type[job.index] = fits[int(self._rng.integers(len(fits)))]
            out.append((job.index, take(job, gtype)))
        return out

    def _fits_one_type(self, job: JobState, view: View) -> bool:
        """Whether some GPU type has K GPUs the job can use (cached per job)."""
        fits = self._fits.get(job.index)
        if fits is None:
            types = [
                view.gpu_types[g]
                for g in range(len(view.gpu_types))
                if np.isfinite(job.compute[g])
            ]
            fits = self._fits[job.index] = any(
                types.count(t) >= job.tasks_per_round for t in set(types)
            )
        return fits


@dataclass
class SRTF:
    """Shortest remaining time first (clairvoyant): jobs by remaining tasks × fastest
    compute / w_j. Gang mode (its own model, synchronous data parallelism): each round on
    the K idle GPUs of smallest compute + sync, a job that does not fit is skipped.
    Relaxed mode (Hare's model, the first study's variant): each waiting task on the fastest
    idle GPU (HLAS's mapping A). Preemption only at round (gang) or task (relaxed) ends.

    ``placement="paced"`` (relaxed mode; ours, not a published rule): a round lasts as long
    as its slowest task, so a task never takes a GPU slower than the ones its round's
    started tasks run on (the job's fastest type always qualifies), and a round's first
    task takes none more than ``slowdown`` × the job's fastest compute; a task that finds
    no such GPU idle waits for one, and the jobs after it go on. The pace compares compute
    times only: a round's sync times are not the policy's to choose."""

    name: str = "srtf"
    clairvoyant: bool = True
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang", "relaxed"}))
    placement: str = "fastest"
    slowdown: float = 2.0
    #: paced: per job, (its state in this run, its current round, the round's first task's
    #: compute time: its pace); a run's states are new objects, so a reused policy starts anew
    _paces: dict[int, tuple[JobState, int, float]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.placement not in ("fastest", "paced"):
            raise InputError(f"srtf: placement must be fastest or paced, got {self.placement!r}")
        if not self.slowdown >= 1:
            raise InputError(f"srtf: slowdown must be at least 1, got {self.slowdown!r}")

    def priority(self, job: JobState, now: float, oracle: Oracle | None) -> tuple[float, float]:
        assert oracle is not None  # the simulator gives clairvoyant policies an oracle
        return oracle.remaining_tasks(job) * job.fastest / job.weight, job.arrival

    def decide(self, view: View) -> list[Decision]:
        waiting = ordered(view, self)
        if view.mode == "gang":
            if self.placement != "fastest":
                raise InputError(
                    f"srtf: placement={self.placement} is for relaxed mode (a gang round "
                    "starts on its K GPUs together)"
                )
            return fill_gangs(waiting, view, strict=False, by="speed")
        return fill_fastest(
            waiting, view, admit=self._paced if self.placement == "paced" else None
        )

    def _paced(self, job: JobState, compute: float) -> bool:
        """Whether a task of ``job`` may start where it computes in ``compute`` (class doc),
        and if so, the round's pace updated."""
        state, current, pace = self._paces.get(job.index, (job, -1, 0.0))
        first = state is not job or current != job.rounds_done
        if compute > (self.slowdown * job.fastest if first else pace):
            return False
        if first:  # later tasks of the round compute no slower, so this one sets its pace
            self._paces[job.index] = (job, job.rounds_done, compute)
        return True


@dataclass
class Tiresias:
    """Discretised two-dimensional LAS (Gu et al., Tiresias, NSDI'19 §4), gang mode,
    non-clairvoyant.

    Attained service = GPU-seconds held (K × pace per round); level = number of thresholds
    at or below it; FIFO by arrival within a level; a job waiting longer than ``starvation``
    × its service returns to level 0 (0: off). ``thresholds=None`` (default) derives them
    as HLAS does, at the ``quantiles`` (0.5, 0.8) of job sizes in GPU-seconds, from the
    ``calibration`` HLAS names: ``history`` (default), the GPU-seconds the jobs finished so
    far held (:class:`~optsched.online.hlas.FinishedSizes`), or ``workload``, every
    job's tasks × mean compute + sync over its eligible GPUs
    (:class:`~optsched.online.simulator.SizeDistribution`, future jobs included);
    ``thresholds=(3250, 7200)`` are
    the GPU·s limits of Tiresias' own simulator, tuned to the Philly trace,
    which the jobs of a Hare instance (≤ 1.4k GPU·s) never reach. Heterogeneity-oblivious
    placement: the K eligible idle GPUs free the longest (ties: lowest index); a job that
    does not fit is skipped, so a later one may start.
    """

    thresholds: tuple[float, ...] | None = None
    starvation: float = 0.0
    quantiles: tuple[float, ...] = (0.5, 0.8)
    calibration: str = "history"
    name: str = "tiresias"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))
    levels: tuple[float, ...] = field(default=(), init=False)
    _history: FinishedSizes | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.levels = self.thresholds or ()
        if self.calibration not in CALIBRATIONS:
            raise InputError(
                f"tiresias: calibration must be one of "
                f"{', '.join(CALIBRATIONS)}, got {self.calibration!r}"
            )

    def calibrate(self, sizes: SizeDistribution) -> None:
        """Set the thresholds for a run: the given ones, or derived (none yet with
        ``calibration=history``)."""
        self._history = None
        if self.thresholds is not None:
            self.levels = self.thresholds
        elif self.calibration == "workload":
            self.levels = quantile_thresholds(sizes.gpu_seconds, self.quantiles)
        else:
            self.levels, self._history = (), FinishedSizes(self.quantiles)

    def finished(self, job: JobState, now: float) -> bool:
        """A job finished with the GPU-seconds it held its size: re-derive the thresholds
        (``calibration=history``); True when they changed."""
        new = None if self._history is None else self._history.add(job.attained, self.levels)
        self.levels = self.levels if new is None else new
        return new is not None

    def priority(self, job: JobState, now: float, oracle: object = None) -> tuple[int, float]:
        """(level, arrival); a starving job is in level 0 until it starts again."""
        level = 0 if self._starving(job, now) else self._level(job)
        return level, job.arrival

    def _level(self, job: JobState) -> int:
        return sum(job.attained >= q for q in self.levels)

    def _starving(self, job: JobState, now: float) -> bool:
        return self.starvation > 0 and now - job.last_start > self.starvation * job.attained > 0

    def revisit(self, job: JobState, now: float) -> float:
        """When a job in a lower level may start to starve (math.inf: it cannot)."""
        if self.starvation <= 0 or not self._level(job) or self._starving(job, now):
            return math.inf
        return after(now, job.last_start + self.starvation * job.attained)

    def decide(self, view: View) -> list[Decision]:
        return fill_gangs(ordered(view, self), view, strict=False, by="age")


@dataclass
class Homo:
    """In the spirit of Sched_Homo (Zhang et al., MobiHoc'20): clairvoyant about a job's size
    once it arrives, heterogeneity-oblivious, no job preemption.

    A task's time is estimated by the job's mean over its eligible GPU types; jobs that have
    started keep priority in the order they started, the others follow by weighted shortest
    remaining work (w_j / (remaining tasks × estimate)). Gang mode (its own model: it
    assumes identical GPUs, so a round's workers run together): each round on the K
    eligible idle GPUs free the longest, a job that does not fit is skipped. Relaxed mode
    (Hare's model, the first study's variant): each task on the eligible idle GPU free the
    longest. Ties: lowest index; speeds ignored.
    """

    name: str = "homo"
    clairvoyant: bool = True
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang", "relaxed"}))

    def priority(
        self, job: JobState, now: float, oracle: Oracle | None
    ) -> tuple[int, float, float]:
        assert oracle is not None
        if job.tasks_started:
            return 0, job.first_start, job.arrival
        return 1, oracle.remaining_tasks(job) * job.mean_compute / job.weight, job.arrival

    def decide(self, view: View) -> list[Decision]:
        waiting = ordered(view, self)
        if view.mode == "gang":
            return fill_gangs(waiting, view, strict=False, by="age")
        return fill_earliest_available(waiting, view)


@dataclass
class AlloX:
    """In the spirit of AlloX (Le et al., EuroSys'20), clairvoyant: jobs are the unit (no
    intra-job parallelism: at most one task of a job runs at a time, so a job's K tasks of
    a round run one after another), matched to idle GPUs by a min-cost bipartite matching
    (scipy's ``linear_sum_assignment``, :mod:`optsched.online.assignment`) with cost
    remaining tasks × compute on that GPU / w_j — heterogeneity-aware at the job level.
    Relaxed mode only lets the tasks run in sequence; with one task at a time, Hare's
    relaxed synchronisation gives it nothing."""

    name: str = "allox"
    clairvoyant: bool = True
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed"}))

    def waiting_queue(self, states: dict[int, JobState]) -> WaitingQueue:
        return _ArrayQueue(states)  # by arrival

    def decide(self, view: View) -> list[Decision]:
        oracle = view.oracle
        assert oracle is not None
        queue = ordered(view, self)
        assert isinstance(queue, _ArrayQueue)
        index = queue.order()
        if len(index) == 1:
            return self._one_job(view, oracle, queue, int(index[0]))
        return self._match(view, oracle, queue, index)

    @staticmethod
    def _match(
        view: View, oracle: Oracle, queue: _ArrayQueue, index: np.ndarray
    ) -> list[Decision]:
        """The waiting jobs ``index`` (queue order) matched to the idle GPUs."""
        from optsched.online.assignment import linear_sum_assignment

        table = queue.table[index]
        free = table[:, _ArrayQueue.RUNNING] == 0
        if not free.all():
            if not free.any():
                return []
            index, table = index[free], table[free]
        idle = view.idle.array()
        remaining = oracle.remaining_tasks_of(
            index, *(table[:, c] for c in _ArrayQueue.PROGRESS)
        )  # ≥ 1: a waiting job has a task waiting
        weights = table[:, _ArrayQueue.WEIGHT]
        columns = queue.time_columns(view.idle)
        if len(idle) == 1:  # one GPU: the cheapest job, the first of equals as scipy's
            one = remaining * table[:, columns[idle[0]]] / weights
            best = int(np.argmin(one))
            return [(int(index[best]), int(idle[0]))] if one[best] < np.inf else []
        times = table[:, columns[idle]]  # = compute[j, idle]
        cost = remaining[:, None] * times / weights[:, None]  # ∞ where a job cannot run
        cost[cost == np.inf] = _BIG
        rows, cols = linear_sum_assignment(cost)
        return [
            (int(index[r]), int(idle[c]))
            for r, c in zip(rows.tolist(), cols.tolist(), strict=True)
            if cost[r, c] < _BIG
        ]

    @staticmethod
    def _one_job(view: View, oracle: Oracle, queue: _ArrayQueue, j: int) -> list[Decision]:
        """:meth:`_match` of one waiting job ``j`` (on a light load, nearly every decision),
        its numbers read as scalars: the same arithmetic, and the matching of one row is its
        cheapest column, the first of equals (as scipy's picks it)."""
        running, weight, waiting, done, per_round = queue.table[j, : _ArrayQueue.WIDTH].tolist()
        idle = view.idle.array()
        if running or not len(idle):
            return []
        remaining = oracle.remaining_tasks_at(j, waiting, done, per_round)
        cost = remaining * queue.table[j, queue.time_columns(view.idle)[idle]] / weight
        if len(idle) == 1:  # as _match's one-GPU case
            return [(j, int(idle[0]))] if cost[0] < np.inf else []
        cost[cost == np.inf] = _BIG
        best = int(np.argmin(cost))
        return [(j, int(idle[best]))] if cost[best] < _BIG else []


#: AlloX's cost where a job cannot run: finite, as the matching needs.
_BIG = 1e300


class _ArrayQueue(WaitingQueue):
    """A waiting queue that also keeps one numpy row per job, indexed by job: its progress
    (:data:`FIELDS`) and its compute time per GPU class — so a decision over every waiting
    job runs in C, not Python. A row's progress is written at every ``put`` (the engine puts
    a waiting job whenever its state changes), its times at the first; :meth:`order` gives
    the waiting jobs in queue order, kept beside the sorted entries."""

    __slots__ = ("_columns", "_jobs", "_order", "table")
    FIELDS = ("running", "weight", "waiting", "rounds_done", "tasks_per_round")
    RUNNING, WEIGHT, WIDTH = 0, 1, len(FIELDS)
    #: the columns of Oracle.remaining_tasks_of's progress arguments
    PROGRESS = (2, 3, 4)

    def __init__(self, states: dict[int, JobState]) -> None:
        super().__init__(states)
        self.table = np.empty((0, 0))
        self._columns = np.empty(0, dtype=np.int64)
        self._jobs: list[int] = []  # the job of each entry, in queue order
        self._order: np.ndarray | None = None  # the same as an array (None: to rebuild)

    def time_columns(self, idle: IdleGPUs) -> np.ndarray:
        """The table column of each GPU's compute time (its speed class's)."""
        if len(self._columns) != len(idle.class_of):
            self._columns = len(self.FIELDS) + np.array(idle.class_of, dtype=np.int64)
        return self._columns

    def order(self) -> np.ndarray:
        """The waiting jobs' indices, in queue order."""
        if self._order is None:
            self._order = np.array(self._jobs, dtype=np.int64)
        return self._order

    def put(self, j: int, key: Any) -> None:
        old = self._keys.get(j)
        if old != key:
            entries, jobs = self._entries, self._jobs
            if old is not None:
                at = bisect.bisect_left(entries, (old, j))
                del entries[at], jobs[at]
            at = bisect.bisect_left(entries, (key, j))
            entries.insert(at, (key, j))
            jobs.insert(at, j)
            self._keys[j] = key
            self._order = None
        job = self._states[j]
        if j >= len(self.table):  # grown by doubling, so O(1) amortised
            width = len(self.FIELDS) + len(job.by_class)
            table = np.full((max(2 * len(self.table), j + 1, len(self._states)), width), np.nan)
            if len(self.table):
                table[: len(self.table)] = self.table
            self.table = table
        row = self.table[j]
        if old is None:
            row[len(self.FIELDS) :] = job.by_class
        row[: len(self.FIELDS)] = (
            job.running,
            job.weight,
            job.waiting,
            job.rounds_done,
            job.tasks_per_round,
        )

    def drop(self, j: int) -> None:
        old = self._keys.pop(j, None)
        if old is not None:
            at = bisect.bisect_left(self._entries, (old, j))
            del self._entries[at], self._jobs[at]
            self._order = None


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

    def validate(self, instance: Instance) -> None:
        """Refuse a schedule that is not one of ``instance``: another instance's name, a task
        twice or missing, an unknown job or GPU, a GPU the job cannot use — an InputError
        naming the schedule (``--param schedule=PATH``) and the first problem."""
        where = f"--param schedule={self.source}" if self.source else "replay schedule"

        def refuse(problem: str) -> None:
            raise InputError(f"{where}: {problem}")

        if self.schedule.instance != instance.name:
            refuse(
                f"it is a schedule of instance {self.schedule.instance!r}, not {instance.name!r}"
            )
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
            self._queues = {
                g: [(job, r) for _, job, r in sorted(q, reverse=True)] for g, q in queues.items()
            }
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
                gpus = gpus[: job.tasks_per_round]
                out.append((job.index, tuple(gpus)))
            else:
                gpus = gpus[: job.waiting]
                out.extend((job.index, g) for g in gpus)
            for g in gpus:
                queues[g].pop()
        return out


@register(
    "fifo-perf",
    kind="simulate",
    modes=("gang",),
    description="Gavel's fifo_perf (the Hare paper's Gavel_FIFO): arrival order, "
    "fastest idle GPUs (gang, no backfilling)",
)
def _fifo_perf(options: Options, seed: int) -> FIFO:
    return FIFO()


@register(
    "fifo",
    kind="simulate",
    modes=("gang",),
    description="alias of fifo-perf (Gavel's fifo_perf), kept for old scripts; "
    "Gavel's own fifo is fifo-random",
)
def _fifo(options: Options, seed: int) -> FIFO:
    return FIFO(name="fifo")


@register(
    "fifo-random",
    kind="simulate",
    modes=("gang",),
    description="Gavel's fifo: arrival order, one random GPU type per job, kept "
    "(gang, no backfilling; the run's seed draws the types)",
)
def _fifo_random(options: Options, seed: int) -> FIFORandom:
    return FIFORandom(seed)


@dataclass(frozen=True)
class SRTFOptions(Options):
    """Options of ``srtf``."""

    placement: Literal["fastest", "paced"] = choice(
        "relaxed mode: each task on the fastest idle GPU (fastest; default) or never on one "
        "slower than its round's pace (paced; see slowdown)",
        ("fastest", "paced"),
    )
    slowdown: float = number(
        "paced: a round's first task takes no GPU more than this × the job's fastest "
        "compute (default 2)",
        2.0,
        low=1.0,
    )


@register(
    "srtf",
    kind="simulate",
    modes=("gang", "relaxed"),
    options=SRTFOptions,
    description="shortest remaining time first (clairvoyant), fastest idle GPUs; "
    "gang is its own model, relaxed gets Hare's",
)
def _srtf(options: SRTFOptions, seed: int) -> SRTF:
    return SRTF(placement=options.placement, slowdown=options.slowdown)


@dataclass(frozen=True)
class TiresiasOptions(Options):
    """Options of ``tiresias``."""

    thresholds: tuple[float, ...] | None = numbers(
        "attained-service thresholds in GPU-seconds, comma-separated, or auto (default: the "
        "0.5 and 0.8 quantiles of job sizes, see calibration; Tiresias' simulator used "
        "3250,7200)"
    )
    calibration: Literal["history", "workload"] = choice(
        "whose sizes derived thresholds come from: history (the "
        "jobs finished so far; default) or workload (every job of "
        "the run, arrived or not: leaks future sizes)",
        CALIBRATIONS,
    )
    starvation: float = number(
        "promote a job waiting longer than this × its service (default 0: off)", 0.0
    )


@register(
    "tiresias",
    kind="simulate",
    modes=("gang",),
    options=TiresiasOptions,
    description="Tiresias' discretised 2D-LAS (gang, heterogeneity-oblivious)",
)
def _tiresias(options: TiresiasOptions, seed: int) -> Tiresias:
    return Tiresias(options.thresholds, options.starvation, calibration=options.calibration)


@register(
    "homo",
    kind="simulate",
    modes=("gang", "relaxed"),
    description="Sched_Homo-like: heterogeneity-oblivious, no job preemption "
    "(clairvoyant); gang is its own model, relaxed gets Hare's",
)
def _homo(options: Options, seed: int) -> Homo:
    return Homo()


@register(
    "allox",
    kind="simulate",
    modes=("relaxed",),
    imports=("optsched.online.assignment",),
    description="AlloX-like job-level min-cost matching, no intra-job parallelism (clairvoyant)",
)
def _allox(options: Options, seed: int) -> AlloX:
    return AlloX()


@dataclass(frozen=True)
class ReplayOptions(Options):
    """Options of ``replay``."""

    schedule: str | None = text("path of the schedule to replay (required)")


@register(
    "replay",
    kind="simulate",
    options=ReplayOptions,
    description="replay an offline schedule's per-GPU task order (both modes)",
)
def _replay(options: ReplayOptions, seed: int) -> Replay:
    from optsched.io import load_schedule

    if options.schedule is None:
        raise InputError("replay needs --param schedule=PATH")
    return Replay(load_schedule(options.schedule), source=options.schedule)
