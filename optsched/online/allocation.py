"""Round-based allocation policies (Gavel, Narayanan et al., OSDI'20): an exact allocation
LP over the active jobs × GPU types (:mod:`optsched.exact.allocation`), realised by Gavel's
priority rule, in gang mode on the one event engine.

**Allocation.** A job's speed on a GPU type is 1 / (its round's compute + sync there) rounds
per second (the K tasks of a gang round on K GPUs of that type). The policy (re)solves its
LP over every arrived, unfinished job when the set of jobs has changed (an arrival or a
completion) and at least ``period`` seconds have passed since the last solve, or when no
GPU is busy (an idle cluster never waits for the period). ``period=0`` solves on every
change. With ``warm=1`` (the default) one LP is kept for the run and edited at each solve
(:class:`~optsched.exact.allocation_sequence.AllocationSequence`), each solve starting from
the last one's basis.

**Realisation** (Gavel's mechanism, §5): each job's *received share* on type t is the time
its rounds have held GPUs of type t since the allocation was computed, divided by that time
span; its *priority* on t is X[j, t] / received share (∞ while it has received nothing
there). At each decision, the waiting jobs' (job, type) pairs with X[j, t] > 0 are taken in
decreasing priority (ties: the larger *deficit*, the GPU-time its earlier allocations
promised and did not give, carried across solves as Gavel carries its deficits; then the
larger X, the earlier arrival) and a job starts its round on K idle GPUs of that type when it
has not started at this instant and they are free (one that does not fit is skipped). With
``backfill=1`` (the default, as Gavel does), idle GPUs left over then go to waiting allocated
jobs by arrival, each on its fastest type with room.

Policies (the registered names; Gavel's names of the heterogeneity-aware versions in
brackets; ``agnostic=1`` gives the versions without ``_perf``, the LP then seeing every type
as fast as the job's fastest):

- ``max-min-fairness`` (``max_min_fairness_perf``, LAS): maximise the least
  K_j · throughput_j / (w_j · prop_j), prop_j being the job's throughput with its time split
  over the types as their GPU counts (Gavel's normalisation: GPU-time is shared, so a job on
  K GPUs gets 1/K of the time of a one-GPU job); non-clairvoyant.
- ``max-throughput`` (``max_sum_throughput_perf``): the largest Σ_j K_j · throughput_j /
  prop_j (Gavel sums raw steps per second, a unit our model does not have); non-clairvoyant.
- ``min-makespan`` (``min_total_duration_perf``): the allocation finishing every job's
  remaining rounds soonest, one exact LP (Gavel bisects to 5 %); clairvoyant.
- ``finish-time-fairness`` (``finish_time_fairness_perf``, Themis' ρ): the least max ρ_j,
  ρ_j = (elapsed_j + remaining_j / throughput_j) / (C_j + remaining_j / iso_j), iso_j the
  job's throughput on a 1/m share and C_j the isolated time of its work done so far, as
  Gavel computes them (:meth:`AllocationPolicy._rho_terms`); clairvoyant.
- ``isolated`` (``isolated``): every job 1/m of each type, no LP; non-clairvoyant.

Differences from Gavel's simulator, by design: rounds are our model's (a round holds its K
GPUs for its compute + sync, not a fixed 360 s slot), decisions are event-driven (a freed GPU
is reassigned at once, not at the next round boundary), the received share is measured per
job since the allocation (Gavel: per type, with a 180 s prior), and the (job, type) pairs form
one queue (Gavel walks per-type lists in a fixed type order). ``period=1920`` gives Gavel's
rate limit on re-solving; a new job then waits for the next solve, unless the cluster is idle.
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, KeysView
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from optsched.errors import InputError
from optsched.exact.allocation import (
    Allocation,
    AllocationProblem,
    isolated_share,
    max_min_partitioned,
    max_min_share,
    max_total_share,
    min_makespan,
    min_max_rho,
)
from optsched.exact.allocation_sequence import AllocationSequence
from optsched.instance import Instance
from optsched.online.engine import Decision
from optsched.online.simulator import JobState, View, WaitingQueue, speed_classes
from optsched.options import Options, choice, count, number, switch
from optsched.registry import register

Objective = Literal[
    "max-min-fairness", "max-throughput", "min-makespan", "finish-time-fairness", "isolated"
]
#: A job state's rounds done, read from many at once.
_ROUNDS_DONE = operator.attrgetter("rounds_done")

#: The objectives that read the jobs' remaining rounds.
CLAIRVOYANT: frozenset[str] = frozenset({"min-makespan", "finish-time-fairness"})


@dataclass(frozen=True)
class AllocationInForce:
    """An allocation in force from ``start``: its jobs (indices, in row order), the rates
    its LP saw, the throughputs and objective value it promised, and the objective as a
    function of the jobs' throughputs (and which of them to count)."""

    start: float
    jobs: np.ndarray
    rates: np.ndarray
    theta: np.ndarray
    promised: float
    value: Callable[..., float]


