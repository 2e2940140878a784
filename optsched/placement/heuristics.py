"""Greedy placement: Liquid's immediate-mode best-fit (TPDS'22 §5.2, eq. 3 and Alg. 1) and the
paper's baselines random, spread (even distribution) and pack.

Jobs are placed in instance order, each container on one host that still has its CPUs,
memory and GPUs free (a GPU is free when not busy and not given; it must have the container's
GPU memory) and, for ``one_per_host`` jobs, holds no other container of the job. Containers
of a job go in Liquid's order: PSs interleaved with the workers (a PS, then its share of the
workers; the reference code's order, the paper gives none). A container that fits nowhere
leaves the instance unplaced (status ``unknown``: greedy methods prove nothing). Host choice,
ties (within 1e-9) to the lowest host index:

- ``bestfit``: the host minimising the cost of *the job being placed only* (eq. 3, min over
  the job's plans of Score_κ; :func:`~optsched.placement.cost.job_cost`) with the job's
  containers placed so far plus this one, in the form of the ``cost`` parameter. Earlier jobs
  count only as GPUs in use — as if each job were placed by its own call, which is what the
  reference code does (``allocator.go``: ``fastBestFit`` builds a fresh ``Evaluator`` per
  allocation, and immediate mode allocates one job at a time). Parameter ``line18``: Alg. 1
  line 18, ``nodes.remove(bestnode)`` — with ``line18=1`` a host that received a container
  of the job leaves that job's candidate set (at most one container of a job per host, like
  ``one_per_host``). Default ``line18=0``: the reference code never removes the node (it only
  re-checks free GPUs), and the paper's measured results come from that code; literal Alg. 1
  places a 1 PS + 2 worker job on three hosts, i.e. behaves like ``spread`` (fidelity review
  §2.1). Each Result says which ran (``extra.line18``, ``extra.scoring``);
- ``random``: uniformly among the hosts that fit (seeded);
- ``spread``: the host with the most free GPUs, then the most free CPUs;
- ``pack``: the host with the fewest free GPUs, then the fewest free CPUs.

Best-fit scores a host in time linear in the number of hosts the job already uses (plus the
job's PS–worker pairs once per container), so a whole run is O(containers × hosts × job
size); with ``contention=1`` it recomputes the job's cost per host (quadratic in the job).

Time limit: each method runs under one :class:`~optsched.budget.Budget` of
``--time-limit``, checked per container placed (and, for best-fit, per host scored); when it
runs out the Result is ``unknown`` without a placement and ``extra.stopped`` says ``time
limit``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.budget import Budget, OutOfTime
from optsched.contracts import PlaceContext, PlaceOutput
from optsched.options import switch
from optsched.placement.cost import CostModel, CostOptions, job_cost, pair_cost
from optsched.placement.model import (
    Assignment,
    Container,
    Placement,
    PlacementInstance,
    PlacementJob,
)
from optsched.registry import register
from optsched.result import Status


@dataclass
class _Free:
    """Free resources while containers are placed."""

    cpus: dict[str, float]
    memory: dict[str, float]
    gpus: dict[str, list[str]]

    @classmethod
    def of(cls, instance: PlacementInstance) -> _Free:
        hosts = instance.topology.hosts
        return cls(
            {h: instance.capacity(h, "cpus") for h in hosts},
            {h: instance.capacity(h, "memory") for h in hosts},
            {h: [g for g in instance.host_gpus[h] if g not in instance.busy] for h in hosts},
        )

    def usable_gpus(self, instance: PlacementInstance, host: str, c: Container) -> list[str]:
        return [g for g in self.gpus[host] if instance.gpu_memory(g) >= c.gpu_memory]

    def fits(self, instance: PlacementInstance, host: str, c: Container) -> bool:
        return (
            self.cpus[host] >= c.cpus
            and self.memory[host] >= c.memory
            and len(self.usable_gpus(instance, host, c)) >= c.gpus
        )

    def take(self, instance: PlacementInstance, host: str, c: Container) -> tuple[str, ...]:
        chosen = tuple(self.usable_gpus(instance, host, c)[: c.gpus])
        self.cpus[host] -= c.cpus
        self.memory[host] -= c.memory
        self.gpus[host] = [g for g in self.gpus[host] if g not in chosen]
        return chosen


def liquid_order(job: PlacementJob) -> list[Container]:
    """PSs interleaved with workers: each PS followed by its share of the workers."""
    ps = [c for c in job.containers if c.role == "ps"]
    workers = [c for c in job.containers if c.role == "worker"]
    if not ps:
        return workers
    out: list[Container] = []
    for i, p in enumerate(ps):
        out.append(p)
        out += workers[i * len(workers) // len(ps) : (i + 1) * len(workers) // len(ps)]
    return out


Chooser = Callable[[list[str], PlacementJob, Container, dict[tuple[str, str], str], _Free], str]

#: Ties within this much of the least score go to the lowest host index.
TIE = 1e-9


def greedy(
    instance: PlacementInstance,
    choose: Chooser,
    budget: Budget | None = None,
    *,
    line18: bool = False,
) -> Placement | None:
    """Place every container with ``choose(candidates, job, container, so_far, free)``;
    ``line18``: a host that took a container of a job is no candidate for the job's later
    containers (Alg. 1 line 18; always so for ``one_per_host`` jobs). Raises
    :class:`~optsched.budget.OutOfTime` once ``budget`` is spent (checked per container
    placed)."""
    free = _Free.of(instance)
    host_of: dict[tuple[str, str], str] = {}
    out = []
    for job in instance.jobs:
        used: set[str] = set()
        once = line18 or job.one_per_host
        for c in liquid_order(job):
            if budget is not None:
                budget.check()
            candidates = [
                h
                for h in instance.topology.hosts
                if not (once and h in used) and free.fits(instance, h, c)
            ]
            if not candidates:
                return None
            host = choose(candidates, job, c, host_of, free)
            used.add(host)
            host_of[job.id, c.id] = host
            out.append(Assignment(job.id, c.id, host, free.take(instance, host, c)))
    return Placement(instance.name, tuple(out))


def greedy_plan(
    instance: PlacementInstance,
    model: CostModel,
    budget: Budget | None = None,
    *,
    line18: bool = False,
) -> dict[tuple[str, str], str] | None:
    """The best-fit container → host map (None when some container fits nowhere). Raises
    :class:`~optsched.budget.OutOfTime` once ``budget`` is spent."""
    placement = greedy(instance, BestFit(instance, model, budget), budget, line18=line18)
    if placement is None:
        return None
    return {(a.job, a.container): a.host for a in placement.assignments}


def first_least(candidates: list[str], score: Callable[[str], float]) -> str:
    """The first candidate whose score is within :data:`TIE` of the least."""
    scores = [score(h) for h in candidates]
    least = min(scores)
    return next(h for h, v in zip(candidates, scores, strict=True) if v <= least + TIE)


class BestFit:
    """Best-fit's host choice (a :data:`Chooser`): the host minimising the cost of the job
    being placed alone (:func:`~optsched.placement.cost.job_cost`: its containers placed so
    far plus this one, other jobs as GPUs in use), ties to the lowest index.

    The score of a host is computed from the job's per-host PS/worker counts in time linear in
    the hosts the job uses, and equals ``job_cost(...).total`` (property-tested); with link
    contention it is ``job_cost`` itself."""

    def __init__(
        self, instance: PlacementInstance, model: CostModel, budget: Budget | None = None
    ) -> None:
        self.instance, self.model, self.budget = instance, model, budget
        self.n_gpus = {h: len(g) for h, g in instance.host_gpus.items()}

    def __call__(
        self,
        candidates: list[str],
        job: PlacementJob,
        c: Container,
        so_far: dict[tuple[str, str], str],
        free: _Free,
    ) -> str:
        placed = [(x, so_far[job.id, x.id]) for x in job.containers if (job.id, x.id) in so_far]
        return first_least(candidates, self.scorer(job, c, placed, free))

    def scorer(
        self, job: PlacementJob, c: Container, placed: list[tuple[Container, str]], free: _Free
    ) -> Callable[[str], float]:
        """score(h): the job's cost with ``placed`` and ``c`` on host h."""
        inst, model, budget, n_gpus = self.instance, self.model, self.budget, self.n_gpus

        def in_use(h: str) -> int:  # busy + every container placed so far (this job's too)
            return n_gpus[h] - len(free.gpus[h])

        if model.contention:
            mine: dict[str, int] = defaultdict(int)
            for x, h in placed:
                mine[h] += x.gpus
            others = {h: in_use(h) - mine[h] for h in inst.topology.hosts}
            hosts = {x.id: h for x, h in placed}

            def full(h: str) -> float:
                if budget is not None:
                    budget.check()
                return job_cost(inst, job, {**hosts, c.id: h}, others, model).total

            return full

        ps: dict[str, int] = {}
        workers: dict[str, int] = {}
        for x, h in placed:
            side = ps if x.role == "ps" else workers
            side[h] = side.get(h, 0) + 1
        net = sum(pair_cost(inst, model, p, w) * ps[p] * workers[w] for p in ps for w in workers)
        partners = workers if c.role == "ps" else ps
        sign = 1 if c.role == "ps" else -1
        n = len(placed) + 1
        weight = model.lam if model.variant == "paper" else job.bandwidth

        def score(h: str) -> float:
            if budget is not None:
                budget.check()
            network = weight * (
                net + sum(pair_cost(inst, model, h, o) * k for o, k in partners.items())
            )
            load = 0.0
            for o in {*ps, *workers, h}:
                total = n_gpus[o]
                if not total:
                    continue
                used = in_use(o) + (c.gpus if o == h else 0)
                if model.variant == "paper":
                    load -= (1 - model.lam) * used / total
                else:
                    signs = ps.get(o, 0) - workers.get(o, 0) + (sign if o == h else 0)
                    load += signs * (used + 1) / total / n
            if model.variant == "code":
                load += len({*ps, *workers, h}) / n
            return network + load

        return score


