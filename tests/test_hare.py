"""Hare's offline heuristic: Algorithm 1, its relaxations, variants and guarantee."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, target

from optsched import GPU, Instance, Job, Status, check, solve
from optsched.ect import ect_schedule
from optsched.errors import InputError, OptschedError
from optsched.exact.bounds import interval_lp
from optsched.exact.hare_relaxation import heterogeneity_degree, solve_hare_relaxation
from optsched.heuristics.hare import hare_list_schedule
from optsched.io import load_instance
from optsched.testing import instances
from tests.conftest import EXAMPLES, ROOT, assert_optimum, assert_out_of_time

VARIANTS = ["hare", "hare-ect", "hare-lp", "hare-lp-ect"]
TOY = ROOT / "optsched" / "data" / "instances" / "hare-toy.instance.json"
TOL = 1e-6


def job(name, compute, sync=None, **kw):
    base = {"arrival": 0.0, "weight": 1.0, "rounds": 1, "tasks_per_round": 1}
    return Job(id=name, compute=compute, sync=sync, **{**base, **kw})


def test_alpha_is_the_worst_compute_or_sync_ratio():
    gpus = (GPU("a", "A"), GPU("b", "B"))
    inst = Instance(
        "x",
        (
            job("j0", {"A": 2, "B": 6}, {"A": 1, "B": 1}),
            job("j1", {"A": 1, "B": 1}, {"A": 1, "B": 5}),
        ),
        gpus,
    )
    assert heterogeneity_degree(inst) == 5.0
    no_sync = Instance("x", (job("j0", {"A": 2, "B": 6}),), gpus)
    assert heterogeneity_degree(no_sync) == 3.0  # all syncs 0: sync ratio 1
    some_zero = Instance("x", (job("j0", {"A": 2, "B": 6}, {"A": 0, "B": 1}),), gpus)
    assert heterogeneity_degree(some_zero) is None
    result = solve(some_zero, "hare-lp")
    assert result.extra["guarantee"] is None


def test_earliest_free_ignores_speed_and_ties_go_to_the_lowest_index():
    """Algorithm 1 line 12: argmin φ_m, whatever the GPU's speed."""
    gpus = (GPU("slow", "K80"), GPU("fast", "V100"))
    inst = Instance(
        "x",
        (
            job("j0", {"K80": 10, "V100": 1}, {"K80": 1, "V100": 1}),
            job("j1", {"K80": 10, "V100": 1}, {"K80": 1, "V100": 1}),
        ),
        gpus,
    )
    schedule, objective = hare_list_schedule(inst, lambda j, r, k: 0.0)
    placed = {t.job: (t.gpu, t.start) for t in schedule.tasks}
    assert placed == {"j0": ("slow", 0.0), "j1": ("fast", 0.0)}  # both free at 0: index order
    assert objective == pytest.approx(11 + 2)
    ect, ect_objective = hare_list_schedule(inst, lambda j, r, k: 0.0, "earliest-completion")
    assert {t.job: t.gpu for t in ect.tasks} == {"j0": "fast", "j1": "fast"}
    assert ect_objective == pytest.approx(2 + 3)
    assert check(inst, schedule).objective == pytest.approx(objective)
    assert check(inst, ect).objective == pytest.approx(ect_objective)


def test_ties_in_h_follow_job_round_task_order_and_rounds_wait_for_sync():
    gpus = (GPU("g", "A"),)
    inst = Instance(
        "x",
        (job("j0", {"A": 2}, {"A": 3}, rounds=2), job("j1", {"A": 1}, {"A": 0}, arrival=1)),
        gpus,
    )
    estimates = {(0, 0): 0.0, (0, 1): 5.0, (1, 0): 0.5}  # H: j0r0 1, j1r0 1, j0r1 6
    schedule, _ = hare_list_schedule(inst, lambda j, r, k: estimates[j, r])
    starts = {(t.job, t.round): t.start for t in schedule.tasks}
    # j0 r0 [0,2) ready 5; j1 (arrival 1) [2,3); j0 r1 waits for the sync: 5
    assert starts == {("j0", 0): 0.0, ("j1", 0): 2.0, ("j0", 1): 5.0}


def test_an_ordering_that_breaks_rounds_is_a_bug_not_a_schedule():
    inst = Instance("x", (job("j0", {"A": 1}, rounds=2),), (GPU("g", "A"),))
    with pytest.raises(OptschedError, match="previous round"):
        hare_list_schedule(inst, lambda j, r, k: -10.0 * r)


