"""The promises of README "What optsched promises", driven through the command line.

Bad input is exit 2 with one line naming the culprit and no traceback; outputs are validated
before the work starts, written atomically and only when everything succeeded; devices, FIFOs
and symlinks are never replaced by regular files; an output never overwrites an input; JSON on
stdout is valid JSON (no NaN/Infinity). The benchmark runner, plug-ins, estimation and the
methods' time and size limits have their own files (tests/test_robustness_*.py); the checker's
translation invariance is in tests/test_check_tolerance.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from optsched.cli import main
from optsched.errors import InputError
from optsched.instance import Job
from optsched.schedule import Task
from tests.conftest import ROOT

TOY = ROOT / "instances/hare-toy/hare-toy.instance.json"
FIG1 = ROOT / "instances/hare-toy/hare-fig1.schedule.json"


def cli(*argv: object) -> tuple[int, str, str]:
    """Run the CLI in this process; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def strict_json(text: str) -> object:
    """Parse JSON as the standard defines it: NaN and Infinity are refused."""

    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def bad_input(code: int, err: str, *names: str) -> None:
    """Exit 2, one line, no traceback, naming every one of ``names``."""
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    for name in names:
        assert name in err, (name, err)


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def instance(**job: object) -> dict:
    base = {
        "id": "j",
        "arrival": 0,
        "weight": 1,
        "rounds": 1,
        "tasks_per_round": 1,
        "compute": {"A": 1.0},
    }
    return {
        "format": "optsched/instance@1",
        "name": "x",
        "gpus": [{"id": "g", "type": "A"}],
        "jobs": [{**base, **job}],
    }


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# -- 1. targets that are not plain files -----------------------------------------------------


def test_character_device_is_written_through_not_replaced():
    before = os.stat("/dev/null")
    code, _, err = cli("solve", TOY, "--method", "ect", "--out", "/dev/null")
    assert code == 0, err
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_full_device_is_bad_input_and_writes_no_sibling():
    code, _, err = cli("plot", TOY, FIG1, "--out", "/dev/full")
    bad_input(code, err, "/dev/full", "No space left")
    assert not Path("/dev/full.png").exists()


def test_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = cli("solve", TOY, "--method", "ect", "--out", fifo)
    reader.join(10)
    assert code == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert strict_json(got[0].decode())["format"] == "optsched/schedule@1"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux's /proc")
def test_a_pipe_behind_a_link_is_written_through():
    """``--out /dev/stdout`` into a pipe: the link resolves to ``/proc/PID/fd/pipe:[N]``,
    which does not exist, so the pipe is written through the path as given."""
    r, w = os.pipe()
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(os.fdopen(r, "rb").read()))
    reader.start()
    try:
        code, _, err = cli("solve", TOY, "--method", "ect", "--out", f"/proc/self/fd/{w}")
    finally:
        os.close(w)
        reader.join(10)
    assert code == 0, err
    assert strict_json(got[0].decode())["format"] == "optsched/schedule@1"


def test_a_target_name_as_long_as_a_folder_takes_is_written(tmp_path):
    """The temporary file beside a target of 255 characters gets a shorter name."""
    target = tmp_path / ("a" * 250 + ".json")
    code, _, err = cli("solve", TOY, "--method", "ect", "--out", target)
    assert code == 0, err
    assert strict_json(target.read_text())["format"] == "optsched/schedule@1"


