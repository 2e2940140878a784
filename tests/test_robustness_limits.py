"""Time limits and size caps: every method ends within its time limit with what it has
certified, models too large for memory are refused (or skipped) before they are built, and the
generators refuse sizes and float options that cannot work, naming the option."""

from __future__ import annotations

import json
import time
import warnings

import pytest

from optsched import GPU, Instance, Job, Status, check, solve
from optsched.cli import main
from optsched.critical_path import critical_path_bound
from optsched.ect import ect_schedule
from optsched.errors import InputError
from optsched.exact.bounds import solve_time_indexed_lp
from optsched.exact.hare_relaxation import solve_hare_relaxation
from optsched.generate import (
    GeneratorSpec,
    HareSpec,
    LiquidSpec,
    generate,
    generate_hare,
)
from optsched.io import instance_to_dict, write_json

#: Seconds a method may run past its limit in these tests (the goal is far less: see the
#: measurements in optsched/budget.py).
MARGIN = 10.0

#: The 4-job instance of the report: `optsched gen --seed 1 --jobs 4`; its time-indexed LP at
#: time_unit 0.01 took 62 s and 2.4 GB whatever the time limit.
REPORTED = GeneratorSpec(jobs=4), 1


def reported_instance():
    spec, seed = REPORTED
    return generate(spec, seed)


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- the reported case: lp-bound with a fine grid -----------------------------------------------


@pytest.mark.slow  # 2 s; test_lp_bound_result_is_checked_and_certified: the same through the API
def test_lp_bound_with_a_fine_grid_ends_within_its_time_limit(tmp_path, capsys, wall_clock):
    path = tmp_path / "inst.json"
    write_json(path, instance_to_dict(reported_instance()))
    started = time.perf_counter()
    code, out, _ = run_cli(
        capsys,
        "solve",
        path,
        "--method",
        "lp-bound",
        "--param",
        "time_unit=0.01",
        "--time-limit",
        "2",
        "--json",
    )
    assert code == 0
    wall_clock.below(time.perf_counter() - started, 2 + MARGIN)
    result = json.loads(out)
    assert result["status"] in ("feasible", "optimal")
    assert result["bound"] is not None and result["bound"] <= result["objective"]
    assert result["lp_status"] in ("optimal", "time limit (build)", "time limit (solver)")
    if result["lp_status"] != "optimal":  # nothing certified by the LP: critical path only
        assert result["bound_method"] is None
        assert result["bound"] == result["bound_critical_path"]


def test_lp_bound_result_is_checked_and_certified(wall_clock):
    inst = reported_instance()
    result = solve(inst, "lp-bound", time_limit=2, params={"time_unit": "0.01"})
    wall_clock.below(result.runtime_s, 2 + MARGIN)
    assert result.status is Status.FEASIBLE
    assert check(inst, result.schedule).objective == result.objective
    assert critical_path_bound(inst) <= result.bound <= result.objective


def test_lp_bound_refuses_an_lp_that_cannot_fit_in_memory(wall_clock):
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"time_unit 1e-05: .*non-zeros.*GiB"):
        solve(reported_instance(), "lp-bound", time_limit=5, params={"time_unit": "1e-5"})
    wall_clock.below(time.perf_counter() - started, 5)


def test_the_lp_is_built_only_within_its_caps_and_its_time():
    inst = reported_instance()
    upper = check(inst, ect_schedule(inst)).objective
    assert solve_time_indexed_lp(inst, upper, 1e-5).status == "too large"
    late = solve_time_indexed_lp(inst, upper, 0.01, time_limit=1e-6)
    assert late.bound is None and late.status == "time limit (build)"
    done = solve_time_indexed_lp(inst, upper, 1.0, time_limit=30)
    assert done.status == "optimal" and done.bound <= upper


def test_cpsat_keeps_its_lp_bound_within_the_time_limit(wall_clock):
    inst = reported_instance()
    result = solve(inst, "cpsat", time_limit=2, params={"time_unit": "0.01"})
    wall_clock.below(result.runtime_s, 2 + MARGIN)
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert result.bound <= result.objective
    if result.extra["solver_status"] != "OPTIMAL":
        assert result.extra["lp_status"] in (
            "converged",
            "optimal",
            "time limit",
            "time limit (build)",
            "too large",
        )


# -- a model build stopped by the time limit returns the incumbent ------------------------------


def test_cpsat_build_out_of_time_returns_the_incumbent():
    inst = reported_instance()
    result = solve(inst, "cpsat", time_limit=1e-6)
    assert result.status is Status.FEASIBLE and "not built" in result.extra["model"]
    assert result.extra["lp_status"] == "time limit (build)"
    bare = solve(inst, "cpsat", time_limit=1e-6, params={"hint": "none"})
    assert bare.status is Status.UNKNOWN and bare.schedule is None


