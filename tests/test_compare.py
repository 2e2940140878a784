"""Online comparisons in one call (``optsched compare``, :func:`optsched.online.compare`),
and the workload cuts and load scaling every trace command takes."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from typing import Any

import pytest

from optsched.cli import main
from optsched.errors import InputError
from optsched.generate import GeneratorSpec, generate
from optsched.io import save_instance
from optsched.online.compare import compare, parse_policy
from optsched.regret import weighted_arrivals
from optsched.subsets import parse_duration, parse_window, select_jobs
from optsched.traces import load_workload, parse_cluster
from tests.conftest import ROOT

PHILLY = ROOT / "tests" / "data" / "traces" / "philly.csv"


def cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def instance(jobs: int = 12) -> Any:
    return generate(GeneratorSpec(jobs=jobs, gpus=6, gpu_types=2, hosts=2, load=2.0), 5)


# -- cuts and load ------------------------------------------------------------------------------


def test_select_jobs_cuts_a_window_and_the_first_jobs_and_scales_the_load():
    inst = instance()
    order = sorted(inst.jobs, key=lambda job: job.arrival)
    origin = order[0].arrival
    assert [j.id for j in select_jobs(inst, first=4).jobs] == [j.id for j in order[:4]]
    start, end = order[3].arrival - origin, order[8].arrival - origin
    assert start < end
    inside = [j.id for j in order if start <= j.arrival - origin < end]  # [start, end)
    assert [j.id for j in select_jobs(inst, window=(start, end)).jobs] == inside
    both = select_jobs(inst, window=(start, None), first=2).jobs
    assert [j.id for j in both] == [j.id for j in order if j.arrival - origin >= start][:2]
    loaded = select_jobs(inst, load=4.0)
    for before, after in zip(order, sorted(loaded.jobs, key=lambda j: j.arrival), strict=True):
        assert after.arrival == pytest.approx(origin + (before.arrival - origin) / 4)
        assert (after.rounds, after.compute, after.weight) == (
            before.rounds,
            before.compute,
            before.weight,
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"first": 0}, "--first"),
        ({"load": 0.0}, "--load"),
        ({"load": float("inf")}, "--load"),
        ({"window": (10.0, 5.0)}, "after its start"),
        ({"window": (1e9, None)}, "no job arrives in the window"),
    ],
)
def test_select_jobs_refuses_what_keeps_nothing_or_means_nothing(kwargs, message):
    with pytest.raises(InputError, match=message):
        select_jobs(instance(), **kwargs)


def test_a_trace_cut_in_gang_mode_refuses_no_job_outside_the_cut(tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(
        "timestamp,duration,num_gpus,gpu_time,cluster\n"
        "2017-10-09 06:00:00,3600.0,8,28800.0,a\n"  # 8 GPUs on a cluster of 2: gang refuses
        "2017-10-10 07:00:00,600.0,2,1200.0,a\n"
        "2017-10-10 08:00:00,60.0,1,60.0,a\n"
    )
    with pytest.raises(InputError, match="needs 8 in gang mode"):
        load_workload(trace, cluster="V100:2", mode="gang")
    for cut in ({"window": (86400.0, None)}, {"window": (3600.0, 2 * 86400.0), "first": 1}):
        inst, _ = load_workload(trace, cluster="V100:2", mode="gang", **cut)
        assert inst.mode == "gang" and [j.tasks_per_round for j in inst.jobs][:1] == [2]
    with pytest.raises(InputError, match=r"window must be \(start, end\)"):
        load_workload(trace, cluster="V100:2", window="1d:2d")  # type: ignore[arg-type]


def test_times_and_windows_read_with_units():
    assert parse_duration("90") == 90 and parse_duration("36h") == 36 * 3600
    assert parse_duration("2.5d") == 2.5 * 86400 and parse_duration("3m") == 180
    assert parse_window("2d:3d") == (2 * 86400, 3 * 86400)
    assert parse_window(":36h") == (0.0, 36 * 3600) and parse_window("12h:") == (43200, None)
    for bad in ("abc", "-1h", "nan"):
        with pytest.raises(InputError, match="--window"):
            parse_duration(bad)
    with pytest.raises(InputError, match="START:END"):
        parse_window("36h")


def test_a_cluster_scales_every_count_to_at_least_one():
    gpus = parse_cluster("V100:100,T4:50,K80:3", scale=0.1)
    counts = {t: sum(g.type == t for g in gpus) for t in ("V100", "T4", "K80")}
    assert counts == {"V100": 10, "T4": 5, "K80": 1}
    with pytest.raises(InputError, match="--cluster-scale"):
        parse_cluster("V100:4", scale=0)


# -- compare ----------------------------------------------------------------------------------


def test_compare_runs_every_policy_in_its_mode_with_certified_regrets():
    inst = instance()
    result = compare(inst, ["hlas", "fifo-perf", "hlas:mapping=A", ("srtf", {})])
    rows = {row["policy"]: row for row in result.rows(unit="s")}
    assert list(rows) == ["hlas", "fifo-perf", "hlas:mapping=A", "srtf"]
    assert rows["hlas"]["mode"] == "relaxed" and rows["fifo-perf"]["mode"] == "gang"
    assert rows["srtf"]["mode"] == inst.mode  # both modes: the instance's
    assert set(result.bounds) == {"relaxed", "gang"}
    for run in result.runs:  # each bound holds for the runs of its mode
        assert run.result.extra["checked"]
        assert result.bounds[run.result.mode][0] <= run.result.objective * (1 + 1e-9)
        row = rows[run.label]
        assert row["regret"] >= 1 - 1e-9 and row["regret_jct"] >= 1 - 1e-9
        jct = result.jcts[run.label]
        assert row["mean_jct"] == pytest.approx(sum(jct) / len(jct))
    hours = result.rows(unit="h")[0]
    assert hours["mean_jct"] == pytest.approx(rows["hlas"]["mean_jct"] / 3600)
    table = result.table("h")
    assert "mean JCT (h)" in table and "| hlas:mapping=A | relaxed |" in table
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["bounds"]["gang"]["value"] == pytest.approx(result.bounds["gang"][0] / 3600)
    least_jct = result.bounds["gang"][0] - weighted_arrivals(result.instance)
    assert data["bounds"]["gang"]["weighted_jct"] == pytest.approx(least_jct / 3600)
    assert f"(Σ w_j JCT ≥ {least_jct / 3600:.4g}; gang mode, " in table
    assert data["bounds"]["gang"]["statuses"] == {}  # the fluid level solves no LP
    assert [p["method"] for p in data["policies"]] == ["hlas", "fifo-perf", "hlas", "srtf"]


def test_a_bound_above_an_objective_by_its_rounding_gives_a_regret_of_one():
    """A policy that reaches the bound can end one float rounding below it (sums in another
    order): its regret is 1, as simulate reports it, and the table prints ratios rounded
    up, so that a regret just above 1 never reads as 1."""
    import math
    from dataclasses import replace

    from optsched.regret import ratio_text, regret_ratio

    inst = instance()
    result = compare(inst, ["hlas"])
    run = result.runs[0].result
    above = math.nextafter(run.objective, math.inf)
    rounded = replace(result, bounds={run.mode: (above, "critical-path")})
    assert rounded.rows()[0]["regret"] == 1.0
    assert regret_ratio(1.0, math.nextafter(1.0, 2.0)) == 1.0
    assert regret_ratio(3.0, 2.0) == 1.5
    for ratio, text in [(1.0, "1"), (1.000234, "1.001"), (1.5, "1.5"), (12.3456, "12.35")]:
        assert ratio_text(ratio) == text
    tight = replace(result, bounds={run.mode: (run.objective / 1.000234, "critical-path")})
    assert "| 1.001 |" in tight.table("h")
    # a regret the true one is at least is rounded down instead
    for ratio, text in [(1.0, "1"), (1.000934, "1"), (1.5, "1.5"), (12.3456, "12.34")]:
        assert ratio_text(ratio, up=False) == text


def test_an_offline_method_gives_each_policy_the_regret_it_has_at_least():
    """The offline schedule is checked, so the optimum lies between the bound and it: each
    policy's objective over it is a regret the true one is at least, never above the
    regret over the bound. The relaxed runs take a gang schedule where it is better."""
    inst = instance()
    result = compare(inst, ["hlas", "fifo-perf", "srtf"], offline="priority-search:steps=200")
    assert result.offline == "priority-search:steps=200"
    assert set(result.schedules) == {"relaxed", "gang"}
    assert result.schedules["relaxed"][0] <= result.schedules["gang"][0]
    arrivals = weighted_arrivals(result.instance)
    for mode, (best, source) in result.schedules.items():
        assert result.bounds[mode][0] <= best * (1 + 1e-9)
        runs = [r.result.objective for r in result.runs if r.result.mode == mode]
        assert best <= min(runs) and source
    for row, run in zip(result.rows(), result.runs, strict=True):
        best = result.schedules[row["mode"]][0]
        objective, total_jct = run.result.objective, run.result.metrics["total_weighted_jct"]
        assert row["regret_least"] == pytest.approx(max(1.0, objective / best))
        assert row["regret_jct_least"] == pytest.approx(max(1.0, total_jct / (best - arrivals)))
        assert 1 <= row["regret_least"] <= row["regret"] + 1e-9
        assert 1 <= row["regret_jct_least"] <= row["regret_jct"] + 1e-9
    table = result.table()
    assert "| JCT regret | regret | JCT regret ≥ | regret ≥ | CPU s |" in table
    assert "best schedule known (h): " in table
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    assert data["offline"] == "priority-search:steps=200"
    assert data["offline_statuses"] == {"relaxed": "feasible", "gang": "feasible"}
    assert list(data["policies"][0])[7:11] == [
        "regret_jct",
        "regret",
        "regret_jct_least",
        "regret_least",
    ]  # in table order
    gang = data["schedules"]["gang"]
    assert gang["weighted_jct"] == pytest.approx(gang["value"] - arrivals / 3600)
    from dataclasses import replace

    # printed rounded down: 1.0009 is at least 1, not 1.001
    srtf = next(run for run in result.runs if run.label == "srtf").result
    close = replace(result, schedules={srtf.mode: (srtf.objective / 1.0009, "x")})
    lines = close.table().splitlines()
    row = next(line for line in lines if "| srtf |" in line).split(" | ")
    assert row[lines[2].split(" | ").index("regret ≥")] == "1"
    plain = compare(inst, ["hlas"])  # without one: the table and data as before
    assert "regret ≥" not in plain.table() and "schedules" not in plain.to_dict()
    assert "regret_least" not in plain.rows()[0]


def test_a_ctrl_c_ends_the_offline_work_and_says_so(monkeypatch):
    """A Ctrl-C in the offline method's first mode returns its best schedule so far marked
    interrupted, and the other mode is not solved; the output says both."""
    import importlib
    from dataclasses import replace

    module = importlib.import_module("optsched.solve")  # the package exports the function
    real, calls = module.solve, []

    def interrupted(instance, method, **kwargs):
        calls.append(kwargs["mode"])
        result = real(instance, method, **kwargs)
        return replace(result, extra={**result.extra, "interrupted": True})

    monkeypatch.setattr(module, "solve", interrupted)
    result = compare(instance(), ["hlas", "fifo-perf"], offline="ect")
    assert calls == ["relaxed"]
    assert result.offline_statuses == {"relaxed": "interrupted", "gang": "not run: interrupted"}
    assert "offline ect: gang mode not run: interrupted, relaxed mode interrupted" in (
        result.table()
    )


def test_the_offline_method_starts_from_the_best_run_of_its_mode(monkeypatch):
    """A method that takes a hint gets the mode's best checked run's schedule."""
    import importlib

    module = importlib.import_module("optsched.solve")
    real, hints = module.solve, {}

    def spy(instance, method, **kwargs):
        hints[kwargs["mode"]] = kwargs["hint"]
        return real(instance, method, **kwargs)

    monkeypatch.setattr(module, "solve", spy)
    result = compare(
        instance(), ["hlas", "srtf", "fifo-perf"], offline="lns", offline_time_limit=2.0
    )
    for mode in ("relaxed", "gang"):
        runs = [r.result for r in result.runs if r.result.mode == mode]
        best = min(runs, key=lambda r: r.objective)
        assert hints[mode] is best.schedule
        assert result.schedules[mode][0] <= best.objective


def test_the_lp_takes_its_deadlines_from_a_better_offline_schedule(monkeypatch):
    """The capacity level places its LP by the best checked schedule of the mode: the
    offline method's where it beats every run."""
    import optsched.regret as regret

    real, seen = regret.regret_bound, []

    def spy(instance, level, **kwargs):
        seen.append(kwargs["objective"])
        return real(instance, level, **kwargs)

    monkeypatch.setattr(regret, "regret_bound", spy)
    result = compare(instance(), ["hlas"], bound="capacity", offline="priority-search:steps=200")
    offline = result.schedules["relaxed"]
    assert offline[1] == "priority-search:steps=200 offline"  # better than hlas here
    assert seen == [pytest.approx(offline[0])]


