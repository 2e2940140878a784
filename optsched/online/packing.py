"""Space sharing: Gavel's packed policies (Narayanan et al., OSDI'20, §3.1) as cluster
policies (:mod:`optsched.online.cluster`).

On an instance with ``space_sharing`` (models/cluster-execution.md), two single-task rounds
whose workloads have co-location rates on a GPU's type may train on it together, each at its
rate (its throughput next to the other over alone; Gavel's pairwise throughputs in the
catalog).

**fifo-packed** (``fifo_packed``, ``FIFOPolicyWithPacking``) takes the waiting jobs by
arrival:

1. a job starts its round on the K vacant GPUs it runs fastest on (compute + sync, then
   index: ``fifo-perf``'s choice);
2. when too few GPUs are vacant, a single-task job instead joins the GPU held by one
   single-task round (of another job) with which its *combined normalised throughput*, the
   sum of the two co-location rates, is largest, if that sum exceeds ``threshold`` (Gavel's
   1.5: "only make a packing decision if combined normalized throughput would provide a
   significant gain");
3. the first job that can do neither stops the queue (FIFO: no job overtakes it).

**max-min-fairness-packed** (``max_min_fairness_packed``): the max-min allocation LP with
a column for every pair of one-GPU jobs on every type (:func:`~optsched.exact.allocation.
max_min_packed`; time alone X[j, t] and time together Y[(j, k), t]), solved as
``max-min-fairness`` solves its LP (on a change of the active jobs, at most every ``period``
seconds, or when no GPU is held), and realised by Gavel's priority rule extended to pairs:
at each decision the options of the waiting jobs (alone on type t, or with a job of kind b
on type t) are taken in decreasing priority share ÷ share received since the solve (∞
before any; ties: the larger share, then the earlier arrival), each job once. A job starts
alone on K vacant GPUs of the option's type while there are any (work-conserving: a pair
would slow it, and its partner, while a GPU idles), else, for a pair, next to a job of the
partner's kind that holds a GPU of that type alone (running, or started alone in this
decision). The received shares follow each round: a job joined by a partner, or left alone
by it, counts from then on for the pair, or alone. Then (``backfill``) vacant GPUs go to the
jobs still waiting, by arrival, on their fastest type. ``fill=throughput`` (not Gavel's)
takes, among the max-min optimal allocations, one of the most total normalised throughput,
so that jobs share a GPU only where that adds throughput.

Both read no remaining work: they are non-clairvoyant. Differences from Gavel's simulator:
a pair shares for one round of each job (our rounds, not 360 s leases), and a job whose
partner finishes its round goes on alone; Gavel's data has co-location rates for single-GPU
jobs only (its multi-GPU pairs are all 0), so only single-task rounds pack.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.errors import InputError
from optsched.exact.allocation import AllocationProblem, Fill, max_min_packed
from optsched.instance import Instance
from optsched.online.cluster import ClusterJob, ClusterView
from optsched.online.engine import Decision
from optsched.options import Options, choice, number, switch
from optsched.registry import register

#: What a job's round does: ("alone", type) or ("pair", partner's kind of job, type).
Option = tuple[Any, ...]


def _gpu_type(option: Option) -> int:
    """The GPU type (index) an option runs on."""
    return int(option[-1])


@dataclass
class FIFOPacked:
    """Gavel's ``fifo_packed`` (module docstring)."""

    threshold: float = 1.5
    name: str = "fifo-packed"
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))
    execution: str = "cluster"
    tick: float | None = None
    event_driven: bool = True
    packed: int = 0  # rounds started next to another

    def validate(self, instance: Instance) -> None:
        _needs_space_sharing(self.name, instance)

    def decide(self, view: ClusterView) -> list[Decision]:
        inst = view.instance
        vacant = set(view.vacant)
        # GPUs a single-task round may join: held by one single-task round
        lone = {
            g: rounds[0].job.index
            for g, rounds in enumerate(view.holders)
            if len(rounds) == 1 and rounds[0].tasks == 1
        }
        out: list[Decision] = []
        for job in view.waiting:
            j, k = job.index, job.tasks_per_round
            fastest = sorted(
                (inst.compute_of(j, g) + inst.sync_of(j, g), g)
                for g in vacant
                if inst.compute_of(j, g) < float("inf")
            )
            if len(fastest) >= k:
                gpus = tuple(g for _, g in fastest[:k])
                vacant.difference_update(gpus)
                out.append((j, gpus))
                if k == 1:  # a later job may pack next to it
                    lone[gpus[0]] = j
                continue
            best, best_gain = None, self.threshold
            for g, other in lone.items() if k == 1 else ():
                mine, theirs = inst.colocated_rate(j, other, g), inst.colocated_rate(other, j, g)
                if mine is not None and theirs is not None and mine + theirs > best_gain:
                    best, best_gain = g, mine + theirs
            if best is None:
                break
            del lone[best]
            self.packed += 1
            out.append((j, (best,), True))
        return out

    def report(self) -> dict[str, int]:
        """How many rounds started next to another round."""
        return {"packed_rounds": self.packed}


