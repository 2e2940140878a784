"""Seeded random instances for tests and benchmarks.

The defaults are the family of the exact-solver benchmarks: R ~ U{1..3}, K ~ U{1..4}, task
times ~ U{2..8} per (job, GPU type), sync ~ U{0..2} per (job, GPU type), weights ~ U{1..3},
8 GPUs of 2 types on 2 hosts, arrivals ~ U[0, W/(m ρ)] with W = Σ_j R_j K_j min_g p_jg and
load ρ = 1.

Size guards: every spec estimates, when it is created and before anything is drawn, the
instance it would make (jobs, GPUs, expected tasks, job × GPU entries of the compute and sync
matrices) and refuses what exceeds :data:`MAX_GEN_JOBS`, :data:`MAX_GEN_GPUS`,
:data:`MAX_GEN_TASKS` or :data:`MAX_GEN_CELLS` with an :class:`InputError` naming the options
(as ``optsched gen`` spells them) and the estimate, so that no request grows memory until it
is killed. Float options must be finite and in range (``--load inf``, ``--heterogeneity nan``
are refused, named). ``optsched gen``, ``optsched bench gen`` and the Python API all build
these specs, so the guards hold everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from optsched.cluster_model import ClusterProfile, ClusterSpec
from optsched.errors import InputError
from optsched.instance import GPU, Instance, Job
from optsched.limits import MAX_FACTOR, MAX_TASKS, MAX_VALUE, check_seed, is_bounded, is_number
from optsched.schedule import MODES
from optsched.topology import tree_topology

#: Most jobs a generator makes: about 7 KB each while generating and writing (measured: 0.7
#: GB for 100,000 Hare jobs), so about 7 GB at the cap.
MAX_GEN_JOBS = 1_000_000
#: Most tasks (Σ_j R_j K_j, expected) a generator makes: the Hare family makes ~50,000, traces
#: reach ~1,000,000; an instance holds at most MAX_TASKS.
MAX_GEN_TASKS = MAX_TASKS
#: Most GPUs a generator makes.
MAX_GEN_GPUS = 100_000
#: Most job × GPU entries of an instance's compute and sync matrices (16 B each, twice).
MAX_GEN_CELLS = 50_000_000
#: Most past jobs the Liquid family trains its estimator on (``--predict-from``).
MAX_GEN_PAST_JOBS = 100_000
#: Largest relative prediction error (standard deviation) :func:`with_actuals` draws with.
MAX_PREDICTION_ERROR = 10.0
#: Smallest actual utilisation, and smallest actual bandwidth as a fraction of the predicted
#: one, that :func:`with_actuals` draws.
ACTUAL_FLOOR = 0.01


def _opt(name: str) -> str:
    """A spec field as ``optsched gen`` spells it: ``total_tasks`` → ``--total-tasks``."""
    return "--" + name.replace("_", "-")


def _show(value: Any) -> str:
    return " ".join(map(str, value)) if isinstance(value, tuple | list) else str(value)


def _integer(spec: Any, name: str, low: int = 1, high: int | None = None) -> None:
    """``spec.name`` is an int (not a bool) in [low, high]."""
    value = getattr(spec, name)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        upper = "" if high is None else f" and <= {high:,}"
        raise InputError(f"{_opt(name)} {value!r}: {name} must be >= {low}{upper} (an integer)")


def _number(
    spec: Any, name: str, low: float, high: float = MAX_VALUE, *, open_low: bool = False
) -> None:
    """``spec.name`` is a finite number in [low, high] ((low, high] with ``open_low``)."""
    value = getattr(spec, name)
    ok = is_number(value) and (value > low if open_low else value >= low) and value <= high
    if not ok:
        bracket = "(" if open_low else "["
        raise InputError(
            f"{_opt(name)} {value!r}: must be a finite number in {bracket}{low:g}, {high:g}]"
        )


def _range(
    spec: Any,
    name: str,
    low: float,
    high: float = MAX_VALUE,
    *,
    integer: bool = False,
    open_low: bool = False,
) -> tuple[Any, Any]:
    """``spec.name`` is a pair ``lo <= hi`` of finite numbers (integers) in the bounds."""
    pair = getattr(spec, name)
    if not isinstance(pair, tuple | list) or len(pair) != 2:
        raise InputError(f"{_opt(name)} {pair!r}: must be a pair LOW HIGH")
    lo, hi = pair
    ok = all(
        is_number(v)
        and (isinstance(v, int) or not integer)
        and (v > low if open_low else v >= low)
        and v <= high
        for v in pair
    )
    if not ok or lo > hi:
        what = "integers" if integer else "finite numbers"
        bracket = "(" if open_low else "["
        raise InputError(
            f"{_opt(name)} {_show(pair)}: must be {what} LOW <= HIGH in "
            f"{bracket}{low:g}, {high:g}]"
        )
    return lo, hi


def check_generation_size(options: str, *, jobs: float, gpus: float, tasks: float) -> None:
    """Refuse (InputError naming ``options`` and the estimate) an instance of ``jobs`` jobs,
    ``gpus`` GPUs and about ``tasks`` tasks that exceeds a ``MAX_GEN_*`` cap; cheap, called
    by every spec before anything is generated (and meant for any other generator's spec,
    e.g. :class:`~optsched.placement.generate.PlacementSpec`)."""
    cap = "over the generators' cap of"
    if jobs > MAX_GEN_JOBS:
        raise InputError(
            f"{options}: {jobs:.3g} jobs (about {tasks:.3g} tasks), {cap} {MAX_GEN_JOBS:.0e} jobs"
        )
    if gpus > MAX_GEN_GPUS:
        raise InputError(f"{options}: {gpus:.3g} GPUs, {cap} {MAX_GEN_GPUS:.0e} GPUs")
    if tasks > MAX_GEN_TASKS:
        raise InputError(f"{options}: about {tasks:.3g} tasks, {cap} {MAX_GEN_TASKS:.0e} tasks")
    if jobs * gpus > MAX_GEN_CELLS:
        raise InputError(
            f"{options}: {jobs:.3g} jobs × {gpus:.3g} GPUs = {jobs * gpus:.3g} "
            f"compute entries, {cap} {MAX_GEN_CELLS:.0e}"
        )


@dataclass(frozen=True)
class GeneratorSpec:
    """Parameters of :func:`generate`. Ranges are inclusive ``(low, high)`` pairs.

    ``heterogeneity`` h, when given, draws one base time per job from ``task_time`` and
    multiplies it by U[1, h] per GPU type (so the per-job compute ratio between types is at
    most h); otherwise every (job, type) time is drawn from ``task_time`` independently.
    ``sync_ratio``, when given, draws each sync as U[0, sync_ratio] × that job's compute time
    on the type (instead of from ``sync_time``). ``integer`` draws integers (times ≥ 1).
    ``topology`` builds a tree topology of ``hosts`` hosts instead of a plain GPU list.
    """

    jobs: int = 10
    gpus: int = 8
    gpu_types: int = 2
    hosts: int = 2
    rounds: tuple[int, int] = (1, 3)
    tasks: tuple[int, int] = (1, 4)
    task_time: tuple[float, float] = (2, 8)
    sync_time: tuple[float, float] = (0, 2)
    weight: tuple[float, float] = (1, 3)
    load: float = 1.0
    heterogeneity: float | None = None
    sync_ratio: float | None = None
    integer: bool = True
    mode: str = "relaxed"
    topology: bool = False

    def __post_init__(self) -> None:
        for name in ("jobs", "gpus", "gpu_types", "hosts"):
            _integer(self, name)
        if self.gpu_types > self.gpus or self.hosts > self.gpus:
            name = "gpu_types" if self.gpu_types > self.gpus else "hosts"
            raise InputError(
                f"{_opt(name)} {getattr(self, name)}: must not exceed --gpus {self.gpus}"
            )
        rounds = _range(self, "rounds", 1, integer=True)
        tasks = _range(self, "tasks", 1, integer=True)
        if tasks[0] > self.gpus:
            raise InputError(
                f"--tasks {_show(tasks)}: at least {tasks[0]} tasks per round "
                f"need that many GPUs, got --gpus {self.gpus}"
            )
        for name, low, open_low in (
            ("task_time", 0, True),
            ("sync_time", 0, False),
            ("weight", 0, True),
        ):
            lo, hi = _range(self, name, low, open_low=open_low)
            if self.integer and math.ceil(lo) > math.floor(hi):
                raise InputError(
                    f"{_opt(name)} {_show((lo, hi))}: holds no integer (integer "
                    "times are drawn; pass --continuous for real values)"
                )
        _number(self, "load", 1 / MAX_FACTOR, MAX_FACTOR)
        if self.heterogeneity is not None:
            _number(self, "heterogeneity", 1, MAX_FACTOR)
        if self.sync_ratio is not None:
            _number(self, "sync_ratio", 0, MAX_FACTOR)
        if self.mode not in MODES:
            raise InputError(f"--mode {self.mode!r}: must be one of {MODES}")
        k_high = min(tasks[1], self.gpus)
        expected = self.jobs * (rounds[0] + rounds[1]) / 2 * (tasks[0] + k_high) / 2
        check_generation_size(
            f"--jobs {self.jobs} --gpus {self.gpus} --rounds "
            f"{_show(rounds)} --tasks {_show(tasks)}",
            jobs=self.jobs,
            gpus=self.gpus,
            tasks=expected,
        )
        if rounds[1] * k_high > MAX_TASKS:
            raise InputError(
                f"--rounds {_show(rounds)} --tasks {_show(tasks)}: a job may have "
                f"{rounds[1] * k_high:.3g} tasks; at most {MAX_TASKS:.0e} fit in "
                "an instance"
            )


def generate(spec: GeneratorSpec, seed: int, *, name: str | None = None) -> Instance:
    """A random instance drawn from ``spec`` with ``numpy.random.default_rng(seed)``.

    Every GPU is eligible for every job and K is capped at the number of GPUs, so the
    instance is valid in both modes.
    """
    rng = np.random.default_rng(seed)

    def draw(lo: float, hi: float, size: int | None = None) -> np.ndarray:
        if spec.integer:
            return rng.integers(math.ceil(lo), math.floor(hi) + 1, size=size)
        return rng.uniform(lo, hi, size=size)

    types = [f"T{t}" for t in range(spec.gpu_types)]
    per_host = math.ceil(spec.gpus / spec.hosts)
    gpu_type = [types[(i * spec.gpu_types) // spec.gpus] for i in range(spec.gpus)]
    host_gpus = [gpu_type[h * per_host : (h + 1) * per_host] for h in range(spec.hosts)]
    host_gpus = [h for h in host_gpus if h]

    jobs_data = []
    for _ in range(spec.jobs):
        rounds = int(rng.integers(spec.rounds[0], spec.rounds[1] + 1))
        tasks = int(rng.integers(spec.tasks[0], min(spec.tasks[1], spec.gpus) + 1))
        if spec.heterogeneity is None:
            times = draw(*spec.task_time, size=len(types)).astype(float)
        else:
            base = float(draw(*spec.task_time))
            times = base * rng.uniform(1.0, spec.heterogeneity, size=len(types))
            times = np.maximum(1.0, np.round(times)) if spec.integer else times
        if spec.sync_ratio is None:
            syncs = draw(*spec.sync_time, size=len(types)).astype(float)
        else:
            syncs = times * rng.uniform(0.0, spec.sync_ratio, size=len(types))
            syncs = np.round(syncs) if spec.integer else syncs
        weight = float(draw(*spec.weight))
        jobs_data.append((rounds, tasks, times, syncs, weight))

    work = sum(r * k * float(t.min()) for r, k, t, _, _ in jobs_data)
    horizon = work / (spec.gpus * spec.load)
    jobs = []
    for i, (rounds, tasks, times, syncs, weight) in enumerate(jobs_data):
        arrival = float(rng.uniform(0.0, horizon))
        jobs.append(
            Job(
                id=f"j{i}",
                arrival=float(math.floor(arrival)) if spec.integer else arrival,
                weight=weight,
                rounds=rounds,
                tasks_per_round=tasks,
                compute={t: float(v) for t, v in zip(types, times, strict=True)},
                sync={t: float(v) for t, v in zip(types, syncs, strict=True)},
            )
        )
    label = name or f"gen-s{seed}-j{spec.jobs}-g{spec.gpus}"
    if spec.topology:
        return Instance(label, tuple(jobs), topology=tree_topology(host_gpus), mode=spec.mode)
    gpus = tuple(GPU(f"g{i}", t) for i, t in enumerate(gpu_type))
    return Instance(label, tuple(jobs), gpus, mode=spec.mode)


#: Hare's eight workloads (HPDC'22 Table 2) with their parameter counts in millions, an
#: assumption (standard architectures at the paper's datasets: VGG-19 and ResNet-50/Inception-V3
#: for CIFAR, BERT-base, Transformer-base, DeepSpeech, two-layer GCNs on Cora), used for sync.
HARE_WORKLOADS = {
    "Hare/VGG-19": 20.0,
    "Hare/ResNet-50": 23.7,
    "Hare/Inception-V3": 22.0,
    "Hare/BERT-base": 110.0,
    "Hare/Transformer": 65.0,
    "Hare/DeepSpeech": 47.0,
    "Hare/FastGCN": 0.023,
    "Hare/GraphSAGE": 0.046,
}
#: Hare's four workload classes (HPDC'22 Table 2), for job-mix ratios CV:NLP:Speech:Rec.
HARE_CLASSES = {
    "CV": ("Hare/VGG-19", "Hare/ResNet-50", "Hare/Inception-V3"),
    "NLP": ("Hare/BERT-base", "Hare/Transformer"),
    "Speech": ("Hare/DeepSpeech",),
    "Rec": ("Hare/FastGCN", "Hare/GraphSAGE"),
}
#: Heterogeneity levels of HPDC'22 Fig. 16 (low = V100 only, middle = V100 + K80, high = all
#: four), with the testbed's proportions 8 V100 : 4 T4 : 1 K80 : 2 M60 among the types used.
HARE_LEVELS = {
    "low": {"V100": 8},
    "middle": {"V100": 8, "K80": 1},
    "high": {"V100": 8, "T4": 4, "K80": 1, "M60": 2},
}
#: The high level at 160 GPUs: 85 V100, 43 T4, 11 K80, 21 M60.
HARE_CLUSTER = {"V100": 85, "T4": 43, "K80": 11, "M60": 21}
#: Default compute time of one task on the job's fastest GPU, in seconds (``task_seconds``).
#: Assumption (the paper's task is one mini-batch, §2.2.3, but then ResNet-50 and Inception-V3
#: synchronise 1.4–1.6× longer than they train at 25 Gbit/s, against §5.1's "we assume that
#: the training time is longer than the synchronization time"): about two BERT-base batches on
#: a V100 (0.72 s), the longest one-batch task of Table 2's workloads, so that every workload
#: trains at least one whole batch per task and no task is shorter than another by more than
#: rounding to whole batches. With it, sync / compute is at most 0.39 at 25 Gbit/s and 0.98 at
#: 10 Gbit/s (BERT-base, two batches), so the assumption holds at all three bandwidths of
#: Fig. 18 (10, 15, 25 Gbit/s).
HARE_TASK_SECONDS = 0.75
#: Default factor by which NLP jobs have more rounds than the other classes (``nlp_rounds``).
#: §7: "NLP jobs involve heavier training workloads (i.e., more training rounds and more
#: training time)"; the factor is not given, 2 is our assumption.
HARE_NLP_ROUNDS = 2.0
#: Default offered load (``load``): the reference cluster (``load_gpus`` GPUs at the high
#: level, the paper's default 160) is offered exactly what it can process. The paper's arrivals
#: are the Google cluster trace (2019), whose times it does not publish ("set according to the
#: trace in Google cluster", §7); we calibrate one Poisson rate per figure instead, so that the
#: reference cell (300 jobs and 160 GPUs at the ~167 tasks per job of the grids) sits at load 1
#: and the backlog neither drains nor explodes there: more jobs (Fig. 15) then mean more
#: waiting, more GPUs (Fig. 14, 100–180 GPUs: load 1.6–0.89) less. Capacity counts each GPU
#: at its speed relative to the fastest type (a T4 is ~0.29 V100 on CNNs), averaged over the
#: workloads at equal work shares.
HARE_LOAD = 1.0
HARE_LOAD_GPUS = 160


def _apportion(total: int, weights: list[float]) -> list[int]:
    """Largest-remainder split of ``total`` in proportion to ``weights`` (ties: first)."""
    share = [total * w / sum(weights) for w in weights]
    counts = [math.floor(x) for x in share]
    for i in sorted(range(len(share)), key=lambda i: counts[i] - share[i])[: total - sum(counts)]:
        counts[i] += 1
    return counts


def hare_cluster(gpus: int, level: str = "high") -> tuple[tuple[str, int], ...]:
    """(type, count) of a ``gpus``-GPU cluster at a heterogeneity level of HPDC'22 Fig. 16."""
    if level not in HARE_LEVELS:
        raise InputError(
            f"heterogeneity level must be one of {sorted(HARE_LEVELS)}, got {level!r}"
        )
    types = HARE_LEVELS[level]
    counts = _apportion(gpus, list(types.values()))
    if min(counts) < 1:
        raise InputError(f"{gpus} GPUs are too few for the {level} heterogeneity level")
    return tuple(zip(types, counts, strict=True))