def test_an_offline_bound_method_raises_the_bound_and_optimum_closes_the_interval():
    """An offline method's bound, where higher, is its mode's; CP-SAT's proved optimum (a
    tiny instance) makes the two regrets one."""
    from optsched.solve import solve

    result = compare(instance(), ["hlas", "srtf"], mode="relaxed", offline="capacity-bound")
    level = max(r.result.extra["regret_bound"] for r in result.runs)
    best = min((r.result for r in result.runs), key=lambda r: r.objective)
    own = solve(result.instance, "capacity-bound", mode="relaxed", hint=best.schedule).bound
    assert own is not None and own > level  # the LP beats the fluid level here
    assert result.bounds["relaxed"] == (pytest.approx(own), "capacity-bound offline")
    inst = instance(4)
    exact = compare(inst, ["hlas", "srtf"], mode="relaxed", offline="cpsat")
    best, source = exact.schedules["relaxed"]
    bound = exact.bounds["relaxed"][0]
    assert bound <= best * (1 + 1e-9)
    if source == "cpsat offline" and bound == best:  # CP-SAT proved its schedule optimal
        for row in exact.rows():
            assert row["regret_least"] == pytest.approx(row["regret"])


def test_compare_says_why_the_stronger_bounds_gave_none():
    """The statuses of the level's LP and Lagrangian bound go with each mode's bound, in the
    JSON and (where not optimal) in the table's line on the bound."""
    inst = instance()
    result = compare(inst, ["hlas"], bound="lagrangian")
    statuses = result.to_dict()["bounds"]["relaxed"]["statuses"]
    assert statuses["capacity"] == "optimal"
    assert statuses["lagrangian"] == result.runs[0].result.extra["lagrangian_status"]
    head = result.table("h").splitlines()[0]
    assert "capacity: optimal" not in head
    assert (f"lagrangian: {statuses['lagrangian']}" in head) == (
        statuses["lagrangian"] != "optimal"
    )
    assert result.runs[0].result.extra["bound_seconds"] >= 0


