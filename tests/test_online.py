"""The online simulator and its policies: semantics, checker, non-clairvoyance."""

from __future__ import annotations

import dataclasses
import io
import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from optsched import GPU, Instance, Job, check
from optsched.critical_path import critical_path_bound
from optsched.errors import InputError
from optsched.io import load_instance
from optsched.online.baselines import FIFO, SRTF, AlloX, FIFORandom, Homo, Replay, Tiresias
from optsched.online.engine import ProgressObserver
from optsched.online.hlas import HLAS, fill_fastest
from optsched.online.run import simulate
from optsched.online.simulator import (
    JobState,
    PolicyError,
    SizeDistribution,
    realise,
    run_simulation,
    size_distribution,
    speed_classes,
)
from optsched.testing import instances
from tests.conftest import ROOT, n_examples

TOY = ROOT / "optsched" / "data" / "instances" / "hare-toy.instance.json"
# explicit thresholds: derived ones read the workload's size distribution, which changing a
# job's rounds changes (tests/test_hlas.py covers the derived form)
NON_CLAIRVOYANT = [
    HLAS(thresholds=(2.0, 6.0), mapping="A"),
    HLAS(thresholds=(2.0, 6.0)),
    HLAS(thresholds=(2.0, 6.0), mapping="C", starvation=0.0),
    HLAS(form="continuous", mapping="A"),
    HLAS(thresholds=(2.0, 6.0), starvation=1.0, form="continuous"),
]
NON_CLAIRVOYANT_GANG = [
    FIFO(),
    FIFORandom(),
    FIFORandom(seed=3),
    Tiresias(thresholds=(3.0,), starvation=1.0),
]


@dataclasses.dataclass
class Probe:
    """A non-clairvoyant relaxed-mode test policy; subclasses define decide()."""

    name: str = "probe"
    clairvoyant: bool = False
    modes: frozenset = frozenset({"relaxed"})


def job(name, compute, sync=None, **kw):
    base = {"arrival": 0.0, "weight": 1.0, "rounds": 1, "tasks_per_round": 1}
    return Job(id=name, compute=compute, sync=sync, **{**base, **kw})


def starts(schedule):
    return {(t.job, t.round, t.task): (t.gpu, t.start) for t in schedule.tasks}


def test_relaxed_semantics_by_hand():
    """GPU busy for compute only; the next round waits for every result incl. sync."""
    gpus = (GPU("fast", "V100"), GPU("slow", "K80"))
    inst = Instance(
        "x",
        (
            job("a", {"V100": 1, "K80": 3}, {"V100": 2, "K80": 2}, rounds=2, tasks_per_round=2),
            job("b", {"V100": 1, "K80": 1}, arrival=0.5),
        ),
        gpus,
    )
    sim = run_simulation(inst, HLAS())
    # t=0: a's two tasks on fast [0,1) and slow [0,3); t=0.5: b waits; t=1: fast frees → b
    # [1,2); a's round-0 results ready at max(1+2, 3+2) = 5; round 1 at 5 on fast and slow
    assert starts(sim.schedule) == {
        ("a", 0, 0): ("fast", 0.0),
        ("a", 0, 1): ("slow", 0.0),
        ("b", 0, 0): ("fast", 1.0),
        ("a", 1, 0): ("fast", 5.0),
        ("a", 1, 1): ("slow", 5.0),
    }
    assert sim.completion.tolist() == [10.0, 2.0]
    assert sim.objective == check(inst, sim.schedule).objective == 12.0


