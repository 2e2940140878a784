"""Space sharing (Gavel's packed execution): co-location rates in the catalog and the
instance, the checker's and the cluster simulator's pairwise rates, and ``fifo-packed``."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, ClusterProfile, Instance, Job, check
from optsched.cluster_model import ClusterSpec
from optsched.errors import InputError
from optsched.fairness import fairness
from optsched.io import instance_from_dict, instance_to_dict
from optsched.online.cluster import simulate_cluster
from optsched.online.run import simulate
from optsched.online.simulator import PolicyError
from optsched.schedule import Schedule, Task
from optsched.traces import load_workload
from optsched.workloads import Catalog, Cell, Colocation, Workload, default_catalog
from tests.conftest import ROOT

NOTE = "a test's numbers"


def catalog(
    rates: dict[tuple[str, str], tuple[float, float]], types: tuple[str, ...] = ("T4",)
) -> Catalog:
    """Workloads ``a``, ``b``, ``c``, ``d`` of 1 s a batch on the first of ``types`` (slower
    on the others: 1.5 s, 2 s, …) whose listed pairs share at ``rates[(x, y)]`` = (x's rate
    next to y, y's next to x) on every type."""
    of: dict[str, dict[str, float]] = {name: {} for name in "abcd"}
    for (x, y), (rx, ry) in rates.items():
        of[x][y], of[y][x] = rx, ry
    return Catalog(
        {
            name: Workload(
                name,
                "test",
                {t: Cell(1.0 + i / 2, "assumed", NOTE) for i, t in enumerate(types)},
                colocated=Colocation(dict.fromkeys(types, of[name]), NOTE) if of[name] else None,
            )
            for name in "abcd"
        }
    )


def shared_gpu(
    *jobs: Job, rates=None, gpus: int = 1, sharing: bool = True, types: tuple[str, ...] = ("T4",)
) -> Instance:
    """The jobs on ``gpus`` GPUs (types in turn) with space sharing at ``rates``."""
    return Instance(
        "s",
        jobs,
        tuple(GPU(f"g{i}", types[i % len(types)], "h") for i in range(gpus)),
        mode="gang",
        catalog=catalog(rates if rates is not None else {("a", "b"): (0.5, 0.8)}, types),
        cluster=ClusterSpec(space_sharing=sharing),
    )


def job(name: str, workload: str, batches: int, **kw) -> Job:
    return Job(name, workload=workload, iters_per_task=batches, **kw)


def kinds(inst: Instance, tasks: list[Task]) -> set[str]:
    return check(inst, Schedule(inst.name, tasks, "gang")).kinds()


def test_two_rounds_share_a_gpu_at_their_pair_rates():
    """A (10 s) from 0, B (10 s) from 2, at rates 0.5 and 0.8 together: by t = 2 A has done
    2; together B needs 12.5 s (ends at 14.5) while A does 6.25 more; then A alone does the
    last 1.75 (ends at 16.25)."""
    inst = shared_gpu(job("A", "a", 10), job("B", "b", 10))
    tasks = [Task("A", 0, 0, "g0", 0.0), Task("B", 0, 0, "g0", 2.0)]
    report = check(inst, Schedule("s", tasks, "gang"))
    assert report.feasible and report.completion == pytest.approx({"A": 16.25, "B": 14.5})


def test_packing_by_hand_in_the_simulator():
    """Both arrive at 0 on one GPU: fifo-packed starts A alone and packs B next to it (0.5 +
    0.8 = 1.3 > threshold 1): B ends at 12.5, A has done 6.25 by then and ends at 16.25.
    With Gavel's threshold 1.5 B waits for A instead (10, 20)."""
    inst = shared_gpu(job("A", "a", 10), job("B", "b", 10))
    packed = simulate(inst, "fifo-packed", params={"threshold": "1"})
    assert packed.simulation.completion.tolist() == pytest.approx([16.25, 12.5])
    assert packed.extra["policy"] == {"packed_rounds": 1}
    assert check(inst, packed.schedule).completion == pytest.approx({"A": 16.25, "B": 12.5})
    fifo = simulate(inst, "fifo-packed")
    assert fifo.simulation.completion.tolist() == pytest.approx([10.0, 20.0])
    assert fifo.extra["policy"] == {"packed_rounds": 0}


def test_the_checker_refuses_what_space_sharing_does_not_allow():
    three = shared_gpu(
        job("A", "a", 10),
        job("B", "b", 10),
        job("C", "a", 10),
        rates={("a", "b"): (0.5, 0.8), ("a", "a"): (0.6, 0.6)},
    )
    at_zero = [Task(j, 0, 0, "g0", 0.0) for j in "ABC"]
    assert kinds(three, at_zero) == {"colocation"}  # three at once
    unrated = shared_gpu(job("A", "a", 10), job("C", "c", 10))
    assert kinds(unrated, [Task("A", 0, 0, "g0", 0.0), Task("C", 0, 0, "g0", 1.0)]) == {
        "colocation"
    }
    plain = shared_gpu(job("A", "a", 10), job("B", "b", 10), sharing=False)
    assert kinds(plain, [Task("A", 0, 0, "g0", 0.0), Task("B", 0, 0, "g0", 1.0)]) == {"overlap"}
    gang = shared_gpu(job("A", "a", 10, tasks_per_round=2), job("B", "b", 10), gpus=2)
    tasks = [Task("A", 0, 0, "g0", 0.0), Task("A", 0, 1, "g1", 0.0), Task("B", 0, 0, "g0", 0.0)]
    assert kinds(gang, tasks) == {"share-gang"}
    # back to back is no sharing at all
    ok = [Task("A", 0, 0, "g0", 0.0), Task("C", 0, 0, "g0", 10.0)]
    assert check(unrated, Schedule("s", ok, "gang")).feasible


def test_the_simulator_refuses_impossible_packing():
    class Greedy:
        name, execution, tick, event_driven = "greedy", "cluster", None, True

        def decide(self, view):
            held = [g for g, rounds in enumerate(view.holders) if rounds]
            return [(j.index, (held[0] if held else 0,), bool(held)) for j in view.waiting[:1]]

    unrated = shared_gpu(job("A", "a", 10), job("C", "c", 10))
    with pytest.raises(PolicyError, match="no co-location rates"):
        simulate_cluster(unrated, Greedy())


def test_space_sharing_is_validated_and_round_trips():
    with pytest.raises(InputError, match="two sharing models"):
        ClusterSpec(share_cap=1.3, space_sharing=True)
    with pytest.raises(InputError, match="space_sharing must be true or false"):
        ClusterSpec(space_sharing=1)  # type: ignore[arg-type]
    inst = shared_gpu(job("A", "a", 10), job("B", "b", 10))
    data = instance_to_dict(inst)
    assert data["format"] == "optsched/instance@2" and data["space_sharing"] is True
    back = instance_from_dict(data, catalog=inst.catalog)
    assert back == inst and back.colocated_rate(0, 1, 0) == 0.5
    assert back.colocated_rate(1, 0, 0) == 0.8
    with pytest.raises(InputError, match="needs an instance with space_sharing"):
        simulate(shared_gpu(job("A", "a", 1), sharing=False), "fifo-packed")


def test_rates_need_both_directions_and_stay_at_most_one():
    one_way = Catalog(
        {
            "a": Workload(
                "a",
                "t",
                {"T4": Cell(1.0, "assumed", NOTE)},
                colocated=Colocation({"T4": {"b": 0.5}}, NOTE),
            ),
            "b": Workload("b", "t", {"T4": Cell(1.0, "assumed", NOTE)}),
        }
    )
    inst = Instance(
        "s",
        (job("A", "a", 1), job("B", "b", 1)),
        (GPU("g0", "T4"),),
        mode="gang",
        catalog=one_way,
        cluster=ClusterSpec(space_sharing=True),
    )
    assert inst.colocated_rate(0, 1, 0) is None  # b has no rate next to a
    with pytest.raises(InputError, match=r"must be in \(0, 1\]"):
        Colocation({"T4": {"b": 1.2}}, NOTE)
    with pytest.raises(InputError, match="need a note"):
        Colocation({"T4": {"b": 0.5}}, "")


def test_the_shipped_catalog_holds_gavels_pairs():
    """ResNet-18 (batch size 64) next to ResNet-18 (batch size 32) on a V100: both at their
    isolated throughput in Gavel's file; pairs with a 0 are left out; only single-GPU
    workloads have pairs (Gavel's multi-GPU pairs are all 0)."""
    cat = default_catalog()
    r18 = "ResNet-18 (batch size 64)"
    assert cat.colocated_rate(r18, "ResNet-18 (batch size 32)", "V100") == 1.0
    with_pairs = [w for w in cat.workloads.values() if w.colocated]
    assert len(with_pairs) == 26 and all("scale factor" not in w.name for w in with_pairs)
    rates = [r for w in with_pairs for of in w.colocated.rates.values() for r in of.values()]
    assert len(rates) == 1881 and min(rates) > 0 and max(rates) <= 1.0


def random_instance(seed: int, n: int, gpus: int, multi: bool) -> Instance:
    """``n`` jobs of workloads a–d with random co-location rates (70 % of the pairs),
    arrivals, sizes and rounds on ``gpus`` GPUs of two types (T4, V100 in turn); the first
    job takes two tasks a round when ``multi`` (and two GPUs exist)."""
    rng = random.Random(seed)
    names = "abcd"
    rates = {
        (x, y): (round(rng.uniform(0.2, 1.0), 3), round(rng.uniform(0.2, 1.0), 3))
        for i, x in enumerate(names)
        for y in names[i:]
        if rng.random() < 0.7
    }
    jobs = [
        job(
            f"j{i}",
            rng.choice(names),
            rng.randint(1, 9),
            arrival=float(rng.randint(0, 10)),
            rounds=rng.randint(1, 3),
            tasks_per_round=2 if multi and i == 0 and gpus >= 4 else 1,
        )
        for i in range(n)
    ]
    return shared_gpu(*jobs, rates=rates, gpus=gpus, types=("T4", "V100"))


SIZES = {
    "n": st.integers(2, 7),
    "gpus": st.integers(1, 4),
    "multi": st.booleans(),
    "seed": st.integers(0, 2**16),
}
POLICIES = [
    ("fifo-packed", {"threshold": "0"}),
    ("fifo-packed", {}),
    ("max-min-fairness-packed", {}),
    ("max-min-fairness-packed", {"period": "5", "fill": "throughput"}),
]


@pytest.mark.parametrize(("policy", "params"), POLICIES)
@given(**SIZES)
@settings(max_examples=30, deadline=None)
def test_packed_schedules_pass_the_checker(policy, params, n, gpus, multi, seed):
    """The simulator's completion times are the checker's, and no job finishes sooner than
    alone (every rate is at most 1), so ρ and slowdown stay defined and slowdown ≥ 1."""
    inst = random_instance(seed, n, gpus, multi)
    sim = simulate(inst, policy, params=params).simulation
    report = check(inst, sim.schedule)
    assert report.feasible, report.violations[:3]
    assert [report.completion[j.id] for j in inst.jobs] == pytest.approx(sim.completion.tolist())
    per_job = fairness(inst, report.completion)
    assert per_job.slowdown is not None and min(per_job.slowdown) >= 1 - 1e-9


@pytest.mark.parametrize(("policy", "params"), POLICIES)
def test_the_random_instances_do_pack(policy, params):
    """The property tests' instances exercise sharing: over 40 seeds, each policy starts
    rounds next to another in at least a fifth of them."""
    packed = sum(
        simulate(random_instance(seed, 6, 2, False), policy, params=params).extra["policy"][
            "packed_rounds"
        ]
        > 0
        for seed in range(40)
    )
    assert packed >= 8


@pytest.mark.parametrize(("policy", "params"), POLICIES)
@given(target=st.integers(0, 6), **SIZES)
@settings(max_examples=30, deadline=None)
def test_packed_policies_are_non_clairvoyant(policy, params, n, gpus, multi, seed, target):
    """Giving one job 3 more rounds changes no decision taken before it would have ended."""
    inst = random_instance(seed, n, gpus, multi)
    j = target % n
    more = dataclasses.replace(
        inst,
        jobs=tuple(
            dataclasses.replace(x, rounds=x.rounds + 3) if i == j else x
            for i, x in enumerate(inst.jobs)
        ),
    )
    a, b = simulate(inst, policy, params=params), simulate(more, policy, params=params)
    horizon = a.simulation.completion[j]

    def starts(result):
        return {
            (t.job, t.round, t.task): (t.gpu, t.start)
            for t in result.schedule.tasks
            if t.start < horizon
        }

    assert starts(a) == starts(b)


def test_a_round_placed_first_trains_next_to_its_partner_after_its_launch():
    """a (launch 50) holds the GPU from 0; b arrives at 10 and joins it (rates 1 and 1): a
    trains at 50 next to b, not after b's rounds."""
    a = job("a", "a", 40, cluster=ClusterProfile(launch=50.0))
    b = job("b", "b", 100, arrival=10.0, rounds=3)
    inst = shared_gpu(a, b, rates={("a", "b"): (1.0, 1.0)})
    for policy in ("fifo-packed", "max-min-fairness-packed"):
        result = simulate(
            inst, policy, params={"threshold": "1"} if policy == "fifo-packed" else {}
        )
        train = {t.job: t.train_start for t in result.schedule.tasks if t.round == 0}
        assert train["a"] == pytest.approx(50.0), policy
        assert check(inst, result.schedule).feasible


def test_a_gavel_trace_packs_its_single_gpu_jobs(tmp_path, capsys):
    """A Gavel trace in gang mode with --space-sharing: its single-GPU step jobs name
    catalog workloads, so they pack at Gavel's pairwise rates, and the schedule checks."""
    trace = tmp_path / "four.trace"
    line = "{}\tpython3 main.py\tx\t--steps\t0\t{}\t1\t1\t-1.000000\t{}\n"
    trace.write_text(
        line.format("ResNet-18 (batch size 64)", 20000, 0)
        + line.format("ResNet-18 (batch size 32)", 20000, 0)
        + line.format("LM (batch size 20)", 3000, 60)
        + line.format("A3C", 500, 120)
    )
    inst, _ = load_workload(trace, cluster="V100:1", mode="gang", space_sharing=True)
    assert inst.cluster.space_sharing and inst.needs_cluster_model
    result = simulate(inst, "fifo-packed", params={"threshold": "0"})
    assert result.extra["checked"] and result.extra["policy"]["packed_rounds"] > 0
    with pytest.raises(InputError, match="needs --mode gang"):
        load_workload(trace, cluster="V100:1", space_sharing=True)
    with pytest.raises(InputError, match="--space-sharing go with a trace"):
        load_workload(
            ROOT / "optsched" / "data" / "instances" / "hare-toy.instance.json", space_sharing=True
        )
    # the command line: simulate, then check the schedule against the trace (its mode read
    # from the schedule); without --space-sharing the checker sees overlaps and says why
    from optsched.cli import main

    out = tmp_path / "s.json"
    common = [str(trace), "--cluster", "V100:1"]
    args = [*common, "--mode", "gang", "--space-sharing", "--policy", "max-min-fairness-packed"]
    assert main(["simulate", *args, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["check", *common, str(out), "--space-sharing"]) == 0
    assert "feasible (gang mode)" in capsys.readouterr().out
    assert main(["check", *common, str(out)]) != 0
    assert "hint: tasks of two jobs train on one GPU" in capsys.readouterr().out
    with pytest.raises(InputError, match="use a cluster policy: fifo-packed"):
        simulate(inst, "fifo-perf")


# -- the packed max-min LP and its policy ------------------------------------------------------


def _job_level_value(rates, count, capacity, weights, reference, pairs, together):
    """The job-level packed max-min LP built directly (every job, every pair of jobs),
    dense, with scipy's linprog: the value the row-level LP must reproduce."""
    from scipy.optimize import linprog

    rows = [r for r, c in enumerate(count) for _ in range(int(c))]
    n, m = len(rows), rates.shape[1]
    job_pairs = []  # (job a, job b, rates on each type)
    for p, (ra, rb) in enumerate(pairs):
        for a in range(n):
            for b in range(a + 1, n):
                if (rows[a], rows[b]) in ((ra, rb), (rb, ra)):
                    flip = rows[a] != ra
                    job_pairs.append((a, b, together[p][:, ::-1] if flip else together[p]))
    nx, ny = n * m, len(job_pairs) * m
    size = nx + ny + 1
    a_ub, b_ub = [], []
    u = rates[rows] / (reference[rows] * weights[rows])[:, None]
    for j in range(n):
        time_row, level = np.zeros(size), np.zeros(size)
        time_row[j * m : (j + 1) * m] = 1
        level[j * m : (j + 1) * m] = -u[j]
        level[-1] = 1
        for q, (a, b, r) in enumerate(job_pairs):
            if j in (a, b):
                side = 0 if j == a else 1
                time_row[nx + q * m : nx + (q + 1) * m] = 1
                level[nx + q * m : nx + (q + 1) * m] = -u[j] * r[:, side]
        a_ub += [time_row, level]
        b_ub += [1.0, 0.0]
    for t in range(m):
        cap = np.zeros(size)
        cap[t:nx:m] = 1.0  # one-GPU jobs only in these tests
        cap[nx + t : nx + ny : m] = 1.0
        a_ub.append(cap)
        b_ub.append(capacity[t])
    bounds = [(0, 0 if rates[rows[i // m], i % m] == 0 else None) for i in range(nx)]
    bounds += [
        (
            0,
            None
            if r[i % m].sum() > 0 and rates[rows[a], i % m] > 0 and rates[rows[b], i % m] > 0
            else 0,
        )
        for q, (a, b, r) in enumerate(job_pairs)
        for i in range(q * m, (q + 1) * m)
    ]
    c = np.zeros(size)
    c[-1] = -1
    result = linprog(c, A_ub=np.array(a_ub), b_ub=b_ub, bounds=[*bounds, (None, None)])
    assert result.status == 0
    return -result.fun


@given(
    rows=st.integers(1, 3),
    types=st.integers(1, 2),
    data=st.data(),
)
@settings(max_examples=60, deadline=None)
def test_the_row_level_packed_lp_is_the_job_level_lp(rows, types, data):
    """Rows of 1–3 identical one-GPU jobs, random rates and co-location rates: the row LP's
    value is the job-level LP's (built independently), its allocation is feasible (every
    job's time at most 1, every type's GPUs), and packing never lowers max-min's value."""
    from optsched.exact.allocation import AllocationProblem, max_min_packed, max_min_share

    draw = data.draw
    rate = st.sampled_from([0.0, 0.5, 1.0, 2.0])
    rates = np.array([[draw(rate) for _ in range(types)] for _ in range(rows)])
    rates[:, 0] = np.maximum(rates[:, 0], 0.5)  # every job runs somewhere
    count = np.array([draw(st.integers(1, 3)) for _ in range(rows)], dtype=float)
    capacity = np.array([draw(st.integers(1, 3)) for _ in range(types)], dtype=float)
    weights = np.array([draw(st.sampled_from([1.0, 2.0])) for _ in range(rows)])
    reference = np.ones(rows)
    pairs = [(a, b) for a in range(rows) for b in range(a, rows)]
    co = st.sampled_from([0.0, 0.3, 0.6, 0.9, 1.0])
    together = np.array([[[draw(co), draw(co)] for _ in range(types)] for _ in pairs])
    for p, (a, b) in enumerate(pairs):
        if a == b:  # one workload with itself: the same rate both ways
            together[p, :, 1] = together[p, :, 0]
    problem = AllocationProblem(rates, np.ones(rows), capacity, weights, count)
    want = _job_level_value(rates, count, capacity, weights, reference, pairs, together)
    for fill in ("none", "throughput"):  # the fill keeps the level, and stays feasible
        got = max_min_packed(problem, reference, np.array(pairs), together, fill=fill)
        assert got.value == pytest.approx(want, rel=1e-6, abs=1e-9)
        time_used = got.x.sum(axis=1)
        for p, (a, b) in enumerate(pairs):
            time_used[a] += got.y[p].sum() / count[a]
            time_used[b] += got.y[p].sum() / count[b]
        assert (time_used <= 1 + 1e-7).all()
        used = (count[:, None] * got.x).sum(axis=0) + got.y.sum(axis=0)
        assert (used <= capacity + 1e-7).all()
        utility = (rates / (reference * weights)[:, None] * got.x).sum(axis=1)
        for p, (a, b) in enumerate(pairs):
            gain = rates[[a, b]] / (reference[[a, b]] * weights[[a, b]])[:, None]
            utility[a] += (gain[0] * together[p, :, 0] * got.y[p]).sum() / count[a]
            utility[b] += (gain[1] * together[p, :, 1] * got.y[p]).sum() / count[b]
        assert utility.min() >= want * (1 - 1e-6) - 1e-9  # every row at the level
    assert got.value >= max_min_share(problem, reference).value - 1e-9


def test_max_min_packed_pairs_two_jobs_by_hand():
    """Two one-GPU jobs, one GPU, rates 0.9 and 0.8 together: the packed LP puts them
    together (alone, max-min could give each only half the GPU)."""
    inst = shared_gpu(job("A", "a", 10), job("B", "b", 10), rates={("a", "b"): (0.9, 0.8)})
    result = simulate(inst, "max-min-fairness-packed")
    report = result.extra["policy"]
    assert report["solves"] >= 1 and report["packed_rounds"] >= 1
    # both train together from 0: A (rate 0.9) ends at 100/9, when B (0.8) has done 80/9;
    # B does its last 10/9 alone
    assert result.simulation.completion.tolist() == pytest.approx([100 / 9, 110 / 9])
    assert check(inst, result.schedule).feasible


def test_fill_runs_jobs_alone_where_gpus_are_to_spare():
    """Two one-GPU jobs, two GPUs, rates 0.9 and 0.9 together: max-min is 1 with or without
    sharing; the fill keeps that level and gives no time together (alone each does 1, two
    GPUs), so no capacity goes to a pair for nothing."""
    from optsched.exact.allocation import AllocationProblem, max_min_packed

    problem = AllocationProblem(np.ones((2, 1)), np.ones(2), np.array([2.0]), np.ones(2))
    pairs, together = np.array([[0, 1]]), np.array([[[0.9, 0.9]]])
    filled = max_min_packed(problem, np.ones(2), pairs, together, fill="throughput")
    assert filled.value == pytest.approx(1.0) and filled.solves == 2
    assert filled.y.sum() == pytest.approx(0.0, abs=1e-9)
    assert filled.x.ravel() == pytest.approx([1.0, 1.0])
