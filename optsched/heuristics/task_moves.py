"""Task-level local moves on a schedule, with incremental evaluation.

A schedule is read as one **sequence of operations per GPU**: an operation is a task in
relaxed mode, and a whole round in gang mode (it sits in the sequences of its K GPUs). Given
the sequences, every operation starts as early as they allow (a semi-active schedule):

    start(o) = max(release(o), max over o's GPUs g of end of the operation before o on g)

with release(o) its job's arrival (first round) or the moment all results of its previous
round are ready. An operation holds each of its GPUs for its compute time (relaxed) or for
the round's pace ``max_g (compute + sync)`` over its GPUs (gang), and its result is ready
``compute + sync`` (relaxed) or the pace (gang) after its start. These are the checker's
rules, so every sequence that is acyclic gives a feasible schedule.

Two moves change one operation o's place in one sequence:

- **resequence**: take o off GPU g's sequence and put it back elsewhere on g;
- **reassign**: take o off g and put it on another eligible GPU h (gang: one the round does
  not use yet), in the first gap after its release where it fits, or ahead of the operation
  running at its release, delaying what follows (:meth:`SequenceSchedule.gap`).

A move inserts o between two neighbours A and B only when ``start(A) < min start of o's
successors`` and ``start(B) > max start of o's predecessors`` (the operations of its job's
next and previous rounds and, in gang mode, its neighbours on its other GPUs). Every arc of
the precedence graph goes from a start to a start no earlier (later, unless a time is lost
in a floating-point addition), and so does the arc that joins o's old neighbours on g, which
the old graph implied; so a path from o's successors back to A, or from B to o's
predecessors, would contradict the strict inequalities: the new sequences are acyclic.
**Incremental evaluation** recomputes only the operations whose start may change: in the
order of their current starts (o keyed strictly between its new predecessors' and
successors' starts), from o and its old successor on g, pushing an operation's successors
whenever its start changes, so an operation whose predecessor changes after it is recomputed
again and the result is the sequences' semi-active schedule even where starts tie. Moves
stack up until they are kept or undone together from a log of what changed.

The ``task-search`` method (:func:`improve`) searches with these moves from ECT's schedule or
a better hint. Anytime, seeded (``steps=N`` repeats exactly), both modes; it stops at the time
limit, after ``steps`` steps, after ``patience`` steps in a row without improvement or on
Ctrl-C, and never returns a schedule worse than its start. No approximation guarantee is
claimed. Time: the start costs one ECT schedule (nothing checked unless a hint is given);
when the limit is spent by then, the start is the result (``extra.stopped`` ``time limit``);
the search stops at the limit less the time reading the result back takes
(:data:`FINISH_SECONDS_PER_TASK` per task).
"""

from __future__ import annotations

import bisect
import heapq
import math
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.budget import EXACT_TIME_LIMIT, Budget
from optsched.check import time_tolerance
from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import evaluate, incumbent
from optsched.instance import Instance
from optsched.options import Options, count
from optsched.registry import register
from optsched.schedule import Schedule, Task
from optsched.work import WorkMeter, work_option


@dataclass
class _Frame:
    """What one applied move changed, to undo it."""

    op: int
    left: int  # the GPU o left ...
    joined: int  # ... and the one it joined
    index: int  # its place on ``left``
    slot: int  # the GPU's place in o's GPU list
    busy: float
    result: float
    objective: float  # before the move
    starts: list[tuple[int, float]] = field(default_factory=list)
    readies: list[tuple[int, float]] = field(default_factory=list)
    delta: float = 0.0