def test_toy_example_every_variant_between_relaxation_and_checker():
    """The toy's optimum is 8. A step 1 short of a proof (its default limit is 300 s: only on
    a loaded machine) has used up its time and claims no guarantee."""
    inst = load_instance(TOY)
    assert_optimum(solve(inst, "cpsat", time_limit=60, params={"lp_bound": "0"}), 8.0)
    for method in VARIANTS:
        result = solve(inst, method)
        assert result.status in (Status.FEASIBLE, Status.OPTIMAL)
        assert result.bound <= 8.0 + TOL <= result.objective + 2 * TOL
        relax = result.extra["relaxation"]
        g = result.extra["guarantee"]
        assert g["alpha"] == 4.0 and g["factor"] == 24.0
        if not relax["proved"]:
            assert result.runtime_s >= result.extra["method_time_limit"] / 2
            assert not g["covered"]
            continue
        assert g["ratio"] == pytest.approx(result.objective / relax["objective"])
        assert g["covered"] == (method == "hare")
        if method == "hare":  # Hare_Sched_RL of the toy: 7.5 (CP-SAT on the 0.001 s grid)
            assert relax["objective"] == pytest.approx(7.5)


def test_hare_refuses_gang_mode_and_bad_parameters():
    inst = load_instance(TOY)
    with pytest.raises(InputError, match="does not support mode"):
        solve(inst, "hare", mode="gang")
    with pytest.raises(InputError, match="interval_ratio"):
        solve(inst, "hare-lp", params={"interval_ratio": "1"})
    with pytest.raises(InputError, match="no parameter"):
        solve(inst, "hare-lp", params={"workers": "2"})


def test_a_relaxation_stopped_early_is_not_reported_as_proved():
    inst = load_instance(EXAMPLES / "example-2.instance.json")
    rl = solve_hare_relaxation(inst, ect_schedule(inst), time_unit=1.0, time_limit=1e-3)
    assert not rl.proved and rl.solver_status != "OPTIMAL"
    assert rl.bound is None or rl.bound <= rl.objective
    result = solve(inst, "hare", time_limit=1e-3)
    guarantee = result.extra["guarantee"]
    assert guarantee is None or (not guarantee["covered"] and guarantee["holds"] is None)


@pytest.mark.parametrize("name", ["example-1", "example-2", "example-3"])
def test_interval_lp_is_a_bound_and_orders_rounds(name):
    inst = load_instance(EXAMPLES / f"{name}.instance.json").with_mode("relaxed")
    optimum = {"example-1": 206, "example-2": 343, "example-3": 83}[name]
    lp = interval_lp(inst)
    assert lp.bound is not None and lp.bound <= optimum + TOL
    for j, starts in enumerate(lp.round_starts):
        assert len(starts) == inst.jobs[j].rounds
        assert np.all(np.diff(starts) >= 0) and starts[0] >= inst.jobs[j].arrival


@given(
    instances(
        mode="relaxed",
        max_jobs=3,
        max_gpus=3,
        max_rounds=2,
        max_k=2,
        integer=True,
        positive_sync=True,
    )
)
def test_hare_between_optimum_and_its_guarantee(inst):
    """Checker passes (solve checks), RL ≤ OPT ≤ Hare ≤ α(2+α)·RL, LP bound ≤ OPT. OPT lies
    between CP-SAT's bound and objective (equal once proved; integer data: a result short
    of a proof ran out of time)."""
    optimum = solve(inst, "cpsat", time_limit=5, params={"lp_bound": "0"})
    if optimum.status is not Status.OPTIMAL:
        assert_out_of_time(optimum)
    low, opt = optimum.bound, optimum.objective
    for method in VARIANTS:
        result = solve(inst, method, time_limit=5)
        assert result.objective >= low - TOL * max(1, low)
        relax = result.extra["relaxation"]
        g = result.extra["guarantee"]
        if not relax["proved"]:
            # CP-SAT may not prove Hare_Sched_RL in time on symmetric instances (three
            # identical 2×2-task jobs on three GPUs: not in 30 s); its bound still holds and
            # the published guarantee is then not claimed
            assert relax["bound"] is None or relax["bound"] <= opt + TOL * max(1, opt)
            assert g is None or not g["covered"]
            continue
        assert relax["objective"] <= opt + TOL * max(1, opt)
        assert g is not None and g["ratio"] >= 1 - TOL
        if method == "hare":
            target(g["ratio"] / g["factor"])  # steer the search towards violations
            assert g["covered"] and g["holds"], (
                f"Hare's α(2+α) guarantee fails: ratio {g['ratio']} > factor {g['factor']}"
            )


