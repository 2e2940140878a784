"""Deterministic work budgets: an anytime method stopped by its ``work`` budget returns the
same result when the machine is loaded, and benchmark grids use work budgets by default
with the CPU time of every run recorded."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import pytest

from optsched import solve
from optsched.bench.grid import generate_set, load_grid
from optsched.bench.records import load_records
from optsched.bench.runner import WORK_WALL_FACTOR, plan, run_benchmark
from optsched.check import check
from optsched.errors import InputError
from optsched.generate import GeneratorSpec, generate
from optsched.options import Options, choice
from optsched.placement import place
from optsched.placement.check import check_placement
from optsched.placement.generate import PlacementSpec, generate_placement
from optsched.registry import get_method
from optsched.work import WorkMeter, takes_work_budget
from tests.conftest import ROOT

TINY_GRID = ROOT / "benchmarks" / "grids" / "tiny.json"


@contextmanager
def loaded() -> Iterator[None]:
    """Another Python thread spinning for the whole block: it takes about half of the GIL
    and of a core, so every wall-clock-limited step of the method gets less done."""
    stop = threading.Event()

    def spin() -> None:
        x = 0
        while not stop.is_set():
            for _ in range(10_000):
                x += 1

    worker = threading.Thread(target=spin, daemon=True)
    worker.start()
    try:
        yield
    finally:
        stop.set()
        worker.join()


def twice(run: Callable[[], Any]) -> tuple[Any, Any]:
    """``run()`` on a quiet process, then under load."""
    first = run()
    with loaded():
        second = run()
    return first, second


def scheduling_instance() -> Any:
    return generate(GeneratorSpec(jobs=30, gpus=8, gpu_types=2, hosts=2, rounds=(2, 6)), 3)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("priority-search", {"work": 0.3, "patience": 10**9}),
        ("task-search", {"work": 0.3, "patience": 10**9}),
        ("lagrangian-bound", {"work": 0.2}),
        ("column-bound", {"work": 0.2}),
        ("lns", {"work": 0.6, "step": 0.1}),
        ("cpsat", {"work": 0.5, "lp_bound": 0}),
    ],
)
def test_a_work_budget_repeats_exactly_under_load(method, params):
    inst = scheduling_instance()
    mode = "gang" if method == "lns" else "relaxed"

    def run():
        return solve(inst, method, mode=mode, params=params, seed=4)

    first, second = twice(run)
    assert first.extra["stopped"] == "work"  # the budget, not steps or patience, ended it
    for result in (first, second):
        assert check(inst.with_mode(mode), result.schedule).feasible
        assert result.extra["work"] >= params["work"] * 0.99
    assert second.objective == first.objective and second.bound == first.bound
    assert second.schedule.tasks == first.schedule.tasks
    assert second.extra["work"] == first.extra["work"]


def test_hare_relaxation_under_a_work_budget_repeats_exactly():
    inst = generate(GeneratorSpec(jobs=8, gpus=6, gpu_types=2, hosts=2, rounds=(2, 4)), 1)
    first, second = twice(
        lambda: solve(inst, "hare", params={"step1": "exact", "work": 0.3}, seed=2)
    )
    assert first.extra["relaxation"]["solver_status"] in ("OPTIMAL", "FEASIBLE")
    assert second.schedule.tasks == first.schedule.tasks
    assert second.extra["relaxation"]["work"] == first.extra["relaxation"]["work"]


@pytest.mark.parametrize("method", ["gga", "cpsat"])
def test_placement_under_a_work_budget_repeats_exactly(method):
    spec = PlacementSpec(
        jobs_per_host=0.5, hosts=12, gpus_per_host=2, gpu_type="T4", gpu_memory=16384,
        cpus=48, memory=190464, hosts_per_rack=4, racks_per_domain=2,
    )  # fmt: skip
    inst = generate_placement(spec, 0)
    params: dict[str, Any] = {"work": 0.2 if method == "gga" else 1.0}
    if method == "gga":
        params["patience"] = 10**9
    first, second = twice(lambda: place(inst, method, params=params, seed=1))
    if method == "gga":
        assert first.extra["stopped"] == "work"
    assert check_placement(inst, first.placement).feasible
    assert second.objective == first.objective
    assert second.placement == first.placement


def test_the_work_meter_counts_against_its_limit():
    meter = WorkMeter(2.0, per_second=10.0)
    meter.spend(15)
    assert meter.spent == 1.5 and meter.left() == 0.5 and not meter.exhausted
    meter.spend(5)
    assert meter.exhausted and meter.left() == 0.0
    assert WorkMeter(None).left() is None and not WorkMeter(None).exhausted


def test_only_a_marked_work_option_is_a_work_budget():
    @dataclass(frozen=True)
    class Other(Options):
        work: str = choice("what a job's work is (default fastest)", ("fastest", "mean"))

    assert not takes_work_budget(Other)
    for method in (
        "cpsat",
        "lns",
        "priority-search",
        "task-search",
        "lagrangian-bound",
        "column-bound",
    ):
        assert takes_work_budget(get_method(method).options)
    assert takes_work_budget(get_method("gga", "place").options)
    assert not takes_work_budget(get_method("milp-highs").options)


def test_a_work_budget_must_be_positive():
    inst = scheduling_instance()
    with pytest.raises(InputError, match="work"):
        solve(inst, "priority-search", params={"work": 0})


# -- benchmark grids --------------------------------------------------------------------------


@pytest.fixture
def tiny_set(tmp_path):
    return generate_set(load_grid(TINY_GRID), tmp_path / "set")


def test_grids_run_anytime_methods_on_work_budgets_by_default(tiny_set):
    runs = plan(tiny_set, ["priority-search", "ect", "lagrangian-bound"], time_limit=2)
    by_method = {run.method: run for run in runs}
    search = by_method["priority-search"]
    assert search.params["work"] == "2" and search.time_limit == WORK_WALL_FACTOR * 2
    assert "work" not in by_method["ect"].params and by_method["ect"].time_limit == 2
    # no time limit given: the method's default time limit is its work budget
    default = plan(tiny_set, ["lns"])[0]
    assert default.params["work"] == "60" and default.time_limit == WORK_WALL_FACTOR * 60
    # an explicit work budget is kept; wall keeps the time limit a wall-clock limit
    given = plan(tiny_set, ["task-search"], time_limit=5, params={"work": "1.5"})[0]
    assert given.params["work"] == "1.5" and given.time_limit == WORK_WALL_FACTOR * 1.5
    wall = plan(tiny_set, ["priority-search"], time_limit=2, budget="wall")[0]
    assert "work" not in wall.params and wall.time_limit == 2
    with pytest.raises(InputError, match="--budget"):
        plan(tiny_set, ["ect"], budget="cpu")


def test_a_grid_on_work_budgets_repeats_under_load_and_records_cpu_time(tiny_set, tmp_path):
    runs = plan(
        tiny_set,
        ["priority-search", "task-search"],
        time_limit=0.3,
        params={"patience": "1000000000"},
    )
    # a wider wall-clock net than the default 4x: the machine running the tests may be
    # loaded far beyond the spinning thread's share
    runs = [replace(run, time_limit=120.0) for run in runs]

    files = iter(["quiet.jsonl", "busy.jsonl"])

    def records() -> list[dict[str, Any]]:
        path = tmp_path / next(files)
        run_benchmark(runs, path, inline=True, progress=None)
        return load_records(path)

    quiet, busy = twice(records)
    assert [r["objective"] for r in busy] == [r["objective"] for r in quiet]
    assert [r["extra"]["steps"] for r in busy] == [r["extra"]["steps"] for r in quiet]
    assert all(r["extra"]["stopped"] in ("work", "one job") for r in quiet + busy)
    for record in quiet + busy:
        assert record["status"] in ("feasible", "optimal") and record["cpu_s"] >= 0
        assert record["params"]["work"] == "0.3"