def _value_of(objective: str, norm: np.ndarray, *terms: np.ndarray) -> Callable[..., float]:
    """``objective`` as a function of the jobs' throughputs θ (over the jobs in ``keep``):
    max-min min θ_j / norm_j (norm: reference × weight); max-throughput Σ θ_j / norm_j
    (reference ÷ weight); isolated min θ_j; min-makespan max R_j / θ_j; finish-time
    fairness max (e_j + R_j / θ_j) / I_j (``terms``: R, or e, R, I)."""

    def value(theta: np.ndarray, keep: np.ndarray | None = None) -> float:
        t, of, kept = theta, norm, terms
        if keep is not None:
            t, of, kept = theta[keep], norm[keep], tuple(a[keep] for a in terms)
        with np.errstate(divide="ignore"):
            if objective == "max-min-fairness":
                return float((t / of).min())
            if objective == "max-throughput":
                return float((t / of).sum())
            if objective == "isolated":
                return float(t.min())
            if objective == "min-makespan":
                return float((kept[0] / t).max())
            elapsed, remaining, ideal = kept
            return float(((elapsed + remaining / t) / ideal).max())

    return value


class _JobTable:
    """What the policy keeps per job index across solves, grown by doubling: each job's
    round time per GPU type (compute + sync, ∞ where it cannot run), GPUs, weight and
    deficit, the type and end of its latest round (end −∞: none yet), and the work its
    promised throughputs would have done while it was allocated and the work its rounds
    did."""

    def __init__(self, n_types: int) -> None:
        self.known = np.zeros(0, dtype=bool)
        self.pace = np.zeros((0, n_types))
        self.k = np.zeros(0, dtype=np.int64)
        self.weight = np.zeros(0)
        self.deficit = np.zeros(0)
        self.latest_type = np.zeros(0, dtype=np.int64)
        self.latest_end = np.zeros(0)
        self.promised = np.zeros(0)
        self.realised = np.zeros(0)

    def add(self, jobs: list[JobState], idx: np.ndarray, class_of: np.ndarray) -> None:
        """Enter the jobs (``idx``: their indices) not seen before."""
        if len(idx) and idx.max() >= len(self.known):
            size = max(2 * len(self.known), int(idx.max()) + 1)
            for name, fill in (
                ("known", False),
                ("pace", math.inf),
                ("k", 0),
                ("weight", 0.0),
                ("deficit", 0.0),
                ("latest_type", 0),
                ("latest_end", -math.inf),
                ("promised", 0.0),
                ("realised", 0.0),
            ):
                old = getattr(self, name)
                grown = np.full((size, *old.shape[1:]), fill, dtype=old.dtype)
                grown[: len(old)] = old
                setattr(self, name, grown)
        for i in np.flatnonzero(~self.known[idx]).tolist():
            job = jobs[i]
            j = job.index
            if job.sync_by_class is not None:
                self.pace[j] = job.by_class + job.sync_by_class
            else:
                np.minimum.at(self.pace[j], class_of, job.compute + job.sync)
            self.k[j], self.weight[j], self.known[j] = job.tasks_per_round, job.weight, True


