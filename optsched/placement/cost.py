"""Liquid's placement cost in its two forms (TPDS'22 §5.2, eqs. 2–6).

Both are *order-free*: a function of the final container → host map only, so exact methods
can optimise them and :func:`~optsched.placement.check.check_placement` recomputes them.

**paper** (eqs. 2–6, objective name ``liquid_cost_paper``): Cost(n₁, n₂) = 0 on one host, the
number of hosts of the rack on one rack, the number of hosts of the domain on one domain,
``cross_domain`` farther (the paper gives no value; default: the number of hosts in the
cluster, which is also what eq. 2 gives when every host is in one rack). Hosts without a rack
or domain label share no group, so two of them are ``cross_domain`` apart. Cost_κ = Σ over
the job's PS–worker pairs (eq. 5); Fitness_j = −(GPUs in use on host j) / (GPUs of host j)
for every host j the job uses (eq. 6; GPUs in use = busy GPUs plus every placed container's
GPUs — for a batch, the final occupancy, one reading of eq. 6's UsedGPU; hosts without GPUs
count 0); Score_κ = λ·Cost_κ + (1 − λ)·Σ_j Fitness_j (eq. 4); the cost is Σ_κ Score_κ
(λ default 0.5; the paper gives none).

**code** (objective name ``liquid_cost_code_reconstructed``): a *reconstruction of the intent*
of the reference implementation's evaluator (PasaLab/Liquid ``evaluator.go``), not a
transcription — no function of that code computes this total. Distances 0 / 1 / 4 / 40
(host, rack, domain, farther) weighted by the job's predicted bandwidth, summed over PS–worker
pairs, plus (Σ_t s_t·load_t + #distinct (job, host) pairs) / #containers, where s_t = +1 for
a PS (spread) and −1 for a worker (pack). Where it departs from the code:

- the code's load_t = (GPUs in use on the host *when t is inserted* + 1 + t's GPUs) / GPUs of
  the host depends on the insertion order; here load_t = (GPUs in use on the host in the final
  placement + 1) / GPUs of the host, the same for every container of a host, so the cost does
  not depend on the order (it equals the code's term when t is the last container placed on
  its host);
- the code multiplies the *whole* load sum by one sign, that of the container being placed
  (``fastBestFit``; always −1 in its GA), and its GA adds the size of the plan's node pool
  over #containers; here every container has its own sign and there is no pool term;
- the code's evaluator resets its per-job PS/worker totals when a new job's first task is
  added, so its multi-job (GA) value depends on Go's map order; here jobs are independent.

It matches the code's *decision* in best-fit on a single job up to the 1/n-scaled load terms of
the job's containers already on the candidate host. Distances follow the code's labels
(:func:`code_distance`): two hosts whose rack labels are equal are 1 apart, and the code treats
a missing label as the empty label ``""``, so hosts without rack labels (a flat cluster) are 1
apart, not 40.

**Link contention** (``contention``, either form): a PS–worker pair on different hosts is a
flow, and the flows whose worker sits on one host split that host's link equally, so each
remote pair's distance term is multiplied by the number of flows (of every job) whose worker
is on its worker's host. Counting the PS side as well would make Liquid's p:ww and p:w:w
placements equally slow, while its measurements (§2.7: VGG-16 1190 s vs 810 s) show the
worker side is the bottleneck (:func:`~optsched.placement.durations.contention_durations`).
The term is a product of placement variables, so exact methods refuse it.

The cost uses the topology's distance classes only, never its link bandwidths: a cluster with
10 or 15 Gbit/s host links has the same placement cost (link speeds enter job durations,
:mod:`optsched.placement.durations`, and the simulator).

:func:`job_cost` is the cost of one job alone (eq. 3's Score_κ in either form), the other jobs'
containers counted only as GPUs in use: the quantity best-fit minimises per container.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from optsched.errors import InputError
from optsched.limits import MAX_VALUE
from optsched.options import Options, choice, number, switch
from optsched.placement.model import Container, PlacementInstance, PlacementJob
from optsched.topology import Distance, Topology

VARIANTS: tuple[Literal["paper", "code"], ...] = ("paper", "code")
#: The Result's ``objective_name`` of each cost form (``cost=code`` keeps its parameter value;
#: its name says the order-free cost is a reconstruction of the reference code).
OBJECTIVE_NAMES = {"paper": "liquid_cost_paper", "code": "liquid_cost_code_reconstructed"}
CODE_DISTANCE = {
    Distance.SAME_HOST: 0.0,
    Distance.SAME_RACK: 1.0,
    Distance.SAME_DOMAIN: 4.0,
    Distance.FARTHER: 40.0,
}


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
            raise InputError(
                f"cross_domain must be in [0, {MAX_VALUE:g}], got {self.cross_domain!r}"
            )

    @property
    def objective_name(self) -> str:
        """``liquid_cost_paper`` or ``liquid_cost_code_reconstructed``."""
        return OBJECTIVE_NAMES[self.variant]


@dataclass(frozen=True)
class CostOptions(Options):
    """The options every placement method takes: the cost it is measured (and, for the
    heuristics, guided) by. A method with options of its own subclasses this class.

    λ is the key ``lambda`` on the command line and in ``params`` mappings, and the field
    ``lam`` in Python (``lambda`` is a Python keyword): ``CostOptions(lam=0.3)``."""

    cost: Literal["paper", "code"] = choice(
        "paper (eqs. 2-6: λ, rack/domain sizes, fitness; default) or code (a "
        "reconstruction of the reference code's evaluator: 1/4/40 × bandwidth, "
        "order-free PS-spread/worker-pack load; objective "
        "liquid_cost_code_reconstructed)",
        VARIANTS,
    )
    lam: float = number("the paper's λ in [0, 1] (default 0.5)", 0.5, high=1.0, key="lambda")
    cross_domain: float | None = number(
        "the paper's cost of a cross-domain pair (default: the number of hosts)"
    )
    contention: bool = switch(
        "1: weight each remote pair by the flows sharing its worker's "
        "host link (default 0; heuristics only)"
    )

    def cost_model(self) -> CostModel:
        """The cost model these options describe."""
        return CostModel(self.cost, self.lam, self.cross_domain, self.contention)


@dataclass(frozen=True)
class CostBreakdown:
    """The cost and its two parts (network; fitness or load)."""

    total: float
    network: float
    load: float


def code_groups(topology: Topology, host: str) -> tuple[tuple[str, str | None], str | None]:
    """The (rack, domain) groups of ``host`` as the reference code sees them.

    The code compares its agents' ``Rack`` and ``Domain`` labels as strings, a missing label
    being the empty string, so every unlabelled host is in one rack ``""`` and one domain
    ``""`` (``evaluator.go``: equal rack labels cost 1 per pair). Here a missing rack is an
    unlabelled rack *of its domain* (``("unlabelled", domain)``), so racks stay nested in
    domains: the one departure is two rack-less hosts of different labelled domains, which
    the code's counters would price at 1 + 40 − 4 = 37 and this gives 40."""
    rack, domain = topology.rack(host), topology.domain(host)
    return ("rack", rack) if rack is not None else ("unlabelled", domain), domain