def test_paced_srtf_keeps_a_round_off_slower_gpus_by_hand():
    """A round lasts as long as its slowest task: paced SRTF starts a's second task on the
    V100 its first one frees at 1 (round over at 2) instead of on the idle K80 (over at 4);
    b, arriving at 0.5, leaves the idle K80 too (4× its fastest compute, over slowdown 2),
    and takes it with slowdown 4. Paced SRTF is relaxed-mode only."""
    gpus = (GPU("fast", "V100"), GPU("slow", "K80"))
    a = job("a", {"V100": 1, "K80": 4}, tasks_per_round=2)
    b = job("b", {"V100": 1, "K80": 4}, arrival=0.5, rounds=2)
    inst = Instance("x", (a, b), gpus)
    fastest = simulate(inst, "srtf")
    assert starts(fastest.schedule)[("a", 0, 1)] == ("slow", 0.0)
    paced = simulate(inst, "srtf", params={"placement": "paced"})
    assert starts(paced.schedule) == {
        ("a", 0, 0): ("fast", 0.0),
        ("a", 0, 1): ("fast", 1.0),  # a has 1 task left, b 2: a first
        ("b", 0, 0): ("fast", 2.0),
        ("b", 1, 0): ("fast", 3.0),
    }
    assert paced.simulation.completion.tolist() == [2.0, 4.0]
    assert fastest.simulation.completion.tolist() == [4.0, 3.0]
    patient = simulate(inst, "srtf", params={"placement": "paced", "slowdown": "4"})
    assert starts(patient.schedule)[("b", 0, 0)] == ("slow", 0.5)
    for result in (fastest, paced, patient):
        assert check(inst, result.schedule).feasible
    with pytest.raises(InputError, match="placement=paced is for relaxed mode"):
        simulate(inst.with_mode("gang"), "srtf", params={"placement": "paced"})
    # one policy object run again starts anew (its paces are of the last run's jobs)
    policy = SRTF(placement="paced")
    first = run_simulation(inst, policy)
    slower = job("c", {"V100": 2, "K80": 8})  # slower than the pace a's round 0 had
    again = run_simulation(Instance("y", (slower,), gpus), policy)
    assert first.completion.tolist() == [2.0, 4.0] and again.completion.tolist() == [2.0]
    for bad in ({"placement": "Paced"}, {"slowdown": 0.5}):
        with pytest.raises(InputError, match=r"srtf: (placement|slowdown)"):
            SRTF(**bad)


def test_gang_fifo_is_strict_and_uses_the_fastest_gpus():
    gpus = tuple(GPU(f"g{i}", t) for i, t in enumerate(["K80", "V100", "V100"]))
    inst = Instance(
        "x",
        (
            job("a", {"V100": 2, "K80": 4}, tasks_per_round=2),
            job("b", {"V100": 2, "K80": 4}, tasks_per_round=3, arrival=1),
            job("c", {"V100": 1, "K80": 1}, arrival=1.5),
        ),
        gpus,
        mode="gang",
    )
    sim = run_simulation(inst, FIFO())
    s = starts(sim.schedule)
    assert {s["a", 0, 0][0], s["a", 0, 1][0]} == {"g1", "g2"}  # the two V100s
    # b needs 3 GPUs: it waits until a ends at 2, and c (arrived later) waits behind it
    assert s["b", 0, 0][1] == 2.0 and s["c", 0, 0][1] == 6.0
    assert check(inst, sim.schedule).feasible


def test_toy_every_policy_is_checked_and_above_the_bound():
    inst = load_instance(TOY)
    for policy, params in [
        ("hlas", {}),
        ("hlas", {"mapping": "B"}),
        ("hlas", {"mapping": "C"}),
        ("srtf", {}),
    ]:
        result = simulate(inst, policy, params=params)
        sim = result.simulation
        assert result.bound is None and result.gap is None  # judged by JCT, not a gap
        assert result.objective >= result.extra["bound_critical_path"]
        assert check(sim.instance, result.schedule).feasible
    result = simulate(inst.with_mode("gang"), "fifo")
    assert result.objective >= result.extra["bound_critical_path"]


@settings(max_examples=n_examples(60), deadline=None)
@given(
    instances(),
    st.sampled_from(["hlas", "fifo-perf", "srtf", "tiresias", "max-min-fairness"]),
    st.sampled_from([0.0, 0.3]),
    st.sampled_from(["fluid", "capacity"]),
)
def test_every_online_result_carries_its_certified_regret(inst, policy, noise, bound):
    """The regret is the checked objective over the best of the bounds computed on the
    realised instance, all certified: at least 1 on any instance, with noise too (the bounds
    are of the instance the schedule ran on), on the objective and on the weighted JCT."""
    try:
        result = simulate(inst, policy, noise=noise, bound=bound)
    except InputError:  # a policy for the other mode, or a job no single type can hold
        assume(False)
    parts = [
        result.extra[k]
        for k in ("bound_critical_path", "bound_fluid", "bound_capacity")
        if k in result.extra
    ]
    assert len(parts) == (3 if result.extra.get("capacity_status") == "optimal" else 2)
    assert result.extra["regret_bound"] == max(parts)
    assert result.regret == pytest.approx(result.objective / max(parts))
    assert result.regret >= 1 - 1e-9
    if result.regret_jct is not None:
        assert result.regret_jct >= 1 - 1e-9
    assert result.bound is None  # judged by its JCT and its regret, not by a gap


