"""Seeded random instances for tests and benchmarks.

The defaults are the family of the exact-solver benchmarks: R ~ U{1..3}, K ~ U{1..4}, task
times ~ U{2..8} per (job, GPU type), sync ~ U{0..2} per (job, GPU type), weights ~ U{1..3},
8 GPUs of 2 types on 2 hosts, arrivals ~ U[0, W/(m ρ)] with W = Σ_j R_j K_j min_g p_jg and
load ρ = 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from optsched.errors import InputError
from optsched.instance import GPU, MODES, Instance, Job
from optsched.topology import tree_topology


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
            if getattr(self, name) < 1:
                raise InputError(f"generator: {name} must be >= 1")
        if self.gpu_types > self.gpus or self.hosts > self.gpus:
            raise InputError("generator: gpu_types and hosts must not exceed gpus")
        for name in ("rounds", "tasks", "task_time", "sync_time", "weight"):
            lo, hi = getattr(self, name)
            if lo > hi:
                raise InputError(f"generator: {name} range ({lo}, {hi}) is empty")
        if self.rounds[0] < 1 or self.tasks[0] < 1:
            raise InputError("generator: rounds and tasks must be >= 1")
        if self.task_time[0] <= 0 or self.sync_time[0] < 0 or self.weight[0] <= 0:
            raise InputError("generator: task times and weights must be > 0, syncs >= 0")
        if not self.load > 0:
            raise InputError("generator: load must be > 0")
        if self.heterogeneity is not None and not self.heterogeneity >= 1:
            raise InputError("generator: heterogeneity must be >= 1")
        if self.sync_ratio is not None and not self.sync_ratio >= 0:
            raise InputError("generator: sync_ratio must be >= 0")
        if self.mode not in MODES:
            raise InputError(f"generator: mode must be one of {MODES}")


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
    host_gpus = [gpu_type[h * per_host:(h + 1) * per_host] for h in range(spec.hosts)]
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
        jobs.append(Job(
            id=f"j{i}",
            arrival=float(math.floor(arrival)) if spec.integer else arrival,
            weight=weight,
            rounds=rounds,
            tasks_per_round=tasks,
            compute={t: float(v) for t, v in zip(types, times, strict=True)},
            sync={t: float(v) for t, v in zip(types, syncs, strict=True)},
        ))
    label = name or f"gen-s{seed}-j{spec.jobs}-g{spec.gpus}"
    if spec.topology:
        return Instance(label, tuple(jobs), topology=tree_topology(host_gpus), mode=spec.mode)
    gpus = tuple(GPU(f"g{i}", t) for i, t in enumerate(gpu_type))
    return Instance(label, tuple(jobs), gpus, mode=spec.mode)

