"""The event engine every online simulation runs on, and its observers.

An *execution model* (a subclass of :class:`Engine`) owns the cluster's state — which GPUs are
busy, how far every job is — and turns events into state changes; the engine owns time. It
keeps one event heap, processes every event of an instant before the policy decides, drives
the periodic ticks (skipping those at which nothing can be decided, on the same grid),
detects a stalled policy, counts events and decisions, and tells the *observers* every task
start, GPU hold, training start, failed attempt and job completion, so that a metric, the
recorded or streamed schedule and the progress line are computed in one place whatever the
execution model. Two models exist: the basic one (:mod:`optsched.online.simulator`: relaxed
and gang rounds) and the cluster one (:mod:`optsched.online.cluster`: launch and save phases,
GPU sharing, placement factors, out-of-memory failures, link contention).

Every policy speaks one decision protocol: ``decide(view)`` returns or yields decisions
``(job, where)`` or ``(job, where, share)`` — a :class:`Start` or a plain tuple — where
``where`` is a GPU index (relaxed mode) or the GPU indices in task order (gang mode), and
``share`` (cluster model only) asks to share a held GPU. The view a policy receives is its
execution model's (:class:`~optsched.online.simulator.View`,
:class:`~optsched.online.cluster.ClusterView`).
"""

from __future__ import annotations

import heapq
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TextIO

import numpy as np

from optsched.contracts import OnlinePolicy
from optsched.errors import InputError, OptschedError
from optsched.fairness import fairness_metrics
from optsched.instance import Instance
from optsched.schedule import MODES, Schedule, Task

if TYPE_CHECKING:
    from optsched.output import StreamedFile

#: Event kinds the engine itself knows; an execution model numbers its own from MODEL_EVENTS.
ARRIVE, TICK, WAKE, MODEL_EVENTS = 0, 1, 2, 3
#: Instants in a row at which no event but ticks and wake-ups is pending, nothing is in
#: flight and the policy starts nothing, at which the engine calls the policy stalled (a
#: policy may wait for its own period this long, not longer).
STALL_INSTANTS = 1000


class PolicyError(OptschedError):
    """A policy made an impossible decision (a bug in the policy, never repaired)."""


class Named(Protocol):
    """What the engine's messages read of a policy: its name."""

    @property
    def name(self) -> str: ...


class EnginePolicy(OnlinePolicy, Named, Protocol):
    """What the engine itself reads of a policy: ``name`` and ``decide(view)``, whose
    decisions it checks (:func:`unpack`). Each execution model's contract says more
    (:class:`~optsched.online.simulator.Policy`,
    :class:`~optsched.online.cluster.ClusterPolicy`)."""


class Start(NamedTuple):
    """A decision: start ``job`` (its index) on ``where`` — one GPU index in relaxed mode (one
    task of its current round), the GPU indices in task order in gang mode (the whole round);
    ``share`` (cluster model) shares a held GPU instead of waiting for a vacant one."""

    job: int
    where: Any
    share: bool = False


Decision = Start | tuple[int, Any] | tuple[int, Any, bool]


def unpack(decision: Any, policy: Named) -> tuple[int, Any, bool]:
    """(job, where, share) of ``policy``'s decision, given as a :class:`Start` or any other
    sequence of 2 or 3 items; anything else is a :class:`PolicyError`."""
    try:
        n = len(decision)
    except TypeError:
        n = 0
    if n == 2:
        job, where = decision
        return job, where, False
    if n == 3:
        job, where, share = decision
        return job, where, bool(share)
    raise PolicyError(
        f"policy {policy.name!r}: a decision is (job, where) or (job, where, "
        f"share), got {decision!r}"
    )


def index_of(value: object, what: str, policy: Named) -> int:
    """``value`` as an index (a job's or a GPU's) when it is an integer, Python's or NumPy's;
    anything else (a float such as 0.9 or 1.0, a string, a bool) is a :class:`PolicyError`
    naming the policy, never silently converted."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return int(value)
    raise PolicyError(
        f"policy {policy.name!r}: {what} must be an integer index, got "
        f"{value!r} ({type(value).__name__})"
    )


def gpu_indices(where: Any, policy: Named) -> tuple[int, ...]:
    """A decision's sequence of GPU indices (:func:`index_of` each)."""
    try:
        items = tuple(where)
    except TypeError:
        raise PolicyError(
            f"policy {policy.name!r}: a round starts on a sequence of GPU indices, got {where!r}"
        ) from None
    return tuple(index_of(g, "a decision's GPU", policy) for g in items)


