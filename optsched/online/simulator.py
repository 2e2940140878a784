"""The basic execution model of online scheduling policies, in both modes, and
:func:`run_simulation`, the entry point of every online simulation.

This model owns the state (which GPUs are busy, how far every job is) on the shared event
engine (:mod:`optsched.online.engine`, which also feeds the observers: metrics, the schedule,
progress); a *policy* decides which tasks start where. A policy whose ``execution`` is
``"cluster"`` runs under :mod:`optsched.online.cluster` instead.

Events, processed in time order (all events of one instant before any decision): a job
arrives; a GPU becomes free; a round's results are ready (the job's next round is released,
or the job completes); optionally a periodic tick. After the events of an instant, the policy
is asked for decisions when some GPU is idle and some job has a task waiting — at every
instant (``event_driven=True``) or only at ticks (heartbeat scheduling, ``tick`` seconds).

Execution follows the model (docs/model.md) exactly, on the *realised* instance
(:func:`realise`: profiled times with optional noise and a task-switch cost folded into
compute), so the schedule the simulator emits is checked against that instance:

- relaxed: a decision (job, GPU) starts one waiting task of the job's current round on that
  idle GPU; the GPU is busy for compute; the task's result is ready after compute + sync;
  the next round is released when all results of the round are ready.
- gang: a decision (job, GPUs) starts the whole round on K distinct idle GPUs, held for the
  slowest compute + sync among them; the next round is released then.

**Cost per event.** The engine keeps the waiting jobs in a :class:`WaitingQueue` ordered by
the policy's ``priority`` (re-keyed only when a job's state changes) and the idle GPUs per
speed class and by age (:class:`IdleGPUs`), so the built-in policies decide without sorting
or scanning every waiting job or idle GPU: O(log n) per event where the policy allows it.
Their decisions are those of their plain definitions (tests/test_sim_regression.py).

**Non-clairvoyance is enforced by construction**: policies see :class:`JobState` objects,
which hold what a job has revealed (arrival, weight, tasks per round, profiled per-GPU times,
progress) and nothing about its remaining rounds; jobs appear only once they have arrived.
Clairvoyant policies (``clairvoyant = True``) also receive an :class:`Oracle`. A policy with a
``calibrate`` method receives, once before the run, the workload's :class:`SizeDistribution`:
each size list sorted on its own, so no size can be tied to a job (what an operator knows
from the cluster's history; Tiresias, NSDI'19 §4.2, sets its queue thresholds this way).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Callable, Iterable, Iterator, KeysView, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from optsched.errors import InputError
from optsched.instance import Instance, Job
from optsched.limits import MAX_START, MAX_VALUE
from optsched.online.cluster import ClusterPolicy, simulate_cluster
from optsched.online.engine import (
    MODEL_EVENTS,
    Decision,
    Engine,
    Observer,
    PolicyError,
    Simulation,
    declared,
    gpu_indices,
    index_of,
    unpack,
)
from optsched.options import MIN_PERIOD

_FREE, _READY = MODEL_EVENTS, MODEL_EVENTS + 1


@dataclass(eq=False)
class JobState:
    """What a policy may know about an arrived, unfinished job (updated in place).

    ``compute`` / ``sync`` are the job's *profiled* per-GPU times (∞ = ineligible);
    ``waiting`` counts the tasks of the current round not yet started (0 while the round
    runs or its results are pending); ``running`` the tasks computing now (relaxed mode);
    ``tasks_started`` the tasks started so far; ``attained`` the GPU-seconds they occupy
    (busy in relaxed mode, held in gang mode: K × the round's pace); ``first_start`` and
    ``last_start`` the moments its first and latest tasks started (NaN / its arrival before).
    Fixed summaries of the profile, for policies: ``by_class`` the compute time per GPU speed
    class (:attr:`IdleGPUs.by_class`), ``sync_by_class`` the sync time per class when it is
    the same on every GPU of a class (else None), ``fastest`` / ``slowest`` /
    ``mean_compute`` the smallest, largest and mean compute time over its eligible GPUs
    (``fastest`` and ``slowest`` computed from ``compute`` unless given: the engine gives
    them from the job's speed classes, the same values without a pass over every GPU).
    """

    index: int
    id: str
    arrival: float
    weight: float
    tasks_per_round: int
    compute: np.ndarray
    sync: np.ndarray
    rounds_done: int = 0
    waiting: int = 0
    running: int = 0
    tasks_started: int = 0
    attained: float = 0.0
    first_start: float = float("nan")
    last_start: float = 0.0
    by_class: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    sync_by_class: np.ndarray | None = field(default=None, repr=False)
    fastest: float = field(default=math.nan, repr=False)
    slowest: float = field(default=math.nan, repr=False)

    def __post_init__(self) -> None:
        if math.isnan(self.fastest):
            self.fastest = float(np.min(self.compute))
        if math.isnan(self.slowest):
            self.slowest = float(np.max(self.compute[np.isfinite(self.compute)]))

    @cached_property
    def mean_compute(self) -> float:
        return float(np.mean(self.compute[np.isfinite(self.compute)]))


class SizeDistribution:
    """How large the jobs of a workload are, each tuple sorted ascending on its own.

    ``reference``: per job, tasks × its fastest profiled compute time (reference-GPU
    seconds, the service HLAS measures); ``gpu_seconds``: per job, tasks × the mean over its
    eligible GPUs of compute + sync (GPU-seconds as a heterogeneity-oblivious policy such as
    Tiresias counts them).

    Made from the two lists, or from an instance (:func:`size_distribution`): then each
    list is computed when a policy first reads it, so a policy that never does (HLAS or
    Tiresias calibrated on their own history, the defaults) does not pay a pass over every
    job's profile (1.8 s on an 82,247-job trace on 2,000 GPUs).
    """

    def __init__(self, reference: Iterable[float], gpu_seconds: Iterable[float]) -> None:
        self._sizes = {"reference": tuple(reference), "gpu_seconds": tuple(gpu_seconds)}
        self._instance: Instance | None = None

    @classmethod
    def of(cls, instance: Instance) -> SizeDistribution:
        """The distribution of ``instance``'s profiled times, computed on first read."""
        sizes = cls((), ())
        sizes._instance = instance
        return sizes

    @property
    def reference(self) -> tuple[float, ...]:
        return self._read("reference")

    @property
    def gpu_seconds(self) -> tuple[float, ...]:
        return self._read("gpu_seconds")

    def _read(self, name: str) -> tuple[float, ...]:
        instance = self._instance
        if instance is not None:  # once: every job's sizes from its profile
            ref, held = [], []
            for j, job in enumerate(instance.jobs):
                compute, sync = instance.row(j)
                eligible = np.isfinite(compute)
                tasks = job.rounds * job.tasks_per_round
                ref.append(tasks * float(np.min(compute[eligible])))
                held.append(tasks * float(np.mean(compute[eligible] + sync[eligible])))
            self._sizes = {"reference": tuple(sorted(ref)), "gpu_seconds": tuple(sorted(held))}
            self._instance = None
        return self._sizes[name]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SizeDistribution):
            return NotImplemented
        return (self.reference, self.gpu_seconds) == (other.reference, other.gpu_seconds)

    __hash__ = None  # type: ignore[assignment]  # equal by value, filled in on first read

    def __repr__(self) -> str:
        return f"SizeDistribution(reference={self.reference}, gpu_seconds={self.gpu_seconds})"


def size_distribution(instance: Instance) -> SizeDistribution:
    """The :class:`SizeDistribution` of ``instance`` (profiled times), computed when a
    policy first reads it."""
    return SizeDistribution.of(instance)


class Oracle:
    """Hidden job sizes, for clairvoyant policies only."""

    def __init__(self, instance: Instance) -> None:
        self._rounds = [job.rounds for job in instance.jobs]
        self._rounds_array = np.array(self._rounds)

    def remaining_tasks(self, job: JobState) -> int:
        """Tasks of ``job`` not started yet (current round included)."""
        return int(
            self.remaining_tasks_at(job.index, job.waiting, job.rounds_done, job.tasks_per_round)
        )

    def rounds(self, job: JobState) -> int:
        return self._rounds[job.index]

    def rounds_of(self, index: np.ndarray) -> npt.NDArray[np.int64]:
        """:meth:`rounds` of many jobs at once, by their indices."""
        rounds: npt.NDArray[np.int64] = self._rounds_array[index]
        return rounds

    def remaining_tasks_of(
        self,
        index: np.ndarray,
        waiting: np.ndarray,
        rounds_done: np.ndarray,
        tasks_per_round: np.ndarray,
    ) -> npt.NDArray[np.int64]:
        """:meth:`remaining_tasks` of many jobs at once, from their state's columns."""
        rest = self._rounds_array[index] - rounds_done - 1
        remaining: npt.NDArray[np.int64] = waiting + np.maximum(0, rest) * tasks_per_round
        return remaining

    def remaining_tasks_at(
        self, j: int, waiting: float, rounds_done: float, tasks_per_round: float
    ) -> float:
        """:meth:`remaining_tasks_of` of one job, from its state's values: the same
        arithmetic on scalars (on integers, :meth:`remaining_tasks`)."""
        rest = self._rounds[j] - rounds_done - 1
        return waiting + max(0, rest) * tasks_per_round


class WaitingQueue:
    """The jobs with a task waiting, in the policy's priority order, kept incrementally.

    The engine keeps it: a job enters when a round is released (its key from the policy's
    ``priority``, else its arrival), is re-keyed whenever its state changes or its
    ``revisit`` time passes, and leaves when its last waiting task starts — O(log n)
    comparisons each, so a decision need not sort the waiting jobs. Iterating yields the
    :class:`JobState` objects, highest priority first; ``items()`` yields (key, job).
    ``put`` and ``drop`` are the engine's; a policy that needs more indexes over its queue
    (e.g. per GPU class) subclasses this and returns it from ``waiting_queue(states)``.
    """

    __slots__ = ("_entries", "_keys", "_states", "owner")

    def __init__(self, states: dict[int, JobState]) -> None:
        self._entries: list[tuple[Any, int]] = []  # (key, job index), sorted
        self._keys: dict[int, Any] = {}
        self._states = states
        self.owner: object = None  # the policy it is kept for (its priority, else arrival)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[JobState]:
        states = self._states
        return (states[j] for _, j in self._entries)

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return [self._states[j] for _, j in self._entries[i]]
        return self._states[self._entries[i][1]]

    def __contains__(self, job: object) -> bool:
        return isinstance(job, JobState) and job.index in self._keys

    def indices(self) -> KeysView[int]:
        """The waiting jobs' indices, in no particular order (a live view: O(1))."""
        return self._keys.keys()

    def items(self) -> Iterator[tuple[Any, JobState]]:
        """(key, job) pairs in priority order."""
        states = self._states
        return ((key, states[j]) for key, j in self._entries)

    def after(self, prefix: tuple[Any, ...]) -> Iterator[tuple[Any, JobState]]:
        """(key, job) pairs in priority order from the first key ≥ ``prefix`` (a tuple key's
        prefix: the jobs whose keys start with it come first)."""
        states, entries = self._states, self._entries
        for i in range(bisect.bisect_left(entries, (prefix,)), len(entries)):
            key, j = entries[i]
            yield key, states[j]

    def put(self, j: int, key: Any) -> None:
        """Queue job ``j`` (an index into the states) under ``key``, or move it there."""
        old = self._keys.get(j)
        if old is not None:
            if old == key:
                return
            del self._entries[bisect.bisect_left(self._entries, (old, j))]
        self._keys[j] = key
        bisect.insort(self._entries, (key, j))

    def drop(self, j: int) -> None:
        """Take job ``j`` out of the queue (its last waiting task started)."""
        old = self._keys.pop(j, None)
        if old is not None:
            del self._entries[bisect.bisect_left(self._entries, (old, j))]


def ordered(view: View, policy: Any) -> WaitingQueue:
    """``view.waiting`` ordered by ``policy``'s priority: the engine's queue when the engine
    keeps it for ``policy``, else (``policy`` called from another policy's ``decide``) one
    built now from every waiting job's priority."""
    if view.waiting.owner is policy:
        return view.waiting
    states = {job.index: job for job in view.waiting}
    make = getattr(policy, "waiting_queue", None)
    queue = make(states) if callable(make) else WaitingQueue(states)
    priority = getattr(policy, "priority", None)
    for job in states.values():
        queue.put(
            job.index,
            priority(job, view.time, view.oracle) if priority is not None else (job.arrival,),
        )
    queue.owner = policy
    return queue


class IdleGPUs:
    """The idle GPUs, kept incrementally: iterating yields them in index order; ``by_class``
    lists, per GPU speed class (the GPUs of one type: a job computes equally fast on all of
    them), its idle GPUs in index order; ``by_age`` holds (free since, GPU) pairs, the GPU
    free the longest first; ``class_of`` maps a GPU to its class."""

    __slots__ = ("_idle", "_mask", "_since", "by_age", "by_class", "class_of")

    def __init__(self, class_of: Sequence[int], n_classes: int) -> None:
        self.class_of = tuple(class_of)
        self.by_class: list[list[int]] = [[] for _ in range(n_classes)]
        self.by_age: list[tuple[float, int]] = []
        self._since = [0.0] * len(self.class_of)
        self._idle = [False] * len(self.class_of)
        self._mask = np.zeros(len(self.class_of), dtype=bool)

    def array(self) -> np.ndarray:
        """The idle GPUs in index order, as a numpy array."""
        return np.flatnonzero(self._mask)

    def __len__(self) -> int:
        return len(self.by_age)

    def __bool__(self) -> bool:
        return bool(self.by_age)

    def __contains__(self, g: object) -> bool:
        return (
            isinstance(g, (int, np.integer))
            and 0 <= int(g) < len(self._idle)
            and self._idle[int(g)]
        )

    def __iter__(self) -> Iterator[int]:
        return heapq.merge(*self.by_class)

    def __getitem__(self, i: int | slice) -> Any:
        """The i-th idle GPU in index order (a list for a slice): O(idle GPUs)."""
        return self.array().tolist()[i]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self.array() if dtype is None else self.array().astype(dtype)

    def _add(self, g: int, since: float) -> None:
        if not self._idle[g]:
            self._idle[g] = self._mask[g] = True
            self._since[g] = since
            bisect.insort(self.by_class[self.class_of[g]], g)
            bisect.insort(self.by_age, (since, g))

    def _remove(self, g: int) -> None:
        self._idle[g] = self._mask[g] = False
        pool = self.by_class[self.class_of[g]]
        del pool[bisect.bisect_left(pool, g)]
        del self.by_age[bisect.bisect_left(self.by_age, (self._since[g], g))]


class View:
    """The state a policy decides on: ``time``; the idle GPUs (:class:`IdleGPUs`) and when
    each GPU last became free (``free_since``); the ``waiting`` jobs (some task startable
    now; a :class:`WaitingQueue` in the policy's priority order, or by arrival); ``active``,
    all arrived unfinished jobs (arrival order); the GPUs' ids and types; ``mode``;
    ``oracle`` only for clairvoyant policies.

    ``idle`` and ``waiting`` are the engine's own, kept between decisions: read-only, valid
    during one ``decide`` (copy with ``list(...)`` to keep them). Both support ``len``,
    ``in``, iteration (GPUs by index; jobs in queue order) and indexing, integers or slices
    (``idle``'s in O(idle GPUs)); ``np.asarray(view.idle)`` gives the idle GPUs' indices."""

    __slots__ = (
        "_active",
        "free_since",
        "gpu_ids",
        "gpu_types",
        "idle",
        "mode",
        "oracle",
        "time",
        "waiting",
    )

    def __init__(
        self,
        time: float,
        idle: IdleGPUs,
        free_since: np.ndarray,
        waiting: WaitingQueue,
        active: dict[int, JobState],
        gpu_ids: tuple[str, ...],
        gpu_types: tuple[str, ...],
        mode: str = "relaxed",
        oracle: Oracle | None = None,
    ) -> None:
        self.time, self.idle, self.free_since, self.waiting = time, idle, free_since, waiting
        self._active = active
        self.gpu_ids, self.gpu_types, self.mode, self.oracle = gpu_ids, gpu_types, mode, oracle

    @property
    def active(self) -> list[JobState]:
        return list(self._active.values())

    @property
    def active_ids(self) -> KeysView[int]:
        """The indices of the active jobs, a live read-only set (no copy: O(1))."""
        return self._active.keys()


class Policy(Protocol):
    """An online policy: ``decide(view)`` returns (or yields) the tasks to start now, as
    :class:`~optsched.online.engine.Start` decisions or plain ``(job, where)`` tuples.

    ``execution`` (optional, default ``"basic"``) names the execution model the policy is
    written for: ``"basic"`` (this module: ``view`` is a :class:`View`; ``clairvoyant``,
    default False, and ``modes``, default both, are read) or ``"cluster"``
    (:mod:`optsched.online.cluster`: ``view`` is a
    :class:`~optsched.online.cluster.ClusterView`, the policy's ``tick`` and
    ``event_driven`` set its heartbeat). The rest of this docstring is the basic model's.

    A decision applies as it is yielded (the job's ``waiting`` count falls at once); the
    view's ``waiting`` and ``idle`` keep this instant's state until ``decide`` returns.

    Optional, for speed (the built-in policies use them):

    - ``priority(job, now, oracle)`` returns the job's key in ``view.waiting``: a tuple,
      smaller first, ties broken by the job index, never NaN. It may depend on the job's
      state and on the policy's own state; the engine evaluates it when the job starts
      waiting and whenever its state changes (a task starts or finishes computing), not at
      every decision, so a key that changes with time alone needs
    - ``revisit(job, now)``: the next time after ``now`` at which the key may change with
      no change of the job's state (``math.inf``: never; ``math.nextafter(now, math.inf)``:
      at every decision). The engine re-evaluates the key at the first decision at or after
      it (starvation promotion uses this).
    - ``waiting_queue(states)`` returns the :class:`WaitingQueue` (or a subclass keeping
      more indexes, overriding ``put`` and ``drop``) the engine keeps the waiting jobs in.
    - ``finished(job, now)``: a job finished (its last round is ready), so its size is
      known now; True when the keys of the other jobs may have changed (e.g. queue
      thresholds derived from the finished jobs' sizes), and the engine then re-keys every
      waiting job.

    - ``validate(instance)``: refuse (InputError naming the problem) an instance the policy
      cannot run on; :func:`optsched.simulate` calls it before the run.
    - ``report()``: a JSON-ready dict of what the policy did (e.g. its solves), which
      :func:`optsched.simulate` puts in the result's ``extra["policy"]`` after the run.
    - ``compiled_engine(mode, tick, event_driven)``: a function that makes this policy's
      run without the event engine, with the same result (:func:`run_simulation`'s
      ``engine``; HLAS has one), or an InputError saying why not.

    A policy without ``priority`` sees the waiting jobs by arrival. ``calibrate(sizes)``
    receives the workload's :class:`SizeDistribution` once before the run (a policy that
    wraps another passes it on). A built-in policy's ``decide`` may be called from another
    policy's with the engine's view; it then orders the waiting jobs itself (:func:`ordered`).
    """

    name: str
    clairvoyant: bool
    modes: frozenset[str]

    def decide(self, view: View) -> Iterable[Decision]: ...


def realise(
    instance: Instance, *, noise: float = 0.0, switch_cost: float = 0.0, seed: int = 0
) -> Instance:
    """The instance the simulator executes (docs/model.md, *The realised instance*).

    Each (job, GPU type) compute time is multiplied once by U[1 − noise, 1 + noise] (seeded)
    and by 1 + ``switch_cost`` (a task-switch cost as a fraction of the task, folded into
    compute; Hare measures under 5 %). Syncs are unchanged. Without noise or
    switch cost, the instance itself.
    """
    if not 0 <= noise < 1:
        raise InputError(f"noise (--noise) must be in [0, 1), got {noise!r}")
    if not 0 <= switch_cost <= 1:
        raise InputError(
            f"switch_cost (--switch-cost) must be in [0, 1] (a fraction of the "
            f"task), got {switch_cost!r}"
        )
    if noise == 0 and switch_cost == 0:
        return instance
    rng = np.random.default_rng(seed)
    types = sorted({g.type for g in instance.gpus})
    jobs = []
    for j, job in enumerate(instance.jobs):
        factor = rng.uniform(1 - noise, 1 + noise, size=len(types)) * (1 + switch_cost)
        eligible = instance.eligible(j)
        compute, sync = instance.row(j)
        per_type = {instance.gpus[g].type: float(compute[g]) for g in eligible}
        if max(per_type.values()) * (1 + noise) * (1 + switch_cost) > MAX_VALUE:
            raise InputError(
                f"job {job.id!r}: --noise {noise:g} and --switch-cost "
                f"{switch_cost:g} make its compute time exceed {MAX_VALUE:g} s"
            )
        jobs.append(
            Job(
                id=job.id,
                arrival=job.arrival,
                weight=job.weight,
                rounds=job.rounds,
                tasks_per_round=job.tasks_per_round,
                meta=job.meta,
                compute={
                    t: per_type[t] * float(f)
                    for t, f in zip(types, factor, strict=True)
                    if t in per_type
                },
                sync=job.sync,
                sync_by_gpu=None
                if job.sync_bytes is None and job.sync_by_gpu is None
                else {instance.gpus[g].id: float(sync[g]) for g in eligible},
            )
        )
    return Instance(instance.name, tuple(jobs), instance.gpus, mode=instance.mode)


def run_simulation(
    instance: Instance,
    policy: Policy | ClusterPolicy,
    *,
    seed: int = 0,
    noise: float = 0.0,
    switch_cost: float = 0.0,
    tick: float | None = None,
    event_driven: bool = True,
    record: bool = True,
    progress: bool = False,
    observers: Sequence[Observer] = (),
    engine: str = "auto",
) -> Simulation:
    """Run ``policy`` online on ``instance`` (in the instance's mode), with its execution
    model: the basic one here, the cluster one (:mod:`optsched.online.cluster`) for a policy
    whose ``execution`` is ``"cluster"``.

    ``engine`` (:data:`ENGINES`) chooses how the basic model runs: ``python``, the event
    engine; ``compiled``, HLAS as one compiled loop (:mod:`optsched.online._hlas_compiled`:
    the same schedule task by task, needs a C compiler; an InputError says why a run cannot
    take it); ``auto`` (default), the compiled loop where it applies, a C compiler is there
    and the instance has at least :data:`COMPILED_FROM_TASKS` tasks, else the event
    engine.

    Policies decide on profiled times (``instance``); execution uses :func:`realise` with
    ``noise``/``switch_cost``/``seed`` (basic model; a cluster policy draws its random
    choices from ``seed`` and has its own heartbeat). ``record`` keeps the schedule (needed
    to check it; skip it for very large traces), ``progress`` prints progress to stderr,
    ``observers`` receive every event (:class:`~optsched.online.engine.Observer`).

    Raises
    ------
    InputError
        A policy that does not support the instance's mode; a bad noise, switch cost or tick
        (in [:data:`~optsched.options.MIN_PERIOD`, MAX_VALUE] s); heartbeat ticks that delay a
        task start past MAX_START; noise, switch cost or tick for a cluster policy; an
        unknown engine, or ``engine="compiled"`` for a run it does not cover.
    PolicyError
        An impossible decision, or a policy that leaves waiting work with nothing left to
        happen.
    """
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if execution_model(policy) == "cluster":
        if engine == "compiled":
            raise InputError(
                f"the compiled engine (--engine compiled): cluster policy {policy.name!r} has "
                "no compiled engine"
            )
        if noise or switch_cost or tick is not None or not event_driven:
            raise InputError(
                f"cluster policy {policy.name!r} takes no noise, switch cost, "
                "tick or heartbeat option; its heartbeat and batch interval are "
                "its params (--param)"
            )
        return simulate_cluster(
            instance,
            cast(ClusterPolicy, policy),
            seed=seed,
            record=record,
            progress=progress,
            observers=observers,
        )
    policy = cast(Policy, policy)
    if instance.needs_cluster_model:
        raise InputError(
            f"policy {policy.name!r} does not model phases, GPU sharing, space sharing or "
            "placement factors (instance@2); use a cluster policy: "
            + (
                "fifo-packed or max-min-fairness-packed (space sharing)"
                if instance.cluster.space_sharing
                else "liquid or integral-allocation"
            )
        )
    if instance.mode not in declared(policy, "modes"):
        raise InputError(f"policy {policy.name!r} does not support mode {instance.mode!r}")
    if tick is not None and not MIN_PERIOD <= tick <= MAX_VALUE:
        raise InputError(
            f"tick (--tick) must be in [{MIN_PERIOD:g}, {MAX_VALUE:g}] s, got {tick!r}"
        )
    if not event_driven and tick is None:
        raise InputError("scheduling only at ticks needs a tick period")
    real = realise(instance, noise=noise, switch_cost=switch_cost, seed=seed)
    compiled = _compiled(policy, instance, tick, event_driven, engine)
    calibrate = getattr(policy, "calibrate", None)
    if callable(calibrate):
        calibrate(size_distribution(instance))
    if compiled is not None:
        return compiled(
            instance, real, policy, record=record, progress=progress, observers=observers
        )
    return _BasicEngine(
        instance,
        real,
        policy,
        tick,
        event_driven,
        record=record,
        progress=progress,
        observers=observers,
    ).run()


#: The engines of the basic model (:func:`run_simulation`'s ``engine``).
ENGINES = ("auto", "python", "compiled")
#: The smallest instance (in tasks) on which ``engine="auto"`` takes the compiled HLAS:
#: below it, a run takes a second or two with the event engine, and small runs keep the
#: engine whose every step a user can step through in Python.
COMPILED_FROM_TASKS = 100_000


def _compiled(
    policy: Policy, instance: Instance, tick: float | None, event_driven: bool, engine: str
) -> Callable[..., Simulation] | None:
    """The compiled simulation to run instead of the event engine (the policy's
    ``compiled_engine``), or None."""
    if engine == "python" or (engine == "auto" and instance.n_tasks < COMPILED_FROM_TASKS):
        return None
    offer = getattr(policy, "compiled_engine", None)
    try:
        if not callable(offer):
            raise InputError(f"policy {policy.name!r} has no compiled engine")
        return cast("Callable[..., Simulation]", offer(instance.mode, tick, event_driven))
    except InputError as exc:
        if engine == "compiled":
            raise InputError(f"the compiled engine (--engine compiled): {exc}") from None
    except ImportError as exc:  # no C compiler, or the loop did not build or load
        if engine == "compiled":
            raise InputError(
                f"the compiled engine (--engine compiled) is unavailable: {exc}"
            ) from None
    return None


def execution_model(policy: object) -> str:
    """The execution model ``policy`` is written for: its ``execution`` attribute, else
    ``"cluster"`` for a :class:`~optsched.online.cluster.ClusterPolicy` (``tick`` and
    ``event_driven`` attributes, no ``modes``), else ``"basic"``."""
    declared = getattr(policy, "execution", None)
    if declared is not None:
        return str(declared)
    cluster = isinstance(policy, ClusterPolicy) and not hasattr(policy, "modes")
    return "cluster" if cluster else "basic"


def speed_classes(instance: Instance) -> tuple[list[int], int]:
    """Each GPU's speed class (its type's index, in order of first appearance) and the number
    of classes: a job's compute time is the same on every GPU of a type (docs/model.md)."""
    index: dict[str, int] = {}
    class_of = [index.setdefault(g.type, len(index)) for g in instance.gpus]
    return class_of, len(index)


class _BasicEngine(Engine):
    """The basic execution model (docs/model.md) on the event engine."""

    period_name = "tick (--tick)"

    def __init__(
        self,
        profiled: Instance,
        real: Instance,
        policy: Policy,
        tick: float | None,
        event_driven: bool,
        *,
        record: bool,
        progress: bool,
        observers: Sequence[Observer],
    ) -> None:
        super().__init__(real, policy, tick, record=record, progress=progress, observers=observers)
        self.profiled, self.real = profiled, real
        self.event_driven = event_driven
        self.gang = real.mode == "gang"
        self.rounds = [job.rounds for job in real.jobs]
        class_of, n_classes = speed_classes(real)
        self.first_of_class = [class_of.index(c) for c in range(n_classes)]
        # per speed class, its first GPU's class in the profile (whose rows _arrive reads);
        # and each pair (a GPU's profile class, its speed class's first GPU's) that occurs
        profile_class = profiled.gpu_class
        self.first_profile_class = profile_class[self.first_of_class]
        pairs = sorted({(int(profile_class[g]), c) for g, c in enumerate(class_of)})
        self.pair_class = np.array([k for k, _ in pairs], dtype=np.intp)
        self.pair_first = self.first_profile_class[[c for _, c in pairs]]
        self.states: dict[int, JobState] = {}  # made at arrival
        # when the current round's results are ready (realised times: hidden from policies)
        self.round_ready = [job.arrival for job in real.jobs]
        self.oracle = Oracle(real) if declared(policy, "clairvoyant") else None
        self.gpu_ids = tuple(g.id for g in real.gpus)
        self.gpu_types = tuple(g.type for g in real.gpus)
        self.on_gpu = [-1] * real.n_gpus  # job computing on each GPU (relaxed mode)
        self.idle = IdleGPUs(class_of, n_classes)
        for g in range(real.n_gpus):
            self.idle._add(g, 0.0)
        self.free_since = np.zeros(real.n_gpus)
        self.active: dict[int, JobState] = {}
        make_queue = getattr(policy, "waiting_queue", None)
        self.waiting = (
            make_queue(self.states) if callable(make_queue) else WaitingQueue(self.states)
        )
        self.priority = getattr(policy, "priority", None)
        self.waiting.owner = policy  # ordered by its priority, or by arrival without one
        self.revisit = getattr(policy, "revisit", None) if self.priority else None
        self.finished = getattr(policy, "finished", None)
        self.revisits: list[tuple[float, int]] = []
        self.touched: set[int] = set()
        self.claimed: set[int] = set()  # GPUs started on in the current decision

    def handle(self, kind: int, who: Any, now: float) -> None:
        if kind == _FREE:
            self.idle._add(who, now)
            self.free_since[who] = now
            j = self.on_gpu[who]
            if j >= 0:
                state = self.states[j]
                state.running -= 1
                self.on_gpu[who] = -1
                if state.waiting:
                    self._queue(state, now)
        elif kind == _READY:
            self._round_ready(self.states[who], now)
        else:
            self._arrive(who, now)

    def settle(self, now: float, ticked: bool) -> bool:
        if (self.event_driven or ticked) and self.idle:
            self._decide(now)
        return not self.idle or not self.waiting

    def at_rest(self) -> bool:
        return len(self.idle) == self.real.n_gpus

    def _arrive(self, j: int, now: float) -> None:
        job = self.profiled.jobs[j]
        compute, sync = self.profiled.row(j)
        by_class = self.profiled.class_compute[j, self.first_profile_class]
        class_sync = self.profiled.class_sync[j]
        per_class = class_sync[self.first_profile_class]
        # whether each speed class has one sync time (compared per profile class)
        uniform = np.array_equal(class_sync[self.pair_class], class_sync[self.pair_first])
        for fresh in (compute, sync, by_class, per_class):  # new arrays (fancy indexing)
            fresh.setflags(write=False)  # read_only() without its copy
        state = JobState(
            j,
            job.id,
            job.arrival,
            job.weight,
            job.tasks_per_round,
            compute,
            sync,
            last_start=job.arrival,
            by_class=by_class,
            sync_by_class=per_class if uniform else None,
            # a job's compute time is its GPU type's: by_class holds every value
            fastest=float(np.min(by_class)),
            slowest=float(np.max(by_class[np.isfinite(by_class)])),
        )
        self.states[j] = state
        state.waiting = state.tasks_per_round
        self.active[j] = state
        self._queue(state, now)

    def _queue(self, state: JobState, now: float) -> None:
        """(Re)place a waiting job in the waiting queue under its current priority."""
        j = state.index
        if self.priority is None:
            self.waiting.put(j, (state.arrival,))
            return
        key = self.priority(state, now, self.oracle)
        if not isinstance(key, tuple) or any(isinstance(x, float) and x != x for x in key):
            raise PolicyError(
                f"policy {self.policy.name!r}: priority must return a tuple "
                f"without NaN, got {key!r} for job {state.id!r}"
            )
        self.waiting.put(j, key)
        if self.revisit is not None:
            at = self.revisit(state, now)
            if at < math.inf:
                heapq.heappush(self.revisits, (at, j))

    def _requeue_due(self, now: float) -> None:
        """Re-key the waiting jobs whose revisit time has come (each once per decision)."""
        due = set()
        while self.revisits and self.revisits[0][0] <= now:
            due.add(heapq.heappop(self.revisits)[1])
        for j in sorted(due):
            state = self.states.get(j)
            if state is not None and state.waiting and j in self.active:
                self._queue(state, now)

    def _round_ready(self, state: JobState, now: float) -> None:
        state.rounds_done += 1
        if state.rounds_done == self.rounds[state.index]:
            del self.active[state.index]
            del self.states[state.index]
            self.job_done(state.index, now)
            if self.finished is not None and self.finished(state, now) and self.priority:
                for other in self.active.values():  # new keys for every waiting job
                    if other.waiting:
                        self._queue(other, now)
        else:
            state.waiting = state.tasks_per_round
            self.round_ready[state.index] = now
            self._queue(state, now)

    def _decide(self, now: float) -> None:
        if not self.waiting:
            return
        if now > MAX_START and not self.event_driven:
            raise InputError(
                f"tick (--tick) {self.tick:g} s with --heartbeat delays task "
                f"starts past {MAX_START:g} s (t={now:g})"
            )
        if self.revisits and self.revisits[0][0] <= now:
            self._requeue_due(now)
        view = View(
            now,
            self.idle,
            self.free_since,
            self.waiting,
            self.active,
            self.gpu_ids,
            self.gpu_types,
            self.real.mode,
            self.oracle,
        )
        # decisions apply as the policy yields them (a JobState's waiting count falls at
        # once); the queue and the idle GPUs change only after the last one, so that a
        # policy iterating them meanwhile sees this instant's state
        touched, claimed = self.touched, self.claimed
        for decision in self.policy.decide(view):
            if type(decision) is tuple and len(decision) == 2:  # the common case, inline
                j, where = decision
            else:
                j, where, share = unpack(decision, self.policy)
                if share:
                    raise PolicyError(
                        f"policy {self.policy.name!r}: the basic execution "
                        "model does not share GPUs"
                    )
            self.decisions += 1
            if type(j) is not int:  # (a Python int, the common case, is an index as it is)
                j = index_of(j, "a decision's job", self.policy)
            state = self.active.get(j)
            if state is None or not state.waiting:
                raise PolicyError(
                    f"policy {self.policy.name!r} started a task of job {j}, "
                    f"which has no waiting task at t={now}"
                )
            if self.gang:
                self._start_round(state, gpu_indices(where, self.policy), now)
            elif type(where) is int:
                self._start_task(state, where, now)
            else:
                self._start_task(state, index_of(where, "a decision's GPU", self.policy), now)
            touched.add(j)
        for g in claimed:
            self.idle._remove(g)
        claimed.clear()
        for j in sorted(touched):
            state = self.states[j]
            if state.waiting:
                self._queue(state, now)
            else:
                self.waiting.drop(j)
        touched.clear()

    def _claim(self, state: JobState, g: int, now: float) -> float:
        idle = self.idle._idle
        if not (0 <= g < len(idle) and idle[g]) or g in self.claimed:
            raise PolicyError(f"policy {self.policy.name!r} used GPU {g}, busy at t={now}")
        c = self.real.compute_of(state.index, g)
        if not math.isfinite(c):
            raise PolicyError(
                f"policy {self.policy.name!r} put job {state.id!r} on GPU "
                f"{self.real.gpus[g].id!r}, which it cannot use"
            )
        self.claimed.add(g)
        return c

    def _start_task(self, state: JobState, g: int, now: float) -> None:
        c = self._claim(state, g, now)
        j, k_tasks = state.index, state.tasks_per_round
        task = k_tasks - state.waiting
        state.waiting -= 1
        state.running += 1
        self.on_gpu[g] = j
        state.tasks_started += 1
        state.attained += c
        if state.tasks_started == 1:
            state.first_start = now
        state.last_start = now
        self.round_ready[j] = max(self.round_ready[j], now + c + self.real.sync_of(j, g))
        self.push(now + c, _FREE, g)
        for started in self.on_task:
            started(j, state.rounds_done, task, g, now, now + c)
        for held in self.on_held:
            held(g, now, now + c)
        if state.waiting == 0:
            self.push(self.round_ready[j], _READY, j)

    def _start_round(self, state: JobState, gpus: tuple[int, ...], now: float) -> None:
        j = state.index
        if len(set(gpus)) != state.tasks_per_round or len(gpus) != state.tasks_per_round:
            raise PolicyError(
                f"policy {self.policy.name!r} gave job {state.id!r} "
                f"{len(set(gpus))} distinct GPUs for {state.tasks_per_round} "
                f"tasks"
            )
        compute = [self._claim(state, g, now) for g in gpus]
        pace = max(c + self.real.sync_of(j, g) for c, g in zip(compute, gpus, strict=True))
        state.waiting = 0
        state.tasks_started += len(gpus)
        state.attained += pace * len(gpus)
        if state.tasks_started == len(gpus):
            state.first_start = now
        state.last_start = now
        for k, g in enumerate(gpus):
            self.push(now + pace, _FREE, g)
            for started in self.on_task:
                started(j, state.rounds_done, k, g, now, now + pace)
            for held in self.on_held:
                held(g, now, now + pace)
        self.push(now + pace, _READY, j)
