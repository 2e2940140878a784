"""The compiled HLAS engine against the Python event engine: the same schedule task by task,
the same events, decisions, metrics, observer calls and policy state, on random instances
and options; and how a run chooses its engine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, check
from optsched.errors import InputError
from optsched.online import _hlas_compiled as hlas_compiled
from optsched.online import simulator
from optsched.online.engine import Observer, ProgressObserver
from optsched.online.hlas import HLAS
from optsched.online.run import simulate
from optsched.online.simulator import run_simulation
from optsched.testing import instances

POLICIES = st.builds(
    HLAS,
    thresholds=st.sampled_from([None, None, (1.0,), (2.0, 6.0), (0.5, 3.0, 9.0)]),
    starvation=st.sampled_from([0.0, 0.5, 0.5, 2.0, math.inf]),
    mapping=st.sampled_from(["A", "B", "B"]),
    quantiles=st.sampled_from([(0.5, 0.8), (0.5,), (0.2, 0.4, 0.9)]),
    calibration=st.sampled_from(["history", "history", "workload"]),
)


@st.composite
def relaxed_instances(draw: st.DrawFn) -> Instance:
    """Relaxed instances with up to 8 jobs of up to 6 rounds on up to 6 GPUs; some with
    sync times that differ between GPUs of one type, some with every job arriving at 0."""
    inst = draw(instances(mode="relaxed", max_jobs=8, max_gpus=6, max_rounds=6, max_k=4))
    per_gpu = draw(st.booleans())
    together = draw(st.booleans())
    jobs = []
    for job in inst.jobs:
        sync_by_gpu = None
        if per_gpu:
            sync_by_gpu = {
                g.id: draw(st.sampled_from([0.0, 0.5, 1.25, 3.0]))
                for g in inst.gpus
                if g.type in job.compute
            }
        jobs.append(
            Job(
                id=job.id,
                arrival=0.0 if together else job.arrival,
                weight=job.weight,
                rounds=job.rounds,
                tasks_per_round=job.tasks_per_round,
                compute=dict(job.compute),
                sync=None if per_gpu else job.sync,
                sync_by_gpu=sync_by_gpu,
            )
        )
    return Instance(inst.name, tuple(jobs), inst.gpus, mode="relaxed")


class Calls(Observer):
    """Every hook call, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def on_task(self, job, round_, task, gpu, start, busy_until):
        self.calls.append(("task", job, round_, task, gpu, start, busy_until))

    def on_held(self, gpu, start, end):
        self.calls.append(("held", gpu, start, end))

    def on_job_done(self, job, completion):
        self.calls.append(("done", job, completion))


def both(inst, make, **kw):
    """The Python engine's and the compiled engine's runs (with their observers' calls
    and policies)."""
    out = []
    for engine in ("python", "compiled"):
        policy, calls = make(), Calls()
        sim = run_simulation(inst, policy, engine=engine, observers=[calls], **kw)
        out.append((sim, calls.calls, policy))
    return out


def assert_same(python, compiled):
    (a, calls_a, pa), (b, calls_b, pb) = python, compiled
    assert a.schedule.tasks == b.schedule.tasks
    assert calls_a == calls_b
    assert (a.events, a.decisions, a.objective) == (b.events, b.decisions, b.objective)
    assert a.metrics == b.metrics
    assert np.array_equal(a.completion, b.completion)
    assert pa.levels == pb.levels
    assert pa._entered == pb._entered
    assert (pa._history and pa._history.sizes) == (pb._history and pb._history.sizes)


@settings(max_examples=300, deadline=None)
@given(relaxed_instances(), POLICIES, st.sampled_from([0.0, 0.0, 0.3]), st.integers(0, 3))
def test_compiled_hlas_makes_the_python_engines_run(inst, policy, noise, seed):
    def make():
        return HLAS(
            policy.thresholds,
            policy.starvation,
            policy.mapping,
            quantiles=policy.quantiles,
            calibration=policy.calibration,
        )

    python, compiled = both(inst, make, noise=noise, switch_cost=noise / 3, seed=seed)
    assert_same(python, compiled)
    report = check(compiled[0].instance, compiled[0].schedule)
    assert report.feasible, report.violations[:1]


@settings(max_examples=60, deadline=None)
@given(relaxed_instances(), POLICIES)
def test_buffers_that_fill_and_grow_change_nothing(inst, policy):
    """A replay buffer of one decision and a revisit heap with no slack: the loop returns
    to Python to flush and to grow, and resumes where it was."""

    def make():
        return HLAS(policy.thresholds, policy.starvation, policy.mapping)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hlas_compiled, "LOG_ENTRIES", 1)
        patch.setattr(hlas_compiled, "REVISIT_SLACK", 0)
        assert_same(*both(inst, make))


