"""Hare's published settings (HPDC'22 §5.1, §7) and Algorithm 1's GPU tie rules (§5.2)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, check, solve
from optsched.errors import InputError
from optsched.exact.hare_relaxation import heterogeneity_degree
from optsched.generate import HARE_CLASSES, HareSpec, generate_hare
from optsched.heuristics.hare import GPU_TIES, hare_list_schedule
from optsched.testing import instances

CLASS_OF = {w: c for c, members in HARE_CLASSES.items() for w in members}
TOL = 1e-6


def class_work(inst: Instance) -> tuple[dict[str, float], float]:
    """Each class's work (R K × task time on the fastest GPU) and the rounding slack: a job's
    work moves by at most K × its task time when its rounds are rounded (or raised to 1)."""
    work: dict[str, float] = defaultdict(float)
    slack = 0.0
    for j, job in enumerate(inst.jobs):
        task = float(inst.compute[j].min())
        work[CLASS_OF[job.workload]] += job.rounds * job.tasks_per_round * task
        slack += job.tasks_per_round * task
    return work, slack


settings_specs = st.builds(
    HareSpec,
    jobs=st.integers(8, 60),
    gpus=st.integers(12, 200),
    heterogeneity_level=st.sampled_from(["low", "middle", "high"]),
    mix=st.one_of(st.none(), st.tuples(*[st.integers(1, 3).map(float)] * 4)),
    tasks_per_job=st.floats(40, 250),
    bandwidth_gbps=st.sampled_from([10.0, 15.0, 25.0]),
    nlp_rounds=st.sampled_from([1.0, 2.0, 3.0]),
)


@given(settings_specs, st.integers(0, 2**16))
def test_generated_instances_follow_the_published_settings(spec, seed):
    """Work shares = mix (up to rounding the rounds), sync < compute on every GPU, α defined,
    NLP jobs have more rounds, arrivals a Poisson process from 0 at the spec's rate."""
    inst = generate_hare(spec, seed)
    mix = spec.mix or (1.0,) * 4
    work, slack = class_work(inst)
    total = sum(work.values())
    present = [c for c in HARE_CLASSES if work.get(c)]
    target = {c: mix[list(HARE_CLASSES).index(c)] for c in present}
    for c in present:
        share = work[c] / total
        assert abs(share - target[c] / sum(target.values())) <= 2 * slack / total + TOL, c
    # §5.1: training time longer than synchronisation time, on every GPU; all jobs sync
    assert np.all(inst.sync > 0) and np.all(inst.sync < inst.compute)
    assert heterogeneity_degree(inst) is not None
    arrivals = [j.arrival for j in inst.jobs]
    assert arrivals[0] == 0.0 and arrivals == sorted(arrivals)
    assert spec.rate() == pytest.approx(
        HareSpec(
            jobs=spec.jobs + 7,
            gpus=160,
            tasks_per_job=spec.tasks_per_job,
            bandwidth_gbps=spec.bandwidth_gbps,
        ).rate()
    )  # one rate per figure
    if spec.nlp_rounds > 1 and {"NLP", "CV"} <= set(present) and spec.jobs >= 30:
        rounds = defaultdict(list)
        for job in inst.jobs:
            rounds[CLASS_OF[job.workload]].append(job.rounds * job.tasks_per_round)
        assert np.mean(rounds["NLP"]) > np.mean(rounds["CV"])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_paper_scale_work_shares_are_a_quarter_each(seed):
    """§7: "each type of jobs accounts for 25% of the total workload" — by work."""
    inst = generate_hare(HareSpec(), seed)
    work, _ = class_work(inst)
    total = sum(work.values())
    assert all(abs(work[c] / total - 0.25) < 0.005 for c in HARE_CLASSES)
    counts = defaultdict(int)
    for job in inst.jobs:
        counts[CLASS_OF[job.workload]] += 1
    assert counts == {"CV": 86, "NLP": 43, "Speech": 86, "Rec": 85}  # 2:1:2:2
    assert abs(inst.n_tasks - 50_000) < 0.01 * 50_000
    ratio = inst.sync / inst.compute
    assert ratio.max() < 0.4  # ≤ 0.39 at 25 Gbit/s, so < 1 down to 10 Gbit/s (Fig. 18)


def test_one_arrival_rate_per_figure_makes_more_jobs_more_load():
    """Fig. 15: 100 → 300 jobs at one rate span three times as long; Fig. 14: the rate does
    not change with the number of GPUs."""
    base = dict(gpus=160, tasks_per_job=166.67)
    rates = (
        {HareSpec(jobs=n, **base).rate() for n in (100, 300)}
        | {HareSpec(jobs=200, tasks_per_job=166.67, gpus=g).rate() for g in (100, 180)}
        | {HareSpec(jobs=200, tasks_per_job=166.67, mix=(2.0, 1.0, 1.0, 1.0)).rate()}
    )
    assert max(rates) == pytest.approx(min(rates))
    span = {
        n: max(j.arrival for j in generate_hare(HareSpec(jobs=n, **base), 0).jobs)
        for n in (100, 300)
    }
    assert 2 < span[300] / span[100] < 4.5
    fixed = HareSpec(jobs=50, total_tasks=2000, arrival_rate=0.25)
    assert fixed.rate() == 0.25
    assert max(j.arrival for j in generate_hare(fixed, 0).jobs) > 100  # ~49 / 0.25 s


