"""Integral round-based allocation over the hosts (Sia-like, beyond Gavel): at every decision
(or every ``period`` seconds) an exact integer program (:mod:`optsched.exact.integral_round`)
chooses which waiting jobs start on which vacant GPUs — each job's GPU type and the concrete
hosts of its K tasks, consolidated on one host or spread over several — and reports the
certified gap of every solve. A cluster policy (:mod:`optsched.online.cluster`), so a round's
time follows its placement: the job's placement factor of its host pattern on the GPU type
(``placement_factor``), which is how Gavel's consolidated vs unconsolidated throughputs
enter an instance (:mod:`optsched.traces`).

**What each solve maximises** (α-fair gradient scheduling): Σ_j w_j · S_j^(−α) · u_j over the
jobs started, where u_j ∈ (0, 1] is the chosen placement's speed relative to the job's best
(its fastest class, its best pattern) and S_j its progress so far, the fraction of its age
(time since arrival) its best placement would have needed for the rounds it has done
(clipped to [10⁻³, 1]). Choosing each round's allocation by this gradient steers the
long-run normalised throughputs towards the α-fair optimum of Σ_j w_j S_j^(1−α) / (1 − α)
(Kushner and Whiting's gradient algorithm; Mo and Walrand's α-fairness): α = 0 maximises the
total normalised throughput, α = 1 is proportional fairness (the default), larger α
approaches max-min fairness (least attained service first). It reads no remaining work: the
policy is non-clairvoyant.

**Rounds.** By default (``period`` = 0) a solve happens at every decision where jobs wait
and GPUs are vacant: each round of our model starts by an exact solve. With ``period`` > 0
solves happen at the ``period`` boundaries (multiples of ``period``; Gavel's rounds are 360 s,
Sia's 60 s) and whenever no GPU is held; between boundaries, with ``backfill`` (default)
GPUs freed go at once to waiting jobs by the greedy allocation of the same values, without
it they stay idle until the next boundary. A running round is never interrupted (a job's
rounds are our model's, not a lease).

**Exactness of the values.** A job's round time on a set of GPUs of one class is the
slowest GPU's compute + sync there times its placement factor: the solve uses the class's
slowest GPU (exact when a type's GPUs are alike, as in every trace mapping), the factor of
the one-host pattern when consolidated, and when spread the largest factor over the patterns
with two or more hosts (exact when they are equal, as Gavel's unconsolidated throughputs
are; else the realised round is at least as fast as the solve counted). GPUs without a host
are one host together. Classes are split by GPU memory, so a job's predicted memory fits
every GPU of a class it may use.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optsched.cluster_model import factor_of, placement_pattern, spread_patterns
from optsched.errors import InputError
from optsched.exact.integral_round import (
    Placement,
    RoundProblem,
    greedy_round,
    solve_round,
)
from optsched.instance import Instance
from optsched.online.cluster import ClusterJob, ClusterView
from optsched.online.engine import Decision
from optsched.options import Options, number, switch
from optsched.registry import register

#: The least progress a job counts with (a job that has done nothing yet).
MIN_PROGRESS = 1e-3


def placement_factors(instance: Instance, j: int, gpu_type: str) -> tuple[float, float]:
    """Job ``j``'s round-time factors on ``gpu_type`` consolidated (all tasks on one host)
    and spread (the largest over its patterns on two or more hosts; module docstring)."""
    job = instance.jobs[j]
    k = job.tasks_per_round
    factors = job.profile.placement_factor or {}
    roles = job.profile.roles or ("worker",) * k
    cons = factor_of(factors, placement_pattern(roles, ["h"] * k), gpu_type)
    if k == 1:
        return cons, math.inf
    if job.profile.roles:  # every pattern with a PS: the listed ones, the others at 1
        listed = {key.partition("@")[0] for key in factors if ":" in key}
        return cons, max([1.0] + [factor_of(factors, p, gpu_type) for p in listed])
    return cons, max(factor_of(factors, p, gpu_type) for p in spread_patterns(k))


@dataclass
class IntegralPolicy:
    """The integral round-based allocation policy (module docstring)."""

    period: float = 0.0
    alpha: float = 1.0
    backfill: bool = True
    time_limit: float = 0.2
    wall_limit: float = 0.0
    name: str = "integral-allocation"
    modes: frozenset[str] = field(default_factory=lambda: frozenset({"gang"}))
    execution: str = "cluster"
    event_driven: bool = True
    #: the solves' certified gaps, seconds and how each was found
    gaps: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    found_by: Counter[str] = field(default_factory=Counter)
    backfills: int = 0
    _boundary: int = -1
    _classes: list[tuple[int, float | None]] = field(default_factory=list, repr=False)
    _pool_of: list[tuple[int, int]] = field(default_factory=list, repr=False)
    _n_hosts: int = 0
    _base: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)
    _factors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 2)), repr=False)

    @property
    def tick(self) -> float | None:
        return self.period if self.period > 0 else None

    def validate(self, instance: Instance) -> None:
        """Refuse a job that fits on no class (K GPUs of one type and memory)."""
        self._prepare(instance)
        sizes = Counter(c for _, c in self._pool_of)
        for j, job in enumerate(instance.jobs):
            ok = [c for c in range(len(self._classes)) if np.isfinite(self._base[j, c])]
            if not any(sizes[c] >= job.tasks_per_round for c in ok):
                raise InputError(
                    f"policy {self.name!r}: job {job.id!r} needs {job.tasks_per_round} GPUs "
                    "of one type and memory it fits (a round runs on one class) and no "
                    "class has that many"
                )

    def _prepare(self, instance: Instance) -> None:
        """Classes (type, memory), each GPU's (host, class) pool, and per job its round time
        on each class's slowest GPU (∞ where it cannot run) and its placement factors on
        each class's type."""
        types: dict[str, int] = {}
        keys = [(types.setdefault(g.type, len(types)), g.memory) for g in instance.gpus]
        self._classes = sorted(set(keys), key=lambda key: (key[0], key[1] or math.inf))
        index = {key: i for i, key in enumerate(self._classes)}
        hosts: dict[str | None, int] = {}
        self._pool_of = [
            (hosts.setdefault(g.host, len(hosts)), index[key])
            for g, key in zip(instance.gpus, keys, strict=True)
        ]
        self._n_hosts = len(hosts)
        pace = instance.class_compute + instance.class_sync
        base = np.full((instance.n_jobs, len(self._classes)), -math.inf)
        for g, (_, c) in enumerate(self._pool_of):
            base[:, c] = np.maximum(base[:, c], pace[:, instance.gpu_class[g]])
        memory = np.array([key[1] if key[1] is not None else math.inf for key in self._classes])
        for j, job in enumerate(instance.jobs):
            base[j, job.profile.gpu_memory > memory] = math.inf
        self._base = base
        type_names = list(types)
        self._factors = np.array(
            [
                [placement_factors(instance, j, type_names[t]) for t, _ in self._classes]
                for j in range(instance.n_jobs)
            ]
        ).reshape(instance.n_jobs, len(self._classes), 2)

    def _problem(self, view: ClusterView) -> tuple[RoundProblem, list[ClusterJob]]:
        jobs = view.waiting
        rows = [job.index for job in jobs]
        base = self._base[rows]
        factors = self._factors[rows]
        cons_time = base * factors[:, :, 0]
        spread_time = base * factors[:, :, 1]
        best = np.minimum(cons_time.min(axis=1), spread_time.min(axis=1))
        priority = np.empty(len(jobs))
        for i, job in enumerate(jobs):
            age = view.time - job.arrival
            done = job.rounds_done * best[i]
            progress = min(1.0, max(MIN_PROGRESS, done / age if age > 0 else 0.0))
            priority[i] = job.weight * progress ** (-self.alpha)
        with np.errstate(divide="ignore"):
            cons = priority[:, None] * best[:, None] / cons_time
            spread = priority[:, None] * best[:, None] / spread_time
        free = np.zeros((self._n_hosts, len(self._classes)), dtype=int)
        for g in view.vacant:
            free[self._pool_of[g]] += 1
        k = np.array([job.tasks_per_round for job in jobs])
        return RoundProblem(k, np.nan_to_num(cons), np.nan_to_num(spread), free), jobs

    def decide(self, view: ClusterView) -> list[Decision]:
        if not self._classes:
            self._prepare(view.instance)
        if not view.waiting or not view.vacant:
            return []
        boundary = int(view.time // self.period) if self.period > 0 else -1
        idle = len(view.vacant) == len(view.instance.gpus)
        solve = boundary != self._boundary or self.period <= 0 or idle
        if not solve and not self.backfill:
            return []  # freed GPUs wait for the next boundary
        problem, jobs = self._problem(view)
        if solve:
            self._boundary = boundary
            result = solve_round(problem, self.time_limit, self.wall_limit or None)
            placements = result.placements
            self.gaps.append(result.gap)
            self.seconds.append(result.seconds)
            self.found_by[result.found_by] += 1
        else:
            placements = greedy_round(problem)
            self.backfills += 1
        return self._decisions(view, jobs, placements)

    def _decisions(
        self, view: ClusterView, jobs: list[ClusterJob], placements: list[Placement | None]
    ) -> list[Decision]:
        """The starts of ``placements``: per (host, class) the vacant GPUs in index order,
        each job's largest host group first (a PS, task 0, goes there)."""
        pools: dict[tuple[int, int], list[int]] = {}
        for g in view.vacant:
            pools.setdefault(self._pool_of[g], []).append(g)
        out: list[Decision] = []
        for job, placement in zip(jobs, placements, strict=True):
            if placement is None:
                continue
            c, hosts = placement
            gpus: list[int] = []
            for h, count in sorted(hosts.items(), key=lambda hc: (-hc[1], hc[0])):
                pool = pools[(h, c)]
                gpus += pool[:count]
                del pool[:count]
            out.append((job.index, tuple(gpus)))
        return out

    def report(self) -> dict[str, Any]:
        """The solves: how many, their seconds (in all, the longest), how each ended, their
        certified gaps (median and largest), and the backfill decisions."""
        gaps = np.array(self.gaps) if self.gaps else np.zeros(1)
        return {
            "solves": len(self.gaps),
            "solve_seconds": float(sum(self.seconds)),
            "solve_max_s": float(max(self.seconds, default=0.0)),
            "found_by": dict(sorted(self.found_by.items())),
            "gap_median": float(np.median(gaps)),
            "gap_max": float(gaps.max()),
            "backfills": self.backfills,
        }


@dataclass(frozen=True)
class IntegralOptions(Options):
    """Options of ``integral-allocation``."""

    period: float = number(
        "seconds between round boundaries, where the integer program is solved (default 0: "
        "at every decision; Gavel's rounds are 360 s, Sia's 60 s)",
        0.0,
    )
    alpha: float = number(
        "fairness: 0 the most normalised throughput, 1 proportional fairness (default), "
        "larger towards max-min",
        1.0,
        high=100.0,
    )
    backfill: bool = switch(
        "give GPUs freed between boundaries at once to waiting jobs, greedily by the same "
        "values (default 1)",
        True,
    )
    time_limit: float = number(
        "CP-SAT's limit per solve in deterministic seconds (runs repeat exactly; 0.2 takes "
        "up to about 1 s here); the greedy allocation when it finds nothing better "
        "(default 0.2)",
        0.2,
        low=0.0,
        high=3600.0,
    )
    wall_limit: float = number(
        "seconds of wall time per solve, the LP and CP-SAT's model building included; the "
        "greedy allocation and the bound so far when it runs out (default 0: none, so runs "
        "repeat exactly)",
        0.0,
        low=0.0,
        high=3600.0,
    )


@register(
    "integral-allocation",
    kind="simulate",
    modes=("gang",),
    options=IntegralOptions,
    description="round-based integral allocation over the hosts: each round an exact "
    "integer program picks jobs, GPU types and hosts (consolidated or spread), α-fair, with "
    "its certified gap (gang)",
)
def _integral(options: IntegralOptions, seed: int) -> IntegralPolicy:
    return IntegralPolicy(
        period=options.period,
        alpha=options.alpha,
        backfill=options.backfill,
        time_limit=options.time_limit,
        wall_limit=options.wall_limit,
    )
