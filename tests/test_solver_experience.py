"""Long exact runs: default time limits (stated in `methods` and in results), progress lines
on stderr, and Ctrl-C returning the best schedule found."""

from __future__ import annotations

import ctypes
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optsched.budget import EXACT_TIME_LIMIT, RELAXATION_TIME_LIMIT
from optsched.cli import main
from optsched.io import load_instance
from optsched.registry import methods
from optsched.runtime import ProgressLine
from optsched.solve import solve
from tests.conftest import ROOT, assert_out_of_time
from tests.test_online import TOY

HARD = ROOT / "instances" / "exact" / "exact-jobs20-s0.json"


def test_exact_methods_have_a_default_time_limit_stated_everywhere(capsys):
    limits = {i.name: i.default_time_limit for i in methods("solve")}
    assert limits["cpsat"] == limits["milp-highs"] == limits["lp-bound"] == EXACT_TIME_LIMIT
    assert limits["hare-lp"] == limits["hare"] == RELAXATION_TIME_LIMIT
    assert limits["ect"] is None
    inst = load_instance(TOY)
    assert solve(inst, "cpsat").extra["time_limit"] == EXACT_TIME_LIMIT
    assert solve(inst, "cpsat", time_limit=7).extra["time_limit"] == 7
    assert solve(inst, "ect").extra["time_limit"] is None
    assert main(["methods"]) == 0
    assert f"(default time limit {EXACT_TIME_LIMIT:g} s)" in capsys.readouterr().out
    assert main(["methods", "--json"]) == 0
    listed = {m["name"]: m["default_time_limit"] for m in json.loads(capsys.readouterr().out)}
    assert listed["cpsat"] == EXACT_TIME_LIMIT and listed["ect"] is None


def test_a_method_reports_its_progress():
    """CP-SAT reports each solution with its bound; the incumbents never rise and never
    fall below the bounds."""
    reports = []
    result = solve(load_instance(TOY), "cpsat", progress=lambda i, b: reports.append((i, b)))
    assert reports
    assert all(i is not None and (b is None or b <= i + 1e-6) for i, b in reports)
    incumbents = [i for i, _ in reports]
    assert incumbents == sorted(incumbents, reverse=True)
    assert result.objective <= incumbents[-1] + 1e-6


def test_progress_lines_are_throttled():
    out = io.StringIO()
    line = ProgressLine(out, floor=10.0, every=3600.0)
    line(20.0, 12.0)
    assert out.getvalue() == ""  # a short run prints nothing
    line = ProgressLine(out, floor=10.0, every=0.0)
    line(20.0, None)
    line(18.0, 12.0)
    line(None, 11.0)  # a weaker bound and no incumbent change nothing
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert "incumbent 20  bound 10  gap 50.00 %" in lines[0]
    assert "incumbent 18  bound 12  gap 33.33 %" in lines[2]


def test_progress_has_a_heartbeat():
    """While a method reports nothing (a MILP, an LP), a line still comes every period."""
    out = io.StringIO()
    with ProgressLine(out, floor=10.0, every=0.05) as line:
        time.sleep(0.3)
        line(20.0, None)
        time.sleep(0.2)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 4 and "bound 10" in lines[0] and "incumbent 20" in lines[-1]
    time.sleep(0.1)
    assert len(out.getvalue().splitlines()) == len(lines)  # stopped with the run