def _needs_space_sharing(name: str, instance: Instance) -> None:
    if not instance.cluster.space_sharing:
        raise InputError(
            f"{name} needs an instance with space_sharing (instance@2; --space-sharing for "
            "a trace)"
        )


@dataclass
class PackedMaxMin:
    """Gavel's ``max_min_fairness_packed`` (module docstring)."""

    period: float = 0.0
    backfill: bool = True
    fill: Fill = "none"
    name: str = "max-min-fairness-packed"
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))
    execution: str = "cluster"
    tick: float | None = None
    event_driven: bool = True
    solves: int = 0
    lp_seconds: float = 0.0
    packed: int = 0
    _types: list[str] = field(default_factory=list, repr=False)
    _capacity: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _of_type: list[list[int]] = field(default_factory=list, repr=False)
    _type_of: list[int] = field(default_factory=list, repr=False)  # each GPU's type index
    _pace: list[list[float]] = field(default_factory=list, repr=False)
    _active: frozenset[int] = frozenset()
    _solved_at: float = -math.inf
    _kind: list[Hashable] = field(default_factory=list, repr=False)
    _shares: dict[Hashable, list[tuple[Option, float]]] = field(default_factory=dict, repr=False)
    _received: dict[tuple[int, Option], float] = field(default_factory=dict, repr=False)
    #: per job with a round held: its option, since when, and its partner's job (a pair)
    _running: dict[int, tuple[Option, float, int | None]] = field(default_factory=dict, repr=False)

    def validate(self, instance: Instance) -> None:
        _needs_space_sharing(self.name, instance)
        self._types = sorted({gpu.type for gpu in instance.gpus})
        self._of_type = [
            [g for g, gpu in enumerate(instance.gpus) if gpu.type == t] for t in self._types
        ]
        position = {t: i for i, t in enumerate(self._types)}
        self._type_of = [position[gpu.type] for gpu in instance.gpus]
        self._capacity = np.array([len(gs) for gs in self._of_type], dtype=float)
        # a round's time on each type: its slowest GPU there (trace types are uniform)
        self._pace = [
            [
                max(instance.compute_of(j, g) + instance.sync_of(j, g) for g in gs)
                for gs in self._of_type
            ]
            for j in range(instance.n_jobs)
        ]
        # identical jobs, one row of the LP: workload (its co-location), GPUs, weight, times
        self._kind = [
            (job.workload, job.tasks_per_round, job.weight, tuple(self._pace[j]))
            for j, job in enumerate(instance.jobs)
        ]
        for j, job in enumerate(instance.jobs):
            if not any(
                len(gs) >= job.tasks_per_round and pace < math.inf
                for gs, pace in zip(self._of_type, self._pace[j], strict=True)
            ):
                raise InputError(
                    f"policy {self.name!r}: job {job.id!r} needs {job.tasks_per_round} GPUs "
                    "of one type it runs on (a round runs on one type)"
                )

    # -- the allocation ------------------------------------------------------------------

    def _solve(self, view: ClusterView, active: list[ClusterJob]) -> None:
        """Solve the packed max-min LP over the active jobs, identical jobs (same workload,
        GPUs, weight and round times) as one row (exact: :func:`max_min_packed`)."""
        inst = view.instance
        rows: dict[Hashable, list[ClusterJob]] = {}
        for job in active:
            rows.setdefault(self._kind[job.index], []).append(job)
        kinds = list(rows)
        lead = [rows[kind][0].index for kind in kinds]
        count = np.array([len(rows[kind]) for kind in kinds], dtype=float)
        pace = np.array([self._pace[j] for j in lead])
        rates = np.where(np.isfinite(pace), 1.0 / pace, 0.0)
        scale = np.array([inst.jobs[j].tasks_per_round for j in lead], dtype=float)
        weights = np.array([inst.jobs[j].weight for j in lead])
        problem = AllocationProblem(rates, scale, self._capacity, weights, count)
        reference = problem.reference()
        singles = [r for r, j in enumerate(lead) if inst.jobs[j].tasks_per_round == 1]
        pairs, together = [], []
        for x, a in enumerate(singles):
            for b in singles[x:]:
                ja, jb = lead[a], lead[b]
                both = [
                    (
                        inst.colocated_rate(ja, jb, gs[0]) or 0.0,
                        inst.colocated_rate(jb, ja, gs[0]) or 0.0,
                    )
                    for gs in self._of_type
                ]
                if any(ra + rb > 1 for ra, rb in both):
                    pairs.append((a, b))
                    together.append(both)
        result = max_min_packed(
            problem,
            reference,
            np.array(pairs, dtype=int).reshape(-1, 2),
            np.array(together, dtype=float).reshape(len(pairs), len(self._types), 2),
            fill=self.fill,
        )
        shares: dict[Hashable, list[tuple[Option, float]]] = {kind: [] for kind in kinds}
        for r, kind in enumerate(kinds):
            for t in np.nonzero(result.x[r] > 1e-9)[0]:
                shares[kind].append((("alone", int(t)), float(result.x[r, t])))
        for p, t in zip(*np.nonzero(result.y > 1e-9), strict=True):
            a, b = pairs[p]
            # each job's share of the pair time (both sides are one row's jobs when a = b)
            sides = [(a, b)] if a == b else [(a, b), (b, a)]
            for mine, theirs in sides:
                share = float(result.y[p, t]) * (2 if a == b else 1) / count[mine]
                shares[kinds[mine]].append((("pair", kinds[theirs], int(t)), share))
        self._shares = shares
        self._received = {}
        now = view.time
        self._running = {j: (o, now, partner) for j, (o, _, partner) in self._running.items()}
        self._solved_at = now
        self._active = frozenset(job.index for job in active)
        self.solves += 1
        self.lp_seconds += result.seconds

    def _priority(self, j: int, option: Option, share: float, now: float) -> float:
        """Share over the share received since the solve (∞ before any)."""
        got = self._received.get((j, option), 0.0)
        running = self._running.get(j)
        if running is not None and running[0] == option:
            got += now - running[1]
        span = now - self._solved_at
        return math.inf if got <= 0 or span <= 0 else share / (got / span)

    def _switch(self, j: int, option: Option, partner: int | None, now: float) -> None:
        """Job ``j``'s round does ``option`` from ``now`` (with ``partner``): the time since
        its last switch counts for what it did before."""
        before = self._running.get(j)
        if before is not None:
            key = (j, before[0])
            self._received[key] = self._received.get(key, 0.0) + now - before[1]
        self._running[j] = (option, now, partner)

    # -- decisions -----------------------------------------------------------------------

    def decide(self, view: ClusterView) -> list[Decision]:
        now = view.time
        holding = {h.job.index: h.job for rounds in view.holders for h in rounds}
        for j, (option, _, partner) in list(self._running.items()):
            if j not in holding:  # its round has ended (now: decisions follow every event)
                self._switch(j, option, None, now)
                del self._running[j]
            elif partner is not None and partner not in holding:  # its partner's has
                self._switch(j, ("alone", _gpu_type(option)), None, now)
        active = {job.index: job for job in view.waiting} | holding
        if set(active) != self._active and (now - self._solved_at >= self.period or not holding):
            self._solve(view, sorted(active.values(), key=lambda job: job.index))
        is_vacant = set(view.vacant)
        vacant = [[g for g in gs if g in is_vacant] for gs in self._of_type]
        type_of = self._type_of
        # per kind of job: the GPUs held by one single-task round of such a job (joinable)
        # with that job, and the waiting jobs (arrival order)
        lone: dict[Hashable, list[tuple[int, int]]] = {}
        for g, rounds in enumerate(view.holders):
            if len(rounds) == 1 and rounds[0].tasks == 1:
                holder = rounds[0].job.index
                lone.setdefault(self._kind[holder], []).append((g, holder))
        waiting: dict[Hashable, list[ClusterJob]] = {}
        for job in view.waiting:
            waiting.setdefault(self._kind[job.index], []).append(job)
        joinable_on = {kind: {type_of[g] for g, _ in gs} for kind, gs in lone.items()}

        def possible(job: ClusterJob, option: Option) -> bool:
            """Whether the option could start now (before any other decision)."""
            t = _gpu_type(option)
            if option[0] == "alone" or vacant[t]:  # a pair on an idle GPU: alone
                return len(vacant[t]) >= job.tasks_per_round
            return t in joinable_on.get(option[1], ())

        options = []
        for order, job in enumerate(view.waiting):
            for option, share in self._shares.get(self._kind[job.index], ()):
                if possible(job, option):
                    prio = self._priority(job.index, option, share, now)
                    options.append((-prio, -share, order, job, option))
        options.sort(key=lambda o: o[:3])
        out: list[Decision] = []
        started: set[int] = set()

        def begin(j: int, gpus: tuple[int, ...], option: Option, partner: int | None) -> None:
            out.append((j, gpus, True) if partner is not None else (j, gpus))
            started.add(j)
            self._switch(j, option, partner, now)
            if partner is not None:
                self.packed += 1

        for *_, job, option in options:
            j, k = job.index, job.tasks_per_round
            if j in started:
                continue
            # work-conserving: a pair's job runs alone while a GPU of its type is vacant
            t = _gpu_type(option)
            if len(vacant[t]) >= k:
                gpus = tuple(vacant[t][:k])
                del vacant[t][:k]
                begin(j, gpus, ("alone", t), None)
                if k == 1:  # a partner may join it in this decision
                    lone.setdefault(self._kind[j], []).append((gpus[0], j))
                continue
            if option[0] == "alone":
                continue
            kind = option[1]
            joinable = [(g, holder) for g, holder in lone.get(kind, ()) if type_of[g] == t]
            if joinable:
                g, holder = joinable[0]
                lone[kind].remove((g, holder))  # the GPU now holds two rounds
                begin(j, (g,), option, holder)
                self._switch(holder, ("pair", self._kind[j], t), j, now)
        if self.backfill:
            for job in view.waiting:
                if job.index in started:
                    continue
                fits = [
                    (self._pace[job.index][t], t)
                    for t in range(len(self._types))
                    if len(vacant[t]) >= job.tasks_per_round
                    and self._pace[job.index][t] < math.inf
                ]
                if fits:
                    _, t = min(fits)
                    gpus = tuple(vacant[t][: job.tasks_per_round])
                    del vacant[t][: job.tasks_per_round]
                    begin(job.index, gpus, ("alone", t), None)
        return out

    def report(self) -> dict[str, Any]:
        """The LP solves, their seconds and the rounds started next to another."""
        return {"solves": self.solves, "lp_seconds": self.lp_seconds, "packed_rounds": self.packed}