@dataclass(frozen=True)
class BestfitOptions(CostOptions):
    """Best-fit's options (the GGA's too, for its best-fit seed) beyond the cost."""

    line18: bool = switch(
        "1: Alg. 1 line 18, a host that took a container of a job leaves "
        "that job's candidates; 0: the reference code, which keeps it "
        "(default 0)"
    )


def bestfit_extra(line18: bool) -> dict[str, Any]:
    """What every best-fit Result says about the variant that ran."""
    return {"line18": line18, "scoring": "per job (eq. 3; earlier jobs as busy GPUs)"}


#: ``extra`` of a heuristic stopped by ``--time-limit`` before every container was placed.
STOPPED_BY_TIME = {
    "stopped": "time limit",
    "reason": "the time limit ran out before every container was placed",
}


def _run(
    instance: PlacementInstance,
    ctx: PlaceContext[Any],
    choose: Chooser,
    budget: Budget | None = None,
    *,
    line18: bool = False,
) -> PlaceOutput:
    """The greedy placement within ``ctx.time_limit`` (status unknown, no placement, when the
    limit stops it)."""
    budget = budget or Budget(ctx.time_limit)
    try:
        placement = greedy(instance, choose, budget, line18=line18)
    except OutOfTime:
        return PlaceOutput(status=Status.UNKNOWN, extra=dict(STOPPED_BY_TIME))
    return PlaceOutput(placement, status=None if placement else Status.UNKNOWN)