#: What a policy that leaves one of these attributes out is taken to declare: every mode,
#: not clairvoyant, no tick, decisions as soon as GPUs free up.
POLICY_DEFAULTS: dict[str, Any] = {
    "modes": frozenset(MODES),
    "clairvoyant": False,
    "tick": None,
    "event_driven": True,
}


def declared(policy: object, name: str) -> Any:
    """``policy``'s attribute ``name`` (one of :data:`POLICY_DEFAULTS`), or its default: a
    policy need not subclass anything, nor state what it does not need."""
    return getattr(policy, name, POLICY_DEFAULTS[name])


def read_only(row: np.ndarray) -> np.ndarray:
    """A read-only copy of a matrix row, so a policy cannot reach other jobs through
    ``.base``."""
    out = row.copy()
    out.setflags(write=False)
    return out


class Observer:
    """Receives what happens in a simulation, without touching its state (no-op by
    default). Times are simulated seconds; ``job`` and ``gpu`` are indices into the
    instance's jobs and GPUs."""

    def on_task(
        self, job: int, round_: int, task: int, gpu: int, start: float, busy_until: float
    ) -> None:
        """A task started on ``gpu``, which stays busy (relaxed) or held (gang) until
        ``busy_until`` — NaN when that is not known yet (cluster model: its training start
        and end follow, :meth:`on_train` or :meth:`on_fail`)."""

    def on_held(self, gpu: int, start: float, end: float) -> None:
        """``gpu`` is busy (held by one round or more) from ``start`` to ``end``: told once
        per busy period, as soon as its end is known (basic model: when the task starts;
        cluster model: when the GPU is released)."""

    def on_trained(self, gpu: int, start: float, end: float) -> None:
        """(Cluster model) some round trained on ``gpu`` from ``start`` to ``end``: told when
        the training period ends."""

    def on_train(self, job: int, start: float) -> None:
        """(Cluster model) the tasks ``job`` started last begin training at ``start``."""

    def on_fail(self, job: int, gpus: tuple[int, ...], start: float, at: float) -> None:
        """(Cluster model) the round of ``job`` started at ``start`` on ``gpus`` ran out of
        GPU memory at ``at``, when it was to start training; it will be started again."""

    def on_job_done(self, job: int, completion: float) -> None:
        """All results of ``job``'s last round are ready at ``completion``."""


def implementing(observers: Sequence[Observer], hook: str) -> list[Any]:
    """The bound ``hook`` of each of ``observers`` that implements it (a no-op hook is never
    called)."""
    return [
        getattr(obs, hook)
        for obs in observers
        if getattr(type(obs), hook) is not getattr(Observer, hook)
    ]


