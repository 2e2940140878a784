"""Hare's online policy HLAS, and the helpers every policy shares.

``hlas`` — Hare's heterogeneity-aware least-attained-service policy (TCC'24). Only its name
and goal are public, so this is our reconstruction from the journal's abstract and Tiresias'
LAS: service in reference-GPU seconds, discretised priority queues, starvation promotion, three
GPU mappings (A fastest idle GPU, B relative-speed-up matching, C earliest-available GPU).
Registered as a ``simulate`` method; the baselines are in :mod:`optsched.online.baselines`.

Every policy is deterministic: ties go to the earlier arrival, then the lower job index, and
to the lower GPU index.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Literal

import numpy as np

from optsched.errors import InputError
from optsched.online.engine import Decision, Simulation
from optsched.online.simulator import (
    JobState,
    SizeDistribution,
    View,
    WaitingQueue,
    ordered,
)
from optsched.options import Options, choice, number, numbers
from optsched.registry import register


def fill_fastest(
    order: Iterable[JobState],
    view: View,
    taken: set[int] | None = None,
    left: Mapping[int, int] | None = None,
    admit: Callable[[JobState, float], bool] | None = None,
) -> list[Decision]:
    """In ``order``, each waiting task (``left[job]`` of them, default all) on the fastest
    idle GPU not ``taken`` (ties: lowest index; HLAS's mapping A, also used by the
    baselines). With ``admit``, a task takes that GPU only if ``admit(job, its compute time
    there)`` is true, and otherwise the job's tasks left wait. O(speed classes) per task: the
    idle GPUs are kept by class."""
    taken = set() if taken is None else taken
    pools = view.idle.by_class
    cursor = [0] * len(pools)
    total = len(view.idle)
    out: list[Decision] = []
    for job in order:
        if len(taken) == total:
            break
        times = job.by_class
        for _ in range(job.waiting if left is None else left.get(job.index, job.waiting)):
            best, best_key = -1, (math.inf, 0)
            for c, pool in enumerate(pools):
                i = cursor[c]
                while i < len(pool) and pool[i] in taken:
                    i += 1
                cursor[c] = i
                if i < len(pool) and (times[c], pool[i]) < best_key:
                    best, best_key = pool[i], (times[c], pool[i])
            if best < 0 or (admit is not None and not admit(job, best_key[0])):
                break
            taken.add(best)
            out.append((job.index, best))
    return out


def after(now: float, at: float) -> float:
    """A revisit time for a condition that first holds just after ``at``: slightly before
    ``at`` (so rounding cannot skip the decision where it first holds; it is evaluated
    exactly then), and later than ``now``."""
    return max(at - 1e-9 * max(1.0, abs(at)), math.nextafter(now, math.inf))


def quantile_thresholds(sizes: Sequence[float], quantiles: Sequence[float]) -> tuple[float, ...]:
    """Queue thresholds at the ``quantiles`` of the job ``sizes``: increasing, positive,
    duplicates dropped (empty when there is no size)."""
    if not len(sizes):
        return ()
    values = np.quantile(np.asarray(sizes, dtype=float), list(quantiles))
    return tuple(sorted({float(v) for v in values if v > 0}))


#: Where derived queue thresholds come from (the first is the default).
CALIBRATIONS: tuple[Literal["history", "workload"], ...] = ("history", "workload")


class FinishedSizes:
    """The sizes of the jobs finished so far, and queue thresholds at their quantiles,
    re-derived each time their number reaches a power of two (1, 2, 4, …: O(log n)
    re-derivations, each re-keying the waiting jobs). Uses only what a non-clairvoyant
    scheduler knows at the time: a job's size is revealed when it finishes."""

    def __init__(self, quantiles: Sequence[float]) -> None:
        self.quantiles = tuple(quantiles)
        self.sizes: list[float] = []

    def add(self, size: float, levels: tuple[float, ...]) -> tuple[float, ...] | None:
        """Record a finished job's size; the thresholds re-derived now when they differ from
        ``levels`` (the current ones), else None."""
        self.sizes.append(size)
        n = len(self.sizes)
        if n & (n - 1):
            return None
        new = quantile_thresholds(self.sizes, self.quantiles)
        return None if new == levels else new