def test_compare_gives_what_each_bound_of_the_level_reached():
    """Each mode's bound in the JSON lists every bound of its level that gave a value, on
    Σ w_j C_j and on Σ w_j JCT; the bound is the highest of them, and its source's value."""
    result = compare(instance(), ["hlas"], bound="lagrangian")
    bound = result.to_dict(unit="s")["bounds"]["relaxed"]
    levels = bound["levels"]
    assert {"critical-path", "fluid", "capacity"} <= set(levels)
    extra = result.runs[0].result.extra
    arrivals = weighted_arrivals(result.instance)
    for name, found in levels.items():
        assert found["value"] == extra["bound_" + name.replace("-", "_")]
        assert found["weighted_jct"] == pytest.approx(found["value"] - arrivals)
    assert max(found["value"] for found in levels.values()) == bound["value"]
    assert levels[bound["source"]]["value"] == bound["value"]
    assert compare(instance(), ["hlas"], bound="none").to_dict()["bounds"] == {}


@pytest.mark.parametrize("level", ["capacity", "lagrangian"])
def test_compare_solves_the_capacity_lp_once_per_mode_for_every_run(monkeypatch, level):
    """With ``bound="capacity"`` (or ``"lagrangian"``, which adds the Lagrangian bound)
    each mode's LP runs once, placed by the best run of the mode (its objective, makespan and
    schedule), and every run of the mode
    gets its regrets over that bound (at least the fluid level's, which it includes)."""
    import optsched.exact.capacity as capacity
    from optsched.regret import regret_bound

    inst = instance()
    real = capacity.capacity_bound
    calls: list[str] = []

    def counted(instance, *args, **kwargs):
        calls.append(instance.mode)
        return real(instance, *args, **kwargs)

    monkeypatch.setattr(capacity, "capacity_bound", counted)
    lines: list[str] = []
    result = compare(
        inst, ["hlas", "hlas:mapping=A", "fifo-perf"], bound=level, progress=lines.append
    )
    assert sorted(calls) == ["gang", "relaxed"]
    assert any("class-capacity LP" in line and "relaxed mode ..." in line for line in lines)
    assert any(line.startswith("bound: gang mode:") and "LP optimal" in line for line in lines)
    assert any("; Lagrangian " in line for line in lines) == (level == "lagrangian")
    found = {}
    for mode in ("relaxed", "gang"):
        runs = [r.result for r in result.runs if r.result.mode == mode]
        best = min(runs, key=lambda r: r.objective)
        expected = regret_bound(
            inst.with_mode(mode),
            level,
            objective=best.objective,
            makespan=best.metrics["makespan"],
            schedule=best.schedule,
        )
        assert expected is not None and expected.parts["capacity_status"] == "optimal"
        found[mode] = expected.value
        for run in runs:
            assert run.extra["regret_bound"] == pytest.approx(expected.value)
            assert run.extra["capacity_status"] == "optimal"
            assert ("bound_lagrangian" in run.extra) == (level == "lagrangian")
            assert run.regret == pytest.approx(max(1.0, run.objective / expected.value))
            assert run.extra["bound_fluid"] <= run.extra["regret_bound"] <= run.objective
    # the gang runs' regrets are over the better of the two modes' bounds
    assert result.bounds["relaxed"][0] == pytest.approx(found["relaxed"])
    assert result.bounds["gang"][0] == pytest.approx(max(found.values()))


