"""Discrete-event simulation of a GPU cluster with Liquid's execution model (TPDS'22 §3, §6).

Gang mode, with instance@2's cluster fields (docs/model.md; the checker's model, see
:func:`optsched.check._cluster_rounds`): a round of job j started on GPUs G at ``start``
launches (round 0: ``launch`` s), trains for the round's *pace* (slowest compute + sync × the
job's placement factor of G's host pattern, Liquid §2.7) and saves (last round: ``save`` s).
Launch and save use no GPU compute, so a round may be started on a GPU another round still
holds (**pre-scheduling**, Liquid §6.1): it launches at once and trains when the GPU is
vacant for it. With the instance's ``share_cap``, single-task rounds may **share** a GPU
(Liquid §6.2): a shared round trains while the predicted utilisations of the rounds training
there sum to at most the cap, every such round progressing at 1 / max(1, summed utilisation)
(processor sharing; the checker's interference model). GPU memory is held from training
start to the end of the save and must fit.

The engine owns this state; a *cluster policy* sees a :class:`ClusterView` and returns
decisions ``(job, gpus, share)``. Which GPUs the scheduler knows to be vacant follows
Liquid's agents (§6.3): with **event-driven** reporting a GPU is known vacant as soon as it
is released; with heartbeats only (``event_driven=False``) at the next heartbeat tick.
Policies are asked to decide after every instant's events; they see each job's profile
(arrival, weight, tasks, roles, predicted utilisation and memory, phases, profiled times)
and nothing about its remaining rounds.

**Predicted vs actual** (instance@2 ``actual``; models/cluster-execution.md): the policy and
the engine's admission rules (a decision's share cap, the wait until a launched round's GPU
memory fits) use the jobs' predictions, as Liquid's scheduler does (§4, §6.2); execution
uses the actual values. Interference: rounds training on a GPU progress at
1 / max(1, Σ actual utilisation). Memory: when a round starts training and the actual memory
of the rounds holding memory on one of its GPUs (training or saving) plus its own exceeds the
GPU's, the round **fails** at that instant (out of memory; Liquid §6.2: "the job resource
occupation may still exceed the upper limit during actual scheduling"): it releases its GPUs,
its tasks are recorded with ``failed_at``, the job waits again for the same round (offered to
the policy from the next instant at which something happens, so a policy repeating the
decision cannot loop within one instant) and its held GPU-seconds count as lost
(``oom_failures``, ``lost_gpu_s``). With the instance's ``link_contention``, a round's
remote PS–worker flows share its workers' host links with the flows of every other round
training, which slows it by ``flow_time`` per extra flow on its busiest link (a rate change,
integrated piecewise). With the instance's ``space_sharing`` instead of a cap, a single-task
round decided with ``share`` may train next to one other single-task round on a GPU when
their workloads have co-location rates on its type, each at its rate (Gavel's pairwise
throughputs; :mod:`optsched.online.packing`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol, runtime_checkable

import numpy as np

from optsched.cluster_model import round_flows, round_pace
from optsched.errors import InputError
from optsched.instance import Instance
from optsched.limits import MAX_VALUE
from optsched.online.engine import (
    ARRIVE,
    MODEL_EVENTS,
    WAKE,
    Decision,
    Engine,
    Observer,
    PhaseMetricsObserver,
    PolicyError,
    Simulation,
    declared,
    gpu_indices,
    index_of,
    read_only,
    unpack,
)
from optsched.options import MIN_PERIOD

_LAUNCHED, _TRAINED, _DONE = range(MODEL_EVENTS, MODEL_EVENTS + 3)


@dataclass(eq=False)
class ClusterJob:
    """What a cluster policy knows of an arrived, unfinished job (updated in place):
    ``util`` and ``gpu_memory`` are the predictions (the job's
    :class:`~optsched.instance.ClusterProfile`), never the actual values."""

    index: int
    id: str
    arrival: float
    weight: float
    tasks_per_round: int
    roles: tuple[str, ...]
    util: float
    gpu_memory: float
    launch: float
    save: float
    compute: np.ndarray
    rounds_done: int = 0
    waiting: bool = False
    failures: int = 0  # rounds that ran out of (actual) GPU memory so far


@dataclass(eq=False)
class Holding:
    """A round holding a GPU: its job, whether it trains now, when its training is expected
    to end (at the current rate; NaN before it trains) and whether it may share the GPU."""

    job: ClusterJob
    tasks: int
    share: bool
    training: bool = False
    train_end: float = math.nan


@dataclass
class ClusterView:
    """The state a cluster policy decides on: the time, the profiled instance (topology,
    hosts, GPU memory, ``share_cap``), the waiting jobs (arrival order), the GPUs known to be
    vacant (index order) and, per GPU, the rounds known to hold it."""

    time: float
    instance: Instance
    waiting: list[ClusterJob]
    vacant: list[int]
    holders: list[list[Holding]]
    rng: np.random.Generator
    wakeups: list[float] = field(default_factory=list)

    def wake(self, at: float) -> None:
        """Ask to decide again at time ``at`` (> now) even if nothing happens then."""
        if at > self.time:
            self.wakeups.append(at)


@runtime_checkable
class ClusterPolicy(Protocol):
    """A policy for this execution model (``execution = "cluster"``, which
    :func:`~optsched.online.simulator.simulate` dispatches on): ``decide(view)`` returns the
    rounds to start now, as :class:`~optsched.online.engine.Start` decisions
    ``(job, gpus, share)`` (``share`` False may be left out). ``tick`` is the period at which
    the engine wakes it up with nothing else happening (heartbeats, batch intervals; None:
    never; the default), ``event_driven`` whether GPUs are known vacant at once (default
    True)."""

    name: str
    tick: float | None
    event_driven: bool

    def decide(self, view: ClusterView) -> Iterable[Decision]: ...


@dataclass(eq=False)
class _Round:
    job: int
    round: int
    gpus: tuple[int, ...]
    start: float
    share: bool
    pace: float
    holding: Holding
    remaining: float = 0.0
    since: float = 0.0
    rate: float = 1.0
    version: int = 0
    train_start: float = math.nan
    done_at: float = math.inf  # when its hold ends, once its training has ended
    flows: dict[str, int] = field(default_factory=dict)  # own flows by worker host link


def simulate_cluster(
    instance: Instance,
    policy: ClusterPolicy,
    *,
    seed: int = 0,
    record: bool = True,
    progress: bool = False,
    observers: Sequence[Observer] = (),
) -> Simulation:
    """Run ``policy`` on ``instance`` (gang mode) with Liquid's execution model; randomised
    policies draw from ``view.rng``, seeded with ``seed``. ``record``, ``progress`` and
    ``observers`` as for :func:`~optsched.online.simulator.simulate`; the metrics are
    :class:`~optsched.online.engine.PhaseMetricsObserver`'s.

    Raises
    ------
    InputError
        An instance not in gang mode, or a bad tick (outside
        [:data:`~optsched.options.MIN_PERIOD`, MAX_VALUE] s).
    PolicyError
        An impossible decision, or waiting work with nothing left to happen.
    """
    if instance.mode != "gang":
        raise InputError(f"cluster policy {policy.name!r} runs in gang mode only")
    tick, event_driven = declared(policy, "tick"), declared(policy, "event_driven")
    if tick is not None and not MIN_PERIOD <= tick <= MAX_VALUE:
        raise InputError(
            f"cluster policy {policy.name!r}: tick must be in [{MIN_PERIOD:g}, "
            f"{MAX_VALUE:g}] s, got {tick!r}"
        )
    if not event_driven and tick is None:
        raise InputError("heartbeat reporting needs a heartbeat period")
    return _ClusterEngine(
        instance, policy, seed, record=record, progress=progress, observers=observers
    ).run()


class _ClusterEngine(Engine):
    """Liquid's execution model on the event engine."""

    metrics_type = PhaseMetricsObserver
    period_name = "period (heartbeat, batch interval)"

    def __init__(
        self,
        instance: Instance,
        policy: ClusterPolicy,
        seed: int,
        *,
        record: bool,
        progress: bool,
        observers: Sequence[Observer],
    ) -> None:
        super().__init__(
            instance,
            policy,
            declared(policy, "tick"),
            record=record,
            progress=progress,
            observers=observers,
        )
        self.event_driven: bool = declared(policy, "event_driven")
        self.inst = instance
        self.rng = np.random.default_rng(seed)
        profiles = [job.profile for job in instance.jobs]
        self.jobs = [
            ClusterJob(
                j,
                job.id,
                job.arrival,
                job.weight,
                job.tasks_per_round,
                p.roles or ("worker",) * job.tasks_per_round,
                p.util,
                p.gpu_memory,
                p.launch,
                p.save,
                read_only(instance.compute[j]),
            )
            for j, (job, p) in enumerate(zip(instance.jobs, profiles, strict=True))
        ]
        # execution uses the actual values; decisions and admission the predictions
        self.util = [p.actual_util for p in profiles]
        self.memory = [p.actual_gpu_memory for p in profiles]
        self.flow_time = [p.actual_flow_time for p in profiles]
        # without actuals the admission rule's predicted memory is the truth: no failure
        self.misses = any(p.actual is not None for p in profiles)
        self.link_load: dict[str, int] = {}  # flows of the training rounds by host link
        self.flowing: list[_Round] = []  # training rounds with flows (link contention)
        self.blocked: dict[int, float] = {}  # job -> instant its round failed
        n = instance.n_gpus
        self.holders: list[list[_Round]] = [[] for _ in range(n)]
        self.trainers: list[list[_Round]] = [[] for _ in range(n)]
        self.waiting_train: list[_Round] = []
        self.vacant = set(range(n))  # known to the scheduler
        self.unreported: set[int] = set()
        self.active: dict[int, ClusterJob] = {}
        self.held_since = np.zeros(n)
        self.train_since = np.zeros(n)

    def handle(self, kind: int, what: Any, now: float) -> None:
        if kind == ARRIVE:
            self.jobs[what].waiting = True
            self.active[what] = self.jobs[what]
        elif kind == _LAUNCHED:
            self.waiting_train.append(what)
        elif kind == _TRAINED:
            rnd, version = what
            if version == rnd.version:
                self._trained(rnd, now)
        else:
            self._done(what, now)

    def on_tick(self, now: float) -> None:
        self.vacant |= self.unreported
        self.unreported.clear()

    def settle(self, now: float, ticked: bool) -> bool:
        self._admit(now)
        waiting = any(j.waiting for j in self.active.values())
        if any(self._offered(j, now) for j in self.active.values()):
            self._decide(now)
            self._admit(now)
        if not self.heap and now in self.blocked.values():
            # nothing left to happen after a failure: offer its job again now (no GPU
            # holds memory any more, every holder having had an event pending)
            self.blocked.clear()
            self.push(now, WAKE, None)
        # while no job waits and no freed GPU is unreported, ticks change nothing
        return not waiting and not self.unreported

    def at_rest(self) -> bool:
        return not self.unreported and not any(self.holders)

    # -- decisions ---------------------------------------------------------------------------

    def _offered(self, job: ClusterJob, now: float) -> bool:
        """Whether a waiting job is offered to the policy at ``now``: not in the instant
        its last round failed."""
        return job.waiting and self.blocked.get(job.index) != now

    def _decide(self, now: float) -> None:
        view = ClusterView(
            now,
            self.inst,
            [j for j in self.active.values() if self._offered(j, now)],
            sorted(self.vacant),
            [[r.holding for r in rounds] for rounds in self.holders],
            self.rng,
        )
        for decision in self.policy.decide(view):
            j, where, share = unpack(decision, self.policy)
            j = index_of(j, "a decision's job", self.policy)
            gpus = gpu_indices(where, self.policy)
            self.decisions += 1
            self._start(j, gpus, share, now)
        for at in set(view.wakeups):
            self.push(at, WAKE, None)

    def _refuse(self, message: str) -> NoReturn:
        raise PolicyError(f"policy {self.policy.name!r}: {message}")

    def _start(self, j: int, gpus: tuple[int, ...], share: bool, now: float) -> None:
        job = self.active.get(j)
        if job is None or not self._offered(job, now):
            self._refuse(f"job {j} has no round waiting at t={now}")
        if len(set(gpus)) != len(gpus) or len(gpus) != job.tasks_per_round:
            self._refuse(f"job {job.id!r} needs {job.tasks_per_round} distinct GPUs, got {gpus}")
        for g in gpus:
            if not np.isfinite(job.compute[g]):
                self._refuse(f"job {job.id!r} cannot run on GPU {self.inst.gpus[g].id!r}")
            if share:
                self._check_share(job, g, now)
            elif g not in self.vacant and (
                not self.holders[g] or any(not np.isfinite(r.train_start) for r in self.holders[g])
            ):
                self._refuse(
                    f"GPU {self.inst.gpus[g].id!r} is neither known vacant nor "
                    f"pre-schedulable (held, with no round waiting) at t={now}"
                )
        rnd = _Round(
            j,
            job.rounds_done,
            gpus,
            now,
            share,
            round_pace(self.inst, j, gpus),
            Holding(job, len(gpus), share),
        )
        if self.inst.cluster.link_contention:
            rnd.flows = round_flows(self.inst, j, gpus)
        job.waiting = False
        for k, g in enumerate(gpus):
            self.vacant.discard(g)
            self.unreported.discard(g)
            if not self.holders[g]:
                self.held_since[g] = now
            self.holders[g].append(rnd)
            for started in self.on_task:
                started(j, rnd.round, k, g, now, math.nan)  # phases: known later
        launch = job.launch if rnd.round == 0 else 0.0
        self.push(now + launch, _LAUNCHED, rnd)

    def _check_share(self, job: ClusterJob, g: int, now: float) -> None:
        cap, gpu = self.inst.cluster.share_cap, self.inst.gpus[g]
        rounds = self.holders[g]
        spaced = self.inst.cluster.space_sharing
        if cap is None and not spaced:
            self._refuse("sharing on an instance without share_cap or space_sharing")
        if job.tasks_per_round != 1 or not rounds or any(len(r.gpus) > 1 for r in rounds):
            self._refuse(f"only single-task rounds share a held GPU ({gpu.id!r}, t={now})")
        if spaced:
            if len(rounds) > 1:
                self._refuse(f"space sharing: GPU {gpu.id!r} is held by two rounds at t={now}")
            other = rounds[0].job
            if self.inst.colocated_rate(job.index, other, g) is None:
                self._refuse(
                    f"jobs {job.id!r} and {self.jobs[other].id!r} have no co-location "
                    f"rates on GPU {gpu.id!r} ({gpu.type})"
                )
            return
        load = job.util + sum(self.jobs[r.job].util for r in rounds)
        if cap is not None and load > cap + 1e-9:
            self._refuse(f"sharing GPU {gpu.id!r} at t={now}: utilisation {load:g} > {cap:g}")

    # -- execution ---------------------------------------------------------------------------

    def _memory_fits(self, rnd: _Round, g: int) -> bool:
        """The admission rule, on predictions: the predicted memory of the rounds holding
        memory on ``g`` plus the round's fits."""
        cap = self.inst.gpus[g].memory
        if cap is None:
            return True
        used = sum(
            self.jobs[r.job].gpu_memory for r in self.holders[g] if np.isfinite(r.train_start)
        )
        return used + self.jobs[rnd.job].gpu_memory <= cap + 1e-9

    def _holds_memory(self, r: _Round, now: float) -> bool:
        """Whether ``r`` holds GPU memory just after ``now``: it has started training and its
        hold (training, then the save of a last round) ends after ``now`` — a hold ending at
        ``now`` is over even if its event is still to be processed in this instant."""
        if not np.isfinite(r.train_start):
            return False
        if not r.holding.training:
            return r.done_at > now
        last = r.round == self.inst.jobs[r.job].rounds - 1
        return r.holding.train_end + (self.jobs[r.job].save if last else 0.0) > now

    def _out_of_memory(self, rnd: _Round, now: float) -> bool:
        """Execution, on actual values: whether the actual memory of the rounds holding
        memory on one of the round's GPUs plus its own exceeds that GPU's (relative tolerance
        1e-9, as the checker's)."""
        own = self.memory[rnd.job]
        for g in rnd.gpus:
            cap = self.inst.gpus[g].memory
            if cap is None:
                continue
            need = own + sum(
                self.memory[r.job] for r in self.holders[g] if self._holds_memory(r, now)
            )
            if need > cap + 1e-9 * max(1.0, need):
                return True
        return False

    def _may_train(self, rnd: _Round, g: int) -> bool:
        trainers = self.trainers[g]
        if not self._memory_fits(rnd, g):
            return False
        if not trainers:
            return True
        if self.inst.cluster.space_sharing:  # whichever of the two was placed first
            return (
                len(trainers) == 1
                and len(rnd.gpus) == len(trainers[0].gpus) == 1
                and self.inst.colocated_rate(rnd.job, trainers[0].job, g) is not None
            )
        if not rnd.share or any(len(r.gpus) > 1 for r in trainers):
            return False
        load = self.jobs[rnd.job].util + sum(self.jobs[r.job].util for r in trainers)
        return load <= (self.inst.cluster.share_cap or 1.0) + 1e-9

    def _admit(self, now: float) -> None:
        """Start training every launched round whose GPUs allow it (admission on
        predictions), in launch order; a round whose actual memory overflows fails."""
        started = True
        while started:
            started = False
            for rnd in list(self.waiting_train):
                if all(self._may_train(rnd, g) for g in rnd.gpus):
                    self.waiting_train.remove(rnd)
                    if self.misses and self._out_of_memory(rnd, now):
                        self._fail(rnd, now)
                    else:
                        self._train(rnd, now)
                        started = True

    def _fail(self, rnd: _Round, now: float) -> None:
        """The round ran out of memory at its training start: its tasks are recorded as a
        failed attempt, its GPUs released, its job waits again for the same round."""
        for failed in self.on_fail:
            failed(rnd.job, rnd.gpus, rnd.start, now)
        self._release(rnd, now)
        job = self.jobs[rnd.job]
        job.failures += 1
        job.waiting = True
        self.blocked[rnd.job] = now

    def _train(self, rnd: _Round, now: float) -> None:
        rnd.train_start = now
        rnd.remaining, rnd.since = rnd.pace, now
        rnd.holding.training = True
        for trains in self.on_train:
            trains(rnd.job, now)
        for g in rnd.gpus:
            if not self.trainers[g]:
                self.train_since[g] = now
            self.trainers[g].append(rnd)
            if not rnd.flows:
                self._reflow(g, now)
        if rnd.flows:
            for h, n in rnd.flows.items():
                self.link_load[h] = self.link_load.get(h, 0) + n
            self.flowing.append(rnd)
            self._relink(now)

    def _set_rate(self, r: _Round, rate: float, now: float) -> None:
        """Account the round's progress up to ``now`` and (re)schedule its training end at
        ``rate``."""
        r.remaining -= (now - r.since) * r.rate
        r.since, r.rate = now, rate
        r.version += 1
        end = now + max(0.0, r.remaining) / r.rate
        r.holding.train_end = end
        self.push(end, _TRAINED, (r, r.version))

    def _reflow(self, g: int, now: float) -> None:
        """Update the progress rates of the rounds training on ``g`` (processor sharing
        among single-task rounds by actual utilisation, or with space sharing each at its
        co-location rate next to the other; a multi-GPU round trains alone at rate 1, or at
        its link-contention rate)."""
        trainers = self.trainers[g]
        load = sum(self.util[r.job] for r in trainers)
        rate = 1.0 / max(1.0, load)
        for r in trainers:
            if len(r.gpus) > 1:
                if not r.version and not r.flows:
                    self._set_rate(r, 1.0, now)  # fixed end
                continue
            if self.inst.cluster.space_sharing:
                rate = self._space_rate(r, g)
            self._set_rate(r, rate, now)

    def _space_rate(self, r: _Round, g: int) -> float:
        """The rate of single-task round ``r`` on ``g`` under space sharing: 1 alone, its
        co-location rate next to the one other round training there (admission allows no
        more, nor an unrated pair)."""
        others = [o for o in self.trainers[g] if o is not r]
        if not others:
            return 1.0
        rate = self.inst.colocated_rate(r.job, others[0].job, g)
        assert len(others) == 1 and rate is not None  # admission (_may_train)
        return rate

    def _relink(self, now: float) -> None:
        """Update the rates of the rounds with flows (link contention): a round whose busiest
        worker link carries F flows (its own and the other training rounds'), n of them its
        own on its busiest link by its own flows, trains for pace + flow_time·(F − n) at
        constant load: rate pace / (pace + flow_time·(F − n))."""
        load = self.link_load
        for r in self.flowing:
            extra = max(load[h] for h in r.flows) - max(r.flows.values())
            c = self.flow_time[r.job]
            rate = 1.0 if extra <= 0 or c <= 0 else r.pace / (r.pace + c * extra)
            if not r.version or rate != r.rate:
                self._set_rate(r, rate, now)

    def _trained(self, rnd: _Round, now: float) -> None:
        rnd.version += 1  # no later TRAINED event counts
        rnd.holding.training = False
        job = self.jobs[rnd.job]
        last = rnd.round == self.inst.jobs[rnd.job].rounds - 1
        rnd.done_at = now + (job.save if last else 0.0)
        for g in rnd.gpus:
            self.trainers[g].remove(rnd)
            if not self.trainers[g]:
                for trained in self.on_trained:
                    trained(g, self.train_since[g], now)
            if not rnd.flows:
                self._reflow(g, now)
        if rnd.flows:
            self.flowing.remove(rnd)
            for h, n in rnd.flows.items():
                self.link_load[h] -= n
            self._relink(now)
        self.push(rnd.done_at, _DONE, rnd)

    def _release(self, rnd: _Round, now: float) -> None:
        for g in rnd.gpus:
            self.holders[g].remove(rnd)
            if not self.holders[g]:
                for held in self.on_held:
                    held(g, self.held_since[g], now)
                (self.vacant if self.event_driven else self.unreported).add(g)

    def _done(self, rnd: _Round, now: float) -> None:
        self._release(rnd, now)
        job = self.jobs[rnd.job]
        job.rounds_done += 1
        if job.rounds_done == self.inst.jobs[rnd.job].rounds:
            del self.active[rnd.job]
            self.job_done(rnd.job, now)
        else:
            job.waiting = True