def hare_sync(workload: str, bandwidth_gbps: float) -> float:
    """Seconds to push and pull a workload's fp32 parameters over ``bandwidth_gbps``
    (the same on every GPU: one 25 Gbit/s Ethernet in the testbed, HPDC'22 §7)."""
    return 2 * 8 * HARE_WORKLOADS[workload] * 4e6 / (1e9 * bandwidth_gbps)


def hare_iterations(spec: HareSpec, workload: str, fastest: float) -> int:
    """Mini-batches per task of ``workload`` whose batch takes ``fastest`` s on the fastest GPU.

    ``spec.iters_per_task`` when given; otherwise round(task_seconds / fastest), raised where
    needed to the least count whose compute exceeds the sync at ``spec.bandwidth_gbps``, so
    that sync < compute on every GPU (the sync is the same on every GPU and no GPU is faster
    than the fastest): HPDC'22 §5.1, "we assume that the training time is longer than the
    synchronization time".
    """
    if spec.iters_per_task is not None:
        return spec.iters_per_task
    floor_sync = math.floor(hare_sync(workload, spec.bandwidth_gbps) / fastest) + 1
    return max(round(spec.task_seconds / fastest), floor_sync)


#: Tasks per job of the paper's setting (~50,000 tasks over 300 jobs, HPDC'22 §7): what
#: ``optsched gen --family hare`` uses unless told a total, so that ``--jobs N`` keeps the
#: paper's job sizes and with them its arrival rate (the rate depends on the job size).
HARE_TASKS_PER_JOB = 50_000 / 300


