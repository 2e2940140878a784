"""Local search over job priorities with incremental evaluation (``priority-search``).

A schedule is decoded from one number per job, its priority, by priority dispatching. Events
are the moments a GPU frees or a round becomes ready (its job's arrival, or all results of
its previous round ready); at each event the waiting rounds are served in priority order:

- relaxed mode: a round's next task goes to the GPU where its result would be ready earliest
  (``max(now, GPU free) + compute + sync``), if that GPU is idle now; otherwise the task
  waits for it. The GPU is busy for ``compute`` only;
- gang mode: a round starts when the K GPUs that finish it earliest are idle now, holding the
  slowest idle GPUs that finish it as early (every GPU of a gang round is held until its
  slowest task ends), so the faster ones stay free for other rounds; otherwise it waits.

Two rules (option ``decoder``) say what waiting means for the rounds after it in the queue.
**reserve**: a task (gang: a round) that waits reserves the GPUs it waits for until it would
end, so lower-priority rounds see them taken and start at once on other, possibly slower, idle
GPUs when that makes their results ready earlier; a relaxed round's later tasks are placed
too. **greedy**: a round that waits stops there and reserves nothing, so a lower-priority
round may take the same fast GPUs when they free. ECT reserves too, but serves rounds in the
order they become ready. Where the fastest class saturates and slower ones idle (the Hare
paper's clusters), ``reserve`` decodes Smith's order up to 8.5 % better; on small clusters of
two similar types either may win by a few per cent, so ``auto`` (the default) keeps the one
that decodes Smith's order better (``extra.decoder``). Nothing is committed ahead: at every
event the reservations are made anew, so a higher-priority round that becomes ready
meanwhile is served first.

Option ``fit`` says which GPU a relaxed round's task takes. **earliest** (the default): the
one where its result is ready earliest, as above. **tight**: the decoder first works out when
the round's results would all be ready were its tasks placed that way, one by one, and then
gives each task the idle GPU whose result is ready *latest* without passing that time; a task
that no idle GPU keeps within it is placed as with ``earliest``. A round paced by a slow task
so leaves the fast GPUs it would not use to the rounds after it, as gang rounds do (in gang
mode ``fit`` changes nothing).

Option ``classes`` says which GPU types a job may use. **all** (the default): every type it
has times for. **lp**: first the class-capacity LP
(:func:`~optsched.exact.capacity.capacity_bound`, 100 intervals, at most half the time left;
with a ``work`` budget, all of it) is solved, and each job keeps the GPU types on which the
LP's solution does at least ``share`` of its work, and the one where it does most (gang
mode: more, until it has K_j GPUs); the search then runs on that cut instance
(:func:`lp_classes`), whose schedules are schedules of the instance with the same objective,
and the LP's certified bound is the result's bound. The decoder places a task by when its
result is ready, so a job waits for a fast GPU even where its comparative advantage is on a
slow one (a graph network twice as slow on a K80, a vision model seven times); the LP weighs
every job's work on every type at once and keeps the slow GPUs busy with the jobs that lose
least there. The cut may exclude the optimum (in gang mode, e.g., a round that must span
types), so it is a heuristic's choice, not the default. Without an LP solution (its time ran
out, or it was too large) the search uses every type. The LP's time is not counted in
``work``.

Dispatching lets a heavier or shorter job overtake whenever rounds wait. The search starts
from Smith's rule (w_j over the job's work, the order that is optimal on one machine) and
tries two moves on the priorities, each changing one or two jobs: **swap** the priorities of
two jobs close in the order, and **move** a job to another place (its priority set between
two neighbours). A move is kept when the objective does not get worse.

**Incremental evaluation.** Every event before a changed job first waits in the queue is
decoded as before the move. The decoder keeps a checkpoint of its state (GPU free times,
queues, tasks, completions) at each job's first entry to the queue, and a move's evaluation
restarts from the checkpoint of the earliest changed job instead of from time 0;
``extra.replayed`` is the mean fraction of events re-decoded per evaluation.

**Engines.** The decoder runs as Python code or as one compiled C loop
(:mod:`optsched.heuristics._priority_compiled`, option ``engine``; ``auto``, the default,
compiles it on first use when the machine has a C compiler). Both decode the same schedules
with the same work counts, so a run of ``steps=N`` returns the same schedule with either;
the compiled loop is 18-49 times faster at the Hare paper's scale
(``benchmarks/priority_engines.py``), and a time limit or a work budget (its work-seconds
fitted to each engine's speed) buys that many more moves. ``extra.engine`` says which ran.

Anytime, seeded (``steps=N`` repeats exactly), both modes; it stops at the time limit, after
``steps`` moves, after ``patience`` moves in a row without improvement (a local optimum, on
small instances, and at the Hare paper's scale within minutes with the compiled decoder) or
on Ctrl-C, with the best schedule (``extra.stopped`` says which). With ``kick=N`` and a
budget (a time limit, ``steps`` or ``work``), a local optimum is no end: the search restarts
from the best priorities changed by N random moves (an iterated local search;
``extra.kicks`` counts the restarts), and runs as without it up to its first local optimum.
The result is never worse than ECT's (returned when the search found nothing better). No
approximation guarantee is claimed. The decoded schedule is finally left-shifted (every task
as early as its GPU's order and its rounds allow, :class:`SequenceSchedule`; ``extra.left_shift``
is what that saves).
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from optsched.budget import EXACT_TIME_LIMIT, Budget, OutOfTime
from optsched.check import time_tolerance
from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import evaluate, incumbent
from optsched.errors import InputError
from optsched.exact.capacity import CapacityLP, capacity_bound
from optsched.heuristics.task_moves import SequenceSchedule
from optsched.instance import Instance
from optsched.options import Options, choice, count, number
from optsched.registry import register
from optsched.schedule import Schedule, Task
from optsched.work import WorkMeter, work_option


@dataclass(frozen=True)
class PrioritySearchOptions(Options):
    """Options of ``priority-search``."""

    steps: int | None = count(
        "stop after this many moves (default: none, run to the time limit)", None
    )
    patience: int = count(
        "stop after this many moves in a row without improvement (default 1000)", 1000
    )
    decoder: Literal["auto", "reserve", "greedy"] = choice(
        "the dispatching rule: reserve (a round that waits for busy GPUs "
        "reserves them, so the rounds after it use other, possibly slower, "
        "idle GPUs), greedy (a round that waits reserves nothing), or auto "
        "(the one that decodes Smith's order better; default)",
        ("auto", "reserve", "greedy"),
        "auto",
    )
    fit: Literal["earliest", "tight"] = choice(
        "relaxed mode, where a round's task goes: earliest (the GPU where its result is "
        "ready earliest; default) or tight (the slowest idle GPU that keeps the round's "
        "results ready as early as placing each of its tasks earliest would)",
        ("earliest", "tight"),
        "earliest",
    )
    engine: Literal["auto", "python", "compiled"] = choice(
        "the decoder's code: compiled (one C loop, compiled on first use with the "
        "machine's C compiler: the same schedules and work counts, 18-49 times faster at "
        "the Hare paper's scale), python, or auto (compiled when a C compiler builds it, "
        "else python; default)",
        ("auto", "python", "compiled"),
        "auto",
    )
    classes: Literal["all", "lp"] = choice(
        "the GPU types each job may use: all (default), or lp (those on which the "
        "class-capacity LP's solution does at least `share` of the job's work, and the type "
        "where it does most; the LP's bound is reported too)",
        ("all", "lp"),
        "all",
    )
    share: float = number(
        "with classes=lp: the least share of a job's work that opens a GPU type to it "
        "(default 0.5)",
        0.5,
        high=1.0,
    )
    kick: int | None = count(
        "on a local optimum (patience moves in a row without improvement) with a time "
        "limit, steps or work left, restart from the best priorities changed by this many "
        "random moves, and search on (default: none, stop there)",
        None,
    )
    work: float | None = work_option()


#: Work units of one work-second: measured on the 2-core reference machine by
#: ``benchmarks/work_rates.py`` (a least-squares fit within 3 % over its instances). A move
#: counts :data:`MOVE_WORK`, an event decoded :data:`EVENT_WORK`, and a (round, GPU class
#: or pace) priced and a queue entry copied one each.
WORK_PER_SECOND, MOVE_WORK, EVENT_WORK = 5.8e6, 240, 40
#: The same for the compiled decoder (``engine=compiled``), fitted the same way: its events
#: and queue entries cost 40-60 times less, a move's own bookkeeping about as much; in gang
#: mode it also counts each GPU free time it reads (one unit each), which the Python decoder
#: reads in one NumPy call per round.
COMPILED_WORK_PER_SECOND, COMPILED_MOVE_WORK = 2.6e8, 8300


#: Events between two looks at the clock in the decoder.
CHECK_EVERY = 64

#: Seconds per task the end of a run takes (the decoded schedule, its left shift, the
#: comparison with ECT's; measured about 20 µs on a 2-core machine): kept from the search.
FINISH_SECONDS_PER_TASK = 3e-5


@dataclass
class _State:
    """The decoder's state at the start of an event."""

    moment: float
    free: np.ndarray  # each GPU's free time
    waiting: list[tuple[float, int, int]]  # (ready, job, round), not yet queued
    queue: list[list[float]]  # [-priority, job, round, ready, tasks left, results ready]
    tasks: int  # tasks placed so far
    completion: np.ndarray
    events: int
    scanned: int = 0  # queue entries priced and copied so far (the work count)