def test_symlink_is_followed_and_kept(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    code, _, err = cli("solve", TOY, "--method", "ect", "--out", link)
    assert code == 0, err
    assert link.is_symlink() and strict_json(target.read_text())["instance"] == "hare-toy"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # an existing file keeps its mode


def test_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        code, _, err = cli("solve", TOY, "--method", "ect", "--out", tmp_path / "s.json")
    finally:
        os.umask(old)
    assert code == 0, err
    assert stat.S_IMODE((tmp_path / "s.json").stat().st_mode) == 0o640


@pytest.mark.parametrize(
    "argv",
    [
        ("solve", TOY, "--method", "ect", "--out", "{dir}"),
        ("gen", "--seed", "0", "--out", "{dir}"),
        ("plot", TOY, FIG1, "--out", "{dir}"),
        ("simulate", TOY, "--policy", "hlas", "--realised", "{dir}"),
    ],
)
def test_directory_target_is_refused(tmp_path, argv):
    code, _, err = cli(*(str(a).format(dir=tmp_path) for a in argv))
    bad_input(code, err, "is a directory", str(tmp_path))


def test_missing_folder_and_empty_path_are_refused(tmp_path):
    code, _, err = cli("gen", "--seed", "0", "--out", tmp_path / "no" / "x.json")
    bad_input(code, err, "--out", "does not exist")
    code, out, err = cli("gen", "--seed", "0", "--out", "")
    bad_input(code, err, "--out", "empty path")
    assert out == ""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_new_file_is_refused_before_the_work(monkeypatch):
    """``os.access`` says yes to root everywhere; the check creates a file there instead, so
    ``/proc`` (no new files, whoever asks) is refused before the work, and a write that
    fails later names the target, not its temporary file."""
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: True)  # as for root
    code, out, err = cli("solve", TOY, "--method", "ect", "--out", "/proc/s.json")
    bad_input(code, err, "--out '/proc/s.json'", "cannot write in folder '/proc'")
    assert out == ""
    from optsched.output import write_file

    with pytest.raises(OSError) as failed:
        write_file("/proc/s.json", "{}")
    assert failed.value.filename == "/proc/s.json"


# -- 2. output over input ----------------------------------------------------------------------


def test_output_over_input_is_refused(tmp_path):
    inst = tmp_path / "i.json"
    inst.write_bytes(TOY.read_bytes())
    sched = tmp_path / "s.json"
    sched.write_bytes(FIG1.read_bytes())
    before = snapshot(tmp_path)
    for argv, option in (
        (("solve", inst, "--method", "ect", "--out", inst), "--out"),
        (("solve", inst, "--method", "ect", "--hint", sched, "--out", sched), "--out"),
        (("simulate", inst, "--policy", "hlas", "--realised", inst), "--realised"),
        (("simulate", inst, "--policy", "hlas", "--out", tmp_path / "." / "i.json"), "--out"),
        (("plot", inst, sched, "--out", sched), "--out"),
    ):
        code, _, err = cli(*argv)
        bad_input(code, err, option, "input")
    p = tmp_path / "p.json"
    assert (
        cli(
            "gen",
            "--family",
            "placement",
            "--seed",
            "0",
            "--hosts",
            "3",
            "--jobs",
            "2",
            "--out",
            p,
        )[0]
        == 0
    )
    before = snapshot(tmp_path)
    code, _, err = cli("place", p, "--method", "bestfit", "--out", p)
    bad_input(code, err, "--out", "input")
    assert snapshot(tmp_path) == before


def test_two_outputs_naming_one_file_are_refused(tmp_path):
    code, _, err = cli(
        "simulate",
        TOY,
        "--policy",
        "hlas",
        "--out",
        tmp_path / "a.json",
        "--realised",
        tmp_path / "a.json",
    )
    bad_input(code, err, "--realised", "--out", "same file")
    assert not (tmp_path / "a.json").exists()


# -- 3. atomic writes: a kill leaves the old file or the new one, never a torn one -------------


@pytest.mark.parametrize("delay", [0.55, 0.7, 0.85, 1.0, 1.2])
def test_kill_during_write_leaves_old_or_complete_file(tmp_path, delay):
    """`solve --out` of a 50,000-task schedule (about 4 MB), SIGKILLed at various moments."""
    inst = tmp_path / "hare.json"
    assert cli("gen", "--family", "hare", "--seed", "0", "--out", inst)[0] == 0
    out = tmp_path / "s.json"
    out.write_text("old content")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "optsched.cli",
            "solve",
            str(inst),
            "--method",
            "ect",
            "--out",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    text = out.read_text()
    if text != "old content":
        jobs = strict_json(inst.read_text())["jobs"]
        tasks = sum(j.get("rounds", 1) * j.get("tasks_per_round", 1) for j in jobs)
        assert len(strict_json(text)["tasks"]) == tasks > 40000


# -- 4. no partial effects: every target is checked before the work starts ----------------------