def test_a_long_run_with_promotions_and_new_thresholds():
    """Forty jobs of up to 30 rounds arriving over time on three GPU types: starvation
    promotions, thresholds re-derived at 1, 2, 4, ... 32 finished jobs, idle GPUs of every
    class at once."""
    rng = np.random.default_rng(7)
    gpus = tuple(GPU(f"g{i}", t) for i, t in enumerate(["A"] * 3 + ["B"] * 4 + ["C"] * 2))
    jobs = []
    for j in range(40):
        types = [t for t in "ABC" if rng.random() < 0.8] or ["B"]
        jobs.append(
            Job(
                id=f"j{j}",
                arrival=float(rng.integers(0, 200)),
                weight=float(rng.integers(1, 4)),
                rounds=int(rng.integers(1, 31)),
                tasks_per_round=int(rng.integers(1, 5)),
                compute={t: float(rng.uniform(1, 20)) for t in types},
                sync={t: float(rng.uniform(0, 2)) for t in types},
            )
        )
    inst = Instance("long", tuple(jobs), gpus, mode="relaxed")
    python, compiled = both(inst, lambda: HLAS(starvation=0.3))
    assert_same(python, compiled)
    assert python[2]._entered  # some job was promoted
    assert len(python[2]._history.sizes) == 40


def test_auto_takes_the_compiled_engine_from_its_size(monkeypatch):
    inst = Instance(
        "two",
        (
            Job("a", 0.0, 1.0, 3, 2, compute={"A": 1.0}),
            Job("b", 1.0, 1.0, 2, 1, compute={"A": 2.0}),
        ),
        (GPU("g0", "A"), GPU("g1", "A")),
    )
    used = []
    real = hlas_compiled.simulate_hlas
    monkeypatch.setattr(
        hlas_compiled, "simulate_hlas", lambda *a, **k: used.append(1) or real(*a, **k)
    )
    small = run_simulation(inst, HLAS())
    assert not used
    monkeypatch.setattr(simulator, "COMPILED_FROM_TASKS", inst.n_tasks)
    large = run_simulation(inst, HLAS())
    assert used
    assert small.schedule.tasks == large.schedule.tasks
    result = simulate(inst, "hlas", engine="compiled")
    assert result.objective == pytest.approx(small.objective)
    assert result.extra["engine"] == "compiled" and result.extra["startup_s"] > 0
    assert (small.engine, large.engine) == ("python", "compiled")


@pytest.mark.parametrize(
    ("policy", "kw", "message"),
    [
        (HLAS(mapping="C"), {}, "mapping A or B"),
        (HLAS(form="continuous"), {}, "form=queues"),
        (HLAS(), {"tick": 10.0}, "no tick"),
        ("tiresias", {}, "has no compiled engine"),
        ("liquid", {}, "cluster policy 'liquid' has no compiled engine"),
    ],
)
def test_compiled_refuses_what_it_does_not_cover(policy, kw, message):
    inst = Instance("one", (Job("a", 0.0, 1.0, 1, 1, compute={"A": 1.0}),), (GPU("g", "A"),))
    if isinstance(policy, str):
        with pytest.raises(InputError, match=message):
            simulate(inst.with_mode("gang"), policy, engine="compiled")
        return
    with pytest.raises(InputError, match=message):
        run_simulation(inst, policy, engine="compiled", **kw)
    with pytest.raises(InputError, match="engine must be one of"):
        run_simulation(inst, policy, engine="fast")
    # auto falls back to the Python engine
    assert math.isfinite(run_simulation(inst, policy, **kw).objective)


def test_the_progress_line_counts_every_task(monkeypatch, capsys):
    """The compiled engine tells the progress line its counts in bulk: the last line has
    every task started, as the event engine's does."""
    monkeypatch.setattr(ProgressObserver, "EVERY", 0.0)
    inst = Instance(
        "three",
        tuple(Job(f"j{k}", float(k), 1.0, 4, 2, compute={"A": 1.0 + k}) for k in range(3)),
        (GPU("g0", "A"), GPU("g1", "A"), GPU("g2", "A")),
    )
    for engine in ("python", "compiled"):
        run_simulation(inst, HLAS(), engine=engine, progress=True, record=False)
        lines = capsys.readouterr().err.splitlines()
        assert lines and f"{inst.n_tasks}/{inst.n_tasks} tasks" in lines[-1], engine


def test_thresholds_changing_many_times_in_one_instant_keep_room_for_revisits():
    """64 jobs finishing at one instant change the thresholds seven times (at 1, 2, 4, ...,
    64 finished), each re-keying 500 waiting jobs that push a revisit, more than one
    instant's room: the loop returns to Python in the middle of the instant each time,
    which makes room then."""
    jobs = [Job("hog", 0.0, 1.0, 1, 1, compute={"B": 100.0})]
    jobs += [Job(f"big{i}", 0.0, 1.0, 2, 1, compute={"C": 1.0}) for i in range(500)]
    jobs += [
        Job(f"small{i}", 0.0, 1.0, 1, 1, compute={"A": 1.0, "B": 0.5 + 0.001 * i})
        for i in range(64)
    ]
    gpus = [GPU("b0", "B"), *(GPU(f"c{i}", "C") for i in range(500))]
    gpus += [GPU(f"a{i}", "A") for i in range(64)]
    inst = Instance("rekeys", tuple(jobs), tuple(gpus), mode="relaxed")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hlas_compiled, "REVISIT_SLACK", 0)
        assert_same(*both(inst, lambda: HLAS(starvation=2.0, mapping="A")))


