"""Benchmark machinery: grids, manifests, the resumable runner (local and Dask), reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from optsched.bench.grid import Grid, generate_set, load_grid
from optsched.bench.manifest import Manifest
from optsched.bench.records import TIMING_FIELDS, load_records
from optsched.bench.report import gap_rows, to_latex, to_markdown, write_report
from optsched.bench.runner import plan, run_benchmark
from optsched.errors import InputError
from optsched.io import load_instance
from tests.conftest import ROOT, assert_out_of_time

TINY_GRID = ROOT / "benchmarks" / "grids" / "tiny.json"


@pytest.fixture
def tiny_set(tmp_path):
    return generate_set(load_grid(TINY_GRID), tmp_path / "set")


def strip(record):
    """The record without its timings (the run's and its solver start-up's)."""
    out = {k: v for k, v in record.items() if k not in TIMING_FIELDS}
    if isinstance(out.get("extra"), dict):
        out["extra"] = {k: v for k, v in out["extra"].items() if k != "startup_s"}
    return out


def test_generate_set_writes_instances_and_manifest(tiny_set):
    folder = tiny_set.path.parent
    assert sorted(tiny_set.instances) == [
        "tiny-jobs2-s0",
        "tiny-jobs2-s1",
        "tiny-jobs3-s0",
        "tiny-jobs3-s1",
    ]
    inst = load_instance(folder / "tiny-jobs3-s1.json")
    assert inst.n_jobs == 3 and inst.n_gpus == 4 and inst.name == "tiny-jobs3-s1"
    assert tiny_set.instances["tiny-jobs3-s1"]["cell"] == {"jobs": 3}
    assert json.loads((folder / "grid.json").read_text())["name"] == "tiny"
    with pytest.raises(InputError, match="never regenerated in place"):
        generate_set(load_grid(TINY_GRID), folder)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(generator={"colour": 1}), "unknown generator parameter 'colour'"),
        (dict(vary={"jobs": []}), "must be a non-empty list"),
        (dict(seeds=()), "seeds must be"),
        (dict(vary={"gpus": [0]}), "gpus must be >= 1"),
        (dict(name="a b"), "grid name"),
        (dict(family="other"), "family must be one of"),
        (dict(family="hare", generator={"task_time": [1, 2]}), "unknown generator parameter"),
    ],
)
def test_bad_grids(kwargs, match):
    base = dict(name="g", generator={}, vary={"jobs": [2]}, seeds=(0,))
    with pytest.raises(InputError, match=match):
        Grid(**{**base, **kwargs})


def test_plan_refuses_bad_requests(tiny_set):
    with pytest.raises(InputError, match="unknown scheduling method 'nope'"):
        plan(tiny_set, ["nope"])
    with pytest.raises(InputError, match="no parameter 'x'"):
        plan(tiny_set, ["ect"], params={"x": "1"})
    runs = plan(tiny_set, ["ect"], modes=["relaxed", "gang"], seeds=[0, 1])
    assert len(runs) == 4 * 2 * 2 and len({r.key for r in runs}) == 16


def test_hare_grids_and_online_policies_run_through_the_runner(tmp_path):
    """A hare-family grid; simulate methods (online policies) run like solve methods."""
    grid = Grid(
        "h",
        {"jobs": 8, "gpus": 20, "total_tasks": 40},
        {"mix": [[1, 0, 0, 1], [1, 1, 1, 1]]},
        (0,),
        family="hare",
    )
    manifest = generate_set(grid, tmp_path / "set")
    assert load_instance(tmp_path / "set" / "h-mix1-0-0-1-s0.json").n_gpus == 20
    runs = plan(manifest, ["hlas", "hare-lp"], modes=["relaxed"])
    runs += plan(manifest, ["fifo"], modes=["gang"])
    run_benchmark(runs, tmp_path / "r.jsonl", workers=1, manifest=manifest, progress=None)
    records = load_records(tmp_path / "r.jsonl")
    assert len(records) == 6 and {r["status"] for r in records} == {"feasible"}
    assert all(r["metrics"]["total_weighted_jct"] > 0 for r in records)
    with pytest.raises(InputError, match="does not support mode"):
        plan(manifest, ["fifo"], modes=["relaxed"])
    # without --mode, a policy of one mode runs in it, as simulate and compare run it
    own = plan(manifest, ["hlas", "fifo-perf"])
    assert {(r.method, r.mode) for r in own} == {("hlas", "relaxed"), ("fifo-perf", "gang")}


def test_resume_skips_finished_runs_and_never_duplicates(tiny_set, tmp_path):
    records = tmp_path / "r.jsonl"
    runs = plan(tiny_set, ["ect"], modes=["relaxed", "gang"])
    first = run_benchmark(runs[:3], records, workers=1, progress=None)
    assert (first.finished, first.skipped) == (3, 0)
    second = run_benchmark(runs, records, workers=1, manifest=tiny_set, progress=None)
    assert (second.finished, second.skipped) == (5, 3)
    keys = [r["key"] for r in load_records(records)]
    assert sorted(keys) == sorted(r.key for r in runs)
    # the manifest, updated run by run, equals one rebuilt from the records alone
    saved = Manifest.load(tiny_set.path)
    rebuilt = Manifest.load(tiny_set.path)
    rebuilt.rebuild(load_records(records))
    assert saved.instances == rebuilt.instances
    best = saved.instances["tiny-jobs2-s0"]["best"]["gang"]
    assert best["objective"] >= best["bound"] and best["objective_by"]["method"] == "ect"


def test_torn_last_line_is_cut_and_bad_lines_are_errors(tiny_set, tmp_path):
    records = tmp_path / "r.jsonl"
    runs = plan(tiny_set, ["ect"])
    run_benchmark(runs[:2], records, workers=1, progress=None)
    with records.open("a") as fh:
        fh.write('{"format": "optsched/bench-rec')  # the runner died mid-write
    assert len(load_records(records)) == 2
    run_benchmark(runs, records, workers=1, progress=None)
    assert sorted(r["key"] for r in load_records(records)) == sorted(r.key for r in runs)
    records.write_text("not json\n" + records.read_text())
    with pytest.raises(InputError, match=r"r.jsonl:1: not a JSON record"):
        load_records(records)


@pytest.mark.slow  # 4 s; test_robustness_bench SIGKILLs the runner alone, then resumes
def test_killed_runner_loses_nothing_on_restart(tiny_set, tmp_path):
    """SIGKILL the CLI runner mid-run, restart it: every run recorded exactly once."""
    records = tmp_path / "r.jsonl"
    argv = [
        sys.executable,
        "-m",
        "optsched.cli",
        "--plugin",
        "tests.slow_method",
        "bench",
        "run",
        str(tiny_set.path.parent),
        "--method",
        "test-slow-ect",
        "--mode",
        "relaxed",
        "--mode",
        "gang",
        "--records",
        str(records),
        "--workers",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(load_records(records)) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(load_records(records))
    assert 2 <= partial < 8
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{partial} already recorded" in done.stdout
    keys = [r["key"] for r in load_records(records)]
    assert len(keys) == 8 and len(set(keys)) == 8


def test_processes_threads_and_dask_give_identical_records(tiny_set, tmp_path):
    distributed = pytest.importorskip("distributed")
    runs = plan(tiny_set, ["ect"], modes=["relaxed", "gang"], seeds=[0, 1])
    out = {}
    for name, kwargs in (("inline", {"workers": 1}), ("processes", {"workers": 2})):
        run_benchmark(runs, tmp_path / f"{name}.jsonl", progress=None, **kwargs)
        out[name] = load_records(tmp_path / f"{name}.jsonl")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        run_benchmark(
            runs, tmp_path / "dask.jsonl", scheduler=cluster.scheduler_address, progress=None
        )
    out["dask"] = load_records(tmp_path / "dask.jsonl")
    canon = {
        name: sorted((strip(r) for r in recs), key=lambda r: r["key"])
        for name, recs in out.items()
    }
    assert len(canon["inline"]) == 16
    assert canon["processes"] == canon["inline"]
    assert canon["dask"] == canon["inline"]


def test_errors_are_recorded_not_raised(tiny_set, tmp_path):
    from optsched.registry import register

    @register("test-crash", description="raises", replace=True)
    def crash(instance, context):
        raise RuntimeError("kaput")

    summary = run_benchmark(
        plan(tiny_set, ["test-crash"]), tmp_path / "r.jsonl", workers=1, progress=None
    )
    assert summary.errors == 4
    (first, *_) = load_records(tmp_path / "r.jsonl")
    assert first["status"] == "error"
    assert first["error"].endswith(
        "method 'test-crash' (plug-in tests.test_bench) raised RuntimeError: kaput"
    )


def record(
    instance, method, objective, bound, status="feasible", cell=None, mode="relaxed", runtime=1.0
):
    return {
        "format": "optsched/bench-record@1",
        "key": f"{instance}/{method}/{mode}",
        "instance": instance,
        "cell": cell or {"jobs": 4},
        "instance_seed": 0,
        "method": method,
        "mode": mode,
        "seed": 0,
        "params": {},
        "status": status,
        "objective": objective,
        "bound": bound,
        "runtime_s": runtime,
    }


def test_gap_rows_by_hand():
    """Reference = best bound over all methods: i1 has 90 (from 'b'), i2 has 100 = optimum."""
    recs = [
        record("i1", "a", 100, 80),
        record("i1", "b", 95, 90),
        record("i2", "a", 125, 100),
        record("i2", "b", 100, 100, status="optimal"),
    ]
    cols, rows = gap_rows(recs)
    assert cols == ["jobs"]
    a, b = rows
    assert (a["method"], a["runs"], a["optimal"], a["reference"]) == ("a", 2, 0, "best bound")
    assert a["gap_mean"] == pytest.approx((0.1 + 0.2) / 2)
    assert a["gap_max"] == pytest.approx(0.2)
    # 95 % t-interval of {0.1, 0.2}: t(0.975, 1) = 12.706, sd = 0.0707, n = 2 -> ± 0.635,
    # which crosses 0: shown clipped at 0 and marked
    half = 12.7062 * 0.070711 / 2**0.5
    assert a["gap_ci_high"] == pytest.approx(0.15 + half, rel=1e-3)
    assert a["gap_ci_low"] == 0.0 and a["gap_ci_clipped"]
    assert a["obj_over_best"] == pytest.approx((100 / 95 + 125 / 100) / 2)
    assert b["optimal"] == 1 and b["gap_mean"] == pytest.approx((5 / 95 + 0) / 2)
    md = to_markdown(cols, rows)
    assert "| relaxed | 4 | a | 2 | 0/2 | 15.00 % [0.00 %*, 78.53 %] | 20.00 % | 1.1513 |" in md
    assert "clipped at 0" in md and "over these records;" in md
    assert r"15.00 \% [0.00 \%$^*$, 78.53 \%]" in to_latex(cols, rows)


def test_gap_rows_carry_fairness_and_tail_means():
    """Max ρ and p99 JCT: the mean over the runs whose records have them; – without."""
    with_metrics = [
        {**record("i1", "a", 100, 80), "metrics": {"max_rho": 1.5, "p99_jct": 40.0}},
        {**record("i2", "a", 120, 100), "metrics": {"max_rho": 2.5, "p99_jct": 60.0}},
        record("i1", "b", 95, 90),
    ]
    cols, (a, b) = gap_rows(with_metrics)
    assert a["max_rho_mean"] == pytest.approx(2.0) and a["p99_jct_mean"] == pytest.approx(50.0)
    assert b["max_rho_mean"] is None
    md = to_markdown(cols, [a, b])
    assert "| max ρ (mean) | p99 JCT (mean) |" in md and "| 2 | 50 |" in md
    assert "finish-time fairness ratio" in md


def test_a_manifest_s_best_bound_is_the_reference():
    """A bound proved in an earlier run, kept in the instance set's manifest, makes the gap
    a gap to the optimum; the table names the manifest."""
    from types import SimpleNamespace

    recs = [record("i1", "ect", 110, 80)]
    manifest = SimpleNamespace(
        path="set/manifest.json",
        instances={"i1": {"best": {"relaxed": {"objective": 100.0, "bound": 100.0}}}},
    )
    (_, (alone,)) = gap_rows(recs)
    cols, (row,) = gap_rows(recs, [manifest])
    assert alone["gap_mean"] == pytest.approx(30 / 110) and alone["reference"] == "best bound"
    assert row["gap_mean"] == pytest.approx(10 / 110) and row["reference"] == "optimum"
    assert row["obj_over_best"] == pytest.approx(1.1)
    assert "these records and set/manifest.json" in to_markdown(cols, [row], ["set/manifest.json"])


def test_each_mode_s_reference_takes_what_the_other_mode_proves(tmp_path):
    """A gang schedule is relaxed-feasible with the same objective and a relaxed bound bounds
    the gang optimum: the relaxed reference takes the better gang schedule, the gang one the
    better relaxed bound, never the other way round; the library page says where from."""
    from optsched.bench.library import library_markdown
    from optsched.bench.manifest import best_bound, best_objective
    from optsched.bench.report import references

    recs = [record("i1", "a", 110, 80), record("i1", "b", 100, 70, mode="gang")]
    ref = references(recs)
    assert (ref["i1", "relaxed"]["objective"], ref["i1", "relaxed"]["bound"]) == (100, 80)
    assert (ref["i1", "gang"]["objective"], ref["i1", "gang"]["bound"]) == (100, 80)
    # a relaxed run without a schedule (a bound alone, or none) takes the gang schedule
    ref = references([record("i1", "a", None, 80), recs[1], record("i2", "a", None, None)])
    assert ref["i1", "relaxed"]["objective"] == 100 and ref["i2", "relaxed"]["objective"] is None
    best = {
        "relaxed": {"objective": 110.0, "objective_by": {"method": "a"}, "bound": 80.0},
        "gang": {"objective": 100.0, "objective_by": {"method": "b"}, "bound": 70.0},
    }
    assert best_objective(best, "relaxed") == (100.0, {"method": "b"})
    assert best_objective(best, "gang")[0] == 100.0 and best_bound(best, "relaxed")[0] == 80.0
    worse = {**best, "gang": {**best["gang"], "objective": 120.0}}
    assert best_objective(worse, "relaxed")[0] == 110.0 and best_objective(worse, "gang")[0] == 120
    manifest = {
        "format": "optsched/manifest@1",
        "grid": "g",
        "instances": {"i1": {"file": "i1.json", "best": best}},
    }
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    page = library_markdown([tmp_path])
    assert "| i1 | relaxed | 100 | `b` (gang) | 80 | – | 20.00 % |" in page
    assert "| i1 | gang | 100 | `b` | 80 | – (relaxed) | 20.00 % |" in page


def test_placement_gaps_are_absolute():
    """Liquid's cost can be negative: a placement row's gap is cost − best bound."""
    recs = [
        record("p1", "bestfit", 2.0, None, mode="placement"),
        record("p1", "cpsat", -1.5, -1.5, status="optimal", mode="placement"),
    ]
    cols, rows = gap_rows(recs)
    best, exact = rows
    assert best["gap_kind"] == "absolute" and best["gap_mean"] == pytest.approx(3.5)
    assert exact["gap_mean"] == 0.0 and best["obj_over_best"] is None
    md = to_markdown(cols, rows)
    assert "| 3.5 |" in md and "Placement gaps are absolute" in md


def test_placement_manifests_and_parameters_are_kept_apart():
    """A placement set's manifest keeps its best values per cost form; a report finds them,
    and runs with other parameters (another cost form) are rows of their own."""
    from types import SimpleNamespace

    from optsched.bench.manifest import best_key

    paper = record("p1", "bestfit", 2.0, None, mode="placement")
    code = {
        **record("p1", "bestfit", 0.0, None, mode="placement"),
        "key": "p1/bestfit/code",
        "params": {"cost": "code"},
    }
    manifest = SimpleNamespace(
        path="ps/manifest.json",
        instances={"p1": {"best": {best_key(paper): {"objective": -1.5, "bound": -1.5}}}},
    )
    _, rows = gap_rows([paper, code], [manifest])
    by_method = {r["method"]: r for r in rows}
    assert by_method["bestfit"]["gap_mean"] == pytest.approx(3.5)
    assert by_method["bestfit"]["reference"] == "optimum"
    assert by_method["bestfit [cost=code]"]["gap_mean"] is None  # no bound for that form


def test_report_regenerates_from_records_alone(tiny_set, tmp_path):
    records = tmp_path / "r.jsonl"
    run_benchmark(
        plan(tiny_set, ["ect"], modes=["relaxed", "gang"]), records, workers=1, progress=None
    )
    written = write_report(load_records(records), tmp_path / "a")
    names = sorted(p.name for p in written)
    assert names == ["gaps.csv", "gaps.md", "gaps.png", "gaps.tex", "profile.png"]
    write_report(load_records(records), tmp_path / "b")
    for name in ("gaps.md", "gaps.csv", "gaps.tex"):
        assert (tmp_path / "a" / name).read_text() == (tmp_path / "b" / name).read_text()
    with pytest.raises(InputError, match="no records"):
        write_report([], tmp_path / "c")


def test_bench_cli_end_to_end(tmp_path, capsys):
    from optsched.cli import main

    folder = tmp_path / "set"
    assert main(["bench", "gen", str(TINY_GRID), "--out", str(folder)]) == 0
    assert main(["bench", "gen", str(TINY_GRID), "--out", str(folder)]) == 2
    rec = tmp_path / "r.jsonl"
    assert (
        main(
            [
                "bench",
                "run",
                str(folder),
                "--method",
                "ect",
                "--records",
                str(rec),
                "--workers",
                "1",
                "--seeds",
                "0",
                "1",
            ]
        )
        == 0
    )
    assert len(load_records(rec)) == 8
    only = tmp_path / "only.jsonl"
    first = sorted(load_records(rec), key=lambda r: r["instance"])[0]["instance"]
    assert (
        main(
            [
                "bench",
                "run",
                str(folder),
                "--method",
                "ect",
                "--records",
                str(only),
                "--workers",
                "1",
                "--only",
                first,
            ]
        )
        == 0
    )
    assert {r["instance"] for r in load_records(only)} == {first}
    assert (
        main(
            [
                "bench",
                "run",
                str(folder),
                "--method",
                "ect",
                "--records",
                str(only),
                "--only",
                "nothing-*",
            ]
        )
        == 2
    )
    assert (
        main(
            [
                "bench",
                "report",
                str(rec),
                "--out",
                str(tmp_path / "rep"),
                "--format",
                "md",
                "--no-plots",
            ]
        )
        == 0
    )
    assert sorted(p.name for p in (tmp_path / "rep").iterdir()) == ["gaps.md"]
    out = capsys.readouterr().out
    assert "8 runs finished (0 errors)" in out


def test_placement_grids_and_methods_run_through_the_runner(tmp_path):
    """A placement-family grid; place methods (kind place) run on it, cpsat meaning the
    exact placement there."""
    grid = Grid(
        "p", {"jobs_per_host": 0.5, "gpus_per_host": 2}, {"hosts": [4]}, (0,), family="placement"
    )
    manifest = generate_set(grid, tmp_path / "set")
    runs = plan(manifest, ["bestfit", "cpsat"], params={"cost": "code"})
    assert {r.mode for r in runs} == {"placement"}
    run_benchmark(runs, tmp_path / "r.jsonl", workers=1, manifest=manifest, progress=None)
    records = {r["method"]: r for r in load_records(tmp_path / "r.jsonl")}
    if records["cpsat"]["status"] != "optimal":
        assert_out_of_time(records["cpsat"])
    assert records["bestfit"]["objective"] >= records["cpsat"]["bound"] - 1e-9
    with pytest.raises(InputError, match="unknown placement method 'ect'"):
        plan(manifest, ["ect"])
    with pytest.raises(InputError, match="a placement set has no execution mode"):
        plan(manifest, ["bestfit"], modes=["gang"])


def test_placement_costs_may_be_negative_and_keep_their_own_best_per_cost_form(tmp_path):
    """The paper's placement cost has negative fitness terms: records and manifests accept
    negative costs, and the best values of the two cost forms are kept apart."""
    grid = Grid(
        "p", {"jobs_per_host": 0.5, "gpus_per_host": 4}, {"hosts": [4]}, (0,), family="placement"
    )
    manifest = generate_set(grid, tmp_path / "set")
    for cost in ("paper", "code"):
        runs = plan(manifest, ["gga", "cpsat"], params={"cost": cost}, time_limit=20)
        run_benchmark(runs, tmp_path / "r.jsonl", workers=1, manifest=manifest, progress=None)
    records = load_records(tmp_path / "r.jsonl")
    assert min(r["objective"] for r in records) < 0  # paper form: a negative optimum
    best = next(iter(Manifest.load(tmp_path / "set" / "manifest.json").instances.values()))
    paper, code = (
        best["best"][f"placement[cost={c},lambda=0.5,contention=0]"] for c in ("paper", "code")
    )
    by_cost = {c: [r for r in records if r["params"]["cost"] == c] for c in ("paper", "code")}
    assert paper["objective"] == min(r["objective"] for r in by_cost["paper"])
    assert code["objective"] == min(r["objective"] for r in by_cost["code"])
    assert paper["bound"] <= paper["objective"] + 1e-9 and code["bound"] <= code["objective"]


def test_each_method_s_own_bound_is_shown_beside_the_best():
    """A method's own bound (extra.bound_method) is measured against the best bound; a
    heuristic without one shows none; a placement's is absolute."""
    recs = [
        {**record("i1", "lp-bound", 110, 90), "extra": {"bound_method": 90.0}},
        {**record("i1", "cpsat", 100, 100, status="optimal"), "extra": {"bound_method": 100.0}},
        {**record("i1", "ect", 110, 80), "extra": {"bound_method": None}},
    ]
    cols, rows = gap_rows(recs)
    by_method = {r["method"]: r for r in rows}
    assert by_method["lp-bound"]["bound_below_best"] == pytest.approx(0.1)
    assert by_method["cpsat"]["bound_below_best"] == 0.0
    assert by_method["ect"]["bound_below_best"] is None
    md = to_markdown(cols, rows)
    assert "own bound below best" in md and "| 10.00 % |" in md
    placed = gap_rows(
        [
            record("p1", "cpsat", -1.5, -1.5, status="optimal", mode="placement"),
            record("p1", "gga", -1.0, -2.0, mode="placement"),
        ]
    )[1]
    assert {r["method"]: r["bound_below_best"] for r in placed} == {"cpsat": 0.0, "gga": 0.5}


def test_a_relaxed_bound_is_a_gang_bound():
    """The relaxed optimum is never above the gang optimum: a gang row's reference is the
    better of the two modes' bounds."""
    recs = [
        record("i1", "cpsat", 105, 100, mode="relaxed"),
        record("i1", "cpsat", 120, 90, mode="gang"),
    ]
    rows = {r["mode"]: r for r in gap_rows(recs)[1]}
    assert rows["gang"]["gap_mean"] == pytest.approx(20 / 120)
    assert rows["relaxed"]["gap_mean"] == pytest.approx(5 / 105)
