"""Exact placement with CP-SAT for Liquid's order-free cost (models/placement-cpsat.md).

x[c, h] = 1 when container c goes on host h. Capacities per host: CPUs, memory, and GPUs by
memory threshold (containers needing at least θ MB of GPU memory use GPUs with at least θ MB;
these nested sets make the threshold counts exact by Hall's theorem), one container per host for
``one_per_host`` jobs. GPUs are given afterwards by the same rule, largest memory needs first.

Network: for a PS–worker pair, ``both[G]`` = both on hosts of group G (a host, a rack, a
domain). On a chain host ⊂ rack ⊂ domain ⊂ cluster with pair costs v_host = 0 ≤ v_rack ≤
v_domain ≤ v_far, the pair costs v_far − Σ_G (v_parent(G) − v_G)·both[G]: exact because the
groups containing both containers are exactly the common ancestors. Load: the fitness/load terms
of :mod:`optsched.placement.cost` with u[j, h] = job j uses host h (exact OR), and, for the
reference-code form, the product (GPUs in use on h) × (PSs − workers on h) by a multiplication
constraint. The objective is scaled to integers exactly (rational λ, lcm of GPU counts), so
CP-SAT's bound divided back is a certified lower bound.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from typing import Any

from optsched.errors import InputError, OptschedError
from optsched.params import int_param
from optsched.placement.cost import CODE_DISTANCE
from optsched.placement.model import PlacementInstance, placement_from_hosts
from optsched.placement.place import COST_PARAMS, PlaceContext, PlaceOutput
from optsched.result import Status
from optsched.solve import register
from optsched.topology import Distance


def _demand(c: Any) -> tuple[float, ...]:
    return (c.gpus, c.cpus, c.memory, c.gpu_memory)


def _chain(instance: PlacementInstance, host: str) -> list[tuple[str, str]]:
    """(level, group) from the host up: ("host", h), ("rack", r)?, ("domain", d)?."""
    topo = instance.topology
    out = [("host", host)]
    if topo.rack(host) is not None:
        out.append(("rack", str(topo.rack(host))))
    if topo.domain(host) is not None:
        out.append(("domain", str(topo.domain(host))))
    return out


def _values(instance: PlacementInstance, ctx: PlaceContext, host: str) -> dict[str, Fraction]:
    """Pair cost when the nearest common group of the pair is at each level (and 'far')."""
    model = ctx.model
    if model.variant == "code":
        return {"host": Fraction(0), "rack": Fraction(int(CODE_DISTANCE[Distance.SAME_RACK])),
                "domain": Fraction(int(CODE_DISTANCE[Distance.SAME_DOMAIN])),
                "far": Fraction(int(CODE_DISTANCE[Distance.FARTHER]))}
    far = len(instance.topology.hosts) if model.cross_domain is None else model.cross_domain
    return {"host": Fraction(0), "rack": Fraction(instance.group_size["rack", host]),
            "domain": Fraction(instance.group_size["domain", host]),
            "far": Fraction(far).limit_denominator(10**6)}


def solve_placement(instance: PlacementInstance, ctx: PlaceContext) -> PlaceOutput:
    from ortools.sat.python import cp_model

    topo = instance.topology
    hosts = list(topo.hosts)
    rack_domains: dict[str | None, set[str | None]] = defaultdict(set)
    for h in hosts:  # the chain formula needs racks nested in domains
        rack_domains[topo.rack(h)].add(topo.domain(h))
    for rack, domains in rack_domains.items():
        if rack is not None and len(domains) > 1:
            raise InputError(f"exact placement needs racks inside one domain; rack {rack!r} "
                             "spans domains")
    model_kind = ctx.model.variant
    lam = Fraction(ctx.model.lam).limit_denominator(10**6)
    gpus_of = {h: [g for g in instance.host_gpus[h] if g not in instance.busy] for h in hosts}
    n_gpus = {h: len(instance.host_gpus[h]) for h in hosts}
    busy = {h: n_gpus[h] - len(gpus_of[h]) for h in hosts}
    items = [(job, c) for job in instance.jobs for c in job.containers]
    n_items = len(items)

    m = cp_model.CpModel()
    x: dict[tuple[int, str], Any] = {}
    for i, (_, c) in enumerate(items):
        for h in hosts:
            usable = sum(instance.gpu_memory(g) >= c.gpu_memory for g in gpus_of[h])
            if c.cpus <= instance.capacity(h, "cpus") and c.memory <= instance.capacity(
                    h, "memory") and c.gpus <= usable:
                x[i, h] = m.new_bool_var(f"x{i}_{h}")
        options = [x[i, h] for h in hosts if (i, h) in x]
        if not options:
            return PlaceOutput(status=Status.INFEASIBLE, extra={"reason": "a container fits "
                                                                "on no host"})
        m.add_exactly_one(options)
    on = defaultdict(list)  # host -> [(item, var)]
    for (i, h), var in x.items():
        on[h].append((i, var))
    for h in hosts:
        for res in ("cpus", "memory"):
            m.add(sum(math.ceil(getattr(items[i][1], res) * 1000) * v for i, v in on[h])
                  <= math.floor(instance.capacity(h, res) * 1000 + 1e-6))
        for theta in sorted({items[i][1].gpu_memory for i, _ in on[h]}):
            have = sum(instance.gpu_memory(g) >= theta for g in gpus_of[h])
            m.add(sum(items[i][1].gpus * v for i, v in on[h] if items[i][1].gpu_memory >= theta)
                  <= have)
    # identical containers of a job are interchangeable: their host indices are ordered
    position = {h: k for k, h in enumerate(hosts)}
    for a in range(len(items) - 1):
        b = a + 1
        if items[a][0] is items[b][0] and items[a][1].role == items[b][1].role and \
                _demand(items[a][1]) == _demand(items[b][1]):
            m.add(sum(position[h] * v for (i, h), v in x.items() if i == a)
                  <= sum(position[h] * v for (i, h), v in x.items() if i == b))
    for job in instance.jobs:
        if job.one_per_host:
            for h in hosts:
                m.add(sum(v for i, v in on[h] if items[i][0] is job) <= 1)

    terms: list[tuple[Fraction, Any]] = []  # objective = const + Σ coefficient × variable
    const = Fraction(0)

    # network: v_far − Σ_G (v_parent − v_G)·both[G] per PS–worker pair, weighted
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for h in hosts:
        for level_group in _chain(instance, h):
            groups[level_group].append(h)
    gains = {}
    for (level, group), members in groups.items():
        vals = _values(instance, ctx, members[0])
        levels = [lv for lv, _ in _chain(instance, members[0])]
        k = levels.index(level) + 1
        gains[level, group] = vals[levels[k] if k < len(levels) else "far"] - vals[level]
    far = _values(instance, ctx, hosts[0])["far"]
    for job in instance.jobs:
        weight = lam if model_kind == "paper" else Fraction(job.bandwidth).limit_denominator(
            10**6)
        idx = [i for i, (j, _) in enumerate(items) if j is job]
        for p in (i for i in idx if items[i][1].role == "ps"):
            for w in (i for i in idx if items[i][1].role == "worker"):
                const += weight * far
                for key, members in groups.items():
                    if weight * gains[key] == 0:
                        continue
                    both = m.new_bool_var(f"b{p}_{w}_{key[0]}_{key[1]}")
                    in_p = sum(x[p, h] for h in members if (p, h) in x)
                    in_w = sum(x[w, h] for h in members if (w, h) in x)
                    m.add(both <= in_p)
                    m.add(both <= in_w)
                    m.add(both >= in_p + in_w - 1)
                    terms.append((-weight * gains[key], both))

    # load (code form) or fitness (paper form), with u = "job uses host" (exact OR)
    used = {h: busy[h] + sum(items[i][1].gpus * v for i, v in on[h]) for h in hosts}
    for job in instance.jobs:
        for h in hosts:
            mine = [v for i, v in on[h] if items[i][0] is job]
            if not mine:
                continue
            u = m.new_bool_var(f"u{job.id}_{h}")
            for v in mine:
                m.add(u >= v)
            m.add(u <= sum(mine))
            if model_kind == "code":
                terms.append((Fraction(1, n_items), u))
            elif n_gpus[h]:
                z = m.new_int_var(0, n_gpus[h], f"z{job.id}_{h}")
                m.add(z <= n_gpus[h] * u)
                m.add(z <= used[h])
                terms.append((-(1 - lam) / n_gpus[h], z))
    if model_kind == "code":
        for h in hosts:
            if not n_gpus[h] or not on[h]:
                continue
            diff = m.new_int_var(-n_items, n_items, f"d{h}")
            m.add(diff == sum((1 if items[i][1].role == "ps" else -1) * v for i, v in on[h]))
            u_h = m.new_int_var(0, n_gpus[h], f"U{h}")
            m.add(u_h == used[h])
            prod = m.new_int_var(-n_items * n_gpus[h], n_items * n_gpus[h], f"p{h}")
            m.add_multiplication_equality(prod, [u_h, diff])
            step = Fraction(1, n_gpus[h] * n_items)
            terms += [(step, prod), (step, diff)]
    scale = math.lcm(*(f.denominator for f, _ in terms), const.denominator)
    m.minimize(sum(int(f * scale) * v for f, v in terms))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = int_param(ctx.params, "workers", 1)
    solver.parameters.random_seed = ctx.seed
    if ctx.time_limit is not None:
        solver.parameters.max_time_in_seconds = ctx.time_limit
    status = solver.status_name(solver.solve(m))
    extra: dict[str, Any] = {"solver_status": status, "variables": len(x)}
    if status == "INFEASIBLE":
        return PlaceOutput(status=Status.INFEASIBLE, extra=extra)
    if status == "MODEL_INVALID":
        raise OptschedError("CP-SAT: invalid placement model")
    # the objective is integral (scaled), so its bound may be rounded up
    scaled_bound = math.ceil(solver.best_objective_bound - 1e-6)
    bound = float(const + Fraction(scaled_bound, scale))
    if status not in ("OPTIMAL", "FEASIBLE"):
        return PlaceOutput(bound=bound, status=Status.UNKNOWN, extra=extra)
    host_of = {(items[i][0].id, items[i][1].id): h for (i, h), v in x.items()
               if solver.value(v)}
    return PlaceOutput(placement_from_hosts(instance, host_of), bound=bound, extra=extra)


@register("cpsat", kind="place",
          params={**COST_PARAMS, "workers": "CP-SAT worker threads (default 1)"},
          description="exact placement with CP-SAT for the order-free cost (certified bound)")
def _place_cpsat(instance: PlacementInstance, ctx: PlaceContext) -> PlaceOutput:
    return solve_placement(instance, ctx)