@dataclass
class _Decoded:
    objective: float
    tasks: list[tuple[int, int, int, int, float]]
    checkpoints: list[_State]
    entry: np.ndarray  # each job's checkpoint index
    events: int
    scanned: int = 0


class _Decoder:
    """Priority dispatching (module doc). Relaxed mode works on classes of identical GPUs: a
    queued round's next task goes where its result would be ready earliest (``tight``: to the
    idle GPU that keeps the round's pace, when one does), waiting when that GPU is busy; gang
    mode starts a round when the K GPUs that finish it earliest are free."""

    def __init__(self, instance: Instance, reserve: bool = False, tight: bool = False) -> None:
        self.inst = instance
        self.gang = instance.mode == "gang"
        self.reserve, self.tight = reserve, tight
        self.weight = np.array([job.weight for job in instance.jobs], dtype=float)
        self.tasks_per_round = [job.tasks_per_round for job in instance.jobs]
        self.rounds = [job.rounds for job in instance.jobs]
        self.pace = instance.compute + instance.sync  # per GPU (gang)
        compute, sync = instance.class_compute, instance.class_sync
        self.members = [np.flatnonzero(instance.gpu_class == c) for c in range(compute.shape[1])]
        # per job: its eligible classes as (class, compute, compute + sync)
        self.class_choices = [
            [
                (int(c), float(compute[j, c]), float(compute[j, c] + sync[j, c]))
                for c in np.flatnonzero(np.isfinite(compute[j]))
            ]
            for j in range(instance.n_jobs)
        ]
        # gang mode, per job: eligible GPUs by pace, and (prefix length, pace) where it rises
        self.by_pace: list[np.ndarray] = []
        self.paces: list[np.ndarray] = []  # ascending: the paces of by_pace's GPUs
        self.thresholds: list[list[tuple[int, float]]] = []
        for j in range(instance.n_jobs):
            eligible = np.flatnonzero(np.isfinite(self.pace[j]))
            order = eligible[np.argsort(self.pace[j, eligible], kind="stable")]
            paces = self.pace[j, order]
            ends = [
                i + 1 for i in range(len(order)) if i + 1 == len(order) or paces[i + 1] > paces[i]
            ]
            self.by_pace.append(order)
            self.paces.append(paces)
            self.thresholds.append(
                [(end, float(paces[end - 1])) for end in ends if end >= self.tasks_per_round[j]]
            )

    def start(self) -> _State:
        waiting = [(float(job.arrival), j, 0) for j, job in enumerate(self.inst.jobs)]
        heapq.heapify(waiting)
        return _State(
            0.0, np.zeros(self.inst.n_gpus), waiting, [], 0, np.zeros(self.inst.n_jobs), 0
        )

    def run(
        self,
        priority: np.ndarray,
        state: _State,
        before: _Decoded | None,
        restart: int,
        deadline: float | None = None,
    ) -> _Decoded:
        """Decode from ``state`` (checkpoint ``restart`` of ``before``, or the start);
        raise :class:`~optsched.budget.OutOfTime` once ``time.perf_counter()`` passes
        ``deadline`` (checked every :data:`CHECK_EVERY` events)."""
        moment, free = state.moment, state.free.copy()
        waiting, queue = list(state.waiting), [list(item) for item in state.queue]
        heapq.heapify(waiting)
        completion, events, scanned = state.completion.copy(), state.events, state.scanned
        tasks = before.tasks[: state.tasks] if before is not None else []
        checkpoints = before.checkpoints[:restart] if before is not None else []
        entry = (
            before.entry.copy() if before is not None else np.zeros(self.inst.n_jobs, dtype=int)
        )
        # relaxed mode: per class, a heap of (free time, GPU)
        heaps = [sorted((float(free[g]), int(g)) for g in members) for members in self.members]
        since_check = 0
        while waiting or queue:
            since_check += 1
            if deadline is not None and since_check >= CHECK_EVERY:
                since_check = 0
                if time.perf_counter() >= deadline:
                    raise OutOfTime
            entering = []
            while waiting and waiting[0][0] <= moment:
                entering.append(heapq.heappop(waiting))
            if any(r == 0 for _, _, r in entering):  # a job's first entry: a checkpoint
                scanned += len(waiting) + len(queue) + len(free)
                checkpoints.append(
                    _State(
                        moment,
                        free.copy(),
                        waiting + entering,
                        [list(item) for item in queue],
                        len(tasks),
                        completion.copy(),
                        events,
                        scanned,
                    )
                )
            for ready, j, r in entering:
                if r == 0:
                    entry[j] = len(checkpoints) - 1
                bisect.insort(
                    queue, [-float(priority[j]), j, r, ready, self.tasks_per_round[j], ready]
                )
            events += 1
            if self.gang:
                scanned += self._gang_event(moment, free, queue, tasks)
            else:
                scanned += self._relaxed_event(moment, free, heaps, queue, tasks)
            for item in [item for item in queue if item[4] == 0]:
                queue.remove(item)
                j, r = int(item[1]), int(item[2])
                if r + 1 < self.rounds[j]:
                    heapq.heappush(waiting, (item[5], j, r + 1))
                else:
                    completion[j] = item[5]
            later = free[free > moment]
            nexts = ([waiting[0][0]] if waiting else []) + (
                [float(later.min())] if queue and later.size else []
            )
            if not nexts:
                break
            moment = min(nexts)
        return _Decoded(
            float(self.weight @ completion), tasks, checkpoints, entry, events, scanned
        )

    def _relaxed_event(
        self,
        moment: float,
        free: np.ndarray,
        heaps: list[list[tuple[float, int]]],
        queue: list[list[float]],
        tasks: list[tuple[int, int, int, int, float]],
    ) -> int:
        """Serve the queue in priority order: each task to the GPU where its result is ready
        earliest, if it is idle now. Greedy: a round whose task would wait stops there.
        Reserve: the task reserves that GPU until it would end, in a copy of the heaps that
        only the rounds after it see, and the round's next task is placed. Returns the
        (round, class) pairs priced, the event's work count."""
        idle = sum(heap[0][0] <= moment for heap in heaps)  # classes with an idle GPU
        if not idle:
            return 0
        # the free times alone, as the rounds see them: a tuple heap's first entries are a
        # heap. Only busy classes get reserved (so a reservation never makes a class busy:
        # only a placement does), so a class's idle GPUs are alike here and in ``heaps``
        reserve = self.reserve
        virtual = [[end for end, _ in heap] for heap in heaps]
        replace = heapq.heapreplace
        visits = len(heaps)
        for item in queue:
            if not idle:
                return visits
            j = int(item[1])
            choices = self.class_choices[j]
            waiting = 0  # of the round's tasks, those that reserved a busy GPU
            target = item[5]
            if self.tight:
                target = _projected_ready(moment, virtual, choices, int(item[4]), target)
                visits += int(item[4]) * len(choices)
            while item[4] > waiting:
                visits += len(choices)
                best, best_class, best_compute = math.inf, -1, 0.0
                fit, fit_class, fit_compute = -math.inf, -1, 0.0
                for c, compute, pace in choices:
                    head = virtual[c][0]
                    ready = (head if head > moment else moment) + pace
                    if ready < best:
                        best, best_class, best_compute = ready, c, compute
                    if self.tight and head <= moment and ready <= target and ready > fit:
                        fit, fit_class, fit_compute = ready, c, compute
                if fit_class >= 0:  # tight: an idle GPU that keeps the round's pace
                    best, best_class, best_compute = fit, fit_class, fit_compute
                chosen = virtual[best_class]
                head = chosen[0]
                if head > moment:
                    if not reserve:
                        break  # its best GPU is busy: the round waits for it
                    replace(chosen, head + best_compute)
                    waiting += 1
                    continue
                end = moment + best_compute
                g = heaps[best_class][0][1]
                replace(heaps[best_class], (end, g))
                replace(chosen, end)
                if chosen[0] > moment:  # its last idle GPU taken
                    idle -= 1
                free[g] = end
                task = self.tasks_per_round[j] - int(item[4])
                tasks.append((j, int(item[2]), task, g, moment))
                item[4] -= 1
                item[5] = max(item[5], best)
        return visits

    def _gang_event(
        self,
        moment: float,
        free: np.ndarray,
        queue: list[list[float]],
        tasks: list[tuple[int, int, int, int, float]],
    ) -> int:
        """Serve the queue in priority order: a round starts when the K GPUs that finish it
        earliest are idle now. Greedy: a round that would wait reserves nothing. Reserve: it
        reserves the K GPUs it waits for (idle ones included) until it would end, in a copy
        of the free times that only the rounds after it see. Returns the rounds visited and
        finishes priced, the event's work count."""
        virtual = free.copy() if self.reserve else free
        idle = int(np.count_nonzero(virtual <= moment))  # GPUs idle now, as the rounds see
        visits = 0
        for item in queue:
            if not idle:
                return visits
            j = int(item[1])
            k_tasks, order = self.tasks_per_round[j], self.by_pace[j]
            visits += 1 + len(self.thresholds[j])
            ends = virtual[order]  # free times in pace order
            if not self.reserve and np.count_nonzero(ends <= moment) < k_tasks:
                continue
            # the earliest finish: for each pace p, the K earliest-free GPUs of pace ≤ p
            best, best_start, best_end = math.inf, math.inf, 0
            for end, pace in self.thresholds[j]:
                if k_tasks == 1:
                    kth = float(np.minimum.reduce(ends[:end]))
                else:  # the K-th smallest, as np.partition gives it, without its wrapper
                    part = ends[:end].copy()
                    part.partition(k_tasks - 1)
                    kth = float(part[k_tasks - 1])
                start = max(moment, kth)
                if start + pace < best:
                    best, best_start, best_end = start + pace, start, end
            eligible, ends = order[:best_end], ends[:best_end]
            if best_start > moment:  # faster GPUs free soon: wait for them
                if self.reserve:
                    held = np.argsort(ends, kind="stable")[:k_tasks]  # pace-order positions
                    idle -= int(np.count_nonzero(ends[held] <= moment))
                    # until the slowest of them would end (paces ascend in pace order)
                    virtual[eligible[held]] = best_start + float(self.paces[j][held.max()])
                continue
            # hold the slowest idle GPUs that finish as early (a gang round holds all its
            # GPUs until its slowest task ends), leaving the faster ones to other rounds
            held = np.flatnonzero(ends <= moment)[-k_tasks:]
            if len(held) < k_tasks:  # a length lost in the addition to ``moment``
                continue
            chosen = eligible[held]
            length = float(self.paces[j][held[-1]])
            if moment + length > moment:
                idle -= k_tasks
            for k, g in enumerate(sorted(int(g) for g in chosen)):
                tasks.append((j, int(item[2]), k, g, moment))
                free[g] = virtual[g] = moment + length
            item[4], item[5] = 0, moment + length
        return visits

    def schedule(self, decoded: _Decoded) -> Schedule:
        jobs, gpus = self.inst.jobs, self.inst.gpus
        return Schedule(
            self.inst.name,
            [Task(jobs[j].id, r, k, gpus[g].id, start) for j, r, k, g, start in decoded.tasks],
            self.inst.mode,
        )