@dataclass
class HLAS:
    """Heterogeneity-aware least attained service: our reconstruction of Hare's online policy
    (TCC'24, whose text is not public), on Tiresias' discretised LAS
    (Gu et al., NSDI'19 §4).

    *Service* S_j = tasks started × the job's fastest profiled compute time: progress in
    reference-GPU seconds, so a job is not charged more for having run on a slow GPU.
    *Queues* (``form="queues"``, the default): a job's level is the number of thresholds at
    or below its service / w_j since it last entered queue 0; jobs are served by (level,
    arrival, index), FIFO inside a level. ``thresholds=None`` (default) derives them at the
    ``quantiles`` of job sizes in reference-GPU seconds, so with the default (0.5, 0.8)
    about half of the jobs finish inside queue 0 and a fifth reach queue 2 whatever the
    unit of work. Whose sizes (``calibration``): ``history`` (default), the jobs finished
    so far (:class:`FinishedSizes`: none before the first finishes, so FIFO until then;
    re-derived at 1, 2, 4, … finished jobs), which a scheduler knows when it decides;
    ``workload``, every job of the run, arrived or not (the simulator's
    :class:`~optsched.online.simulator.SizeDistribution`, given before the run): an
    operator's knowledge of a workload it has seen before, which leaks the sizes of jobs
    still to come into earlier decisions. *Starvation*: a job in a lower queue that has
    waited longer than ``starvation`` × S_j since its last start re-enters queue 0 and
    stays there until it attains the first threshold again (0 turns this off).
    ``form="continuous"`` orders by (level, S_j / w_j, arrival, index) with no thresholds
    unless given: the continuous LAS.

    *GPU mapping*: A — each waiting task, in order, on its fastest idle GPU; B (default) —
    within the best level, each idle GPU (fastest first) to the job with the highest
    speed-up there (its slowest eligible GPU's time / this GPU's; ties in queue order), then
    A for the rest; C — the idle GPU free the longest (Algorithm 1's earliest-available
    rule), speed-oblivious.

    Guarantees: work-conserving (a GPU stays idle only if no waiting task can use it);
    non-clairvoyant (it sees no job's rounds; with ``calibration=workload`` and derived
    thresholds, the workload's size distribution, sorted); deterministic.
    """

    thresholds: tuple[float, ...] | None = None
    starvation: float = 0.5
    mapping: str = "B"
    form: str = "queues"
    quantiles: tuple[float, ...] = (0.5, 0.8)
    calibration: str = "history"
    name: str = "hlas"
    clairvoyant: bool = False
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"relaxed"}))
    levels: tuple[float, ...] = field(default=(), init=False)
    _entered: dict[int, float] = field(default_factory=dict, init=False, repr=False)
    _history: FinishedSizes | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.levels = self.thresholds or ()
        if self.calibration not in CALIBRATIONS:
            raise InputError(
                f"hlas: calibration must be one of {', '.join(CALIBRATIONS)}, "
                f"got {self.calibration!r}"
            )

    def calibrate(self, sizes: SizeDistribution) -> None:
        """Start a run: the given thresholds, or derived ones (none yet with
        ``calibration=history``); forget promotions and finished jobs."""
        self._entered, self._history = {}, None
        if self.thresholds is not None:
            self.levels = self.thresholds
        elif self.form == "continuous":
            self.levels = ()
        elif self.calibration == "workload":
            self.levels = quantile_thresholds(sizes.reference, self.quantiles)
        else:
            self.levels, self._history = (), FinishedSizes(self.quantiles)

    def finished(self, job: JobState, now: float) -> bool:
        """A job finished with its service S_j its size: re-derive the thresholds
        (``calibration=history``); True when they changed."""
        new = (
            None
            if self._history is None
            else self._history.add(job.tasks_started * job.fastest, self.levels)
        )
        self.levels = self.levels if new is None else new
        return new is not None

    def _level(self, job: JobState) -> int:
        own = (job.tasks_started * job.fastest - self._entered.get(job.index, 0.0)) / job.weight
        level = 0
        for q in self.levels:  # (a loop: a generator costs more at two thresholds)
            if own >= q:
                level += 1
        return level

    def priority(
        self, job: JobState, now: float, oracle: object = None
    ) -> tuple[float, float, float]:
        """(level, then service / w_j for form=continuous else arrival, arrival); a
        starving job re-enters queue 0 here."""
        service = job.tasks_started * job.fastest
        level = self._level(job)
        if level and self.starvation > 0 and now - job.last_start > self.starvation * service:
            self._entered[job.index] = service  # back to queue 0 until Q1 more service
            level = 0
        if self.form == "continuous":
            return level, service / job.weight, job.arrival
        return level, job.arrival, job.arrival

    def revisit(self, job: JobState, now: float) -> float:
        """When a job in a lower queue may start to starve (math.inf: it cannot)."""
        if self.starvation <= 0 or not self._level(job):
            return math.inf
        return after(now, job.last_start + self.starvation * job.tasks_started * job.fastest)

    def compiled_engine(
        self, mode: str, tick: float | None, event_driven: bool
    ) -> Callable[..., Simulation]:
        """The compiled simulation of this policy
        (:func:`optsched.online._hlas_compiled.simulate_hlas`: the same runs).

        Raises
        ------
        InputError
            A run it does not cover: a subclass, ``form=continuous``, mapping C, gang mode,
            a tick or heartbeat.
        ImportError
            No C compiler to compile it with, or compiling failed
            (:func:`optsched.online._hlas_compiled.kernel`).
        """
        if type(self) is not HLAS:
            raise InputError(f"{type(self).__name__} is not hlas itself")
        if self.form != "queues" or self.mapping not in ("A", "B"):
            raise InputError(
                "the compiled hlas covers form=queues with mapping A or B, not "
                f"form={self.form} with mapping {self.mapping}"
            )
        if mode != "relaxed":
            raise InputError("the compiled hlas runs in relaxed mode")
        if tick is not None or not event_driven:
            raise InputError("the compiled hlas decides at every instant (no tick or heartbeat)")
        from optsched.online._hlas_compiled import kernel, simulate_hlas

        kernel()
        return simulate_hlas

    def waiting_queue(self, states: dict[int, JobState]) -> WaitingQueue:
        """Mapping B's queue also indexes each level's jobs per GPU speed class."""
        return _LevelClassQueue(states) if self.mapping == "B" else WaitingQueue(states)

    def decide(self, view: View) -> list[Decision]:
        waiting = ordered(view, self)
        if self.mapping == "A":
            return fill_fastest(waiting, view)
        if self.mapping == "C":
            return fill_earliest_available(waiting, view)
        assert isinstance(waiting, _LevelClassQueue)
        return _speedup_matching(waiting, view)