def test_hare_setting_generator_follows_the_paper_mix():
    """§7's "each type of jobs accounts for 25% of the total workload" is by work: NLP jobs,
    with twice the rounds, are half as many (2:1:2:2 by count); tests/test_hare_settings.py
    checks the work shares."""
    from collections import Counter

    from optsched.generate import HARE_CLUSTER, HARE_WORKLOADS, HareSpec, generate_hare

    spec = HareSpec(jobs=42, total_tasks=2000)
    inst = generate_hare(spec, 3)
    assert inst == generate_hare(spec, 3)  # deterministic for a seed
    assert Counter(g.type for g in inst.gpus) == Counter(HARE_CLUSTER)
    counts = Counter(j.workload for j in inst.jobs)
    assert set(counts) == set(HARE_WORKLOADS)
    nlp = counts["Hare/BERT-base"] + counts["Hare/Transformer"]
    assert nlp == 6 and sum(counts.values()) - nlp == 36  # 12:6:12:12
    assert {j.tasks_per_round for j in inst.jobs} <= {1, 2, 4, 8}
    assert abs(inst.n_tasks - 2000) <= 0.1 * 2000
    assert min(j.arrival for j in inst.jobs) == 0.0
    result = solve(inst, "hare-lp")
    # the LP keeps C_j ≥ critical path, so its bound is at least the critical-path bound
    assert result.extra["bound_method"] >= result.extra["bound_critical_path"] - TOL
    assert result.extra["guarantee"]["alpha"] == pytest.approx(heterogeneity_degree(inst))


def test_cli_generates_the_hare_family(tmp_path):
    from optsched.cli import main

    out = tmp_path / "h.json"
    assert (
        main(
            [
                "gen",
                "--family",
                "hare",
                "--seed",
                "0",
                "--jobs",
                "16",
                "--total-tasks",
                "100",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert load_instance(out).n_gpus == 160
    assert main(["gen", "--family", "hare", "--seed", "0", "--heterogeneity", "3"]) == 2
    assert (
        main(
            [
                "gen",
                "--family",
                "hare",
                "--seed",
                "0",
                "--jobs",
                "8",
                "--total-tasks",
                "40",
                "--gpus",
                "20",
                "--heterogeneity-level",
                "middle",
                "--mix",
                "1,0,0,1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    mixed = load_instance(out)
    assert {g.type for g in mixed.gpus} == {"V100", "K80"} and mixed.n_gpus == 20
    assert {j.workload for j in mixed.jobs} <= {
        "Hare/VGG-19",
        "Hare/ResNet-50",
        "Hare/Inception-V3",
        "Hare/FastGCN",
        "Hare/GraphSAGE",
    }
    assert main(["gen", "--family", "hare", "--seed", "0", "--mix", "1,2"]) == 2
    assert (
        main(
            [
                "gen",
                "--family",
                "hare",
                "--seed",
                "0",
                "--gpus",
                "2",
                "--heterogeneity-level",
                "high",
            ]
        )
        == 2
    )
    assert main(["solve", str(out), "--method", "hare-lp", "--json"]) == 0


@pytest.mark.parametrize(("compute", "time_unit"), [(0.0004, None), (1.0, 2.0), (0.3, 1.0)])
def test_tasks_shorter_than_half_a_step_keep_the_relaxation_feasible(compute, time_unit):
    # two tasks of one round on one GPU, each under half a step of the grid: their ECT
    # starts (0 and `compute`) once both rounded to step 0, which inequality (9) forbids; the
    # hint's deadlines then made the relaxation INFEASIBLE and the method an internal error
    inst = Instance(
        "short-tasks",
        (Job("j0", arrival=0.0, rounds=1, tasks_per_round=2, compute={"B": compute}),),
        (GPU("g0", "B"),),
        mode="relaxed",
    )
    params = {"step1": "exact"} | ({} if time_unit is None else {"time_unit": time_unit})
    for method in ("hare", "hare-ect"):
        result = solve(inst, method, params=params)
        assert result.objective == pytest.approx(2 * compute)  # checked by solve
