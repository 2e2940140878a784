"""Liquid's placement cost in its two published forms (TPDS'22 §5.2; seeds.md §2.3).

Both are *order-free*: a function of the final container → host map only, so exact methods
can optimise them and :func:`~optsched.placement.check.check_placement` recomputes them.

**paper** (eqs. 2–6): Cost(n₁, n₂) = 0 on one host, the number of hosts of the rack on one
rack, the number of hosts of the domain on one domain, ``cross_domain`` farther (the paper gives
no value; default: the number of hosts in the cluster). Cost_κ = Σ over the job's PS–worker
pairs; Fitness_j = −(GPUs in use on host j) / (GPUs of host j) for every host j the job uses
(GPUs in use = busy GPUs plus every placed container's GPUs; hosts without GPUs count 0);
Score_κ = λ·Cost_κ + (1 − λ)·Σ_j Fitness_j; the cost is Σ_κ Score_κ (λ default 0.5).

**code** (the reference implementation, ``evaluator.go``): distances 0 / 1 / 4 / 40 (host, rack,
domain, farther) weighted by the job's predicted bandwidth, summed over PS–worker pairs, plus
(Σ_t s_t·load_t + #distinct (job, host) pairs) / #containers, where s_t = +1 for a PS (spread)
and −1 for a worker (pack). The code's load_t = (GPUs in use on the host *when t is inserted* +
1 + t's GPUs) / GPUs of the host depends on the insertion order; here load_t = (GPUs in use on
the host in the final placement + 1) / GPUs of the host, the same value for every container of a
host, so the cost no longer depends on the order (it equals the code's when the container is
the last one placed on its host).

**Link contention** (``contention``, either form): a PS–worker pair on different hosts is a
flow, and the flows whose worker sits on one host split that host's link equally, so each
remote pair's distance term is multiplied by the number of flows (of every job) whose worker
is on its worker's host. Counting the PS side as well would make Liquid's p:ww and p:w:w
placements equally slow, while its measurements (§2.7: VGG-16 1190 s vs 810 s) show the
worker side is the bottleneck (:func:`~optsched.placement.durations.contention_durations`).
The term is a product of placement variables, so exact methods refuse it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from optsched.errors import InputError
from optsched.limits import MAX_VALUE
from optsched.placement.model import PlacementInstance
from optsched.topology import Distance

VARIANTS = ("paper", "code")
CODE_DISTANCE = {Distance.SAME_HOST: 0.0, Distance.SAME_RACK: 1.0, Distance.SAME_DOMAIN: 4.0,
                 Distance.FARTHER: 40.0}


@dataclass(frozen=True)
class CostModel:
    """Which cost, and its parameters (λ and the cross-domain cost of the paper's form;
    link contention)."""

    variant: str = "paper"
    lam: float = 0.5
    cross_domain: float | None = None
    contention: bool = False

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise InputError(f"cost variant must be one of {VARIANTS}, got {self.variant!r}")
        if not 0 <= self.lam <= 1:
            raise InputError(f"lambda must be in [0, 1], got {self.lam!r}")
        if self.cross_domain is not None and not 0 <= self.cross_domain <= MAX_VALUE:
            raise InputError(f"cross_domain must be in [0, {MAX_VALUE:g}], "
                             f"got {self.cross_domain!r}")


@dataclass(frozen=True)
class CostBreakdown:
    """The cost and its two parts (network; fitness or load)."""

    total: float
    network: float
    load: float


def pair_cost(instance: PlacementInstance, model: CostModel, a: str, b: str) -> float:
    """The distance term of one PS–worker pair on hosts ``a`` and ``b`` (before weights)."""
    topo = instance.topology
    d = topo.distance(a, b)
    if model.variant == "code":
        return CODE_DISTANCE[d]
    if d is Distance.SAME_HOST:
        return 0.0
    if d is Distance.FARTHER:
        return float(len(topo.hosts)) if model.cross_domain is None else model.cross_domain
    return float(instance.group_size["rack" if d is Distance.SAME_RACK else "domain", a])


def placement_cost(instance: PlacementInstance, host_of: Mapping[tuple[str, str], str],
                   model: CostModel | None = None) -> CostBreakdown:
    """The cost of a map (job id, container id) → host id; containers absent from the map are
    left out (a partial placement's cost, as best-fit evaluates it)."""
    model = model or CostModel()
    topo = instance.topology
    used: dict[str, int] = defaultdict(int)
    for g in instance.busy:
        used[topo.host_of[g]] += 1
    placed = [(job, pairs) for job in instance.jobs
              if (pairs := [(c, host_of[job.id, c.id]) for c in job.containers
                            if (job.id, c.id) in host_of])]  # jobs with nothing placed add 0
    for _, pairs in placed:
        for c, h in pairs:
            used[h] += c.gpus

    def share(host: str) -> float:
        total = len(instance.host_gpus[host])
        return used[host] / total if total else 0.0

    flows: dict[str, int] = defaultdict(int)  # remote PS–worker pairs by worker host
    if model.contention:
        for _, pairs in placed:
            ps_hosts = [h for c, h in pairs if c.role == "ps"]
            for c, w in pairs:
                if c.role == "worker":
                    flows[w] += sum(p != w for p in ps_hosts)
    network = load = 0.0
    n_containers = max(1, sum(len(pairs) for _, pairs in placed))
    pairs_jobs_hosts = 0
    for job, pairs in placed:
        ps = [h for c, h in pairs if c.role == "ps"]
        workers = [h for c, h in pairs if c.role == "worker"]
        job_net = sum(pair_cost(instance, model, p, w) * (flows[w] if model.contention else 1)
                      for p in ps for w in workers)
        hosts = {h for _, h in pairs}
        if model.variant == "paper":
            network += model.lam * job_net
            load += (1 - model.lam) * -sum(share(h) for h in hosts)
        else:
            network += job.bandwidth * job_net
            for c, h in pairs:
                total = len(instance.host_gpus[h])
                step = (used[h] + 1) / total if total else 0.0
                load += (step if c.role == "ps" else -step) / n_containers
            pairs_jobs_hosts += len(hosts)
    if model.variant == "code":
        load += pairs_jobs_hosts / n_containers
    return CostBreakdown(network + load, network, load)