def code_distance(topology: Topology, a: str, b: str) -> Distance:
    """The distance class of two hosts under the reference code's labels
    (:func:`code_groups`): hosts without rack labels in one domain (or none) share a rack."""
    if a == b:
        return Distance.SAME_HOST
    (ra, da), (rb, db) = code_groups(topology, a), code_groups(topology, b)
    if ra == rb:
        return Distance.SAME_RACK
    return Distance.SAME_DOMAIN if da == db else Distance.FARTHER


def pair_cost(instance: PlacementInstance, model: CostModel, a: str, b: str) -> float:
    """The distance term of one PS–worker pair on hosts ``a`` and ``b`` (before weights)."""
    topo = instance.topology
    if model.variant == "code":
        return CODE_DISTANCE[code_distance(topo, a, b)]
    d = topo.distance(a, b)
    if d is Distance.SAME_HOST:
        return 0.0
    if d is Distance.FARTHER:
        return float(len(topo.hosts)) if model.cross_domain is None else model.cross_domain
    return float(instance.group_size["rack" if d is Distance.SAME_RACK else "domain", a])


def _job_terms(
    instance: PlacementInstance,
    model: CostModel,
    job: PlacementJob,
    pairs: Sequence[tuple[Container, str]],
    used: Mapping[str, int],
    flows: Mapping[str, int],
    n_containers: int,
) -> tuple[float, float]:
    """(network, fitness or load) of one job's placed containers ``pairs``: ``used`` = GPUs in
    use per host, ``flows`` = remote PS–worker pairs per worker host (contention only),
    ``n_containers`` = the code form's divisor."""
    ps = [h for c, h in pairs if c.role == "ps"]
    workers = [h for c, h in pairs if c.role == "worker"]
    job_net = sum(
        pair_cost(instance, model, p, w) * (flows[w] if model.contention else 1)
        for p in ps
        for w in workers
    )
    hosts = {h for _, h in pairs}

    def share(host: str) -> float:
        total = len(instance.host_gpus[host])
        return used[host] / total if total else 0.0

    if model.variant == "paper":
        return model.lam * job_net, (1 - model.lam) * -sum(share(h) for h in hosts)
    load = 0.0
    for c, h in pairs:
        total = len(instance.host_gpus[h])
        step = (used[h] + 1) / total if total else 0.0
        load += (step if c.role == "ps" else -step) / n_containers
    return job.bandwidth * job_net, load + len(hosts) / n_containers


