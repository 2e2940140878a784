"""Hare's offline heuristic (HPDC'22 §5.2, Algorithm 1) and its variants, relaxed mode.

Step 1 solves a relaxation for start-time estimates x̂; step 2 lists tasks by
H_i = x̂_i + ½ max_m T^c_{i,m} (ties by job order, round, task) and places each one at
max(previous round synced, φ_m) on a GPU m, φ_m being the moment GPU m becomes free
(it is busy for compute only; the sync overlaps the GPU's next task).

| method        | relaxation (step 1)                          | GPU choice (step 2)       |
|---------------|----------------------------------------------|---------------------------|
| ``hare``        | Hare_Sched_RL: exact (CP-SAT) where it fits, | earliest free (published) |
|                 | else its LP with lazy cuts (``step1``)       |                           |
| ``hare-ect``    | as ``hare``                                  | earliest completion       |
| ``hare-lp``     | interval-indexed LP (scalable)              | earliest free             |
| ``hare-lp-ect`` | interval-indexed LP (scalable)              | earliest completion       |

*Earliest free* is Algorithm 1 as published: m* = argmin_m φ_m over eligible GPUs (§5.2,
line 12: "Find m* = argmin_{m∈M} φ_m"; "We adopt a greedy strategy, which always assigns the
task to the GPU m* with the earliest available time"). The paper does not say which GPU takes
the task when several qualify, so the tie rule is a parameter, ``gpu_tie``:

* ``lowest-index`` (default; the literal line 12): the GPU of least φ_m, ties to the lowest
  index, whatever its speed.
* ``fastest``: among the GPUs on which the task can start earliest, i.e. with
  max(t_i, φ_m) = max(t_i, min_m φ_m), the one with the least T^c (then T^s, then φ_m, then
  index). Theorem 4's proof uses only that "our algorithm always schedules tasks on
  machines with the earliest start time" (§5.3, before (21)); both rules give every task the
  same start x̃_i = max(t_i, min_m φ_m) given the GPUs' φ, so both are readings of line 12 and
  the guarantee is claimed (and checked) for both.

*Earliest completion* takes the GPU where the task's result is ready first (ties to the
group's earliest-free GPU, then the lowest index); ``gpu_tie`` does not apply to it.

Guarantee (Theorem 4, HPDC'22 §5.3): the published method is an α(2+α)-approximation, α the
heterogeneity degree (:func:`~optsched.exact.hare_relaxation.heterogeneity_degree`); the proof
bounds the heuristic by α(2+α) times the optimal relaxation value. Every Result reports α, the
factor, the relaxation value and the achieved ratio; ``covered`` is true only for ``hare``
(either ``gpu_tie``) with a proved exact relaxation, the one case the published bound speaks
about; with the LP step 1 (models/hare-rl-lp.md) the bound is certified but Theorem 4 is not
proved for it, so ``covered`` is false and the ratio is reported as measured.

Time limit: the ECT schedule comes first (nothing checked: one ECT schedule's time); step 1
gets what is left of ``--time-limit`` less step 2's time (:data:`STEP2_SECONDS_PER_TASK`)
and a tenth for freeing its model; step 2 is a list schedule (about one ECT schedule's
time), run when step 1 gave an order. When step 1 runs out of time it falls back on the ECT
schedule's start times (``relaxation.solver_status`` ``NOT_BUILT`` for the CP-SAT relaxation,
``relaxation.order`` ``ect`` for the LPs); when then no time is left, or the limit was spent
before step 1 began, the ECT schedule itself is the result (``extra.stopped`` ``time
limit``), so a schedule always comes back in time. The second tie rule's list schedule
(``tie_objectives``) is skipped when no time is left. A Ctrl-C stops step 1 (CP-SAT, HiGHS)
and the run goes on to step 2 with what step 1 had, marked ``interrupted``.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from optsched.budget import RELAXATION_TIME_LIMIT, Budget
from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import Incumbent, incumbent
from optsched.errors import OptschedError
from optsched.exact.bounds import interval_lp
from optsched.exact.grid import time_unit_or_default
from optsched.exact.hare_lp import solve_hare_lp
from optsched.exact.hare_relaxation import (
    check_relaxation_size,
    heterogeneity_degree,
    relaxation_fits,
    solve_hare_relaxation,
)
from optsched.instance import Instance
from optsched.options import Options, choice, count, number
from optsched.registry import register
from optsched.schedule import Schedule, Task
from optsched.work import work_option

GPU_CHOICES = ("earliest-free", "earliest-completion")
#: Step 1 of ``hare``/``hare-ect``: exact relaxation where it fits, else its LP (``auto``).
STEP1_CHOICES: tuple[Literal["auto", "exact", "lp"], ...] = ("auto", "exact", "lp")
#: Tie rules of the earliest-free GPU choice (Algorithm 1, line 12); the first is the default.
GPU_TIES: tuple[Literal["lowest-index", "fastest"], ...] = ("lowest-index", "fastest")
#: relative slack when testing the published guarantee (floating-point noise only)
GUARANTEE_TOL = 1e-9
#: Seconds per task of step 2 (a list schedule, about ECT's 20 µs): kept from step 1.
STEP2_SECONDS_PER_TASK = 3e-5
#: Share of step 1's time kept for freeing its model (CP-SAT's, built in Python).
STEP1_TEARDOWN_SHARE = 0.1


def hare_list_schedule(
    instance: Instance,
    estimate: Callable[[int, int, int], float],
    gpu_choice: str = "earliest-free",
    gpu_tie: str = "lowest-index",
) -> tuple[Schedule, float]:
    """Step 2 of Algorithm 1: the list schedule for start estimates ``estimate(j, r, k)``.

    ``gpu_choice`` earliest-free (line 12) or earliest-completion; ``gpu_tie`` the
    earliest-free tie rule (:data:`GPU_TIES`, see the module docstring). With either tie rule
    every task starts at max(t_i, min_m φ_m) over its eligible GPUs.

    Returns the schedule and its Σ w_j C_j. Runs in O(T log T + T·Q·log M) for T tasks, Q
    groups of interchangeable GPUs and M GPUs (a heap of free times per group).

    Raises
    ------
    OptschedError
        If the estimates order a task before a task of its job's previous round (every
        relaxation used here implies x̂ of round r+1 > x̂ of round r, so this is a bug).
    """
    if gpu_choice not in GPU_CHOICES:
        raise ValueError(f"gpu_choice must be one of {GPU_CHOICES}, got {gpu_choice!r}")
    if gpu_tie not in GPU_TIES:
        raise ValueError(f"gpu_tie must be one of {GPU_TIES}, got {gpu_tie!r}")
    compute, sync = instance.compute, instance.sync
    groups = instance.gpu_groups()
    heaps = [[(0.0, g) for g in group] for group in groups]  # (φ_m, m), sorted = a heap
    usable = [
        [q for q, group in enumerate(groups) if np.isfinite(compute[j, group[0]])]
        for j in range(instance.n_jobs)
    ]
    half_slowest = [
        0.5 * float(compute[j, instance.eligible(j)].max()) for j in range(instance.n_jobs)
    ]
    order = sorted(
        (estimate(j, r, k) + half_slowest[j], j, r, k)
        for j, job in enumerate(instance.jobs)
        for r in range(job.rounds)
        for k in range(job.tasks_per_round)
    )
    placed = [[0] * job.rounds for job in instance.jobs]
    ready = [[float(job.arrival)] + [0.0] * job.rounds for job in instance.jobs]
    earliest_free = gpu_choice == "earliest-free"
    fastest = earliest_free and gpu_tie == "fastest"
    tasks = []
    for _, j, r, k in order:
        job = instance.jobs[j]
        if r > 0 and placed[j][r - 1] < job.tasks_per_round:
            raise OptschedError(
                f"task {k} of round {r} of job {job.id!r} is listed before "
                f"its previous round is complete"
            )
        t = ready[j][r]  # arrival for round 0, else all results of round r-1 ready
        best: tuple[Any, ...] | None = None
        for q in usable[j]:
            phi, g = heaps[q][0]  # the group's earliest-free GPU (ties: lowest index)
            if fastest:  # earliest start, then least compute, sync, φ, index
                key: tuple[Any, ...] = (max(t, phi), compute[j, g], sync[j, g], phi, g)
            elif earliest_free:  # line 12 literally: least φ, then lowest index
                key = (phi, g)
            else:
                key = (max(t, phi) + compute[j, g] + sync[j, g], g)
            if best is None or key < best[0]:
                best = (key, q)
        assert best is not None  # every job has an eligible GPU
        q = best[1]
        phi, g = heapq.heappop(heaps[q])
        start = max(t, phi)
        heapq.heappush(heaps[q], (start + float(compute[j, g]), g))
        tasks.append(Task(job.id, r, k, instance.gpus[g].id, start))
        placed[j][r] += 1
        ready[j][r + 1] = max(ready[j][r + 1], start + float(compute[j, g] + sync[j, g]))
    objective = sum(job.weight * ready[j][job.rounds] for j, job in enumerate(instance.jobs))
    return Schedule(instance.name, tasks, instance.mode), objective


def guarantee(
    instance: Instance, objective: float, relaxation: float, proved: bool, published: bool
) -> dict[str, Any] | None:
    """The ``guarantee`` field of a Result (``None`` when α is undefined)."""
    alpha = heterogeneity_degree(instance)
    if alpha is None:
        return None
    factor = alpha * (2 + alpha)
    ratio = objective / relaxation if relaxation > 0 else None
    covered = published and proved
    holds = None
    if covered and ratio is not None:
        holds = ratio <= factor * (1 + GUARANTEE_TOL)
    return {"alpha": alpha, "factor": factor, "ratio": ratio, "covered": covered, "holds": holds}


def _solve(
    instance: Instance,
    ctx: SolveContext[HareRlOptions | HareLpEctOptions],
    relaxation: str,
    gpu_choice: str,
) -> MethodOutput:
    options = ctx.options
    budget = Budget(ctx.time_limit)
    started = time.perf_counter()
    info: dict[str, Any]
    interrupted = False
    published = relaxation == "rl" and gpu_choice == "earliest-free"
    step1 = options.step1 if isinstance(options, HareRlOptions) else ""
    tie = options.gpu_tie if isinstance(options, HareOptions | HareLpOptions) else None
    use_lp = relaxation == "rl" and (
        step1 == "lp" or (step1 == "auto" and not relaxation_fits(instance))
    )
    if relaxation == "rl" and not use_lp:
        check_relaxation_size(instance)  # before the ECT schedule: fail fast
    # the ECT schedule: the order when step 1 gives none, and the result when the limit is
    # spent before step 1 has given one (nothing checked: one ECT schedule's time)
    ect = incumbent(instance)
    if budget.expired():
        return _ect_output(
            instance,
            ect,
            {
                "kind": relaxation,
                "objective": None,
                "proved": False,
                "bound": None,
                "order": "ect",
                "status": "not solved (time limit)",
            },
            gpu_choice,
            tie,
            "time limit",
            time.perf_counter() - started,
        )
    ect_starts = _round_starts(instance, ect.schedule)

    def step1_left() -> float | None:
        """What step 1 gets: what is left less step 2 (a list schedule) and freeing step
        1's model (:data:`STEP1_TEARDOWN_SHARE` of its time)."""
        left = budget.left()
        if left is None:
            return None
        step2 = STEP2_SECONDS_PER_TASK * sum(job.n_tasks for job in instance.jobs)
        return max((left - step2) * (1 - STEP1_TEARDOWN_SHARE), 0.0)

    if use_lp:
        # Hare_Sched_RL's LP relaxation with lazy Queyranne cuts (models/hare-rl-lp.md): a
        # certified bound, but Theorem 4 is not proved for it, so the guarantee is not covered
        rllp = solve_hare_lp(instance, time_limit=step1_left(), report=ctx.report)
        rl_starts = rllp.round_starts if rllp.round_starts is not None else ect_starts

        def estimate(j: int, r: int, k: int) -> float:
            return float(rl_starts[j][r])

        value, proved, bound = (rllp.bound or 0.0), rllp.bound is not None, rllp.bound
        info = {
            **rllp.extra(),
            "objective": rllp.bound,
            "proved": proved,
            "order": "hare_sched_rl_lp" if rllp.round_starts is not None else "ect",
        }
        published = False
        interrupted = "interrupted" in rllp.status
    elif relaxation == "rl":
        assert isinstance(options, HareRlOptions)
        unit = time_unit_or_default(instance, options.time_unit)
        workers = options.workers
        rl = solve_hare_relaxation(
            instance,
            ect.schedule,
            time_unit=unit,
            time_limit=step1_left(),
            seed=ctx.seed,
            workers=workers,
            work=options.work,
        )
        starts = rl.starts

        def estimate(j: int, r: int, k: int) -> float:
            return starts[j, r, k]

        value, proved, bound = rl.objective, rl.proved, rl.bound
        # CP-SAT found nothing in time (or the model was not built): x̂ is the ECT schedule's
        # starts and "objective" that schedule's relaxation value, not an optimised one
        info = {
            "kind": "hare_sched_rl",
            "objective": value,
            "proved": proved,
            "bound": bound,
            "solver_status": rl.solver_status,
            "work": rl.work,
            "time_unit": unit,
            "order": "hare_sched_rl" if rl.solver_status in ("OPTIMAL", "FEASIBLE") else "ect",
        }
        interrupted = rl.interrupted
    else:
        assert isinstance(options, HareLpEctOptions)
        ratio = options.interval_ratio
        lp = interval_lp(instance, ratio, time_limit=step1_left())
        round_starts = lp.round_starts if lp.round_starts is not None else ect_starts

        def estimate(j: int, r: int, k: int) -> float:
            return float(round_starts[j][r])

        value, proved, bound = (lp.bound or 0.0), lp.bound is not None, lp.bound
        info = {
            "kind": "interval_lp",
            "objective": lp.bound,
            "proved": proved,
            "bound": bound,
            "intervals": lp.intervals,
            "variables": lp.variables,
            "interval_ratio": ratio,
            "bound_status": lp.bound_status,
            "order_status": lp.order_status,
            "order": "interval_lp" if lp.round_starts is not None else "ect",
        }
        interrupted = "interrupted" in (lp.bound_status, lp.order_status)
    info["runtime_s"] = time.perf_counter() - started
    if info["order"] == "ect" and (interrupted or budget.expired()):
        # step 1 gave no order and no time is left for step 2 in ECT's order: ECT itself
        return _ect_output(
            instance,
            ect,
            info,
            gpu_choice,
            tie,
            "interrupted" if interrupted else "time limit",
            0.0,
            bound,
        )
    step2 = time.perf_counter()
    schedule, objective = hare_list_schedule(instance, estimate, gpu_choice, tie or GPU_TIES[0])
    step2_s = time.perf_counter() - step2
    # the other tie rule from the same x̂ (step 2 only), so that the tie's effect is measured
    # without a second relaxation: its Σ w_j C_j per rule (skipped when no time is left)
    ties = (
        None
        if tie is None or budget.expired() or interrupted
        else {
            rule: objective
            if rule == tie
            else hare_list_schedule(instance, estimate, gpu_choice, rule)[1]
            for rule in GPU_TIES
        }
    )
    return MethodOutput(
        schedule=schedule,
        bound=bound,
        extra={
            "relaxation": info,
            "gpu_choice": gpu_choice,
            "gpu_tie": tie,
            "tie_objectives": ties,
            "list_scheduling_s": step2_s,
            "guarantee": guarantee(instance, objective, value, proved, published),
            "interrupted": interrupted,
            "stopped": "interrupted" if interrupted else "done",
        },
    )