@dataclass(frozen=True)
class PackedOptions(Options):
    """Options of ``fifo-packed``."""

    threshold: float = number(
        "pack a job next to a running one only if their co-location rates sum above this "
        "(default 1.5, Gavel's)",
        1.5,
        low=0.0,
        high=3.0,
    )


@register(
    "fifo-packed",
    kind="simulate",
    modes=("gang",),
    options=PackedOptions,
    description="Gavel's fifo_packed: FIFO on the fastest vacant GPUs, else co-located with "
    "a running job at Gavel's pairwise throughputs (space sharing; gang)",
)
def _fifo_packed(options: PackedOptions, seed: int) -> FIFOPacked:
    return FIFOPacked(threshold=options.threshold)


@dataclass(frozen=True)
class PackedMaxMinOptions(Options):
    """Options of ``max-min-fairness-packed``."""

    period: float = number(
        "seconds at least between two solves (default 0: on every change of the active "
        "jobs; Gavel's rate limit is 1920)",
        0.0,
    )
    backfill: bool = switch(
        "give vacant GPUs left after the allocation's options to waiting jobs by arrival "
        "(default 1)",
        True,
    )
    fill: Fill = choice(
        "none (the LP's optimum, default, as Gavel) or throughput (then the most total "
        "normalised throughput among the max-min optimal allocations: jobs share a GPU "
        "only where that adds throughput)",
        ("none", "throughput"),
    )


@register(
    "max-min-fairness-packed",
    kind="simulate",
    modes=("gang",),
    options=PackedMaxMinOptions,
    description="Gavel's max_min_fairness_packed: the max-min allocation LP with pairs of "
    "one-GPU jobs sharing a GPU at Gavel's pairwise throughputs (space sharing; gang)",
)
def _max_min_packed(options: PackedMaxMinOptions, seed: int) -> PackedMaxMin:
    return PackedMaxMin(period=options.period, backfill=options.backfill, fill=options.fill)
