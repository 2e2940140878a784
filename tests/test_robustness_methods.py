"""Robustness of the methods' inputs and limits: placement heuristics under --time-limit,
integer container fields, interval_ratio, time limits, hints of other instances, the adaptive
LP grid's message and the interval grid on denormal times."""

from __future__ import annotations

import dataclasses
import math
import time
from types import SimpleNamespace

import numpy as np
import pytest

from optsched.budget import Budget, OutOfTime
from optsched.errors import InputError
from optsched.exact.bounds import MAX_INTERVALS, _intervals
from optsched.generate import GeneratorSpec, generate
from optsched.heuristics.hare import HareLpOptions
from optsched.placement.generate import PlacementSpec, generate_placement
from optsched.placement.model import (
    placement_instance_from_dict,
    placement_instance_to_dict,
)
from optsched.placement.run import place
from optsched.result import Status
from optsched.schedule import Schedule, Task
from optsched.solve import solve


@pytest.fixture(scope="module")
def big_placement():
    return generate_placement(PlacementSpec(jobs=400, hosts=400), 0)  # ~0.85 s of best-fit


@pytest.fixture(scope="module")
def small_placement():
    return generate_placement(PlacementSpec(jobs=4, hosts=5), 0)


@pytest.fixture(scope="module")
def instance():
    return generate(GeneratorSpec(jobs=5, gpus=4), 0)


# -- 1. placement heuristics honour --time-limit --------------------------------------------


@pytest.mark.parametrize("method", ["bestfit", "gga"])
def test_placement_heuristics_stop_at_the_time_limit(big_placement, method, wall_clock):
    started = time.perf_counter()
    result = place(big_placement, method, time_limit=0.3)
    placement = result.placement
    wall_clock.below(time.perf_counter() - started, 1.0)
    assert result.status is Status.UNKNOWN and placement is None
    assert result.extra["stopped"] == "time limit"


def test_gga_budget_covers_its_bestfit_seed(big_placement, wall_clock):
    from optsched.placement.cost import CostModel
    from optsched.placement.gga import run_gga

    started = time.perf_counter()
    genome, stats = run_gga(big_placement, CostModel(), time_limit=0.2)
    wall_clock.below(time.perf_counter() - started, 0.8)
    assert genome is None and stats["stopped"] == "time limit"


def test_placement_heuristics_unchanged_without_a_limit(small_placement):
    result = place(small_placement, "bestfit")
    placement = result.placement
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL) and placement is not None
    limited = place(small_placement, "bestfit", time_limit=60)
    again = limited.placement
    assert limited.objective == result.objective and again == placement


# -- 2. integer container fields -----------------------------------------------------------


@pytest.mark.parametrize("value", [1.0, 2.0, -0.0, True, 1.5, -1, "1"])
def test_container_gpus_must_be_an_integer(small_placement, value):
    data = placement_instance_to_dict(small_placement)
    data["jobs"][0]["containers"][0]["gpus"] = value
    job, cont = data["jobs"][0]["id"], data["jobs"][0]["containers"][0]["id"]
    with pytest.raises(InputError, match=f"job '{job}': container '{cont}': gpus") as err:
        placement_instance_from_dict(data)
    assert "\n" not in str(err.value)


def test_container_gpus_integer_accepted(small_placement):
    data = placement_instance_to_dict(small_placement)
    data["jobs"][0]["containers"][0]["gpus"] = 0
    placement_instance_from_dict(data)


# -- 3. interval_ratio bounded ---------------------------------------------------------------


@pytest.mark.parametrize("ratio", ["1", "100.5", "1000"])
def test_interval_ratio_out_of_range(ratio):
    with pytest.raises(InputError, match="interval_ratio"):
        HareLpOptions.parse({"interval_ratio": ratio})


def test_interval_ratio_in_range():
    assert HareLpOptions.parse({"interval_ratio": "100"}).interval_ratio == 100.0
    assert HareLpOptions.parse({}).interval_ratio == 1.2


# -- 4. time limits ------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [math.inf, math.nan, 0, -5.0, 1e16, True])
def test_solve_refuses_bad_time_limits(instance, limit):
    with pytest.raises(InputError, match="--time-limit"):
        solve(instance, "ect", time_limit=limit)


@pytest.mark.parametrize("limit", [math.inf, math.nan, 0, -5.0])
def test_place_refuses_bad_time_limits(small_placement, limit):
    with pytest.raises(InputError, match="--time-limit"):
        place(small_placement, "gga", time_limit=limit)


# -- 5. hints ------------------------------------------------------------------------------


def _ect(inst):
    result = solve(inst, "ect")
    assert result.schedule is not None
    return result.schedule


def test_hint_of_another_instance_is_refused(instance):
    hint = Schedule("someone-else", _ect(instance).tasks)
    with pytest.raises(InputError, match=r"--hint.*someone-else"):
        solve(instance, "ect", hint=hint)