def _projected_ready(
    moment: float,
    virtual: list[list[float]],
    choices: list[tuple[int, float, float]],
    left: int,
    target: float,
) -> float:
    """When all of a round's results would be ready (at least ``target``) were its ``left``
    tasks placed one by one where each is ready earliest, on copies of the free-time heaps
    it touches (``fit=tight``)."""
    copies: dict[int, list[float]] = {}
    for _ in range(left):
        best, best_class, best_compute = math.inf, -1, 0.0
        for c, compute, pace in choices:
            head = (copies[c] if c in copies else virtual[c])[0]
            ready = (head if head > moment else moment) + pace
            if ready < best:
                best, best_class, best_compute = ready, c, compute
        if best_class not in copies:
            copies[best_class] = list(virtual[best_class])
        heap = copies[best_class]
        head = heap[0]
        heapq.heapreplace(heap, (head if head > moment else moment) + best_compute)
        if best > target:
            target = best
    return target


def _decoder(instance: Instance, reserve: bool, engine: str, tight: bool = False) -> Any:
    """The decoder ``engine`` names (:class:`_Decoder`, or the compiled loop of
    :mod:`optsched.heuristics._priority_compiled`, which decodes the same)."""
    python = _Decoder(instance, reserve, tight)
    if engine == "python":
        return python
    from optsched.heuristics._priority_compiled import CompiledDecoder

    try:
        return CompiledDecoder(python, CHECK_EVERY)
    except ImportError as exc:
        if engine == "compiled":
            raise InputError(f"priority-search: engine=compiled is unavailable: {exc}") from None
        return python