class SequenceSchedule:
    """A schedule as GPU sequences, evaluated semi-actively (module doc).

    ``schedule`` must be feasible for ``instance`` in the instance's mode (as the checker
    says), without launch phases or failed attempts. Its starts order each GPU's sequence
    (a round's operations after its job's earlier rounds, even where the checker's tolerance
    lets a start come slightly early), and the left-shifted starts follow: ``objective`` is
    never above the given schedule's beyond that tolerance."""

    def __init__(self, instance: Instance, schedule: Schedule) -> None:
        self.inst = instance
        self.gang = instance.mode == "gang"
        jobs = {job.id: j for j, job in enumerate(instance.jobs)}
        gpus = {gpu.id: g for g, gpu in enumerate(instance.gpus)}
        self.compute, self.pace = instance.compute, instance.compute + instance.sync
        self.weight = [job.weight for job in instance.jobs]
        self.arrival = [float(job.arrival) for job in instance.jobs]
        # rounds: one global index per (job, round)
        self.round_first: list[int] = np.cumsum(
            [0] + [job.rounds for job in instance.jobs]
        ).tolist()
        self.round_job = [j for j, job in enumerate(instance.jobs) for _ in range(job.rounds)]
        self.round_ops: list[list[int]] = [[] for _ in self.round_job]
        # operations: tasks (relaxed) or rounds (gang)
        grouped: dict[tuple[int, ...], list[Task]] = defaultdict(list)
        for t in schedule.tasks:
            if t.train_start is not None or t.failed_at is not None:
                raise ValueError(
                    "task moves take schedules without launch phases or failed attempts"
                )
            key: tuple[int, ...] = (
                (jobs[t.job], t.round) if self.gang else (jobs[t.job], t.round, t.task)
            )
            grouped[key].append(t)
        self.op_round: list[int] = []
        self.op_tasks: list[list[int]] = []  # task indices, in the order of op_gpus
        self.op_gpus: list[list[int]] = []
        given: list[float] = []
        for key, tasks in sorted(grouped.items()):
            rid = self.round_first[key[0]] + key[1]
            self.round_ops[rid].append(len(self.op_round))
            self.op_round.append(rid)
            tasks.sort(key=lambda t: t.task)
            self.op_tasks.append([t.task for t in tasks])
            self.op_gpus.append([gpus[t.gpu] for t in tasks])
            given.append(min(t.start for t in tasks))
        n = len(self.op_round)
        self.busy = [0.0] * n  # how long o holds each of its GPUs
        self.result = [0.0] * n  # from o's start to its results being ready
        for o in range(n):
            self.busy[o], self.result[o] = self._lengths(o, self.op_gpus[o])
        # the given starts, each raised to the latest given start of its job's earlier
        # rounds, ties broken by round: an order in which every round follows its job's
        # earlier rounds (the checker's tolerance may let a start come slightly early)
        latest = [-math.inf] * len(self.round_job)  # up to and including the round
        for rid, ops in enumerate(self.round_ops):
            first_round = rid == self.round_first[self.round_job[rid]]
            latest[rid] = max(
                [-math.inf if first_round else latest[rid - 1]] + [given[o] for o in ops]
            )
        raised = []
        for o, rid in enumerate(self.op_round):
            first_round = rid == self.round_first[self.round_job[rid]]
            raised.append(given[o] if first_round else max(given[o], latest[rid - 1]))
        order = sorted(range(n), key=lambda o: (raised[o], self.op_round[o], o))
        self.seq: list[list[int]] = [[] for _ in range(instance.n_gpus)]
        self.pos: list[list[int]] = [[0] * len(self.op_gpus[o]) for o in range(n)]
        for o in order:
            for slot, g in enumerate(self.op_gpus[o]):
                self.pos[o][slot] = len(self.seq[g])
                self.seq[g].append(o)
        self.start, self.ready = self._evaluate()
        self.objective = self._objective(self.ready)
        self._frames: list[_Frame] = []
        #: The search's work count: operations re-timed, places renumbered, gaps scanned.
        self.work = 0

    # -- evaluation --------------------------------------------------------------------------
    def _objective(self, ready: list[float]) -> float:
        return math.fsum(
            self.weight[j] * ready[self.round_first[j + 1] - 1] for j in range(self.inst.n_jobs)
        )

    def _lengths(self, o: int, gpus: list[int]) -> tuple[float, float]:
        """(busy, result) of o on ``gpus``."""
        j = self.round_job[self.op_round[o]]
        if self.gang:
            pace = float(max(self.pace[j, g] for g in gpus))
            return pace, pace
        return float(self.compute[j, gpus[0]]), float(self.pace[j, gpus[0]])

    def release(self, o: int) -> float:
        """Its job's arrival (first round), else when its previous round's results are
        ready."""
        rid = self.op_round[o]
        j = self.round_job[rid]
        return self.arrival[j] if rid == self.round_first[j] else self.ready[rid - 1]

    def _earliest(self, o: int, start: list[float], ready: list[float]) -> float:
        """o's start given the starts of the operations before it and its previous round's
        ready time in ``start`` and ``ready``."""
        rid = self.op_round[o]
        j = self.round_job[rid]
        s = self.arrival[j] if rid == self.round_first[j] else ready[rid - 1]
        busy, seq = self.busy, self.seq
        for g, i in zip(self.op_gpus[o], self.pos[o], strict=True):
            if i > 0:
                p = seq[g][i - 1]
                s = max(s, start[p] + busy[p])
        return s

    def _evaluate(self) -> tuple[list[float], list[float]]:
        """Every start and round's ready time from the sequences alone, operations taken in a
        topological order (Kahn's algorithm: an operation goes once it heads all its GPUs'
        remaining sequences and its previous round is done); ValueError on a cycle."""
        n = len(self.op_round)
        start, ready = [0.0] * n, [-math.inf] * len(self.round_job)
        left = [len(ops) for ops in self.round_ops]  # each round's operations not yet done
        heads = [0] * n  # how many of o's GPUs it heads
        for seq in self.seq:
            if seq:
                heads[seq[0]] += 1

        def free(o: int) -> bool:
            rid = self.op_round[o]
            return heads[o] == len(self.op_gpus[o]) and (
                rid == self.round_first[self.round_job[rid]] or left[rid - 1] == 0
            )

        todo = [o for o in range(n) if free(o)]
        done = 0
        while todo:
            o = todo.pop()
            done += 1
            rid = self.op_round[o]
            j = self.round_job[rid]
            s = self._earliest(o, start, ready)
            for g, i in zip(self.op_gpus[o], self.pos[o], strict=True):
                if i + 1 < len(self.seq[g]):
                    x = self.seq[g][i + 1]
                    heads[x] += 1
                    if free(x):
                        todo.append(x)
            start[o] = s
            ready[rid] = max(ready[rid], s + self.result[o])
            left[rid] -= 1
            if left[rid] == 0 and rid + 1 < self.round_first[j + 1]:
                todo += [q for q in self.round_ops[rid + 1] if free(q)]
        if done < n:
            raise ValueError("the GPU sequences contradict the rounds' order (a cycle)")
        return start, ready

    def recompute(self) -> tuple[list[float], float]:
        """Every start and the objective, recomputed from the sequences alone (for
        tests)."""
        start, ready = self._evaluate()
        return start, self._objective(ready)

    def schedule(self) -> Schedule:
        """The current schedule."""
        jobs, gpus = self.inst.jobs, self.inst.gpus
        tasks = []
        for o, rid in enumerate(self.op_round):
            j = self.round_job[rid]
            for k, g in zip(self.op_tasks[o], self.op_gpus[o], strict=True):
                tasks.append(
                    Task(jobs[j].id, rid - self.round_first[j], k, gpus[g].id, self.start[o])
                )
        return Schedule(self.inst.name, tasks, self.inst.mode)

    # -- moves -------------------------------------------------------------------------------
    def _neighbours(self, o: int, skip: int) -> tuple[float, float]:
        """(latest start of o's predecessors, earliest start of its successors), leaving out
        its neighbours on GPU ``skip``."""
        rid = self.op_round[o]
        j = self.round_job[rid]
        start = self.start
        before = (
            max(start[q] for q in self.round_ops[rid - 1])
            if rid > self.round_first[j]
            else -math.inf
        )
        after = (
            min(start[q] for q in self.round_ops[rid + 1])
            if rid + 1 < self.round_first[j + 1]
            else math.inf
        )
        for g, i in zip(self.op_gpus[o], self.pos[o], strict=True):
            if g == skip:
                continue
            seq = self.seq[g]
            if i > 0:
                before = max(before, start[seq[i - 1]])
            if i + 1 < len(seq):
                after = min(after, start[seq[i + 1]])
        return before, after

    def _others(self, o: int, g: int, h: int) -> list[int]:
        """h's sequence without o when o leaves g."""
        seq = self.seq[h]
        if h != g:
            return seq
        i = self.pos[o][self.op_gpus[o].index(g)]
        return seq[:i] + seq[i + 1 :]

    def window(self, o: int, g: int, h: int) -> tuple[int, int]:
        """The places in h's sequence (counted without o) where o's place on g may go: a
        closed range of indices that keeps the sequences acyclic (module doc)."""
        before, after = self._neighbours(o, g)
        seq, key = self._others(o, g, h), self.start.__getitem__
        return (bisect.bisect_right(seq, before, key=key), bisect.bisect_left(seq, after, key=key))

    def gap(self, o: int, g: int, h: int, push: bool = False) -> tuple[int, float]:
        """The first place in h's sequence (counted without o, within the window) where o,
        started at its release or later, ends before the next operation starts (``push``:
        the place before the last operation that starts by o's release, delaying that one
        and what follows); and when o's results would be ready there (an estimate in gang
        mode, where o's other GPUs may hold it back)."""
        lo, hi = self.window(o, g, h)
        seq = self._others(o, g, h)
        start, busy = self.start, self.busy
        gpus = [h if x == g else x for x in self.op_gpus[o]]
        length, result = self._lengths(o, gpus)
        release = self.release(o)
        i = min(max(bisect.bisect_right(seq, release, key=start.__getitem__) - 1, lo), hi)
        self.work += 1 + len(gpus) + 2 * len(self.round_ops[self.op_round[o]])
        while True:
            self.work += 1
            begin = release if i == 0 else max(release, start[seq[i - 1]] + busy[seq[i - 1]])
            if push or i == hi or begin + length <= start[seq[i]]:
                return i, begin + result
            i += 1

    def _renumber(self, g: int, first: int) -> None:
        seq, pos, op_gpus = self.seq[g], self.pos, self.op_gpus
        self.work += len(seq) - first
        for i in range(first, len(seq)):
            x = seq[i]
            gpus = op_gpus[x]
            pos[x][0 if len(gpus) == 1 else gpus.index(g)] = i

    def apply(self, o: int, g: int, h: int, i: int) -> float:
        """Move o's place on GPU g to index ``i`` of h's sequence (counted without o), which
        must lie in :meth:`window`; returns the change of the objective. Moves stack up until
        :meth:`commit` keeps them or :meth:`undo` reverts them all."""
        j = self.round_job[self.op_round[o]]
        if not math.isfinite(self.compute[j, h]) or (h != g and h in self.op_gpus[o]):
            raise ValueError(f"GPU {h} is not eligible for this operation or already in it")
        before, after = self._neighbours(o, g)
        slot = self.op_gpus[o].index(g)
        old = self.pos[o][slot]
        self.seq[g].pop(old)
        # the operation after o on g: its predecessor changes
        after_o = self.seq[g][old] if old < len(self.seq[g]) else -1
        seq = self.seq[h]
        lo = max(before, self.start[seq[i - 1]] if i > 0 else -math.inf)
        hi = min(after, self.start[seq[i]] if i < len(seq) else math.inf)
        # a time strictly between o's new predecessors' and successors' starts
        key = (
            (lo + hi) / 2
            if math.isfinite(lo + hi)
            else hi - 1
            if math.isfinite(hi)
            else lo + 1
            if math.isfinite(lo)
            else 0.0
        )
        if not lo < key < hi:
            self.seq[g].insert(old, o)
            raise ValueError("place outside the move's window")
        seq.insert(i, o)
        frame = _Frame(o, g, h, old, slot, self.busy[o], self.result[o], self.objective)
        self._frames.append(frame)
        self.op_gpus[o][slot] = h
        self._renumber(g, old)
        self._renumber(h, i)
        self.busy[o], self.result[o] = self._lengths(o, self.op_gpus[o])
        heap = [(key, o)] + ([(self.start[after_o], after_o)] if after_o >= 0 else [])
        heapq.heapify(heap)
        self._propagate(heap, frame)
        return frame.delta

    def _propagate(self, heap: list[tuple[float, int]], frame: _Frame) -> None:
        """Recompute starts in the order of the heap's keys, an operation again whenever a
        predecessor changes after it (module doc)."""
        start, ready, seq, pos, result = self.start, self.ready, self.seq, self.pos, self.result
        queued = {o for _, o in heap}
        moved = frame.op
        while heap:
            _, x = heapq.heappop(heap)
            queued.discard(x)
            self.work += 1 + len(self.op_gpus[x]) + len(self.round_ops[self.op_round[x]])
            s = self._earliest(x, start, ready)
            if s == start[x] and x != moved:
                continue
            frame.starts.append((x, start[x]))
            before, start[x] = start[x], s
            for g, i in zip(self.op_gpus[x], pos[x], strict=True):
                if i + 1 < len(seq[g]):
                    y = seq[g][i + 1]
                    if y not in queued:
                        queued.add(y)
                        heapq.heappush(heap, (start[y], y))
            rid = self.op_round[x]
            done = s + result[x]
            if done > ready[rid]:
                new = done
            elif x == moved or before + result[x] >= ready[rid]:  # it may have been last
                new = max(start[q] + result[q] for q in self.round_ops[rid])
            else:
                continue
            if new == ready[rid]:
                continue
            frame.readies.append((rid, ready[rid]))
            j = self.round_job[rid]
            if rid + 1 < self.round_first[j + 1]:
                for q in self.round_ops[rid + 1]:
                    if q not in queued:
                        queued.add(q)
                        heapq.heappush(heap, (start[q], q))
            else:
                frame.delta += self.weight[j] * (new - ready[rid])
            ready[rid] = new
        self.objective += frame.delta

    def commit(self) -> None:
        """Keep the moves applied since the last commit."""
        self._frames.clear()

    def undo(self) -> None:
        """Revert the moves applied since the last commit."""
        while self._frames:
            f = self._frames.pop()
            for x, value in reversed(f.starts):
                self.start[x] = value
            for rid, value in reversed(f.readies):
                self.ready[rid] = value
            o = f.op
            i = self.pos[o][f.slot]
            self.seq[f.joined].pop(i)
            self.seq[f.left].insert(f.index, o)
            self.op_gpus[o][f.slot] = f.left
            self._renumber(f.joined, i)
            self._renumber(f.left, f.index)
            self.busy[o], self.result[o] = f.busy, f.result
            self.objective = f.objective


