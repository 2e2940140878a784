"""Liquid fidelity of best-fit, the GGA and the two cost forms (TPDS'22 §5.2–5.3; fidelity
review, Liquid §1–2).

The oracles here are written for the tests, independently of optsched/placement:

- :func:`reference_bestfit` follows the reference code's per-job best-fit (PasaLab/Liquid
  ``allocator.go`` ``fastBestFit`` with ``evaluator.go``): one fresh evaluator per job, the
  containers in Liquid's PS/worker interleaved order, for each container every host with room
  tried, the evaluator's value after a tentative insertion compared, the first least kept.
  The evaluator is re-derived from its description, counters included: a pair's network term
  is built from PS/worker counts per node, rack label and domain label (missing labels are
  the empty label), a container's load is frozen at its insertion, one sign (+1 PS, −1
  worker: the container being placed) multiplies the whole load sum.
- :func:`paper_bestfit` is Alg. 1 with eqs. 2–6 evaluated per job (Fitness with UsedGPU =
  GPUs in use before the job plus the job's own request on the node).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched.placement.check import check_placement
from optsched.placement.cost import CostModel, code_distance, job_cost, placement_cost
from optsched.placement.generate import PlacementSpec, generate_placement
from optsched.placement.model import (
    Container,
    PlacementInstance,
    PlacementJob,
    placement_instance_from_dict,
)
from optsched.placement.run import place
from optsched.testing import placement_instances
from optsched.topology import Distance, Topology, tree_topology
from tests.conftest import ROOT, assert_optimum
from tests.test_placement import cluster, ps_workers

#: Every committed placement instance (instances/placement*/: the rack grid, K80, T4 sets).
COMMITTED = sorted((ROOT / "instances").glob("placement*/placement-*.json"))


def load(path: Path) -> PlacementInstance:
    return placement_instance_from_dict(json.loads(path.read_text()))


# -- independent oracles ------------------------------------------------------------------


def interleave(job: PlacementJob) -> list[Container]:
    """PS k, then workers [k·W/P, (k+1)·W/P) (``resource_pool.go``'s task order)."""
    ps = [c for c in job.containers if c.role == "ps"]
    ws = [c for c in job.containers if c.role == "worker"]
    if not ps:
        return ws
    order: list[Container] = []
    for k, p in enumerate(ps):
        order.append(p)
        order.extend(ws[k * len(ws) // len(ps) : (k + 1) * len(ws) // len(ps)])
    return order


class Cluster:
    """Free resources per host while jobs are placed one after the other."""

    def __init__(self, inst: PlacementInstance):
        self.inst = inst
        self.hosts = list(inst.topology.hosts)
        self.free_gpus = {
            h: [g for g in inst.host_gpus[h] if g not in inst.busy] for h in self.hosts
        }
        self.cpus = {h: inst.capacity(h, "cpus") for h in self.hosts}
        self.mem = {h: inst.capacity(h, "memory") for h in self.hosts}

    def room(self, h: str, c: Container) -> bool:
        fit = [g for g in self.free_gpus[h] if self.inst.gpu_memory(g) >= c.gpu_memory]
        return self.cpus[h] >= c.cpus and self.mem[h] >= c.memory and len(fit) >= c.gpus

    def allocate(self, h: str, c: Container) -> None:
        fit = [g for g in self.free_gpus[h] if self.inst.gpu_memory(g) >= c.gpu_memory]
        for g in fit[: c.gpus]:
            self.free_gpus[h].remove(g)
        self.cpus[h] -= c.cpus
        self.mem[h] -= c.memory

    def allocated(self, h: str) -> int:
        return len(self.inst.host_gpus[h]) - len(self.free_gpus[h])


class Evaluator:
    """The reference evaluator of one job, re-derived: counters per node / rack label /
    domain label, network updated on insertion, loads frozen at insertion."""

    NODE, RACK, DOMAIN = 1.0, 4.0, 40.0  # factorNode/Rack/Domain, paid per level crossed

    def __init__(self, inst: PlacementInstance, bandwidth: float):
        self.inst, self.bw = inst, bandwidth
        self.count: dict = defaultdict(lambda: {"ps": 0, "worker": 0})  # (level, label)
        self.network = 0.0
        self.loads: list[float] = []
        self.nodes: dict[str, int] = defaultdict(int)

    def labels(self, h: str):
        topo = self.inst.topology
        rack, domain = topo.rack(h), topo.domain(h)
        return ("node", h), ("rack", rack or ""), ("domain", domain or ""), ("all", "")

    def cost_of_adding(self, h: str, role: str) -> float:
        other = "worker" if role == "ps" else "ps"
        node, rack, domain, everything = (self.count[k][other] for k in self.labels(h))
        return self.bw * (
            self.NODE * (rack - node)
            + self.RACK * (domain - rack)
            + self.DOMAIN * (everything - domain)
        )

    def add(self, h: str, c: Container, allocated: int) -> None:
        self.network += self.cost_of_adding(h, c.role)
        for key in self.labels(h):
            self.count[key][c.role] += 1
        self.loads.append((1 + allocated + c.gpus) / len(self.inst.host_gpus[h]))
        self.nodes[h] += 1

    def value_with(self, h: str, c: Container, allocated: int) -> float:
        """calculate() after a tentative insertion of ``c`` on ``h`` (then undone)."""
        n = len(self.loads) + 1
        spread = 1.0 if c.role == "ps" else -1.0
        loads = sum(self.loads) + (1 + allocated + c.gpus) / len(self.inst.host_gpus[h])
        using = len(self.nodes) + (h not in self.nodes)
        return self.network + self.cost_of_adding(h, c.role) + spread * loads / n + using / n


def reference_bestfit(inst: PlacementInstance) -> dict[tuple[str, str], str] | None:
    """The reference per-job fastBestFit (see the module docstring)."""
    state, out = Cluster(inst), {}
    for job in inst.jobs:
        ev = Evaluator(inst, job.bandwidth)
        for c in interleave(job):
            best, least = None, None
            for h in state.hosts:
                if not state.room(h, c):
                    continue
                v = ev.value_with(h, c, state.allocated(h))
                if least is None or v < least - 1e-9:
                    best, least = h, v
            if best is None:
                return None
            ev.add(best, c, state.allocated(best))
            state.allocate(best, c)
            out[job.id, c.id] = best
    return out


def paper_bestfit(
    inst: PlacementInstance, lam: float = 0.5, line18: bool = False
) -> dict[tuple[str, str], str] | None:
    """Alg. 1 per job with eqs. 2–6: Score = λ·Σ pairs Cost(PS, W) + (1 − λ)·Σ_nodes
    −(ReqGPU + UsedGPU)/TotalGPU; ``line18`` removes the chosen node for the job."""
    topo = inst.topology
    state, out = Cluster(inst), {}

    def cost(a: str, b: str) -> float:
        if a == b:
            return 0.0
        if topo.rack(a) is not None and topo.rack(a) == topo.rack(b):
            return float(sum(topo.rack(h) == topo.rack(a) for h in topo.hosts))
        if topo.domain(a) is not None and topo.domain(a) == topo.domain(b):
            return float(sum(topo.domain(h) == topo.domain(a) for h in topo.hosts))
        return float(len(topo.hosts))

    def score(
        job: PlacementJob,
        c: Container,
        h: str,
        mine: dict[str, str],
        request: dict[str, int],
        before: dict[str, int],
    ) -> float:
        role = {x.id: x.role for x in job.containers}
        plan = {**mine, c.id: h}
        req = dict(request)
        req[h] = req.get(h, 0) + c.gpus
        pairs = sum(
            cost(plan[p], plan[w])
            for p in plan
            for w in plan
            if role[p] == "ps" and role[w] == "worker"
        )
        fitness = sum(
            -(req.get(n, 0) + before[n]) / len(inst.host_gpus[n])
            for n in set(plan.values())
            if inst.host_gpus[n]
        )
        return lam * pairs + (1 - lam) * fitness

    for job in inst.jobs:
        before = {h: state.allocated(h) for h in state.hosts}
        mine: dict[str, str] = {}
        request: dict[str, int] = defaultdict(int)
        nodes = list(state.hosts)
        for c in interleave(job):
            best, least = None, None
            for h in nodes:
                if not state.room(h, c):
                    continue
                v = score(job, c, h, mine, request, before)
                if least is None or v < least - 1e-9:
                    best, least = h, v
            if best is None:
                return None
            mine[c.id] = best
            request[best] += c.gpus
            state.allocate(best, c)
            out[job.id, c.id] = best
            if line18:
                nodes.remove(best)
    return out


def cost_of(inst, plan, model):
    return placement_cost(inst, plan, model).total


def optsched_plan(inst, **params):
    result = place(inst, "bestfit", params=params)
    placement = result.placement
    assert placement is not None
    return result, {(a.job, a.container): a.host for a in placement.assignments}


# -- the code form's distances ------------------------------------------------------------


def test_unlabelled_hosts_are_one_apart_in_the_code_form_as_in_the_reference():
    """A flat cluster (no rack or domain labels): the reference code's equal empty Rack labels
    make every remote pair cost 1; the paper form prices them cross-domain (all hosts)."""
    g = tree_topology([["K80"] * 4] * 5)
    for _, attrs in g.nodes(data=True):
        if attrs["kind"] == "host":
            attrs.update(cpus=24, memory=65536)
    inst = PlacementInstance("flat", Topology(g), (PlacementJob("j", ps_workers(2)),))
    plan = {("j", "ps0"): "h0", ("j", "w0"): "h1", ("j", "w1"): "h2"}
    assert code_distance(inst.topology, "h0", "h1") is Distance.SAME_RACK
    assert placement_cost(inst, plan, CostModel("code")).network == 2.0
    assert placement_cost(inst, plan, CostModel("paper", lam=1)).network == 10.0
    ev = Evaluator(inst, 1.0)  # the oracle's counters agree
    ev.add("h0", inst.jobs[0].containers[0], 0)
    assert ev.cost_of_adding("h1", "worker") == 1.0
    # labelled racks keep 0/1/4/40
    topo = cluster()
    assert [code_distance(topo, "h0", h) for h in ("h0", "h1", "h2", "h4")] == [
        Distance.SAME_HOST,
        Distance.SAME_RACK,
        Distance.SAME_DOMAIN,
        Distance.FARTHER,
    ]


def test_exact_methods_use_the_code_forms_flat_distances():
    """CP-SAT's and HiGHS's optimum on a flat cluster equals brute force under the checker's
    code cost (1 per remote pair), proved."""
    g = tree_topology([["K80"] * 2] * 3)
    for _, attrs in g.nodes(data=True):
        if attrs["kind"] == "host":
            attrs.update(cpus=24, memory=65536)
        if attrs["kind"] == "gpu":
            attrs.update(gpu_memory=12288)
    jobs = (PlacementJob("a", ps_workers(2), bandwidth=2.0), PlacementJob("b", ps_workers(1)))
    inst = PlacementInstance("flat3", Topology(g), jobs)
    from tests.test_placement import brute_force

    best = brute_force(inst, CostModel("code"))
    for method in ("cpsat", "milp-highs"):
        assert_optimum(place(inst, method, params={"cost": "code"}, time_limit=20), best)


# -- best-fit per job (eq. 3) ---------------------------------------------------------------


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.stem)
def test_bestfit_is_never_worse_than_the_reference_per_job_bestfit(path):
    """On every committed placement instance, optsched's best-fit is no worse than the
    reference code's per-job fastBestFit under the code cost it reports, and no worse than the
    per-job paper oracle under the paper cost (both give the same placements today)."""
    inst = load(path)
    code, paper = CostModel("code"), CostModel("paper")
    ref = reference_bestfit(inst)
    result, mine = optsched_plan(inst, cost="code")
    assert ref is not None
    assert result.objective == pytest.approx(cost_of(inst, mine, code))
    assert cost_of(inst, mine, code) <= cost_of(inst, ref, code) + 1e-9
    ref = paper_bestfit(inst)
    result, mine = optsched_plan(inst, cost="paper")
    assert ref is not None
    assert result.objective == pytest.approx(cost_of(inst, mine, paper))
    assert cost_of(inst, mine, paper) <= cost_of(inst, ref, paper) + 1e-9


def test_bestfit_line18_matches_literal_algorithm_1():
    """line18=1 is Alg. 1 with its node removal: one container of a job per host, the same
    placements as the paper oracle with line 18."""
    for path in COMMITTED[::5]:
        inst = load(path)
        result = place(inst, "bestfit", params={"line18": "1"})
        placement = result.placement
        assert result.extra["line18"] is True
        if placement is None:  # a container fits on no host left for its job
            assert paper_bestfit(inst, line18=True) is None
            continue
        mine = {(a.job, a.container): a.host for a in placement.assignments}
        assert mine == paper_bestfit(inst, line18=True)
        hosts = defaultdict(set)
        for (job, _), h in mine.items():
            hosts[job].add(h)
        assert all(len(hosts[j.id]) == len(j.containers) for j in inst.jobs)


def test_bestfit_result_says_which_variant_ran():
    inst = load(COMMITTED[0])
    plain = place(inst, "bestfit")
    assert plain.extra["line18"] is False and "per job" in plain.extra["scoring"]
    assert plain.objective_name == "liquid_cost_paper"
    code = place(inst, "bestfit", params={"cost": "code"})
    assert code.objective_name == "liquid_cost_code_reconstructed"
    from optsched.errors import InputError

    with pytest.raises(InputError, match="line18"):
        place(inst, "bestfit", params={"line18": "2"})


def test_bestfit_scores_a_job_alone_not_the_whole_batch():
    """Code form, 4 hosts × 2 GPUs in one rack; j0 (1 PS + 2 workers) takes h0 and one GPU of
    h1. Scored alone, j1's PS goes to the emptier h2 (PS spread) and its worker joins it;
    scoring the whole batch put that PS on h1 next to j0's worker (whose −load term grows)
    and sent j1's worker away (fidelity review §2.1: cost 3.6 instead of 2.4)."""
    inst = load(ROOT / "instances" / "placement" / "placement-hosts4-s1.json")
    result, plan = optsched_plan(inst, cost="code")
    assert plan[("j1", "ps0")] == plan[("j1", "w0")] == "h2"
    assert result.objective == pytest.approx(2.4)
    assert plan == reference_bestfit(inst)


@given(
    placement_instances(),
    st.sampled_from(["paper", "code"]),
    st.sampled_from(["0", "1"]),
    st.sampled_from(["0.5", "1"]),
    st.sampled_from(["0", "1"]),
)
def test_bestfit_replays_as_per_job_argmins(inst, cost, line18, lam, contention):
    """Random small instances: the checker accepts best-fit's placement; line 18 is respected;
    each container's host is the first least of job_cost over the hosts with room (its own job
    only, earlier jobs as GPUs in use)."""
    params = {"cost": cost, "line18": line18, "lambda": lam, "contention": contention}
    model = CostModel(cost, float(lam), contention=contention == "1")
    placement = place(inst, "bestfit", params=params).placement
    if placement is None:
        return
    assert check_placement(inst, placement, model).feasible
    plan = {(a.job, a.container): a.host for a in placement.assignments}
    state = Cluster(inst)
    for job in inst.jobs:
        mine: dict[str, str] = {}
        for c in interleave(job):
            before = {
                h: state.allocated(h) - sum(x.gpus for x in job.containers if mine.get(x.id) == h)
                for h in state.hosts
            }
            room = [
                h
                for h in state.hosts
                if state.room(h, c)
                and not ((line18 == "1" or job.one_per_host) and h in mine.values())
            ]
            scores = [job_cost(inst, job, {**mine, c.id: h}, before, model).total for h in room]
            first = next(h for h, v in zip(room, scores, strict=True) if v <= min(scores) + 1e-9)
            assert plan[job.id, c.id] == first
            mine[c.id] = first
            state.allocate(first, c)
        if line18 == "1":
            assert len(set(mine.values())) == len(mine)


@given(placement_instances(), st.sampled_from(["paper", "code"]), st.sampled_from([0.3, 0.5, 1.0]))
def test_bestfit_incremental_scores_equal_job_cost(inst, cost, lam):
    """BestFit's per-host score (from per-host counts) equals job_cost of the job alone."""
    from optsched.placement.heuristics import BestFit, greedy

    model = CostModel(cost, lam)
    chooser = BestFit(inst, model)

    def checked(candidates, job, c, so_far, free):
        placed = [(x, so_far[job.id, x.id]) for x in job.containers if (job.id, x.id) in so_far]
        mine = {x.id: h for x, h in placed}
        own = defaultdict(int)
        for x, h in placed:
            own[h] += x.gpus
        in_use = {
            h: len(inst.host_gpus[h]) - len(free.gpus[h]) - own[h] for h in inst.topology.hosts
        }
        score = chooser.scorer(job, c, placed, free)
        for h in candidates:
            expected = job_cost(inst, job, {**mine, c.id: h}, in_use, model).total
            assert score(h) == pytest.approx(expected, abs=1e-9)
        return chooser(candidates, job, c, so_far, free)

    greedy(inst, checked)


# -- the p.json-like instance of the review ----------------------------------------------------


def p6() -> PlacementInstance:
    """6 hosts × 4 K80, no racks, 4 jobs of 1 PS + 2 workers, every container 1 GPU (the
    review's item-6 instance: paper-form optimum −1.5, each job alone on a host)."""
    return generate_placement(PlacementSpec(jobs=4, hosts=6), 0, name="p6")


def test_p6_costs_match_the_hand_check():
    """Review §1 hand check: best-fit 6.0 under the final-occupancy reading; optimum −1.5."""
    inst = p6()
    best = place(inst, "bestfit")
    assert best.objective == pytest.approx(6.0)
    assert_optimum(place(inst, "cpsat", time_limit=20), -1.5)


# -- GGA: eq. 8 fitness and a repair that reaches the optimum --------------------------------


def measured_instances(n: int) -> list[PlacementInstance]:
    """The 6-host instance and the first ``n`` small instances of benchmarks/gga_optimum.py."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gga_optimum", ROOT / "benchmarks" / "gga_optimum.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.instances(n)


@pytest.mark.parametrize(("cost", "optimum"), [("paper", -1.5), ("code", 0.0)])
def test_gga_reaches_the_optimum_of_the_6_host_instance(cost, optimum):
    """The default GGA (eq. 8, mixed repair) returns the 6-host instance's optimum, seeds
    0–1 (the optima CP-SAT proves: test_p6_costs_match_the_hand_check and the slow
    test_gga_reaches_the_optimum_on_small_instances)."""
    inst = measured_instances(1)[0]
    assert inst.name == "review-6hosts"
    for seed in (0, 1):
        ga = place(inst, "gga", seed=seed, params={"cost": cost})
        assert ga.objective == pytest.approx(optimum, abs=1e-9), seed


@pytest.mark.slow
@pytest.mark.parametrize("cost", ["paper", "code"])
def test_gga_reaches_the_optimum_on_small_instances(cost):
    """The 6-host instance (paper optimum −1.5, code optimum 0) and the first four small
    instances of the measurement: the default GGA (eq. 8, mixed repair) returns a proved
    optimum, seeds 0–1."""
    insts = measured_instances(4)
    assert insts[0].name == "review-6hosts"
    for inst in insts:
        exact = place(inst, "cpsat", params={"cost": cost}, time_limit=30)
        assert exact.status.value == "optimal"
        for seed in (0, 1):
            ga = place(inst, "gga", seed=seed, params={"cost": cost})
            assert ga.objective == pytest.approx(exact.objective, abs=1e-9), (inst.name, seed)


def test_gga_paper_first_fit_repair_stagnates_on_the_6_host_instance():
    """The paper's first-fit re-insertion never reopens an empty host: 3.0 for every seed
    (review §2.2), against −1.5 for the default repair."""
    inst = p6()
    for seed in range(3):
        ga = place(inst, "gga", seed=seed, params={"repair": "firstfit"})
        assert ga.objective == pytest.approx(3.0)
        assert ga.extra["repair"] == "firstfit"


def test_gga_fitness_is_eq_8_and_the_objective_the_checked_cost():
    """extra: best_fitness = cost + NumNU (hosts the plan uses); the objective is the checked
    cost of that plan; fitness=cost drops NumNU."""
    inst = p6()
    ga = place(inst, "gga")
    placement = ga.placement
    hosts = len({a.host for a in placement.assignments})
    assert ga.extra["fitness"] == "eq8" and ga.extra["numnu"] == hosts == 4
    assert ga.extra["best_fitness"] == pytest.approx(ga.objective + hosts)
    assert ga.extra["best_cost"] == pytest.approx(ga.objective)
    assert ga.extra["best_cost_seen"] <= ga.objective + 1e-9
    assert ga.extra["line18"] is False and ga.extra["population"] == 30 + 12 // 2
    assert ga.extra["patience"] == 30 + 12
    pure = place(inst, "gga", params={"fitness": "cost"})
    assert pure.extra["best_fitness"] == pytest.approx(pure.objective)
    from optsched.errors import InputError

    for bad in ({"repair": "worstfit"}, {"fitness": "speed"}, {"patience": "0"}):
        with pytest.raises(InputError):
            place(inst, "gga", params=bad)


def test_gga_with_line18_seeds_literal_algorithm_1():
    inst = p6()
    ga = place(inst, "gga", params={"line18": "1", "generations": "1"})
    fit = place(inst, "bestfit", params={"line18": "1"})
    placed = fit.placement
    assert ga.extra["line18"] is True
    hosts = len({a.host for a in placed.assignments})
    assert ga.extra["best_fitness"] <= fit.objective + hosts + 1e-9


@given(
    placement_instances(),
    st.sampled_from(["mixed", "jobfit", "randomfit", "bestfit", "firstfit"]),
    st.sampled_from(["paper", "code"]),
    st.sampled_from(["eq8", "cost"]),
)
def test_gga_repairs_give_checked_placements(inst, repair, cost, fitness):
    """Every repair rule keeps the plans feasible (capacities, GPU memory, one per host): the
    checker accepts the result; the GA's fitness is never above its best-fit seed's."""
    params = {"cost": cost, "repair": repair, "fitness": fitness, "generations": "5"}
    ga = place(inst, "gga", params=params)
    placement = ga.placement
    if placement is None:
        return
    assert check_placement(inst, placement, CostModel(cost)).feasible
    fit = place(inst, "bestfit", params={"cost": cost})
    fit_placed = fit.placement
    if fit_placed is not None:
        extra = len({a.host for a in fit_placed.assignments}) if fitness == "eq8" else 0
        assert ga.extra["best_fitness"] <= fit.objective + extra + 1e-9


# -- the checker reports both cost forms ---------------------------------------------------


def test_check_cli_reports_both_cost_forms(tmp_path, capsys):
    from optsched.cli import main
    from optsched.placement.model import placement_instance_to_dict, placement_to_dict

    inst = p6()
    placement = place(inst, "bestfit").placement
    inst_file, out = tmp_path / "inst.json", tmp_path / "placement.json"
    inst_file.write_text(json.dumps(placement_instance_to_dict(inst)))
    out.write_text(json.dumps(placement_to_dict(placement)))
    assert main(["check", str(inst_file), str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    plan = {(a.job, a.container): a.host for a in placement.assignments}
    assert report["cost"] == pytest.approx(6.0)
    assert report["costs"]["liquid_cost_paper"]["total"] == pytest.approx(6.0)
    assert report["costs"]["liquid_cost_code_reconstructed"]["total"] == pytest.approx(
        placement_cost(inst, plan, CostModel("code")).total
    )
    assert main(["check", str(inst_file), str(out)]) == 0
    text = capsys.readouterr().out
    assert "(paper form" in text and "(code form, reconstructed)" in text


def test_link_speed_does_not_change_the_placement_cost():
    """10 vs 15 Gbit/s host links (Liquid's two clusters): the same instance otherwise, the same
    placements and costs in both forms — link speeds only enter durations."""
    slow = generate_placement(PlacementSpec(jobs=3, hosts=5, host_gbps=10.0), 1)
    fast = generate_placement(PlacementSpec(jobs=3, hosts=5, host_gbps=15.0), 1)
    assert slow.topology.graph.edges["h0", "core"]["bandwidth"] == 10.0
    assert fast.topology.graph.edges["h0", "core"]["bandwidth"] == 15.0
    for cost in ("paper", "code"):
        a = place(slow, "gga", params={"cost": cost})
        pa = a.placement
        b = place(fast, "gga", params={"cost": cost})
        pb = b.placement
        assert pa.assignments == pb.assignments and a.objective == b.objective