def _ect_output(
    instance: Instance,
    ect: Incumbent,
    info: dict[str, Any],
    gpu_choice: str,
    tie: str | None,
    stopped: str,
    runtime: float,
    bound: float | None = None,
) -> MethodOutput:
    """The ECT schedule as the result, when no time is left for Hare's steps (or a Ctrl-C
    stopped step 1 before it gave an order): ``extra.stopped`` says which."""
    info.setdefault("runtime_s", runtime)
    return MethodOutput(
        schedule=ect.schedule,
        bound=bound,
        extra={
            "relaxation": info,
            "gpu_choice": gpu_choice,
            "gpu_tie": tie,
            "tie_objectives": None,
            "list_scheduling_s": 0.0,
            "guarantee": guarantee(
                instance, ect.objective, info.get("objective") or 0.0, False, False
            ),
            "interrupted": stopped == "interrupted",
            "stopped": stopped,
            "returned": "ect (no order from step 1 in time)",
        },
    )


def _round_starts(instance: Instance, schedule: Schedule) -> list[np.ndarray]:
    """Each round's start in ``schedule`` (its earliest task), per job: the order used when
    step 1 gave none in time."""
    starts = [np.full(job.rounds, np.inf) for job in instance.jobs]
    for t in schedule.tasks:
        j = instance.job_index[t.job]
        starts[j][t.round] = min(starts[j][t.round], t.start)
    return starts