def test_gang_runs_take_the_relaxed_runs_bound_where_it_is_higher(monkeypatch):
    """A gang schedule is a relaxed one of the same objective, so where the gang LP gives no
    bound (here: its time ran out) the relaxed runs' LP bounds the gang runs too."""
    import optsched.regret as regret

    real = regret.regret_bound

    def gang_lp_out_of_time(instance, level, **kwargs):
        return real(instance, "fluid" if instance.mode == "gang" else level, **kwargs)

    monkeypatch.setattr(regret, "regret_bound", gang_lp_out_of_time)
    inst = instance()
    result = compare(inst, ["hlas", "fifo-perf"], bound="capacity")
    relaxed, gang = result.bounds["relaxed"], result.bounds["gang"]
    fluid = next(r for r in result.runs if r.result.mode == "gang").result.extra["bound_fluid"]
    assert relaxed[0] > fluid  # the LP beats the gang runs' own (fluid) bound here
    assert gang == (relaxed[0], "capacity of the relaxed runs")
    assert result.statuses["gang"] == {"capacity": "optimal"}
    assert result.levels["gang"] == result.levels["relaxed"]  # the levels behind that bound
    assert result.levels["relaxed"]["capacity"] == relaxed[0]
    rows = {row["policy"]: row for row in result.rows()}
    run = next(r for r in result.runs if r.label == "fifo-perf").result
    assert rows["fifo-perf"]["regret"] == pytest.approx(run.objective / relaxed[0])
    assert "; gang mode, capacity of the relaxed runs)" in result.table()