@dataclass(frozen=True)
class HareSpec:
    """The Hare paper's simulation setting (HPDC'22 §7) as a generator.

    Every setting below quotes the paper where it speaks and names the assumption where it
    is silent.

    *Cluster.* ``gpus`` GPUs at ``heterogeneity_level`` (:func:`hare_cluster`; §7 Fig. 16:
    "low", "middle", "high"; the split 8:4:1:2 V100:T4:K80:M60 is the testbed's, an
    assumption for the simulated cluster).

    *Mix* (§7: "each type of jobs accounts for 25% of the total workload"). ``mix`` = (CV,
    NLP, Speech, Rec) shares of the total *work* (default 1:1:1:1, Fig. 17 varies it);
    work = R_j K_j × the task's compute time on the job's fastest GPU type. NLP jobs have
    ``nlp_rounds`` times the rounds of the others (§7: "NLP jobs involve heavier training
    workloads (i.e., more training rounds and more training time)"), so that classes hold
    equal work, job counts are apportioned in proportion to ``mix`` / (``nlp_rounds`` for NLP,
    1 otherwise): 2:1:2:2 by default (86, 43, 86, 85 of 300 jobs). Inside a class the
    workloads of :data:`HARE_CLASSES` take turns; jobs are shuffled.

    *Size.* K ~ U(``tasks_per_round``) (assumption; §7 gives none). A task of workload w
    trains n_w mini-batches (:func:`hare_iterations`): ``iters_per_task`` when given, else
    about ``task_seconds`` on the fastest GPU and always enough that sync < compute on every
    GPU. Rounds R_j = max(1, round(u_j · c_class)), u ~ U[0.2, 1.8], the class factor set so
    that each class holds exactly its share of the work and the instance about
    ``total_tasks`` tasks (``tasks_per_job`` × ``jobs`` when given, to keep job sizes when the
    number of jobs varies). The work shares then equal ``mix`` up to rounding R_j.

    *Job lengths* (assumption). The paper's JCTs are 10–80 min on its testbed (Fig. 13), with
    one-batch tasks and thousands of rounds; ~50,000 tasks of ~0.75 s make jobs of about a
    minute of fastest-GPU compute, so the absolute times here are shorter. Scaling every
    compute, sync and arrival time by one factor scales every schedule with it and leaves
    every ratio and ordering unchanged, so what these settings pin to the paper is the ratio
    sync / compute (§5.1) and the load, not the time unit.

    *Sync* = push + pull of the fp32 parameters over ``bandwidth_gbps`` (25 Gbit/s, the
    testbed's Ethernet), the same on every GPU, and positive for every job, so the
    heterogeneity degree α of Theorem 4 is always defined.

    *Arrivals* (§7: "set according to the trace in Google cluster"; the trace's times are not
    published). A Poisson process of rate ``arrival_rate`` jobs/s, the first job at 0. By
    default (:meth:`rate`) λ = ``load`` / (E[W_j] · Σ_w s_w / cap_w): E[W_j] = (tasks per
    job) × the mean over the eight workloads of their task time on the fastest GPU type,
    s_w the workload's share of the work at equal class shares, and cap_w = Σ_m p_w,fastest /
    p_w,m over the reference cluster (``load_gpus`` GPUs at the high level) its capacity in
    fastest-GPU seconds per second. The rate depends on neither the number of jobs (given
    ``tasks_per_job``), the number of GPUs, the level nor the mix, so one rate serves a whole
    figure and more jobs mean more load, more GPUs less (:data:`HARE_LOAD`).

    ``weight`` w_j ~ U{weight} (assumption; the paper states none).
    """

    jobs: int = 300
    gpus: int = 160
    heterogeneity_level: str = "high"
    mix: tuple[float, float, float, float] | None = None
    tasks_per_round: tuple[int, ...] = (1, 2, 4, 8)
    total_tasks: int = 50_000
    tasks_per_job: float | None = None
    iters_per_task: int | None = None
    task_seconds: float = HARE_TASK_SECONDS
    nlp_rounds: float = HARE_NLP_ROUNDS
    weight: tuple[int, int] = (1, 3)
    bandwidth_gbps: float = 25.0
    load: float = HARE_LOAD
    load_gpus: int = HARE_LOAD_GPUS
    arrival_rate: float | None = None

    def __post_init__(self) -> None:
        for name in ("jobs", "gpus", "total_tasks", "load_gpus"):
            _integer(self, name)
        if self.iters_per_task is not None:
            _integer(self, "iters_per_task", 1, int(MAX_FACTOR))
        if self.tasks_per_job is not None:
            _number(self, "tasks_per_job", 1, MAX_TASKS)
        if self.mix is not None and (
            not isinstance(self.mix, tuple)
            or len(self.mix) != len(HARE_CLASSES)
            or not all(is_bounded(x) and x >= 0 for x in self.mix)
            or not sum(self.mix) > 0
        ):
            raise InputError(
                f"--mix {self.mix!r}: needs 4 finite ratios >= 0, not all 0 (CV, NLP, Speech, Rec)"
            )
        if (
            not isinstance(self.tasks_per_round, tuple)
            or not self.tasks_per_round
            or not all(
                isinstance(k, int) and not isinstance(k, bool) and 1 <= k <= MAX_TASKS
                for k in self.tasks_per_round
            )
        ):
            raise InputError(
                f"--tasks-per-round {self.tasks_per_round!r}: must be integers "
                f"in [1, {MAX_TASKS:.0e}]"
            )
        _range(self, "weight", 1, MAX_VALUE, integer=True)
        _number(self, "load", 1 / MAX_FACTOR, MAX_FACTOR)
        _number(self, "bandwidth_gbps", 0, MAX_VALUE, open_low=True)
        _number(self, "task_seconds", 1e-6, MAX_VALUE)
        _number(self, "nlp_rounds", 1 / MAX_FACTOR, MAX_FACTOR)
        if self.arrival_rate is not None:
            _number(self, "arrival_rate", 1e-9, MAX_VALUE)
        total = self.total_tasks if self.tasks_per_job is None else self.tasks_per_job * self.jobs
        mean_k = sum(self.tasks_per_round) / len(self.tasks_per_round)
        option = "--total-tasks" if self.tasks_per_job is None else "--tasks-per-job"
        value = self.total_tasks if self.tasks_per_job is None else self.tasks_per_job
        # every job has at least one round: at least K_j tasks each
        check_generation_size(
            f"--jobs {self.jobs} --gpus {self.gpus} {option} {value:g}",
            jobs=self.jobs,
            gpus=self.gpus,
            tasks=total + self.jobs * mean_k,
        )
        hare_cluster(self.gpus, self.heterogeneity_level)  # validates both
        try:
            hare_cluster(self.load_gpus, "high")
        except InputError:
            raise InputError(
                f"--load-gpus {self.load_gpus}: the reference cluster needs at "
                "least 4 GPUs (one of each type at the high level)"
            ) from None

    @property
    def tasks_per_job_mean(self) -> float:
        """Tasks per job the spec aims at (``tasks_per_job``, else ``total_tasks`` / jobs)."""
        return (
            self.tasks_per_job if self.tasks_per_job is not None else self.total_tasks / self.jobs
        )

    def rate(self) -> float:
        """The Poisson arrival rate in jobs/s (see the class docstring, *Arrivals*)."""
        if self.arrival_rate is not None:
            return self.arrival_rate
        from optsched.workloads import default_catalog

        catalog = default_catalog()
        types = [t for t, _ in hare_cluster(self.gpus, self.heterogeneity_level)]
        reference = hare_cluster(self.load_gpus, "high")
        times, seconds_per_work = [], 0.0
        for members in HARE_CLASSES.values():
            for w in members:
                fastest = min(catalog.seconds(w, t) or math.inf for t in types)
                times.append(hare_iterations(self, w, fastest) * fastest)
                best = min(catalog.seconds(w, t) or math.inf for t, _ in reference)
                capacity = sum(
                    n * best / (catalog.seconds(w, t) or math.inf) for t, n in reference
                )
                seconds_per_work += 1 / (len(HARE_CLASSES) * len(members) * capacity)
        mean_work = self.tasks_per_job_mean * sum(times) / len(times)
        return self.load / (mean_work * seconds_per_work)


