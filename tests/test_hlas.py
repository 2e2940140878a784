"""HLAS's discretised form, derived thresholds and starvation promotion; Gavel's two FIFOs;
the baselines in their own (gang) model."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, check
from optsched.online.baselines import SRTF, FIFORandom, Homo, Tiresias
from optsched.online.hlas import HLAS, quantile_thresholds
from optsched.online.run import simulate
from optsched.online.simulator import run_simulation, size_distribution
from optsched.testing import instances

OPTIONS = st.builds(
    HLAS,
    thresholds=st.sampled_from([None, (1.0,), (2.0, 6.0)]),
    starvation=st.sampled_from([0.0, 0.5, 2.0]),
    mapping=st.sampled_from(["A", "B", "C"]),
    form=st.sampled_from(["queues", "continuous"]),
    quantiles=st.sampled_from([(0.5, 0.8), (0.5,), (0.2, 0.4, 0.9)]),
)


def job(name, compute, **kw):
    base = {"arrival": 0.0, "weight": 1.0, "rounds": 1, "tasks_per_round": 1}
    return Job(id=name, compute=compute, **{**base, **kw})


@given(instances(mode="relaxed"), OPTIONS)
def test_every_hlas_option_passes_the_checker(inst, policy):
    sim = run_simulation(inst, policy)
    report = check(sim.instance, sim.schedule)
    assert report.feasible, report.violations[:1]
    assert report.objective == pytest.approx(sim.objective)


@given(instances(mode="gang"), st.integers(0, 3))
def test_gang_baselines_pass_the_checker(inst, seed):
    for policy in (FIFORandom(seed=seed), SRTF(), Homo(), Tiresias(quantiles=(0.5,))):
        sim = run_simulation(inst, policy)
        report = check(sim.instance, sim.schedule)
        assert report.feasible and report.objective == pytest.approx(sim.objective)


def test_thresholds_are_the_quantiles_of_the_job_sizes():
    gpus = (GPU("v", "V100"), GPU("k", "K80"))
    jobs = tuple(job(f"j{n}", {"V100": 1.0, "K80": 3.0}, rounds=n) for n in range(1, 11))
    inst = Instance("x", jobs, gpus)
    sizes = size_distribution(inst)
    assert sizes.reference == tuple(float(n) for n in range(1, 11))
    assert sizes.gpu_seconds == tuple(2.0 * n for n in range(1, 11))
    policy = HLAS(calibration="workload")
    run_simulation(inst, policy)
    assert policy.levels == quantile_thresholds(sizes.reference, (0.5, 0.8))
    assert policy.levels == pytest.approx((5.5, 8.2))
    continuous = HLAS(form="continuous")
    run_simulation(inst, continuous)
    assert continuous.levels == ()
    tiresias = Tiresias(calibration="workload")
    run_simulation(inst.with_mode("gang"), tiresias)
    assert tiresias.levels == pytest.approx((11.0, 16.4))
    assert quantile_thresholds((), (0.5,)) == ()


def test_history_thresholds_are_the_quantiles_of_the_jobs_finished_so_far():
    """Default calibration: none before a job finishes, then the quantiles of the finished
    jobs' sizes, taken anew at 1, 2, 4 and 8 finished jobs (10 jobs of 1..10 tasks)."""
    gpus = (GPU("v", "V100"), GPU("k", "K80"))
    jobs = tuple(job(f"j{n}", {"V100": 1.0, "K80": 3.0}, rounds=n) for n in range(1, 11))
    inst = Instance("x", jobs, gpus)
    time = {"v": 1.0, "k": 3.0}
    for policy, mode in ((HLAS(), "relaxed"), (Tiresias(), "gang")):
        seen: list[tuple[float, ...]] = []
        add = policy.finished

        def watch(state, now, add=add, seen=seen, policy=policy):
            changed = add(state, now)
            seen.append(policy.levels)
            return changed

        policy.finished = watch  # type: ignore[method-assign]
        sim = run_simulation(inst.with_mode(mode), policy)
        # HLAS: service in fastest-GPU seconds; Tiresias: the GPU-seconds held
        size = [0.0] * 10
        for t in sim.schedule.tasks:
            size[inst.job_index[t.job]] += 1.0 if mode == "relaxed" else time[t.gpu]
        order = sorted(range(10), key=lambda j: sim.completion[j])
        for k in (1, 2, 4, 8):
            assert seen[k - 1] == quantile_thresholds([size[j] for j in order[:k]], (0.5, 0.8))
        assert seen[-1] == seen[7]