@given(instances(mode="relaxed"))
def test_relaxed_policies_pass_the_checker(inst):
    for policy in [
        *NON_CLAIRVOYANT,
        HLAS(),
        HLAS(mapping="A"),
        HLAS(mapping="C"),
        SRTF(),
        Homo(),
        AlloX(),
    ]:
        sim = run_simulation(inst, policy)
        report = check(sim.instance, sim.schedule)
        assert report.feasible, report.violations[:1]
        assert report.objective == pytest.approx(sim.objective)
        assert sim.objective >= critical_path_bound(inst) - 1e-9


@given(instances(mode="gang"))
def test_gang_policies_pass_the_checker(inst):
    for policy in (
        FIFO(),
        FIFORandom(),
        FIFORandom(seed=1),
        Tiresias(),
        Tiresias(thresholds=(3.0,), starvation=1.0),
        SRTF(),
        Homo(),
    ):
        sim = run_simulation(inst, policy)
        report = check(sim.instance, sim.schedule)
        assert report.feasible and report.objective == pytest.approx(sim.objective)


@given(instances())
def test_replaying_a_schedule_never_starts_a_task_later(inst):
    """Per-GPU order kept, every task as early as possible: no start moves later."""
    from optsched.ect import ect_schedule

    offline = ect_schedule(inst)
    sim = run_simulation(inst, Replay(offline))
    assert check(inst, sim.schedule).feasible

    def by_gpu(schedule):
        out = {}
        for t in sorted(schedule.tasks, key=lambda t: t.start):
            out.setdefault(t.gpu, []).append((t.job, t.round, t.start))
        return out

    replayed, original = by_gpu(sim.schedule), by_gpu(offline)
    assert replayed.keys() == original.keys()
    for gpu, tasks in original.items():
        assert [(j, r) for j, r, _ in replayed[gpu]] == [(j, r) for j, r, _ in tasks]
        assert all(a[2] <= b[2] + 1e-9 for a, b in zip(replayed[gpu], tasks, strict=True))
    assert sim.objective <= check(inst, offline).objective + 1e-9


@given(instances(mode="relaxed", max_rounds=4))
def test_non_clairvoyant_decisions_ignore_hidden_sizes(inst):
    """Change a job's number of rounds: nothing starts differently before it finishes."""
    for policy in NON_CLAIRVOYANT:
        target = inst.jobs[0]
        for rounds in {1, target.rounds + 2}:
            other = dataclasses.replace(
                inst, jobs=(dataclasses.replace(target, rounds=rounds), *inst.jobs[1:])
            )
            a, b = run_simulation(inst, policy), run_simulation(other, policy)
            horizon = min(a.completion[0], b.completion[0])
            before_a = {k: v for k, v in starts(a.schedule).items() if v[1] < horizon}
            before_b = {k: v for k, v in starts(b.schedule).items() if v[1] < horizon}
            assert before_a == before_b


def _registered_non_clairvoyant() -> list[tuple[str, str]]:
    """(policy, mode) for every registered simulate method that declares itself
    non-clairvoyant and runs on the basic model (replay needs a schedule; liquid a
    cluster instance)."""
    from optsched.online.engine import declared
    from optsched.online.simulator import execution_model
    from optsched.registry import methods

    out = []
    for info in methods("simulate"):
        if info.name == "replay":
            continue
        policy = info.func(info.options(), 0)
        if declared(policy, "clairvoyant") or execution_model(policy) != "basic":
            continue
        out += [(info.name, mode) for mode in sorted(info.modes)]
    return out