def _searching(path: Path, method: str, *args: str) -> subprocess.Popen[str]:
    """``optsched solve PATH --method METHOD ARGS --time-limit 120 --json`` started, once its
    first progress line shows the search running (or its output ended; at most 60 s): a line
    with an incumbent (a loaded machine may print one without while it still builds the
    model, where a Ctrl-C is exit 130). Hare's step 1 reports no incumbent: its first line,
    5 s in, finds it searching on a quiet machine (a slow check)."""
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "optsched", "solve", str(path), "--method", method),
            *(*args, "--time-limit", "120", "--json"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    ready = " s  " if method == "hare" else "incumbent"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if (" s  " in line and ready in line) or not line:
            break
    return proc


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
@pytest.mark.parametrize(
    ("method", "path", "params"),
    [
        ("cpsat", HARD, []),
        # slow checks, 6 s each: HiGHS (test_time_limits interrupts its wait in-process), and
        # CP-SAT again (in Hare's step 1, in LNS's neighbourhoods)
        pytest.param(
            "milp-highs",
            ROOT / "instances" / "exact" / "exact-jobs10-s0.json",
            [],
            marks=pytest.mark.slow,
        ),
        pytest.param("hare", HARD, ["--param", "step1=exact"], marks=pytest.mark.slow),
        pytest.param("lns", HARD, [], marks=pytest.mark.slow),
    ],
)
def test_ctrl_c_returns_the_best_schedule_found(tmp_path, method, path, params, wall_clock):
    """A Ctrl-C during a CP-SAT or HiGHS search ends it: the best schedule so far is printed
    and written, marked interrupted, exit 0."""
    out = tmp_path / "s.json"
    proc = _searching(path, method, *params, "--out", str(out))
    os.kill(proc.pid, signal.SIGINT)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, stdout
    data = json.loads(stdout)
    assert data["interrupted"] is True and data["status"] == "feasible"
    assert out.exists()
    wall_clock.below(data["runtime_s"], 60, "the interrupted run")


#: tgkill's system call number, per machine: a signal sent to one thread of another process.
TGKILL = {"x86_64": 234, "aarch64": 131}


def _threads_open_to_sigint(pid: int) -> list[int]:
    """The threads of process ``pid`` other than its main one that do not block SIGINT."""
    open_ = []
    for tid in map(int, os.listdir(f"/proc/{pid}/task")):
        try:
            status = (Path(f"/proc/{pid}/task/{tid}/status")).read_text()
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        blocked = next(line for line in status.splitlines() if line.startswith("SigBlk:"))
        if tid != pid and not int(blocked.split()[1], 16) & (1 << (signal.SIGINT - 1)):
            open_.append(tid)
    return open_


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine not in TGKILL,
    reason="per-thread signals through /proc and tgkill",
)
def test_a_ctrl_c_that_reaches_a_solver_thread_still_stops_the_search(tmp_path):
    """The kernel hands a Ctrl-C to any thread that does not block it. CP-SAT's own handler
    acted only on the thread that started the search: the signal on one of its workers
    aborted the process or was lost (the search ran to its time limit). Sent here to a
    thread other than the main one, mid-search, it ends the run with the best schedule."""
    proc = _searching(HARD, "cpsat")
    # the search's threads: CP-SAT's start once its model is loaded
    deadline = time.monotonic() + 60
    threads: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None and len(threads) < 2:
        time.sleep(0.2)
        threads = _threads_open_to_sigint(proc.pid)
    assert threads, "no thread besides the main one"
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.syscall(TGKILL[os.uname().machine], proc.pid, threads[-1], signal.SIGINT) == 0
    try:
        stdout, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, stdout
    data = json.loads(stdout)
    assert data["interrupted"] is True and data["status"] == "feasible"


def test_hare_reports_its_relaxation_bounds():
    """Hare's step 1 as the LP with lazy cuts reports each round's LP value: lower bounds
    that never exceed the final certified bound."""
    reports = []
    result = solve(
        load_instance(TOY), "hare", params={"step1": "lp"}, progress=lambda i, b: reports.append(b)
    )
    assert reports and all(b is not None for b in reports)
    assert max(reports) <= result.bound + 1e-6


def test_a_result_says_which_bound_its_gap_uses(capsys):
    inst = load_instance(TOY)
    assert solve(inst, "ect").extra["bound_source"] == "critical_path"
    exact = solve(inst, "cpsat")
    assert exact.extra["bound_source"] == "method" and exact.bound == exact.extra["bound_method"]
    assert main(["solve", str(TOY), "--method", "cpsat"]) == 0
    assert "(the method's certified bound)" in capsys.readouterr().out


def test_online_results_print_jct_metrics_not_a_gap(capsys):
    assert main(["simulate", str(TOY), "--policy", "hlas"]) == 0
    out = capsys.readouterr().out
    assert "wJCT" in out and "mean JCT" in out and "floor" in out
    assert "gap" not in out