def generate_hare(spec: HareSpec, seed: int, *, name: str | None = None) -> Instance:
    """A random instance of the Hare setting (see :class:`HareSpec`), relaxed mode.

    Guarantees (all tested): every job synchronises (sync > 0 on every GPU, so α is defined)
    and, unless ``iters_per_task`` is given, trains longer than it synchronises on every GPU;
    each class's share of the work (fastest-GPU compute) is ``mix``'s up to rounding the
    rounds; the same spec and seed give the same instance.
    """
    from optsched.workloads import default_catalog

    rng = np.random.default_rng(seed)
    catalog = default_catalog()
    mix = spec.mix if spec.mix is not None else (1.0,) * len(HARE_CLASSES)
    heavier = [spec.nlp_rounds if c == "NLP" else 1.0 for c in HARE_CLASSES]
    counts = _apportion(spec.jobs, [m / h for m, h in zip(mix, heavier, strict=True)])
    pool: list[tuple[int, str]] = []
    for c, (members, count) in enumerate(zip(HARE_CLASSES.values(), counts, strict=True)):
        pool += [(c, members[i % len(members)]) for i in range(count)]
    drawn = [pool[i] for i in rng.permutation(len(pool))]
    job_class = np.array([c for c, _ in drawn])
    workload = [w for _, w in drawn]
    cluster = hare_cluster(spec.gpus, spec.heterogeneity_level)
    types = [t for t, _ in cluster]
    k = rng.choice(np.array(spec.tasks_per_round), size=spec.jobs)
    size = rng.uniform(0.2, 1.8, size=spec.jobs)
    weight = rng.integers(spec.weight[0], spec.weight[1] + 1, size=spec.jobs)
    fastest = {w: min(catalog.seconds(w, t) or math.inf for t in types) for w in HARE_WORKLOADS}
    iters = {w: hare_iterations(spec, w, fastest[w]) for w in HARE_WORKLOADS}
    task_time = np.array([iters[w] * fastest[w] for w in workload])  # on the fastest GPU
    # class c holds share s_c of the work W and about W s_c / τ̄_c tasks (τ̄_c its mean task
    # time weighted by u K); W is set so that the tasks add up to the total
    present = [c for c in range(len(HARE_CLASSES)) if counts[c] and mix[c] > 0]
    share = {c: mix[c] / sum(mix[i] for i in present) for c in present}
    uk = size * k
    per_class = {
        c: (float(uk[job_class == c].sum()), float((uk * task_time)[job_class == c].sum()))
        for c in present
    }
    total = spec.tasks_per_job_mean * spec.jobs
    work = total / sum(share[c] * per_class[c][0] / per_class[c][1] for c in present)
    factor = np.array(
        [work * share[c] / per_class[c][1] if c in share else 0.0 for c in job_class]
    )
    rounds = np.maximum(1, np.round(size * factor)).astype(int)
    gaps = rng.exponential(1.0 / spec.rate(), size=spec.jobs)
    arrival = np.cumsum(gaps) - gaps[0]
    jobs = []
    for j in range(spec.jobs):
        sync = hare_sync(workload[j], spec.bandwidth_gbps)
        jobs.append(
            Job(
                id=f"j{j}",
                arrival=float(arrival[j]),
                weight=float(weight[j]),
                rounds=int(rounds[j]),
                tasks_per_round=int(k[j]),
                workload=workload[j],
                iters_per_task=iters[workload[j]],
                sync={t: sync for t in types},
            )
        )
    gpus = tuple(GPU(f"{t}-{i}", t) for t, n in cluster for i in range(n))
    return Instance(name or f"hare-s{seed}-j{spec.jobs}-g{spec.gpus}", tuple(jobs), gpus)