NON_CLAIRVOYANT_REGISTERED = _registered_non_clairvoyant()


def test_every_built_in_non_clairvoyant_policy_is_differentially_tested():
    assert {name for name, _ in NON_CLAIRVOYANT_REGISTERED} == {
        "hlas",
        "tiresias",
        "fifo",
        "fifo-perf",
        "fifo-random",
        "max-min-fairness",
        "max-throughput",
        "isolated",
    }


@settings(max_examples=n_examples(40), deadline=None)
@given(st.data())
def test_default_non_clairvoyant_decisions_ignore_later_rounds(data):
    """Every registered non-clairvoyant policy with its default settings (HLAS' and
    Tiresias' thresholds derived from the jobs finished so far): giving one job 3 more
    rounds changes no decision taken before it finished (with thresholds derived from the
    whole workload, 24 of 150 runs of HLAS did)."""
    name, mode = data.draw(st.sampled_from(NON_CLAIRVOYANT_REGISTERED))
    inst = data.draw(instances(mode=mode, max_rounds=4))
    target = inst.jobs[data.draw(st.integers(0, inst.n_jobs - 1))]
    other = dataclasses.replace(
        inst,
        jobs=tuple(
            dataclasses.replace(j, rounds=j.rounds + 3) if j is target else j for j in inst.jobs
        ),
    )
    try:
        a, b = simulate(inst, name), simulate(other, name)
    except InputError:  # an allocation policy: a job fits on no single GPU type
        assume(False)
    index = inst.job_index[target.id]
    horizon = a.simulation.completion[index]
    assert {k: v for k, v in starts(a.schedule).items() if v[1] < horizon} == {
        k: v for k, v in starts(b.schedule).items() if v[1] < horizon
    }


def test_workload_calibration_reads_future_sizes_and_history_does_not():
    """calibration=workload (thresholds from every job's size, the earlier default) sees a
    job's hidden rounds before it finishes; the default history does not."""
    jobs = (
        job("a", {"V100": 1.0}, rounds=1),
        job("b", {"V100": 1.0}, rounds=6),
        job("c", {"V100": 1.0}, rounds=2, arrival=0.5),
    )
    inst = Instance("leak", jobs, (GPU("g", "V100"),))
    sizes = {c: HLAS(calibration=c) for c in ("workload", "history")}
    for policy in sizes.values():
        policy.calibrate(size_distribution(inst))
    assert sizes["workload"].levels and not sizes["history"].levels


@given(instances(mode="gang", max_rounds=4))
def test_non_clairvoyant_gang_decisions_ignore_hidden_sizes(inst):
    for policy in NON_CLAIRVOYANT_GANG:
        target = inst.jobs[0]
        other = dataclasses.replace(
            inst, jobs=(dataclasses.replace(target, rounds=1), *inst.jobs[1:])
        )
        a, b = run_simulation(inst, policy), run_simulation(other, policy)
        horizon = min(a.completion[0], b.completion[0])
        assert {k: v for k, v in starts(a.schedule).items() if v[1] < horizon} == {
            k: v for k, v in starts(b.schedule).items() if v[1] < horizon
        }


def test_baselines_by_hand():
    """Homo ignores speeds, AlloX runs one task of a job at a time, Tiresias skips a job
    that does not fit and serves the least-attained job first."""
    gpus = (GPU("slow", "K80"), GPU("fast", "V100"))
    one = Instance("x", (job("a", {"K80": 4, "V100": 1}, tasks_per_round=2),), gpus)
    assert {t.gpu for t in run_simulation(one, Homo()).schedule.tasks} == {"slow", "fast"}
    allox = run_simulation(one, AlloX()).schedule
    assert sorted((t.gpu, t.start) for t in allox.tasks) == [("fast", 0.0), ("fast", 1.0)]
    gang = Instance(
        "x",
        (
            job("big", {"K80": 1, "V100": 1}, tasks_per_round=2, rounds=3),
            job("small", {"K80": 1, "V100": 1}, arrival=0.5),
        ),
        gpus,
        mode="gang",
    )
    s = starts(run_simulation(gang, Tiresias(thresholds=(1.5,))).schedule)
    # big holds both GPUs for [0,1) and attains 2 GPU-s ≥ 1.5: small (0 attained) goes first
    # at 1 on the lowest-index GPU; big (needs 2) cannot fit until 2
    assert s["small", 0, 0] == ("slow", 1.0) and s["big", 1, 0][1] == 2.0


