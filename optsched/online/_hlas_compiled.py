"""HLAS in relaxed mode as one compiled event loop: the Python engine's schedules, task by
task, at a fraction of its cost on large traces. Optional: it needs numba
(``pip install "optsched[fast]"``); :func:`~optsched.online.simulator.run_simulation` uses it
with ``engine="compiled"``, or with ``engine="auto"`` (the default) from
:data:`~optsched.online.simulator.COMPILED_FROM_TASKS` tasks when numba is installed and the
run is one it covers (:meth:`~optsched.online.hlas.HLAS.compiled_engine`).

What it covers: :class:`~optsched.online.hlas.HLAS` itself (not a subclass) with
``form=queues`` and mapping A or B, in relaxed mode, decisions at every instant (no tick),
with or without noise and switch cost, any observers.

How it stays identical to the Python engine (:mod:`optsched.online.engine`,
:mod:`optsched.online.simulator`, :mod:`optsched.online.hlas`): it replays it step by step.
One event heap ordered by (time, sequence number), numbered as the engine numbers its
pushes; every event of an instant, then one decision; the same priority keys, revisit times,
tie-breaks, and floating-point expressions evaluated in the same order. The sorted lists the
Python queue keeps (the waiting jobs per level; per level and speed class, the jobs by
speed-up and by time; the idle GPUs per class) are Fenwick trees over ranks fixed before the
run: a job's place in each order never changes while it waits, only whether it is there.

Two things stay in Python. The queue thresholds derived from finished jobs
(``calibration=history``) are computed by the policy's own code: the loop returns each time
the number of finished jobs reaches a power of two, when the thresholds may change, and
resumes. Observers other than the metrics (the recorded or streamed schedule, a user's)
receive every hook call in the engine's order, replayed from a buffer each time it fills;
the progress line gets the buffer's counts
(:meth:`~optsched.online.engine.ProgressObserver.advance`); the metrics are kept in the
loop, summed in the same order.
"""

from __future__ import annotations

import sys
import time
from collections import namedtuple
from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
from numba import njit

from optsched.instance import GPU, Instance, Job
from optsched.online.engine import (
    MetricsObserver,
    Observer,
    PolicyError,
    ProgressObserver,
    ScheduleRecorder,
    Simulation,
    implementing,
)
from optsched.online.simulator import speed_classes

if TYPE_CHECKING:
    from optsched.online.hlas import HLAS

#: Hook calls the replay buffer holds before the loop hands them to the observers (at
#: least 2 × the GPUs + 1: one decision's calls).
LOG_ENTRIES = 1 << 16
#: Free places the revisit heap keeps beyond the most one instant can push.
REVISIT_SLACK = 1024

# event kinds, numbered as the Python engine numbers them (engine.ARRIVE, simulator._FREE,
# simulator._READY); only their identity matters here
_ARRIVE, _FREE, _READY = 0, 3, 4
# why the loop returned
DONE, LEVELS, FLUSH, GROW = 0, 1, 2, 3
# observer hook calls in the replay buffer
_ON_TASK, _ON_HELD, _ON_DONE = 0, 1, 2
# the loop's integer scalars (``Loop.i``) ...
(
    I_SEQ,
    I_EVENTS,
    I_DECISIONS,
    I_UNFINISHED,
    I_HEAP,
    I_REVISITS,
    I_LOG,
    I_PHASE,
    I_STAMP,
    I_LEVELS,
    I_REKEY,
    I_FINISHED,
    I_IDLE,
    I_MAPPING_B,
    I_HISTORY,
    I_LOGGING,
    I_DONE,
    I_MARGIN,
    N_INTS,
) = range(19)
# ... and its float scalars (``Loop.f``)
F_NOW, F_STARVATION, F_OBJECTIVE, F_WEIGHTED_JCT, F_JCT_SUM, F_MAKESPAN, N_FLOATS = range(7)

#: The jobs: what the policy reads (profiled), what execution uses (realised), fixed ranks.
Jobs = namedtuple(
    "Jobs",
    "arrival weight tasks rounds fastest by_class compute sync "
    "queue_rank queue_job gain_rank gain_job fast_rank fast_time",
)
#: Each job's state, updated in place. ``left`` holds the tasks left in the current
#: decision where ``left_stamp`` equals the decision's stamp; a stamp also marks a job once
#: in a pass over the due revisits or the jobs a decision touched.
States = namedtuple(
    "States",
    "waiting started rounds_done last_start entered promoted round_ready active "
    "queued level counted left left_stamp completion",
)
#: The GPUs: speed class, realised profile class, place in its class, idle state.
Gpus = namedtuple(
    "Gpus", "speed_class profile_class position members idle on_gpu taken busy idle_in_class"
)
#: Fenwick trees: the waiting jobs per level by queue order, per (level, speed class) by
#: speed-up and by time; the jobs and their waiting tasks per level.
Trees = namedtuple("Trees", "queue gain fast queued tasks")
#: Scalars, thresholds, the heaps, scratch buffers, the replay buffer, finished sizes.
Loop = namedtuple(
    "Loop",
    "i f levels heap_t heap_seq heap_kind heap_what rev_t rev_job "
    "dec_job dec_gpu touched due cursor keys group pos "
    "log_kind log_int log_float history",
)