#: Largest accepted ``interval_ratio``: coarser intervals make the LP bound useless, and huge
#: ratios overflow the interval ends to infinity.
MAX_INTERVAL_RATIO = 100.0
_TIE_HELP = (
    "earliest-free GPU tie rule (Algorithm 1 line 12 leaves it open): lowest-index "
    "(default, literal) or fastest (least compute among the GPUs where the task "
    "starts earliest)"
)


@dataclass(frozen=True)
class HareRlOptions(Options):
    """Options of ``hare-ect`` (step 1 on Hare_Sched_RL)."""

    step1: Literal["auto", "exact", "lp"] = choice(
        "auto (exact CP-SAT relaxation when it fits, else its LP with lazy "
        "Queyranne cuts; default), exact, or lp",
        STEP1_CHOICES,
    )
    time_unit: float | None = number(
        "grid step of the relaxation in seconds (default 1 for integer data, else 0.001)",
        open_low=True,
    )
    workers: int = count("CP-SAT worker threads for the relaxation (default 1)")
    work: float | None = work_option(
        "deterministic work budget of the exact relaxation's CP-SAT search, in work-seconds "
        "(a run repeats exactly under any load; the LP of step1=lp needs none); default: none"
    )


@dataclass(frozen=True)
class HareOptions(HareRlOptions):
    """Options of ``hare`` (Algorithm 1 as published)."""

    gpu_tie: Literal["lowest-index", "fastest"] = choice(_TIE_HELP, GPU_TIES)