@dataclass(frozen=True)
class LiquidSpec:
    """Liquid's evaluation setting (TPDS'22 §7) as a cluster instance@2.

    ``hosts`` hosts of ``gpus_per_host`` GPUs (default 2 × T4, 16 GB: the Alibaba Cloud
    cluster) in racks of ``hosts_per_rack`` (default: one rack, a single switch as in both of
    Liquid's clusters). ``jobs`` jobs (``jobs_per_host`` × ``hosts`` when
    given: Liquid scales the workload with the cluster, 8 jobs on 5 hosts) of the ``mix``
    models (counts in proportion; default 4 ResNet-50 : 2 Inception-V3 : 2 VGG-16, the 5-host
    batch workload), shuffled; a fraction ``distributed`` of them are 1 PS + 2 workers (one GPU
    each, 8 GB GPU memory, the reference code's jobs), the others single-task jobs with a
    predicted utilisation ~ U{``util``}/10 and GPU memory ~ U{``gpu_memory_gb``} GB (our
    assumption: Liquid publishes no distribution). Times are the §2.7 placement → duration
    table (:data:`~optsched.placement.durations.DURATIONS`): a job's launch and save phases
    (``launch``, ``save`` s: assumed, the paper gives none) come off the table's time, the rest
    is training, with placement factors = table time / co-located time for the other modes.
    ``durations`` = ``contention`` takes the distributed jobs' mode times from the link-contention
    model fitted to the table instead (:func:`~optsched.placement.durations.contention_durations`).
    Each job's :class:`~optsched.instance.ClusterProfile` names its ``model``; its
    ``bandwidth`` weight is the model's worst slowdown in the table (VGG-16 2.33), standing
    in for Liquid's predicted bandwidth. Arrivals: all at 0
    (``interarrival`` 0, batch experiments) or Poisson with mean ``interarrival`` s.
    ``share_cap`` the sharing cap (Liquid's 1.3; 0: no sharing). Every job records the flags
    of its run in ``meta`` (``batch_size`` = 4·U{1..8}, ``num_batches`` = 50·U{4..20}, as in
    Liquid's experiments); with ``predict_from`` = n > 0, each job's utilisation, GPU memory
    and bandwidth weight are instead the predictions of a random-forest estimator trained on n
    synthetic past jobs (:func:`~optsched.estimation.forest.with_predictions`; needs the
    ``estimation`` extra), as Liquid feeds its predictions to sharing and placement.
    ``prediction_error`` = e > 0 makes those values predictions that miss: each job's actual
    utilisation, GPU memory and bandwidth weight are drawn around them with relative error
    N(0, e) (:func:`with_actuals`, seeded by ``seed``; after ``predict_from``'s predictions),
    so shared GPUs slow down beyond plan and rounds can run out of GPU memory (Liquid §6.2);
    0: the values are exact. ``link_contention`` turns on the instance's link contention
    (models/cluster-execution.md), each distributed job's ``flow_time`` being its model's
    per-flow time fitted to the table
    (:func:`~optsched.placement.durations.contention_durations`).
    """

    jobs: int = 8
    jobs_per_host: float | None = None
    hosts: int = 5
    gpus_per_host: int = 2
    gpu_type: str = "T4"
    gpu_memory: float = 16384.0
    hosts_per_rack: int | None = None
    mix: tuple[tuple[str, int], ...] = (("resnet50", 4), ("inceptionv3", 2), ("vgg16", 2))
    distributed: float = 1.0
    util: tuple[int, int] = (3, 9)
    gpu_memory_gb: tuple[int, int] = (2, 8)
    launch: float = 30.0
    save: float = 10.0
    interarrival: float = 0.0
    share_cap: float = 1.3
    durations: str = "table"
    predict_from: int = 0
    prediction_error: float = 0.0
    link_contention: bool = False

    def __post_init__(self) -> None:
        from optsched.placement.durations import DURATIONS

        for name in ("jobs", "hosts", "gpus_per_host"):
            _integer(self, name)
        if self.hosts_per_rack is not None:
            _integer(self, "hosts_per_rack")
        if self.jobs_per_host is not None:
            _number(self, "jobs_per_host", 0, MAX_GEN_JOBS, open_low=True)
        for name in ("distributed", "launch", "save", "interarrival", "share_cap"):
            _number(self, name, 0, 1 if name == "distributed" else MAX_VALUE)
        if 0 < self.share_cap < 1:
            raise InputError(f"--share-cap {self.share_cap!r}: must be 0 (no sharing) or >= 1")
        _number(self, "gpu_memory", 0, MAX_VALUE, open_low=True)
        _integer(self, "predict_from", 0)
        _number(self, "prediction_error", 0, MAX_PREDICTION_ERROR)
        if not isinstance(self.link_contention, bool):
            raise InputError(f"--link-contention {self.link_contention!r}: must be true or false")
        if self.predict_from > MAX_GEN_PAST_JOBS:
            raise InputError(
                f"--predict-from {self.predict_from:.3g}: past jobs to train on, "
                f"over the generators' cap of {MAX_GEN_PAST_JOBS:.0e}"
            )
        _range(self, "util", 1, 10, integer=True)
        _range(self, "gpu_memory_gb", 0, MAX_VALUE / 1024, integer=True)
        n_jobs = (
            self.jobs
            if self.jobs_per_host is None
            else max(1, round(self.jobs_per_host * self.hosts))
        )
        jobs_text = (
            f"--jobs {self.jobs}"
            if self.jobs_per_host is None
            else f"--jobs-per-host {self.jobs_per_host:g}"
        )
        check_generation_size(
            f"{jobs_text} --hosts {self.hosts} --gpus-per-host {self.gpus_per_host}",
            jobs=n_jobs,
            gpus=self.hosts * self.gpus_per_host,
            tasks=3 * n_jobs,
        )
        for model, count in self.mix:
            if model not in DURATIONS or count < 0:
                raise InputError(
                    f"liquid generator: mix entry {model!r}: a model of "
                    f"{sorted(DURATIONS)} with a count >= 0"
                )
        if not sum(c for _, c in self.mix) > 0 or not 0 <= self.distributed <= 1:
            raise InputError("liquid generator: mix needs a count > 0; distributed in [0, 1]")
        if not 1 <= self.util[0] <= self.util[1] <= 10:
            raise InputError("liquid generator: util is a range within 1..10 (tenths)")
        shortest = min(DURATIONS[m]["s1"] for m, _ in self.mix)
        if (
            min(self.launch, self.save, self.interarrival) < 0
            or self.launch + self.save >= shortest
        ):
            raise InputError(
                f"liquid generator: launch + save must be >= 0 and below the "
                f"shortest job ({shortest:g} s); interarrival >= 0"
            )
        if self.predict_from < 0:
            raise InputError("liquid generator: predict_from must be >= 0")
        if self.durations not in ("table", "contention"):
            raise InputError("liquid generator: durations is 'table' or 'contention'")
        if self.distributed and self.gpus_per_host * self.hosts < 3:
            raise InputError("liquid generator: distributed jobs need 3 GPUs")


