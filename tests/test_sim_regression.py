"""The simulator's incremental queues decide exactly as the plain definitions do.

Each built-in policy keeps its waiting jobs in an incrementally maintained priority queue
(``priority``/``revisit``/``waiting_queue``, optsched.online.simulator). The reference
policies below are the definitions written the slow, obvious way — every decision sorts
every waiting job by its key and scans every idle GPU — and run through the same engine
without any of those hooks. Same schedules, task for task, on random instances; a job that
starves in HLAS or Tiresias exercises ``revisit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched.online.baselines import FIFO, SRTF, AlloX, FIFORandom, Homo, Tiresias
from optsched.online.hlas import HLAS, quantile_thresholds
from optsched.online.simulator import SizeDistribution, run_simulation
from optsched.testing import instances
from tests.conftest import DATA, n_examples


def _fastest(order, view, taken=None, left=None):
    taken = set() if taken is None else taken
    idle = sorted(view.idle)
    out = []
    for job in order:
        for _ in range(job.waiting if left is None else left.get(job.index, job.waiting)):
            best, best_time = None, math.inf
            for g in idle:
                if g not in taken and job.compute[g] < best_time:
                    best, best_time = g, job.compute[g]
            if best is None:
                break
            taken.add(best)
            out.append((job.index, best))
        if len(taken) == len(idle):
            break
    return out


def _earliest(order, view):
    gpus = sorted(view.idle, key=lambda g: (view.free_since[g], g))
    out = []
    for job in order:
        left = job.waiting
        for g in list(gpus):
            if left == 0:
                break
            if np.isfinite(job.compute[g]):
                out.append((job.index, g))
                gpus.remove(g)
                left -= 1
    return out


def fill_gangs(order, idle, *, strict, rank):
    free, out = list(idle), []
    for job in order:
        usable = sorted(
            (g for g in free if np.isfinite(job.compute[g])), key=lambda g: rank(job, g)
        )
        if len(usable) < job.tasks_per_round:
            if strict:
                break
            continue
        out.append((job.index, tuple(usable[: job.tasks_per_round])))
        free = [g for g in free if g not in out[-1][1]]
    return out


def _speedup(job, g):
    return float(np.max(job.compute[np.isfinite(job.compute)]) / job.compute[g])


@dataclass
class PlainHLAS:
    thresholds: tuple[float, ...] | None = None
    starvation: float = 0.5
    mapping: str = "B"
    form: str = "queues"
    name: str = "plain-hlas"
    clairvoyant: bool = False
    modes: frozenset[str] = frozenset({"relaxed"})
    calibration: str = "history"
    levels: tuple[float, ...] = ()
    entered: dict[int, float] = field(default_factory=dict)
    done: list[float] = field(default_factory=list)

    def calibrate(self, sizes: SizeDistribution) -> None:
        self.entered, self.done = {}, []
        self.levels = (
            self.thresholds
            if self.thresholds is not None
            else (
                quantile_thresholds(sizes.reference, (0.5, 0.8))
                if self.form == "queues" and self.calibration == "workload"
                else ()
            )
        )

    def finished(self, job, now):
        """History: thresholds at the quantiles of the finished jobs' sizes, taken anew at
        1, 2, 4, ... finished jobs."""
        self.done.append(job.tasks_started * float(np.min(job.compute)))
        n = len(self.done)
        if (
            self.thresholds is None
            and self.form == "queues"
            and self.calibration == "history"
            and n & (n - 1) == 0
        ):
            self.levels = quantile_thresholds(self.done, (0.5, 0.8))

    def key(self, job, now):
        service = job.tasks_started * float(np.min(job.compute))
        own = (service - self.entered.get(job.index, 0.0)) / job.weight
        level = sum(own >= q for q in self.levels)
        if level and self.starvation > 0 and now - job.last_start > self.starvation * service:
            self.entered[job.index] = service
            level = 0
        if self.form == "continuous":
            return level, service / job.weight, job.arrival, job.index
        return level, job.arrival, job.arrival, job.index

    def decide(self, view):
        keyed = sorted((self.key(job, view.time), job.index, job) for job in view.waiting)
        order = [job for _, _, job in keyed]
        if self.mapping == "A":
            return _fastest(order, view)
        if self.mapping == "C":
            return _earliest(order, view)
        top = [job for key, _, job in keyed if key[0] == keyed[0][0][0]]
        left = {job.index: job.waiting for job in top}
        taken, out = set(), []
        for g in sorted(view.idle, key=lambda g: (min(job.compute[g] for job in top), g)):
            candidates = [job for job in top if left[job.index] and np.isfinite(job.compute[g])]
            if candidates:
                job = max(candidates, key=lambda job: _speedup(job, g))
                left[job.index] -= 1
                taken.add(g)
                out.append((job.index, g))
        return out + _fastest(order, view, taken, left)


@dataclass
class PlainTiresias:
    thresholds: tuple[float, ...] = ()
    starvation: float = 0.0
    name: str = "plain-tiresias"
    clairvoyant: bool = False
    modes: frozenset[str] = frozenset({"gang"})

    def decide(self, view):
        def key(job):
            level = sum(job.attained >= q for q in self.thresholds)
            if (
                self.starvation > 0
                and view.time - job.last_start > self.starvation * job.attained > 0
            ):
                level = 0
            return level, job.arrival, job.index

        return fill_gangs(
            sorted(view.waiting, key=key),
            sorted(view.idle),
            strict=False,
            rank=lambda job, g: (view.free_since[g], g),
        )


@dataclass
class PlainFIFO:
    name: str = "plain-fifo-perf"
    clairvoyant: bool = False
    modes: frozenset[str] = frozenset({"gang"})

    def decide(self, view):
        return fill_gangs(
            sorted(view.waiting, key=lambda j: (j.arrival, j.index)),
            sorted(view.idle),
            strict=True,
            rank=lambda job, g: (job.compute[g] + job.sync[g], g),
        )


@dataclass
class PlainFIFORandom:
    seed: int = 0
    name: str = "plain-fifo-random"
    clairvoyant: bool = False
    modes: frozenset[str] = frozenset({"gang"})
    types: dict[int, str] = field(default_factory=dict)

    def calibrate(self, sizes):
        self.types, self.rng = {}, np.random.default_rng(self.seed)

    def decide(self, view):
        free, out = sorted(view.idle), []
        order = sorted(view.waiting, key=lambda j: (j.arrival, j.index))

        def usable(job, gtype):
            return [
                g
                for g in free
                if gtype in ("*", view.gpu_types[g]) and np.isfinite(job.compute[g])
            ][: job.tasks_per_round]

        def take(job, gpus):
            out.append((job.index, tuple(gpus)))
            for g in gpus:
                free.remove(g)

        for job in order:
            if job.index in self.types:
                gpus = usable(job, self.types[job.index])
                if len(gpus) == job.tasks_per_round:
                    take(job, gpus)
        for job in order:
            if job.index in self.types:
                continue
            ok = [
                t
                for t in sorted({view.gpu_types[g] for g in free})
                if len(usable(job, t)) == job.tasks_per_round
            ]
            types = [
                view.gpu_types[g]
                for g in range(len(view.gpu_types))
                if np.isfinite(job.compute[g])
            ]
            if not ok and not any(types.count(t) >= job.tasks_per_round for t in types):
                ok = ["*"]
            if not ok or len(usable(job, "*")) < job.tasks_per_round:
                break
            self.types[job.index] = ok[int(self.rng.integers(len(ok)))]
            take(job, usable(job, self.types[job.index]))
        return out


@dataclass
class PlainSRTF:
    name: str = "plain-srtf"
    clairvoyant: bool = True
    modes: frozenset[str] = frozenset({"gang", "relaxed"})

    def order(self, view):
        oracle = view.oracle
        return sorted(
            view.waiting,
            key=lambda j: (
                oracle.remaining_tasks(j) * float(np.min(j.compute)) / j.weight,
                j.arrival,
                j.index,
            ),
        )

    def decide(self, view):
        order = self.order(view)
        if view.mode == "gang":
            return fill_gangs(
                order,
                sorted(view.idle),
                strict=False,
                rank=lambda job, g: (job.compute[g] + job.sync[g], g),
            )
        return _fastest(order, view)


@dataclass
class PlainPacedSRTF(PlainSRTF):
    """Relaxed SRTF, paced: a task takes the fastest idle GPU only if it computes there no
    slower than its round's started tasks (or the job's fastest), or, first in its round,
    within ``slowdown`` × the job's fastest; else the job's tasks left wait."""

    name: str = "plain-paced-srtf"
    slowdown: float = 2.0
    paces: dict = field(default_factory=dict)

    def decide(self, view):
        free = sorted(view.idle)
        out = []
        for job in self.order(view):
            fastest = float(np.min(job.compute))
            for _ in range(job.waiting):
                if not free:
                    break
                g = min(free, key=lambda g: (job.compute[g], g))
                pace = self.paces.get((job.index, job.rounds_done))
                limit = self.slowdown * fastest if pace is None else max(pace, fastest)
                if math.isinf(job.compute[g]) or job.compute[g] > limit:
                    break
                self.paces[job.index, job.rounds_done] = max(pace or 0.0, job.compute[g])
                free.remove(g)
                out.append((job.index, g))
        return out


@dataclass
class PlainHomo:
    name: str = "plain-homo"
    clairvoyant: bool = True
    modes: frozenset[str] = frozenset({"gang", "relaxed"})

    def decide(self, view):
        oracle = view.oracle

        def key(job):
            if job.tasks_started:
                return 0, job.first_start, job.arrival, job.index
            estimate = float(np.mean(job.compute[np.isfinite(job.compute)]))
            return 1, oracle.remaining_tasks(job) * estimate / job.weight, job.arrival, job.index

        order = sorted(view.waiting, key=key)
        if view.mode == "gang":
            return fill_gangs(
                order, sorted(view.idle), strict=False, rank=lambda job, g: (view.free_since[g], g)
            )
        return _earliest(order, view)


@dataclass
class PlainAlloX:
    name: str = "plain-allox"
    clairvoyant: bool = True
    modes: frozenset[str] = frozenset({"relaxed"})

    def decide(self, view):
        from scipy.optimize import linear_sum_assignment

        jobs = [job for job in view.waiting if job.running == 0]
        if not jobs:
            return []
        idle = sorted(view.idle)
        cost = np.array(
            [
                [
                    view.oracle.remaining_tasks(job) * job.compute[g] / job.weight
                    if np.isfinite(job.compute[g])
                    else 1e300
                    for g in idle
                ]
                for job in jobs
            ]
        )
        rows, cols = linear_sum_assignment(cost)
        return [
            (jobs[r].index, idle[c]) for r, c in zip(rows, cols, strict=True) if cost[r, c] < 1e300
        ]


def _tasks(sim):
    return [(t.job, t.round, t.task, t.gpu, t.start) for t in sim.schedule.tasks]


def _same(inst, fast, plain, **options):
    assert _tasks(run_simulation(inst, fast, **options)) == _tasks(
        run_simulation(inst, plain, **options)
    )


OPTIONS = st.sampled_from(
    [
        {},
        {"tick": 2.5, "event_driven": False},
        {"tick": 1.5},
        {"noise": 0.3, "switch_cost": 0.1, "seed": 2},
    ]
)
BIG = {"max_jobs": 7, "max_gpus": 5, "max_rounds": 4}


@settings(max_examples=n_examples(60), deadline=None)
@given(
    instances(mode="relaxed", **BIG),
    OPTIONS,
    st.sampled_from([0.0, 0.05, 0.5, 2.0]),
    st.sampled_from([None, (2.0,), (1.0, 6.0)]),
)
def test_hlas_decides_as_its_definition(inst, options, starvation, thresholds):
    for mapping in ("A", "B", "C"):
        for form in ("queues", "continuous"):
            for calibration in ("history", "workload"):
                _same(
                    inst,
                    HLAS(thresholds, starvation, mapping, form, calibration=calibration),
                    PlainHLAS(thresholds, starvation, mapping, form, calibration=calibration),
                    **options,
                )


@settings(max_examples=n_examples(60), deadline=None)
@given(instances(mode="gang", **BIG), OPTIONS, st.sampled_from([0.0, 0.1, 1.0]))
def test_tiresias_decides_as_its_definition(inst, options, starvation):
    for thresholds in ((2.0,), (1.0, 8.0)):
        _same(
            inst,
            Tiresias(thresholds, starvation),
            PlainTiresias(thresholds, starvation),
            **options,
        )


@settings(max_examples=n_examples(60), deadline=None)
@given(instances(mode="gang", **BIG), OPTIONS, st.integers(0, 3))
def test_fifo_decides_as_its_definition(inst, options, seed):
    _same(inst, FIFORandom(seed), PlainFIFORandom(seed), **options)
    _same(inst, FIFO(), PlainFIFO(), **options)


@settings(max_examples=n_examples(60), deadline=None)
@given(instances(**BIG), OPTIONS)
def test_clairvoyant_baselines_decide_as_their_definitions(inst, options):
    _same(inst, SRTF(), PlainSRTF(), **options)
    _same(inst, Homo(), PlainHomo(), **options)
    if inst.mode == "relaxed":
        _same(inst, AlloX(), PlainAlloX(), **options)
        for slowdown in (1.0, 2.0, math.inf):
            _same(
                inst,
                SRTF(placement="paced", slowdown=slowdown),
                PlainPacedSRTF(slowdown=slowdown),
                **options,
            )


def test_a_starving_job_is_promoted_at_the_same_decision():
    """A long job overtaken by a stream of short ones re-enters queue 0: the revisit hook
    fires exactly when the plain definition's condition first holds."""
    from optsched.instance import GPU, Instance, Job

    jobs = [Job("long", 0.0, rounds=30, tasks_per_round=1, compute={"A": 1.0})]
    jobs += [
        Job(f"s{i}", 0.5 + 0.7 * i, rounds=2, tasks_per_round=1, compute={"A": 1.0})
        for i in range(20)
    ]
    inst = Instance("starve", tuple(jobs), (GPU("g0", "A"),))
    fast, plain = HLAS((2.0,), 0.5), PlainHLAS((2.0,), 0.5)
    _same(inst, fast, plain)
    assert fast._entered and fast._entered == pytest.approx(plain.entered)


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])  # 3 s each
def test_a_hare_workload_is_decided_as_the_definitions_do(seed):
    """30 jobs of the Hare generator on 12 GPUs (jobs spanning GPU types, queues that build
    up), event-driven and at heartbeats."""
    from optsched.generate import HareSpec, generate_hare

    inst = generate_hare(HareSpec(jobs=30, gpus=12, load_gpus=12, total_tasks=1500), seed)
    gang = inst.with_mode("gang")
    for options in ({}, {"tick": 7.0, "event_driven": False}):
        _same(gang, FIFORandom(seed), PlainFIFORandom(seed), **options)
        _same(gang, FIFO(), PlainFIFO(), **options)
        _same(gang, SRTF(), PlainSRTF(), **options)
        _same(gang, Homo(), PlainHomo(), **options)
        _same(gang, Tiresias((50.0, 400.0), 1.0), PlainTiresias((50.0, 400.0), 1.0), **options)
        _same(inst, HLAS((20.0, 100.0), 0.5), PlainHLAS((20.0, 100.0), 0.5), **options)
        _same(inst, AlloX(), PlainAlloX(), **options)


@pytest.mark.xfail(
    strict=True,
    reason="known: with calibration=history, noise and a "
    "switch cost, HLAS (mapping A, queues) orders two starts of one instant "
    "differently from its definition (same tasks, GPUs and times)",
)
def test_hlas_history_tie_order_counterexample():
    """A counterexample hypothesis found: the fast HLAS and its plain definition start the
    same tasks on the same GPUs at the same times, but decide two starts of one instant in
    the opposite order, so their priority orders differ there."""
    from optsched.io import load_instance

    inst = load_instance(DATA / "hlas-history-tie.instance.json")
    options = {"noise": 0.3, "switch_cost": 0.1, "seed": 2}
    fast = run_simulation(inst, HLAS(None, 0.05, "A", "queues", calibration="history"), **options)
    plain = run_simulation(
        inst, PlainHLAS(None, 0.05, "A", "queues", calibration="history"), **options
    )
    assert sorted(_tasks(fast)) == sorted(_tasks(plain))  # the same schedule
    assert _tasks(fast) == _tasks(plain)  # fails: the order of one instant's decisions
