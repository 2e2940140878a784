"""Exact solvers and certified bounds: proven optima, cross-checks, oracles, status mapping."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from scipy.optimize import linear_sum_assignment

from optsched import GPU, Instance, Job, Status, check, solve
from optsched.critical_path import critical_path_bound
from optsched.errors import InputError
from optsched.exact.bounds import (
    deadlines,
    horizon,
    lp_time_unit,
    time_indexed_lp_bound,
    time_indexed_lp_size,
)
from optsched.exact.cpsat import assign_gpus
from optsched.exact.grid import default_time_unit, scale
from optsched.exact.milp import cbc_bound, map_status
from optsched.io import load_instance
from optsched.result import OPTIMAL_TOL
from optsched.testing import instances
from tests.conftest import EXAMPLES, ROOT, assert_optimum, assert_out_of_time, n_examples

OPTIMA = {"example-1": (206, 209), "example-2": (343, 372), "example-3": (83, 85)}
EXACT = ["cpsat", "cpsat-pergpu", "milp-highs", "milp-cbc"]
NO_LP = {"lp_bound": "0"}


def params(method):
    return NO_LP if method.startswith("cpsat") else {}


#: (engine, example, mode) that take 10-30 s to prove on a quiet machine: slow checks only
HEAVY = {
    ("cpsat", "example-2", "relaxed"),
    ("cpsat-pergpu", "example-2", "relaxed"),
    ("milp-highs", "example-2", "gang"),
    ("milp-cbc", "example-2", "gang"),
}
CASES = [
    (method, name, mode)
    for method in EXACT
    for name in sorted(OPTIMA)
    for mode in ("relaxed", "gang")
    if not (method.startswith("milp") and (name, mode) == ("example-2", "relaxed"))
]
#: CP-SAT's core-based search is a third CP-SAT engine for the proofs
ENGINES = [*EXACT, "cpsat-core"]


@pytest.mark.parametrize(("method", "name", "mode"), [case for case in CASES if case not in HEAVY])
def test_examples_optima_are_reproduced(method, name, mode):
    """Every exact engine finds the shared examples' optimum in both modes, or runs out of
    time with bound ≤ optimum ≤ objective (the milp engines leave out the 17-task
    example-2 in relaxed mode: beyond what the disjunctive MILP proves quickly)."""
    inst = load_instance(EXAMPLES / f"{name}.instance.json")
    result = solve(inst, method, mode=mode, time_limit=60, params=params(method))
    assert_optimum(result, OPTIMA[name][mode == "gang"])
    assert check(inst.with_mode(mode), result.schedule).objective == result.objective


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "name", "mode"),
    [
        (m, n, o)
        for m in ENGINES
        for (e, n, o) in CASES
        if e == m or (m == "cpsat-core" and e == "cpsat")
    ],
)
def test_every_engine_proves_the_examples_optima_within_a_minute(method, name, mode):
    """On a quiet machine each engine proves every example's optimum within 60 s."""
    inst = load_instance(EXAMPLES / f"{name}.instance.json")
    engine, extra = ("cpsat", {"search": "core"}) if method == "cpsat-core" else (method, {})
    result = solve(inst, engine, mode=mode, time_limit=60, params={**params(engine), **extra})
    assert result.status is Status.OPTIMAL
    assert result.objective == pytest.approx(OPTIMA[name][mode == "gang"])
    assert check(inst.with_mode(mode), result.schedule).objective == result.objective