class _LevelClassQueue(WaitingQueue):
    """HLAS's waiting queue with, per level and GPU speed class c, the level's jobs that can
    use c by (−speed-up on c, queue order) (``gain``; speed-up = the job's slowest eligible
    GPU's time / its time on c) and by their time on c (``fast``): what mapping B asks for,
    kept incrementally, with each level's waiting tasks (``tasks``)."""

    __slots__ = ("_counted", "fast", "gain", "tasks")

    def __init__(self, states: dict[int, JobState]) -> None:
        super().__init__(states)
        self.gain: dict[Any, list[list[tuple[float, Any, int]]]] = {}
        self.fast: dict[Any, list[list[tuple[float, Any, int]]]] = {}
        self.tasks: dict[Any, int] = {}
        self._counted: dict[int, int] = {}  # waiting tasks counted per job

    def _index(self, j: int, key: Any, add: bool) -> None:
        job, level = self._states[j], key[0]
        if add:
            self._counted[j] = job.waiting
            self.tasks[level] = self.tasks.get(level, 0) + job.waiting
        else:
            self.tasks[level] -= self._counted.pop(j)
        n = len(job.by_class)
        gain = self.gain.setdefault(level, [[] for _ in range(n)])
        fast = self.fast.setdefault(level, [[] for _ in range(n)])
        slowest = job.slowest
        for c, t in enumerate(job.by_class.tolist()):
            if t < math.inf:
                by_gain, by_time = gain[c], fast[c]
                if add:
                    bisect.insort(by_gain, (-(slowest / t), key, j))
                    bisect.insort(by_time, (t, 0, j))
                else:
                    del by_gain[bisect.bisect_left(by_gain, (-(slowest / t), key, j))]
                    del by_time[bisect.bisect_left(by_time, (t, 0, j))]

    def put(self, j: int, key: Any) -> None:
        old = self._keys.get(j)
        if old is not None:
            if old == key and self._counted[j] == self._states[j].waiting:
                return
            self._index(j, old, add=False)
        super().put(j, key)
        self._index(j, key, add=True)

    def drop(self, j: int) -> None:
        old = self._keys.get(j)
        if old is not None:
            self._index(j, old, add=False)
        super().drop(j)