def generate_liquid(spec: LiquidSpec, seed: int, *, name: str | None = None) -> Instance:
    """A random instance of Liquid's setting (see :class:`LiquidSpec`), gang mode."""
    from optsched.placement.durations import DURATIONS, contention_durations

    rng = np.random.default_rng(seed)
    n_jobs = (
        spec.jobs if spec.jobs_per_host is None else max(1, round(spec.jobs_per_host * spec.hosts))
    )
    counts = _apportion(n_jobs, [float(c) for _, c in spec.mix])
    models = rng.permutation(
        [m for (m, _), c in zip(spec.mix, counts, strict=True) for _ in range(c)]
    )
    distributed = rng.permutation(np.arange(n_jobs) < round(spec.distributed * n_jobs))
    gaps = (
        rng.exponential(spec.interarrival, size=n_jobs) if spec.interarrival else np.zeros(n_jobs)
    )
    arrival = np.cumsum(gaps) - gaps[0]
    phases = spec.launch + spec.save
    jobs = []
    for j, model in enumerate(str(m) for m in models):
        table = DURATIONS[model]
        flags = {
            "batch_size": 4 * int(rng.integers(1, 9)),
            "num_batches": 50 * int(rng.integers(4, 21)),
        }
        profile = ClusterProfile(
            launch=spec.launch,
            save=spec.save,
            model=model,
            bandwidth=round(max(table.values()) / table["pww"], 2),
        )
        common: dict[str, Any] = dict(id=f"j{j}", arrival=float(arrival[j]), meta=flags)
        if distributed[j]:
            if spec.durations == "contention":
                table = {**table, **contention_durations(model)[1]}
            train = table["pww"] - phases
            # the per-flow time: the differences between modes are all training time
            flow = contention_durations(model)[0] if spec.link_contention else 0.0
            factors = {m: (table[m] - phases) / train for m in ("pww", "pw:w", "p:ww", "p:w:w")}
            jobs.append(
                Job(
                    **common,
                    tasks_per_round=3,
                    compute={spec.gpu_type: train},
                    cluster=replace(
                        profile,
                        roles=("ps", "worker", "worker"),
                        gpu_memory=8192.0,
                        placement_factor=factors,
                        flow_time=flow,
                    ),
                )
            )
        else:
            util = int(rng.integers(spec.util[0], spec.util[1] + 1)) / 10
            memory = 1024.0 * int(rng.integers(spec.gpu_memory_gb[0], spec.gpu_memory_gb[1] + 1))
            jobs.append(
                Job(
                    **common,
                    compute={spec.gpu_type: table["s1"] - phases},
                    cluster=replace(profile, util=util, gpu_memory=memory),
                )
            )
    graph = tree_topology(
        [[spec.gpu_type] * spec.gpus_per_host] * spec.hosts,
        hosts_per_rack=spec.hosts_per_rack or spec.hosts,
    )
    for _, attrs in graph.nodes(data=True):
        if attrs["kind"] == "gpu":
            attrs["gpu_memory"] = spec.gpu_memory
    instance = Instance(
        name or f"liquid-s{seed}-j{n_jobs}-h{spec.hosts}",
        tuple(jobs),
        topology=graph,
        mode="gang",
        cluster=ClusterSpec(spec.share_cap or None, spec.link_contention),
    )
    if spec.predict_from:
        from optsched.estimation.forest import ResourceEstimator, with_predictions
        from optsched.estimation.runs import synthetic_runs

        past = synthetic_runs(spec.predict_from, seed)
        instance = with_predictions(instance, ResourceEstimator(seed=seed).fit(past))
    if spec.prediction_error:
        instance = with_actuals(instance, spec.prediction_error, seed)
    return instance


