"""The command line: exit codes, --json contracts (validated by the shipped schemas)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from optsched.cli import main
from optsched.errors import MethodError
from tests.conftest import EXAMPLES, ROOT, assert_optimum

TOY = str(ROOT / "instances/hare-toy/hare-toy.instance.json")
FIG1 = str(ROOT / "instances/hare-toy/hare-fig1.schedule.json")


def schema(name):
    text = resources.files("optsched").joinpath("data", "schemas", f"{name}.schema.json")
    return json.loads(text.read_text("utf-8"))


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_accepts_the_paper_schedule(capsys):
    code, out, _ = run(capsys, "check", TOY, FIG1, "--json")
    report = json.loads(out)
    assert code == 0 and report["feasible"] and report["objective"] == 8.5
    assert report["violations"] == []


def test_check_rejects_with_exit_1_and_named_violations(capsys, tmp_path):
    sched = json.loads(Path(FIG1).read_text())
    sched["tasks"][1]["start"] = 0.5  # J1 round 1 on G3 [0.5, 1.5) hits J3 there at 1
    sched["tasks"].append({"job": "J9", "round": 0, "task": 0, "gpu": "G1", "start": 0})
    del sched["tasks"][0]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sched))
    code, out, _ = run(capsys, "check", TOY, str(path), "--json")
    report = json.loads(out)
    assert code == 1 and not report["feasible"] and report["objective"] is None
    kinds = {v["kind"] for v in report["violations"]}
    assert kinds == {"missing", "unknown-job", "overlap"}
    code, out, _ = run(capsys, "check", TOY, str(path))
    assert code == 1 and "missing: task ('J1', round 0, task 0) is not scheduled" in out


def test_a_text_verdict_lists_the_first_violations_and_counts_the_rest(capsys, tmp_path):
    from optsched.cli.common import PRINTED_VIOLATIONS

    sched = json.loads(Path(FIG1).read_text())
    extra = PRINTED_VIOLATIONS + 5
    sched["tasks"] += [
        {"job": f"X{i}", "round": 0, "task": 0, "gpu": "G1", "start": 0} for i in range(extra)
    ]
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sched))
    code, out, _ = run(capsys, "check", TOY, str(path))
    lines = out.splitlines()
    assert (
        code == 1 and sum(line.startswith("unknown-job:") for line in lines) == PRINTED_VIOLATIONS
    )
    assert "... and 5 more (--json lists every one)" in out
    assert f"{extra} violation(s)" in lines[-1]
    code, out, _ = run(capsys, "check", TOY, str(path), "--json")
    assert len(json.loads(out)["violations"]) == extra


@pytest.mark.parametrize(
    "content,match",
    [
        ("{", "malformed JSON"),
        ('{"format": "optsched/instance@9", "name": "x", "jobs": []}', "unknown format"),
        ('{"name": "x", "jobs": []}', "missing key 'format'"),
        (
            '{"format": "optsched/instance@1", "name": "x", "jobs": [], "extra": 1}',
            "unknown key 'extra'",
        ),
        (
            '{"format": "optsched/instance@1", "name": "x", "gpus": [{"id": "g", "type": "A"}], '
            '"jobs": [{"id": "J", "arrival": 0, "weight": 0, "rounds": 1, "tasks_per_round": 1, '
            '"compute": {"A": 1}}]}',
            "job 'J': weight must be",
        ),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    out_path = tmp_path / "out.json"
    code, _out, err = run(capsys, "solve", str(path), "--method", "ect", "--out", str(out_path))
    assert code == 2
    assert match in err and str(path) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out_path.exists()  # nothing half-written
    code, _, err = run(capsys, "check", str(path), FIG1)
    assert code == 2 and match in err


def test_unwritable_output_is_bad_input(capsys, tmp_path):
    code, _, err = run(capsys, "gen", "--seed", "1", "--out", str(tmp_path / "no/dir/x.json"))
    assert code == 2 and "no/dir' does not exist" in err and "--out" in err


def test_missing_file_and_usage_errors_exit_2(capsys):
    code, _, err = run(capsys, "check", "/nonexistent.json", FIG1)
    assert code == 2 and "cannot read" in err
    code, _, err = run(capsys, "solve", TOY)  # --method missing
    assert code == 2 and err.strip() == (
        "optsched solve: error: the following arguments are required: --method"
    )
    code, _, err = run(capsys, "solve", TOY, "--method", "nope")
    assert code == 2 and "unknown solve method 'nope'" in err and "--plugin" in err
    code, _, err = run(capsys, "solve", TOY, "--method", "cpsta")
    assert code == 2 and "did you mean 'cpsat'?" in err
    code, _, err = run(capsys, "solve", TOY, "--method", "ect", "--param", "x=1")
    assert code == 2 and "no parameter 'x'" in err
    code, _, err = run(capsys, "solve", TOY, "--method", "ect", "--param", "novalue")
    assert code == 2 and "KEY=VALUE" in err


@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_solve_json_matches_schema_and_out_checks(capsys, tmp_path, mode):
    out_path = tmp_path / "s.json"
    code, out, _ = run(
        capsys,
        "solve",
        str(EXAMPLES / "example-2.instance.json"),
        "--method",
        "ect",
        "--mode",
        mode,
        "--json",
        "--out",
        str(out_path),
        "--seed",
        "3",
    )
    result = json.loads(out)
    assert code == 0
    jsonschema.validate(result, schema("result"))
    assert result["status"] == "feasible" and result["seed"] == 3 and result["mode"] == mode
    assert result["bound"] <= result["objective"]
    written = json.loads(out_path.read_text())
    jsonschema.validate(written, schema("schedule"))
    code, out, _ = run(
        capsys, "check", str(EXAMPLES / "example-2.instance.json"), str(out_path), "--json"
    )
    assert code == 0 and json.loads(out)["objective"] == result["objective"]


def test_instances_and_schedules_match_schemas():
    for path in [*sorted(EXAMPLES.glob("*.instance.json")), ROOT / TOY]:
        jsonschema.validate(json.loads(path.read_text()), schema("instance"))
    for path in [*sorted(EXAMPLES.glob("*.schedule.json")), ROOT / FIG1]:
        jsonschema.validate(json.loads(path.read_text()), schema("schedule"))


def test_gen_then_solve(capsys, tmp_path):
    path = tmp_path / "g.json"
    code, out, _ = run(
        capsys,
        "gen",
        "--seed",
        "4",
        "--jobs",
        "6",
        "--gpus",
        "4",
        "--topology",
        "--rounds",
        "1",
        "2",
        "--out",
        str(path),
    )
    assert code == 0 and "6 jobs" in out
    data = json.loads(path.read_text())
    jsonschema.validate(data, schema("instance"))
    assert "topology" in data
    code, out, _ = run(capsys, "solve", str(path), "--method", "ect")
    assert code == 0 and ("status     feasible" in out or "status     optimal" in out)
    code, out, _ = run(
        capsys,
        "gen",
        "--seed",
        "4",
        "--jobs",
        "6",
        "--gpus",
        "4",
        "--topology",
        "--rounds",
        "1",
        "2",
    )
    assert json.loads(out) == data  # same seed, same instance
    code, _, err = run(capsys, "gen", "--seed", "1", "--gpus", "0")
    assert code == 2 and "gpus must be >= 1" in err


def test_methods_lists_every_kind(capsys):
    code, out, _ = run(capsys, "methods")
    assert code == 0 and "ect" in out and "simulate:" in out and "place:" in out
    code, out, _ = run(capsys, "methods", "--json")
    listed = {(m["kind"], m["name"]) for m in json.loads(out)}
    assert {("solve", "ect"), ("solve", "cpsat"), ("solve", "milp-cbc")} <= listed


def test_plot_writes_a_png(capsys, tmp_path):
    png = tmp_path / "g.png"
    code, _, _ = run(capsys, "plot", TOY, FIG1, "--out", str(png))
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    other = tmp_path / "other.json"  # another instance's schedule is refused, as check flags it
    other.write_text(Path(FIG1).read_text().replace('"hare-toy"', '"another"'))
    code, _, err = run(capsys, "plot", TOY, str(other), "--out", str(tmp_path / "h.png"))
    assert code == 2 and "for instance 'another', not 'hare-toy'" in err
    assert not (tmp_path / "h.png").exists()


def test_workloads_lists_provenance(capsys):
    code, out, _ = run(capsys, "workloads")
    assert code == 0 and "Hare/ResNet-50: K80 0.3s (assumed)" in out


def test_plugin_module_and_internal_error(capsys, tmp_path, monkeypatch):
    (tmp_path / "my_methods.py").write_text(
        "from optsched import register\n"
        "@register('explodes', description='raises', replace=True)\n"
        "def explodes(instance, context):\n"
        "    raise RuntimeError('boom\\nsecond line')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    code, _, err = run(capsys, "--plugin", "my_methods", "solve", TOY, "--method", "explodes")
    assert code == 70 and "RuntimeError: boom" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(MethodError) as info:
        main(["--debug", "--plugin", "my_methods", "solve", TOY, "--method", "explodes"])
    assert isinstance(info.value.__cause__, RuntimeError)
    code, _, err = run(capsys, "--plugin", "no_such_module_xyz", "methods")
    assert code == 2 and "cannot import plug-in module" in err


@pytest.mark.slow  # 9 s; CI's wheel check runs `optsched demo` from the installed wheel
def test_demo_console_script():
    exe = shutil.which("optsched") or f"{sys.executable} -m optsched.cli"
    proc = subprocess.run([*exe.split(), "demo"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "paper's schedule (Fig. 1)" in proc.stdout and "8.5" in proc.stdout
    # every row's gap is over its mode's best bound: CP-SAT's proved relaxed optimum, 8
    assert "5.9%" in proc.stdout.split("paper's schedule (Fig. 1)", 1)[1].splitlines()[0]
    assert "batch GGA" in proc.stdout and "liquid-demo" in proc.stdout


def test_solve_exact_methods_and_export(capsys, tmp_path):
    inst = str(EXAMPLES / "example-3.instance.json")
    code, out, _ = run(capsys, "solve", inst, "--method", "cpsat", "--json", "--mode", "gang")
    result = json.loads(out)  # nothing but the JSON on stdout
    jsonschema.validate(result, schema("result"))
    assert code == 0
    assert_optimum(result, 85)  # example-3's gang optimum
    model = tmp_path / "m.lp"
    code, out, _ = run(
        capsys, "solve", inst, "--method", "milp-highs", "--json", "--export", str(model)
    )
    assert code == 0 and model.stat().st_size > 0
    assert_optimum(json.loads(out), 83)  # its relaxed optimum
    code, _, err = run(capsys, "solve", inst, "--method", "cpsat", "--export", str(model))
    assert (
        code == 2
        and "--export: cpsat writes no model (those that do: milp-cbc, milp-highs)" in err
    )


def test_python_dash_m_runs_the_cli():
    proc = subprocess.run(
        [sys.executable, "-m", "optsched", "methods"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "hlas" in proc.stdout
    proc = subprocess.run(
        [sys.executable, "-m", "optsched", "nonsense"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and proc.stderr.startswith("optsched: error")


def test_gen_hare_keeps_the_papers_job_sizes_and_rate_for_any_number_of_jobs(tmp_path, capsys):
    """`gen --family hare --jobs 100` has the paper's 166.67 tasks per job and so its
    arrival rate of 0.898 jobs/s (it had 500 tasks per job and 0.30 jobs/s)."""
    from optsched.generate import HARE_TASKS_PER_JOB, HareSpec

    out = tmp_path / "h.json"
    code, _, _ = run(
        capsys, "gen", "--family", "hare", "--seed", "0", "--jobs", "100", "--out", str(out)
    )
    jobs = json.loads(out.read_text())["jobs"]
    tasks = sum(j["rounds"] * j["tasks_per_round"] for j in jobs)
    assert code == 0 and len(jobs) == 100 and abs(tasks / 100 - HARE_TASKS_PER_JOB) < 5
    assert (
        HareSpec(jobs=100, tasks_per_job=HARE_TASKS_PER_JOB).rate()
        == pytest.approx(HareSpec().rate())
        == pytest.approx(0.898, abs=1e-3)
    )


def test_solve_gives_the_gap_on_jct_where_arrivals_swamp_the_objective(capsys, tmp_path):
    """Arrivals at 10⁶ s: the gap on Σ w_j C_j is tiny, so a JCT gap line says the same
    distance over Σ w_j (C_j − a_j); arrivals near 0 get no such line."""
    data = json.loads(Path(TOY).read_text())
    for job in data["jobs"]:
        job["arrival"] = job.get("arrival", 0) + 1e6
    far = tmp_path / "far.json"
    far.write_text(json.dumps(data))
    code, out, _ = run(capsys, "solve", str(far), "--method", "ect", "--quiet")
    assert code == 0 and "JCT gap    22.22 %" in out  # (9 − 7) / 9, as at time 0
    code, out, _ = run(capsys, "solve", TOY, "--method", "ect", "--quiet")
    assert code == 0 and "JCT gap" not in out


def test_a_mode_the_instance_cannot_run_in_is_refused_naming_the_file(capsys, tmp_path):
    """A round wider than the cluster runs in relaxed mode but not in gang mode: refused
    with the file's name, as a load error is."""
    data = json.loads(Path(TOY).read_text())
    data["jobs"][0]["tasks_per_round"] = 4  # 3 GPUs
    wide = tmp_path / "wide.json"
    wide.write_text(json.dumps(data))
    for argv in (
        ("solve", str(wide), "--method", "ect", "--mode", "gang"),
        ("simulate", str(wide), "--policy", "fifo-perf"),  # a gang-only policy
        ("compare", str(wide), "--policy", "hlas", "--mode", "gang"),
    ):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith(f"optsched: error: {wide}: job ") and "gang" in err