class ScheduleRecorder(Observer):
    """Collects every task, to emit a :class:`Schedule` (with the training starts and failed
    attempts of the cluster model)."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.tasks: list[Task] = []
        self._open: dict[int, list[int]] = {}  # job -> its tasks awaiting a training start

    def on_task(
        self, job: int, round_: int, task: int, gpu: int, start: float, busy_until: float
    ) -> None:
        if busy_until != busy_until:  # NaN: its training start follows
            self._open.setdefault(job, []).append(len(self.tasks))
        self.tasks.append(
            Task(self.instance.jobs[job].id, round_, task, self.instance.gpus[gpu].id, start)
        )

    def on_train(self, job: int, start: float) -> None:
        for i in self._open.pop(job, ()):
            t = self.tasks[i]
            self.tasks[i] = Task(t.job, t.round, t.task, t.gpu, t.start, start)

    def on_fail(self, job: int, gpus: tuple[int, ...], start: float, at: float) -> None:
        for i in self._open.pop(job, ()):
            t = self.tasks[i]
            self.tasks[i] = Task(t.job, t.round, t.task, t.gpu, t.start, failed_at=at)

    def schedule(self) -> Schedule:
        return Schedule(self.instance.name, self.tasks, self.instance.mode)


class ScheduleStreamer(Observer):
    """Writes every task to ``out`` as soon as it is final, so that the run's schedule JSON
    is never held in memory: ``out.write(text)`` is called with the pieces, :meth:`close`
    writes the end. Under the cluster model (tasks whose ``busy_until`` is not known at
    their start) the file is ``optsched/schedule@2`` and each task is written at its
    training start or failure; otherwise ``optsched/schedule@1``, each task at its start."""

    def __init__(self, instance: Instance, out: StreamedFile | TextIO) -> None:
        self.instance, self.out, self.tasks = instance, out, 0
        self._open: dict[int, list[dict[str, Any]]] = {}
        self._version = 0  # the format, fixed by the first task (0: nothing written yet)

    def _head(self, version: int) -> None:
        self._version = version
        head = json.dumps(
            {
                "format": f"optsched/schedule@{version}",
                "instance": self.instance.name,
                "mode": self.instance.mode,
            }
        )
        self.out.write(head[:-1] + ', "tasks": [')

    def on_task(
        self, job: int, round_: int, task: int, gpu: int, start: float, busy_until: float
    ) -> None:
        item = {
            "job": self.instance.jobs[job].id,
            "round": round_,
            "task": task,
            "gpu": self.instance.gpus[gpu].id,
            "start": float(start),
        }
        phases = busy_until != busy_until  # NaN: its training start follows
        if not self._version:
            self._head(2 if phases else 1)
        if phases:
            self._open.setdefault(job, []).append(item)
        else:
            self._write(item)

    def on_train(self, job: int, start: float) -> None:
        for item in self._open.pop(job, ()):
            self._write({**item, "train_start": float(start)})

    def on_fail(self, job: int, gpus: tuple[int, ...], start: float, at: float) -> None:
        for item in self._open.pop(job, ()):
            self._write({**item, "failed_at": float(at)})

    def _write(self, item: dict[str, Any]) -> None:
        self.out.write(("\n " if not self.tasks else ",\n ") + json.dumps(item, allow_nan=False))
        self.tasks += 1

    def close(self) -> None:
        if not self._version:
            self._head(1)
        self.out.write("\n]}\n")


class MetricsObserver(Observer):
    """The model's metrics (docs/model.md), streamed (no task list kept): total weighted and
    mean JCT, makespan, per-GPU utilisation (time held / makespan), and once every job is
    done the fairness and tail metrics (:mod:`optsched.fairness`)."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.objective = 0.0
        self.weighted_jct = 0.0
        self.jct_sum = 0.0
        self.makespan = 0.0
        self.done = 0
        self.busy = np.zeros(instance.n_gpus)
        self.completion = np.full(instance.n_jobs, np.nan)

    def on_held(self, gpu: int, start: float, end: float) -> None:
        self.busy[gpu] += end - start

    def on_job_done(self, job: int, completion: float) -> None:
        spec = self.instance.jobs[job]
        self.completion[job] = completion
        self.objective += spec.weight * completion
        self.weighted_jct += spec.weight * (completion - spec.arrival)
        self.jct_sum += completion - spec.arrival
        self.makespan = max(self.makespan, completion)
        self.done += 1

    def metrics(self, fairness: bool = True) -> dict[str, Any]:
        """The metrics; the fairness and tail metrics only with ``fairness`` (a run that
        records its schedule leaves them to the checker, which computes them from it)."""
        span = self.makespan if self.makespan > 0 else 1.0
        out = {
            "total_weighted_jct": self.weighted_jct,
            "mean_jct": self.jct_sum / max(1, self.done),
            "makespan": self.makespan,
            "utilisation": {
                g.id: float(b / span) for g, b in zip(self.instance.gpus, self.busy, strict=True)
            },
        }
        if fairness and self.done == self.instance.n_jobs:
            out.update(fairness_metrics(self.instance, self.completion))
        return out


class PhaseMetricsObserver(MetricsObserver):
    """The cluster model's metrics: :class:`MetricsObserver`'s and ``gpu_idle_s``
    (GPU-seconds within the makespan in which a GPU trains nothing, Liquid's idle time),
    ``mean_execution_s`` (completion − start of the first round), ``oom_failures`` (rounds
    that ran out of actual GPU memory at their training start) and ``lost_gpu_s`` (the
    GPU-seconds those attempts held, launch included)."""

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.trained = np.zeros(instance.n_gpus)
        self.first_start = np.full(instance.n_jobs, np.nan)
        self.oom_failures = 0
        self.lost_gpu_s = 0.0

    def on_task(
        self, job: int, round_: int, task: int, gpu: int, start: float, busy_until: float
    ) -> None:
        if round_ == 0 and task == 0:
            self.first_start[job] = start  # a failed first round's retry counts from anew

    def on_trained(self, gpu: int, start: float, end: float) -> None:
        self.trained[gpu] += end - start

    def on_fail(self, job: int, gpus: tuple[int, ...], start: float, at: float) -> None:
        self.oom_failures += 1
        self.lost_gpu_s += (at - start) * len(gpus)

    def metrics(self, fairness: bool = True) -> dict[str, Any]:
        out = super().metrics(fairness)
        out.update(
            gpu_idle_s=float((self.makespan - self.trained).sum()),
            mean_execution_s=float((self.completion - self.first_start).mean()),
            oom_failures=self.oom_failures,
            lost_gpu_s=self.lost_gpu_s,
        )
        return out


