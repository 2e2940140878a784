"""`optsched estimate` on bad input: one line naming the culprit, exit 2, no traceback, and the
output file untouched; `estimate gen` writes atomically (a kill leaves the old file or the whole
new one) and refuses sizes it cannot hold."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InputError
from optsched.estimation.forest import evaluate
from optsched.estimation.runs import (
    LABELS,
    MAX_SYNTHETIC_JOBS,
    SYNTHETIC_FEATURES,
    iter_synthetic_runs,
    read_runs,
    synthetic_runs,
    write_runs,
)

pytest.importorskip("sklearn")

ROOT = Path(__file__).resolve().parents[1]
OLD = b"job_type,role,gpu_mem\nold,worker,1\n"
HEADER = ",".join(["job", "job_type", "role", *SYNTHETIC_FEATURES, *LABELS]).encode()


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def bad_input(capsys, *argv: str) -> str:
    """Run the CLI; assert exit 2, nothing on stdout, one stderr line; return that line."""
    code, out, err = run(capsys, *argv)
    assert code == 2, (code, out, err)
    assert out == "" and "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("optsched"), err
    assert "error: " in lines[0], err
    return lines[0]


@pytest.fixture(scope="module")
def runs_csv(tmp_path_factory) -> Path:
    """60 synthetic jobs (about 240 rows)."""
    path = tmp_path_factory.mktemp("runs") / "runs.csv"
    write_runs(path, synthetic_runs(60, 4))
    return path


# -- estimate gen: sizes, options, targets -----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (["--jobs", "1000000000"], "--jobs 1,000,000,000 is too many: about 4,000,000,000 rows"),
        (["--jobs", str(MAX_SYNTHETIC_JOBS + 1)], "at most 1,000,000 jobs"),
        (["--jobs", "0"], "--jobs must be >= 1, got 0"),
        (["--jobs", "-5"], "--jobs must be >= 1, got -5"),
        (["--noise", "-0.1"], "--noise must be in [0, 1]"),
        (["--noise", "nan"], "--noise must be in [0, 1] (a log-normal σ), got nan"),
        (["--noise", "inf"], "--noise must be in [0, 1] (a log-normal σ), got inf"),
        (["--noise", "5"], "--noise must be in [0, 1]"),
        (["--seed", "-1"], "--seed: must be an integer in [0, 2147483647], got '-1'"),
        (["--seed", str(2**31)], "--seed: must be an integer in [0, 2147483647]"),
    ],
)
def test_gen_refuses_bad_sizes_before_touching_the_file(capsys, tmp_path, args, culprit):
    target = tmp_path / "f.csv"
    target.write_bytes(OLD)
    line = bad_input(capsys, "estimate", "gen", "--out", str(target), *args)
    assert culprit in line
    assert target.read_bytes() == OLD


def test_gen_validates_the_target_before_the_work(capsys, tmp_path):
    line = bad_input(capsys, "estimate", "gen", "--out", str(tmp_path / "no" / "f.csv"))
    assert "--out" in line and "does not exist" in line
    assert "is a directory" in bad_input(capsys, "estimate", "gen", "--out", str(tmp_path))
    assert "needs --out" in bad_input(capsys, "estimate", "gen")
    assert "reads no runs CSV" in bad_input(
        capsys, "estimate", "gen", "x.csv", "--out", str(tmp_path / "f.csv")
    )
    assert list(tmp_path.iterdir()) == []


def test_gen_replaces_the_file_whole_and_reads_back(capsys, tmp_path):
    target = tmp_path / "f.csv"
    target.write_bytes(OLD)
    os.chmod(target, 0o640)
    code, out, _ = run(
        capsys, "estimate", "gen", "--jobs", "30", "--seed", "2", "--out", str(target)
    )
    assert code == 0 and out.startswith(f"wrote {target}: 30 synthetic jobs")
    assert target.stat().st_mode & 0o777 == 0o640  # an existing file keeps its mode
    assert [p.name for p in tmp_path.iterdir()] == ["f.csv"]  # no temporary left behind
    again = read_runs(target)
    assert len({r.job for r in again}) == 30
    assert [(r.job, r.labels) for r in again] == [(r.job, r.labels) for r in synthetic_runs(30, 2)]


def test_streamed_and_listed_generation_write_the_same_bytes(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    assert write_runs(a, synthetic_runs(25, 7, 0.3)) == write_runs(
        b, iter_synthetic_runs(25, 7, 0.3), features=SYNTHETIC_FEATURES, labels=LABELS
    )
    assert a.read_bytes() == b.read_bytes() and a.read_bytes().startswith(HEADER + b"\r\n")
    with pytest.raises(InputError, match="jobs must be >= 1"):
        iter_synthetic_runs(0, 0)  # checked at the call, not at the first row


# -- runs CSVs that are not what they claim ------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "culprit"),
    [
        (b"job_type,role,gpu_mem\nx,worker,1\nx,worker,inf\n", "bad.csv:3: column 'gpu_mem'"),
        (b"job_type,role,gpu_mem\nx,worker,nan\n", "bad.csv:2: column 'gpu_mem' must be a finite"),
        (
            b"job_type,role,cpu\nx,worker,1e309\n",
            "bad.csv:2: column 'cpu' must be a finite number",
        ),
        (b"job_type,role,cpu\nx,worker,-Infinity\n", "got '-Infinity'"),
        (b"job_type,role,cpu\nx,worker,2e15\n", "magnitude at most 1e+15, got '2e15'"),
        (
            b"job_type,role,batch_size,cpu\nx,worker,nan,1\n",
            "bad.csv:2: feature column 'batch_size'",
        ),
        (
            b"job_type,role,cpu\nx,worker,lots\n",
            "bad.csv:2: column 'cpu' must be a number, got 'lots'",
        ),
        (b"job_type,role,cpu\nx,worker,1\nx\xe9,ps,2\n", "bad.csv:3: not UTF-8 (byte 0xe9"),
        (b"\xff\xfej\x00o\x00b\x00", "bad.csv:1: not UTF-8 (byte 0xff at offset 0)"),
        (b"job_type,cpu\nx,1\n", "bad.csv:1: missing required column 'role'"),
        (b"role,cpu\nps,1\n", "bad.csv:1: missing required column 'job_type'"),
        (b"job_type,role\nx,ps\n", "bad.csv: no label column"),
        (b"job_type,role,cpu,cpu\nx,ps,1,2\n", "bad.csv:1: column 'cpu' appears twice"),
        (b"job_type,role,,cpu\nx,ps,a,1\n", "bad.csv:1: column 3 of the header has no name"),
        (b"job_type,role,cpu\nx,ps,1,9\n", "bad.csv:2: 4 fields, but the header has 3"),
        (b"job_type,role,cpu\nx,ps\n", "bad.csv:2: 2 fields, but the header has 3"),
        (b"job_type,role,cpu\nx,boss,1\n", "bad.csv:2: role must be ps or worker, got 'boss'"),
        (b"job_type,role,cpu\n", "bad.csv: no rows after the header"),
        (b"", "bad.csv: empty"),
        (b'job_type,role,cpu\n"x,ps,1\n', "bad.csv"),
    ],
)
def test_a_bad_runs_csv_is_refused_naming_file_line_and_column(
    capsys, tmp_path, monkeypatch, content, culprit
):
    path = tmp_path / "bad.csv"
    path.write_bytes(content)
    monkeypatch.chdir(tmp_path)  # the message names the path as typed
    for action in (["eval", "bad.csv"], ["predict", "bad.csv", "--query", "bad.csv"]):
        line = bad_input(capsys, "estimate", *action)
        assert culprit in line, line


def test_a_byte_order_mark_is_accepted(capsys, tmp_path, runs_csv):
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + runs_csv.read_bytes())
    plain, marked = read_runs(runs_csv), read_runs(bom)
    assert [(r.job, r.job_type, r.role, r.features, r.labels) for r in marked] == [
        (r.job, r.job_type, r.role, r.features, r.labels) for r in plain
    ]
    assert "\ufeff" not in "".join(marked[0].features)
    code, out, _ = run(
        capsys,
        "estimate",
        "eval",
        str(bom),
        "--test-jobs",
        "20",
        "--step",
        "40",
        "--model",
        "linear",
        "--json",
    )
    assert code == 0 and {r["train_jobs"] for r in json.loads(out)} == {40}


# -- estimate eval / predict options -------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "culprit"),
    [
        (["--test-jobs", "0"], "--test-jobs must be >= 1, got 0"),
        (["--test-jobs", "-3"], "--test-jobs must be >= 1, got -3"),
        (["--test-jobs", "60"], "--test-jobs 60: "),
        (["--test-jobs", "500"], "have 60 jobs, so none would be left to train on"),
        (["--step", "0"], "--step must be >= 1, got 0"),
        (["--step", "-50"], "--step must be >= 1, got -50"),
        (["--test-jobs", "20", "--step", "41"], "--step 41 exceeds the 40 training jobs"),
        (["--seed", "-2"], "--seed: must be an integer in [0, 2147483647], got '-2'"),
        (["--out", "x.csv"], "--out is an option of estimate gen"),
        (["--query", "x.csv"], "--query is an option of estimate predict"),
    ],
)
def test_eval_refuses_options_that_would_evaluate_nothing(capsys, runs_csv, args, culprit):
    assert culprit in bad_input(capsys, "estimate", "eval", str(runs_csv), *args)


def test_the_library_refuses_an_empty_evaluation(runs_csv):
    runs = read_runs(runs_csv)
    for kwargs, message in (
        ({"test_jobs": 0}, "test_jobs must be >= 1"),
        ({"step": 0}, "step must be >= 1"),
        ({"test_jobs": 10, "step": 51}, "step 51 exceeds the 50"),
        ({"models": ("forest", "svm")}, "model must be one of"),
        ({"seed": -1}, "seed must be an integer in"),
    ):
        with pytest.raises(InputError, match=message):
            evaluate(runs, **kwargs)


def test_predict_prints_valid_json_and_takes_one_model(capsys, runs_csv):
    code, out, err = run(
        capsys, "estimate", "predict", str(runs_csv), "--query", str(runs_csv), "--model", "linear"
    )
    assert code == 0 and err == ""

    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    rows = json.loads(out, parse_constant=no_constants)
    assert len(rows) == len(read_runs(runs_csv)) and set(rows[0]["predicted"]) == set(LABELS)
    assert "one --model, got 2" in bad_input(
        capsys,
        "estimate",
        "predict",
        str(runs_csv),
        "--query",
        str(runs_csv),
        "--model",
        "forest",
        "--model",
        "tree",
    )
    assert "needs --query" in bad_input(capsys, "estimate", "predict", str(runs_csv))


# -- a kill while gen works ----------------------------------------------------------------------


def _gen(tmp_path: Path, jobs: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "optsched.cli",
            "estimate",
            "gen",
            "--jobs",
            str(jobs),
            "--out",
            "f.csv",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _old_or_whole(target: Path, rows: int) -> str:
    data = target.read_bytes()
    if data == OLD:
        return "old"
    assert data.startswith(HEADER + b"\r\n"), data[:200]
    assert data.endswith(b"\r\n") and data.count(b"\r\n") == rows + 1, "truncated file"
    return "new"


def test_a_kill_during_gen_leaves_the_old_file(tmp_path):
    """SIGKILL shortly after the start (while 200,000 jobs are drawn, ~10 s of work): the old
    file is still there, whole."""
    target = tmp_path / "f.csv"
    target.write_bytes(OLD)
    proc = _gen(tmp_path, 200_000)
    time.sleep(1.5)
    if proc.poll() is not None:
        pytest.skip(f"gen finished within 1.5 s (exit {proc.returncode})")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert _old_or_whole(target, 800_626) == "old"


def _kill_when_writing(tmp_path: Path, jobs: int) -> tuple[bool, int]:
    """Run gen over f.csv and SIGKILL it the moment the write shows: a temporary file in the
    folder, or f.csv changed (the old in-place writer truncated it here). Returns whether it
    was killed, and its exit status."""
    target = tmp_path / "f.csv"
    target.write_bytes(OLD)
    proc = _gen(tmp_path, jobs)
    deadline = time.monotonic() + 300
    killed = False
    while proc.poll() is None and time.monotonic() < deadline:
        if target.stat().st_size != len(OLD) or any(
            p.name.endswith(".tmp") for p in tmp_path.iterdir()
        ):
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.001)
    proc.wait(timeout=60)
    return killed, proc.returncode


@pytest.mark.slow  # 7 s; test_robustness kills `solve --out` in the same write_file
def test_a_kill_while_the_new_file_is_written_leaves_old_or_whole(tmp_path):
    """40,000 jobs (~2 s): killed as the write starts, f.csv is the old file or the whole new
    one, never a truncated one."""
    killed, code = _kill_when_writing(tmp_path, 40_000)
    outcome = _old_or_whole(tmp_path / "f.csv", 160_467)  # rows of 40,000 jobs, seed 0
    assert killed or (code == 0 and outcome == "new")


@pytest.mark.slow
def test_a_kill_while_200000_jobs_are_written_leaves_old_or_whole(tmp_path):
    """The same with 200,000 jobs (~12 s; ~120 MB of CSV)."""
    killed, code = _kill_when_writing(tmp_path, 200_000)
    outcome = _old_or_whole(tmp_path / "f.csv", 800_626)
    assert killed or (code == 0 and outcome == "new")