def test_clairvoyant_policy_sees_sizes():
    """SRTF favours the job with less remaining work, which only the oracle reveals."""
    gpus = (GPU("g", "A"),)
    long_ = job("long", {"A": 1}, rounds=5)
    short = job("short", {"A": 1}, rounds=2, arrival=0.5)
    sim = run_simulation(Instance("x", (long_, short), gpus), SRTF())
    assert starts(sim.schedule)["short", 0, 0][1] == 1.0  # preempts "long" at a task boundary


def test_noise_and_switch_cost_give_the_realised_instance():
    inst = load_instance(TOY)
    real = realise(inst, noise=0.2, switch_cost=0.05, seed=3)
    ratio = real.compute / inst.compute
    assert np.all((ratio >= 0.8 * 1.05 - 1e-12) & (ratio <= 1.2 * 1.05 + 1e-12))
    assert np.array_equal(real.sync, inst.sync)
    assert realise(inst, noise=0.2, seed=3) == realise(inst, noise=0.2, seed=3)
    sim = run_simulation(inst, HLAS(), noise=0.2, switch_cost=0.05, seed=3)
    assert check(sim.instance, sim.schedule).feasible
    assert not check(inst, sim.schedule).feasible or sim.instance == inst
    with pytest.raises(InputError, match="noise"):
        realise(inst, noise=1.5)


def test_heartbeat_scheduling_decides_only_at_ticks():
    inst = load_instance(TOY)
    sim = run_simulation(inst, HLAS(), tick=0.7, event_driven=False)
    assert all(abs(t.start / 0.7 - round(t.start / 0.7)) < 1e-9 for t in sim.schedule.tasks)
    assert check(inst, sim.schedule).feasible
    assert sim.objective >= run_simulation(inst, HLAS()).objective


def test_bad_decisions_and_stalls_are_policy_errors():
    inst = load_instance(TOY)

    class Greedy(Probe):
        def decide(self, view):
            return [(job.index, 0) for job in view.waiting]

    with pytest.raises(PolicyError, match="busy"):
        run_simulation(inst, Greedy())

    class Idle(Probe):
        def decide(self, view):
            return []

    with pytest.raises(PolicyError, match="unfinished"):
        run_simulation(inst, Idle())
    with pytest.raises(PolicyError, match="unfinished"):
        run_simulation(inst, Idle(), tick=1.0, event_driven=False)
    with pytest.raises(InputError, match="does not support mode"):
        run_simulation(inst.with_mode("gang"), HLAS())


@pytest.mark.parametrize(
    "job, gpu",
    [(1.0, 0), ("1", 0), (True, 0), (np.float32(1), 0), (0, 0.9), (0, 1.0), (0, "0"), (0, False)],
)
@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_decisions_that_are_not_integer_indices_are_refused(job, gpu, mode):
    """No silent coercion: a job or GPU index that is a float, a string or a bool is a
    PolicyError naming the policy (NumPy integers are integers)."""
    inst = load_instance(TOY).with_mode(mode)

    both = frozenset({"relaxed", "gang"})

    class Sloppy(Probe):
        def decide(self, view):
            first = view.waiting[0].index
            j = type(job)(first) if isinstance(job, float | np.floating) else job
            return [(j, [gpu] if mode == "gang" else gpu)]

    with pytest.raises(PolicyError, match=r"policy 'sloppy': a decision's (job|GPU) must be"):
        run_simulation(inst, Sloppy(name="sloppy", modes=both))

    class Exact(Probe):
        def decide(self, view):  # a task (gang: a round) per waiting job, NumPy indices
            free, out = sorted(view.idle), []
            for state in view.waiting:
                k = state.tasks_per_round if mode == "gang" else 1
                if len(free) < k:
                    break
                gpus, free = [np.int32(g) for g in free[:k]], free[k:]
                out.append((np.int64(state.index), gpus if mode == "gang" else gpus[0]))
            return out

    assert check(inst, run_simulation(inst, Exact(modes=both)).schedule).feasible