def test_compare_gives_cluster_policies_no_capacity_bound():
    """A cluster policy's run has no bound (its phases and placement factors are not in the
    bounds' model), with ``bound="capacity"`` too: no LP, no regret, no error."""
    from optsched.generate import LiquidSpec, generate_liquid

    inst = generate_liquid(LiquidSpec(hosts=3, jobs=3, interarrival=7), 1)
    result = compare(inst, ["liquid"], bound="capacity")
    assert result.bounds == {} and result.runs[0].result.regret is None


def test_compare_refuses_bad_policies_before_running_any():
    inst = instance()
    with pytest.raises(InputError, match="given twice"):
        compare(inst, ["hlas", "hlas"])
    with pytest.raises(InputError, match="unknown"):
        compare(inst, ["hlas", "no-such-policy"])
    with pytest.raises(InputError, match="mapping"):
        compare(inst, ["hlas", "hlas:mapping=Z"])
    with pytest.raises(InputError, match=r"has no relaxed mode.*leave the mode out"):
        compare(inst, ["hlas", "tiresias"], mode="relaxed")
    with pytest.raises(InputError, match="KEY=VALUE"):
        parse_policy("hlas:mapping")
    for text in ("hlas: ", "fifo-perf:,"):
        with pytest.raises(InputError, match="nothing after ':'"):
            parse_policy(text)
    with pytest.raises(InputError, match="no policy name"):
        parse_policy(":")
    with pytest.raises(InputError, match="--bound-time-limit"):
        compare(inst, ["hlas"], bound="capacity", bound_time_limit=-1.0)
    with pytest.raises(InputError, match="unknown regret bound"):
        compare(inst, ["hlas"], bound="lp")
    with pytest.raises(InputError, match="unknown"):
        compare(inst, ["hlas"], offline="no-such-method")
    with pytest.raises(InputError, match=r"offline method 'hare' has no gang mode"):
        compare(inst, ["fifo-perf"], offline="hare")
    with pytest.raises(InputError, match="--offline-time-limit"):
        compare(inst, ["hlas"], offline_time_limit=0.0)  # checked without --offline too
    with pytest.raises(InputError, match=r"--offline 'priority-search:kick'"):
        compare(inst, ["hlas"], offline="priority-search:kick")
    with pytest.raises(InputError, match=r"--offline ':kick=2': no offline name"):
        compare(inst, ["hlas"], offline=":kick=2")
    with pytest.raises(InputError, match=r"--offline 'cpsat:workers=0'"):
        compare(inst, ["hlas"], offline="cpsat:workers=0")
    from optsched.instance import GPU, Instance, Job

    # two tasks a round on one GPU: a relaxed-mode job that no gang-mode policy can run
    wide = Job(id="w", arrival=0.0, weight=1.0, rounds=1, tasks_per_round=2, compute={"V": 1.0})
    one = Instance("one-gpu", (wide,), (GPU("g", "V"),))
    calls: list[str] = []
    with pytest.raises(InputError, match=r"needs 2 in gang mode"):
        compare(one, ["hlas", "fifo-perf"], progress=calls.append)
    assert calls == []  # before hlas ran