@pytest.mark.parametrize(
    ("mode", "name"),
    [
        pytest.param(*case, marks=pytest.mark.slow)
        if case == ("gang", "example-2")  # a 5 s LP
        else case
        for case in [(mode, name) for mode in ("relaxed", "gang") for name in OPTIMA]
    ],
)
def test_bounds_are_below_the_optimum(name, mode):
    inst = load_instance(EXAMPLES / f"{name}.instance.json").with_mode(mode)
    optimum = OPTIMA[name][mode == "gang"]
    ect = solve(inst, "ect").objective
    assert critical_path_bound(inst) <= optimum
    lp = time_indexed_lp_bound(inst, ect, 1.0)
    assert lp is not None and critical_path_bound(inst) <= lp <= optimum
    # a coarser grid rounds times down: still a bound, never above the optimum
    if inst.compute.min() >= 2:
        assert time_indexed_lp_bound(inst, ect, 2.0) <= optimum
    result = solve(inst, "lp-bound")
    assert result.bound == lp and result.objective == ect


@settings(max_examples=n_examples(25), deadline=None)
@given(instances(max_jobs=3, max_gpus=3, max_rounds=2, max_k=2))
def test_two_engines_agree_and_bounds_hold(inst):
    """CP-SAT and the MILP prove the same optimum; bound ≤ OPT ≤ every feasible objective.
    The MILP works on the data's own times, so it proves the optimum or runs out of time."""
    cp = solve(inst, "cpsat", time_limit=5, params=NO_LP)
    milp = solve(inst, "milp-highs", time_limit=5)
    per_gpu = solve(inst, "cpsat-pergpu", time_limit=5, params=NO_LP)
    ect = solve(inst, "ect")
    proved = [r for r in (cp, milp, per_gpu) if r.status is Status.OPTIMAL]
    if milp.status is not Status.OPTIMAL:
        assert_out_of_time(milp)
    # the least objective: the optimum when one engine proved it, above it otherwise
    optimum = min(r.objective for r in (cp, milp, per_gpu, ect))
    for r in proved:
        assert r.objective == pytest.approx(optimum, rel=1e-6)
    for r in (cp, milp, per_gpu, ect):
        assert r.bound <= optimum + 1e-6 * max(1, optimum)
        assert r.objective >= optimum - 1e-6 * max(1, optimum)
        assert check(inst, r.schedule).objective == r.objective
    unit = lp_time_unit(inst, ect.metrics["makespan"])
    lp = time_indexed_lp_bound(inst, ect.objective, unit)
    assert lp is None or lp <= optimum + 1e-6 * max(1, optimum)


@settings(max_examples=n_examples(15), deadline=None)
@given(instances(mode="gang", max_jobs=3, max_gpus=3, max_rounds=2, max_k=2, integer=True))
def test_relaxed_optimum_never_exceeds_gang_optimum(inst):
    """Relaxed OPT ≤ gang OPT: the relaxed bound is below every gang schedule, and the
    relaxed optimum below the gang one when both are proved (integer data: a result short
    of a proof ran out of time)."""
    gang = solve(inst, "cpsat", time_limit=5, params=NO_LP)
    relaxed = solve(inst, "cpsat", mode="relaxed", time_limit=5, params=NO_LP)
    for result in (gang, relaxed):
        if result.status is not Status.OPTIMAL:
            assert_out_of_time(result)
    assert relaxed.bound <= gang.objective + 1e-9
    if gang.status is Status.OPTIMAL and relaxed.status is Status.OPTIMAL:
        assert relaxed.objective <= gang.objective + 1e-9


def matching_optimum(p: np.ndarray) -> float:
    """R||ΣC: a job in the k-th last position of a GPU adds k·p (min-cost assignment)."""
    n, _m = p.shape
    cost = np.concatenate([k * p for k in range(1, n + 1)], axis=1)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].sum())


@settings(max_examples=n_examples(20), deadline=None)
@given(instances(max_jobs=5, max_gpus=3, integer=True))
def test_one_task_jobs_without_sync_or_arrivals_match_the_assignment_oracle(inst):
    """One round of one task, no sync, unit weights, no arrivals = min-cost matching."""
    jobs = tuple(Job(j.id, compute=dict(j.compute)) for j in inst.jobs)
    simple = Instance("oracle", jobs, inst.gpus)
    p = np.where(np.isfinite(simple.compute), simple.compute, 1e9)
    expected = matching_optimum(p)
    for method in ("cpsat", "milp-highs", "cpsat-pergpu"):
        assert_optimum(solve(simple, method, time_limit=5, params=params(method)), expected)