def test_bad_second_output_leaves_the_first_untouched(tmp_path):
    first = tmp_path / "A.json"
    first.write_text("keep")
    code, _, err = cli(
        "simulate", TOY, "--policy", "hlas", "--out", first, "--cdf", tmp_path / "bad.xyz"
    )
    bad_input(code, err, "--cdf", ".xyz", "png")
    assert first.read_text() == "keep"
    code, _, err = cli(
        "simulate",
        TOY,
        "--policy",
        "hlas",
        "--out",
        first,
        "--realised",
        tmp_path / "missing" / "r.json",
    )
    bad_input(code, err, "--realised", "does not exist")
    assert first.read_text() == "keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["A.json"]  # no temporary left


def test_all_outputs_written_together(tmp_path):
    code, _, err = cli(
        "simulate",
        TOY,
        "--policy",
        "hlas",
        "--out",
        tmp_path / "s.json",
        "--realised",
        tmp_path / "r.json",
        "--cdf",
        tmp_path / "c.svg",
    )
    assert code == 0, err
    assert {p.name for p in tmp_path.iterdir()} == {"s.json", "r.json", "c.svg"}
    assert (tmp_path / "c.svg").read_text().lstrip().startswith("<?xml")


# -- 5. huge and non-finite values ---------------------------------------------------------------


@pytest.mark.parametrize(
    "job,names",
    [
        ({"compute": {"A": 1e308}}, ["compute['A']", "1e+15"]),
        ({"compute": {"A": 1e16}}, ["compute['A']"]),
        ({"arrival": 1.7e308}, ["arrival"]),
        ({"weight": 1e300}, ["weight"]),
        ({"sync": {"A": 1e300}}, ["sync['A']"]),
        ({"rounds": 10**18}, ["rounds"]),
        ({"rounds": 20000, "tasks_per_round": 20000}, ["tasks", "5,000,000"]),
        ({"compute": {"A": 5e-324}}, ["compute['A']", "1e-09"]),
        ({"weight": 5e-324}, ["weight"]),
        ({"rounds": 5_000_000, "compute": {"A": 1e9}}, ["one task after another", "1e+15"]),
    ],
)
def test_huge_values_are_bad_input_naming_the_field(tmp_path, job, names):
    path = write(tmp_path / "i.json", instance(**job))
    code, out, err = cli("solve", path, "--method", "ect", "--json")
    bad_input(code, err, "'j'", *names)
    assert out == ""


@pytest.mark.parametrize(
    "bandwidth,names", [(1e-300, ["edge 'g'-'h'", "bandwidth"]), (1e-9, ["'j'", "sync_bytes"])]
)
def test_sync_over_a_vanishing_link_is_bad_input(tmp_path, bandwidth, names):
    topo = {
        "directed": False,
        "multigraph": False,
        "graph": {},
        "nodes": [{"id": "g", "kind": "gpu", "gpu_type": "A"}, {"id": "h", "kind": "host"}],
        "edges": [{"source": "g", "target": "h", "bandwidth": bandwidth}],
    }
    data = instance(sync_bytes=1e15, ps="h")
    del data["gpus"]
    data["topology"] = topo
    code, _, err = cli("check", write(tmp_path / "i.json", data), FIG1)
    bad_input(code, err, *names)


def test_huge_start_in_a_schedule_is_bad_input(tmp_path):
    sched = json.loads(FIG1.read_text())
    sched["tasks"][0]["start"] = 1.7e308
    code, out, err = cli("check", TOY, write(tmp_path / "s.json", sched), "--json")
    bad_input(code, err, "start")
    assert out == ""


def test_json_never_holds_non_finite_numbers():
    from optsched.output import json_text

    for value in (
        float("nan"),
        float("inf"),
        -float("inf"),
        np.float32("nan"),
        np.float64("inf"),
        np.array([1.0, np.nan]),
    ):
        with pytest.raises(ValueError, match="non-finite"):
            json_text({"x": [value]})