def test_simulate_validates_parameters():
    inst = load_instance(TOY)
    with pytest.raises(InputError, match="no parameter"):
        simulate(inst, "hlas", params={"speed": "1"})
    with pytest.raises(InputError, match="mapping"):
        simulate(inst, "hlas", params={"mapping": "D"})
    with pytest.raises(InputError, match="thresholds"):
        simulate(inst, "hlas", params={"thresholds": "5,2"})
    result = simulate(inst, "hlas", record=False)
    assert result.schedule is None and result.objective == 9.0


def test_simulate_cli(tmp_path, capsys):
    from optsched.cli import main

    out, real = tmp_path / "s.json", tmp_path / "real.json"
    assert (
        main(
            [
                "simulate",
                str(TOY),
                "--policy",
                "hlas",
                "--noise",
                "0.1",
                "--switch-cost",
                "0.02",
                "--out",
                str(out),
                "--realised",
                str(real),
                "--json",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert '"events"' in printed
    from importlib import resources

    import jsonschema

    schema = json.loads(
        resources.files("optsched").joinpath("data", "schemas", "result.schema.json").read_text()
    )
    jsonschema.validate(json.loads(printed[printed.index("{") :]), schema)
    assert main(["check", str(real), str(out)]) == 0
    cdf = tmp_path / "cdf.png"
    assert main(["simulate", str(TOY), "--policy", "srtf", "--cdf", str(cdf)]) == 0
    assert cdf.read_bytes()[:4] == b"\x89PNG"
    assert main(["simulate", str(TOY), "--policy", "fifo", "--mode", "gang"]) == 0
    capsys.readouterr()
    assert load_instance(TOY).mode == "relaxed"  # a policy of one mode runs in it, as compare
    assert main(["simulate", str(TOY), "--policy", "fifo-perf", "--json"]) == 0  # runs it
    assert json.loads(capsys.readouterr().out)["mode"] == "gang"
    assert main(["simulate", str(TOY), "--policy", "fifo-perf", "--mode", "relaxed"]) == 2
    assert main(["simulate", str(TOY), "--policy", "nope"]) == 2
    assert main(["simulate", str(TOY), "--policy", "hlas", "--mode", "gang"]) == 2
    assert main(["simulate", str(TOY), "--policy", "hlas", "--heartbeat"]) == 2


def test_policies_see_no_size_and_no_other_job():
    """A non-clairvoyant view: no rounds anywhere, rows that do not lead to the matrix."""
    seen = []

    class Spy(Probe):
        def decide(self, view):
            seen.append(view)
            return HLAS().decide(view)

    run_simulation(load_instance(TOY), Spy())
    view = seen[0]
    assert view.oracle is None
    for job in view.active:
        fields = {f.name for f in dataclasses.fields(job)}
        assert not {"rounds", "remaining"} & fields
        for row in (job.compute, job.sync, job.by_class, job.sync_by_class):
            assert row.base is None and not row.flags.writeable  # no way to other jobs


def test_a_run_without_its_schedule_does_not_claim_to_be_checked(capsys):
    """--no-record: the simulator's own numbers, and the Result and the CLI say so."""
    from optsched.cli import main

    inst = load_instance(TOY)
    recorded = simulate(inst, "hlas")
    streamed = simulate(inst, "hlas", record=False)
    assert recorded.extra["checked"] is True and recorded.schedule is not None
    assert streamed.extra["checked"] is False and streamed.schedule is None
    assert streamed.objective == pytest.approx(recorded.objective)
    assert main(["simulate", str(TOY), "--policy", "hlas", "--no-record"]) == 0
    assert "checked    no" in capsys.readouterr().out
    assert main(["simulate", str(TOY), "--policy", "hlas", "--no-record", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checked"] is False


def test_compact_instances_expand_to_the_dense_matrices():
    """Per-class storage: compute[j, g] = class_compute[j, gpu_class[g]], the same for sync;
    one class per type, or per GPU when a job's sync depends on the GPU."""
    from optsched.generate import HareSpec, generate_hare

    for inst in (
        load_instance(TOY),
        generate_hare(HareSpec(jobs=8, gpus=15, load_gpus=15, total_tasks=100), 0),
    ):
        cls = inst.gpu_class
        for j in range(inst.n_jobs):
            compute, sync = inst.row(j)
            assert np.array_equal(inst.compute[j], inst.class_compute[j, cls])
            assert np.array_equal(inst.sync[j], inst.class_sync[j, cls])
            assert np.array_equal(compute, inst.compute[j]) and np.array_equal(sync, inst.sync[j])
            assert np.array_equal(inst.eligible(j), np.flatnonzero(np.isfinite(inst.compute[j])))
    per_type = load_instance(TOY)
    assert per_type.class_compute.shape[1] == len({g.type for g in per_type.gpus})


def test_a_streamed_schedule_is_the_recorded_one(tmp_path):
    """--no-record --out writes the schedule task by task; it is the schedule a recorded run
    keeps, the checker passes it, and a failed run leaves the target as it was."""
    from optsched.cli import main
    from optsched.io import load_schedule

    kept, streamed = tmp_path / "kept.json", tmp_path / "streamed.json"
    for policy, mode in (("hlas", "relaxed"), ("tiresias", "gang")):
        args = ["simulate", str(TOY), "--policy", policy, "--mode", mode, "--noise", "0.2"]
        assert main([*args, "--out", str(kept)]) == 0
        assert (
            main(
                [
                    *args,
                    "--no-record",
                    "--out",
                    str(streamed),
                    "--realised",
                    str(tmp_path / "real.json"),
                ]
            )
            == 0
        )
        assert load_schedule(streamed).tasks == load_schedule(kept).tasks
        assert main(["check", str(tmp_path / "real.json"), str(streamed)]) == 0
    streamed.write_text("old")
    assert (
        main(
            [
                "simulate",
                str(TOY),
                "--policy",
                "hlas",
                "--no-record",
                "--out",
                str(streamed),
                "--tick",
                "0",
            ]
        )
        == 2
    )
    assert streamed.read_text() == "old"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_plug_in_policies_see_lists_and_may_yield():
    """A policy may yield its decisions one by one (each applies at once) and index or
    slice the view's idle GPUs and waiting jobs as lists; a bad priority key is refused."""

    class Yielding(Probe):
        def decide(self, view):
            assert list(view.idle) == sorted(view.idle) == list(np.asarray(view.idle))
            assert view.idle[0] == min(view.idle) and view.idle[:1] == [min(view.idle)]
            assert view.waiting[:1] == [next(iter(view.waiting))]
            for g in list(view.idle):
                for job in view.waiting:
                    if job.waiting and np.isfinite(job.compute[g]):
                        yield job.index, g
                        break

    inst = load_instance(TOY)
    sim = run_simulation(inst, Yielding())
    assert check(inst, sim.schedule).feasible

    class NaNKey(Yielding):
        def priority(self, job, now, oracle):
            return (job.attained / job.tasks_started if job.tasks_started else math.nan,)

    with pytest.raises(PolicyError, match="priority must return a tuple without NaN"):
        run_simulation(inst, NaNKey())

    class Wrapper(Probe):
        def decide(self, view):  # a built-in called with the engine's view
            return HLAS(mapping="A").decide(view)

    wrapped = run_simulation(inst, Wrapper())
    assert check(inst, wrapped.schedule).feasible


def test_a_gap_is_never_negative_by_rounding():
    """An objective summed in another order may fall below its bound in the last bits: the
    gap is 0 then; a real violation stays visible."""
    from optsched.result import gap

    assert gap(3.76686e11, 3.76686e11 * (1 + 1e-12)) == 0.0
    assert gap(10.0, 11.0) == pytest.approx(-0.1)
    assert gap(11.0, 10.0) == pytest.approx(1 / 11)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("terminal", [False, True])
def test_progress_is_one_line_per_report_in_a_log_and_rewritten_on_a_terminal(
    monkeypatch, terminal
):
    monkeypatch.setattr(ProgressObserver, "EVERY", 0.0)  # report at every task
    inst = load_instance(TOY)
    stream = _Terminal() if terminal else io.StringIO()
    run_simulation(inst, HLAS(), observers=[ProgressObserver(inst, stream)])
    text = stream.getvalue()
    reports = text.count("simulated t=")
    assert reports == inst.n_tasks
    if terminal:
        assert text.count("\r") == reports and text.count("\n") == 1
    else:
        assert "\r" not in text and text.count("\n") == reports
        assert all(line.startswith("simulated t=") for line in text.splitlines())


@pytest.mark.parametrize(("unit", "log"), [("s", False), ("h", True)])
def test_the_jct_cdf_names_its_unit_and_can_use_a_log_axis(monkeypatch, unit, log):
    """The times' unit is on the axis (a figure of hours once said seconds), and traces'
    JCTs, minutes to weeks, get a log axis on request."""
    pytest.importorskip("matplotlib")
    from optsched import plot

    drawn = []
    monkeypatch.setattr(plot, "render", lambda fig, fmt: drawn.append(fig) or b"")
    plot.jct_cdf_image({"a": [0.5, 2.0, 30.0], "b": [1.0, 4.0]}, unit=unit, log=log)
    axis = drawn[0].axes[0]
    assert f"job completion time ({unit})" in axis.get_xlabel()
    assert axis.get_xscale() == ("log" if log else "linear")
    plot._pyplot().close(drawn[0])


@given(instances(mode="relaxed"), st.data())
def test_job_state_summaries_and_sizes_are_their_dense_definitions(inst, data):
    """A JobState's summaries, read from its speed classes, and the workload's sizes, read
    when first asked for, equal their definitions over every GPU: also where a job's sync
    time differs between GPUs of one type (sync_by_gpu)."""
    if data.draw(st.booleans()):  # per-GPU sync times, some differing within a type
        jobs = []
        for j, old in enumerate(inst.jobs):
            draws = st.sampled_from([0.0, 0.5, 1.0])
            by_gpu = {g.id: data.draw(draws, label=f"sync {j} {g.id}") for g in inst.gpus}
            jobs.append(dataclasses.replace(old, sync=None, sync_by_gpu=by_gpu))
        inst = dataclasses.replace(inst, jobs=tuple(jobs))
    class_of, _ = speed_classes(inst)
    seen = []

    class Summaries(Probe):
        def decide(self, view):
            for job in view.waiting:
                if job.index not in seen:
                    seen.append(job.index)
                    eligible = job.compute[np.isfinite(job.compute)]
                    assert job.fastest == float(np.min(job.compute))
                    assert job.slowest == float(np.max(eligible))
                    assert job.mean_compute == float(np.mean(eligible))
                    assert job.by_class[class_of].tolist() == job.compute.tolist()
                    per_class = job.sync[[class_of.index(c) for c in range(len(job.by_class))]]
                    if np.array_equal(job.sync, per_class[class_of]):
                        assert job.sync_by_class.tolist() == per_class.tolist()
                    else:
                        assert job.sync_by_class is None
            return fill_fastest(view.waiting, view)

    run_simulation(inst, Summaries())
    assert sorted(seen) == list(range(len(inst.jobs)))
    sizes = size_distribution(inst)
    ref, held = [], []
    for j, job in enumerate(inst.jobs):
        compute, sync = inst.row(j)
        eligible = np.isfinite(compute)
        tasks = job.rounds * job.tasks_per_round
        ref.append(tasks * float(np.min(compute[eligible])))
        held.append(tasks * float(np.mean(compute[eligible] + sync[eligible])))
    assert sizes == SizeDistribution(sorted(ref), sorted(held))


def test_a_job_state_made_by_hand_summarises_its_own_compute_row():
    """Without fastest and slowest given, a JobState computes them from every GPU's time
    (only the engine gives them, from the speed classes)."""
    compute = np.array([2.0, 1.0, math.inf, 3.0])
    state = JobState(0, "j", 0.0, 1.0, 1, compute, np.zeros(4), by_class=np.array([2.0]))
    assert (state.fastest, state.slowest, state.mean_compute) == (1.0, 3.0, 2.0)