def smith_priorities(instance: Instance) -> np.ndarray:
    """w_j / (R_j K_j min_g compute[j, g]), ties broken by the job's index (earlier first)."""
    n = instance.n_jobs
    work = np.array([job.n_tasks for job in instance.jobs]) * instance.compute.min(axis=1)
    smith = np.array([job.weight for job in instance.jobs]) / work
    priority = np.empty(n)
    priority[np.argsort(-smith, kind="stable")] = np.arange(n, 0, -1, dtype=float)
    return priority


#: Intervals of the class-capacity LP behind ``classes=lp`` (``capacity-bound``'s default).
LP_INTERVALS = 100
#: With a time limit, the share of the time left that the LP of ``classes=lp`` may take.
LP_TIME_SHARE = 0.5


def lp_classes(
    instance: Instance, upper: float, horizon: float, share: float, time_limit: float | None
) -> tuple[Instance, CapacityLP]:
    """``instance`` with each job's GPU types cut to those on which the class-capacity LP's
    solution (:func:`~optsched.exact.capacity.capacity_bound`, ``upper`` and ``horizon``
    from a feasible schedule) does at least ``share`` of the job's work, and the type where
    it does most; in gang mode types are added back, the LP's next first (then the fastest),
    until the job has K_j GPUs. Returns the cut instance (``instance`` itself when the LP
    gives no solution) and the LP's outcome. A schedule of the cut instance is one of
    ``instance`` with the same objective: only eligibility changes."""
    lp = capacity_bound(instance, upper, horizon, LP_INTERVALS, time_limit=time_limit)
    if lp.class_share is None:
        return instance, lp
    count_of: Counter[str] = Counter(gpu.type for gpu in instance.gpus)
    first_gpu: dict[str, int] = {}  # each GPU type's first GPU
    for g, gpu in enumerate(instance.gpus):
        first_gpu.setdefault(gpu.type, g)
    column = {t: i for i, t in enumerate(first_gpu)}
    type_share = np.zeros((instance.n_jobs, len(column)))  # the LP's class shares, by type
    for c, members in enumerate(instance.class_members):
        type_share[:, column[instance.gpus[members[0]].type]] += lp.class_share[:, c]
    jobs = []
    for j, job in enumerate(instance.jobs):
        compute = {t: instance.compute_of(j, g) for t, g in first_gpu.items()}
        shares = {t: type_share[j, column[t]] for t in column}
        ranked = sorted(
            (t for t in column if math.isfinite(compute[t])),
            key=lambda t: (-shares[t], compute[t]),
        )
        keep = [t for t in ranked if t == ranked[0] or shares[t] >= share]
        if instance.mode == "gang":
            while sum(count_of[t] for t in keep) < job.tasks_per_round:
                keep.append(ranked[len(keep)])
        jobs.append(
            replace(job, compute={t: compute[t] for t in keep}, workload=None, iters_per_task=None)
        )
    return replace(instance, jobs=tuple(jobs)), lp