def test_json_never_holds_numpy_types(tmp_path):
    """NumPy scalars and arrays (e.g. in a plug-in's extra fields or metrics) are written as
    the Python values they hold, in results and in benchmark records."""
    import json

    from optsched.bench.records import RecordWriter
    from optsched.output import json_text
    from optsched.result import Result, Status

    extra = {"n": np.int64(3), "x": np.float32(0.5), "ok": np.bool_(True), "v": np.array([1, 2])}
    result = Result(
        Status.FEASIBLE,
        method="m",
        mode="relaxed",
        objective=np.float64(2.5),
        bound=None,
        runtime_s=0.1,
        extra=extra,
    )
    data = json.loads(json_text(result.to_dict()))
    assert (data["n"], data["x"], data["ok"], data["v"], data["objective"]) == (
        3,
        0.5,
        True,
        [1, 2],
        2.5,
    )
    assert type(data["n"]) is int and type(data["ok"]) is bool
    with pytest.raises(TypeError, match="not JSON serialisable"):
        json_text({"x": object()})
    writer = RecordWriter(tmp_path / "r.jsonl")
    writer.write({"objective": np.float32(1.5), "seed": np.int64(2)})
    writer.close()
    assert json.loads((tmp_path / "r.jsonl").read_text()) == {"objective": 1.5, "seed": 2}


# -- 6. and 7. the culprit is named; nothing is silently accepted -------------------------------


def test_unknown_cluster_type_is_named():
    trace = ROOT / "tests/data/traces/gavel10.trace"
    code, _, err = cli("simulate", trace, "--policy", "fifo", "--cluster", "X100:4")
    bad_input(code, err, "--cluster", "'X100'")


@pytest.mark.parametrize(
    "argv,names",
    [
        (("--switch-cost", "1e308"), ["--switch-cost"]),
        (("--switch-cost", "nan"), ["--switch-cost"]),
        (("--noise", "inf"), ["--noise"]),
        (("--tick", "inf"), ["--tick"]),
    ],
)
def test_simulation_options_are_named(argv, names):
    code, _, err = cli("simulate", TOY, "--policy", "hlas", *argv)
    bad_input(code, err, *names)


@pytest.mark.parametrize("quantum", ["inf", "nan", "0", "-5", "1e-300"])
def test_trace_quantum_is_checked(quantum):
    """1e-300 s quanta would make a duration trace's jobs astronomically many rounds."""
    trace = ROOT / "tests/data/traces/tiresias.csv"
    code, _, err = cli(
        "simulate", trace, "--policy", "hlas", "--cluster", "V100:4", "--quantum", quantum
    )
    bad_input(code, err, "--quantum")


def _placement(tmp_path: Path) -> tuple[Path, dict]:
    p = tmp_path / "p.json"
    assert (
        cli(
            "gen",
            "--family",
            "placement",
            "--seed",
            "0",
            "--hosts",
            "3",
            "--jobs",
            "2",
            "--out",
            p,
        )[0]
        == 0
    )
    return p, json.loads(p.read_text())


def test_placement_busy_must_be_a_boolean(tmp_path):
    p, data = _placement(tmp_path)
    gpu = next(n for n in data["topology"]["nodes"] if n.get("kind") == "gpu")
    gpu["busy"] = "no"
    code, _, err = cli("place", write(p, data), "--method", "bestfit")
    bad_input(code, err, repr(gpu["id"]), "busy", "'no'")


def test_placement_for_another_instance_is_a_violation(tmp_path):
    p, _ = _placement(tmp_path)
    out = tmp_path / "pl.json"
    assert cli("place", p, "--method", "bestfit", "--out", out)[0] == 0
    placement = json.loads(out.read_text())
    placement["instance"] = "another"
    code, stdout, _ = cli("check", p, write(out, placement), "--json")
    assert code == 1 and [v["kind"] for v in strict_json(stdout)["violations"]] == ["instance"]
    placement["instance"] = {"name": "x"}
    code, _, err = cli("check", p, write(out, placement))
    bad_input(code, err, "instance")


def test_duplicate_topology_nodes_are_refused(tmp_path):
    p, data = _placement(tmp_path)
    data["topology"]["nodes"].append(dict(data["topology"]["nodes"][0]))
    code, _, err = cli("place", write(p, data), "--method", "bestfit")
    bad_input(code, err, "twice", repr(data["topology"]["nodes"][0]["id"]))


# -- 9. plot formats ------------------------------------------------------------------------------