def test_one_job_alone_is_its_critical_path():
    inst = Instance(
        "one",
        (
            Job(
                "J",
                arrival=2,
                rounds=3,
                tasks_per_round=3,
                compute={"A": 2, "B": 3},
                sync={"A": 1, "B": 0},
            ),
        ),
        (GPU("a", "A"), GPU("b", "B")),
    )
    for method in ("cpsat", "milp-cbc"):
        assert_optimum(solve(inst, method, params=params(method)), critical_path_bound(inst))


def test_map_status_reads_sol_status_not_status():
    assert map_status(1) == (None, True)
    assert map_status(2) == (None, True)  # a time limit with an incumbent
    assert map_status(0) == (Status.UNKNOWN, False)  # a time limit without one
    assert map_status(-1) == (Status.INFEASIBLE, False)
    assert map_status(-2) == (Status.ERROR, False)


def test_cbc_bound_from_its_log():
    stopped = "Result - Stopped on time limit\n\nObjective value:  -1307\nLower bound: -1312.037\n"
    assert cbc_bound(stopped) == -1312.037
    optimal = "Result - Optimal solution found\n\nObjective value:                102.00000000\n"
    assert cbc_bound(optimal) == 102.0
    assert cbc_bound("Result - Stopped on time limit\nNo feasible solution found\n") is None


def test_time_limits_with_and_without_incumbent():
    """A time limit keeps the incumbent (feasible, with a bound) or, without hint, may leave
    no schedule at all (unknown) -- never a fake 'optimal'."""
    inst = load_instance(EXAMPLES / "example-2.instance.json")
    with_hint = solve(inst, "milp-highs", time_limit=0.5)
    assert with_hint.status in (Status.FEASIBLE, Status.UNKNOWN)
    if with_hint.status is Status.FEASIBLE:
        assert with_hint.bound < with_hint.objective
    cp = solve(inst, "cpsat", time_limit=0.01, params={"hint": "none", "lp_bound": "0"})
    assert cp.status in (Status.UNKNOWN, Status.FEASIBLE, Status.OPTIMAL)
    if cp.status is Status.UNKNOWN:
        assert cp.schedule is None and cp.bound is not None
    hinted = solve(inst, "cpsat", time_limit=0.01, params={"lp_bound": "0"})
    assert hinted.schedule is not None  # the ECT incumbent at worst


def test_cpsat_anytime_log_and_lp_bound():
    inst = load_instance(EXAMPLES / "example-2.instance.json")
    result = solve(inst, "cpsat", time_limit=0.3, params={"workers": "1"})
    log = result.extra["anytime"]
    assert log and all(b <= o + 1e-9 for _, o, b in log)
    assert [t for t, _, _ in log] == sorted(t for t, _, _ in log)
    if result.status is not Status.OPTIMAL:  # the LP ran; on a loaded machine it may not
        status = str(result.extra["lp_status"])  # finish in what 0.3 s leaves it
        assert result.extra["lp_bound"] is not None or "time" in status.lower(), status


def test_cpsat_bound_comes_first_and_the_run_repeats_on_a_work_budget():
    """A 20-job gang instance CP-SAT does not prove on 2 work-seconds: column-bound from the
    incumbent comes first, on a fifth of the work (it stops there, short of converging), its
    value is where CP-SAT's own bound starts, the search gets the rest of the work, and the
    whole run repeats exactly."""
    inst = load_instance(ROOT / "instances/exact/exact-jobs20-s0.json")
    inst = inst.with_mode("gang")
    runs = [solve(inst, "cpsat", params={"work": "2"}) for _ in range(2)]
    first = runs[0]
    assert first.extra["solver_status"] != "OPTIMAL"
    assert first.extra["lp_bound"] is not None and first.extra["lp_iterations"] > 0
    assert first.extra["lp_status"] == "work"
    assert first.extra["solver_bound"] >= first.extra["lp_bound"]  # CP-SAT started there
    assert first.bound == max(first.extra["solver_bound"], critical_path_bound(inst))
    assert first.bound <= 1864  # the best schedule known
    assert first.extra["work"] == pytest.approx(2.0, rel=0.1)
    assert (runs[1].objective, runs[1].bound) == (first.objective, first.bound)