def test_the_compare_command_draws_every_policy_in_hours(tmp_path, monkeypatch):
    import optsched.plot

    seen: dict[str, Any] = {}

    def fake(jcts, fmt="png", title="", rhos=None, *, unit="s", log=False):
        seen.update(jcts=jcts, unit=unit, log=log)
        return b"image"

    monkeypatch.setattr(optsched.plot, "jct_cdf_image", fake)
    path = tmp_path / "inst.json"
    save_instance(path, instance())
    code, _, err = cli(
        "compare", path, "--policy", "hlas", "--policy", "fifo-perf", "--cdf", tmp_path / "c.png"
    )
    assert code == 0, err
    assert seen["unit"] == "h" and seen["log"] is True
    assert list(seen["jcts"]) == ["hlas", "fifo-perf"]
    result = compare(instance(), ["hlas", "fifo-perf"])
    assert seen["jcts"]["hlas"] == pytest.approx([v / 3600 for v in result.jcts["hlas"]])
    assert result.jcts_in("m")["hlas"] == pytest.approx([v / 60 for v in result.jcts["hlas"]])
    assert (tmp_path / "c.png").read_bytes() == b"image"


def test_compare_command_writes_one_table_and_one_cdf(tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "inst.json"
    save_instance(path, instance(20))
    table, cdf = tmp_path / "t.md", tmp_path / "jct.png"
    code, out, err = cli(
        "compare", path, "--policy", "hlas", "--policy", "tiresias",
        "--first", "15", "--load", "2", "--out", table, "--cdf", cdf,
    )  # fmt: skip
    assert code == 0, err
    text = table.read_text()
    assert "15 jobs" in text and "| tiresias | gang |" in text and "mean JCT (h)" in text
    assert out == text and cdf.read_bytes().startswith(b"\x89PNG")
    data = tmp_path / "t.json"
    assert cli("compare", path, "--policy", "hlas", "--out", data)[0] == 0
    assert json.loads(data.read_text())["policies"][0]["policy"] == "hlas"
    table_csv = tmp_path / "t.csv"
    assert cli("compare", path, "--policy", "hlas", "--out", table_csv)[0] == 0
    header, row = list(csv.reader(table_csv.read_text().splitlines()))
    assert header[:3] == ["policy", "mode", "mean JCT (h)"]
    assert header[-5:] == ["JCT regret", "regret", "CPU s", "bound on Σ w_j JCT (h)", "bound from"]
    bound = json.loads(data.read_text())["bounds"]["relaxed"]
    assert float(row[-2]) == pytest.approx(bound["weighted_jct"]) and row[-1] == bound["source"]
    code, out, err = cli(
        "compare", path, "--policy", "hlas", "--offline", "ect", "--offline-time-limit", "5",
        "--out", table_csv,
    )  # fmt: skip
    assert code == 0, err
    header, row = list(csv.reader(table_csv.read_text().splitlines()))
    assert header[7:11] == ["JCT regret", "regret", "JCT regret ≥", "regret ≥"]
    assert "JCT regret ≥" in out and "best schedule known (h)" in out
    assert header[-4:] == [
        "bound on Σ w_j JCT (h)",
        "bound from",
        "best schedule's Σ w_j JCT (h)",
        "schedule from",
    ]


def test_compare_command_refuses_bad_targets_before_running(tmp_path):
    path = tmp_path / "inst.json"
    save_instance(path, instance())
    code, _, err = cli("compare", path, "--policy", "hlas", "--out", tmp_path / "t.txt")
    assert code == 2 and ".md, .csv or .json" in err
    code, _, err = cli("compare", path, "--policy", "hlas", "--cluster-scale", "0.5")
    assert code == 2 and "go with a trace" in err


def test_simulate_takes_the_first_jobs_of_a_trace_on_a_scaled_cluster(tmp_path):
    out = tmp_path / "s.json"
    code, _, err = cli(
        "simulate", PHILLY, "--policy", "hlas", "--cluster", "V100:20,K80:10",
        "--cluster-scale", "0.1", "--first", "2", "--out", out,
    )  # fmt: skip
    assert code == 0, err
    tasks = json.loads(out.read_text())["tasks"]
    assert len({t["job"] for t in tasks}) == 2
    assert {t["gpu"] for t in tasks} <= {"V100-0", "V100-1", "K80-0"}
