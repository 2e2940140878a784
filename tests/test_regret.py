"""Certified regret of online runs (optsched.regret): every bound level is at most the
proved optimum, the levels only add bounds, and simulate reports and prints them."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, solve
from optsched.cli import main
from optsched.critical_path import critical_path_bound
from optsched.ect import completions
from optsched.errors import InputError
from optsched.exact.capacity import capacity_bound, open_weight_edges
from optsched.io import load_instance, save_instance
from optsched.online.compare import parse_policy
from optsched.online.run import simulate
from optsched.regret import (
    CAPACITY_INTERVALS,
    long_job_parts,
    parts_bound,
    regret_bound,
    weighted_arrivals,
)
from optsched.result import OPTIMAL_TOL
from optsched.testing import instances
from optsched.traces import Trace, TraceJob, TraceMapping, parse_cluster, trace_instance
from tests.conftest import ROOT, n_examples
from tests.test_lagrangian_bound import _pair

TOY = ROOT / "optsched" / "data" / "instances" / "hare-toy.instance.json"


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=4, integer=True))
def test_every_level_is_at_most_the_optimum(instance):
    """critical path ≤ fluid ≤ capacity (each level adds bounds) ≤ OPT ≤ CP-SAT's objective,
    with the capacity LP placed by an ECT schedule's objective and makespan (and its open
    weight) or by the horizon."""
    optimum = solve(instance, "cpsat", time_limit=5)
    start = solve(instance, "ect")
    assert regret_bound(instance, "none") is None
    found = [regret_bound(instance, level) for level in ("critical-path", "fluid")]
    found += [
        regret_bound(
            instance,
            "capacity",
            objective=start.objective,
            makespan=start.metrics["makespan"],
        ),
        regret_bound(instance, "capacity"),
        regret_bound(
            instance,
            "lagrangian",
            objective=start.objective,
            makespan=start.metrics["makespan"],
        ),
        regret_bound(  # the schedule's rounds as the master's first paths
            instance,
            "lagrangian",
            objective=start.objective,
            makespan=start.metrics["makespan"],
            schedule=start.schedule,
        ),
        regret_bound(  # the LP's grid placed by the schedule's open weight
            instance,
            "capacity",
            objective=start.objective,
            makespan=start.metrics["makespan"],
            schedule=start.schedule,
        ),
    ]
    values = [f.value for f in found if f is not None]
    assert values[0] <= values[1] <= min(values[2:])
    # the last LP is the one on the schedule's open-weight grid, and says so
    assert found[6] is not None and found[6].parts["capacity_grid"] == "open weight, 100 intervals"
    assert found[2] is not None and found[2].parts["capacity_grid"] == "uniform, 100 intervals"
    done = completions(instance, start.schedule)
    edges = open_weight_edges(instance, done, start.metrics["makespan"], CAPACITY_INTERVALS)
    assert found[6] is not None and found[6].parts["bound_capacity"] == (
        capacity_bound(
            instance, start.objective, start.metrics["makespan"], 100, edges=edges
        ).bound
    )
    # the same fluid bound and LP (on the same grid), and the Lagrangian bound
    for lagrangian, lp in ((found[4], found[2]), (found[5], found[6])):
        assert lagrangian is not None and lp is not None
        assert lagrangian.value >= max(values[1], lp.value) * (1 - 1e-12)
        assert "bound_fluid" in lagrangian.parts
    assert max(values) <= optimum.objective * (1 + OPTIMAL_TOL)
    for f in found:
        assert f is not None and f.value == max(
            v for k, v in f.parts.items() if k.startswith("bound_")
        )


def test_the_lagrangian_level_needs_a_checked_schedule_and_says_how_it_stopped():
    inst = _toy()
    found = simulate(inst, "hlas", bound="lagrangian")
    assert found.extra["lagrangian_status"] in ("converged", "iterations")
    assert "bound_lagrangian" in found.extra and found.extra["capacity_status"] == "optimal"
    assert found.extra["bound_seconds"] >= 0  # the bounds' time; the runtime is the run's
    streamed = simulate(inst, "hlas", bound="lagrangian", record=False)
    assert streamed.extra["lagrangian_status"] == "no checked schedule"
    assert "bound_lagrangian" not in streamed.extra


def test_a_programme_too_large_says_its_grid_and_size(monkeypatch):
    import optsched.exact.lagrangian as lagrangian

    monkeypatch.setattr(lagrangian, "MAX_CELLS", 1)
    inst = _toy()
    start = solve(inst, "ect")
    found = regret_bound(inst, "lagrangian", objective=start.objective)
    assert found is not None and "bound_lagrangian" not in found.parts
    status = str(found.parts["lagrangian_status"])
    assert status.startswith("too large (time_unit ") and "more than 1e+00)" in status


def test_a_ctrl_c_in_the_lp_stops_the_lagrangian_level(monkeypatch):
    import optsched.exact.capacity as capacity
    import optsched.exact.columns as columns

    monkeypatch.setattr(
        capacity,
        "capacity_bound",
        lambda *args, **kwargs: capacity.CapacityLP(None, "interrupted", 1, 1),
    )

    def never(*args, **kwargs):
        raise AssertionError("the Lagrangian bound ran after a Ctrl-C")

    monkeypatch.setattr(columns, "column_bound", never)
    inst = _toy()
    start = solve(inst, "ect")
    found = regret_bound(inst, "lagrangian", objective=start.objective)
    assert found is not None and found.parts["lagrangian_status"] == "interrupted"
    assert found.source in ("critical-path", "fluid")


def test_a_gang_master_too_long_for_the_conflict_cuts_bounds_without_them(monkeypatch):
    """In gang mode the Lagrangian level prices the conflict cuts where the master can keep
    them per step, and where it cannot, bounds without them (a master on blocks of steps)."""
    import optsched.exact.columns as columns

    inst = _toy().with_mode("gang")
    start = solve(inst, "ect")
    given = {"objective": start.objective, "makespan": start.metrics["makespan"]}
    asked = []
    bound = columns.column_bound

    def recorded(*args, **kwargs):
        asked.append(kwargs["cuts"])
        return bound(*args, **kwargs)

    monkeypatch.setattr(columns, "column_bound", recorded)
    regret_bound(inst, "lagrangian", time_limit=5, **given)
    assert asked == [True]
    monkeypatch.setattr(columns, "MAX_MASTER_STEPS", 1)
    found = regret_bound(inst, "lagrangian", time_limit=5, **given)
    assert asked == [True, True, False]
    assert found is not None and "bound_lagrangian" in found.parts


def test_an_unknown_level_is_bad_input():
    with pytest.raises(InputError, match=r"unknown regret bound .lp.*capacity"):
        simulate(_toy(), "hlas", bound="lp")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"objective": float("nan")}, "objective must be a schedule's"),
        ({"objective": -5.0}, "objective must be a schedule's"),
        ({"objective": 1.0}, r"at least the instance's critical-path bound"),
        ({"objective": True}, "objective must be a schedule's"),
        ({"makespan": -1.0}, "makespan must be a schedule's"),
        ({"makespan": float("inf")}, r"at least the instance's longest critical path"),
    ],
)
def test_an_objective_or_makespan_no_schedule_has_is_bad_input(given, message):
    with pytest.raises(InputError, match=message):
        regret_bound(_toy(), "capacity", **given)
    run = simulate(_toy(), "hlas")
    assert regret_bound(_toy(), "capacity", objective=run.objective) is not None


def test_an_objective_below_what_the_lagrangian_bound_certifies_is_bad_input():
    """Two gang rounds of 3 tasks on 4 GPUs (optimum 9, critical path 6): an objective of 7
    passes the critical-path check, but the Lagrangian level certifies more than it."""
    inst = _pair()
    with pytest.raises(InputError, match=r"certifies more than 7\.0"):
        regret_bound(inst, "lagrangian", objective=7.0, makespan=3.0, time_limit=10)
    found = regret_bound(inst, "lagrangian", objective=9.0, makespan=3.0, time_limit=10)
    assert found is not None and found.value == 9.0


def _toy():
    return load_instance(TOY)


def test_simulate_reports_the_capacity_level_and_the_jct_regret():
    inst = _toy()
    fluid = simulate(inst, "hlas")
    capacity = simulate(inst, "hlas", bound="capacity")
    assert "bound_capacity" not in fluid.extra and capacity.extra["capacity_status"] == "optimal"
    assert capacity.extra["regret_bound"] >= fluid.extra["regret_bound"]
    assert capacity.regret is not None and 1 - 1e-9 <= capacity.regret <= fluid.regret
    least = capacity.extra["regret_bound"] - weighted_arrivals(inst)
    assert capacity.regret_jct == pytest.approx(capacity.metrics["total_weighted_jct"] / least)
    none = simulate(inst, "hlas", bound="none")
    assert none.regret is None and "regret_bound" not in none.extra


def cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def test_the_cli_prints_the_regret_and_its_source():
    code, out, _ = cli("simulate", TOY, "--policy", "hlas", "--bound", "capacity")
    assert code == 0 and "regret     ≤ " in out and "weighted JCT ≤ " in out
    assert "the class-capacity LP" in out or "the fluid work bound" in out
    code, out, _ = cli("simulate", TOY, "--policy", "hlas", "--bound", "none", "--json")
    assert code == 0 and "regret" not in json.loads(out)
    code, _, err = cli("simulate", TOY, "--policy", "hlas", "--bound", "lp")
    assert code == 2 and "--bound" in err
    code, out, _ = cli("simulate", TOY, "--policy", "hlas", "--bound", "lagrangian")
    assert code == 0 and "regret     ≤ " in out
    code, out, _ = cli("simulate", TOY, "--policy", "hlas", "--bound", "lagrangian", "--no-record")
    assert code == 0 and "the Lagrangian bound gave none: no checked schedule" in out
    code, out, _ = cli(
        "simulate", TOY, "--policy", "hlas", "--bound", "capacity", "--bound-time-limit", "1e-9"
    )
    assert code == 0 and "the class-capacity LP gave no bound: time limit" in out
    for bad in ("-5", "0", "nan"):
        code, _, err = cli("simulate", TOY, "--policy", "hlas", "--bound-time-limit", bad)
        assert code == 2 and "--bound-time-limit" in err, err


def test_the_cli_says_when_the_bound_runs_and_why_a_run_has_none():
    code, _, err = cli("simulate", TOY, "--policy", "hlas", "--bound", "lagrangian", "--progress")
    lines = [line for line in err.splitlines() if line.startswith("bound: ")]
    assert code == 0 and lines[0] == (
        "bound: class-capacity LP, then the Lagrangian bound, relaxed mode ..."
    )
    assert (
        lines[-1].startswith("bound: relaxed mode: ") and "; LP optimal; Lagrangian " in lines[-1]
    )
    code, _, err = cli("simulate", TOY, "--policy", "hlas", "--bound", "fluid", "--progress")
    assert code == 0 and "bound: " not in err  # the fluid level takes no time to speak of
    demo = ROOT / "optsched" / "data" / "instances" / "liquid-demo.instance.json"
    code, out, _ = cli("simulate", demo, "--policy", "liquid", "--bound", "lagrangian")
    assert code == 0 and "regret     none: the bounds do not model a cluster policy's" in out
    code, out, _ = cli("simulate", demo, "--policy", "liquid", "--bound", "none")
    assert code == 0 and "regret" not in out


@st.composite
def traces(draw: st.DrawFn) -> tuple[Trace, str, str]:
    """A small random trace (arrivals, widths 1–3 GPUs, durations, weights), a cluster of
    1–3 GPUs of each of K80, P100 and V100 (so every job fits), and a mode."""
    n = draw(st.integers(1, 6))
    jobs = tuple(
        TraceJob(
            f"t{k}",
            arrival=draw(st.floats(0, 20_000).map(lambda x: round(x, 1))),
            gpus=draw(st.sampled_from([1, 1, 2, 3])),
            weight=draw(st.sampled_from([1.0, 2.0, 3.0])),
            duration=draw(st.floats(100, 20_000).map(lambda x: round(x, 1))),
        )
        for k in range(n)
    )
    counts = [draw(st.integers(1, 3)) for _ in range(3)]
    cluster = ",".join(f"{t}:{c}" for t, c in zip(("K80", "P100", "V100"), counts, strict=True))
    return Trace("random", jobs), cluster, draw(st.sampled_from(["relaxed", "gang"]))


@settings(deadline=None, max_examples=n_examples(40))
@given(
    traces(),
    st.sampled_from(["fifo-perf", "srtf", "srtf:placement=paced", "tiresias", "hlas", "allox"]),
)
def test_every_bound_is_at_most_every_policy_on_random_traces(drawn, policy):
    """Random traces: the regret over the lagrangian level (the capacity LP, then the
    Lagrangian bound from its prices and the run's checked objective) is at least 1 on the
    objective and on the JCT, and the Lagrangian bound from zero prices is at most the
    policy's checked objective."""
    trace, cluster, mode = drawn
    try:
        inst = trace_instance(
            trace, parse_cluster(cluster), TraceMapping(quantum=3600.0), mode=mode
        )
        name, params = parse_policy(policy)
        result = simulate(inst, name, params=params, bound="lagrangian")
    except InputError:  # a gang job wider than its workload's types here; a policy's mode
        assume(False)
    assert result.regret is not None and result.regret >= 1 - 1e-9
    if result.regret_jct is not None:
        assert result.regret_jct >= 1 - 1e-9
    lagrangian = solve(inst, "lagrangian-bound", params={"iterations": 30}).bound
    assert lagrangian <= result.objective * (1 + OPTIMAL_TOL)


def test_a_bound_above_the_objective_is_rounding_within_its_tolerance_and_a_bug_beyond(
    monkeypatch,
):
    """The regret is at least 1: a bound above the run's objective by no more than the
    objective's tolerance (sums in another order) counts as equal to it; further above, the
    bound is wrong and the run says so rather than report a regret below 1."""
    import optsched.online.run as run
    from optsched.errors import OptschedError
    from optsched.regret import RegretBound

    inst = _toy()
    objective = simulate(inst, "hlas").objective
    for excess, fails in ((1e-15, False), (1e-3, True)):
        value = objective * (1 + excess)
        monkeypatch.setattr(
            run, "regret_bound", lambda *a, v=value, **k: RegretBound(v, "critical-path", {})
        )
        if fails:
            with pytest.raises(OptschedError, match="exceeds the run's objective"):
                simulate(inst, "hlas")
        else:
            assert simulate(inst, "hlas").regret == 1.0


@settings(deadline=None, max_examples=n_examples(40))
@given(instances(max_jobs=5, integer=True), st.data())
def test_the_bound_on_parts_lies_between_the_critical_path_and_the_optimum(instance, data):
    """Any partition of any instance (both modes): each part's LP alone plus the critical
    paths of the jobs in no part is at least the critical-path bound and at most the
    objective of CP-SAT's schedule (so at most the optimum)."""
    labels = data.draw(
        st.lists(st.integers(0, 2), min_size=instance.n_jobs, max_size=instance.n_jobs)
    )
    parts = [[j for j, label in enumerate(labels) if label == k] for k in (1, 2)]
    found = parts_bound(instance, [p for p in parts if p], intervals=20, time_limit=None)
    optimum = solve(instance, "cpsat", time_limit=5)
    assert found.value >= critical_path_bound(instance) * (1 - 1e-9)
    assert found.value <= optimum.objective * (1 + OPTIMAL_TOL)


def test_jobs_that_contend_gain_only_in_one_part():
    """Two 4-round jobs on one GPU: the optimum is 4 + 8 = 12 against critical paths of
    4 + 4. In one part the LP sees the queue; in two parts, or in none, only the paths
    count. Long-job parts are cut in arrival order; bad parts are refused."""
    jobs = tuple(
        Job(
            id=f"j{k}", arrival=0.0, weight=1.0, rounds=4, tasks_per_round=1, compute={"V100": 1.0}
        )
        for k in range(2)
    )
    inst = Instance("queue", jobs, (GPU("g", "V100"),))
    together = parts_bound(inst, [[0, 1]], intervals=20)
    assert together.statuses == ("optimal",)
    assert 8 < together.value <= 12 * (1 + OPTIMAL_TOL)
    assert together.gains[0] == pytest.approx(together.value - 8)
    assert parts_bound(inst, [[0], [1]], intervals=20).value == pytest.approx(8)
    assert parts_bound(inst, []).value == pytest.approx(8)
    assert long_job_parts(inst, 3.5, 1) == [[0], [1]]
    assert long_job_parts(inst, 4.0, 5) == []
    with pytest.raises(InputError, match="in two parts"):
        parts_bound(inst, [[0], [0, 1]])
    with pytest.raises(InputError, match="out of range"):
        parts_bound(inst, [[2]])


def test_parts_refuse_what_they_cannot_bound_and_stop_at_ctrl_c(monkeypatch):
    """Cluster instances (GPU sharing can make jobs faster together than alone) and
    malformed parts are refused; a Ctrl-C in a part's LP stops with the parts solved."""
    import optsched.exact.capacity as capacity

    cluster = load_instance(ROOT / "optsched" / "data" / "instances" / "liquid-demo.instance.json")
    assert cluster.needs_cluster_model
    for call in (
        lambda: parts_bound(cluster, [[0]]),
        lambda: long_job_parts(cluster, 0.0, 1),
        lambda: regret_bound(cluster, "critical-path"),
    ):
        with pytest.raises(InputError, match="basic model"):
            call()
    jobs = tuple(
        Job(
            id=f"j{k}", arrival=0.0, weight=1.0, rounds=4, tasks_per_round=1, compute={"V100": 1.0}
        )
        for k in range(3)
    )
    inst = Instance("queue", jobs, (GPU("g", "V100"),))
    for parts, kwargs, message in (
        ([[0], []], {}, "part 1 is empty"),
        ([[0.0]], {}, "integers"),
        ([[0]], {"intervals": 0}, "intervals must be"),
        ([[0]], {"time_limit": float("nan")}, "time limit must be"),
    ):
        with pytest.raises(InputError, match=message):
            parts_bound(inst, parts, **kwargs)
    with pytest.raises(InputError, match="longer_than"):
        long_job_parts(inst, float("nan"), 1)
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        return capacity.CapacityLP(None, "interrupted", 0, 0)

    monkeypatch.setattr(capacity, "capacity_bound", interrupted)
    stopped = parts_bound(inst, [[0, 1], [2]])
    assert stopped.interrupted and stopped.statuses == ("interrupted",) and len(calls) == 1
    assert stopped.value == pytest.approx(12)  # the three critical paths


def _queue_with_long_jobs() -> Instance:
    """Eight one-second jobs and two four-round jobs on one GPU, all at time 0."""
    jobs = tuple(
        Job(
            id=f"j{k}",
            arrival=0.0,
            weight=1.0,
            rounds=4 if k >= 8 else 1,
            tasks_per_round=1,
            compute={"V100": 1.0},
        )
        for k in range(10)
    )
    return Instance("long-queue", jobs, (GPU("g", "V100"),))


def _never_called(*args: object, **kwargs: object) -> None:
    raise AssertionError("called")


def test_a_trace_too_large_for_one_lp_is_bounded_on_parts(monkeypatch, tmp_path):
    """Where the whole capacity LP is too large, the capacity level solves it on parts of
    the longest jobs: above the critical path where those jobs contend, at most the
    optimum, named in the result and in simulate's report (where the fluid bound, which
    sees this one-GPU queue whole, is taken out to let the parts be the best)."""
    import optsched.exact.capacity as capacity
    import optsched.exact.fluid as fluid
    import optsched.regret as regret

    inst = _queue_with_long_jobs()
    whole, _ = capacity.capacity_lp_size(inst, regret.CAPACITY_INTERVALS)
    monkeypatch.setattr(capacity, "lp_too_large", lambda variables, nonzeros: variables >= whole)
    monkeypatch.setattr(regret, "PARTS_LONGEST_SHARE", 0.2)  # the two four-round jobs
    monkeypatch.setattr(capacity, "open_weight_edges", _never_called)  # no grid for no LP
    found = regret_bound(inst, "capacity", schedule=solve(inst, "ect").schedule)
    assert found is not None
    assert found.parts["capacity_status"] == "too large" and "capacity_grid" not in found.parts
    assert found.parts["capacity_parts_status"] == "1 of 1 parts solved"
    on_parts = found.parts["bound_capacity_parts"]
    assert isinstance(on_parts, float) and on_parts > critical_path_bound(inst) + 1
    assert on_parts <= solve(inst, "cpsat", time_limit=5).objective * (1 + OPTIMAL_TOL)
    monkeypatch.setattr(fluid, "fluid_bound", lambda *a, **k: fluid.FluidBound(0.0, (), 0.0, 1))
    assert regret_bound(inst, "capacity").source == "capacity-parts"
    save_instance(tmp_path / "queue.json", inst)
    code, out, err = cli(
        "simulate",
        tmp_path / "queue.json",
        "--policy",
        "srtf",
        "--bound",
        "capacity",
        "--progress",
    )
    assert code == 0 and "on parts of the longest jobs" in out and "1 of 1 parts solved" in out
    assert "bound: LP on part 1/1 of the longest jobs: optimal, +" in err


def test_parts_left_when_the_time_runs_out_count_their_critical_paths(monkeypatch):
    """The time limit covers all parts: once it is spent, the parts not solved count their
    critical paths, with status ``time limit``."""
    import optsched.regret as regret

    class SpentAfterOnePart(regret.Budget):
        calls = 0

        def expired(self) -> bool:
            SpentAfterOnePart.calls += 1
            return SpentAfterOnePart.calls > 1

    monkeypatch.setattr(regret, "Budget", SpentAfterOnePart)
    inst = _queue_with_long_jobs()
    found = parts_bound(inst, [[8, 9], [0, 1]], intervals=20, time_limit=30)
    assert found.statuses == ("optimal", "time limit")
    assert found.gains[0] > 0 and found.gains[1] == 0
    assert found.value == pytest.approx(critical_path_bound(inst) + found.gains[0])


def test_the_fallback_takes_the_longest_tenth_by_rank_and_says_what_it_solved(monkeypatch):
    """Where the LP is too large, the parts hold the ceil(10 %) longest jobs even when
    lengths tie (ranked by length, then index), in arrival order; with no time left every
    part counts its critical paths and the status says why; a bad time limit is refused."""
    import optsched.exact.capacity as capacity
    import optsched.regret as regret

    jobs = tuple(
        Job(
            id=f"j{k}",
            arrival=float(30 - k),
            weight=1.0,
            rounds=2,
            tasks_per_round=1,
            compute={"V100": 1.0},
        )
        for k in range(30)
    )
    inst = Instance("ties", jobs, (GPU("g", "V100"),))
    whole, _ = capacity.capacity_lp_size(inst, regret.CAPACITY_INTERVALS)
    monkeypatch.setattr(capacity, "lp_too_large", lambda variables, nonzeros: variables >= whole)
    assert regret._longest_parts(inst, [job.arrival + 2 for job in jobs]) == [[2, 1, 0]]
    found = regret_bound(inst, "capacity")
    assert found is not None and found.parts["capacity_parts_status"] == "1 of 1 parts solved"
    smaller = regret_bound(inst, "capacity", parts_size=2)  # parts [2, 1] and [0]
    assert smaller is not None and smaller.parts["capacity_parts_status"] == "2 of 2 parts solved"
    for size in (0, True, 1.5):
        with pytest.raises(InputError, match="at least one job"):
            regret_bound(inst, "capacity", parts_size=size)

    class Spent(regret.Budget):
        def expired(self) -> bool:
            return True

    monkeypatch.setattr(regret, "Budget", Spent)
    spent = regret_bound(inst, "capacity")
    assert spent is not None
    assert spent.parts["capacity_parts_status"] == "0 of 1 parts solved (1 time limit)"
    assert spent.parts["bound_capacity_parts"] == pytest.approx(critical_path_bound(inst))
    assert regret._parts_status(("optimal", "interrupted"), 4) == (
        "1 of 4 parts solved (1 interrupted, 2 not reached)"
    )
    with pytest.raises(InputError, match="time limit must be"):
        regret_bound(inst, "capacity", time_limit=0)


def test_a_trace_of_many_jobs_gets_a_coarser_grid(monkeypatch):
    """The capacity level keeps its LP to about CAPACITY_COLUMNS columns by coarsening its
    grid (never below MIN_CAPACITY_INTERVALS), but an LP too large at the full count keeps
    it, so that the level still falls back to parts."""
    import optsched.regret as regret

    jobs = tuple(Job(f"j{k}", arrival=float(k), compute={"a": 1.0, "b": 2.0}) for k in range(10))
    inst = Instance("many", jobs, (GPU("x", "a"), GPU("y", "b")))
    assert regret.capacity_intervals(inst) == regret.CAPACITY_INTERVALS
    monkeypatch.setattr(regret, "CAPACITY_COLUMNS", 20 * 51)  # 20 (job, type) pairs
    assert regret.capacity_intervals(inst) == 50
    monkeypatch.setattr(regret, "CAPACITY_COLUMNS", 20 * 5)
    assert regret.capacity_intervals(inst) == regret.MIN_CAPACITY_INTERVALS
    monkeypatch.setattr("optsched.exact.capacity.lp_too_large", lambda *a, **k: True)
    assert regret.capacity_intervals(inst) == regret.CAPACITY_INTERVALS