def test_check_mode_checks_in_that_mode(capsys, tmp_path):
    """``check --mode gang`` checks a relaxed schedule as a gang one (its staggered rounds
    are violations there), not in the schedule's own mode."""
    out = tmp_path / "s.json"
    assert run(capsys, "solve", TOY, "--method", "ect", "--out", str(out), "--quiet")[0] == 0
    code, text, _ = run(capsys, "check", TOY, str(out))
    assert code == 0 and "(relaxed mode)" in text
    code, text, _ = run(capsys, "check", TOY, str(out), "--mode", "gang")
    assert code == 1 and "gang-start" in text and "(gang mode)" in text


def test_plot_by_type_writes_a_png_and_windows_need_it(capsys, tmp_path):
    png = tmp_path / "types.png"
    code, out, _ = run(capsys, "plot", TOY, FIG1, "--by-type", "--windows", "5", "--out", str(png))
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "wrote" in out
    code, _, err = run(
        capsys, "plot", TOY, FIG1, "--windows", "5", "--out", str(tmp_path / "a.png")
    )
    assert code == 2 and "--windows goes with --by-type" in err
    code, _, err = run(
        capsys, "plot", TOY, FIG1, "--by-type", "--windows", "0", "--out", str(tmp_path / "b.png")
    )
    assert code == 2 and "windows must be an integer in [1, 10000], got 0" in err
    assert not (tmp_path / "a.png").exists() and not (tmp_path / "b.png").exists()