@settings(max_examples=n_examples(12), deadline=None)
@given(inst=instances(max_jobs=4, max_gpus=3, max_rounds=2, max_k=2))
def test_cpsat_from_its_bound_proves_the_optima_it_proves_without(inst):
    """CP-SAT's objective starts at column-bound's value on an exact grid: no schedule is
    lost, so what it proves optimal is what it proves without the bound, and the bound
    stays at most that optimum (both modes, integer and 3-decimal data)."""
    plain = solve(inst, "cpsat", time_limit=10, params=NO_LP)
    bounded = solve(inst, "cpsat", time_limit=10)
    assert bounded.extra["lp_status"] in ("converged", "optimal", "at the critical path")
    if plain.status is Status.OPTIMAL:
        assert bounded.bound <= plain.objective + OPTIMAL_TOL * max(1.0, plain.objective)
        if bounded.status is Status.OPTIMAL:
            assert bounded.objective == pytest.approx(plain.objective, rel=OPTIMAL_TOL)


def test_cpsat_stopped_by_a_ctrl_c_in_its_bound_keeps_the_incumbent(monkeypatch):
    """A Ctrl-C while the bound runs (before CP-SAT) ends the run: the incumbent, the best
    bound so far, and CP-SAT not started."""
    from tests.test_column_bound import ctrl_c_in_pricing

    inst = load_instance(ROOT / "instances/exact/exact-jobs20-s0.json").with_mode("gang")
    ctrl_c_in_pricing(monkeypatch, inst, 2)  # during the third iteration
    result = solve(inst, "cpsat")
    assert result.extra["interrupted"] and result.extra["stopped"] == "interrupted"
    assert result.extra["lp_status"] == "interrupted" and "solver_status" not in result.extra
    assert result.status is Status.FEASIBLE and result.bound >= critical_path_bound(inst)


def test_cpsat_core_search_proves_the_same_optima():
    """The examples but example-2 in relaxed mode (about 12 s to prove; the slow checks
    prove it): optimum, or out of time with bound ≤ optimum ≤ objective."""
    for name, (relaxed, gang) in OPTIMA.items():
        inst = load_instance(EXAMPLES / f"{name}.instance.json")
        for mode, optimum in (("relaxed", relaxed), ("gang", gang)):
            if (name, mode) == ("example-2", "relaxed"):
                continue
            result = solve(inst, "cpsat", mode=mode, params={**NO_LP, "search": "core"})
            assert_optimum(result, optimum)
            assert result.extra["search"] == "core"


def test_cpsat_auto_search_is_core_on_a_coarse_grid_only():
    """Relaxed mode's core-based search climbs one objective step at a time: on a 1-ms grid
    it stayed at the ECT schedule of two identical jobs for a whole 10-s run (22.7755 against
    19.776), which the default search proves at once; the exact family's integer grid keeps
    it."""
    jobs = tuple(
        Job(f"j{i}", arrival=1.779, weight=0.5, rounds=2, compute={"T0": 5.999}) for i in range(2)
    )
    fine = Instance("identical", jobs, (GPU("g0", "T0"),), mode="relaxed")
    result = solve(fine, "cpsat", params={"work": 20})  # a work budget: the same run anywhere
    assert result.extra["search"] == "default"
    assert_optimum(result, 19.776)
    coarse = load_instance(ROOT / "instances" / "exact" / "exact-jobs10-s0.json")
    assert solve(coarse, "cpsat", mode="relaxed", params={"work": 1}).extra["search"] == "core"