def with_actuals(instance: Instance, error: float, seed: int) -> Instance:
    """The instance with each job's actual GPU utilisation, GPU memory and bandwidth weight
    (its profile's ``actual``) drawn around its predictions (the profile's ``util``,
    ``gpu_memory``, ``bandwidth``): actual = predicted × (1 + ε), ε ~ N(0, ``error``) drawn
    independently per job and quantity, in job order, then clipped to valid values —
    utilisation to [:data:`ACTUAL_FLOOR`, 1], memory to [0, the least memory of the GPUs the
    job can run on] (so it fits alone, as :class:`~optsched.instance.Instance` requires),
    bandwidth to at least :data:`ACTUAL_FLOOR` × the prediction. ``error`` = 0 gives the
    instance with no ``actual`` (actual = predicted). The same instance, error and seed
    give the same result. Liquid §6.2: "Due to the accuracy issue of the model, the job
    resource occupation may still exceed the upper limit during actual scheduling".

    Raises InputError for an error outside [0, :data:`MAX_PREDICTION_ERROR`] or a bad seed.
    """
    if (
        isinstance(error, bool)
        or not isinstance(error, int | float)
        or not 0 <= error <= MAX_PREDICTION_ERROR
    ):
        raise InputError(
            f"prediction error must be a number in [0, {MAX_PREDICTION_ERROR:g}], got {error!r}"
        )
    check_seed(seed)
    if not error:
        return replace(
            instance,
            jobs=tuple(
                replace(job, cluster=replace(job.profile, actual=None)) for job in instance.jobs
            ),
        )
    rng = np.random.default_rng([seed, 0xAC7])  # a stream of its own for the seed
    jobs = []
    for j, job in enumerate(instance.jobs):
        eps = rng.normal(0.0, error, size=3)
        limits = [m for g in instance.eligible(j) if (m := instance.gpus[g].memory) is not None]
        p = job.profile
        memory = min([max(0.0, p.gpu_memory * (1 + eps[1])), *limits])
        actual = {
            "util": float(min(1.0, max(ACTUAL_FLOOR, p.util * (1 + eps[0])))),
            "gpu_memory": float(memory),
            "bandwidth": float(p.bandwidth * max(ACTUAL_FLOOR, 1 + eps[2])),
        }
        jobs.append(replace(job, cluster=replace(p, actual=actual)))
    return replace(instance, jobs=tuple(jobs))