class ProgressObserver(Observer):
    """Prints tasks started (failed attempts included), jobs done and simulated time to
    stderr about once a second (:attr:`EVERY`, as tasks start): on a terminal one line
    rewritten in place, elsewhere (a log file, a pipe) one line each time."""

    #: Seconds between two progress reports.
    EVERY = 1.0

    def __init__(self, instance: Instance, stream: TextIO | None = None) -> None:
        self.total_tasks, self.total_jobs = instance.n_tasks, instance.n_jobs
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.terminal = bool(isatty()) if callable(isatty) else False
        self.tasks = self.jobs = 0
        self.started = self.last = time.perf_counter()

    def on_task(
        self, job: int, round_: int, task: int, gpu: int, start: float, busy_until: float
    ) -> None:
        self.advance(1, 0, start)

    def on_job_done(self, job: int, completion: float) -> None:
        self.advance(0, 1, completion)

    def advance(self, tasks: int, jobs: int, at: float) -> None:
        """``tasks`` more tasks started and ``jobs`` more jobs done, up to simulated time
        ``at`` (one call for many: a compiled engine's way to report)."""
        self.tasks += tasks
        self.jobs += jobs
        now = time.perf_counter()
        if tasks and now - self.last >= self.EVERY:
            self.last = now
            back = "\r" if self.terminal else ""  # a terminal's line is rewritten in place
            print(
                f"{back}simulated t={at:.0f} s: {self.tasks}/{self.total_tasks} tasks, "
                f"{self.jobs}/{self.total_jobs} jobs done, {now - self.started:.0f} s",
                end="" if self.terminal else "\n",
                file=self.stream,
                flush=True,
            )
        if jobs and self.terminal and self.jobs == self.total_jobs and self.last > self.started:
            print(file=self.stream)


@dataclass(frozen=True)
class Simulation:
    """What a simulation produced: the instance it ran on (the realised one, for the basic
    model's noise), the schedule (when recorded), the objective Σ w_j C_j and metrics
    (:class:`MetricsObserver`), counters, and the engine that ran it."""

    instance: Instance
    schedule: Schedule | None
    objective: float
    metrics: dict[str, Any]
    completion: np.ndarray
    events: int
    decisions: int
    runtime_s: float
    #: what ran it: ``python`` (this event engine) or ``compiled``
    #: (:mod:`optsched.online._hlas_compiled`)
    engine: str = "python"
    #: one-off seconds before the run, outside ``runtime_s`` (loading a compiled engine)
    startup_s: float = 0.0

    @property
    def events_per_s(self) -> float:
        return self.events / self.runtime_s if self.runtime_s > 0 else float("inf")

    @property
    def jct(self) -> list[float]:
        """Each job's completion time minus its arrival (s), in instance order."""
        return [
            float(c) - job.arrival
            for c, job in zip(self.completion, self.instance.jobs, strict=True)
        ]