def test_hint_with_unknown_job_or_gpu_is_refused(instance):
    tasks = list(_ect(instance).tasks)
    t = tasks[0]
    bad_job = [Task("nojob", t.round, t.task, t.gpu, t.start), *tasks[1:]]
    with pytest.raises(InputError, match="--hint: unknown job 'nojob'"):
        solve(instance, "ect", hint=Schedule(instance.name, bad_job))
    bad_gpu = [Task(t.job, t.round, t.task, "nogpu", t.start), *tasks[1:]]
    with pytest.raises(InputError, match="--hint: unknown GPU 'nogpu'"):
        solve(instance, "ect", hint=Schedule(instance.name, bad_gpu))


def test_own_hint_is_accepted(instance):
    solve(instance, "ect", hint=_ect(instance))


def test_a_hint_of_the_other_mode_is_named_on_stderr(instance, tmp_path):
    """A relaxed-mode schedule given as the hint of a gang-mode run is read in gang mode
    (where its rounds' tasks need not start together it is infeasible and not used): the
    command says so instead of dropping it without a word."""
    import contextlib
    import io

    from optsched.cli import main
    from optsched.io import save_instance, save_schedule

    relaxed = instance.with_mode("relaxed")
    save_instance(tmp_path / "inst.json", relaxed)
    save_schedule(tmp_path / "hint.json", Schedule(relaxed.name, _ect(relaxed).tasks, "relaxed"))
    args = ["solve", str(tmp_path / "inst.json"), "--method", "ect"]
    for mode, warned in (("gang", True), ("relaxed", False)):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main([*args, "--mode", mode, "--hint", str(tmp_path / "hint.json"), "--quiet"])
        assert code == 0
        assert ("warning: --hint is a relaxed-mode schedule" in err.getvalue()) == warned
    # an infeasible hint of the run's mode (every task at time 0) is named too
    late = [dataclasses.replace(t, start=0.0) for t in _ect(relaxed).tasks]
    save_schedule(tmp_path / "hint.json", Schedule(relaxed.name, late, "relaxed"))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([*args, "--hint", str(tmp_path / "hint.json"), "--quiet"])
    assert code == 0 and "warning: --hint is infeasible for this instance in relaxed mode (" in (
        err.getvalue()
    )
    # another instance's schedule: one error, no warning that it would not be used
    save_schedule(tmp_path / "hint.json", Schedule("other", late, "relaxed"))
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = main([*args, "--hint", str(tmp_path / "hint.json"), "--quiet"])
    assert code == 2 and "warning" not in err.getvalue()
    assert err.getvalue().count("\n") == 1 and "not " + repr(relaxed.name) in err.getvalue()


# -- 6. lp-bound's adaptive grid ------------------------------------------------------------


def test_lp_bound_adaptive_grid_message_names_no_unset_parameter():
    from optsched.generate import HareSpec, generate_hare

    inst = generate_hare(HareSpec(), 0)
    with pytest.raises(InputError) as err:
        solve(inst, "lp-bound")
    message = str(err.value)
    assert "adaptive grid could not be made to fit" in message
    assert "choose a coarser time_unit" not in message


# -- 7. interval grid on denormal times ------------------------------------------------------


def _stub(compute: float, sync: float, arrivals: list[float]) -> SimpleNamespace:
    n = len(arrivals)
    jobs = [SimpleNamespace(n_tasks=2, arrival=a) for a in arrivals]
    return SimpleNamespace(jobs=jobs, compute=np.full((n, 2), compute), sync=np.full((n, 2), sync))


@pytest.mark.parametrize("arrivals", [[5e-324, 5e-324], [5e-324, 1e6], [0.0, 1e15]])
def test_intervals_progress_on_denormal_times(arrivals):
    tau = _intervals(_stub(5e-324, 5e-324, arrivals), 1.2)  # type: ignore[arg-type]
    assert len(tau) < 10_000
    assert np.all(np.diff(tau) > 0)
    horizon = max(arrivals) + 2 * 2 * 5e-324
    assert tau[-1] >= horizon


def test_intervals_normal_grid_is_geometric():
    tau = _intervals(_stub(1.0, 0.0, [0.0, 10.0]), 2.0)  # type: ignore[arg-type]
    assert list(tau[:5]) == [0.0, 1.0, 2.0, 4.0, 8.0] and tau[-1] >= 14.0
    assert len(tau) < MAX_INTERVALS


def test_intervals_check_the_budget():
    budget = Budget(1e-9)
    time.sleep(0.001)
    with pytest.raises(OutOfTime):
        _intervals(_stub(1e-9, 0.0, [0.0, 1e3]), 1.0001, budget)  # type: ignore[arg-type]
