"""Robustness of ``optsched bench gen|run|report`` against bad input, kills and interrupts.

Every refusal is exit 2 with one line ``optsched: error: ...`` naming the culprit, no
traceback, and no file changed. Kill and interrupt tests drive a real ``bench run``
subprocess, stop it after its first record, check that no worker outlives it, resume, and
check that every run is recorded exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optsched.bench import grid as grid_module
from optsched.bench.grid import Grid, generate_set, load_grid
from optsched.bench.records import RecordWriter, load_records, run_key
from optsched.bench.report import write_report
from optsched.bench.runner import execute, plan, run_benchmark
from optsched.cli import main
from optsched.errors import InputError
from tests.conftest import ROOT

TINY_GRID = ROOT / "benchmarks" / "grids" / "tiny.json"
LINUX = sys.platform.startswith("linux")

PLUGIN = """
import os
import sys
import time

from optsched.ect import ect_schedule
from optsched.contracts import MethodOutput
from optsched.registry import register


@register("rb-exit", description="sys.exit on 3-job instances", replace=True)
def rb_exit(instance, context):
    if instance.n_jobs == 3:
        sys.exit(3)
    return MethodOutput(schedule=ect_schedule(instance))


@register("rb-osexit", description="os._exit on 3-job instances", replace=True)
def rb_osexit(instance, context):
    if instance.n_jobs == 3:
        os._exit(7)
    return MethodOutput(schedule=ect_schedule(instance))


@register("rb-hang", description="ignores its time limit on 3-job instances", replace=True)
def rb_hang(instance, context):
    while instance.n_jobs == 3:
        time.sleep(1)
    return MethodOutput(schedule=ect_schedule(instance))


@register("rb-gate", description="ECT; every run but the first waits for a file 'open' beside "
          "this module", replace=True)
def rb_gate(instance, context):
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # the first run (in any worker) creates 'first' and returns at once
        os.close(os.open(os.path.join(here, "first"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        while not os.path.exists(os.path.join(here, "open")):
            time.sleep(0.05)
    return MethodOutput(schedule=ect_schedule(instance))


@register("rb-nan", description="a NaN in extra", replace=True)
def rb_nan(instance, context):
    return MethodOutput(schedule=ect_schedule(instance), extra={"x": float("nan")})
"""


# -- helpers ---------------------------------------------------------------------------------


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones included) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def refused(code: int, err: str, *needles: str) -> None:
    """Exit 2, one line ``optsched: error: ...`` containing every needle, no traceback."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("optsched: error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def run_main(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def env(*paths: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *map(str, paths)])}


def cli(
    *argv: str, extra_path: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "optsched.cli", *argv],
        env=env(*([extra_path] if extra_path else [])),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a live process, None once it is gone or a zombie."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, ppid = text.rsplit(")", 1)[1].split()[:2]
    return None if state in "ZX" else (state, int(ppid))


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = proc_stat(int(entry.name))
            if stat is not None and stat[1] == pid:
                out.append(int(entry.name))
    return out


def holders(path: Path) -> list[int]:
    """Live processes with ``path`` open."""
    real = os.path.realpath(path)
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or proc_stat(int(entry.name)) is None:
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) == real:
                    out.append(int(entry.name))
                    break
            except OSError:
                continue
    return out


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if proc_stat(p) is not None]
        time.sleep(0.05)
    return alive


def start_runner(
    records: Path, folder: Path, plugins: Path, *extra: str, group: bool = False
) -> subprocess.Popen[str]:
    argv = [
        sys.executable,
        "-m",
        "optsched.cli",
        "--plugin",
        "rbplug",
        "bench",
        "run",
        str(folder),
        "--records",
        str(records),
        *extra,
    ]
    return subprocess.Popen(
        argv,
        env=env(plugins),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=group,
    )