def test_a_job_promoted_with_no_service_is_remembered():
    """A threshold of 0 (possible from Python) puts a job that has not started in queue 1,
    and starvation promotes it with service 0: both engines remember that promotion."""
    inst = Instance(
        "zero",
        (
            Job("a", 0.0, 1.0, 2, 1, compute={"A": 1.0}),
            Job("b", 0.0, 1.0, 1, 1, compute={"A": 1.0}),
        ),
        (GPU("g", "A"),),
    )
    python, compiled = both(inst, lambda: HLAS(thresholds=(0.0,), mapping="A"))
    assert_same(python, compiled)
    assert compiled[2]._entered == {0: 1.0, 1: 0.0}


def test_compare_and_the_cli_take_the_engine(tmp_path, capsys):
    from optsched.cli import main
    from optsched.io import save_instance
    from optsched.online.compare import compare

    inst = Instance(
        "two",
        (
            Job("a", 0.0, 1.0, 3, 2, compute={"A": 1.0}),
            Job("b", 1.0, 1.0, 2, 1, compute={"A": 2.0}),
        ),
        (GPU("g0", "A"), GPU("g1", "A")),
    )
    table = compare(inst, ["hlas"], engine="compiled")
    assert table.runs[0].result.extra["engine"] == "compiled"
    with pytest.raises(InputError, match="has no compiled engine"):
        compare(inst, ["hlas", "srtf"], engine="compiled")
    path = tmp_path / "two.json"
    save_instance(path, inst)
    assert main(["simulate", str(path), "--policy", "hlas", "--engine", "compiled"]) == 0
    assert "compiled engine" in capsys.readouterr().out


def test_without_a_c_compiler_auto_falls_back_and_compiled_says_why(monkeypatch):
    """No C compiler to build the loop with: auto runs the event engine, compiled is an
    InputError that says what is missing."""
    inst = Instance("one", (Job("a", 0.0, 1.0, 2, 1, compute={"A": 1.0}),), (GPU("g", "A"),))
    monkeypatch.setattr(hlas_compiled, "_kernel", [])  # not loaded yet in this process
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setattr(simulator, "COMPILED_FROM_TASKS", 0)
    assert run_simulation(inst, HLAS()).engine == "python"
    with pytest.raises(
        InputError, match=r"unavailable: the C compiler \$CC='/nonexistent/cc' was not"
    ):
        run_simulation(inst, HLAS(), engine="compiled")


def test_a_failed_compilation_says_what_the_compiler_said(monkeypatch, tmp_path):
    monkeypatch.setattr(hlas_compiled, "_kernel", [])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing cached
    monkeypatch.setattr(hlas_compiled, "CFLAGS", ("-no-such-flag",))
    with pytest.raises(ImportError, match=r"compiling the hlas kernel .* failed: .*no-such-flag"):
        hlas_compiled.kernel()
    assert not list((tmp_path / "optsched").iterdir())  # no half-written library left


def test_a_damaged_library_in_the_cache_is_built_again(monkeypatch, tmp_path):
    """A library cut short (a crash while it was written, a full disk) is never loaded (a
    truncated shared library kills the process that maps it): its SHA-256 beside it does
    not match, and it is compiled again."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(hlas_compiled, "_kernel", [])
    hlas_compiled.kernel()
    (library,) = (tmp_path / "optsched").glob("hlas-*.so")
    whole = library.read_bytes()
    cut = tmp_path / "cut"  # a new file: the one this process has mapped stays whole
    cut.write_bytes(whole[:1000])
    cut.replace(library)
    monkeypatch.setattr(hlas_compiled, "_kernel", [])
    hlas_compiled.kernel()
    assert library.read_bytes() == whole


def test_thousands_of_jobs_and_a_hundred_gpus_per_class():
    """5,000 jobs and 130 GPUs of a class: sets of ranks with three levels of words (jobs)
    and two (GPUs), as on real traces."""
    rng = np.random.default_rng(3)
    types = {"A": 130, "B": 70, "C": 3}
    gpus = tuple(GPU(f"{t}{i}", t) for t, count in types.items() for i in range(count))
    jobs = tuple(
        Job(
            f"j{j}",
            float(rng.integers(0, 400)),
            float(rng.choice([1.0, 2.0])),
            int(rng.integers(1, 4)),
            int(rng.integers(1, 3)),
            compute={t: float(rng.integers(1, 60)) for t in types if rng.random() < 0.8}
            or {"B": 5.0},
        )
        for j in range(5000)
    )
    inst = Instance("many", jobs, gpus, mode="relaxed")
    for mapping in ("A", "B"):
        python, compiled = both(inst, lambda m=mapping: HLAS(starvation=1.0, mapping=m))
        assert_same(python, compiled)