@dataclass
class AllocationPolicy:
    """A round-based allocation policy (module docstring) for ``objective``."""

    objective: Objective = "max-min-fairness"
    period: float = 0.0
    backfill: bool = True
    fill: Literal["none", "throughput"] = "none"
    agnostic: bool = False
    solution: Literal["central", "vertex"] = "vertex"
    parts: int = 1
    warm: bool = True
    name: str = ""
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))
    clairvoyant: bool = False
    #: LP solves so far, their wall time (s), and when the last one was; with ``parts``, the
    #: certified relative gap of each solve
    gaps: list[float] = field(default_factory=list)
    solves: int = 0
    lp_seconds: float = 0.0
    solved_at: float = -math.inf
    _jobs: frozenset[int] = frozenset()
    #: how many of ``_jobs`` (the jobs of the last solve) have completed since
    _left: int = 0
    #: per row (the active jobs at the last solve, by arrival): job index, state, GPUs, its
    #: share per type and the types it can run on, round time per type, time held per type
    #: since the solve, its deficit, when it completed, and a version that outdates its
    #: queue entries
    _row: dict[int, int] = field(default_factory=dict, repr=False)
    _state: list[JobState] = field(default_factory=list, repr=False)
    _k: list[int] = field(default_factory=list, repr=False)
    _share: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    _runnable: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool), repr=False)
    _pace_rows: list[list[float]] = field(default_factory=list, repr=False)
    _held: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    _row_deficit: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _row_deficit_list: list[float] = field(default_factory=list, repr=False)
    _idx: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False)
    _done_at: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _version: list[int] = field(default_factory=list, repr=False)
    #: per type: the waiting jobs it has a share for, by priority (a heap of (−priority,
    #: −deficit, −share, row, version)), and those that can run there at all, by arrival
    #: (backfill); each job's deficit (:meth:`_carry_deficits`)
    _by_priority: list[list[tuple[float, float, float, int, int]]] = field(
        default_factory=list, repr=False
    )
    _by_arrival: list[list[tuple[int, int]]] = field(default_factory=list, repr=False)
    #: batches queued in bulk not yet in the backfill heaps: (rows, versions, where each
    #: can run)
    _arrivals_pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list, repr=False
    )
    #: and those queued one by one: (row, version)
    _arrivals_one: list[tuple[int, int]] = field(default_factory=list, repr=False)
    _queued: set[int] = field(default_factory=set, repr=False)
    #: the allocation in force, and per solve (start, end, promised, realised)
    _interval: AllocationInForce | None = field(default=None, repr=False)
    realisation: list[tuple[float, float, float, float]] = field(default_factory=list)
    _starved: int = 0
    _last_event: float = 0.0
    _class_of: np.ndarray = field(default_factory=lambda: np.zeros(0, int), repr=False)
    _capacity: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _table: _JobTable | None = field(default=None, repr=False)
    #: finish-time fairness: each job's isolated time of the work done, and at the last
    #: solve its remaining rounds and isolated rate (Gavel's cumulative isolated time)
    _isolated_time: dict[int, float] = field(default_factory=dict, repr=False)
    _last_isolated: dict[int, tuple[float, float]] = field(default_factory=dict, repr=False)
    #: the LP edited and solved from its last basis at each solve (``warm``)
    _sequence: AllocationSequence | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.clairvoyant = self.objective in CLAIRVOYANT
        self.name = self.name or self.objective

    def validate(self, instance: Instance) -> None:
        """Refuse jobs that fit on no single GPU type (a round takes K GPUs of one type)."""
        class_of, n_classes = speed_classes(instance)
        of_class = np.array(class_of)
        counts = np.bincount(of_class, minlength=n_classes)
        for j, job in enumerate(instance.jobs):
            compute, _ = instance.row(j)
            if not any(
                counts[c] >= job.tasks_per_round and np.isfinite(compute[of_class == c]).all()
                for c in range(n_classes)
            ):
                raise InputError(
                    f"policy {self.name!r}: job {job.id!r} needs {job.tasks_per_round} GPUs "
                    "of one type (an allocation policy runs a round on one type) and no type "
                    "it runs on has that many"
                )

    # -- the allocation --------------------------------------------------------------------

    def _solve(self, view: View, jobs: list[JobState]) -> None:
        n = len(jobs)
        if self._table is None:
            self._table = _JobTable(len(self._capacity))
        table = self._table
        idx = np.fromiter(view.active_ids, np.int64, n)  # the jobs' indices, in their order
        keys = idx.tolist()
        table.add(jobs, idx, self._class_of)
        pace = table.pace[idx]
        rates = 1.0 / pace  # 0 where it cannot run (∞)
        if self.agnostic:  # every type as fast as the job's fastest (Gavel: as a V100)
            rates = np.where(rates > 0, rates.max(axis=1, keepdims=True), 0.0)
        scale = table.k[idx].astype(float)
        weights = table.weight[idx]
        problem = AllocationProblem.trusted(rates, scale, self._capacity, weights)
        central = self.solution == "central"
        self._terms: tuple[np.ndarray, ...] = ()
        reference = problem.reference()
        sequence = self._warm_sequence()
        if self.objective == "isolated":
            result = isolated_share(problem)
        elif self.objective in ("max-min-fairness", "max-throughput"):
            if sequence is not None:
                result = sequence.solve(problem, keys, reference=reference)
            elif self.objective == "max-min-fairness":
                result = self._max_min(problem, reference, central)
            else:
                result = max_total_share(problem, reference, central=central)
        else:
            assert view.oracle is not None
            done = np.fromiter(map(_ROUNDS_DONE, jobs), float, n)
            remaining = view.oracle.rounds_of(idx) - done
            if self.objective == "min-makespan":
                self._terms = (remaining,)
                if sequence is not None:
                    result = sequence.solve(problem, keys, remaining=remaining)
                else:
                    result = min_makespan(problem, remaining, central=central)
            else:
                self._terms = self._rho_terms(view, jobs, problem.proportional(), remaining)
                elapsed, _, ideal = self._terms
                if sequence is not None:
                    result = sequence.solve(
                        problem, keys, elapsed=elapsed, remaining=remaining, ideal=ideal
                    )
                else:
                    result = min_max_rho(problem, *self._terms, central=central)
        self._close_interval(view.time, carry=True)
        norm = reference / weights if self.objective == "max-throughput" else reference * weights
        value = _value_of(self.objective, norm, *self._terms)
        theta = problem.throughput(result.x)
        self._interval = AllocationInForce(view.time, idx, rates, theta, value(theta), value)
        self._idx = idx
        self._row = dict(zip(keys, range(n), strict=True))
        self._state = list(jobs)
        self._k = table.k[idx].tolist()
        self._share = result.x
        self._runnable = np.isfinite(pace)
        self._pace_rows = pace.tolist()
        # since now: a running round counts on
        m = len(self._capacity)
        self._held = np.zeros((n, m))
        end, latest = table.latest_end[idx], table.latest_type[idx]
        ahead = np.flatnonzero(end > view.time)
        self._held[ahead, latest[ahead]] = end[ahead] - view.time
        self._row_deficit = table.deficit[idx]
        self._row_deficit_list = self._row_deficit.tolist()
        self._done_at = np.full(n, math.inf)
        self._version = [0] * n
        self._by_priority = [[] for _ in range(m)]
        self._by_arrival = [[] for _ in range(m)]
        self._arrivals_pending = []
        self._arrivals_one = []
        self._queued = set()
        self.solved_at = view.time
        self.solves += 1
        self.lp_seconds += result.seconds

    def _warm_sequence(self) -> AllocationSequence | None:
        """The one LP that every solve edits and warm-starts (``warm``, at a vertex, not
        ``agnostic``, and for max-min without pieces or fill), made at the first solve;
        None: from scratch. The agnostic LPs see every type alike, so any split of a job's
        time over its types is optimal, and started from the last basis they kept more of
        it on the slowest type (Gavel's physical-cluster trace under max-min: 424 rounds on
        K80s against 304, makespan 35.1 h against 18.7 h; min-makespan's 2.2× longer)."""
        objective = self.objective
        if objective == "isolated" or not self.warm or self.agnostic or self.solution != "vertex":
            return None
        if objective == "max-min-fairness" and (self.parts > 1 or self.fill != "none"):
            return None
        if self._sequence is None:
            self._sequence = AllocationSequence(objective, self._capacity)
        return self._sequence

    def _max_min(
        self, problem: AllocationProblem, reference: np.ndarray, central: bool
    ) -> Allocation:
        """The max-min allocation: in ``parts`` POP-style pieces when asked and every job
        fits its piece's share of some type (the gap their duals certify recorded), else
        the whole LP."""
        if self.parts > 1:
            try:
                result = max_min_partitioned(problem, reference, self.parts, central=central)
            except InputError:  # a piece too small for some job: the whole LP
                self.gaps.append(0.0)
            else:
                self.gaps.append((result.upper - result.lower) / max(result.upper, 1e-300))
                return result
        return max_min_share(problem, reference, fill=self.fill, central=central)

    def finished(self, job: JobState, now: float) -> bool:
        """Note when a job completes (its realised share ends there); no key changes."""
        row = self._row.get(job.index)
        if row is not None:
            self._done_at[row] = now
        if job.index in self._jobs:
            self._left += 1
        self._last_event = max(self._last_event, now)
        return False

    def _close_interval(self, end: float, carry: bool = False) -> None:
        """Record the allocation in force until ``end``: what it promised and what the
        rounds realised, the same objective on each job's realised throughput (time held
        per type × its rate there, over the time from the solve to ``end`` or to its
        completion if earlier); with ``carry`` (before a new allocation), carry the
        deficits (:meth:`_carry_deficits`)."""
        interval, table = self._interval, self._table
        if interval is None or end <= interval.start:
            return
        assert table is not None  # made by the solve that made the interval
        stop = np.minimum(end, self._done_at)
        span = stop - interval.start
        keep = span > 0
        held = self._held_until(stop)
        if carry:
            self._carry_deficits(end, held)
        theta = np.full(len(span), np.nan)  # NaN where the interval is empty
        np.divide((held * interval.rates).sum(axis=1), span, out=theta, where=keep)
        mask: np.ndarray | None = None if keep.all() else keep  # None: every row
        if mask is None:
            jobs, spans, promised_rate, realised_rate = interval.jobs, span, interval.theta, theta
        else:
            jobs, spans = interval.jobs[mask], span[mask]
            promised_rate, realised_rate = interval.theta[mask], theta[mask]
        table.promised[jobs] += promised_rate * spans  # the jobs are distinct
        table.realised[jobs] += realised_rate * spans
        if len(jobs):
            realised = interval.value(theta, mask)
            self.realisation.append((interval.start, end, interval.promised, realised))
            self._starved += bool((realised_rate <= 0).any())

    def report(self) -> dict[str, Any]:
        """What the run did: LP solves and their time; the realisation of each allocation
        (:meth:`_close_interval`): per solve [start, end, promised, realised] and the
        time-weighted means of both; and ``tracking``, per job the work its rounds did
        over the work its promised throughputs would have done while it was allocated
        (mean, 10th percentile and minimum over the jobs)."""
        self._close_interval(self._last_event)
        self._interval = None
        rows = [r for r in self.realisation if math.isfinite(r[2]) and math.isfinite(r[3])]
        spans = np.array([b - a for a, b, _, _ in rows])
        out: dict[str, Any] = {"solves": self.solves, "lp_seconds": round(self.lp_seconds, 4)}
        if self.gaps:  # solved in pieces: the gap each solve's duals certify
            out["certified_gap"] = {
                "median": float(np.median(self.gaps)),
                "max": float(np.max(self.gaps)),
            }
        if rows and spans.sum() > 0:
            promised = np.array([r[2] for r in rows]) @ spans / spans.sum()
            realised = np.array([r[3] for r in rows]) @ spans / spans.sum()
            out["realisation"] = {
                "objective": self.objective,
                "promised_mean": float(promised),
                "realised_mean": float(realised),
                # intervals in which some allocated job received nothing; where that makes
                # the objective infinite (a makespan, a ρ) the interval's realised value is
                # null and the means leave it out
                "starved": self._starved,
                "intervals": [
                    [
                        round(a, 6),
                        round(b, 6),
                        round(p, 6) if math.isfinite(p) else None,
                        round(r, 6) if math.isfinite(r) else None,
                    ]
                    for a, b, p, r in self.realisation
                ],
            }
        table = self._table or _JobTable(0)
        allocated = table.promised > 0
        ratios = table.realised[allocated] / table.promised[allocated]
        if len(ratios):  # how closely each job's rounds tracked the shares it was promised
            out["tracking"] = {
                "jobs": len(ratios),
                "mean": float(ratios.mean()),
                "p10": float(np.percentile(ratios, 10)),
                "min": float(ratios.min()),
            }
        return out

    def _rho_terms(
        self, view: View, jobs: list[JobState], share: np.ndarray, remaining: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Finish-time fairness as Gavel states it: elapsed t_j (since arrival), remaining
        rounds R_j, and ideal_j = C_j + R_j / iso_j, where iso_j is the job's rate on a 1/m
        share of the cluster (m active jobs; at most all of its time, K_j GPUs at a time)
        and C_j the isolated time of the work done so far, accumulated at each solve at the
        isolated rate of the previous one."""
        total, m = float(self._capacity.sum()), len(jobs)
        scale = np.array([job.tasks_per_round for job in jobs], dtype=float)
        isolated = share * np.minimum(1.0, total / (m * scale))
        ideal = np.empty(m)
        for i, job in enumerate(jobs):
            before = self._last_isolated.get(job.index)
            if before is not None:
                self._isolated_time[job.index] = (
                    self._isolated_time.get(job.index, 0.0)
                    + (before[0] - remaining[i]) / before[1]
                )
            ideal[i] = self._isolated_time.get(job.index, 0.0) + remaining[i] / isolated[i]
        self._last_isolated = {
            job.index: (remaining[i], isolated[i]) for i, job in enumerate(jobs)
        }
        elapsed = np.array([view.time - job.arrival for job in jobs])
        return elapsed, remaining, ideal

    def _stale(self, view: View, jobs: KeysView[int]) -> bool:
        if not self._left and len(jobs) == len(self._jobs):
            return False  # none of the last solve's jobs has left, none has come: the same
        busy = len(view.idle) < len(view.gpu_ids)
        return not busy or view.time - self.solved_at >= self.period

    # -- the realisation -------------------------------------------------------------------

    def _held_until(self, at: float | np.ndarray) -> np.ndarray:
        """GPU-time per row and type held from the last solve until ``at`` (one time, or
        one per row): its rounds' times less the part of a running round still to come."""
        assert self._table is not None  # rows exist only after a solve
        held = self._held.copy()
        ahead = self._table.latest_end[self._idx] - at
        rows = np.flatnonzero(ahead > 0)
        held[rows, self._table.latest_type[self._idx[rows]]] -= ahead[rows]
        return held

    def _carry_deficits(self, now: float, held: np.ndarray) -> None:
        """Add to each allocated job's deficit the GPU-time its shares promised since the
        last solve minus the time its rounds ``held`` per type (Gavel keeps such deficits
        across resets to break ties): jobs left unserved by one allocation go first among
        equals under the next. (A completed job's deficit, held until its completion, is
        never read again.)"""
        shares = np.zeros(len(held))
        for c in range(self._share.shape[1]):  # summed type by type, in order
            shares += self._share[:, c]
        promised = (now - self.solved_at) * shares
        assert self._table is not None
        self._table.deficit[self._idx] = self._row_deficit + promised - held.sum(axis=1)

    def _enqueue(self, rows: list[int]) -> None:
        """Queue jobs that have just become waiting. A job's priority on type t is its
        share over the share it received since the solve, X / (held / span): the span is
        the same for every job (all were active at the solve), and a waiting job holds no
        GPU, so the key X / held stays valid until it starts again. Ties (every job not
        served since the solve has priority ∞) go to the larger deficit, then the larger
        share, then the earlier arrival."""
        if len(rows) < 8:  # one by one: numpy costs more than it saves
            for row in rows:
                self._enqueue_one(row)
            return
        at = np.array(rows, dtype=np.int64)
        versions = np.array([self._version[row] for row in rows], dtype=np.int64)
        share, held, runs = self._share[at], self._held[at], self._runnable[at]
        keys = np.full(share.shape, -math.inf)
        np.divide(-share, held, out=keys, where=held > 1e-9)
        # every (row, type) entry, by type and then as the heaps order them (the rows are
        # distinct, so the order is total): a sorted list is a heap as it stands
        typ, i = np.nonzero((runs & (share > 1e-9)).T)
        ranks = (at[i], -share[i, typ], -self._row_deficit[at[i]], keys[i, typ], typ)
        order = np.lexsort(ranks)
        entries = list(
            zip(
                *(column[order].tolist() for column in ranks[3::-1]),
                versions[i[order]].tolist(),
                strict=True,
            )
        )
        bounds = np.searchsorted(typ, np.arange(len(self._by_priority) + 1)).tolist()
        for c, by_priority in enumerate(self._by_priority):
            if bounds[c] == bounds[c + 1]:
                continue
            if by_priority:
                by_priority.extend(entries[bounds[c] : bounds[c + 1]])
                heapq.heapify(by_priority)
            else:
                by_priority[:] = entries[bounds[c] : bounds[c + 1]]
        # backfill's entries are made when it first needs them
        self._arrivals_pending.append((at, versions, runs))

    def _enqueue_one(self, row: int) -> None:
        """:meth:`_enqueue` of one job, the same keys computed in Python."""
        version, deficit = self._version[row], self._row_deficit_list[row]
        shares, held_row = self._share[row].tolist(), self._held[row].tolist()
        for c, pace in enumerate(self._pace_rows[row]):
            if not math.isfinite(pace):
                continue
            x, held = shares[c], held_row[c]
            if x > 1e-9:
                key = -x / held if held > 1e-9 else -math.inf
                heapq.heappush(self._by_priority[c], (key, -deficit, -x, row, version))
        self._arrivals_one.append((row, version))

    def waiting_queue(self, states: dict[int, JobState]) -> WaitingQueue:
        return _EnteredQueue(states)

    def decide(self, view: View) -> list[Decision]:
        if not len(self._class_of):
            self._class_of = np.array(view.idle.class_of)  # the view's speed classes
            self._capacity = np.bincount(self._class_of, minlength=len(view.idle.by_class)).astype(
                float
            )
        self._last_event = view.time
        solved = self._stale(view, view.active_ids)
        if solved:
            self._jobs, self._left = frozenset(view.active_ids), 0
            self._solve(view, view.active)
        waiting, queue = view.waiting.indices(), view.waiting
        # a job leaves the waiting jobs only when it starts (start() forgets it then) or
        # for good (it completed): the new ones are the waiting jobs not queued yet, and
        # between solves those are among the jobs that entered the engine's queue since
        entered = None
        if isinstance(queue, _EnteredQueue) and queue.owner is self:
            entered, queue.entered = queue.entered, []
        if entered is not None and not solved:
            new = {j for j in entered if j in waiting} - self._queued
        else:  # after a solve (nothing queued), or another policy's queue: every waiting job
            new = waiting - self._queued
        if new:
            self._queued |= new
            # a job that arrived after the solve waits for the next
            rows = [row for row in map(self._row.get, new) if row is not None]
            if rows:
                self._enqueue(rows)
        free = [len(pool) for pool in view.idle.by_class]
        pools: dict[int, list[int]] = {}
        out: list[Decision] = []

        def start(row: int, c: int) -> None:
            job, k = self._state[row], self._k[row]
            pool = pools.setdefault(c, list(view.idle.by_class[c]))
            gpus = tuple(pool[:k])
            del pool[:k]
            free[c] -= k
            pace = self._pace_rows[row][c]
            self._held[row, c] += pace
            assert self._table is not None
            self._table.latest_type[job.index] = c
            self._table.latest_end[job.index] = view.time + pace
            self._version[row] += 1
            self._queued.discard(job.index)
            out.append((job.index, gpus))

        self._assign(self._by_priority, free, waiting, start)
        if self.backfill and any(free):
            self._fill_arrivals()
            self._assign(self._by_arrival, free, waiting, start)
        return out

    def _fill_arrivals(self) -> None:
        """Put the jobs queued since the backfill heaps were last filled into them (they
        are rarely read: only when the priorities leave GPUs idle)."""
        if not (self._arrivals_pending or self._arrivals_one):
            return
        for rows, versions, runs in self._arrivals_pending:
            for c, heap in enumerate(self._by_arrival):
                on = runs[:, c]
                heap.extend(zip(rows[on].tolist(), versions[on].tolist(), strict=True))
        current = self._version
        for row, version in self._arrivals_one:
            if version == current[row]:  # else outdated: it has started since
                for c, pace in enumerate(self._pace_rows[row]):
                    if pace < math.inf:
                        self._by_arrival[c].append((row, version))
        for heap in self._by_arrival:
            heapq.heapify(heap)
        self._arrivals_pending.clear()
        self._arrivals_one.clear()

    def _assign(
        self,
        queues: list[list[Any]],
        free: list[int],
        waiting: KeysView[int],
        start: Callable[[int, int], None],
    ) -> None:
        """Start the best live entry (its job still ``waiting``, its version current) over
        the types' queues whose job fits the type's idle GPUs, until none does (an entry
        that does not fit is skipped, as in Gavel, and put back afterwards)."""
        skipped: list[tuple[int, Any]] = []
        versions, states = self._version, self._state
        while True:
            best = None
            for c, queue in enumerate(queues):
                while free[c] and queue:
                    entry = queue[0]
                    row = entry[-2]
                    if entry[-1] != versions[row] or states[row].index not in waiting:
                        heapq.heappop(queue)
                    elif self._k[row] > free[c]:
                        skipped.append((c, heapq.heappop(queue)))
                    else:
                        if best is None or entry < best[1]:
                            best = (c, entry)
                        break
            if best is None:
                break
            c, entry = best
            heapq.heappop(queues[c])
            start(entry[-2], c)
        for c, entry in skipped:
            heapq.heappush(queues[c], entry)


class _EnteredQueue(WaitingQueue):
    """The engine's waiting queue (by arrival), noting the jobs that enter it (``entered``,
    emptied by the policy): between two solves the policy queues those alone instead of
    comparing every waiting job with the ones it has queued. The policy keeps its own order,
    so this queue sorts its jobs only when someone reads them in order."""

    __slots__ = ("entered",)

    def __init__(self, states: dict[int, JobState]) -> None:
        super().__init__(states)
        self.entered: list[int] = []

    @property  # the base class's sorted list, made on demand
    def _entries(self) -> list[tuple[Any, int]]:
        return sorted((key, j) for j, key in self._keys.items())

    @_entries.setter
    def _entries(self, entries: list[tuple[Any, int]]) -> None:
        pass  # the base class's constructor sets it empty

    def __len__(self) -> int:
        return len(self._keys)

    def put(self, j: int, key: Any) -> None:
        if j not in self._keys:
            self.entered.append(j)
        self._keys[j] = key

    def drop(self, j: int) -> None:
        self._keys.pop(j, None)


@dataclass(frozen=True)
class AllocationOptions(Options):
    """Options of every allocation policy."""

    period: float = number(
        "seconds between allocation solves when the jobs change (default 0: every arrival "
        "and completion; a cluster with no GPU busy always re-solves)",
        0.0,
    )
    backfill: bool = switch(
        "give GPUs the allocation leaves idle to waiting allocated jobs, as Gavel's "
        "mechanism does (default 1)",
        True,
    )


@dataclass(frozen=True)
class LPOptions(AllocationOptions):
    """Options of the allocation policies that solve an LP."""

    agnostic: bool = switch(
        "heterogeneity-agnostic: the LP sees every GPU type as fast as the job's fastest "
        "(Gavel's versions without _perf; default 0)"
    )
    solution: Literal["vertex", "central"] = choice(
        "which optimum of the LP: vertex (a simplex basis: slack to a few jobs; default) "
        "or central (inside the optimal face: slack shared among the jobs off the "
        "bottleneck, as an interior-point solver such as Gavel's returns)",
        ("vertex", "central"),
    )
    warm: bool = switch(
        "with solution=vertex: keep one LP for the run, edited as the jobs change, each "
        "solve from the last one's basis (default 1; the vertex can then depend on the "
        "solves before); 0: every LP from scratch, as agnostic=1 always solves them",
        True,
    )


@dataclass(frozen=True)
class MaxMinOptions(LPOptions):
    """Options of ``max-min-fairness``."""

    fill: Literal["none", "throughput"] = choice(
        "none (the LP's optimum, default) or throughput (then the most total normalised "
        "throughput among the max-min optimal allocations)",
        ("none", "throughput"),
    )
    parts: int = count(
        "solve each allocation in this many POP-style pieces, each with its share of every "
        "type, the gap certified by their duals (default 1: the whole LP)",
        1,
        high=1024,
    )


#: The registered allocation policies: (name, Gavel's name of its heterogeneity-aware
#: version, what it does, its options).
POLICIES: tuple[tuple[Objective, str, str, type[AllocationOptions]], ...] = (
    ("max-min-fairness", "max_min_fairness_perf", "max-min fairness (LAS)", MaxMinOptions),
    (
        "max-throughput",
        "max_sum_throughput_perf",
        "the largest total normalised throughput",
        LPOptions,
    ),
    (
        "min-makespan",
        "min_total_duration_perf",
        "the least makespan, one exact LP (clairvoyant)",
        LPOptions,
    ),
    (
        "finish-time-fairness",
        "finish_time_fairness_perf",
        "the least max ρ as Gavel defines it (clairvoyant)",
        LPOptions,
    ),
    ("isolated", "isolated", "each job 1/m of every GPU type (no LP)", AllocationOptions),
)


def _register(
    objective: Objective, gavel: str, what: str, options: type[AllocationOptions]
) -> None:
    @register(
        objective,
        kind="simulate",
        modes=("gang",),
        options=options,
        description=f"round-based allocation: {what}; Gavel's {gavel} (gang)",
    )
    def make(chosen: AllocationOptions, seed: int) -> AllocationPolicy:
        return AllocationPolicy(
            objective,
            period=chosen.period,
            backfill=chosen.backfill,
            fill=getattr(chosen, "fill", "none"),
            agnostic=getattr(chosen, "agnostic", False),
            solution=getattr(chosen, "solution", "vertex"),
            parts=getattr(chosen, "parts", 1),
            warm=getattr(chosen, "warm", True),
        )


for _policy in POLICIES:
    _register(*_policy)