def test_plot_format_is_bad_input_listing_the_supported(tmp_path):
    code, _, err = cli("plot", TOY, FIG1, "--out", tmp_path / "x.xyz")
    bad_input(code, err, "x.xyz", "png", "svg", "pdf")
    assert not list(tmp_path.iterdir())


def test_plot_without_extension_writes_png_to_exactly_that_path(tmp_path):
    code, out, err = cli("plot", TOY, FIG1, "--out", tmp_path / "gantt")
    assert code == 0, err
    assert (tmp_path / "gantt").read_bytes().startswith(b"\x89PNG")
    assert [p.name for p in tmp_path.iterdir()] == ["gantt"]
    assert f"wrote {tmp_path / 'gantt'} (PNG)" in out


# -- every command: arbitrary values in an instance never crash the CLI --------------------------

# integers: small ones and the edges of every bound (large but accepted sizes would only
# make the test slow, not stronger), and integers beyond float range
INTEGERS = st.integers(-3, 5) | st.sampled_from(
    [
        10**8,
        10**8 + 1,
        10**9,
        2**31,
        2**63,
        10**15,
        10**15 + 1,
        10**20,
        -(10**20),
        10**308,
        10**400,
        -(10**400),
    ]
)
# text: any, and text that is not Unicode (a lone surrogate: "\ud800" in JSON)
TEXT = st.text(max_size=4) | st.sampled_from(["\ud800", "x\udfff"])
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    INTEGERS,
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(TEXT, INTEGERS, max_size=2),
)
FIELDS = [
    "arrival",
    "weight",
    "rounds",
    "tasks_per_round",
    "compute",
    "sync",
    "launch",
    "iters_per_task",
    "id",
    "workload",
    "sync_bytes",
]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    field=st.sampled_from(FIELDS),
    value=VALUES,
    command=st.sampled_from(["solve", "simulate", "check"]),
)
def test_any_value_in_any_field_is_a_clean_answer(tmp_path, field, value, command):
    data = json.loads(TOY.read_text())
    data["jobs"][0][field] = value
    if field == "compute" and isinstance(value, dict):
        data["jobs"][0]["compute"] = {**value, "V100": 1.0}
    path = write(tmp_path / "i.json", data)
    argv = {
        "solve": ("solve", path, "--method", "ect", "--json"),
        "simulate": ("simulate", path, "--policy", "hlas", "--json"),
        "check": ("check", path, FIG1, "--json"),
    }[command]
    code, out, err = cli(*argv)
    assert code in (0, 1, 2), err
    if code == 2:
        bad_input(code, err)
    else:
        strict_json(out)


# -- parameter values are checked before any work ------------------------------------------------


@pytest.mark.parametrize(
    "method,param,names",
    [
        ("cpsat", "time_unit=1e308", ["time_unit", "1e308"]),
        ("cpsat", "time_unit=1e14", ["time_unit", "coarser"]),
        ("lp-bound", "time_unit=1e308", ["time_unit"]),
        ("hare", "time_unit=1e308", ["time_unit"]),
        ("cpsat", "workers=abc", ["workers", "'abc'"]),
        ("cpsat", "objective=fastest", ["objective", "'fastest'"]),
        ("hare-lp", "interval_ratio=0.5", ["interval_ratio"]),
        ("milp-highs", "export=model.txt", ["export", ".lp or .mps"]),
    ],
)
def test_bad_parameter_values_are_named(method, param, names):
    code, _, err = cli("solve", TOY, "--method", method, "--param", param)
    bad_input(code, err, *names)


def test_milp_export_is_atomic_and_never_over_an_input(tmp_path):
    inst = tmp_path / "i.json"
    inst.write_bytes(TOY.read_bytes())
    code, _, err = cli("solve", inst, "--method", "milp-highs", "--export", inst)
    bad_input(code, err, "--export", "input")
    model = tmp_path / "m.lp"
    code, _, err = cli("solve", inst, "--method", "milp-highs", "--export", model)
    assert code == 0, err
    assert model.read_text().startswith("\\* optsched_disjunctive *\\")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.json", "m.lp"]


