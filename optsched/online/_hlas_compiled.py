"""HLAS in relaxed mode as one compiled event loop: the Python engine's schedules, task by
task, at a fraction of its cost on large traces. The loop is C (``_hlas_kernel.c``, shipped
with the package), compiled on first use with the machine's C compiler (``$CC``, else
``cc``, ``gcc`` or ``clang``) into a cache (``$XDG_CACHE_HOME/optsched``, else
``~/.cache/optsched``) and called through ctypes: no Python API, no build step at install.
:func:`~optsched.online.simulator.run_simulation` uses it with ``engine="compiled"``, or with
``engine="auto"`` (the default) from :data:`~optsched.online.simulator.COMPILED_FROM_TASKS`
tasks when a C compiler is there and the run is one it covers
(:meth:`~optsched.online.hlas.HLAS.compiled_engine`).

What it covers: :class:`~optsched.online.hlas.HLAS` itself (not a subclass) with
``form=queues`` and mapping A or B, in relaxed mode, decisions at every instant (no tick),
with or without noise and switch cost, any observers.

How it stays identical to the Python engine (:mod:`optsched.online.engine`,
:mod:`optsched.online.simulator`, :mod:`optsched.online.hlas`): it replays it step by step.
The events in (time, sequence number) order, numbered as the engine numbers its pushes (the
arrivals, numbered first, read in order; the others in a heap); every event of an instant,
then one decision; the same priority keys, revisit times, tie-breaks, and floating-point
expressions evaluated in the same order (compiled without fused multiply-adds). The sorted
lists the Python queue keeps (the waiting jobs per level; per level and speed class, the jobs
by speed-up and by time; the idle GPUs per class) are sets of ranks fixed before the run,
hierarchical bit sets (a bit per job, and a bit per word above): a job's place in each order
never changes while it waits, only whether it is there.

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

import ctypes
import time
from collections import namedtuple
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from optsched.ckernel import CFLAGS as _CFLAGS
from optsched.ckernel import Kernel, bind, load
from optsched.instance import Instance
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

# why the loop returned (FULL: a push into a full revisit heap, never)
DONE, LEVELS, FLUSH, GROW, FULL = 0, 1, 2, 3, -1
# observer hook calls in the replay buffer
_ON_TASK, _ON_HELD, _ON_DONE = 0, 1, 2
# the loop's integer scalars (``Loop.ints``) ...
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
    I_ARRIVED,
    N_INTS,
) = range(20)
# ... and its float scalars (``Loop.floats``)
F_NOW, F_STARVATION, F_OBJECTIVE, F_WEIGHTED_JCT, F_JCT_SUM, F_MAKESPAN, N_FLOATS = range(7)

#: The jobs: what the policy reads (profiled), what execution uses (realised), fixed ranks.
Jobs = namedtuple(
    "Jobs",
    "arrival weight tasks rounds fastest profiled class_column compute sync "
    "queue_rank queue_job gain_rank gain_job fast_rank fast_job",
)
#: Each job's state, updated in place. ``left`` holds the tasks left in the current
#: decision where ``left_stamp`` equals the decision's stamp; a stamp also marks a job once
#: in a pass over the due revisits or the jobs a decision touched.
States = namedtuple(
    "States",
    "waiting started rounds_done last_start entered promoted round_ready active "
    "in_queue level counted left left_stamp completion",
)
#: The GPUs: speed class, realised profile class, place in its class, the idle ones per
#: class (sets of places), what each runs, busy time.
Gpus = namedtuple(
    "Gpus", "speed_class profile_class position members idle on_gpu taken busy idle_in_class"
)
#: Sets of ranks (:func:`_sets`): the waiting jobs per level by queue order, per (level,
#: speed class) by speed-up and by time; the jobs and their waiting tasks per level.
Sets = namedtuple("Sets", "queue gain fast queued level_tasks")
#: Scalars, thresholds, the heaps, scratch buffers, the replay buffer, finished sizes.
Loop = namedtuple(
    "Loop",
    "ints floats levels heap_t heap_seq heap_kind heap_what rev_t rev_job "
    "dec_job dec_gpu touched due cursor keys group pos "
    "log_kind log_int log_float history",
)


# -- the driver ------------------------------------------------------------------------------


def _level_words(size: int) -> list[int]:
    """The 64-bit words of each level of a set of ``size`` ranks in the kernel: a bit per
    rank, then a bit per word of the level below, up to a level of one word."""
    levels, words = [], -(-size // 64)
    while words:
        levels.append(words)
        if words == 1:
            break
        words = -(-words // 64)
    return levels


def _sets(shape: tuple[int, ...], size: int, members: np.ndarray | int = 0) -> np.ndarray:
    """Sets of ``size`` ranks (``shape`` of them) holding ranks 0 … members - 1 (one count
    for every set, or one per set)."""
    levels = _level_words(size)
    sets = np.zeros((*shape, sum(levels)), dtype=np.uint64)
    counts = np.broadcast_to(np.asarray(members), shape)
    for index in np.ndindex(*shape):
        row, present, offset = sets[index], int(counts[index]), 0
        for words in levels:  # a prefix of ranks sets a prefix of the words of each level
            full, rest = divmod(present, 64)
            row[offset : offset + full] = np.iinfo(np.uint64).max
            if rest:
                row[offset + full] = (1 << rest) - 1
            offset, present = offset + words, -(-present // 64)
    return sets


def _prepare(profiled: Instance, real: Instance, policy: HLAS, logging: bool) -> tuple[Any, ...]:
    n, n_gpus = real.n_jobs, real.n_gpus
    class_of, n_classes = speed_classes(real)
    first_of_class = [class_of.index(c) for c in range(n_classes)]
    class_column = np.asarray(profiled.gpu_class[first_of_class], dtype=np.int32)
    by_class = profiled.class_compute[:, class_column]  # the policy's times per speed class
    eligible = np.isfinite(by_class)
    fastest = by_class.min(axis=1)
    slowest = np.where(eligible, by_class, -np.inf).max(axis=1)
    arrival = np.array([job.arrival for job in profiled.jobs], dtype=float)
    index = np.arange(n)
    queue_job = np.lexsort((index, arrival))
    queue_rank = np.empty(n, dtype=np.int32)
    queue_rank[queue_job] = index
    gain_rank = np.full((n_classes, n), -1, dtype=np.int32)
    gain_job = np.full((n_classes, n), -1, dtype=np.int32)
    fast_rank = np.full((n_classes, n), -1, dtype=np.int32)
    fast_job = np.full((n_classes, n), -1, dtype=np.int32)
    for c in range(n_classes):
        idx = np.flatnonzero(eligible[:, c])
        t = by_class[idx, c]
        # the speed-up order (-(slowest / t), then queue order) and the time order
        by_gain = idx[np.lexsort((idx, arrival[idx], -(slowest[idx] / t)))]
        gain_job[c, : len(idx)] = by_gain
        gain_rank[c, by_gain] = np.arange(len(idx))
        by_time = np.lexsort((idx, t))
        fast_rank[c, idx[by_time]] = np.arange(len(idx))
        fast_job[c, : len(idx)] = idx[by_time]
    jobs = Jobs(
        arrival=arrival,
        weight=np.array([job.weight for job in profiled.jobs], dtype=float),
        tasks=np.array([job.tasks_per_round for job in profiled.jobs], dtype=np.int32),
        rounds=np.array([job.rounds for job in real.jobs], dtype=np.int32),
        fastest=fastest,
        profiled=np.ascontiguousarray(profiled.class_compute, dtype=float),
        class_column=class_column,
        compute=np.ascontiguousarray(real.class_compute, dtype=float),
        sync=np.ascontiguousarray(real.class_sync, dtype=float),
        queue_rank=queue_rank,
        queue_job=queue_job.astype(np.int32),
        gain_rank=gain_rank,
        gain_job=gain_job,
        fast_rank=fast_rank,
        fast_job=fast_job,
    )

    def zeros(dtype: Any) -> np.ndarray:
        return np.zeros(n, dtype=dtype)

    states = States(
        waiting=zeros(np.int32),
        started=zeros(np.int32),
        rounds_done=zeros(np.int32),
        last_start=zeros(float),
        entered=zeros(float),
        promoted=zeros(np.bool_),
        round_ready=arrival.copy(),
        active=zeros(np.bool_),
        in_queue=zeros(np.bool_),
        level=zeros(np.int32),
        counted=zeros(np.int32),
        left=zeros(np.int32),
        left_stamp=zeros(np.int64),
        completion=np.full(n, np.nan),
    )
    speed_class = np.array(class_of, dtype=np.int32)
    sizes = np.bincount(speed_class, minlength=n_classes)
    widest = int(sizes.max())
    members = np.full((n_classes, widest), -1, dtype=np.int32)
    position = np.empty(n_gpus, dtype=np.int32)
    for c in range(n_classes):
        of_c = np.flatnonzero(speed_class == c)
        members[c, : len(of_c)] = of_c
        position[of_c] = np.arange(len(of_c))
    gpus = Gpus(
        speed_class=speed_class,
        profile_class=np.asarray(real.gpu_class, dtype=np.int32),
        position=position,
        members=members,
        idle=_sets((n_classes,), widest, sizes),  # every GPU idle
        on_gpu=np.full(n_gpus, -1, dtype=np.int32),
        taken=np.zeros(n_gpus, dtype=np.int64),
        busy=np.zeros(n_gpus),
        idle_in_class=sizes.astype(np.int64),
    )
    depth = max(len(policy.levels), len(policy.quantiles)) + 1
    sets = Sets(
        queue=_sets((depth,), n),
        gain=_sets((depth, n_classes), n),
        fast=_sets((depth, n_classes), n),
        queued=np.zeros(depth, dtype=np.int64),
        level_tasks=np.zeros(depth, dtype=np.int64),
    )
    ints = np.zeros(N_INTS, dtype=np.int64)
    ints[[I_SEQ, I_UNFINISHED]] = n  # the arrivals, numbered 1..n in queue order
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
    heap = n + n_gpus + 1  # the other events: a job's round and a GPU's task at most
    heap_t, heap_seq = np.zeros(heap), np.zeros(heap, dtype=np.int64)
    heap_kind, heap_what = np.zeros(heap, dtype=np.int32), np.zeros(heap, dtype=np.int32)
    log = max(LOG_ENTRIES, 2 * n_gpus + 1) if logging else 1
    revisits = int(ints[I_MARGIN]) + REVISIT_SLACK
    loop = Loop(
        ints=ints,
        floats=floats,
        levels=levels,
        heap_t=heap_t,
        heap_seq=heap_seq,
        heap_kind=heap_kind,
        heap_what=heap_what,
        rev_t=np.zeros(revisits),
        rev_job=np.zeros(revisits, dtype=np.int32),
        dec_job=np.zeros(n_gpus, dtype=np.int32),
        dec_gpu=np.zeros(n_gpus, dtype=np.int32),
        touched=np.zeros(n_gpus, dtype=np.int32),
        due=np.zeros(n, dtype=np.int32),
        cursor=np.zeros(n_classes, dtype=np.int64),
        keys=np.zeros(n_classes),
        group=np.zeros(n_classes, dtype=np.int64),
        pos=np.zeros(n_classes, dtype=np.int64),
        log_kind=np.zeros(log, dtype=np.int64),
        log_int=np.zeros((log, 4), dtype=np.int64),
        log_float=np.zeros((log, 2)),
        history=np.zeros(n if policy._history is not None else 1),
    )
    return jobs, states, gpus, sets, loop


def _replay(
    loop: Any,
    on_task: list[Any],
    on_held: list[Any],
    on_done: list[Any],
    reporter: ProgressObserver | None,
) -> None:
    """Give the observers the hook calls in the buffer, in order, and the progress line its
    counts; empty the buffer."""
    k = int(loop.ints[I_LOG])
    loop.ints[I_LOG] = 0
    if reporter is not None and k:
        kinds = loop.log_kind[:k]
        starts = np.flatnonzero(kinds == _ON_TASK)
        reporter.advance(
            len(starts),
            int(np.count_nonzero(kinds == _ON_DONE)),
            float(loop.log_float[starts[-1], 0]) if len(starts) else float(loop.floats[F_NOW]),
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


# -- compiling and loading the loop ----------------------------------------------------------

#: The C compiler's flags (:data:`optsched.ckernel.CFLAGS`).
CFLAGS = _CFLAGS

_kernel: list[Kernel] = []  # the one loaded in this process
_unreported: list[float] = []  # the seconds loading it took, until a run has reported them


def kernel() -> Kernel:
    """The compiled loop (``_hlas_kernel.c``), compiled on first use into the cache and
    loaded once per process (:func:`optsched.ckernel.load`).

    Raises
    ------
    ImportError
        No C compiler (``$CC``, ``cc``, ``gcc``, ``clang``), compiling failed (with the
        compiler's message), or the library does not load.
    """
    if not _kernel:
        started = time.perf_counter()
        _kernel.append(load(Path(__file__).with_name("_hlas_kernel.c"), "hlas", CFLAGS))
        _unreported.append(time.perf_counter() - started)
    return _kernel[0]


def _bind(kernel: Kernel, *parts: Any) -> ctypes.Structure:
    """The kernel's state: a pointer to each of its arrays, found by name in ``parts`` (the
    namedtuples of :func:`_prepare`) and checked for type and layout, and their sizes."""
    arrays = {name: array for part in parts for name, array in part._asdict().items()}
    jobs, _, gpus, sets, loop = parts
    sizes = {
        "n_jobs": len(jobs.arrival),
        "n_gpus": len(gpus.speed_class),
        "n_classes": len(jobs.class_column),
        "n_profiles": jobs.compute.shape[1],
        "depth": len(sets.queued),
        "widest": gpus.members.shape[1],
        "job_words": sets.queue.shape[-1],
        "gpu_words": gpus.idle.shape[-1],
        "rev_room": len(loop.rev_t),
        "log_room": len(loop.log_kind),
    }
    return bind(kernel, arrays, sizes)


def _load() -> float:
    """The seconds loading the compiled loop took (compiling it the first time: about a
    second), for the first run after the load (a later run's is its lookup's), so that a
    run's time is its own, as a solver's import is not a solve's."""
    started = time.perf_counter()
    kernel()
    return _unreported.pop() if _unreported else time.perf_counter() - started


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
    startup = _load()
    started = time.perf_counter()
    recorder = ScheduleRecorder(real) if record else None
    everyone = [*([recorder] if recorder else []), *observers]
    # the loop's arrays are gone before the metrics are computed: their peaks do not add up
    m, events, decisions, unfinished = _simulate(profiled, real, policy, everyone, progress)
    runtime = time.perf_counter() - started
    if unfinished:
        raise PolicyError(
            f"policy {policy.name!r} left {unfinished} jobs unfinished with nothing left to "
            "wait for"
        )
    return Simulation(
        real,
        recorder.schedule() if recorder else None,
        m.objective,
        m.metrics(fairness=recorder is None),
        m.completion,
        events,
        decisions,
        runtime,
        "compiled",
        startup,
    )


