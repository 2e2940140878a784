"""Liquid's batch mode: a grouping genetic algorithm (TPDS'22 §5.3, Figs. 7–9; seeds.md §2.5).

Falkenauer's grouping encoding: an individual is a container → host map, a *group* is a host
with the containers on it. Operators act on whole groups:

- initial population: the best-fit plan (the reference code's "mixed" seeding, so the GA is
  never worse than best-fit), then half first-fit plans (containers in a shuffled order, each
  on the first host that fits), half random-fit plans (a random host that fits);
- crossover (rate 0.7): inject one host group of parent X into a copy of parent Y; the hosts of
  Y that held any injected container are emptied, and every container left homeless
  (from those hosts and from the injected host in Y) is re-inserted first-fit;
- mutation (rate 0.5): empty one random host group and re-insert its containers first-fit
  on the other hosts;
- tournament selection of 3, generational replacement, the best individual kept (elitism).

Fitness = the placement cost of the ``cost`` parameter (the order-free cost the exact method
optimises; the paper adds the number of hosts used, left out so gaps are measured on one
objective); an individual whose homeless containers fit nowhere is discarded. Reproducible:
seeded, and it stops on generation counts — ``generations`` (default 30 + containers) or
``patience`` generations without improvement (default 30); a wall-clock limit (``--time-limit``)
is optional. Population 30 + containers/2 (the reference code's sizing).

Time limit: one :class:`~optsched.exact.budget.Budget` covers the whole run, the best-fit
seed included; it is checked per container inserted (seed, initial plans, children), so the
run ends within ``--time-limit`` plus one container's insertion. It returns the best
individual found by then, or, when none was complete, no placement (status ``unknown``);
``extra.stopped`` says ``time limit``. A run cut by the limit is not reproducible.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from optsched.exact.budget import Budget, OutOfTime
from optsched.params import int_param
from optsched.placement.cost import CostModel, placement_cost
from optsched.placement.heuristics import greedy_plan
from optsched.placement.model import Container, PlacementInstance, placement_from_hosts
from optsched.placement.place import COST_PARAMS, PlaceContext, PlaceOutput, cost_model
from optsched.result import Status
from optsched.solve import register

Genome = list[int]  # host index per container, -1 = homeless


class _Problem:
    def __init__(self, instance: PlacementInstance, model: CostModel,
                 budget: Budget | None = None) -> None:
        self.instance, self.model = instance, model
        self.budget = budget or Budget(None)
        self.hosts = list(instance.topology.hosts)
        self.items = [(job, c) for job in instance.jobs for c in job.containers]
        self.keys = [(job.id, c.id) for job, c in self.items]
        self.gpu_mem = [sorted((instance.gpu_memory(g) for g in instance.host_gpus[h]
                                if g not in instance.busy), reverse=True) for h in self.hosts]
        self.cpus = [instance.capacity(h, "cpus") for h in self.hosts]
        self.memory = [instance.capacity(h, "memory") for h in self.hosts]

    def fits(self, genome: Genome, i: int, h: int) -> bool:
        """Can container i join host h (capacities, GPU thresholds, one per host)?"""
        job = self.items[i][0]
        there = [k for k, g in enumerate(genome) if g == h] + [i]
        if job.one_per_host and any(self.items[k][0] is job for k in there[:-1]):
            return False
        cs: list[Container] = [self.items[k][1] for k in there]
        if sum(x.cpus for x in cs) > self.cpus[h] + 1e-9 or \
                sum(x.memory for x in cs) > self.memory[h] + 1e-9:
            return False
        for theta in {x.gpu_memory for x in cs}:
            have = sum(m >= theta for m in self.gpu_mem[h])
            if sum(x.gpus for x in cs if x.gpu_memory >= theta) > have:
                return False
        return True

    def insert(self, genome: Genome, order: list[int], rng: np.random.Generator | None,
               banned: int = -1) -> bool:
        """Place the containers of ``order`` first-fit (``rng``: random-fit). Raises
        :class:`OutOfTime` once the budget is spent (checked per container)."""
        for i in order:
            self.budget.check()
            hosts = [h for h in range(len(self.hosts)) if h != banned
                     and self.fits(genome, i, h)]
            if not hosts:
                return False
            genome[i] = hosts[0] if rng is None else hosts[int(rng.integers(len(hosts)))]
        return True

    def cost(self, genome: Genome) -> float:
        host_of = {key: self.hosts[h] for key, h in zip(self.keys, genome, strict=True)}
        return placement_cost(self.instance, host_of, self.model).total


def _tournament(population: list[tuple[float, Genome]], rng: np.random.Generator) -> Genome:
    """The best of 3 individuals drawn with replacement."""
    contenders = [population[int(rng.integers(len(population)))] for _ in range(3)]
    return min(contenders, key=lambda p: p[0])[1]


def _vary(prob: _Problem, population: list[tuple[float, Genome]], child: Genome,
          rng: np.random.Generator) -> bool:
    """Crossover (rate 0.7) and mutation (rate 0.5) of ``child`` in place; False when the
    homeless containers fit nowhere (the child is discarded). Raises :class:`OutOfTime`."""
    n = len(child)
    if rng.random() < 0.7:
        donor = _tournament(population, rng)
        h = donor[int(rng.integers(n))]
        moved = [i for i in range(n) if donor[i] == h]
        emptied = {child[i] for i in moved} | {h}
        homeless = [i for i in range(n) if child[i] in emptied and i not in moved]
        for i in range(n):
            if child[i] in emptied:
                child[i] = -1
        for i in moved:
            child[i] = h
        if not prob.insert(child, homeless, None):
            return False
    if rng.random() < 0.5:
        h = child[int(rng.integers(n))]
        homeless = [i for i in range(n) if child[i] == h]
        for i in homeless:
            child[i] = -1
        if not prob.insert(child, homeless, None, banned=h):
            return False
    return True


def run_gga(instance: PlacementInstance, model: CostModel, *, seed: int = 0,
            generations: int | None = None, patience: int = 30,
            time_limit: float | None = None) -> tuple[Genome | None, dict[str, Any]]:
    """The best genome found (None when no feasible plan was built) and run statistics."""
    budget = Budget(time_limit)

    def out_of_time() -> bool:
        return budget.expired()

    rng = np.random.default_rng(seed)
    prob = _Problem(instance, model, budget)
    n = len(prob.items)
    size = 30 + n // 2
    generations = 30 + n if generations is None else generations
    population: list[tuple[float, Genome]] = []
    try:
        seed_plan = greedy_plan(instance, model, budget)  # the reference code's "mixed" seeding
    except OutOfTime:
        seed_plan = None
    if seed_plan is not None:
        genome = [prob.hosts.index(seed_plan[key]) for key in prob.keys]
        population.append((prob.cost(genome), genome))
    for k in range(size * 3):  # a few tries per slot: random plans may not fit
        if len(population) == size or out_of_time():
            break
        genome = [-1] * n
        order = list(rng.permutation(n))
        try:
            fitted = prob.insert(genome, order, rng if k % 2 else None)
        except OutOfTime:
            break
        if fitted:
            population.append((prob.cost(genome), genome))
    if not population:
        return None, {"generations": 0, "evaluations": 0,
                      "stopped": "time limit" if out_of_time() else "no feasible plan"}
    best = min(population, key=lambda p: p[0])
    evaluations, stale, done = len(population), 0, 0
    stopped = "generations"
    for _ in range(generations):
        if out_of_time():
            stopped = "time limit"
            break
        done += 1
        children: list[tuple[float, Genome]] = [best]
        while len(children) < size:
            if out_of_time():
                break
            child = list(_tournament(population, rng))
            try:
                fitted = _vary(prob, population, child, rng)
            except OutOfTime:
                break
            if not fitted:
                continue
            children.append((prob.cost(child), child))
            evaluations += 1
        leader = min(children, key=lambda p: p[0])
        if leader[0] < best[0] - 1e-9:
            best, stale = leader, 0
        else:
            stale += 1
        if len(children) < size:  # cut by the time limit: keep the best, stop
            stopped = "time limit"
            break
        population = children
        if stale >= patience:
            stopped = "patience"
            break
    return best[1], {"generations": done, "evaluations": evaluations,
                     "population": size, "best_cost": best[0], "stopped": stopped}


def _gga_params(params: Mapping[str, str]) -> tuple[int | None, int]:
    """``generations`` (None: 30 + containers) and ``patience``, checked; the cost too."""
    cost_model(params)
    generations = int_param(params, "generations", 0) if "generations" in params else None
    return generations, int_param(params, "patience", 30)


@register("gga", kind="place", params={
    **COST_PARAMS,
    "generations": "maximum generations (default 30 + containers)",
    "patience": "stop after this many generations without improvement (default 30)"},
    parse=_gga_params,
    description="Liquid's batch mode: grouping genetic algorithm (seeded, generation counts)")
def _place_gga(instance: PlacementInstance, ctx: PlaceContext) -> PlaceOutput:
    generations, patience = _gga_params(ctx.params)
    genome, stats = run_gga(instance, ctx.model, seed=ctx.seed, generations=generations,
                            patience=patience, time_limit=ctx.time_limit)
    if genome is None:
        return PlaceOutput(status=Status.UNKNOWN, extra=stats)
    hosts = list(instance.topology.hosts)
    host_of = {(job.id, c.id): hosts[h] for (job, c), h in zip(
        [(job, c) for job in instance.jobs for c in job.containers], genome, strict=True)}
    return PlaceOutput(placement_from_hosts(instance, host_of), extra=stats)