def test_bench_run_refuses_bad_parameter_values_before_running(tmp_path):
    folder = tmp_path / "set"
    assert cli("bench", "gen", ROOT / "benchmarks/grids/tiny.json", "--out", folder)[0] == 0
    records = tmp_path / "r.jsonl"
    for method, param in (
        ("cpsat", "workers=abc"),
        ("hlas", "mapping=Z"),
        ("hlas", "thresholds=abc"),
    ):
        code, _, err = cli(
            "bench", "run", folder, "--method", method, "--param", param, "--records", records
        )
        bad_input(code, err, param.split("=")[0])
        assert not records.exists()


def test_a_plugin_input_error_is_named_and_kept_to_one_short_line():
    """A plug-in building a malformed Schedule (here: tasks passed as the mode) gets its
    name in the message, and a huge message is cut to one line of 500 characters."""
    from optsched.registry import register
    from optsched.schedule import Schedule, Task

    @register("test-malformed", description="passes tasks as the mode", replace=True)
    def malformed(instance, context):
        tasks = tuple(Task("J1", 0, k, "G1", float(k)) for k in range(200))
        return Schedule(instance.name, (), tasks)

    code, _, err = cli("solve", TOY, "--method", "test-malformed")
    bad_input(
        code,
        err,
        "method 'test-malformed' (plug-in tests.test_robustness)",
        "schedule mode must be one of",
    )
    assert len(err.strip()) <= len("optsched: error: ") + 500


@settings(deadline=None)
@given(
    field=st.sampled_from(
        [
            "arrival",
            "weight",
            "rounds",
            "tasks_per_round",
            "compute",
            "sync",
            "iters_per_task",
            "id",
            "sync_bytes",
        ]
    ),
    value=VALUES,
)
def test_any_value_in_a_job_field_is_accepted_or_an_input_error_naming_it(field, value):
    """The Python API refuses what files are refused for (10**400 included) with an
    InputError naming the field, never another exception."""
    job = {"id": "j", "compute": {"A": 1.0}, field: value}
    if field == "iters_per_task":
        job |= {"compute": None, "workload": "Hare/VGG-19"}
    try:
        Job(**job)
    except InputError as exc:
        assert field in str(exc), exc


@settings(deadline=None)
@given(field=st.sampled_from(["start", "train_start", "failed_at", "round", "task"]), value=VALUES)
def test_any_value_in_a_task_field_is_accepted_or_an_input_error_naming_it(field, value):
    task = {"job": "j", "round": 0, "task": 0, "gpu": "g", "start": 0.0, field: value}
    try:
        Task(**task)
    except InputError as exc:
        assert field in str(exc), exc


# -- numbers beyond float range, bytes that are not UTF-8, text that is not Unicode ---------

TRACES = ROOT / "tests/data/traces"


def _edit(path: Path, change) -> Path:
    """``path``'s JSON changed by ``change`` (in place), written back."""
    data = json.loads(path.read_text())
    change(data)
    return write(path, data)


@pytest.mark.parametrize("field", ["weight", "arrival", "compute"])
def test_an_instance_integer_beyond_float_range_is_bad_input(tmp_path, field):
    value = {"A": 10**400} if field == "compute" else 10**400
    path = write(tmp_path / "i.json", instance(**{field: value}))
    code, _, err = cli("solve", path, "--method", "ect")
    bad_input(code, err, "i.json", f"jobs[0].{field}", "401-digit")


