"""Greedy placement: Liquid's immediate-mode best-fit (TPDS'22 Alg. 1) and the paper's
baselines random, spread (even distribution) and pack.

Jobs are placed in instance order, each container on one host that still has its CPUs,
memory and GPUs free (a GPU is free when not busy and not given; it must have the container's
GPU memory) and, for ``one_per_host`` jobs, holds no other container of the job. Containers
of a job go in Liquid's order: PSs interleaved with the workers (a PS, then its share of the
workers). A container that fits nowhere leaves the instance unplaced (status ``unknown``:
greedy methods prove nothing). Host choice, ties to the lowest host index:

- ``bestfit``: the host minimising the cost of the placement so far plus this container (the
  cost model of the ``cost`` parameter, so paper or reference-code form);
- ``random``: uniformly among the hosts that fit (seeded);
- ``spread``: the host with the most free GPUs, then the most free CPUs;
- ``pack``: the host with the fewest free GPUs, then the fewest free CPUs.

Time limit: each method runs under one :class:`~optsched.exact.budget.Budget` of
``--time-limit``, checked per container placed (and, for best-fit, per host scored); when it
runs out the Result is ``unknown`` without a placement and ``extra.stopped`` says ``time
limit``. Best-fit scores each host with the full cost of the partial placement, so it is
quadratic in the number of containers (about 0.5 s for 40 hosts × 40 jobs, a minute and more
for 300 × 300): give large instances a time limit or use spread/pack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from optsched.exact.budget import Budget, OutOfTime
from optsched.placement.cost import CostModel, placement_cost
from optsched.placement.model import (
    Assignment,
    Container,
    Placement,
    PlacementInstance,
    PlacementJob,
)
from optsched.placement.place import COST_PARAMS, PlaceContext, PlaceOutput, cost_model
from optsched.result import Status
from optsched.solve import register


@dataclass
class _Free:
    """Free resources while containers are placed."""

    cpus: dict[str, float]
    memory: dict[str, float]
    gpus: dict[str, list[str]]

    @classmethod
    def of(cls, instance: PlacementInstance) -> _Free:
        hosts = instance.topology.hosts
        return cls({h: instance.capacity(h, "cpus") for h in hosts},
                   {h: instance.capacity(h, "memory") for h in hosts},
                   {h: [g for g in instance.host_gpus[h] if g not in instance.busy]
                    for h in hosts})

    def usable_gpus(self, instance: PlacementInstance, host: str, c: Container) -> list[str]:
        return [g for g in self.gpus[host] if instance.gpu_memory(g) >= c.gpu_memory]

    def fits(self, instance: PlacementInstance, host: str, c: Container) -> bool:
        return (self.cpus[host] >= c.cpus and self.memory[host] >= c.memory
                and len(self.usable_gpus(instance, host, c)) >= c.gpus)

    def take(self, instance: PlacementInstance, host: str, c: Container) -> tuple[str, ...]:
        chosen = tuple(self.usable_gpus(instance, host, c)[:c.gpus])
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
        out += workers[i * len(workers) // len(ps):(i + 1) * len(workers) // len(ps)]
    return out


Chooser = Callable[[list[str], PlacementJob, Container, dict[tuple[str, str], str], _Free],
                   str]


def greedy(instance: PlacementInstance, choose: Chooser, budget: Budget | None = None
           ) -> Placement | None:
    """Place every container with ``choose(candidates, job, container, so_far, free)``.
    Raises :class:`~optsched.exact.budget.OutOfTime` once ``budget`` is spent (checked per
    container placed)."""
    free = _Free.of(instance)
    host_of: dict[tuple[str, str], str] = {}
    out = []
    for job in instance.jobs:
        used: set[str] = set()
        for c in liquid_order(job):
            if budget is not None:
                budget.check()
            candidates = [h for h in instance.topology.hosts
                          if not (job.one_per_host and h in used) and free.fits(instance, h, c)]
            if not candidates:
                return None
            host = choose(candidates, job, c, host_of, free)
            used.add(host)
            host_of[job.id, c.id] = host
            out.append(Assignment(job.id, c.id, host, free.take(instance, host, c)))
    return Placement(instance.name, tuple(out))


def greedy_plan(instance: PlacementInstance, model: CostModel, budget: Budget | None = None
                ) -> dict[tuple[str, str], str] | None:
    """The best-fit container → host map (None when some container fits nowhere). Raises
    :class:`~optsched.exact.budget.OutOfTime` once ``budget`` is spent."""
    placement = greedy(instance, _bestfit(instance, model, budget), budget)
    if placement is None:
        return None
    return {(a.job, a.container): a.host for a in placement.assignments}


def _bestfit(instance: PlacementInstance, model: CostModel, budget: Budget | None = None
             ) -> Chooser:
    def choose(candidates: list[str], job: PlacementJob, c: Container,
               so_far: dict[tuple[str, str], str], free: _Free) -> str:
        def score(h: str) -> float:
            if budget is not None:
                budget.check()
            return placement_cost(instance, {**so_far, (job.id, c.id): h}, model).total
        return min(candidates, key=score)  # min keeps the first (lowest-index) of ties
    return choose


#: ``extra`` of a heuristic stopped by ``--time-limit`` before every container was placed.
STOPPED_BY_TIME = {"stopped": "time limit", "reason": "the time limit ran out before every "
                   "container was placed"}


def _run(instance: PlacementInstance, ctx: PlaceContext, choose: Chooser,
         budget: Budget | None = None) -> PlaceOutput:
    """The greedy placement within ``ctx.time_limit`` (status unknown, no placement, when the
    limit stops it)."""
    budget = budget or Budget(ctx.time_limit)
    try:
        placement = greedy(instance, choose, budget)
    except OutOfTime:
        return PlaceOutput(status=Status.UNKNOWN, extra=dict(STOPPED_BY_TIME))
    return PlaceOutput(placement, status=None if placement else Status.UNKNOWN)


@register("bestfit", kind="place", params=COST_PARAMS, parse=cost_model,
          description="Liquid's immediate-mode best-fit: each container on the host of least "
                      "cost so far")
def _place_bestfit(instance: PlacementInstance, ctx: PlaceContext) -> PlaceOutput:
    budget = Budget(ctx.time_limit)
    return _run(instance, ctx, _bestfit(instance, ctx.model, budget), budget)


@register("random", kind="place", params=COST_PARAMS, parse=cost_model,
          description="each container on a random host that fits (seeded)")
def _place_random(instance: PlacementInstance, ctx: PlaceContext) -> PlaceOutput:
    rng = np.random.default_rng(ctx.seed)
    return _run(instance, ctx, lambda cand, *_: cand[int(rng.integers(len(cand)))])


@register("spread", kind="place", params=COST_PARAMS, parse=cost_model,
          description="even distribution: the host with the most free GPUs")
def _place_spread(instance: PlacementInstance, ctx: PlaceContext) -> PlaceOutput:
    return _run(instance, ctx, lambda cand, job, c, so_far, free: min(
        cand, key=lambda h: (-len(free.gpus[h]), -free.cpus[h])))


@register("pack", kind="place", params=COST_PARAMS, parse=cost_model,
          description="consolidation: the host with the fewest free GPUs that fits")
def _place_pack(instance: PlacementInstance, ctx: PlaceContext) -> PlaceOutput:
    return _run(instance, ctx, lambda cand, job, c, so_far, free: min(
        cand, key=lambda h: (len(free.gpus[h]), free.cpus[h])))