# -- Fenwick trees over ranks: a set of ranks with insert, delete and "first member ≥ x".
# tree[0] holds the largest power of two ≤ the tree's size (the descent's first step).


@njit(cache=True)
def _fw_add(tree: Any, i: int, delta: int) -> None:
    n = tree.shape[0] - 1
    i += 1
    while i <= n:
        tree[i] += delta
        i += i & -i


@njit(cache=True)
def _fw_next(tree: Any, x: int) -> int:
    """The smallest member ≥ ``x``, or -1."""
    n = tree.shape[0] - 1
    if x >= n:
        return -1
    k = 1  # 1 + the members below x: the rank of the wanted member
    i = x
    while i > 0:
        k += tree[i]
        i -= i & -i
    pos = 0
    step = tree[0]
    while step:
        nxt = pos + step
        if nxt <= n and tree[nxt] < k:
            pos = nxt
            k -= tree[nxt]
        step >>= 1
    return pos if pos < n else -1


# -- the two heaps --------------------------------------------------------------------------


@njit(cache=True)
def _push(loop: Any, t: float, kind: int, what: int) -> None:
    """An event, after every earlier push at the same time (the engine's sequence number)."""
    li = loop.i
    li[I_SEQ] += 1
    seq = li[I_SEQ]
    ht, hs, hk, hw = loop.heap_t, loop.heap_seq, loop.heap_kind, loop.heap_what
    i = li[I_HEAP]
    li[I_HEAP] = i + 1
    while i > 0:
        p = (i - 1) >> 1
        if ht[p] < t or (ht[p] == t and hs[p] < seq):
            break
        ht[i], hs[i], hk[i], hw[i] = ht[p], hs[p], hk[p], hw[p]
        i = p
    ht[i], hs[i], hk[i], hw[i] = t, seq, kind, what