def test_a_schedule_start_beyond_float_range_is_bad_input(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(FIG1.read_text())
    _edit(path, lambda d: d["tasks"][0].update(start=10**400))
    code, _, err = cli("check", TOY, path)
    bad_input(code, err, "s.json", "tasks[0].start")


@pytest.mark.parametrize("field", ["gpus", "cpus", "memory"])
def test_a_container_size_beyond_float_range_is_bad_input(tmp_path, field):
    p, _ = _placement(tmp_path)
    _edit(p, lambda d: d["jobs"][0]["containers"][0].update({field: 10**400}))
    code, _, err = cli("place", p, "--method", "bestfit")
    bad_input(code, err, "p.json", f"jobs[0].containers[0].{field}")


def test_integers_beyond_float_range_are_input_errors_in_python_too():
    from optsched.limits import is_bounded
    from optsched.placement.model import Container

    assert not is_bounded(10**400) and not is_bounded(-(10**400))
    for build, field in (
        (lambda: Task("j", 0, 0, "g", 10**400), "start"),
        (lambda: Job("j", weight=10**400, compute={"A": 1}), "weight"),
        (lambda: Job("j", compute={"A": 10**400}), "compute"),
        (lambda: Container("c", "ps", cpus=10**400), "cpus"),
    ):
        with pytest.raises(InputError, match=field):
            build()


def test_an_integer_literal_too_long_for_python_is_bad_input(tmp_path):
    path = tmp_path / "i.json"
    path.write_text(
        json.dumps(instance(), indent=1).replace('"weight": 1', '"weight": 1' + "0" * 5000)
    )
    code, _, err = cli("solve", path, "--method", "ect")
    bad_input(code, err, "i.json", "line 14", "digits")


@pytest.mark.parametrize("command", ["plot", "solve", "check"])
def test_a_lone_surrogate_in_an_id_is_bad_input(tmp_path, command):
    """A JSON ``"\\ud800"`` is no Unicode text: refused as it is read, naming where."""
    path = write(tmp_path / "i.json", instance(id="\ud800"))
    assert "\\ud800" in path.read_text()
    argv = {
        "plot": ("plot", path, FIG1, "--out", tmp_path / "g.png"),
        "solve": ("solve", path, "--method", "ect", "--out", tmp_path / "s.json"),
        "check": ("check", path, FIG1),
    }[command]
    code, out, err = cli(*argv)
    bad_input(code, err, "i.json", "jobs[0].id", "\\ud800")
    assert out == "" and not (tmp_path / "g.png").exists()


def test_surrogate_keys_are_refused_and_pairs_accepted(tmp_path):
    path = write(tmp_path / "i.json", instance(compute={"\udc00": 1.0, "A": 1.0}))
    bad_input(*cli("check", path, FIG1)[::2], "jobs[0].compute", "\\udc00")
    path = write(tmp_path / "i.json", instance(id="job 😀"))  # written as a surrogate pair
    assert "\\ud83d\\ude00" in path.read_text()
    out = tmp_path / "s.json"
    code, _, err = cli("solve", path, "--method", "ect", "--out", out)
    assert code == 0, err
    assert json.loads(out.read_text())["tasks"][0]["job"] == "job 😀"


def test_a_path_in_non_utf8_bytes_is_printed_as_those_bytes(tmp_path):
    """On a stdout that refuses surrogates too, ``wrote PATH`` prints the path's bytes."""
    out = os.fsencode(tmp_path) + b"/g\xff.png"
    raw = io.BytesIO()
    stdout = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    with contextlib.redirect_stdout(stdout):
        code = main(["plot", str(TOY), str(FIG1), "--out", os.fsdecode(out)])
    stdout.flush()
    assert code == 0 and out in raw.getvalue()


TIRESIAS = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n"
PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n"


@pytest.mark.parametrize(
    "name,content,names",
    [
        (
            "t.trace",
            (TRACES / "gavel10.trace").read_bytes().replace(b"A3C", b"A3C\xff"),
            ["t.trace:2", "not UTF-8", "0xff"],
        ),
        (
            "t.csv",
            (TIRESIAS + "0,1,10,606,vgg19,7200,30\n1,4,40\n").encode(),
            ["t.csv:3", "3 fields", "header has 7"],
        ),
        ("t.csv", (PHILLY + "2017-10-09 07:01:55,66.0\n").encode(), ["t.csv:2", "2 fields"]),
        (
            "t.csv",
            (TIRESIAS + '0,1,10,606,"vgg19,7200,30\n1,4,40,133,vgg11,1800,23\n').encode(),
            ["t.csv:2", "malformed CSV"],
        ),
        (
            "t.csv",
            (PHILLY + "2017-10-09 07:01:55,66.0,1,66.0," + "x" * 200_000 + "\n").encode(),
            ["t.csv:2", "malformed CSV", "field limit"],
        ),
        (
            "t.csv",
            (TIRESIAS + "0,1,10,606,vgg19,7200,30\n").encode("utf-16"),
            ["t.csv:1", "not UTF-8"],
        ),
    ],
)
def test_a_malformed_trace_is_bad_input_naming_file_and_line(tmp_path, name, content, names):
    path = tmp_path / name
    path.write_bytes(content)
    code, _, err = cli("simulate", path, "--policy", "hlas", "--cluster", "V100:4")
    bad_input(code, err, *names)


@pytest.mark.parametrize(
    "name,content,names",
    [
        (
            "t.trace",
            "A3C\tpython3 main.py\trl\t--max-steps\t0\t100\t1e18\t1\t-1\t12.5\n",
            ["t.trace:1", "scale_factor", "5,000,000"],
        ),
        (
            "t.trace",
            "A3C\tpython3 main.py\trl\t--max-steps\t0\t1e300\t1\t1\t-1\t12.5\n",
            ["t.trace:1", "steps"],
        ),
        ("t.csv", TIRESIAS + "0,1e18,10,606,vgg19,7200,30\n", ["t.csv:2", "num_gpu"]),
        ("t.csv", PHILLY + "2017-10-09 07:01:55,66.0,1e18,66.0,c\n", ["t.csv:2", "num_gpus"]),
    ],
)
def test_a_trace_job_beyond_the_instance_limits_is_refused_as_it_is_read(
    tmp_path, name, content, names
):
    """A scale factor of 1e18 made ``simulate`` loop over every k < K."""
    from optsched.traces import read_trace

    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=names[1]):
        read_trace(path)
    code, _, err = cli("simulate", path, "--policy", "hlas", "--cluster", "V100:4")
    bad_input(code, err, *names)


