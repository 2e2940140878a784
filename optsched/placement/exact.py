"""Exact placement, CP-SAT and MILP, for Liquid's order-free cost (models/placement-exact.md).

x[c, h] = 1 when container c goes on host h. Capacities per host: CPUs, memory, and GPUs by
memory threshold (containers needing at least θ MB of GPU memory use GPUs with at least θ MB;
these nested sets make the threshold counts exact by Hall's theorem), one container per host for
``one_per_host`` jobs. GPUs are given afterwards by the same rule, largest memory needs first.

Network: for a PS–worker pair, ``both[G]`` = both on hosts of group G (a host, a rack, a
domain). On a chain host ⊂ rack ⊂ domain ⊂ cluster with pair costs v_host = 0 ≤ v_rack ≤
v_domain ≤ v_far, the pair costs v_far − Σ_G (v_parent(G) − v_G)·both[G]: exact because the
groups containing both containers are exactly the common ancestors. Groups follow each cost
form's distances: paper form, only labelled racks and domains (unlabelled hosts meet at
"far"); code form, the reference code's labels
(:func:`~optsched.placement.cost.code_groups`: hosts without a rack label form one rack per
domain, so a flat cluster is one rack, 1 per remote pair). Load: the fitness/load terms
of :mod:`optsched.placement.cost` with u[j, h] = job j uses host h (exact OR), and, for the
reference-code form, the product (GPUs in use on h) × (PSs − workers on h) by a multiplication
constraint. The objective is scaled to integers exactly (rational λ, lcm of GPU counts), so
CP-SAT's bound divided back is a certified lower bound.

Limits (:mod:`optsched.budget`): a model whose estimated size (:func:`model_size`) is
too large for :func:`~optsched.budget.lp_too_large` is refused (InputError). The whole
method runs within ``--time-limit``, counted from the call (solver imports included): the
build checks the limit per container, per PS–worker pair and per job and may use half of it;
when it runs out there (or too little is left for PuLP to hand the model over) the Result
is the best-fit placement, checked, without a bound (``extra.solver_status`` ``NOT_SOLVED:
time limit``), built within what is left of the limit (none, status ``unknown``, when that
runs out too); the solver gets only what is left.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optsched.budget import (
    EXACT_TIME_LIMIT,
    MIN_SOLVER_SECONDS,
    Budget,
    OutOfTime,
    lp_too_large,
    size_text,
    solve_stoppable,
)
from optsched.contracts import PlaceContext, PlaceOutput
from optsched.errors import InputError, OptschedError
from optsched.options import count
from optsched.placement.cost import CODE_DISTANCE, CostOptions, code_groups
from optsched.placement.model import PlacementInstance, placement_from_hosts
from optsched.registry import register
from optsched.result import Status
from optsched.topology import Distance
from optsched.work import cpsat_limit, cpsat_work, cpsat_work_spent, work_option


def _demand(c: Any) -> tuple[float, ...]:
    return (c.gpus, c.cpus, c.memory, c.gpu_memory)


def _chain(
    instance: PlacementInstance, host: str, variant: str = "paper"
) -> list[tuple[str, Any]]:
    """(level, group) from the host up. Paper form: ("host", h), ("rack", r)?, ("domain",
    d)? — an unlabelled level is skipped, so unlabelled hosts meet only at "far". Code form:
    always host, rack and domain, by the reference code's labels
    (:func:`~optsched.placement.cost.code_groups`: unlabelled hosts share a rack)."""
    topo = instance.topology
    out: list[tuple[str, Any]] = [("host", host)]
    if variant == "code":
        rack, domain = code_groups(topo, host)
        return [*out, ("rack", rack), ("domain", domain)]
    if topo.rack(host) is not None:
        out.append(("rack", str(topo.rack(host))))
    if topo.domain(host) is not None:
        out.append(("domain", str(topo.domain(host))))
    return out


def _values(instance: PlacementInstance, ctx: PlaceContext[Any], host: str) -> dict[str, Fraction]:
    """Pair cost when the nearest common group of the pair is at each level (and 'far')."""
    model = ctx.model
    if model.variant == "code":
        return {
            "host": Fraction(0),
            "rack": Fraction(int(CODE_DISTANCE[Distance.SAME_RACK])),
            "domain": Fraction(int(CODE_DISTANCE[Distance.SAME_DOMAIN])),
            "far": Fraction(int(CODE_DISTANCE[Distance.FARTHER])),
        }
    far = len(instance.topology.hosts) if model.cross_domain is None else model.cross_domain
    return {
        "host": Fraction(0),
        "rack": Fraction(instance.group_size["rack", host]),
        "domain": Fraction(instance.group_size["domain", host]),
        "far": Fraction(far).limit_denominator(10**6),
    }


class _CpSat:
    """Model-building calls for CP-SAT (products by a multiplication constraint)."""

    def __init__(self) -> None:
        from ortools.sat.python import cp_model

        self.m = cp_model.CpModel()

    def binary(self, name: str) -> Any:
        return self.m.new_bool_var(name)

    def integer(self, lo: int, hi: int, name: str) -> Any:
        return self.m.new_int_var(lo, hi, name)

    def add(self, constraint: Any) -> None:
        self.m.add(constraint)

    def product(
        self,
        used: Any,
        diff: Any,
        n_gpus: int,
        n_items: int,
        name: str,
        pairs: list[tuple[int, Any]],
        items: list[Any],
        busy: int,
    ) -> Any:
        u = self.integer(0, n_gpus, f"U{name}")
        d = self.integer(-n_items, n_items, f"d{name}")
        self.add(u == used)
        self.add(d == diff)
        prod = self.integer(-n_items * n_gpus, n_items * n_gpus, f"p{name}")
        self.m.add_multiplication_equality(prod, [u, d])
        return prod


class _Pulp:
    """Model-building calls for a PuLP MILP (products of binaries linearised)."""

    def __init__(self) -> None:
        import pulp

        self.pulp = pulp
        self.prob = pulp.LpProblem("placement", pulp.LpMinimize)
        self.budget = Budget(None)  # set by _build

    def binary(self, name: str) -> Any:
        return self.prob.add_variable(name, 0, 1, cat="Integer")

    def integer(self, lo: int, hi: int, name: str) -> Any:
        return self.prob.add_variable(name, lo, hi)  # integral at every integral x

    def add(self, constraint: Any) -> None:
        self.prob += constraint

    def product(
        self,
        used: Any,
        diff: Any,
        n_gpus: int,
        n_items: int,
        name: str,
        pairs: list[tuple[int, Any]],
        items: list[Any],
        busy: int,
    ) -> Any:
        """U·diff = busy·diff + Σ_c k_c s_c x_c + Σ_{c≠t} k_c s_t x_c x_t (x binary)."""
        sign = {i: 1 if items[i][1].role == "ps" else -1 for i, _ in pairs}
        expr = busy * diff
        for c, xc in pairs:
            self.budget.check()
            k = items[c][1].gpus
            if not k:
                continue
            expr += k * sign[c] * xc
            for t, xt in pairs:
                if t != c:
                    y = self.prob.add_variable(f"y{name}_{c}_{t}", 0, 1)
                    self.add(y <= xc)
                    self.add(y <= xt)
                    self.add(y >= xc + xt - 1)
                    expr += k * sign[t] * y
        return expr


def model_size(
    instance: PlacementInstance, ctx: PlaceContext[Any], *, pulp: bool
) -> tuple[int, int]:
    """(variables, non-zeros) of :func:`_build`, an upper estimate made without building:
    x[c, h] for every (container, host), ``both`` per PS–worker pair and group, ``u`` and
    ``z`` per (job, host) and, for PuLP with the code form, the linearised products per host (one
    variable and three rows per ordered pair of containers)."""
    topo = instance.topology
    hosts = list(topo.hosts)
    n_hosts = len(hosts)
    n = sum(len(job.containers) for job in instance.jobs)
    variant = ctx.model.variant
    levels = max((len(_chain(instance, h, variant)) for h in hosts), default=1)
    n_groups = len({g for h in hosts for g in _chain(instance, h, variant)})
    pairs = sum(
        sum(c.role == "ps" for c in job.containers)
        * sum(c.role == "worker" for c in job.containers)
        for job in instance.jobs
    )
    variables = n * n_hosts + pairs * n_groups + len(instance.jobs) * n_hosts * 2
    nonzeros = 10 * n * n_hosts + pairs * (3 * n_groups + 4 * n_hosts * levels)
    if ctx.model.variant == "paper":  # z[j, h] ≤ GPUs in use on h: every container of h
        nonzeros += len(instance.jobs) * n * n_hosts
    if pulp and ctx.model.variant == "code":
        variables += n * n * n_hosts
        nonzeros += 7 * n * n * n_hosts
    return variables, nonzeros


def _build(
    instance: PlacementInstance, ctx: PlaceContext[Any], b: Any, budget: Budget | None = None
) -> tuple[dict[tuple[int, str], Any], Fraction, list[tuple[Fraction, Any]]] | None:
    """The placement model on backend ``b``: (x, objective constant, objective terms), or
    None when some container fits on no host. Raises :class:`OutOfTime` (checked per
    container and per job) when ``budget`` is spent."""
    budget = b.budget = budget or Budget(None)
    if ctx.model.contention:
        raise InputError(
            "exact placement does not model link contention (a product of "
            "placement variables); use a heuristic"
        )
    topo = instance.topology
    hosts = list(topo.hosts)
    rack_domains: dict[str | None, set[str | None]] = defaultdict(set)
    for h in hosts:  # the chain formula needs racks nested in domains
        rack_domains[topo.rack(h)].add(topo.domain(h))
    for rack, domains in rack_domains.items():
        if rack is not None and len(domains) > 1:
            raise InputError(
                f"exact placement needs racks inside one domain; rack {rack!r} spans domains"
            )
    model_kind = ctx.model.variant
    lam = Fraction(ctx.model.lam).limit_denominator(10**6)
    gpus_of = {h: [g for g in instance.host_gpus[h] if g not in instance.busy] for h in hosts}
    n_gpus = {h: len(instance.host_gpus[h]) for h in hosts}
    busy = {h: n_gpus[h] - len(gpus_of[h]) for h in hosts}
    items = [(job, c) for job in instance.jobs for c in job.containers]
    n_items = len(items)

    x: dict[tuple[int, str], Any] = {}
    for i, (_, c) in enumerate(items):
        budget.check()
        for h in hosts:
            usable = sum(instance.gpu_memory(g) >= c.gpu_memory for g in gpus_of[h])
            if (
                c.cpus <= instance.capacity(h, "cpus")
                and c.memory <= instance.capacity(h, "memory")
                and c.gpus <= usable
            ):
                x[i, h] = b.binary(f"x{i}_{h}")
        options = [x[i, h] for h in hosts if (i, h) in x]
        if not options:
            return None
        b.add(sum(options) == 1)
    on = defaultdict(list)  # host -> [(item, var)]
    for (i, h), var in x.items():
        on[h].append((i, var))
    for h in hosts:
        budget.check()
        for res in ("cpus", "memory"):
            b.add(
                sum(math.ceil(getattr(items[i][1], res) * 1000) * v for i, v in on[h])
                <= math.floor(instance.capacity(h, res) * 1000 + 1e-6)
            )
        for theta in sorted({items[i][1].gpu_memory for i, _ in on[h]}):
            have = sum(instance.gpu_memory(g) >= theta for g in gpus_of[h])
            b.add(
                sum(items[i][1].gpus * v for i, v in on[h] if items[i][1].gpu_memory >= theta)
                <= have
            )
    # identical containers of a job are interchangeable: their host indices are ordered
    position = {h: k for k, h in enumerate(hosts)}
    for a in range(len(items) - 1):
        budget.check()
        if (
            items[a][0] is items[a + 1][0]
            and items[a][1].role == items[a + 1][1].role
            and _demand(items[a][1]) == _demand(items[a + 1][1])
        ):
            b.add(
                sum(position[h] * v for (i, h), v in x.items() if i == a)
                <= sum(position[h] * v for (i, h), v in x.items() if i == a + 1)
            )
    for job in instance.jobs:
        budget.check()
        if job.one_per_host:
            for h in hosts:
                b.add(sum(v for i, v in on[h] if items[i][0] is job) <= 1)

    terms: list[tuple[Fraction, Any]] = []  # objective = const + Σ coefficient × variable
    const = Fraction(0)

    # network: v_far − Σ_G (v_parent − v_G)·both[G] per PS–worker pair, weighted
    groups: dict[tuple[str, Any], list[str]] = defaultdict(list)
    for h in hosts:
        for level_group in _chain(instance, h, model_kind):
            groups[level_group].append(h)
    gains = {}
    for (level, group), members in groups.items():
        vals = _values(instance, ctx, members[0])
        levels = [lv for lv, _ in _chain(instance, members[0], model_kind)]
        k = levels.index(level) + 1
        gains[level, group] = vals[levels[k] if k < len(levels) else "far"] - vals[level]
    far = _values(instance, ctx, hosts[0])["far"]
    for job in instance.jobs:
        budget.check()
        weight = lam if model_kind == "paper" else Fraction(job.bandwidth).limit_denominator(10**6)
        idx = [i for i, (j, _) in enumerate(items) if j is job]
        for p in (i for i in idx if items[i][1].role == "ps"):
            for w in (i for i in idx if items[i][1].role == "worker"):
                budget.check()
                const += weight * far
                for k, (key, members) in enumerate(groups.items()):
                    if weight * gains[key] == 0:
                        continue
                    both = b.binary(f"b{p}_{w}_{key[0]}{k}")
                    in_p = sum(x[p, h] for h in members if (p, h) in x)
                    in_w = sum(x[w, h] for h in members if (w, h) in x)
                    b.add(both <= in_p)
                    b.add(both <= in_w)
                    b.add(both >= in_p + in_w - 1)
                    terms.append((-weight * gains[key], both))

    # load (code form) or fitness (paper form), with u = "job uses host" (exact OR)
    used = {h: busy[h] + sum(items[i][1].gpus * v for i, v in on[h]) for h in hosts}
    for job in instance.jobs:
        budget.check()
        for h in hosts:
            mine = [v for i, v in on[h] if items[i][0] is job]
            if not mine:
                continue
            u = b.binary(f"u{job.id}_{h}")
            for v in mine:
                b.add(u >= v)
            b.add(u <= sum(mine))
            if model_kind == "code":
                terms.append((Fraction(1, n_items), u))
            elif n_gpus[h]:
                z = b.integer(0, n_gpus[h], f"z{job.id}_{h}")
                b.add(z <= n_gpus[h] * u)
                b.add(z <= used[h])
                terms.append((-(1 - lam) / n_gpus[h], z))
    if model_kind == "code":
        for h in hosts:
            budget.check()
            if not n_gpus[h] or not on[h]:
                continue
            diff = sum((1 if items[i][1].role == "ps" else -1) * v for i, v in on[h])
            prod = b.product(used[h], diff, n_gpus[h], n_items, h, on[h], items, busy[h])
            step = Fraction(1, n_gpus[h] * n_items)
            terms += [(step, prod), (step, diff)]
    return x, const, terms


def _host_map(
    instance: PlacementInstance, x: dict[tuple[int, str], Any], chosen: Any
) -> dict[tuple[str, str], str]:
    items = [(job, c) for job in instance.jobs for c in job.containers]
    return {(items[i][0].id, items[i][1].id): h for (i, h), v in x.items() if chosen(v) > 0.5}


#: The answer when some container fits on no host at all (proved infeasible).
NO_HOST = PlaceOutput(status=Status.INFEASIBLE, extra={"reason": "a container fits on no host"})


def _check_size(
    instance: PlacementInstance, ctx: PlaceContext[Any], method: str, pulp: bool
) -> int:
    """The estimated non-zeros of the model; InputError when it is too large."""
    variables, nonzeros = model_size(instance, ctx, pulp=pulp)
    if lp_too_large(variables, nonzeros, pulp=pulp):
        raise InputError(
            f"--method {method}: the placement model of this instance would have "
            f"{size_text(variables, nonzeros, pulp=pulp)} (use gga or bestfit)"
        )
    return nonzeros


def _fallback(
    instance: PlacementInstance, ctx: PlaceContext[Any], extra: dict[str, Any], budget: Budget
) -> PlaceOutput:
    """The best-fit placement, when the time limit ran out before the solver could run (built
    within what is left of ``budget``: none when that runs out too)."""
    from optsched.placement.heuristics import greedy_plan

    extra = {**extra, "solver_status": "NOT_SOLVED: time limit", "placement": "bestfit"}
    try:
        plan = greedy_plan(instance, ctx.model, budget)
    except OutOfTime:
        return PlaceOutput(
            status=Status.UNKNOWN, extra={**extra, "placement": None, "stopped": "time limit"}
        )
    if plan is None:
        return PlaceOutput(status=Status.UNKNOWN, extra=extra)
    return PlaceOutput(placement_from_hosts(instance, plan), extra=extra)


#: Share of ``--time-limit`` the model build may use: the rest is kept so that, when the build
#: runs out, the best-fit fallback can still be built within the limit.
BUILD_SHARE = 0.5


def _budgets(ctx: PlaceContext[Any]) -> tuple[Budget, Budget]:
    """The method's budget (``ctx.time_limit``) and the model build's (its first
    :data:`BUILD_SHARE`), started together."""
    limit = ctx.time_limit
    return Budget(limit), Budget(None if limit is None else limit * BUILD_SHARE)


def solve_placement(
    instance: PlacementInstance, ctx: PlaceContext[CpsatPlaceOptions]
) -> PlaceOutput:
    """CP-SAT on the exactly integer-scaled objective, within ``ctx.time_limit`` (counted
    from the call: importing OR-Tools, about a second cold, is part of it)."""
    budget, build_budget = _budgets(ctx)
    from ortools.sat.python import cp_model

    _check_size(instance, ctx, "cpsat", pulp=False)
    b = _CpSat()
    try:
        built = _build(instance, ctx, b, build_budget)
        build_budget.check()
    except OutOfTime:
        return _fallback(instance, ctx, {}, budget)
    if built is None:
        return NO_HOST
    x, const, terms = built
    scale = math.lcm(*(f.denominator for f, _ in terms), const.denominator)
    b.m.minimize(sum(int(f * scale) * v for f, v in terms))
    if budget.expired():
        return _fallback(instance, ctx, {}, budget)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = ctx.options.workers
    solver.parameters.random_seed = ctx.seed
    left = budget.left()
    if left is not None:
        solver.parameters.max_time_in_seconds = left
    if ctx.options.work is not None:  # CP-SAT's deterministic time is the work
        solver.parameters.max_deterministic_time = cpsat_limit(ctx.options.work)
    code, stop = solve_stoppable(solver, b.m)
    status = solver.status_name(code)
    extra: dict[str, Any] = {
        "solver_status": status,
        "variables": len(x),
        "work": cpsat_work(solver),
        "interrupted": stop and status != "OPTIMAL",
    }
    if extra["interrupted"]:
        extra["stopped"] = "interrupted"
    elif status == "FEASIBLE" and cpsat_work_spent(solver, ctx.options.work):
        extra["stopped"] = "work"
    if status == "INFEASIBLE":
        return PlaceOutput(status=Status.INFEASIBLE, extra=extra)
    if status == "MODEL_INVALID":
        raise OptschedError("CP-SAT: invalid placement model")
    # the objective is integral (scaled), so its bound may be rounded up
    scaled_bound = math.ceil(solver.best_objective_bound - 1e-6)
    bound = float(const + Fraction(scaled_bound, scale))
    if status not in ("OPTIMAL", "FEASIBLE"):
        return PlaceOutput(bound=bound, status=Status.UNKNOWN, extra=extra)
    placement = placement_from_hosts(instance, _host_map(instance, x, solver.value))
    return PlaceOutput(placement, bound=bound, extra=extra)


def solve_placement_milp(
    instance: PlacementInstance, ctx: PlaceContext[MilpPlaceOptions], backend: str
) -> PlaceOutput:
    """The same model as a MILP through PuLP (HiGHS or CBC), bound read from the solver,
    within ``ctx.time_limit``."""
    budget, build_budget = _budgets(ctx)
    from optsched.exact.milp import PULP_HANDOVER_SECONDS_PER_NONZERO, map_status, solve_pulp

    nonzeros = _check_size(instance, ctx, f"milp-{backend}", pulp=True)
    b = _Pulp()
    try:
        built = _build(instance, ctx, b, build_budget)
    except OutOfTime:
        return _fallback(instance, ctx, {"backend": backend}, budget)
    if built is None:
        return NO_HOST
    x, const, terms = built
    b.prob += b.pulp.lpSum(float(f) * v for f, v in terms) + float(const)
    left = budget.left()
    if left is not None:
        left -= PULP_HANDOVER_SECONDS_PER_NONZERO * nonzeros
        if left < MIN_SOLVER_SECONDS:
            return _fallback(instance, ctx, {"backend": backend}, budget)
    bound, solver_status, interrupted = solve_pulp(
        b.prob, backend, time_limit=left, threads=ctx.options.threads, seed=ctx.seed
    )
    extra: dict[str, Any] = {
        "solver_status": solver_status,
        "backend": backend,
        "variables": b.prob.numVariables(),
        "interrupted": interrupted,
    }
    status, has_solution = map_status(b.prob.sol_status)
    if not has_solution:
        return PlaceOutput(
            bound=bound if status is Status.UNKNOWN else None, status=status, extra=extra
        )
    placement = placement_from_hosts(instance, _host_map(instance, x, lambda v: v.value()))
    return PlaceOutput(placement, bound=bound, extra=extra)


@dataclass(frozen=True)
class CpsatPlaceOptions(CostOptions):
    """Options of the CP-SAT placement beyond the cost."""

    workers: int = count("CP-SAT worker threads (default 1)")
    work: float | None = work_option()


@dataclass(frozen=True)
class MilpPlaceOptions(CostOptions):
    """Options of the MILP placements beyond the cost."""

    threads: int = count("HiGHS or CBC threads (default 1)")


@register(
    "cpsat",
    kind="place",
    default_time_limit=EXACT_TIME_LIMIT,
    imports=("ortools.sat.python.cp_model",),
    options=CpsatPlaceOptions,
    description="exact placement with CP-SAT for the order-free cost (certified bound)",
)
def _place_cpsat(instance: PlacementInstance, ctx: PlaceContext[CpsatPlaceOptions]) -> PlaceOutput:
    return solve_placement(instance, ctx)


@register(
    "milp-highs",
    kind="place",
    default_time_limit=EXACT_TIME_LIMIT,
    imports=("pulp", "highspy"),
    options=MilpPlaceOptions,
    description="exact placement as a MILP through PuLP + HiGHS (certified bound)",
)
def _place_milp_highs(
    instance: PlacementInstance, ctx: PlaceContext[MilpPlaceOptions]
) -> PlaceOutput:
    return solve_placement_milp(instance, ctx, "highs")


@register(
    "milp-cbc",
    kind="place",
    default_time_limit=EXACT_TIME_LIMIT,
    imports=("pulp",),
    options=MilpPlaceOptions,
    description="exact placement as a MILP through PuLP + CBC (certified bound)",
)
def _place_milp_cbc(
    instance: PlacementInstance, ctx: PlaceContext[MilpPlaceOptions]
) -> PlaceOutput:
    return solve_placement_milp(instance, ctx, "cbc")