def _flows(pairs: Sequence[tuple[Container, str]], flows: dict[str, int]) -> None:
    """Add the remote PS–worker pairs of one job to ``flows`` (by worker host)."""
    ps_hosts = [h for c, h in pairs if c.role == "ps"]
    for c, w in pairs:
        if c.role == "worker":
            flows[w] += sum(p != w for p in ps_hosts)


def placement_cost(
    instance: PlacementInstance,
    host_of: Mapping[tuple[str, str], str],
    model: CostModel | None = None,
) -> CostBreakdown:
    """The cost of a map (job id, container id) → host id; containers absent from the map are
    left out (a partial placement's cost)."""
    model = model or CostModel()
    topo = instance.topology
    used: dict[str, int] = defaultdict(int)
    for g in instance.busy:
        used[topo.host_of[g]] += 1
    placed = [
        (job, pairs)
        for job in instance.jobs
        if (
            pairs := [
                (c, host_of[job.id, c.id]) for c in job.containers if (job.id, c.id) in host_of
            ]
        )
    ]  # jobs with nothing placed add 0
    for _, pairs in placed:
        for c, h in pairs:
            used[h] += c.gpus
    flows: dict[str, int] = defaultdict(int)  # remote PS–worker pairs by worker host
    if model.contention:
        for _, pairs in placed:
            _flows(pairs, flows)
    n_containers = max(1, sum(len(pairs) for _, pairs in placed))
    network = load = 0.0
    for job, pairs in placed:
        net, ld = _job_terms(instance, model, job, pairs, used, flows, n_containers)
        network += net
        load += ld
    return CostBreakdown(network + load, network, load)


def job_cost(
    instance: PlacementInstance,
    job: PlacementJob,
    hosts: Mapping[str, str],
    in_use: Mapping[str, int],
    model: CostModel | None = None,
) -> CostBreakdown:
    """The cost of job ``job`` alone — eq. 3's Score_κ (paper form) or the reconstructed code
    form of a single job — with its containers ``hosts`` (container id → host; containers
    absent are left out) and ``in_use[h]`` GPUs already in use on host h (busy GPUs and the
    GPUs of other jobs: other jobs count only as occupied GPUs, never in the network, load
    divisor or contention terms). Equals :func:`placement_cost` of an instance holding only
    this job with those GPUs busy."""
    model = model or CostModel()
    pairs = [(c, hosts[c.id]) for c in job.containers if c.id in hosts]
    used: dict[str, int] = defaultdict(int, in_use)
    for c, h in pairs:
        used[h] += c.gpus
    flows: dict[str, int] = defaultdict(int)
    if model.contention:
        _flows(pairs, flows)
    network, load = _job_terms(instance, model, job, pairs, used, flows, max(1, len(pairs)))
    return CostBreakdown(network + load, network, load)