def test_cpsat_hint_from_a_schedule_and_makespan_objective():
    inst = load_instance(EXAMPLES / "example-3.instance.json")
    first = solve(inst, "cpsat", params=NO_LP)
    assert_optimum(first, 83)
    again = solve(inst, "cpsat", hint=first.schedule, params=NO_LP)
    assert_optimum(again, 83)
    assert again.objective <= first.objective  # the hint is never lost
    makespan = solve(inst, "cpsat", params={"objective": "makespan"})
    assert makespan.extra["makespan_bound"] <= makespan.metrics["makespan"]
    with pytest.raises(InputError, match="objective must be"):
        solve(inst, "cpsat", params={"objective": "tardiness"})


def test_real_valued_data_use_a_millisecond_grid():
    inst = Instance(
        "real",
        (
            Job("J", rounds=2, tasks_per_round=2, compute={"A": 1.2345, "B": 2.5}),
            Job("K", arrival=0.5, compute={"A": 0.75}),
        ),
        (GPU("a", "A"), GPU("b", "B")),
    )
    assert default_time_unit(inst) == 0.001
    assert not scale(inst, 0.001).exact  # 1.2345 is not on the grid
    result = solve(inst, "cpsat", params=NO_LP)
    assert result.extra["time_unit"] == 0.001 and not result.extra["grid_exact"]
    assert check(inst, result.schedule).feasible  # times rounded up: still feasible
    assert result.bound == critical_path_bound(inst)  # no solver bound off the grid
    on_grid = solve(inst, "cpsat", params={**NO_LP, "time_unit": "0.00005"})
    assert on_grid.extra["grid_exact"]  # on an exact grid a finished search is a proof
    if on_grid.status is not Status.OPTIMAL:
        assert_out_of_time(on_grid)


def test_scale_down_is_a_lower_bound_and_refuses_coarse_grids():
    inst = Instance("x", (Job("J", compute={"A": 2.7}),), (GPU("a", "A"),))
    assert scale(inst, 1.0, "down").instance.compute[0, 0] == 2
    assert scale(inst, 1.0, "up").instance.compute[0, 0] == 3
    with pytest.raises(InputError, match="coarser than a compute time"):
        scale(inst, 5.0, "down")


def test_assign_gpus_colours_any_feasible_load():
    """Intervals with at most m overlapping always fit on m GPUs."""
    items = [
        (i, 0, s, e, d)
        for i, (s, e, d) in enumerate(
            [(0, 4, 1), (0, 2, 1), (2, 5, 1), (5, 7, 2), (7, 8, 1), (4, 5, 1)]
        )
    ]
    # at most 2 overlap at any time
    out = assign_gpus(items, [(7, 8)])
    for (a, _, sa, ea, _), (b, _, sb, eb, _) in itertools.combinations(items, 2):
        if sa < eb and sb < ea:
            assert not set(out[a]) & set(out[b])


def test_milp_export(tmp_path):
    inst = load_instance(EXAMPLES / "example-3.instance.json")
    for suffix in (".lp", ".mps"):
        path = tmp_path / f"model{suffix}"
        solve(inst, "milp-highs", params={"export": str(path)})
        assert path.stat().st_size > 0
    with pytest.raises(InputError, match=r"must end in .lp or .mps"):
        solve(inst, "milp-highs", params={"export": str(tmp_path / "model.txt")})


@pytest.mark.parametrize("method", ["milp-highs", "milp-cbc"])
def test_milp_lp_relaxation_is_a_valid_but_weak_bound(method):
    inst = load_instance(EXAMPLES / "example-1.instance.json")
    result = solve(inst, method, params={"relaxation": "lp"})
    lp = result.extra["lp_relaxation"]
    assert lp is not None and lp <= 206
    assert result.objective == solve(inst, "ect").objective
    assert result.bound == max(lp, critical_path_bound(inst))