def _move(priority: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    """A swap or a move of one job, between jobs within a window of the priority order."""
    n = len(priority)
    order = np.argsort(-priority, kind="stable")
    rank = int(rng.integers(n))
    window = max(2, n // 10)
    other = int(np.clip(rank + rng.integers(-window, window + 1), 0, n - 1))
    if other == rank:
        other = rank + 1 if rank + 1 < n else rank - 1
    a, b = int(order[rank]), int(order[other])
    out = priority.copy()
    if rng.random() < 0.5:
        out[a], out[b] = priority[b], priority[a]
        return out, [a, b]
    # move a just past b: between b and b's neighbour on the far side from a
    step = -1 if other < rank else 1
    neighbour = other + step
    edge = priority[b] + (1.0 if step < 0 else -1.0)
    out[a] = (priority[b] + (priority[order[neighbour]] if 0 <= neighbour < n else edge)) / 2
    return out, [a]


def priority_search(
    instance: Instance, context: SolveContext[PrioritySearchOptions]
) -> MethodOutput:
    """The ``priority-search`` method (see the module doc).

    Time: the ECT schedule comes first (the fallback, evaluated without the checker); the
    decoders and the search then check the clock every :data:`CHECK_EVERY` events and stop
    at the time limit less the time the end of the run takes
    (:data:`FINISH_SECONDS_PER_TASK` per task); the left shift is skipped when that time is
    not left. At worst the ECT schedule is returned, ``extra.stopped`` ``time limit``."""
    options = context.options
    if options.classes == "all" and options.share != PrioritySearchOptions.share:
        raise InputError("priority-search: share applies with classes=lp only")
    started = time.perf_counter()
    budget = Budget(context.time_limit)
    ect = incumbent(instance)
    finish = FINISH_SECONDS_PER_TASK * sum(job.n_tasks for job in instance.jobs)
    deadline = None if context.time_limit is None else started + context.time_limit - finish
    extra: dict[str, Any] = {"ect_objective": ect.objective}

    bound: float | None = None

    def fallback(stopped: str) -> MethodOutput:
        return MethodOutput(
            schedule=ect.schedule,
            bound=bound,
            extra={
                **extra,
                "steps": 0,
                "improvements": 0,
                "stopped": stopped,
                "interrupted": stopped == "interrupted",
                "returned": f"ect ({stopped})",
            },
        )

    if deadline is not None and time.perf_counter() >= deadline:  # ECT took the time
        return fallback("time limit")
    search = instance  # the instance the decoders see: with classes=lp, cut by the LP
    if options.classes == "lp":
        lp_started = time.perf_counter()
        # with a work budget the LP may take all the time (it is not counted in work), so that
        # the run repeats exactly wherever the LP solves within it
        time_share = 1.0 if options.work is not None else LP_TIME_SHARE
        left = None if deadline is None else time_share * (deadline - lp_started)
        try:
            search, lp = lp_classes(instance, ect.objective, ect.makespan, options.share, left)
        except KeyboardInterrupt:  # a Ctrl-C while the LP was built (HiGHS reports its own)
            return fallback("interrupted")
        bound = lp.bound
        extra.update(
            {
                "lp_status": lp.status,
                "lp_seconds": round(time.perf_counter() - lp_started, 3),
                # (job, GPU) pairs the cut made ineligible
                "cut_pairs": int(
                    np.isfinite(instance.compute).sum() - np.isfinite(search.compute).sum()
                ),
            }
        )
        if lp.status == "interrupted":
            return fallback("interrupted")
    rng = np.random.default_rng(context.seed)
    priority = smith_priorities(search)
    decoder, current = None, None
    try:
        for reserve in {"auto": (True, False), "reserve": (True,), "greedy": (False,)}[
            options.decoder
        ]:  # auto: the decoder that decodes Smith's order better
            trying = _decoder(search, reserve, options.engine, options.fit == "tight")
            decoded = trying.run(priority, trying.start(), None, 0, deadline)
            if current is None or decoded.objective < current.objective:
                decoder, current = trying, decoded
    except OutOfTime:  # the second decoder (auto) is optional
        if current is None:
            return fallback("time limit")
    except KeyboardInterrupt:  # a genuine Ctrl-C before the search
        if current is None:
            return fallback("interrupted")
    assert decoder is not None and current is not None
    first = current.objective
    # an improvement: more than the checker's time tolerance per unit of weight, at a mean
    # C_j (first / weight) and a mean time in the system
    weight = float(decoder.weight.sum())
    in_system = first - sum(
        w * job.arrival for w, job in zip(decoder.weight, instance.jobs, strict=True)
    )
    noise = weight * time_tolerance(max(0.0, in_system / weight), first / weight)
    steps = improvements = 0
    replayed: list[float] = []
    anytime = [[round(time.perf_counter() - started, 4), current.objective]]
    stopped, since = "steps", 0  # moves since the last improvement
    best, best_priority, kicks = current, priority, 0  # current: the best, without kicks
    budgeted = deadline is not None or options.steps is not None or options.work is not None
    compiled = not isinstance(decoder, _Decoder)
    meter = WorkMeter(options.work, COMPILED_WORK_PER_SECOND if compiled else WORK_PER_SECOND)
    move_work = COMPILED_MOVE_WORK if compiled else MOVE_WORK
    try:
        while options.steps is None or steps < options.steps:
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = "time limit"
                break
            if meter.exhausted:
                stopped = "work"
                break
            if instance.n_jobs < 2:
                stopped = "one job"
                break
            kicking = since >= options.patience
            if kicking and (options.kick is None or not budgeted):
                stopped = "patience"
                break
            if kicking and options.kick is not None:  # a local optimum: restart from the
                trial, changed = best_priority, []  # best, changed by kick random moves
                for _ in range(options.kick):
                    trial, moved = _move(trial, rng)
                    changed += moved
                current, since, kicks = best, 0, kicks + 1
            else:
                trial, changed = _move(priority, rng)
            restart = int(min(current.entry[j] for j in changed))
            state = current.checkpoints[restart]
            candidate = decoder.run(trial, state, current, restart, deadline)
            meter.spend(
                move_work
                + EVENT_WORK * (candidate.events - state.events)
                + candidate.scanned
                - state.scanned
                + (candidate.gathered if compiled else 0)
            )
            steps += 1
            replayed.append(1 - state.events / current.events)
            since += 1
            if kicking or candidate.objective <= current.objective:
                if candidate.objective < current.objective - noise:
                    since = 0
                if candidate.objective < best.objective - noise:
                    improvements += 1
                    anytime.append([round(time.perf_counter() - started, 4), candidate.objective])
                    context.report(candidate.objective, bound)
                priority, current = trial, candidate
                if current.objective <= best.objective:
                    best, best_priority = current, priority
    except OutOfTime:  # the move being decoded is dropped
        stopped = "time limit"
    except KeyboardInterrupt:  # a genuine Ctrl-C: the incumbent is the result
        stopped = "interrupted"
    extra.update(
        {
            "steps": steps,
            "improvements": improvements,
            "kicks": kicks,
            "work": meter.spent,
            "smith_objective": first,
            "decoder": "reserve" if decoder.reserve else "greedy",
            "fit": options.fit,
            "engine": "compiled" if compiled else "python",
            "replayed": float(np.mean(replayed)) if replayed else None,
            "anytime": anytime,
            "stopped": stopped,
            "interrupted": stopped == "interrupted",
        }
    )
    current = best
    schedule = decoder.schedule(current)
    # every task as early as its GPU's order and its rounds allow (gang rounds may start late
    # in the decoder, held back for the K GPUs that finish them earliest); skipped after a
    # Ctrl-C, or when the time for it is not left
    left = budget.left()
    if stopped != "interrupted" and (left is None or left >= finish / 2):
        shifted = SequenceSchedule(instance, schedule)
        extra["left_shift"] = current.objective - shifted.objective
        if shifted.objective < current.objective:
            schedule = shifted.schedule()
            anytime.append([round(time.perf_counter() - started, 4), shifted.objective])
            context.report(shifted.objective, bound)
    else:
        extra["left_shift"] = None
    objective, _ = evaluate(instance, schedule)
    if ect.objective < objective:
        extra["returned"] = "ect (better than the search)"
        return MethodOutput(schedule=ect.schedule, bound=bound, extra=extra)
    extra["returned"] = "search"
    return MethodOutput(schedule=schedule, bound=bound, extra=extra)


@register(
    "priority-search",
    options=PrioritySearchOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    description="local search over job priorities of a priority list scheduler, "
    "incremental evaluation (anytime, seeded, any size, both modes)",
)
def _priority_search(
    instance: Instance, context: SolveContext[PrioritySearchOptions]
) -> MethodOutput:
    return priority_search(instance, context)