def _simulate(
    profiled: Instance,
    real: Instance,
    policy: HLAS,
    observers: list[Observer],
    progress: bool,
) -> tuple[MetricsObserver, int, int, int]:
    """The run of :func:`simulate_hlas`: its metrics' sums, events, decisions and
    unfinished jobs."""
    on_task, on_held, on_done = (
        implementing(observers, hook) for hook in ("on_task", "on_held", "on_job_done")
    )
    # the progress line is told in bulk, from the buffer's counts
    reporter = ProgressObserver(real) if progress else None
    logging = bool(on_task or on_held or on_done or reporter)
    compiled = kernel()
    jobs, states, gpus, sets, loop = _prepare(profiled, real, policy, logging)
    state = _bind(compiled, jobs, states, gpus, sets, loop)
    history = policy._history
    fed = 0  # finished sizes given to the policy's history
    while True:
        status = compiled.run(ctypes.byref(state))
        if status == FULL:
            raise RuntimeError("the compiled hlas: a push into a full revisit heap (a bug)")
        if logging:
            _replay(loop, on_task, on_held, on_done, reporter)
        if status == DONE:
            break
        if len(loop.rev_t) - loop.ints[I_REVISITS] < loop.ints[I_MARGIN]:  # room for what follows
            loop = loop._replace(
                rev_t=np.concatenate([loop.rev_t, np.zeros_like(loop.rev_t)]),
                rev_job=np.concatenate([loop.rev_job, np.zeros_like(loop.rev_job)]),
            )
            state = _bind(compiled, jobs, states, gpus, sets, loop)
        if status == LEVELS:
            assert history is not None
            finished = int(loop.ints[I_FINISHED])
            new = None
            for size in loop.history[fed:finished].tolist():
                new = history.add(size, policy.levels)
            fed = finished
            if new is not None:
                policy.levels = new
                loop.levels[: len(new)] = new
                loop.ints[I_LEVELS] = len(new)
                loop.ints[I_REKEY] = 1
    if history is not None:
        history.sizes.extend(loop.history[fed : int(loop.ints[I_FINISHED])].tolist())
    promoted = np.flatnonzero(states.promoted)
    policy._entered = dict(zip(promoted.tolist(), states.entered[promoted].tolist(), strict=True))
    m = MetricsObserver(real)
    ints, f = loop.ints, loop.floats
    m.objective, m.weighted_jct = float(f[F_OBJECTIVE]), float(f[F_WEIGHTED_JCT])
    m.jct_sum, m.makespan = float(f[F_JCT_SUM]), float(f[F_MAKESPAN])
    m.done, m.busy, m.completion = int(ints[I_DONE]), gpus.busy, states.completion
    return m, int(ints[I_EVENTS]), int(ints[I_DECISIONS]), int(ints[I_UNFINISHED])