def test_iters_per_task_overrides_the_task_time_rule():
    inst = generate_hare(HareSpec(jobs=16, total_tasks=400, iters_per_task=1), 0)
    assert {j.iters_per_task for j in inst.jobs} == {1}
    assert heterogeneity_degree(inst) is not None  # still defined: every job syncs
    with pytest.raises(InputError, match="--task-seconds"):
        HareSpec(task_seconds=0.0)
    with pytest.raises(InputError, match="--load-gpus"):
        HareSpec(load_gpus=2)
    with pytest.raises(InputError, match="--arrival-rate"):
        HareSpec(arrival_rate=-1.0)


def job(name, compute, sync, **kw):
    base = {"arrival": 0.0, "weight": 1.0, "rounds": 1, "tasks_per_round": 1}
    return Job(id=name, compute=compute, sync=sync, **{**base, **kw})


def test_fastest_tie_takes_the_fastest_gpu_among_the_earliest_starts():
    """Line 12 ties: both GPUs are free at 0; lowest-index takes the K80, fastest the V100.
    A GPU that frees later is not a tie, however fast."""
    gpus = (GPU("slow", "K80"), GPU("fast", "V100"))
    inst = Instance(
        "x",
        (
            job("j0", {"K80": 10, "V100": 1}, {"K80": 1, "V100": 1}),
            job("j1", {"K80": 10, "V100": 1}, {"K80": 1, "V100": 1}),
        ),
        gpus,
    )
    literal, literal_obj = hare_list_schedule(inst, lambda j, r, k: 0.0)
    fast, fast_obj = hare_list_schedule(inst, lambda j, r, k: 0.0, gpu_tie="fastest")
    assert {t.job: (t.gpu, t.start) for t in literal.tasks} == {
        "j0": ("slow", 0.0),
        "j1": ("fast", 0.0),
    }
    # j0 takes the V100 at 0; j1 then starts at 0 on the K80, earlier than the V100 at 1
    assert {t.job: (t.gpu, t.start) for t in fast.tasks} == {
        "j0": ("fast", 0.0),
        "j1": ("slow", 0.0),
    }
    assert (literal_obj, fast_obj) == (11 + 2, 2 + 11)
    assert check(inst, fast).objective == pytest.approx(fast_obj)
    # j0 → K80 [0, 2), j1 → V100 [0, 4) under both rules; j2, released at 5, starts at 5 on
    # either GPU: literal line 12 takes the K80 (φ 2 < 4), the fastest tie the V100
    late = Instance(
        "x",
        (
            job("j0", {"K80": 2, "V100": 4}, {"K80": 1, "V100": 1}),
            job("j1", {"K80": 10, "V100": 4}, {"K80": 1, "V100": 1}),
            job("j2", {"K80": 10, "V100": 1}, {"K80": 1, "V100": 1}, arrival=5.0),
        ),
        gpus,
    )
    order = {0: 0.0, 1: 0.5, 2: 5.0}
    for tie, expected in (("lowest-index", "slow"), ("fastest", "fast")):
        schedule, _ = hare_list_schedule(late, lambda j, r, k: order[j], gpu_tie=tie)
        placed = {t.job: (t.gpu, t.start) for t in schedule.tasks}
        assert placed == {"j0": ("slow", 0.0), "j1": ("fast", 0.0), "j2": (expected, 5.0)}


def test_gpu_tie_is_a_parameter_of_the_earliest_free_methods_only():
    inst = Instance(
        "x", (job("j0", {"A": 1, "B": 2}, {"A": 1, "B": 1}),), (GPU("a", "A"), GPU("b", "B"))
    )
    for method in ("hare", "hare-lp"):
        for tie in GPU_TIES:
            result = solve(inst, method, params={"gpu_tie": tie})
            assert result.extra["gpu_tie"] == tie
            assert set(result.extra["tie_objectives"]) == set(GPU_TIES)
            assert result.extra["tie_objectives"][tie] == pytest.approx(result.objective)
    with pytest.raises(InputError, match="gpu_tie"):
        solve(inst, "hare", params={"gpu_tie": "random"})
    with pytest.raises(InputError, match="no parameter"):
        solve(inst, "hare-ect", params={"gpu_tie": "fastest"})


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
def test_both_tie_rules_pass_the_checker_and_the_guarantee(inst):
    """Both readings of line 12 give checked schedules, the same start for each task given
    the GPUs' φ, and Σ w C ≤ α(2+α) × Hare_Sched_RL where the relaxation is proved."""
    for tie in GPU_TIES:
        result = solve(inst, "hare", time_limit=5, params={"gpu_tie": tie})
        assert check(inst, result.schedule).objective == pytest.approx(result.objective)
        g = result.extra["guarantee"]
        relax = result.extra["relaxation"]
        assert g is not None  # every sync > 0: α is defined
        if relax["proved"]:
            assert g["covered"] and g["holds"], (tie, g)
            for value in result.extra["tie_objectives"].values():
                assert (
                    relax["objective"] - TOL
                    <= value
                    <= g["factor"] * relax["objective"] * (1 + 1e-9)
                )