class Engine:
    """The event loop shared by the execution models.

    A model pushes its events with :meth:`push` (kinds from :data:`MODEL_EVENTS` on; the
    engine pushes every job's arrival and, with a ``tick`` period, the ticks), and
    implements :meth:`handle` (one event), :meth:`settle` (after an instant's events: let the
    policy decide, adding one to ``self.decisions`` per decision applied; the stall
    detection reads it) and :meth:`at_rest` (nothing in flight); it calls :meth:`job_done`
    and the observers' hooks as things happen (``self.on_task`` etc.: the hooks of the
    observers that implement them). Every run gets ``metrics_type``'s metrics, the recorded
    schedule with ``record``, a progress line on stderr with ``progress``, and
    ``observers``.
    """

    #: The metrics every run of the model reports.
    metrics_type: type[MetricsObserver] = MetricsObserver
    #: How errors name the tick period (the option that sets it).
    period_name = "period (tick, heartbeat)"

    def __init__(
        self,
        instance: Instance,
        policy: EnginePolicy,
        tick: float | None,
        *,
        record: bool = True,
        progress: bool = False,
        observers: Sequence[Observer] = (),
    ) -> None:
        self.instance, self.policy, self.tick = instance, policy, tick
        self.metrics = self.metrics_type(instance)
        self.recorder = ScheduleRecorder(instance) if record else None
        everyone = [
            self.metrics,
            *([self.recorder] if self.recorder else []),
            *([ProgressObserver(instance)] if progress else []),
            *observers,
        ]
        (
            self.on_task,
            self.on_held,
            self.on_trained,
            self.on_train,
            self.on_fail,
            self.on_job_done,
        ) = (
            implementing(everyone, hook)
            for hook in ("on_task", "on_held", "on_trained", "on_train", "on_fail", "on_job_done")
        )
        self.heap: list[tuple[float, int, int, Any]] = []
        self.seq = self.events = self.decisions = 0
        self.pending = 0  # events in the heap other than ticks and wake-ups
        self.unfinished = instance.n_jobs
        for j, job in enumerate(instance.jobs):
            self.push(job.arrival, ARRIVE, j)
        if tick is not None:
            self.push(0.0, TICK, None)

    def push(self, t: float, kind: int, what: Any) -> None:
        if kind != TICK and kind != WAKE:
            self.pending += 1
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, what))

    def run(self) -> Simulation:
        """Process every event; the policy decides after each instant's events.

        Raises
        ------
        PolicyError
            Jobs left unfinished with nothing left to happen, a stalled policy
            (:data:`STALL_INSTANTS`), or an impossible decision (the model's).
        InputError
            A tick period below the time resolution at the current time.
        """
        heap = self.heap
        stalled = 0
        started = time.perf_counter()
        while heap and self.unfinished:
            now = heap[0][0]
            tick_seq = 0
            while heap and heap[0][0] == now:
                _, _, kind, what = heapq.heappop(heap)
                self.events += 1
                if kind == TICK:
                    self.on_tick(now)
                    self.seq += 1  # the next tick keeps this place among same-time events
                    tick_seq = self.seq
                elif kind != WAKE:
                    self.pending -= 1
                    self.handle(kind, what, now)
            before = self.decisions
            skip = self.settle(now, tick_seq > 0)
            if tick_seq and self.unfinished:
                heapq.heappush(heap, (self._next_tick(now, skip), tick_seq, TICK, None))
            # with ticks (or a policy waking itself) the heap never empties: a policy that
            # starts nothing while nothing is in flight or to arrive is stalled
            idle = not self.pending and self.decisions == before and self.at_rest()
            stalled = stalled + 1 if idle else 0
            if stalled >= STALL_INSTANTS:
                break
        runtime = time.perf_counter() - started
        if stalled >= STALL_INSTANTS:
            raise PolicyError(
                f"policy {self.policy.name!r} stalled: it started nothing for "
                f"{stalled} instants in a row while no GPU was busy and no job "
                f"was yet to arrive; {self.unfinished} jobs left unfinished"
            )
        if self.unfinished:
            raise PolicyError(
                f"policy {self.policy.name!r} left {self.unfinished} jobs "
                "unfinished with nothing left to wait for"
            )
        m = self.metrics
        return Simulation(
            self.instance,
            self.recorder.schedule() if self.recorder else None,
            m.objective,
            m.metrics(fairness=self.recorder is None),
            m.completion,
            self.events,
            self.decisions,
            runtime,
        )

    def _next_tick(self, now: float, skip: bool) -> float:
        """The tick after ``now``. With ``skip`` (the model says nothing can be decided
        until something else happens), ticks are skipped up to the next other event, on the
        same grid."""
        tick = self.tick or 0.0
        t = now + tick
        if not t > now:
            raise InputError(
                f"policy {self.policy.name!r}: its {self.period_name} {tick:g} "
                f"s is below the time resolution at t={now:g} s; use a longer "
                "one"
            )
        if skip and self.heap:
            upto = self.heap[0][0]
            if (upto - t) / tick > 1e6:  # far ahead: jump close to it first
                t += math.floor((upto - t) / tick) * tick
            while t < upto:
                t += tick
        return t

    def job_done(self, j: int, now: float) -> None:
        """Job ``j``'s last round is over at ``now``."""
        self.unfinished -= 1
        for done in self.on_job_done:
            done(j, now)

    # -- the execution model's part ---------------------------------------------------------

    def handle(self, kind: int, what: Any, now: float) -> None:
        """Apply one event (an ARRIVE of job ``what``, or one of the model's)."""
        raise NotImplementedError

    def on_tick(self, now: float) -> None:
        """A tick happens at ``now`` (before the instant's decisions)."""

    def settle(self, now: float, ticked: bool) -> bool:
        """After the events of ``now``: let the policy decide. Returns whether the ticks
        up to the next event may be skipped (nothing can be decided until then)."""
        raise NotImplementedError

    def at_rest(self) -> bool:
        """Whether nothing is in flight (no GPU busy or held)."""
        raise NotImplementedError