@register(
    "bestfit",
    kind="place",
    options=BestfitOptions,
    description="Liquid's immediate-mode best-fit: each container on the host of least "
    "cost of its own job (eq. 3); line18=1 for Alg. 1's node removal",
)
def _place_bestfit(instance: PlacementInstance, ctx: PlaceContext[BestfitOptions]) -> PlaceOutput:
    budget = Budget(ctx.time_limit)
    line18 = ctx.options.line18
    out = _run(instance, ctx, BestFit(instance, ctx.model, budget), budget, line18=line18)
    return PlaceOutput(
        out.placement, out.bound, out.status, {**out.extra, **bestfit_extra(line18)}
    )


@register("random", kind="place", description="each container on a random host that fits (seeded)")
def _place_random(instance: PlacementInstance, ctx: PlaceContext[CostOptions]) -> PlaceOutput:
    rng = np.random.default_rng(ctx.seed)
    return _run(instance, ctx, lambda cand, *_: cand[int(rng.integers(len(cand)))])


@register(
    "spread", kind="place", description="even distribution: the host with the most free GPUs"
)
def _place_spread(instance: PlacementInstance, ctx: PlaceContext[CostOptions]) -> PlaceOutput:
    return _run(
        instance,
        ctx,
        lambda cand, job, c, so_far, free: min(
            cand, key=lambda h: (-len(free.gpus[h]), -free.cpus[h])
        ),
    )


@register(
    "pack", kind="place", description="consolidation: the host with the fewest free GPUs that fits"
)
def _place_pack(instance: PlacementInstance, ctx: PlaceContext[CostOptions]) -> PlaceOutput:
    return _run(
        instance,
        ctx,
        lambda cand, job, c, so_far, free: min(
            cand, key=lambda h: (len(free.gpus[h]), free.cpus[h])
        ),
    )