def wait_records(records: Path, n: int = 1, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if records.exists() and len(load_records(records)) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {n} records in {timeout} s")


def exactly_once(
    records: Path,
    folder: Path,
    method: str,
    modes=("relaxed",),
    seeds=(0,),
    time_limit: float | None = None,
) -> None:
    """Every run of ``method`` on the set is recorded, none twice (a plug-in method's keys
    end with its code's hash, which is left out here)."""
    keys = [r["key"] for r in load_records(records)]
    assert len(keys) == len(set(keys)), "a run was recorded twice"
    expected = [
        run_key(name, method, mode, seed, {}, time_limit)
        for name in load_manifest(folder).instances
        for mode in modes
        for seed in seeds
    ]
    assert sorted(json.dumps(json.loads(k)[:6], separators=(",", ":")) for k in keys) == sorted(
        expected
    )


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    """A folder holding the plug-in module ``rbplug`` (methods rb-*)."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "rbplug.py").write_text(PLUGIN)
    return folder


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    generate_set(load_grid(TINY_GRID), tmp_path / "set")
    return tmp_path / "set"


def write_grid(tmp_path: Path, **fields) -> Path:
    data = {
        "format": "optsched/grid@1",
        "name": "g",
        "generator": {},
        "vary": {"jobs": [2]},
        "seeds": [0],
        **fields,
    }
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(data))
    return path


# -- bench gen -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields,needles",
    [
        (
            {"family": "placement", "vary": {"gpu_type": ["../../evil"]}},
            ["vary['gpu_type']", "../../evil"],
        ),
        ({"family": "placement", "vary": {"gpu_type": ["a/b"]}}, ["vary['gpu_type']", "a/b"]),
        ({"name": "../x"}, ["grid name", "../x"]),
        ({"name": "a/b"}, ["grid name"]),
        ({"seeds": [True]}, ["seeds", "True"]),
        ({"seeds": ["1"]}, ["seeds", "'1'"]),
        ({"seeds": [0, 0]}, ["seeds lists 0 twice"]),
        ({"seeds": [2**31]}, ["seeds", "2147483648"]),
        (
            {"generator": {"rounds": [1, 1_000_000]}, "vary": {"jobs": [200]}},
            ["jobs': 200", "tasks", "cap"],
        ),
        ({"seeds": 5}, ["'seeds' must be a list"]),
        ({"vary": {"jobs": [2.0]}}, ["vary['jobs']", "integer", "2.0"]),
        ({"vary": {"jobs": [True]}}, ["vary['jobs']", "integer"]),
        ({"vary": {"jobs": [2, 2]}}, ["vary['jobs'] lists '2' twice"]),
        ({"vary": {"jobs": 2}}, ["vary['jobs'] must be a non-empty list"]),
        ({"generator": []}, ["'generator' must be an object"]),
        ({"generator": {"rounds": [1]}}, ["generator['rounds']", "list of 2"]),
        ({"generator": {"integer": 1}}, ["generator['integer']", "true or false"]),
        ({"generator": {"load": "high"}}, ["generator['load']", "number"]),
        ({"vary": {"jobs": [1_000_000_000]}}, ["jobs': 1000000000", "1e+09 jobs", "cap"]),
        ({"family": "liquid", "vary": {}, "generator": {"predict_from": 10**8}}, ["1e+08", "cap"]),
        (
            {"vary": {"jobs": list(range(2, 1002))}, "seeds": list(range(1000))},
            ["1000000 instances", "cap"],
        ),
        ({"vary": {"jobs": [900]}, "seeds": list(range(30_000))}, ["jobs + GPUs in", "cap"]),
    ],
)
def test_gen_refuses_bad_grids_before_writing(tmp_path, capsys, fields, needles):
    path = write_grid(tmp_path, **fields)
    before = snapshot(tmp_path)
    code, _, err = run_main(capsys, "bench", "gen", str(path), "--out", str(tmp_path / "o"))
    refused(code, err, str(path), *needles)
    assert snapshot(tmp_path) == before and not (tmp_path / "o").exists()


def test_gen_names_stay_inside_the_output_folder(tmp_path):
    grid = Grid("g", {}, {"gpu_type": ["T4", "A-100_x.1+"]}, (0, 7), family="placement")
    manifest = generate_set(grid, tmp_path / "out")
    files = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert files == sorted(
        [
            "grid.json",
            "manifest.json",
            "g-gpu_typeT4-s0.json",
            "g-gpu_typeT4-s7.json",
            "g-gpu_typeA-100_x.1+-s0.json",
            "g-gpu_typeA-100_x.1+-s7.json",
        ]
    )
    assert manifest.path == tmp_path / "out" / "manifest.json"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary left


def test_gen_output_folder_rules(tmp_path, capsys):
    # a folder of other files is refused and left alone
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    code, _, err = run_main(capsys, "bench", "gen", str(TINY_GRID), "--out", str(other))
    refused(code, err, "'" + str(other) + "'", "other files")
    assert snapshot(other) == {"notes.txt": b"mine"}
    # a file is refused
    code, _, err = run_main(
        capsys, "bench", "gen", str(TINY_GRID), "--out", str(other / "notes.txt")
    )
    refused(code, err, "notes.txt", "not a folder")
    # an empty folder and a missing nested one are fine
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["bench", "gen", str(TINY_GRID), "--out", str(empty)]) == 0
    assert len(list(empty.iterdir())) == 6
    assert main(["bench", "gen", str(TINY_GRID), "--out", str(tmp_path / "a" / "b")]) == 0
    # a set is never regenerated in place, whatever its grid
    before = snapshot(empty)
    code, _, err = run_main(capsys, "bench", "gen", str(write_grid(tmp_path)), "--out", str(empty))
    refused(code, err, "manifest.json exists", "never regenerated")
    assert snapshot(empty) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "empty", "grid.json", "other"]


@pytest.mark.parametrize("error", [RuntimeError("disk on fire"), KeyboardInterrupt()])
def test_gen_failure_midway_leaves_nothing(tmp_path, monkeypatch, error):
    spec, real = grid_module.FAMILIES["exact"]
    made = []

    def flaky(spec, seed, *, name):
        if len(made) == 2:
            raise error
        made.append(name)
        return real(spec, seed, name=name)

    monkeypatch.setitem(grid_module.FAMILIES, "exact", (spec, flaky))
    with pytest.raises(type(error)):
        generate_set(load_grid(TINY_GRID), tmp_path / "new" / "deeper" / "set")
    assert made and list(tmp_path.iterdir()) == []  # the parents it made are gone too
    empty = tmp_path / "empty"
    empty.mkdir()
    made.clear()
    with pytest.raises(type(error)):
        generate_set(load_grid(TINY_GRID), empty)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty"]
    assert list(empty.iterdir()) == []


# -- bench run: refusals ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["--time-limit", "-1"], ["--time-limit", "-1.0"]),
        (["--time-limit", "0"], ["--time-limit", "0.0"]),
        (["--time-limit", "nan"], ["--time-limit", "nan"]),
        (["--time-limit", "inf"], ["--time-limit", "inf"]),
        (["--workers", "0"], ["--workers", "0"]),
        (["--workers", "-3"], ["--workers", "-3"]),
        (["--seeds", "-1"], ["--seeds", "-1"]),
        (["--seeds", "1", "1"], ["--seeds lists 1 twice"]),
        (["--method", "ect"], ["--method lists 'ect' twice"]),
        (["--param", "nope=1"], ["no parameter 'nope'"]),
    ],
)
def test_run_refuses_bad_options_before_running(tiny, tmp_path, capsys, argv, needles):
    before = snapshot(tmp_path)
    code, out, err = run_main(
        capsys,
        "bench",
        "run",
        str(tiny),
        "--method",
        "ect",
        "--records",
        str(tmp_path / "r.jsonl"),
        *argv,
    )
    refused(code, err, *needles)
    assert out == "" and snapshot(tmp_path) == before


def test_run_refuses_records_that_are_inputs_or_not_files(tiny, tmp_path, capsys):
    before = snapshot(tmp_path)
    for target, needle in (
        (tiny / "manifest.json", "is the input file"),
        (tiny / "tiny-jobs2-s0.json", "is the input file"),
        (tiny, "is a folder"),
    ):
        code, _, err = run_main(
            capsys, "bench", "run", str(tiny), "--method", "ect", "--records", str(target)
        )
        refused(code, err, "--records", needle)
    assert snapshot(tmp_path) == before


MANIFEST_CASES = [
    ("not json", ["malformed JSON"]),
    ("[1, 2]", ["not an optsched/manifest@1 file"]),
    ('{"format": "optsched/manifest@2", "grid": "g", "instances": {}}', ["not an optsched"]),
    ('{"format": "optsched/manifest@1", "instances": {}}', ["'grid' must be a string"]),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": []}',
        ["'instances' must be an object"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": {"a": 1}}',
        ["instance 'a'", "object"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": {"a": {"cell": {}}}}',
        ["instance 'a'", "'file'"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": {"a": {"file": 3}}}',
        ["instance 'a'", "'file'"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": '
        '{"a": {"file": "../../etc/passwd"}}}',
        ["instance 'a'", "inside the set's folder"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": '
        '{"a": {"file": "/etc/passwd"}}}',
        ["instance 'a'", "inside the set's folder"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": '
        '{"a": {"file": "a.json", "cell": []}}}',
        ["instance 'a'", "'cell'"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": '
        '{"a": {"file": "a.json", "seed": "0"}}}',
        ["instance 'a'", "'seed'"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": '
        '{"a": {"file": "missing.json"}}}',
        ["missing.json", "cannot read"],
    ),
    (
        '{"format": "optsched/manifest@1", "grid": "g", "instances": '
        '{"a": {"file": "grid.json"}}}',
        ["grid.json"],
    ),
]


@pytest.mark.parametrize("text,needles", MANIFEST_CASES)
def test_run_refuses_corrupt_manifests(tiny, tmp_path, capsys, text, needles):
    (tiny / "manifest.json").write_text(text)
    before = snapshot(tmp_path)
    code, _, err = run_main(
        capsys,
        "bench",
        "run",
        str(tiny),
        "--method",
        "ect",
        "--records",
        str(tmp_path / "r.jsonl"),
    )
    refused(code, err, *needles)
    assert snapshot(tmp_path) == before


def test_run_refuses_a_folder_without_a_set(tmp_path, capsys):
    code, _, err = run_main(
        capsys,
        "bench",
        "run",
        str(tmp_path / "nope"),
        "--method",
        "ect",
        "--records",
        str(tmp_path / "r.jsonl"),
    )
    refused(code, err, "nope", "not a folder")
    code, _, err = run_main(
        capsys,
        "bench",
        "run",
        str(tmp_path),
        "--method",
        "ect",
        "--records",
        str(tmp_path / "r.jsonl"),
    )
    refused(code, err, "no manifest.json")
    assert list(tmp_path.iterdir()) == []


RECORD = {
    "format": "optsched/bench-record@1",
    "key": "k1",
    "instance": "i",
    "method": "m",
    "mode": "relaxed",
    "seed": 0,
    "params": {},
    "status": "feasible",
    "objective": 10,
    "bound": 8,
    "gap": 0.2,
    "runtime_s": 1.0,
    "cell": {"jobs": 2},
}


@pytest.mark.parametrize(
    "line,needle",
    [
        ("not json", "not a JSON record"),
        ('{"format": "optsched/bench-record@1", "objective": NaN}', "not a JSON record"),
        ('{"format": "other"}', "not an optsched/bench-record@1 record"),
        ("[1]", "not an optsched/bench-record@1 record"),
        (json.dumps({k: v for k, v in RECORD.items() if k != "key"}), "no 'key' field"),
        (json.dumps({**RECORD, "runtime_s": "1"}), "'runtime_s' must be a number"),
        (json.dumps({**RECORD, "cell": [2]}), "'cell' must be an object"),
        (json.dumps({**RECORD, "objective": "10"}), "'objective' must be a number"),
    ],
)
def test_corrupt_record_lines_are_named_by_path_and_line(tiny, tmp_path, capsys, line, needle):
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps(RECORD) + "\n" + line + "\n" + json.dumps(RECORD) + "\n")
    before = snapshot(tmp_path)
    code, _, err = run_main(
        capsys, "bench", "run", str(tiny), "--method", "ect", "--records", str(records)
    )
    refused(code, err, f"{records}:2:", needle)
    code, _, err = run_main(
        capsys, "bench", "report", str(records), "--out", str(tmp_path / "rep")
    )
    refused(code, err, f"{records}:2:", needle)
    assert snapshot(tmp_path) == before and not (tmp_path / "rep").exists()


# -- bench run: errors are records -------------------------------------------------------


@pytest.mark.parametrize(
    "method,workers",
    [("rb-exit", "1"), ("rb-exit", "2"), ("rb-osexit", "1"), ("rb-osexit", "2"), ("rb-nan", "2")],
)
def test_methods_that_exit_or_return_non_json_are_error_records(
    tiny, tmp_path, plugins, method, workers
):
    records = tmp_path / "r.jsonl"
    done = cli(
        "--plugin",
        "rbplug",
        "bench",
        "run",
        str(tiny),
        "--method",
        method,
        "--records",
        str(records),
        "--workers",
        workers,
        extra_path=plugins,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    by_instance = {r["instance"]: r for r in load_records(records)}
    assert len(by_instance) == 4
    for name, record in by_instance.items():
        bad = method == "rb-nan" or "jobs3" in name
        assert (record["status"] == "error") == bad, record
    errors = {r["error"] for r in by_instance.values() if r["error"]}
    expected = {
        "rb-exit": "SystemExit: 3",
        "rb-osexit": "worker process died",
        "rb-nan": "cannot be written as JSON",
    }[method]
    assert all(expected in e for e in errors), errors
    summary = "2 errors" if method != "rb-nan" else "4 errors"
    assert f"4 runs finished ({summary})" in done.stdout


def test_execute_records_base_exceptions(tiny):
    from optsched.registry import register

    class Custom(BaseException):
        pass

    @register("rb-base", description="raises a BaseException", replace=True)
    def raise_base(instance, context):
        raise Custom("odd")

    (run, *_) = plan(load_manifest(tiny), ["rb-base"])
    record = execute(run)
    assert record["status"] == "error" and "Custom" in record["error"]
    assert record["objective"] is None and record["key"] == run.key


def load_manifest(folder: Path):
    from optsched.bench.manifest import Manifest

    return Manifest.load(folder / "manifest.json")


# -- bench run: locks, kills, interrupts -------------------------------------------------


def test_a_second_writer_on_one_records_file_is_refused(tmp_path):
    records = tmp_path / "r.jsonl"
    with RecordWriter(records):
        with pytest.raises(InputError, match="another runner holds this records file"):
            RecordWriter(records)
        with pytest.raises(InputError, match="another runner"):
            run_benchmark([], records, progress=None)
    with RecordWriter(records):  # released on close
        pass


@pytest.mark.skipif(not LINUX, reason="inspects /proc")
def test_second_runner_refused_then_sigterm_stops_cleanly(tiny, tmp_path, plugins):
    """Runner A holds the records file; B is refused at once; SIGTERM stops A like Ctrl-C:
    exit 143, finished runs kept, workers gone, lock released; a resumed run completes.
    rb-gate keeps A running until the test opens its gate: after A's first record every
    other run waits, so B and the signal find A still at work however slow the machine."""
    records = tmp_path / "r.jsonl"
    args = [
        "--method",
        "rb-gate",
        "--mode",
        "relaxed",
        "--mode",
        "gang",
        "--seeds",
        "0",
        "1",
        "--workers",
        "2",
    ]
    runner = start_runner(records, tiny, plugins, *args)
    try:
        wait_records(records)  # the first run is recorded; the others wait at the gate
        workers = children(runner.pid)
        assert workers
        second = cli(
            "--plugin",
            "rbplug",
            "bench",
            "run",
            str(tiny),
            "--records",
            str(records),
            *args,
            extra_path=plugins,
            timeout=30,
        )
        refused(second.returncode, second.stderr, str(records), "another runner holds")
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=30)
    finally:
        runner.kill()
    assert runner.returncode == 143, err
    assert "interrupted by SIGTERM" in err and "rerun the same command to resume" in err
    assert "Traceback" not in err
    finished = len(load_records(records))
    assert f"{finished} runs finished" in out
    assert finished == 1  # the run before the gate
    assert wait_gone(workers) == [] and holders(records) == []
    (plugins / "open").touch()  # the gate opens for the resumed run
    done = cli(
        "--plugin",
        "rbplug",
        "bench",
        "run",
        str(tiny),
        "--records",
        str(records),
        *args,
        extra_path=plugins,
    )
    assert done.returncode == 0, done.stderr
    assert f"{finished} already recorded" in done.stdout
    exactly_once(records, tiny, "rb-gate", modes=("relaxed", "gang"), seeds=(0, 1))


@pytest.mark.skipif(not LINUX, reason="inspects /proc")
def test_sigkill_of_the_runner_leaves_no_worker_behind(tiny, tmp_path, plugins):
    """rb-gate keeps both workers busy until the test opens its gate (see the SIGTERM test):
    the runner cannot finish before it is killed, however slow the machine."""
    records = tmp_path / "r.jsonl"
    args = [
        "--method",
        "rb-gate",
        "--mode",
        "relaxed",
        "--mode",
        "gang",
        "--seeds",
        "0",
        "1",
        "--workers",
        "2",
    ]
    runner = start_runner(records, tiny, plugins, *args)
    try:
        wait_records(records)  # the first run is recorded; the others wait at the gate
        workers = children(runner.pid)
        assert len(workers) == 2
        os.kill(runner.pid, signal.SIGKILL)  # the runner alone, not its process group
        runner.wait(timeout=30)
    finally:
        runner.kill()
        runner.communicate()
    assert wait_gone(workers) == [], "workers outlived the runner"
    assert holders(records) == []
    (plugins / "open").touch()  # the gate opens for the resumed run
    done = cli(
        "--plugin",
        "rbplug",
        "bench",
        "run",
        str(tiny),
        "--records",
        str(records),
        *args,
        extra_path=plugins,
    )
    assert done.returncode == 0, done.stderr
    exactly_once(records, tiny, "rb-gate", modes=("relaxed", "gang"), seeds=(0, 1))


@pytest.mark.slow  # 6 s; the SIGTERM test exercises the same stop path in 3 s
@pytest.mark.skipif(not LINUX, reason="inspects /proc")
def test_ctrl_c_during_cpsat_stops_cleanly(tmp_path, plugins, wall_clock):
    """SIGINT to the whole process group (as a terminal sends it) while CP-SAT runs in the
    workers: exit 130 within seconds, finished runs kept, workers gone; resume completes."""
    grid = tmp_path / "grid.json"
    grid.write_text(
        json.dumps(
            {
                "format": "optsched/grid@1",
                "name": "hard",
                "generator": {"gpus": 8, "gpu_types": 2, "hosts": 2},
                "vary": {"jobs": [25]},
                "seeds": [0, 1, 2, 3],
            }
        )
    )
    assert main(["bench", "gen", str(grid), "--out", str(tmp_path / "set")]) == 0
    records = tmp_path / "r.jsonl"
    args = ["--method", "cpsat", "--time-limit", "1", "--workers", "2"]
    runner = start_runner(records, tmp_path / "set", plugins, *args, group=True)
    try:
        wait_records(records)
        workers = children(runner.pid)
        os.killpg(runner.pid, signal.SIGINT)
        stopped = time.monotonic()
        out, err = runner.communicate(timeout=30)
        wall_clock.below(time.monotonic() - stopped, 10, "stopping")
    finally:
        with_group_killed(runner)
    assert runner.returncode == 130, err
    assert "interrupted by SIGINT" in err and "Traceback" not in err
    finished = len(load_records(records))
    assert 1 <= finished < 4 and f"{finished} runs finished" in out
    assert wait_gone(workers) == [] and holders(records) == []
    done = cli("bench", "run", str(tmp_path / "set"), "--records", str(records), *args)
    assert done.returncode == 0, done.stderr
    exactly_once(records, tmp_path / "set", "cpsat", time_limit=1.0)


def with_group_killed(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()


# -- bench report ----------------------------------------------------------------------------


def test_report_refuses_missing_and_non_file_records(tmp_path, capsys):
    missing = tmp_path / "missing.jsonl"
    code, _, err = run_main(
        capsys, "bench", "report", str(missing), "--out", str(tmp_path / "rep")
    )
    refused(code, err, str(missing), "no such records file")
    code, _, err = run_main(
        capsys, "bench", "report", str(tmp_path), "--out", str(tmp_path / "rep")
    )
    refused(code, err, str(tmp_path), "is a folder")
    assert list(tmp_path.iterdir()) == []


def test_report_outputs_are_all_or_nothing(tmp_path, capsys, monkeypatch):
    from optsched.bench import report

    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps(RECORD) + "\n")
    rep = tmp_path / "rep"
    assert main(["bench", "report", str(records), "--out", str(rep)]) == 0
    names = sorted(p.name for p in rep.iterdir())
    assert names == ["gaps.csv", "gaps.md", "gaps.png", "gaps.tex", "profile.png"]
    assert (rep / "gaps.png").read_bytes().startswith(b"\x89PNG")
    assert (rep / "gaps.csv").read_bytes().count(b"\r\n") == 2
    before = snapshot(rep)

    def broken(*args, **kwargs):
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(report, "plot_profiles", broken)
    records.write_text(json.dumps({**RECORD, "objective": 12}) + "\n")
    with pytest.raises(RuntimeError):
        write_report(load_records(records), rep)
    assert snapshot(rep) == before  # nothing half-replaced
    code, _, err = run_main(capsys, "bench", "report", str(records), "--out", str(records))
    refused(code, err, "not a folder")


def test_protocol_documents_the_stop_semantics():
    text = (ROOT / "benchmarks" / "PROTOCOL.md").read_text()
    for needle in ("130", "143", "lock", "SIGKILL"):
        assert needle in text


def test_runners_on_one_set_merge_their_manifest_updates(tiny):
    """Two runners with different records files: neither loses the other's best values."""
    first, second = load_manifest(tiny), load_manifest(tiny)
    names = sorted(first.instances)
    rec = {**RECORD, "mode": "relaxed", "bound": None, "gap": None}
    assert first.fold([{**rec, "instance": names[0], "objective": 5, "key": "a"}])
    assert second.fold([{**rec, "instance": names[1], "objective": 7, "key": "b"}])
    on_disk = load_manifest(tiny).instances
    assert on_disk[names[0]]["best"]["relaxed"]["objective"] == 5
    assert on_disk[names[1]]["best"]["relaxed"]["objective"] == 7


# -- broken promises found by an adversarial tester ------------------------------------------


def _set_best(folder: Path, best_text: str) -> None:
    path = folder / "manifest.json"
    data = json.loads(path.read_text())
    text = json.dumps(data, indent=1).replace('"best": {}', '"best": ' + best_text, 1)
    path.write_text(text)


@pytest.mark.parametrize(
    "best,needles",
    [
        ('{"relaxed": {"objective": NaN, "bound": 1}}', ["'objective'", "nan"]),
        ('{"relaxed": {"objective": "x", "bound": 1}}', ["'objective'", "'x'"]),
        ('{"relaxed": {"objective": NaN}}', ["'objective'"]),
        ('{"relaxed": {"objective": 5}}', ["no 'bound' field"]),
        ('{"relaxed": {"objective": 1e308, "bound": 1}}', ["'objective'", "1e+308"]),
        ('{"relaxed": {"objective": -1, "bound": null}}', ["'objective'", "-1"]),
        ('{"relaxed": {"objective": 1, "bound": -2}}', ["'bound'", "-2"]),
        ('{"relaxed": {"objective": 1, "bound": 2}}', ["'bound' 2 exceeds 'objective' 1"]),
        ('{"relaxed": {"objective": 1, "objective_by": 3, "bound": null}}', ["'objective_by'"]),
    ],
)
def test_run_refuses_bad_best_values_in_the_manifest(tiny, tmp_path, capsys, best, needles):
    _set_best(tiny, best)
    before = snapshot(tmp_path)
    code, _, err = run_main(
        capsys,
        "bench",
        "run",
        str(tiny),
        "--method",
        "ect",
        "--records",
        str(tmp_path / "r.jsonl"),
    )
    refused(code, err, "manifest.json", "instance 'tiny-jobs2-s0'", "best['relaxed']", *needles)
    assert snapshot(tmp_path) == before


def test_manifest_never_saves_a_bound_above_the_best_objective(tiny):
    manifest = load_manifest(tiny)
    base = {
        "instance": "tiny-jobs2-s0",
        "mode": "relaxed",
        "method": "m",
        "seed": 0,
        "params": {},
        "status": "feasible",
        "key": "k",
    }
    manifest.fold([{**base, "objective": 10.0, "bound": None}])
    manifest.fold([{**base, "objective": None, "bound": 20.0}])  # a wrong claim: ignored
    assert manifest.instances["tiny-jobs2-s0"]["best"]["relaxed"]["bound"] is None
    manifest.fold([{**base, "objective": None, "bound": 8.0}])
    manifest.fold([{**base, "objective": 5.0, "bound": None}])  # beats the claimed bound
    best = load_manifest(tiny).instances["tiny-jobs2-s0"]["best"]["relaxed"]
    assert best["objective"] == 5.0 and best["bound"] is None


@pytest.mark.parametrize(
    "address",
    [
        "garbage",
        "tcp://host",
        "tcp://host:port",
        "tcp://host:0",
        "tcp://:8786",
        "foo://h:1",
        "h:99999",
    ],
)
def test_run_refuses_a_malformed_scheduler_address(tiny, tmp_path, capsys, address):
    code, _, err = run_main(
        capsys,
        "bench",
        "run",
        str(tiny),
        "--method",
        "ect",
        "--records",
        str(tmp_path / "r.jsonl"),
        "--scheduler",
        address,
    )
    refused(code, err, "--scheduler", repr(address))
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize(
    "address",
    ["tcp://127.0.0.1:8786", "localhost:8786", "tls://[::1]:8786", "inproc://10.0.0.1/123/1"],
)
def test_well_formed_scheduler_addresses_pass(address):
    from optsched.bench.runner import check_scheduler

    check_scheduler(address)


@pytest.mark.parametrize(
    "change,needles",
    [
        (("feasible", "weird"), ["field 'status'", "'weird'"]),
        (("OBJ", "1e308"), ["field 'objective'", "1e+308"]),
        (("OBJ", "-3.0"), ["field 'objective'", "-3.0"]),
        (("BOUND", "1e16"), ["field 'bound'", "1e+16"]),
    ],
)
def test_records_with_bad_status_or_values_are_refused(tiny, tmp_path, capsys, change, needles):
    good = tmp_path / "good.jsonl"
    code, _, _ = run_main(
        capsys,
        "bench",
        "run",
        str(tiny),
        "--method",
        "ect",
        "--records",
        str(good),
        "--workers",
        "1",
    )
    assert code == 0
    lines = good.read_text().splitlines()
    record = json.loads(lines[1])
    old, new = change
    if old == "OBJ":
        record["objective"] = "NEW"
    elif old == "BOUND":
        record["bound"] = "NEW"
    else:
        record["status"] = "NEW"
    lines[1] = json.dumps(record).replace('"NEW"', new if old != "feasible" else '"weird"')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    before = snapshot(tmp_path)
    code, _, err = run_main(
        capsys, "bench", "run", str(tiny), "--method", "ect", "--records", str(bad)
    )
    refused(code, err, f"{bad}:2", *needles)
    code, _, err = run_main(capsys, "bench", "report", str(bad), "--out", str(tmp_path / "rep"))
    refused(code, err, f"{bad}:2", *needles)
    assert snapshot(tmp_path) == before and not (tmp_path / "rep").exists()


def test_run_refuses_an_instance_file_holding_another_instance(tiny, tmp_path, capsys):
    path = tiny / "tiny-jobs2-s0.json"
    data = json.loads(path.read_text())
    data["name"] = "someone-else"
    path.write_text(json.dumps(data))
    code, _, err = run_main(
        capsys,
        "bench",
        "run",
        str(tiny),
        "--method",
        "ect",
        "--records",
        str(tmp_path / "r.jsonl"),
    )
    refused(code, err, "instance 'tiny-jobs2-s0'", "'tiny-jobs2-s0.json'", "'someone-else'")
    assert not (tmp_path / "r.jsonl").exists()


def test_empty_paths_and_missing_folders_are_refused(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = tmp_path / "good.jsonl"
    assert (
        run_main(
            capsys,
            "bench",
            "run",
            str(tiny),
            "--method",
            "ect",
            "--records",
            str(good),
            "--workers",
            "1",
        )[0]
        == 0
    )
    before = snapshot(tmp_path)
    for argv, needles in [
        (["bench", "report", str(good), "--out", ""], ["--out: empty path"]),
        (["bench", "gen", str(TINY_GRID), "--out", ""], ["--out: empty path"]),
        (
            ["bench", "run", str(tiny), "--method", "ect", "--records", ""],
            ["--records: empty path"],
        ),
        (
            [
                "bench",
                "run",
                str(tiny),
                "--method",
                "ect",
                "--records",
                str(tmp_path / "nope" / "r.jsonl"),
            ],
            ["--records", "nope", "does not exist"],
        ),
        (
            ["bench", "report", str(good), "--out", str(tmp_path / "nope" / "deeper")],
            ["--out", "nope", "does not exist"],
        ),
    ]:
        code, _, err = run_main(capsys, *argv)
        refused(code, err, *needles)
        assert snapshot(tmp_path) == before and not (tmp_path / "nope").exists()
    # the last level of a report folder is created (like mkdir without -p)
    assert (
        run_main(
            capsys, "bench", "report", str(good), "--out", str(tmp_path / "rep"), "--no-plots"
        )[0]
        == 0
    )
    assert (tmp_path / "rep" / "gaps.md").is_file()


def test_no_time_limit_means_no_kill():
    from optsched.bench import runner

    run = runner.Run("i", {}, {}, None, "ect", "relaxed", 0, {}, None)
    assert runner.kill_after(run) is None
    assert runner.kill_after(runner.Run("i", {}, {}, None, "ect", "relaxed", 0, {}, 4.0)) == 14
    assert runner.kill_after(runner.Run("i", {}, {}, None, "ect", "relaxed", 0, {}, 60)) == 90


@pytest.mark.skipif(not LINUX, reason="uses fork and /proc")
@pytest.mark.parametrize("workers", [pytest.param(1, marks=pytest.mark.slow), 2])
def test_a_method_ignoring_its_time_limit_is_killed(
    tiny, tmp_path, plugins, monkeypatch, workers, wall_clock
):
    from optsched.bench import runner

    monkeypatch.syspath_prepend(str(plugins))
    # killed after 1 + 2 s: far beyond what ect needs even on a loaded machine, where a
    # fresh worker may take a second or two to start
    monkeypatch.setattr(runner, "GRACE_MIN_S", 2.0)
    runs = plan(load_manifest(tiny), ["rb-hang", "ect"], time_limit=1.0, plugins=["rbplug"])
    records = tmp_path / "r.jsonl"
    before = set(children(os.getpid()))  # other tests' helpers (e.g. a resource tracker)
    started = time.monotonic()
    summary = run_benchmark(runs, records, workers=workers, progress=None)
    wall_clock.below(time.monotonic() - started, 30)
    assert summary.finished == 8 and summary.errors == 2
    for record in load_records(records):
        hung = record["method"] == "rb-hang" and "jobs3" in record["instance"]
        assert (record["status"] == "error") == hung, record
        if hung:
            assert "exceeded its time limit" in record["error"]
    keys = [r["key"] for r in load_records(records)]
    assert sorted(keys) == sorted(run.key for run in runs)
    assert wait_gone([c for c in children(os.getpid()) if c not in before], 5) == []


def test_run_without_mode_runs_a_method_of_one_mode_in_it(tiny, tmp_path, capsys):
    """No --mode: each instance runs in its own mode, and a method that lacks it but has one
    mode runs in that one (as ``simulate`` runs a gang-only policy); with --mode a method
    that lacks the mode is refused before anything runs, not recorded as one error per run."""
    records = tmp_path / "r.jsonl"
    args = ("bench", "run", str(tiny), "--method", "ect", "--method", "fifo-perf")
    code, _, err = run_main(capsys, *args, "--records", str(records), "--workers", "1")
    assert code == 0, err
    modes = {(r["method"], r["mode"]) for r in map(json.loads, records.read_text().splitlines())}
    assert ("fifo-perf", "gang") in modes and ("ect", "relaxed") in modes
    other = tmp_path / "other.jsonl"
    code, _, err = run_main(capsys, *args, "--mode", "relaxed", "--records", str(other))
    refused(code, err, "fifo-perf", "does not support mode 'relaxed'")
    assert not other.exists()


def _rewrite_instances(folder: Path, change) -> list[Path]:
    """Apply ``change`` to every instance file of the set in ``folder``; their paths."""
    files = []
    for path in folder.glob("*.json"):
        data = json.loads(path.read_text())
        if str(data.get("format", "")).startswith("optsched/instance@"):
            change(data)
            path.write_text(json.dumps(data))
            files.append(path)
    return files


def test_run_without_mode_keeps_solve_methods_to_their_modes(tiny):
    """The one-mode rule is simulate's, for policies: a relaxed-only solve method on a gang
    set is refused, as ``solve`` refuses it."""
    _rewrite_instances(tiny, lambda data: data.update(mode="gang"))
    with pytest.raises(InputError, match="'hare-lp' does not support mode 'gang'"):
        plan(load_manifest(tiny), ["hare-lp"])


def test_run_refuses_an_instance_a_policy_takes_to_a_mode_it_cannot_run_in(tiny):
    """A gang-only policy on a relaxed instance whose round is wider than the cluster: refused
    before anything runs, naming the file and the mode, not recorded as an error per run."""

    def widen(data):
        data["jobs"][0]["tasks_per_round"] = len(data["gpus"]) + 1

    assert _rewrite_instances(tiny, widen)
    with pytest.raises(InputError, match=r"in gang mode: job .*needs"):
        plan(load_manifest(tiny), ["fifo-perf"])
    assert plan(load_manifest(tiny), ["ect"])  # relaxed mode still runs them


def test_report_refuses_the_manifest_of_another_set(tiny, tmp_path, capsys):
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps(RECORD) + "\n")
    code, _, err = run_main(
        capsys,
        "bench",
        "report",
        str(records),
        "--out",
        str(tmp_path / "rep"),
        "--manifest",
        str(tiny),
    )
    refused(code, err, "--manifest", "none of its instances is in the records")
    assert not (tmp_path / "rep").exists()
