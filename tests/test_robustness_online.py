"""Adversarial inputs to the online simulators: periods, numeric params and replayed
schedules are bad input (exit 2, one line naming the culprit), and never hang."""

from __future__ import annotations

import contextlib
import io
import json
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from optsched.cli import main
from optsched.errors import InputError
from optsched.options import Options, number, numbers


def cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def bad_input(code: int, err: str, *names: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for name in names:
        assert name in lines[0], (name, err)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("online")
    paths = {
        "i": d / "i.json",
        "j": d / "j.json",
        "l": d / "l.json",
        "s": d / "s.json",
        "t": d / "t.json",
    }
    assert cli("gen", "--seed", 0, "--jobs", 5, "--gpus", 4, "--out", paths["i"])[0] == 0
    assert cli("gen", "--seed", 1, "--jobs", 5, "--gpus", 3, "--out", paths["j"])[0] == 0
    assert cli("gen", "--family", "liquid", "--seed", 0, "--hosts", 5, "--out", paths["l"])[0] == 0
    assert cli("simulate", paths["i"], "--policy", "hlas", "--out", paths["s"])[0] == 0
    assert cli("simulate", paths["j"], "--policy", "hlas", "--out", paths["t"])[0] == 0
    return paths


@pytest.mark.parametrize(
    "argv,name",
    [
        (("--policy", "hlas", "--tick", "1e-9"), "--tick"),
        (("--policy", "hlas", "--tick", "1e-300"), "--tick"),
        (("--policy", "hlas", "--tick", "1e-300", "--heartbeat"), "--tick"),
        (("--policy", "hlas", "--tick", "1e-9", "--heartbeat"), "--tick"),
        (("--policy", "tiresias", "--mode", "gang", "--tick", "1e-6"), "--tick"),
        (("--policy", "hlas", "--tick", "1e16"), "--tick"),
    ],
)
def test_tiny_or_huge_ticks_are_refused_quickly(files, argv, name, wall_clock):
    started = time.perf_counter()
    code, _, err = cli("simulate", files["i"], *argv)
    bad_input(code, err, name)
    wall_clock.below(time.perf_counter() - started, 5)


def test_the_shortest_tick_runs(files):
    code, _, err = cli(
        "simulate", files["i"], "--policy", "hlas", "--tick", "0.001", "--heartbeat"
    )
    assert code == 0, err


@pytest.mark.parametrize(
    "param",
    [
        "batch=1e-9",
        "heartbeat=1e-9",
        "heartbeat=1e-300",
        "batch=1e308",
        "heartbeat=1e16",
        "batch=inf",
        "heartbeat=nan",
        "batch=-1",
    ],
)
def test_liquid_periods_are_refused_quickly(files, param, wall_clock):
    started = time.perf_counter()
    code, _, err = cli("simulate", files["l"], "--policy", "liquid", "--param", param)
    bad_input(code, err, param.split("=")[0], param.split("=")[1])
    wall_clock.below(time.perf_counter() - started, 5)


@pytest.mark.parametrize("param", ["heartbeat=1e15", "batch=1e15"])
def test_huge_liquid_periods_run_or_name_the_param(files, param):
    """A period of 1e15 s delays starts to 1e15 s, where floats are too coarse to check the
    tasks: refused, naming the periods that put them there."""
    code, _, err = cli("simulate", files["l"], "--policy", "liquid", "--param", param)
    if code != 0:
        bad_input(code, err, "heartbeat", "batch")


@pytest.mark.parametrize(
    "policy,param",
    [
        ("hlas", "thresholds=inf"),
        ("hlas", "thresholds=1,,2"),
        ("hlas", "thresholds=1,2,"),
        ("hlas", "thresholds=nan"),
        ("hlas", "thresholds=1e16"),
        ("hlas", "starvation=1e308"),
        ("hlas", "starvation=inf"),
    ],
)
def test_numeric_params_are_finite_and_bounded(files, policy, param):
    code, _, err = cli("simulate", files["i"], "--policy", policy, "--param", param)
    bad_input(code, err, param.split("=")[0], param.split("=")[1])


def test_tiresias_thresholds_are_bounded(files):
    code, _, err = cli(
        "simulate",
        files["i"],
        "--mode",
        "gang",
        "--policy",
        "tiresias",
        "--param",
        "thresholds=1e308,1e309",
    )
    bad_input(code, err, "thresholds", "1e308")


@dataclass(frozen=True)
class _Numbers(Options):
    positive: float | None = number("in (0, MAX]", open_low=True)
    nonnegative: float = number("in [0, MAX]", 0.0)
    listed: tuple[float, ...] | None = numbers("increasing")


def test_param_parsers_refuse_values_above_max():
    for key in ("positive", "nonnegative"):
        with pytest.raises(InputError, match=rf"{key}.*1e16"):
            _Numbers.parse({key: "1e16"})
        assert getattr(_Numbers.parse({key: "1e15"}), key) == 1e15
    with pytest.raises(InputError, match="listed"):
        _Numbers.parse({"listed": " , "})
    assert _Numbers.parse({"listed": "1, 2"}).listed == (1.0, 2.0)


def _schedule(path: Path) -> dict:
    return json.loads(path.read_text())


def test_replay_of_another_instances_schedule_is_bad_input(files):
    code, _, err = cli(
        "simulate", files["i"], "--policy", "replay", "--param", f"schedule={files['t']}"
    )
    bad_input(code, err, f"--param schedule={files['t']}")


def test_replay_of_its_own_schedule_runs(files):
    code, _, err = cli(
        "simulate", files["i"], "--policy", "replay", "--param", f"schedule={files['s']}"
    )
    assert code == 0, err


@pytest.mark.parametrize(
    "change,problem",
    [
        ("duplicate", "twice"),
        ("missing", "missing"),
        ("gpu", "unknown GPU"),
        ("job", "unknown job"),
        ("instance", "instance"),
    ],
)
def test_replay_schedule_problems_are_named(files, tmp_path, change, problem):
    data = _schedule(files["s"])
    tasks = data["tasks"]
    if change == "duplicate":
        tasks.append(dict(tasks[0]))
    elif change == "missing":
        tasks.pop()
    elif change == "gpu":
        tasks[0]["gpu"] = "nope"
    elif change == "job":
        tasks[0]["job"] = "nope"
    else:
        data["instance"] = "other"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, _, err = cli("simulate", files["i"], "--policy", "replay", "--param", f"schedule={path}")
    bad_input(code, err, f"--param schedule={path}", problem)


def _later(files, folder: Path, offset: float) -> dict[str, Path]:
    out = {}
    for key in ("i", "l"):
        data = json.loads(files[key].read_text())
        for job in data["jobs"]:
            job["arrival"] = job.get("arrival", 0) + offset
        out[key] = folder / f"{key}.json"
        out[key].write_text(json.dumps(data))
    return out


@pytest.fixture(scope="module")
def far(files, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The instances with every arrival 5e13 s later (floats 0.008 s apart there)."""
    return _later(files, tmp_path_factory.mktemp("far"), 5e13)


@pytest.fixture(scope="module")
def late(files, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The instances with every arrival 1e11 s later: 1e11 one-second ticks before the
    first arrival, yet times the checker still resolves for 3 s tasks."""
    return _later(files, tmp_path_factory.mktemp("late"), 1e11)


@pytest.mark.parametrize("argv", [("--tick", "1", "--heartbeat"), ("--tick", "1")])
def test_ticks_before_late_arrivals_are_skipped_quickly(late, argv, wall_clock):
    started = time.perf_counter()
    code, _, err = cli("simulate", late["i"], "--policy", "hlas", *argv)
    assert code == 0, err
    wall_clock.below(time.perf_counter() - started, 5)


def test_heartbeats_before_late_arrivals_are_skipped_quickly(late, wall_clock):
    started = time.perf_counter()
    code, _, err = cli("simulate", late["l"], "--policy", "liquid", "--param", "heartbeat=5")
    assert code == 0, err
    wall_clock.below(time.perf_counter() - started, 5)


def test_periods_below_the_time_resolution_are_refused(far, wall_clock):
    started = time.perf_counter()
    code, _, err = cli("simulate", far["i"], "--policy", "hlas", "--tick", "0.001")
    bad_input(code, err, "--tick", "0.001")
    code, _, err = cli("simulate", far["l"], "--policy", "liquid", "--param", "heartbeat=0.001")
    bad_input(code, err, "heartbeat", "0.001")
    wall_clock.below(time.perf_counter() - started, 5)