def _best_gap(
    state: SequenceSchedule, o: int, g: int, pool: np.ndarray, push: bool
) -> tuple[int, int] | None:
    """(GPU, place) of the earliest-ready gap for o's place on g among g and the GPUs of
    ``pool``, None when none beats where o is now."""
    best, out = state.start[o] + state.result[o], None
    gpus = state.op_gpus[o]
    for h in [g, *pool.tolist()]:
        if h != g and h in gpus:
            continue
        i, done = state.gap(o, g, h, push)
        if done < best:
            best, out = done, (h, i)
    return out


def improve(
    state: SequenceSchedule,
    rng: np.random.Generator,
    deadline: float | None,
    steps: int | None = None,
    patience: int = 10_000,
    sample: int = 16,
    report: Callable[[float | None, float | None], None] | None = None,
    work: float | None = None,
) -> dict[str, Any]:
    """Local search with task moves on ``state``, which ends at the best schedule found.

    A step picks a round's straggler (one time in four, any operation) and tries one of:
    **reassign**, the best gap for it among up to ``sample`` random eligible GPUs, then for
    the round's next straggler while the round's results are not ready earlier (a chain of
    at most K moves); or **resequence**, a place one to three positions earlier or later in
    one of its GPU's sequences. The step is kept when the objective does not get worse.
    ``work``: a budget in work-seconds (:mod:`optsched.work`), counted in operations
    re-timed, places renumbered and gaps scanned, :data:`WORK_PER_SECOND` a work-second."""
    inst = state.inst
    eligible = [np.flatnonzero(np.isfinite(inst.compute[j])) for j in range(inst.n_jobs)]
    # an improvement: more than the checker's time tolerance per unit of weight
    first = min(job.arrival for job in inst.jobs)
    noise = sum(state.weight) * time_tolerance(max(state.ready) - first, max(state.ready))
    n_rounds, n_ops = len(state.round_ops), len(state.start)
    tried = kept = improved = since = 0
    stopped = "steps"
    meter = WorkMeter(work, WORK_PER_SECOND)

    def straggler(rid: int) -> int:
        state.work += len(state.round_ops[rid])
        return max(state.round_ops[rid], key=lambda q: state.start[q] + state.result[q])

    try:
        while steps is None or tried < steps:
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = "time limit"
                break
            if since >= patience:
                stopped = "patience"
                break
            meter.units = state.work + STEP_WORK * tried
            if meter.exhausted:
                stopped = "work"
                break
            tried += 1
            since += 1
            o = (
                straggler(int(rng.integers(n_rounds)))
                if rng.random() < 0.75
                else int(rng.integers(n_ops))
            )
            rid = state.op_round[o]
            gpus = state.op_gpus[o]
            g = gpus[int(rng.integers(len(gpus)))]
            delta = 0.0
            if rng.random() < 0.5:
                pool = eligible[state.round_job[rid]]
                if len(pool) > sample:
                    pool = rng.choice(pool, sample, replace=False)
                was, moved, push = state.ready[rid], set(), rng.random() < 0.5
                while o not in moved:
                    best = _best_gap(state, o, g, pool, push)
                    if best is None:
                        break
                    try:
                        delta += state.apply(o, g, *best)
                    except ValueError:  # no time strictly between the new neighbours
                        break
                    moved.add(o)
                    if state.ready[rid] < was:
                        break
                    o = straggler(rid)
                    g = state.op_gpus[o][0]
                if not moved:
                    continue
            else:
                lo, hi = state.window(o, g, g)
                here = state.pos[o][gpus.index(g)]
                i = min(max(here + int(rng.integers(1, 4)) * int(rng.choice([-1, 1])), lo), hi)
                if i == here:
                    continue
                try:
                    delta = state.apply(o, g, g, i)
                except ValueError:
                    continue
            if delta <= 0.0:
                state.commit()
                kept += 1
                if delta < -noise:
                    improved, since = improved + 1, 0
                    if report is not None:
                        report(state.objective, None)
            else:
                state.undo()
    except KeyboardInterrupt:  # a genuine Ctrl-C: back to the last kept schedule
        state.undo()
        stopped = "interrupted"
    meter.units = state.work + STEP_WORK * tried
    return {
        "steps": tried,
        "kept": kept,
        "improvements": improved,
        "stopped": stopped,
        "work": meter.spent,
    }