def test_queues_serve_fifo_and_promotion_acts():
    """One GPU, threshold 2.5: a long job that attained 3 units drops to queue 1, so the
    later short jobs go first (FIFO among them); with promotion it returns to queue 0
    after waiting longer than starvation × its service, ahead of later arrivals."""
    gpu = (GPU("g", "V100"),)
    long = job("long", {"V100": 1.0}, rounds=6)
    shorts = tuple(job(f"s{n}", {"V100": 1.0}, arrival=0.5 + n, rounds=2) for n in range(4))
    inst = Instance("x", (long, *shorts), gpu)

    def order(policy):
        tasks = sorted(run_simulation(inst, policy).schedule.tasks, key=lambda t: t.start)
        return [t.job for t in tasks]

    no_promotion = order(HLAS(thresholds=(2.5,), starvation=0.0))
    assert (
        no_promotion
        == ["long"] * 3 + ["s0", "s0", "s1", "s1", "s2", "s2", "s3", "s3"] + ["long"] * 3
    )  # FIFO inside queue 0; the long job waits for every short one
    promoted = order(HLAS(thresholds=(2.5,), starvation=1.0))
    assert promoted.index("long", 3) < no_promotion.index("long", 3)
    # continuous LAS orders by service alone: after one unit each, the long job alternates
    assert order(HLAS(form="continuous", mapping="A"))[:2] == ["long", "s0"]


def test_mapping_b_gives_the_fast_gpu_to_the_job_that_gains_most():
    gpus = (GPU("v", "V100"), GPU("k", "K80"))
    inst = Instance(
        "x",
        (
            job("flat", {"V100": 1.0, "K80": 1.5}),
            job("steep", {"V100": 1.0, "K80": 8.0}, arrival=0.0),
        ),
        gpus,
    )
    where = {t.job: t.gpu for t in run_simulation(inst, HLAS()).schedule.tasks}
    assert where == {"steep": "v", "flat": "k"}
    where_a = {t.job: t.gpu for t in run_simulation(inst, HLAS(mapping="A")).schedule.tasks}
    assert where_a == {"flat": "v", "steep": "k"}  # FIFO order, fastest idle GPU


def test_fifo_random_keeps_its_gpu_type_and_fifo_is_fifo_perf():
    gpus = (GPU("v0", "V100"), GPU("v1", "V100"), GPU("k0", "K80"), GPU("k1", "K80"))
    inst = Instance(
        "x",
        tuple(
            job(f"j{n}", {"V100": 1.0, "K80": 4.0}, rounds=3, tasks_per_round=2, arrival=float(n))
            for n in range(3)
        ),
        gpus,
        mode="gang",
    )
    for seed in range(4):
        sim = run_simulation(inst, FIFORandom(seed=seed))
        types = {}
        for t in sim.schedule.tasks:
            types.setdefault(t.job, set()).add(t.gpu[0])
        assert all(len(v) == 1 for v in types.values())
        assert check(inst, sim.schedule).feasible
    draws = {
        tuple(
            sorted((t.job, t.gpu) for t in run_simulation(inst, FIFORandom(seed=s)).schedule.tasks)
        )
        for s in range(8)
    }
    assert len(draws) > 1  # the type really is drawn
    perf = simulate(inst, "fifo-perf")
    alias = simulate(inst, "fifo")
    assert perf.objective == alias.objective
    assert {t.gpu[0] for t in perf.schedule.tasks if t.job == "j0"} == {"v"}


def test_params_reach_the_policies():
    gpus = (GPU("v", "V100"),)
    inst = Instance("x", (job("a", {"V100": 1.0}, rounds=3),), gpus)
    for params in (
        {},
        {"form": "continuous"},
        {"thresholds": "1,2", "starvation": "0"},
        {"thresholds": "auto", "mapping": "A"},
    ):
        result = simulate(inst, "hlas", params=params)
        assert result.objective == 3.0
    result = simulate(inst.with_mode("gang"), "tiresias", params={"thresholds": "auto"})
    assert result.objective == 3.0
    result = simulate(inst.with_mode("gang"), "fifo-random", seed=5)
    assert result.objective == 3.0
    assert np.isfinite(result.objective)