def test_milp_build_out_of_time_returns_the_ect_schedule(wall_clock):
    inst = generate(GeneratorSpec(jobs=60), 1)  # ~3.8e6 non-zeros: a 15 s PuLP build
    started = time.perf_counter()
    result = solve(inst, "milp-highs", time_limit=1)
    wall_clock.below(time.perf_counter() - started, 1 + MARGIN)
    assert result.status is Status.FEASIBLE
    assert result.extra["solver_status"] == "NOT_SOLVED: time limit"
    assert result.objective == check(inst, ect_schedule(inst)).objective


def test_hare_relaxation_out_of_time_falls_back_on_the_feasible_schedule():
    inst = reported_instance()
    rl = solve_hare_relaxation(inst, ect_schedule(inst), time_unit=1.0, time_limit=1e-6)
    assert rl.solver_status == "NOT_BUILT" and not rl.proved and rl.bound is None
    result = solve(inst, "hare", time_limit=1e-6)  # spent before step 1: ECT itself
    assert result.status is Status.FEASIBLE and result.extra["stopped"] == "time limit"
    assert result.extra["relaxation"]["order"] == "ect"
    assert result.objective == check(inst, ect_schedule(inst)).objective


def test_hare_lp_out_of_time_orders_by_ect():
    inst = reported_instance()
    result = solve(inst, "hare-lp", time_limit=1e-6)
    relax = result.extra["relaxation"]
    assert result.status is Status.FEASIBLE and result.extra["stopped"] == "time limit"
    assert relax["order"] == "ect" and relax["bound"] is None
    assert relax["status"] == "not solved (time limit)"


# -- models too large for memory are refused before anything is built --------------------------


@pytest.mark.parametrize(
    "method,spec,params,needles",
    [
        ("milp-highs", GeneratorSpec(jobs=200), {}, ["--method milp-highs", "non-zeros", "GiB"]),
        (
            "cpsat",
            GeneratorSpec(jobs=1000, rounds=(1000, 1000), tasks=(1, 1)),
            {},
            ["--method cpsat", "intervals"],
        ),
        ("hare", None, {"step1": "exact"}, ["Hare_Sched_RL", "pairs", "step1=lp"]),
    ],
)
def test_exact_models_too_large_are_refused_fast(method, spec, params, needles, wall_clock):
    inst = generate(spec, 0) if spec else generate_hare(HareSpec(jobs=300), 0)
    started = time.perf_counter()
    with pytest.raises(InputError) as info:
        solve(inst, method, time_limit=60, params=params)
    wall_clock.below(time.perf_counter() - started, 5)
    message = str(info.value)
    assert "\n" not in message and all(n in message for n in needles)


def test_interval_lp_with_absurd_intervals_is_refused():
    with pytest.raises(InputError, match="interval_ratio"):
        solve(reported_instance(), "hare-lp", params={"interval_ratio": "1.0000001"})


def test_a_time_unit_too_fine_for_the_grid_is_refused():
    inst = reported_instance()
    with pytest.raises(InputError, match="time_unit 1e-16 is too fine"):
        solve(inst, "cpsat", params={"time_unit": "1e-16"})
    with pytest.raises(InputError, match="time_unit 1e-12 is too fine for Hare_Sched_RL"):
        solve(inst, "hare", params={"time_unit": "1e-12"})


def test_hare_at_an_epoch_origin_names_the_origin_to_move():
    """Hare_Sched_RL counts time from 0 (inequality (9) as published): at 1.5e9 s its grid
    overflows CP-SAT's integers, and the refusal says to move the origin, not only to coarsen
    the grid."""
    jobs = tuple(
        Job(f"j{i}", arrival=1.5e9 + i, rounds=200, compute={"V": 40.5 + i}) for i in range(3)
    )
    inst = Instance("epoch", jobs, (GPU("g", "V"),))
    with pytest.raises(InputError, match=r"subtract the first arrival \(1\.5e\+09 s\)"):
        solve(inst, "hare", time_limit=5)
    assert solve(inst, "hare", params={"time_unit": "1"}, time_limit=5).objective > 0


# -- placement: exact methods and the GGA honour the wall clock ---------------------------------