@dataclass(frozen=True)
class HareLpEctOptions(Options):
    """Options of ``hare-lp-ect`` (step 1 on the interval-indexed LP)."""

    interval_ratio: float = number(
        "growth factor of the LP's geometric intervals (default 1.2)",
        1.2,
        low=1.0,
        high=MAX_INTERVAL_RATIO,
        open_low=True,
    )


@dataclass(frozen=True)
class HareLpOptions(HareLpEctOptions):
    """Options of ``hare-lp``."""

    gpu_tie: Literal["lowest-index", "fastest"] = choice(_TIE_HELP, GPU_TIES)


_VARIANTS = {
    "hare": (
        "rl",
        "earliest-free",
        "Hare's Algorithm 1 as published: exact relaxation "
        "(CP-SAT) + earliest-free GPU (gpu_tie: lowest-index or fastest); α(2+α) "
        "guarantee",
    ),
    "hare-ect": (
        "rl",
        "earliest-completion",
        "Hare's ordering (exact relaxation) with earliest-completion GPU choice",
    ),
    "hare-lp": (
        "interval-lp",
        "earliest-free",
        "Hare's list scheduling ordered by the scalable interval-indexed LP, earliest-free GPU",
    ),
    "hare-lp-ect": (
        "interval-lp",
        "earliest-completion",
        "Hare's list scheduling ordered by the interval-indexed LP, earliest-completion GPU",
    ),
}


def _register(name: str, relaxation: str, gpu_choice: str, description: str) -> None:
    options = {
        ("rl", "earliest-free"): HareOptions,
        ("rl", "earliest-completion"): HareRlOptions,
        ("interval-lp", "earliest-free"): HareLpOptions,
        ("interval-lp", "earliest-completion"): HareLpEctOptions,
    }[relaxation, gpu_choice]

    @register(
        name,
        description=description,
        modes=("relaxed",),
        options=options,
        default_time_limit=RELAXATION_TIME_LIMIT,
        imports=("ortools.sat.python.cp_model", "highspy")
        if relaxation == "rl"
        else ("highspy", "scipy.sparse"),
    )
    def method(
        instance: Instance, context: SolveContext[HareRlOptions | HareLpEctOptions]
    ) -> MethodOutput:
        return _solve(instance, context, relaxation, gpu_choice)


for _name, (_relaxation, _choice, _description) in _VARIANTS.items():
    _register(_name, _relaxation, _choice, _description)