#: Work units of one work-second: measured on the 2-core reference machine by
#: ``benchmarks/work_rates.py``. A step counts :data:`STEP_WORK`, and one unit per
#: operation re-timed, place renumbered and gap scanned.
WORK_PER_SECOND, STEP_WORK = 3.0e6, 36

#: Seconds per task the end of a run takes (the schedule read off the sequences and
#: evaluated; measured about 12 µs): kept from the search.
FINISH_SECONDS_PER_TASK = 2e-5


@dataclass(frozen=True)
class TaskSearchOptions(Options):
    """Options of ``task-search``."""

    steps: int | None = count(
        "stop after this many steps (default: none, run to the time limit)", None
    )
    patience: int = count(
        "stop after this many steps in a row without improvement (default 10000)", 10_000
    )
    sample: int = count("eligible GPUs sampled per reassign step (default 16)", 16)
    work: float | None = work_option()


@register(
    "task-search",
    options=TaskSearchOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    description="local search with task moves (reassign a task to another GPU, "
    "resequence it), incremental evaluation, from ECT or a better hint "
    "(anytime, seeded, any size, both modes)",
)
def _task_search(instance: Instance, context: SolveContext[TaskSearchOptions]) -> MethodOutput:
    options = context.options
    budget = Budget(context.time_limit)
    start = incumbent(instance, context.hint, budget)
    origin = start.origin
    if any(t.train_start is not None or t.failed_at is not None for t in start.schedule.tasks):
        start = incumbent(instance)  # a hint with launch phases: not a GPU sequence
        origin = "ect (the hint has launch phases)"
    extra: dict[str, Any] = {"start": origin, "start_objective": start.objective}
    if budget.expired():  # the start took the time: it is the result
        return MethodOutput(
            schedule=start.schedule,
            extra={
                **extra,
                "steps": 0,
                "kept": 0,
                "improvements": 0,
                "stopped": "time limit",
                "interrupted": False,
                "returned": "start (no time left to search)",
            },
        )
    try:
        state = SequenceSchedule(instance, start.schedule)
    except KeyboardInterrupt:  # a genuine Ctrl-C while reading the start: it is the result
        return MethodOutput(
            schedule=start.schedule,
            extra={
                **extra,
                "steps": 0,
                "kept": 0,
                "improvements": 0,
                "stopped": "interrupted",
                "interrupted": True,
                "returned": "start (interrupted)",
            },
        )
    shifted = state.objective
    # the end of the run (the schedule read off the sequences, its objective) keeps its share
    finish = FINISH_SECONDS_PER_TASK * sum(job.n_tasks for job in instance.jobs)
    deadline = None if budget.limit is None else budget.started + budget.limit - finish
    extra.update(
        improve(
            state,
            np.random.default_rng(context.seed),
            deadline,
            options.steps,
            options.patience,
            options.sample,
            context.report,
            options.work,
        )
    )
    extra["interrupted"] = extra["stopped"] == "interrupted"
    extra["left_shift"] = start.objective - shifted
    schedule = state.schedule()
    ours, _ = evaluate(instance, schedule)
    if ours > start.objective:
        extra["returned"] = "start (the search found nothing better)"
        return MethodOutput(schedule=start.schedule, extra=extra)
    extra["returned"] = "search"
    return MethodOutput(schedule=schedule, extra=extra)