def test_placement_methods_honour_their_time_limit(wall_clock):
    from optsched.placement.generate import PlacementSpec, generate_placement
    from optsched.placement.run import place

    inst = generate_placement(
        PlacementSpec(jobs=40, hosts=40, gpus_per_host=4, hosts_per_rack=4, workers=(1, 3)), 0
    )
    for method, limit in (("milp-highs", 1.0), ("gga", 0.5), ("cpsat", 1.0)):
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            result = place(inst, method, time_limit=limit, params={"cost": "code"})
            placement = result.placement
        wall_clock.below(time.perf_counter() - started, limit + MARGIN, method)
        assert result.status in (Status.FEASIBLE, Status.OPTIMAL, Status.UNKNOWN), method
        if method != "cpsat":  # fallbacks keep a checked placement, time permitting: on a
            # loaded machine the method may run out before any placement, and says so
            out_of_time = not wall_clock.timed and result.extra.get("stopped") == "time limit"
            assert placement is not None or out_of_time, method


# -- generator size guards and float options ---------------------------------------------------


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["--jobs", "1000000000"], ["--jobs 1000000000", "1e+09 jobs", "tasks"]),
        (["--family", "hare", "--total-tasks", str(10**12)], ["--total-tasks", "1e+12 tasks"]),
        (["--gpus", "1000000000"], ["--gpus 1000000000", "1e+09 GPUs"]),
        (["--hosts", "1000000000"], ["--hosts 1000000000"]),
        (["--rounds", "1", "1000000000000"], ["--rounds 1 1000000000000", "tasks"]),
        (
            ["--tasks", "1", "1000000000000", "--jobs", "100000", "--gpus", "1000"],
            ["--tasks 1 1000000000000", "1e+08 tasks"],
        ),
        (["--jobs", "20000", "--gpus", "5000"], ["--jobs 20000", "1e+08 compute entries"]),
        (["--family", "hare", "--gpus", "1000000000"], ["--gpus 1000000000", "GPUs"]),
        (["--family", "hare", "--jobs", "2000000"], ["--jobs 2000000", "2e+06 jobs"]),
        (["--family", "liquid", "--hosts", "1000000000"], ["--hosts 1000000000", "GPUs"]),
        (["--family", "liquid", "--predict-from", "1000000000"], ["--predict-from 1e+09"]),
        (["--family", "hare", "--iters-per-task", "1000000000"], ["--iters-per-task"]),
    ],
)
def test_generators_refuse_sizes_that_cannot_fit(tmp_path, capsys, argv, needles, wall_clock):
    out = tmp_path / "x.json"
    started = time.perf_counter()
    code, _, err = run_cli(capsys, "gen", "--seed", "0", *argv, "--out", out)
    wall_clock.below(time.perf_counter() - started, 5)  # refused before anything is generated
    assert code == 2 and err.startswith("optsched: error: ") and err.count("\n") == 1
    assert all(n in err for n in needles), err
    assert not out.exists()


@pytest.mark.parametrize(
    "argv,option",
    [
        (["--load", "inf"], "--load"),
        (["--load", "0"], "--load"),
        (["--load", "nan"], "--load"),
        (["--heterogeneity", "nan"], "--heterogeneity"),
        (["--heterogeneity", "inf"], "--heterogeneity"),
        (["--sync-ratio", "inf"], "--sync-ratio"),
        (["--task-time", "1", "inf"], "--task-time"),
        (["--sync-time", "nan", "1"], "--sync-time"),
        (["--weight", "1", "inf"], "--weight"),
        (["--task-time", "2.5", "2.7"], "--task-time"),
        (["--tasks", "10", "12"], "--tasks"),
        (["--family", "hare", "--load", "inf"], "--load"),
        (["--family", "liquid", "--interarrival", "nan"], "--interarrival"),
        (["--family", "liquid", "--launch", "inf"], "--launch"),
        (["--family", "liquid", "--share-cap", "0.5"], "--share-cap"),
    ],
)
def test_generators_refuse_non_finite_or_out_of_range_options(capsys, argv, option):
    code, _, err = run_cli(capsys, "gen", "--seed", "0", *argv)
    assert code == 2 and err.startswith(f"optsched: error: {option} ") and err.count("\n") == 1


def test_specs_guard_the_python_api_too():
    with pytest.raises(InputError, match="--jobs"):
        GeneratorSpec(jobs=10**9)
    with pytest.raises(InputError, match="--total-tasks"):
        HareSpec(total_tasks=10**12)
    with pytest.raises(InputError, match="--jobs"):
        GeneratorSpec(jobs=2.5)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="--gpu-memory"):
        LiquidSpec(gpu_memory=float("inf"))


def test_every_benchmark_grid_is_within_the_caps():
    from optsched.bench.grid import load_grid
    from tests.conftest import ROOT

    for path in sorted((ROOT / "benchmarks" / "grids").glob("*.json")):
        load_grid(path)  # validates every cell's spec
    HareSpec()  # the paper's 300 jobs, 160 GPUs, ~50,000 tasks
    GeneratorSpec(jobs=100_000)  # trace-sized: about 500,000 tasks