def test_a_placement_gap_is_absolute(tmp_path, capsys):
    """Liquid's paper cost can be negative: a placement's gap is cost − bound, never a ratio;
    schedules keep the relative gap and get the absolute one too."""
    from optsched.placement import generate_placement, place
    from optsched.placement.generate import PlacementSpec

    inst = generate_placement(PlacementSpec(hosts=5, jobs=3), 0)
    exact = place(inst, "cpsat")
    assert exact.objective is not None and exact.objective < 0
    assert exact.gap is None and exact.absolute_gap == 0.0
    assert exact.extra["time_limit"] == EXACT_TIME_LIMIT
    data = exact.to_dict()
    assert data["gap"] is None and data["absolute_gap"] == 0.0
    ect = solve(load_instance(TOY), "ect")
    assert ect.absolute_gap == ect.objective - ect.bound and ect.gap is not None
    path = tmp_path / "p.json"
    from optsched.placement import save_placement_instance

    save_placement_instance(path, inst)
    assert main(["place", str(path), "--method", "bestfit"]) == 0
    assert "(cost − bound)" in capsys.readouterr().out


def test_solver_start_up_is_reported_apart_from_the_runtime():
    """The first CP-SAT run in a process imports OR-Tools before its clock starts: its
    runtime excludes that, extra.startup_s reports it; a second run has no start-up."""
    code = (
        "from optsched import solve, load_instance\n"
        f"i = load_instance({str(TOY)!r})\n"
        "a, b = solve(i, 'cpsat'), solve(i, 'cpsat')\n"
        "print(a.extra['startup_s'], b.extra['startup_s'])"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    first, second = map(float, run.stdout.split())
    assert first > 0.01 and second < first / 10  # importing OR-Tools against a lookup


def test_results_pickle_with_plain_numbers_and_string_params():
    """A Result survives pickling (worker processes), its JSON carries no NumPy scalars,
    numbers given as parameters are taken as their text, and an optimal result's gap is 0."""
    import pickle

    from optsched.online import simulate

    inst = load_instance(TOY)
    result = solve(inst, "cpsat", params={"workers": 1})
    assert result.params == {"workers": "1"}
    if result.status == "optimal":
        assert result.gap == 0.0
    else:
        assert_out_of_time(result)
    again = pickle.loads(pickle.dumps(result))
    assert again.to_dict() == result.to_dict() and again.schedule == result.schedule
    data = result.to_dict()
    assert type(data["objective"]) is float
    assert all(type(v) in (float, int, dict) for v in data["metrics"].values())
    gang = simulate(inst, "fifo", mode="gang")
    assert gang.mode == "gang" and gang.simulation is not None


def test_every_result_pickles_with_its_solution_and_simulation():
    """Instances, jobs and cluster profiles hold read-only mappings; results of all three
    verbs, a simulation's realised instance included, survive pickling."""
    import pickle

    from optsched.generate import LiquidSpec, generate_liquid
    from optsched.online import simulate
    from optsched.placement import PlacementSpec, generate_placement, place

    inst = load_instance(TOY)
    online = simulate(inst, "hlas")
    again = pickle.loads(pickle.dumps(online))
    assert again.simulation.instance == online.simulation.instance
    assert again.to_dict() == online.to_dict()
    cluster = generate_liquid(LiquidSpec(jobs=2, hosts=2), 0)
    assert pickle.loads(pickle.dumps(cluster)) == cluster
    placed = place(generate_placement(PlacementSpec(), 0), "cpsat")
    assert pickle.loads(pickle.dumps(placed)).placement == placed.placement
    assert placed.bound_source == "method"  # a placement's only bound is the method's


def test_the_runs_seed_reaches_a_policy():
    """fifo-random draws its GPU types from the run's seed, which the Result records."""
    from optsched import GeneratorSpec, generate
    from optsched.online import simulate

    inst = generate(GeneratorSpec(jobs=12, gpus=6, gpu_types=3), seed=1).with_mode("gang")
    runs = {seed: simulate(inst, "fifo-random", seed=seed) for seed in range(6)}
    assert all(r.seed == seed for seed, r in runs.items())
    assert len({r.objective for r in runs.values()}) > 1
    assert simulate(inst, "fifo-random", seed=3).objective == runs[3].objective