@pytest.mark.parametrize(
    "command,method,param",
    [
        ("solve", "cpsat", "workers"),
        ("solve", "lns", "workers"),
        ("solve", "hare", "workers"),
        ("solve", "milp-highs", "threads"),
        ("place", "cpsat", "workers"),
    ],
)
def test_a_thread_count_beyond_max_threads_is_refused(tmp_path, command, method, param):
    target = _placement(tmp_path)[0] if command == "place" else TOY
    code, _, err = cli(command, target, "--method", method, "--param", f"{param}={10**15}")
    bad_input(code, err, param, "at most 256", str(10**15))


def test_every_thread_count_of_every_method_is_bounded():
    """Whatever declares it (a plug-in too), a ``workers`` or ``threads`` count takes
    MAX_THREADS and refuses one more before any work."""
    from optsched.options import MAX_THREADS
    from optsched.registry import methods

    counted = 0
    for info in methods():
        for key in set(info.options.keys()) & {"workers", "threads"}:
            assert getattr(info.options.parse({key: str(MAX_THREADS)}), key) == MAX_THREADS
            with pytest.raises(InputError, match=f"{key} must be at most {MAX_THREADS}"):
                info.options.parse({key: str(MAX_THREADS + 1)})
            counted += 1
    assert counted >= 8


def test_capacity_bound_refuses_absurd_interval_counts():
    code, _, err = cli(
        "solve", TOY, "--method", "capacity-bound", "--param", f"intervals={10**15}"
    )
    bad_input(code, err, "intervals")


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, max_examples=30
)
@given(
    file=st.sampled_from(
        [TOY, FIG1, TRACES / "gavel10.trace", TRACES / "tiresias.csv", TRACES / "philly.csv"]
    ),
    at=st.floats(0, 1),
    blob=st.sampled_from(
        [b"\xff", b"\x80", b"\xc3", b"\xed\xa0\x80", b"\x00", b'"', b"\xef\xbb\xbf"]
    )
    | st.binary(min_size=1, max_size=3),
)
def test_any_bytes_in_an_input_file_are_a_clean_answer(tmp_path, file, at, blob):
    """Bytes that are not UTF-8 (or break the format) anywhere in an instance, schedule or
    trace: a result or exit 2 naming the file, never an internal error."""
    data = file.read_bytes()
    cut = int(at * len(data))
    path = tmp_path / file.name
    path.write_bytes(data[:cut] + blob + data[cut:])
    argv = {TOY: ("check", path, FIG1), FIG1: ("check", TOY, path)}.get(
        file, ("simulate", path, "--policy", "hlas", "--cluster", "V100:4")
    )
    code, _, err = cli(*argv)
    assert code in (0, 1, 2), err
    if code == 2:
        bad_input(code, err)