def fill_earliest_available(order: Iterable[JobState], view: View) -> list[Decision]:
    """Each waiting task, in ``order``, on the eligible idle GPU free the longest (ties: lowest
    index) — speed-oblivious (HLAS's mapping C, Algorithm 1's earliest-available rule)."""
    gpus = [g for _, g in view.idle.by_age]
    out: list[Decision] = []
    for job in order:
        if not gpus:
            break
        left = job.waiting
        for g in list(gpus):
            if left == 0:
                break
            if np.isfinite(job.compute[g]):
                out.append((job.index, g))
                gpus.remove(g)
                left -= 1
    return out


def _speedup_matching(queue: _LevelClassQueue, view: View) -> list[Decision]:
    """Mapping B: the idle GPUs — by the fastest time any job of the best level has on them,
    then by index — each to the best-level job with a task left that gains most there (its
    slowest eligible GPU's time / this one's; ties: queue order); then mapping A for the
    waiting jobs and tasks left. O(idle GPUs + jobs run out of tasks) per decision, with the
    level's per-class indexes."""
    level = next(iter(queue.items()))[0][0]
    gain, fast = queue.gain[level], queue.fast[level]
    states = queue._states
    left: dict[int, int] = {}  # tasks left of the jobs given some here
    pending = queue.tasks[level]
    cursor = [0] * len(gain)
    taken: set[int] = set()
    out: list[Decision] = []
    for g, c in _by_fastest(view.idle.by_class, fast):
        if not pending:
            break
        jobs, i = gain[c], cursor[c]
        while i < len(jobs) and not left.get(jobs[i][2], states[jobs[i][2]].waiting):
            i += 1
        cursor[c] = i
        if i < len(jobs):
            j = jobs[i][2]
            left[j] = left.get(j, states[j].waiting) - 1
            pending -= 1
            taken.add(g)
            out.append((j, g))
    return out + fill_fastest(queue, view, taken, left)


def _by_fastest(
    pools: list[list[int]], fast: list[list[tuple[float, int, int]]]
) -> Iterator[tuple[int, int]]:
    """The idle GPUs (``pools``: per class, in index order) as (GPU, class), by the fastest
    time a job of ``fast`` has on the class, then by index: classes of different times one
    after the other, only classes of one time merged."""
    classes: dict[float, list[int]] = {}
    for c, pool in enumerate(pools):
        if pool:
            classes.setdefault(fast[c][0][0] if fast[c] else math.inf, []).append(c)
    for time in sorted(classes):
        tied = classes[time]
        if len(tied) == 1:
            yield from zip(pools[tied[0]], repeat(tied[0]))
        else:
            yield from heapq.merge(*(zip(pools[c], repeat(c)) for c in tied))


@dataclass(frozen=True)
class HlasOptions(Options):
    """Options of ``hlas``."""

    form: Literal["queues", "continuous"] = choice(
        "queues (discretised LAS, FIFO inside a queue; default) or continuous "
        "(one queue ordered by service / weight, unless thresholds are given)",
        ("queues", "continuous"),
    )
    thresholds: tuple[float, ...] | None = numbers(
        "service thresholds between queues, in reference-GPU seconds, comma-separated, or "
        "auto (default: the 0.5 and 0.8 quantiles of job sizes, see calibration; none for "
        "form=continuous)"
    )
    calibration: Literal["history", "workload"] = choice(
        "whose sizes derived thresholds come from: history (the "
        "jobs finished so far, re-derived at 1, 2, 4, ... finished "
        "jobs; default) or workload (every job of the run, arrived or "
        "not: leaks future sizes)",
        CALIBRATIONS,
    )
    starvation: float = number(
        "a job in a lower queue waiting longer than this × its "
        "service re-enters queue 0 (default 0.5; 0: off)",
        0.5,
    )
    mapping: Literal["B", "A", "C"] = choice(
        "B (speed-up matching, default), A (fastest idle GPU) or C (earliest available)",
        ("B", "A", "C"),
    )


@register(
    "hlas",
    kind="simulate",
    modes=("relaxed",),
    options=HlasOptions,
    description="Hare's heterogeneity-aware least attained service (reconstruction: "
    "discretised LAS, speed-up matching)",
)
def _hlas(options: HlasOptions, seed: int) -> HLAS:
    return HLAS(
        options.thresholds,
        options.starvation,
        options.mapping,
        options.form,
        calibration=options.calibration,
    )