@pytest.mark.parametrize(
    "method,param,match",
    [
        ("cpsat", {"workers": "two"}, "workers must be an integer"),
        ("cpsat", {"workers": "0"}, "workers must be >= 1"),
        ("cpsat", {"time_unit": "-1"}, "time_unit must be > 0"),
        ("cpsat", {"lp_bound": "on"}, "lp_bound must be '0' or '1'"),
        ("milp-highs", {"threads": "x"}, "threads must be an integer"),
        ("milp-cbc", {"relaxation": "qp"}, "relaxation must be 'none' or 'lp'"),
        ("lp-bound", {"time_unit": "abc"}, "time_unit must be a number"),
    ],
)
def test_bad_parameters_are_input_errors(method, param, match):
    inst = load_instance(EXAMPLES / "example-3.instance.json")
    with pytest.raises(InputError, match=match):
        solve(inst, method, params=param)


def test_a_small_weight_does_not_stretch_deadlines_past_the_horizon():
    """One job of weight 0.001 among five: its deadline from the incumbent grows as 1/w, but
    some optimal schedule (a semi-active one) completes every job by the horizon, so the
    time-indexed LP stays small (it had 5.7e6 non-zeros and timed out without a bound)."""
    jobs = tuple(
        Job(
            f"j{i}",
            arrival=float(i),
            weight=0.001 if i == 0 else 1.0,
            rounds=3,
            compute={"A": 3.0 + i, "B": 5.0 + i},
            sync={"A": 0.5, "B": 0.5},
        )
        for i in range(5)
    )
    inst = Instance("w", jobs, (GPU("g1", "A"), GPU("g2", "B")))
    ect = solve(inst, "ect")
    assert max(check(inst, ect.schedule).completion.values()) <= horizon(inst)
    assert (deadlines(inst, ect.objective) <= horizon(inst)).all()
    _, nonzeros = time_indexed_lp_size(inst, ect.objective, 1.0)
    assert nonzeros < 500_000


def _offset_instance(origin: float) -> Instance:
    jobs = tuple(
        Job(
            f"j{i}",
            arrival=origin + 100.0 * i,
            weight=1.0 + i,
            rounds=2,
            compute={"A": 1000.0 + 300 * i, "B": 1500.0 + 200 * i},
            sync={"A": 50.0, "B": 60.0},
        )
        for i in range(4)
    )
    return Instance("w", jobs, (GPU("g1", "A"), GPU("g2", "B")))


@pytest.mark.parametrize("method", ["milp-highs", "lp-bound"])
def test_bounds_at_a_distant_time_origin_bound_the_shifted_instance(method):
    """Arrivals at 1e14 s: the MILP works in times from the first arrival, the LP sizes its
    grid by the span from it; each bound, less Σ w × 1e14, stays below every schedule of the
    instance at time 0 (at 1e14 the MILP had reported a bound 51 above the optimum)."""
    near, far = _offset_instance(0.0), _offset_instance(1e14)
    shift = sum(job.weight for job in far.jobs) * 1e14
    ours, theirs = solve(far, method, time_limit=30), solve(near, method, time_limit=30)
    for result, other, offset in ((ours, theirs, -shift), (theirs, ours, shift)):
        assert result.bound + offset <= other.objective + ours.tolerance


def test_milp_without_an_incumbent_of_its_own_returns_the_ect_schedule(monkeypatch):
    """HiGHS stopped (time limit) before finding a solution: the ECT schedule, as on every
    other time-out, with the solver's bound."""
    import optsched.exact.milp as milp

    monkeypatch.setattr(milp, "map_status", lambda status: (Status.UNKNOWN, False))
    inst = _offset_instance(0.0)
    result = solve(inst, "milp-highs", time_limit=30)
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert result.objective == solve(inst, "ect").objective