@njit(cache=True)
def _pop(loop: Any) -> tuple[int, int]:
    ht, hs, hk, hw = loop.heap_t, loop.heap_seq, loop.heap_kind, loop.heap_what
    kind, what = hk[0], hw[0]
    n = loop.i[I_HEAP] - 1
    loop.i[I_HEAP] = n
    t, s, k, w = ht[n], hs[n], hk[n], hw[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (ht[c + 1] < ht[c] or (ht[c + 1] == ht[c] and hs[c + 1] < hs[c])):
            c += 1
        if t < ht[c] or (t == ht[c] and s < hs[c]):
            break
        ht[i], hs[i], hk[i], hw[i] = ht[c], hs[c], hk[c], hw[c]
        i = c
    if n > 0:
        ht[i], hs[i], hk[i], hw[i] = t, s, k, w
    return kind, what


@njit(cache=True)
def _push_revisit(loop: Any, t: float, j: int) -> None:
    rt, rj = loop.rev_t, loop.rev_job
    i = loop.i[I_REVISITS]
    if i == rt.shape[0]:  # never: the driver keeps room for the most one stretch can push
        raise IndexError("the revisit heap is full")
    loop.i[I_REVISITS] = i + 1
    while i > 0:
        p = (i - 1) >> 1
        if rt[p] < t or (rt[p] == t and rj[p] <= j):
            break
        rt[i], rj[i] = rt[p], rj[p]
        i = p
    rt[i], rj[i] = t, j


@njit(cache=True)
def _pop_revisit(loop: Any) -> int:
    rt, rj = loop.rev_t, loop.rev_job
    job = rj[0]
    n = loop.i[I_REVISITS] - 1
    loop.i[I_REVISITS] = n
    t, j = rt[n], rj[n]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (rt[c + 1] < rt[c] or (rt[c + 1] == rt[c] and rj[c + 1] < rj[c])):
            c += 1
        if t < rt[c] or (t == rt[c] and j <= rj[c]):
            break
        rt[i], rj[i] = rt[c], rj[c]
        i = c
    if n > 0:
        rt[i], rj[i] = t, j
    return job


# -- the policy: HLAS.priority, HLAS.revisit, _LevelClassQueue.put/drop ---------------------


@njit(cache=True)
def _level(j: int, jobs: Any, st: Any, loop: Any) -> int:
    own = (st.started[j] * jobs.fastest[j] - st.entered[j]) / jobs.weight[j]
    level = 0
    for q in range(loop.i[I_LEVELS]):
        if own >= loop.levels[q]:
            level += 1
    return level


@njit(cache=True)
def _count(j: int, level: int, delta: int, jobs: Any, st: Any, trees: Any) -> None:
    """Add (``delta`` 1) or remove (-1) job ``j``'s entries at ``level``: the queue, the
    per-class orders of the classes it can use, the level's jobs and waiting tasks."""
    trees.tasks[level] += delta * st.counted[j]
    trees.queued[level] += delta
    _fw_add(trees.queue[level], jobs.queue_rank[j], delta)
    for c in range(jobs.by_class.shape[1]):
        r = jobs.gain_rank[c, j]
        if r >= 0:
            _fw_add(trees.gain[level, c], r, delta)
            _fw_add(trees.fast[level, c], jobs.fast_rank[c, j], delta)


@njit(cache=True)
def _index(j: int, level: int, jobs: Any, st: Any, trees: Any) -> None:
    st.queued[j] = True
    st.level[j] = level
    st.counted[j] = st.waiting[j]
    _count(j, level, 1, jobs, st, trees)


@njit(cache=True)
def _unindex(j: int, jobs: Any, st: Any, trees: Any) -> None:
    st.queued[j] = False
    _count(j, st.level[j], -1, jobs, st, trees)


@njit(cache=True)
def _queue(j: int, now: float, jobs: Any, st: Any, trees: Any, loop: Any) -> None:
    """The engine's _queue: the job's key (a starving job re-enters queue 0), its place in
    the queue, and its revisit time."""
    starvation = loop.f[F_STARVATION]
    service = st.started[j] * jobs.fastest[j]
    level = _level(j, jobs, st, loop)
    if level and starvation > 0 and now - st.last_start[j] > starvation * service:
        st.entered[j] = service
        st.promoted[j] = True
        level = 0
    if st.queued[j]:
        if st.level[j] != level or st.counted[j] != st.waiting[j]:
            _unindex(j, jobs, st, trees)
            _index(j, level, jobs, st, trees)
    else:
        _index(j, level, jobs, st, trees)
    if starvation > 0 and _level(j, jobs, st, loop):
        at = st.last_start[j] + starvation * st.started[j] * jobs.fastest[j]
        # hlas.after: just before ``at``, and later than now
        early = at - 1e-9 * max(1.0, abs(at))
        later = np.nextafter(now, np.inf)
        at = later if later > early else early
        if at < np.inf:  # not an infinite or NaN time (starvation=inf): never
            _push_revisit(loop, at, j)


@njit(cache=True)
def _requeue_due(now: float, jobs: Any, st: Any, trees: Any, loop: Any) -> None:
    """Re-key the waiting jobs whose revisit time has come, each once, by index."""
    due = loop.due
    n = 0
    stamp = loop.i[I_STAMP] + 1
    loop.i[I_STAMP] = stamp
    while loop.i[I_REVISITS] and loop.rev_t[0] <= now:
        j = _pop_revisit(loop)
        if st.left_stamp[j] != stamp:
            st.left_stamp[j] = stamp
            due[n] = j
            n += 1
    for j in np.sort(due[:n]):
        if st.active[j] and st.waiting[j]:
            _queue(j, now, jobs, st, trees, loop)


# -- the decision: mapping B (speed-up matching), then mapping A (fastest idle GPU) ---------


@njit(cache=True)
def _left(j: int, st: Any, stamp: int) -> int:
    return st.left[j] if st.left_stamp[j] == stamp else st.waiting[j]


@njit(cache=True)
def _decide(jobs: Any, st: Any, gpus: Any, trees: Any, loop: Any) -> int:
    """The decisions of one instant into ``loop.dec_job``/``dec_gpu``; their count."""
    n_classes = jobs.by_class.shape[1]
    stamp = loop.i[I_STAMP] + 1
    loop.i[I_STAMP] = stamp
    taken = gpus.taken
    members = gpus.members
    out = 0
    if loop.i[I_MAPPING_B]:
        level = 0
        while trees.queued[level] == 0:
            level += 1
        pending = trees.tasks[level]
        keys, group, pos, gain_cursor = loop.keys, loop.group, loop.pos, loop.cursor
        for c in range(n_classes):
            r = _fw_next(trees.fast[level, c], 0)
            keys[c] = jobs.fast_time[c, r] if r >= 0 else np.inf
            group[c] = 0 if gpus.idle_in_class[c] else 2  # 0 to visit, 1 now, 2 visited
            gain_cursor[c] = 0
        while pending:
            # the classes of the next time (hlas._by_fastest), their idle GPUs by index
            first = -1
            for c in range(n_classes):
                if group[c] == 0 and (first < 0 or keys[c] < keys[first]):
                    first = c
            if first < 0:
                break
            for c in range(n_classes):
                if group[c] == 0 and keys[c] == keys[first]:
                    group[c] = 1
                    pos[c] = _fw_next(gpus.idle[c], 0)
            while pending:
                best = -1
                for c in range(n_classes):
                    if (
                        group[c] == 1
                        and pos[c] >= 0
                        and (best < 0 or members[c, pos[c]] < members[best, pos[best]])
                    ):
                        best = c
                if best < 0:
                    break
                c = best
                g = members[c, pos[c]]
                pos[c] = _fw_next(gpus.idle[c], pos[c] + 1)
                gain = trees.gain[level, c]
                r = _fw_next(gain, gain_cursor[c])
                while r >= 0 and not _left(jobs.gain_job[c, r], st, stamp):
                    r = _fw_next(gain, r + 1)
                if r < 0:
                    gain_cursor[c] = gain.shape[0]
                    continue
                gain_cursor[c] = r
                j = jobs.gain_job[c, r]
                st.left[j] = _left(j, st, stamp) - 1
                st.left_stamp[j] = stamp
                pending -= 1
                taken[g] = stamp
                loop.dec_job[out], loop.dec_gpu[out] = j, g
                out += 1
            for c in range(n_classes):
                if group[c] == 1:
                    group[c] = 2
    # mapping A (hlas.fill_fastest) over the whole queue with the GPUs and tasks left
    total = loop.i[I_IDLE]
    cursor = loop.pos
    for c in range(n_classes):
        cursor[c] = 0
    for level in range(trees.queued.shape[0]):
        if out == total:
            break
        if not trees.queued[level]:
            continue
        r = _fw_next(trees.queue[level], 0)
        while r >= 0:
            if out == total:
                break
            j = jobs.queue_job[r]
            for _ in range(_left(j, st, stamp)):
                best, best_t, best_g = -1, np.inf, 0
                for c in range(n_classes):
                    p = _fw_next(gpus.idle[c], cursor[c])
                    while p >= 0 and taken[members[c, p]] == stamp:
                        p = _fw_next(gpus.idle[c], p + 1)
                    if p < 0:
                        cursor[c] = gpus.idle[c].shape[0]
                        continue
                    cursor[c] = p
                    g = members[c, p]
                    t = jobs.by_class[j, c]
                    if t < best_t or (t == best_t and g < best_g):
                        best, best_t, best_g = g, t, g
                if best < 0:
                    break
                taken[best] = stamp
                loop.dec_job[out], loop.dec_gpu[out] = j, best
                out += 1
            r = _fw_next(trees.queue[level], r + 1)
    return out


# -- the execution model: simulator._BasicEngine in relaxed mode -----------------------------


@njit(cache=True)
def _log(loop: Any, kind: int, a: int, b: int, c: int, d: int, x: float, y: float) -> None:
    k = loop.i[I_LOG]
    loop.i[I_LOG] = k + 1
    loop.log_kind[k] = kind
    loop.log_int[k, 0], loop.log_int[k, 1], loop.log_int[k, 2], loop.log_int[k, 3] = a, b, c, d
    loop.log_float[k, 0], loop.log_float[k, 1] = x, y


@njit(cache=True)
def _start_task(j: int, g: int, now: float, jobs: Any, st: Any, gpus: Any, loop: Any) -> None:
    p = gpus.profile_class[g]
    c = jobs.compute[j, p]
    task = jobs.tasks[j] - st.waiting[j]
    st.waiting[j] -= 1
    gpus.on_gpu[g] = j
    st.started[j] += 1
    st.last_start[j] = now
    ready = now + c + jobs.sync[j, p]
    if ready > st.round_ready[j]:
        st.round_ready[j] = ready
    _push(loop, now + c, _FREE, g)
    gpus.busy[g] += (now + c) - now
    if loop.i[I_LOGGING]:
        _log(loop, _ON_TASK, j, st.rounds_done[j], task, g, now, now + c)
        _log(loop, _ON_HELD, g, 0, 0, 0, now, now + c)
    if st.waiting[j] == 0:
        _push(loop, st.round_ready[j], _READY, j)


@njit(cache=True)
def _handle(
    kind: int, who: int, now: float, jobs: Any, st: Any, gpus: Any, trees: Any, loop: Any
) -> bool:
    """One event; True when a job finished and the finished count is a power of two."""
    if kind == _FREE:
        c = gpus.speed_class[who]
        _fw_add(gpus.idle[c], gpus.position[who], 1)
        gpus.idle_in_class[c] += 1
        loop.i[I_IDLE] += 1
        j = gpus.on_gpu[who]
        if j >= 0:
            gpus.on_gpu[who] = -1
            if st.waiting[j]:
                _queue(j, now, jobs, st, trees, loop)
        return False
    if kind == _READY:
        j = who
        st.rounds_done[j] += 1
        if st.rounds_done[j] < jobs.rounds[j]:
            st.waiting[j] = jobs.tasks[j]
            st.round_ready[j] = now
            _queue(j, now, jobs, st, trees, loop)
            return False
        st.active[j] = False
        loop.i[I_UNFINISHED] -= 1
        w, a = jobs.weight[j], jobs.arrival[j]
        st.completion[j] = now
        f = loop.f
        f[F_OBJECTIVE] += w * now
        f[F_WEIGHTED_JCT] += w * (now - a)
        f[F_JCT_SUM] += now - a
        if now > f[F_MAKESPAN]:
            f[F_MAKESPAN] = now
        loop.i[I_DONE] += 1
        if loop.i[I_LOGGING]:
            _log(loop, _ON_DONE, j, 0, 0, 0, now, now)
        if not loop.i[I_HISTORY]:
            return False
        n = loop.i[I_FINISHED]
        loop.history[n] = st.started[j] * jobs.fastest[j]
        loop.i[I_FINISHED] = n + 1
        return (n + 1) & n == 0
    # an arrival
    j = who
    st.waiting[j] = jobs.tasks[j]
    st.last_start[j] = jobs.arrival[j]
    st.active[j] = True
    _queue(j, now, jobs, st, trees, loop)
    return False


@njit(cache=True)
def _run(jobs: Any, st: Any, gpus: Any, trees: Any, loop: Any) -> int:
    """Process events until the run is over (DONE) or Python is needed: new thresholds
    (LEVELS, after the event that finished the job), a full replay buffer (FLUSH, before
    the step that could overflow it) or a bigger revisit heap (GROW, between instants)."""
    li, f = loop.i, loop.f
    n_jobs = jobs.arrival.shape[0]
    if li[I_REKEY]:  # the thresholds changed: new keys for every waiting job
        li[I_REKEY] = 0
        for j in range(n_jobs):
            if st.active[j] and st.waiting[j]:
                _queue(j, f[F_NOW], jobs, st, trees, loop)
    log_room = loop.log_kind.shape[0]
    while True:
        if li[I_PHASE] == 0:  # a new instant
            if li[I_HEAP] == 0 or li[I_UNFINISHED] == 0:
                return DONE
            if loop.rev_t.shape[0] - li[I_REVISITS] < li[I_MARGIN]:
                return GROW
            f[F_NOW] = loop.heap_t[0]
            li[I_PHASE] = 1
        now = f[F_NOW]
        if li[I_PHASE] == 1:  # its events
            while li[I_HEAP] and loop.heap_t[0] == now:
                if li[I_LOGGING] and li[I_LOG] + 1 > log_room:
                    return FLUSH
                kind, who = _pop(loop)
                li[I_EVENTS] += 1
                if _handle(kind, who, now, jobs, st, gpus, trees, loop):
                    return LEVELS
            li[I_PHASE] = 2
        # the decision (engine.settle -> _decide)
        if li[I_IDLE] and trees.queued.sum():
            if li[I_LOGGING] and li[I_LOG] + 2 * li[I_IDLE] > log_room:
                return FLUSH
            if li[I_REVISITS] and loop.rev_t[0] <= now:
                _requeue_due(now, jobs, st, trees, loop)
            made = _decide(jobs, st, gpus, trees, loop)
            for k in range(made):
                _start_task(loop.dec_job[k], loop.dec_gpu[k], now, jobs, st, gpus, loop)
            li[I_DECISIONS] += made
            stamp = li[I_STAMP] + 1
            li[I_STAMP] = stamp
            touched = 0
            for k in range(made):
                g, j = loop.dec_gpu[k], loop.dec_job[k]
                c = gpus.speed_class[g]
                _fw_add(gpus.idle[c], gpus.position[g], -1)
                gpus.idle_in_class[c] -= 1
                if st.left_stamp[j] != stamp:
                    st.left_stamp[j] = stamp
                    loop.touched[touched] = j
                    touched += 1
            li[I_IDLE] -= made
            for j in np.sort(loop.touched[:touched]):
                if st.waiting[j]:
                    _queue(j, now, jobs, st, trees, loop)
                elif st.queued[j]:
                    _unindex(j, jobs, st, trees)
        li[I_PHASE] = 0


# -- the driver ------------------------------------------------------------------------------


def _fenwick(shape: tuple[int, ...], size: int, members: np.ndarray | int = 0) -> np.ndarray:
    """Fenwick trees of ``size`` ranks (``shape`` of them), tree[0] the descent's first
    step; ``members`` ranks 0..members-1 present (one count for every tree, or one per
    tree along the last axis of ``shape``)."""
    trees = np.zeros((*shape, size + 1), dtype=np.int32)
    if np.any(members):  # node i counts the members in (i - lowbit(i), i]
        i = np.arange(1, size + 1)
        m = np.asarray(members)[..., None]
        trees[..., 1:] = np.clip(np.minimum(i, m) - (i - (i & -i)), 0, None)
    trees[..., 0] = 1 << (size.bit_length() - 1) if size else 0
    return trees


def _prepare(profiled: Instance, real: Instance, policy: HLAS, logging: bool) -> tuple[Any, ...]:
    n, n_gpus = real.n_jobs, real.n_gpus
    class_of, n_classes = speed_classes(real)
    first_of_class = [class_of.index(c) for c in range(n_classes)]
    by_class = np.ascontiguousarray(
        profiled.class_compute[:, profiled.gpu_class[first_of_class]], dtype=float
    )
    eligible = np.isfinite(by_class)
    fastest = by_class.min(axis=1)
    slowest = np.where(eligible, by_class, -np.inf).max(axis=1)
    arrival = np.array([job.arrival for job in profiled.jobs], dtype=float)
    index = np.arange(n)
    queue_job = np.lexsort((index, arrival))
    queue_rank = np.empty(n, dtype=np.int64)
    queue_rank[queue_job] = index
    gain_rank = np.full((n_classes, n), -1, dtype=np.int64)
    gain_job = np.full((n_classes, n), -1, dtype=np.int64)
    fast_rank = np.full((n_classes, n), -1, dtype=np.int64)
    fast_time = np.full((n_classes, n), np.inf)
    for c in range(n_classes):
        idx = np.flatnonzero(eligible[:, c])
        t = by_class[idx, c]
        # the speed-up order (-(slowest / t), then queue order) and the time order
        by_gain = idx[np.lexsort((idx, arrival[idx], -(slowest[idx] / t)))]
        gain_job[c, : len(idx)] = by_gain
        gain_rank[c, by_gain] = np.arange(len(idx))
        by_time = np.lexsort((idx, t))
        fast_rank[c, idx[by_time]] = np.arange(len(idx))
        fast_time[c, : len(idx)] = t[by_time]
    jobs = Jobs(
        arrival=arrival,
        weight=np.array([job.weight for job in profiled.jobs], dtype=float),
        tasks=np.array([job.tasks_per_round for job in profiled.jobs], dtype=np.int64),
        rounds=np.array([job.rounds for job in real.jobs], dtype=np.int64),
        fastest=fastest,
        by_class=by_class,
        compute=np.ascontiguousarray(real.class_compute, dtype=float),
        sync=np.ascontiguousarray(real.class_sync, dtype=float),
        queue_rank=queue_rank,
        queue_job=queue_job.astype(np.int64),
        gain_rank=gain_rank,
        gain_job=gain_job,
        fast_rank=fast_rank,
        fast_time=fast_time,
    )

    def zeros(dtype: Any) -> np.ndarray:
        return np.zeros(n, dtype=dtype)

    states = States(
        waiting=zeros(np.int64),
        started=zeros(np.int64),
        rounds_done=zeros(np.int64),
        last_start=zeros(float),
        entered=zeros(float),
        promoted=zeros(np.bool_),
        round_ready=arrival.copy(),
        active=zeros(np.bool_),
        queued=zeros(np.bool_),
        level=zeros(np.int64),
        counted=zeros(np.int64),
        left=zeros(np.int64),
        left_stamp=zeros(np.int64),
        completion=np.full(n, np.nan),
    )
    speed_class = np.array(class_of, dtype=np.int64)
    sizes = np.bincount(speed_class, minlength=n_classes)
    widest = int(sizes.max())
    members = np.full((n_classes, widest), -1, dtype=np.int64)
    position = np.empty(n_gpus, dtype=np.int64)
    for c in range(n_classes):
        of_c = np.flatnonzero(speed_class == c)
        members[c, : len(of_c)] = of_c
        position[of_c] = np.arange(len(of_c))
    gpus = Gpus(
        speed_class=speed_class,
        profile_class=np.asarray(real.gpu_class, dtype=np.int64),
        position=position,
        members=members,
        idle=_fenwick((n_classes,), widest, sizes),  # every GPU idle
        on_gpu=np.full(n_gpus, -1, dtype=np.int64),
        taken=np.zeros(n_gpus, dtype=np.int64),
        busy=np.zeros(n_gpus),
        idle_in_class=sizes.astype(np.int64),
    )
    depth = max(len(policy.levels), len(policy.quantiles)) + 1
    trees = Trees(
        queue=_fenwick((depth,), n),
        gain=_fenwick((depth, n_classes), n),
        fast=_fenwick((depth, n_classes), n),
        queued=np.zeros(depth, dtype=np.int64),
        tasks=np.zeros(depth, dtype=np.int64),
    )
    ints = np.zeros(N_INTS, dtype=np.int64)
    ints[[I_SEQ, I_UNFINISHED, I_HEAP]] = n  # every arrival pushed, numbered 1..n
    ints[I_IDLE] = n_gpus
    ints[I_MAPPING_B] = policy.mapping == "B"
    ints[I_HISTORY] = policy._history is not None
    ints[I_LOGGING] = logging
    ints[I_LEVELS] = len(policy.levels)
    # the most revisits the loop can push between two returns: a re-keying of every job, a
    # heap of events, every due job and every GPU's job
    ints[I_MARGIN] = 4 * n + 2 * n_gpus
    floats = np.zeros(N_FLOATS)
    floats[F_STARVATION] = policy.starvation
    levels = np.zeros(depth)
    levels[: len(policy.levels)] = policy.levels
    heap = 2 * n + n_gpus + 1
    heap_t, heap_seq = np.zeros(heap), np.zeros(heap, dtype=np.int64)
    heap_kind, heap_what = np.zeros(heap, dtype=np.int64), np.zeros(heap, dtype=np.int64)
    # the arrivals in (time, number) order: a sorted array is a heap
    heap_t[:n], heap_seq[:n] = arrival[queue_job], queue_job + 1
    heap_kind[:n], heap_what[:n] = _ARRIVE, queue_job
    log = max(LOG_ENTRIES, 2 * n_gpus + 1) if logging else 1
    revisits = int(ints[I_MARGIN]) + REVISIT_SLACK
    loop = Loop(
        i=ints,
        f=floats,
        levels=levels,
        heap_t=heap_t,
        heap_seq=heap_seq,
        heap_kind=heap_kind,
        heap_what=heap_what,
        rev_t=np.zeros(revisits),
        rev_job=np.zeros(revisits, dtype=np.int64),
        dec_job=np.zeros(n_gpus, dtype=np.int64),
        dec_gpu=np.zeros(n_gpus, dtype=np.int64),
        touched=np.zeros(n_gpus, dtype=np.int64),
        due=np.zeros(n, dtype=np.int64),
        cursor=np.zeros(n_classes, dtype=np.int64),
        keys=np.zeros(n_classes),
        group=np.zeros(n_classes, dtype=np.int64),
        pos=np.zeros(n_classes, dtype=np.int64),
        log_kind=np.zeros(log, dtype=np.int64),
        log_int=np.zeros((log, 4), dtype=np.int64),
        log_float=np.zeros((log, 2)),
        history=np.zeros(n),
    )
    return jobs, states, gpus, trees, loop


def _replay(
    loop: Any,
    on_task: list[Any],
    on_held: list[Any],
    on_done: list[Any],
    reporter: ProgressObserver | None,
) -> None:
    """Give the observers the hook calls in the buffer, in order, and the progress line its
    counts; empty the buffer."""
    k = int(loop.i[I_LOG])
    loop.i[I_LOG] = 0
    if reporter is not None and k:
        kinds = loop.log_kind[:k]
        starts = np.flatnonzero(kinds == _ON_TASK)
        reporter.advance(
            len(starts),
            int(np.count_nonzero(kinds == _ON_DONE)),
            float(loop.log_float[starts[-1], 0]) if len(starts) else float(loop.f[F_NOW]),
        )
    if not (on_task or on_held or on_done):
        return
    for kind, (a, b, c, d), (x, y) in zip(
        loop.log_kind[:k].tolist(),
        loop.log_int[:k].tolist(),
        loop.log_float[:k].tolist(),
        strict=True,
    ):
        if kind == _ON_TASK:
            for hook in on_task:
                hook(a, b, c, d, x, y)
        elif kind == _ON_HELD:
            for hook in on_held:
                hook(a, x, y)
        else:
            for hook in on_done:
                hook(a, x)


_loaded: list[bool] = []


def _load(progress: bool) -> float:
    """Load the compiled loop (from numba's cache, about 0.4 s, or compile it: about 10 s
    the first time) with a one-job run, so that a run's time is its own, as a solver's
    import is not a solve's; the seconds it took."""
    started = time.perf_counter()
    if not _loaded:
        if progress:
            print(
                "loading the compiled hlas engine (compiling it the first time: about 10 s)",
                file=sys.stderr,
                flush=True,
            )
        one = Instance("load", (Job("j", 0.0, 1.0, 1, 1, compute={"A": 1.0}),), (GPU("g", "A"),))
        # what _prepare reads of a policy: HLAS's defaults
        policy = SimpleNamespace(
            levels=(), quantiles=(0.5, 0.8), _history=None, mapping="B", starvation=0.5
        )
        _run(*_prepare(one, one, cast("HLAS", policy), logging=False))
        _loaded.append(True)
    return time.perf_counter() - started


def simulate_hlas(
    profiled: Instance,
    real: Instance,
    policy: HLAS,
    *,
    record: bool,
    progress: bool,
    observers: Sequence[Observer],
) -> Simulation:
    """Run ``policy`` (calibrated) on ``real``, deciding on ``profiled``: the simulation
    the Python engine makes (:class:`~optsched.online.engine.Engine`), with the same
    observers' calls (the schedule with ``record``, progress with ``progress``)."""
    startup = _load(progress)
    started = time.perf_counter()
    recorder = ScheduleRecorder(real) if record else None
    everyone = [*([recorder] if recorder else []), *observers]
    on_task, on_held, on_done = (
        implementing(everyone, hook) for hook in ("on_task", "on_held", "on_job_done")
    )
    # the progress line is told in bulk, from the buffer's counts
    reporter = ProgressObserver(real) if progress else None
    logging = bool(on_task or on_held or on_done or reporter)
    jobs, states, gpus, trees, loop = _prepare(profiled, real, policy, logging)
    history = policy._history
    fed = 0  # finished sizes given to the policy's history
    while True:
        status = _run(jobs, states, gpus, trees, loop)
        if logging:
            _replay(loop, on_task, on_held, on_done, reporter)
        if status == DONE:
            break
        if len(loop.rev_t) - loop.i[I_REVISITS] < loop.i[I_MARGIN]:  # room for what follows
            loop = loop._replace(
                rev_t=np.concatenate([loop.rev_t, np.zeros_like(loop.rev_t)]),
                rev_job=np.concatenate([loop.rev_job, np.zeros_like(loop.rev_job)]),
            )
        if status == LEVELS:
            assert history is not None
            finished = int(loop.i[I_FINISHED])
            new = None
            for size in loop.history[fed:finished].tolist():
                new = history.add(size, policy.levels)
            fed = finished
            if new is not None:
                policy.levels = new
                loop.levels[: len(new)] = new
                loop.i[I_LEVELS] = len(new)
                loop.i[I_REKEY] = 1
    if history is not None:
        history.sizes.extend(loop.history[fed : int(loop.i[I_FINISHED])].tolist())
    promoted = np.flatnonzero(states.promoted)
    policy._entered = dict(zip(promoted.tolist(), states.entered[promoted].tolist(), strict=True))
    runtime = time.perf_counter() - started
    unfinished = int(loop.i[I_UNFINISHED])
    if unfinished:
        raise PolicyError(
            f"policy {policy.name!r} left {unfinished} jobs unfinished with nothing left to "
            "wait for"
        )
    m = MetricsObserver(real)
    f = loop.f
    m.objective, m.weighted_jct = float(f[F_OBJECTIVE]), float(f[F_WEIGHTED_JCT])
    m.jct_sum, m.makespan = float(f[F_JCT_SUM]), float(f[F_MAKESPAN])
    m.done, m.busy, m.completion = int(loop.i[I_DONE]), gpus.busy, states.completion
    return Simulation(
        real,
        recorder.schedule() if recorder else None,
        m.objective,
        m.metrics(fairness=recorder is None),
        m.completion,
        int(loop.i[I_EVENTS]),
        int(loop.i[I_DECISIONS]),
        runtime,
        "compiled",
        startup,
    )
