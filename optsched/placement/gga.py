"""Liquid's batch mode: a grouping genetic algorithm (TPDS'22 §5.3, eq. 8, Figs. 7–9).

Falkenauer's grouping encoding (Fig. 7): an individual is a container → host map, a *group*
is a host with the containers on it. Operators act on whole groups:

- **initial population** (§5.3: "first-fit and random-fit"): the best-fit plan
  (:class:`~optsched.placement.heuristics.BestFit`, with the ``line18`` parameter; the
  reference code's "mixed" strategy seeds best-fit plans too, and it makes the GA never worse
  than best-fit), then alternately first-fit plans (containers in a shuffled order, each on
  the first host that fits) and random-fit plans (a random host that fits);
- **crossover** (Fig. 8): a group drawn uniformly among the hosts parent X uses is injected
  into a copy of parent Y; the hosts of Y that held any injected container are emptied, and
  every container left homeless (from those hosts and from the injected host in Y) is
  re-inserted by the ``repair`` rule;
- **mutation** (Fig. 9): a host drawn uniformly among those the child uses is emptied and its
  containers re-inserted by the ``repair`` rule on the other hosts;
- an individual whose homeless containers fit nowhere is invalid (the paper gives it "a small
  number" as fitness; here it is discarded and another child is bred).

**Fitness** (``fitness=eq8``, default): eq. 8, GeneticFitness = −Σ_κ Score_κ − NumNU, i.e. the
GA minimises Σ_κ Score_κ + NumNU, where Σ_κ Score_κ is the placement cost of the ``cost``
parameter (paper form: eqs. 4–6 summed over the batch; code form: the reconstructed cost) and
NumNU the number of hosts the plan uses. ``fitness=cost`` drops NumNU (the earlier
behaviour). The Result's objective is always the *checked placement cost* of the returned
plan, not the fitness; ``extra`` gives ``best_fitness``, ``numnu`` and ``best_cost``. The
returned plan is the best individual by fitness ever seen (a hall of fame of one, as in
eaopt); ``extra.best_cost_seen`` is the least cost of any individual evaluated, which can be
lower when NumNU disagrees with the cost.

**Repair** (``repair``): how homeless containers are re-inserted.

- ``firstfit``: the paper's rule (Fig. 8: "re-insert … using the first-fit algorithm"),
  container by container. It always refills the lowest-index hosts, so a host left empty is
  never reopened while the others have room, and the population collapses (fidelity review
  §2.2: 3.0 for every seed vs an optimum of −1.5 on the 6-host instance of
  ``tests/test_placement_fidelity.py``);
- ``randomfit``: a uniformly random host with room, container by container — the reference
  code's repair (``ga.go``: ``randomFit`` after crossover and mutation); it can open empty
  hosts but rarely reassembles a job;
- ``bestfit``: container by container, the host of least cost of the container's own job
  (best-fit's per-job score, every other container as GPUs in use), ties at random;
- ``jobfit``: *whole jobs*: every container of a job with a homeless container becomes
  homeless too (except, in crossover, the injected ones), and the jobs are re-inserted one by
  one in a random order — all of a job's homeless containers on the one host of least job cost
  that has room for all of them (an empty host when that is cheapest), else container by
  container as ``bestfit``;
- ``mixed`` (default): whole jobs as ``jobfit``, each job re-inserted by ``jobfit`` or by
  random-fit with probability ½ (diversity).

The default was chosen by measurement (``benchmarks/gga_optimum.py``,
``benchmarks/results/placement/gga_optimum.md``): it reaches the proved optimum on the 6-host
instance for every seed and on most small random instances, where ``firstfit`` and
``randomfit`` stall. It is this project's choice, not the paper's nor the code's.

**Rates and sizes.** The paper gives none. From the reference code (``allocator.go`` ``GA``,
which uses eaopt's ``NewDefaultGAConfig``): population 30 + containers/2; tournament
selection of 3 distinct contestants; generational model — each generation breeds a whole new
population, crossover rate 0.7, mutation rate 0.5 per child; no elitism in the population, the
best individual kept in a hall of fame; stop after 30 + containers generations without
improvement (> 1e-6). The code has no generation cap but a 30 s wall-clock cap; here
``generations`` (default 10 × (30 + containers)) caps the run so that it is reproducible, and
``patience`` (default 30 + containers) is the code's early stop. A wall-clock limit applies
too: ``--time-limit``, by default 60 s like the exact methods (``optsched methods`` states
it), so that no ``generations``/``patience`` setting runs unseen for ever; a run that ends by
generations or patience before it is reproducible. A run longer than 5 s prints a progress
line on stderr every 5 s (elapsed, best cost so far; ``optsched place --quiet`` silences it).

Time limit: one :class:`~optsched.budget.Budget` covers the whole run, the best-fit
seed included; it is checked per container inserted (seed, initial plans, children), so the
run ends within ``--time-limit`` plus one container's insertion. It returns the best
individual found by then, or, when none was complete, no placement (status ``unknown``);
``extra.stopped`` says ``time limit``. A run cut by the limit is not reproducible. A Ctrl-C
during the generations returns the best individual so far, marked ``interrupted``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from optsched.budget import EXACT_TIME_LIMIT, Budget, OutOfTime
from optsched.contracts import PlaceContext, PlaceOutput
from optsched.options import choice, count
from optsched.placement.cost import CostModel, job_cost, placement_cost
from optsched.placement.heuristics import TIE, BestfitOptions, greedy_plan
from optsched.placement.model import (
    Container,
    PlacementInstance,
    PlacementJob,
    placement_from_hosts,
)
from optsched.registry import register
from optsched.result import Status
from optsched.work import WorkMeter, work_option

Genome = list[int]  # host index per container, -1 = homeless

#: Re-insertion rules (the first is the default).
Repair = Literal["mixed", "jobfit", "randomfit", "bestfit", "firstfit"]
REPAIRS: tuple[Repair, ...] = ("mixed", "jobfit", "randomfit", "bestfit", "firstfit")
#: Selection fitness (the first is the default).
FITNESSES: tuple[Literal["eq8", "cost"], ...] = ("eq8", "cost")
#: eaopt's NewDefaultGAConfig, as the reference code's GA uses it.
CROSS_RATE, MUT_RATE, CONTESTANTS = 0.7, 0.5, 3


@dataclass(frozen=True)
class GgaOptions(BestfitOptions):
    """The GA's options beyond the cost (defaults: see the module docstring); ``line18``
    applies to its best-fit seed."""

    repair: Repair = choice(
        "re-insertion of homeless containers: mixed (whole jobs, each by "
        "jobfit or random-fit; default), jobfit (whole jobs on the host "
        "of least job cost), randomfit (reference code), bestfit (per "
        "container), firstfit (paper Fig. 8)",
        REPAIRS,
    )
    fitness: Literal["eq8", "cost"] = choice(
        "eq8 (cost + hosts used, paper eq. 8; default) or cost", FITNESSES
    )
    generations: int | None = count("maximum generations (default 10 × (30 + containers))", None)
    patience: int | None = count(
        "stop after this many generations without improvement "
        "(default 30 + containers, the reference code's)",
        None,
    )
    work: float | None = work_option()


#: Work units of one work-second: measured on the 2-core reference machine by
#: ``benchmarks/work_rates.py``. A child tried counts :data:`TRY_WORK` and its containers
#: (the variation and repair visit each).
WORK_PER_SECOND, TRY_WORK = 1.15e5, 8


@dataclass(frozen=True)
class _Scored:
    fitness: float
    cost: float
    numnu: int
    genome: Genome


class _Problem:
    def __init__(
        self,
        instance: PlacementInstance,
        model: CostModel,
        config: GgaOptions,
        budget: Budget | None = None,
    ) -> None:
        self.instance, self.model, self.config = instance, model, config
        self.budget = budget or Budget(None)
        self.hosts = list(instance.topology.hosts)
        self.items = [(job, c) for job in instance.jobs for c in job.containers]
        self.keys = [(job.id, c.id) for job, c in self.items]
        self.job_items: dict[str, list[int]] = defaultdict(list)
        for i, (job, _) in enumerate(self.items):
            self.job_items[job.id].append(i)
        self.gpu_mem = [
            sorted(
                (instance.gpu_memory(g) for g in instance.host_gpus[h] if g not in instance.busy),
                reverse=True,
            )
            for h in self.hosts
        ]
        self.busy = [sum(g in instance.busy for g in instance.host_gpus[h]) for h in self.hosts]
        self.cpus = [instance.capacity(h, "cpus") for h in self.hosts]
        self.memory = [instance.capacity(h, "memory") for h in self.hosts]

    def fits(self, on: list[int], i: int, h: int) -> bool:
        """Can container i join host h, which holds the containers ``on`` (capacities, GPU
        memory thresholds, one per host)?"""
        job, c = self.items[i]
        if job.one_per_host and any(self.items[k][0] is job for k in on):
            return False
        cs: list[Container] = [self.items[k][1] for k in on] + [c]
        if (
            sum(x.cpus for x in cs) > self.cpus[h] + 1e-9
            or sum(x.memory for x in cs) > self.memory[h] + 1e-9
        ):
            return False
        for theta in {x.gpu_memory for x in cs}:
            have = sum(m >= theta for m in self.gpu_mem[h])
            if sum(x.gpus for x in cs if x.gpu_memory >= theta) > have:
                return False
        return True

    def insert(
        self,
        genome: Genome,
        order: list[int],
        rule: str,
        rng: np.random.Generator,
        banned: int = -1,
        pinned: frozenset[int] = frozenset(),
    ) -> bool:
        """Place the homeless containers ``order`` by ``rule`` on hosts other than
        ``banned``; False when one fits nowhere. ``firstfit``, ``randomfit``, ``bestfit``
        place container by container; ``jobfit`` and ``mixed`` first make every container of
        a touched job homeless (except ``pinned`` ones) and re-insert job by job, in a random
        order (:meth:`_insert_job`). Raises :class:`OutOfTime` once the budget is spent
        (checked per container)."""
        on: list[list[int]] = [[] for _ in self.hosts]
        if rule in ("jobfit", "mixed"):
            jobs = list(dict.fromkeys(self.items[i][0].id for i in order))
            for j in jobs:
                for k in self.job_items[j]:
                    if k not in pinned:
                        genome[k] = -1
            for k, g in enumerate(genome):
                if g >= 0:
                    on[g].append(k)
            for t in rng.permutation(len(jobs)):
                todo = [k for k in self.job_items[jobs[int(t)]] if genome[k] < 0]
                how = (
                    rule if rule == "jobfit" else ("jobfit" if rng.random() < 0.5 else "randomfit")
                )
                if not self._insert_job(genome, on, todo, how, rng, banned):
                    return False
            return True
        for k, g in enumerate(genome):
            if g >= 0:
                on[g].append(k)
        for i in order:
            self.budget.check()
            hosts = self._room(on, i, banned)
            if not hosts:
                return False
            if rule == "firstfit":
                h = hosts[0]
            elif rule == "randomfit":
                h = hosts[int(rng.integers(len(hosts)))]
            else:
                h = self._best_host(genome, on, i, hosts, rng)
            genome[i] = h
            on[h].append(i)
        return True

    def _room(self, on: list[list[int]], i: int, banned: int) -> list[int]:
        return [h for h in range(len(self.hosts)) if h != banned and self.fits(on[h], i, h)]

    def _insert_job(
        self,
        genome: Genome,
        on: list[list[int]],
        todo: list[int],
        how: str,
        rng: np.random.Generator,
        banned: int,
    ) -> bool:
        """Re-insert one job's homeless containers ``todo``. ``randomfit``: each on a random
        host with room. ``jobfit``: all on one host when some host has room for all of them
        (the one of least job cost, ties at random), else container by container on the host
        of least job cost (:meth:`_best_host`)."""
        if how == "jobfit":
            whole = []
            for h in range(len(self.hosts)):
                self.budget.check()
                if h == banned:
                    continue
                there = list(on[h])
                for i in todo:
                    if not self.fits(there, i, h):
                        break
                    there.append(i)
                else:
                    whole.append(h)
            if whole:
                job = self.items[todo[0]][0]
                best = self._least(genome, on, job, [(todo, h) for h in whole], rng)
                for i in todo:
                    genome[i] = best
                    on[best].append(i)
                return True
        for i in todo:
            self.budget.check()
            hosts = self._room(on, i, banned)
            if not hosts:
                return False
            h = (
                hosts[int(rng.integers(len(hosts)))]
                if how == "randomfit"
                else self._best_host(genome, on, i, hosts, rng)
            )
            genome[i] = h
            on[h].append(i)
        return True

    def _best_host(
        self,
        genome: Genome,
        on: list[list[int]],
        i: int,
        hosts: list[int],
        rng: np.random.Generator,
    ) -> int:
        """The host of least cost of container i's own job (the job's placed containers plus
        i; every other container as GPUs in use), ties broken at random."""
        return self._least(genome, on, self.items[i][0], [([i], h) for h in hosts], rng)

    def _least(
        self,
        genome: Genome,
        on: list[list[int]],
        job: PlacementJob,
        options: list[tuple[list[int], int]],
        rng: np.random.Generator,
    ) -> int:
        """Of the options (containers of ``job`` to add, host), the host whose option gives
        the least cost of ``job`` alone (:func:`~optsched.placement.cost.job_cost`), ties at
        random."""
        mine = {
            self.items[k][1].id: self.hosts[genome[k]]
            for k in self.job_items[job.id]
            if genome[k] >= 0
        }
        in_use = {
            self.hosts[h]: self.busy[h]
            + sum(self.items[k][1].gpus for k in ks if self.items[k][0] is not job)
            for h, ks in enumerate(on)
        }
        scores = [
            job_cost(
                self.instance,
                job,
                {**mine, **{self.items[i][1].id: self.hosts[h] for i in add}},
                in_use,
                self.model,
            ).total
            for add, h in options
        ]
        least = min(scores)
        ties = [h for (_, h), v in zip(options, scores, strict=True) if v <= least + TIE]
        return ties[int(rng.integers(len(ties)))]

    def score(self, genome: Genome) -> _Scored:
        host_of = {key: self.hosts[h] for key, h in zip(self.keys, genome, strict=True)}
        cost = placement_cost(self.instance, host_of, self.model).total
        numnu = len(set(genome))
        fitness = cost + numnu if self.config.fitness == "eq8" else cost
        return _Scored(fitness, cost, numnu, genome)


def _tournament(population: list[_Scored], rng: np.random.Generator) -> _Scored:
    """The fittest of :data:`CONTESTANTS` distinct individuals (all when fewer)."""
    k = min(CONTESTANTS, len(population))
    picks = rng.choice(len(population), size=k, replace=False)
    return min((population[int(p)] for p in picks), key=lambda s: s.fitness)


def _vary(
    prob: _Problem, population: list[_Scored], child: Genome, rng: np.random.Generator
) -> bool:
    """Crossover (rate 0.7) and mutation (rate 0.5) of ``child`` in place; False when the
    homeless containers fit nowhere (the child is discarded). Raises :class:`OutOfTime`."""
    n = len(child)
    rule = prob.config.repair
    if rng.random() < CROSS_RATE:
        donor = _tournament(population, rng).genome
        groups = sorted(set(donor))
        h = groups[int(rng.integers(len(groups)))]
        moved = [i for i in range(n) if donor[i] == h]
        emptied = {child[i] for i in moved} | {h}
        homeless = [i for i in range(n) if child[i] in emptied and i not in moved]
        for i in range(n):
            if child[i] in emptied:
                child[i] = -1
        for i in moved:
            child[i] = h
        if not prob.insert(child, homeless, rule, rng, pinned=frozenset(moved)):
            return False
    if rng.random() < MUT_RATE:
        groups = sorted(set(child))
        h = groups[int(rng.integers(len(groups)))]
        homeless = [i for i in range(n) if child[i] == h]
        for i in homeless:
            child[i] = -1
        if not prob.insert(child, homeless, rule, rng, banned=h):
            return False
    return True


def run_gga(
    instance: PlacementInstance,
    model: CostModel,
    *,
    seed: int = 0,
    config: GgaOptions | None = None,
    time_limit: float | None = None,
    report: Callable[[float | None, float | None], None] | None = None,
    work: float | None = None,
) -> tuple[Genome | None, dict[str, Any]]:
    """The best genome found by fitness (None when no feasible plan was built) and run
    statistics. ``work``: a budget in work-seconds (:mod:`optsched.work`), checked between
    generations; a child tried counts :data:`TRY_WORK` and its containers.
    ``report(cost, None)`` receives the cost of the best individual after the initial
    population and after every generation (a progress line's incumbent)."""
    config = config or GgaOptions()
    budget = Budget(time_limit)
    rng = np.random.default_rng(seed)
    prob = _Problem(instance, model, config, budget)
    n = len(prob.items)
    size = 30 + n // 2
    patience = 30 + n if config.patience is None else config.patience
    generations = 10 * (30 + n) if config.generations is None else config.generations
    settings: dict[str, Any] = {
        "repair": config.repair,
        "fitness": config.fitness,
        "line18": config.line18,
        "population": size,
        "patience": patience,
        "max_generations": generations,
    }
    population: list[_Scored] = []
    try:
        seed_plan = greedy_plan(instance, model, budget, line18=config.line18)
    except OutOfTime:
        seed_plan = None
    if seed_plan is not None:
        population.append(prob.score([prob.hosts.index(seed_plan[key]) for key in prob.keys]))
    for k in range(size * 3):  # a few tries per slot: random plans may not fit
        if len(population) == size or budget.expired():
            break
        genome = [-1] * n
        order = [int(i) for i in rng.permutation(n)]
        try:
            fitted = prob.insert(genome, order, "randomfit" if k % 2 else "firstfit", rng)
        except OutOfTime:
            break
        if fitted:
            population.append(prob.score(genome))
    if not population:
        return None, {
            **settings,
            "generations": 0,
            "evaluations": 0,
            "stopped": "time limit" if budget.expired() else "no feasible plan",
        }
    best = min(population, key=lambda s: s.fitness)
    least_cost = min(s.cost for s in population)
    if report is not None:
        report(best.cost, None)
    evaluations, stale, done = len(population), 0, 0
    stopped = "generations"
    meter = WorkMeter(work, WORK_PER_SECOND)
    try:
        for _ in range(generations):
            if budget.expired():
                stopped = "time limit"
                break
            if meter.exhausted:
                stopped = "work"
                break
            done += 1
            children: list[_Scored] = []
            tries = 0
            while len(children) < size and tries < 20 * size:
                if budget.expired():
                    break
                tries += 1
                meter.spend(TRY_WORK + n)
                child = list(_tournament(population, rng).genome)
                try:
                    fitted = _vary(prob, population, child, rng)
                except OutOfTime:
                    break
                if not fitted:
                    continue
                children.append(prob.score(child))
                evaluations += 1
            if not children:
                stopped = "time limit" if budget.expired() else "no valid child"
                break
            leader = min(children, key=lambda s: s.fitness)
            least_cost = min(least_cost, min(s.cost for s in children))
            if leader.fitness < best.fitness - 1e-6:
                best, stale = leader, 0
            else:
                stale += 1
            if report is not None:
                report(best.cost, None)
            if len(children) < size and budget.expired():  # cut by the time limit: stop
                stopped = "time limit"
                break
            population = children
            if stale >= patience:
                stopped = "patience"
                break
    except KeyboardInterrupt:  # a genuine Ctrl-C: the best individual so far
        stopped = "interrupted"
    return best.genome, {
        **settings,
        "generations": done,
        "evaluations": evaluations,
        "best_fitness": best.fitness,
        "best_cost": best.cost,
        "numnu": best.numnu,
        "best_cost_seen": least_cost,
        "work": meter.spent,
        "stopped": stopped,
        "interrupted": stopped == "interrupted",
    }


@register(
    "gga",
    kind="place",
    options=GgaOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    description="Liquid's batch mode: grouping genetic algorithm, eq. 8 fitness "
    "(seeded, generation counts)",
)
def _place_gga(instance: PlacementInstance, ctx: PlaceContext[GgaOptions]) -> PlaceOutput:
    genome, stats = run_gga(
        instance,
        ctx.model,
        seed=ctx.seed,
        config=ctx.options,
        time_limit=ctx.time_limit,
        report=ctx.report,
        work=ctx.options.work,
    )
    if genome is None:
        return PlaceOutput(status=Status.UNKNOWN, extra=stats)
    hosts = list(instance.topology.hosts)
    host_of = {
        (job.id, c.id): hosts[h]
        for (job, c), h in zip(
            [(job, c) for job in instance.jobs for c in job.containers], genome, strict=True
        )
    }
    return PlaceOutput(placement_from_hosts(instance, host_of), extra=stats)
