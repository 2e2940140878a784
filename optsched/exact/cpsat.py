"""Exact CP-SAT models in both modes (models/cpsat.md): grouped and per-GPU.

The **grouped** model (``cpsat``) aggregates interchangeable GPUs (identical compute and sync
columns) into groups with a cumulative capacity; concrete GPUs are assigned afterwards by
interval colouring, which never fails because intervals on identical machines with at most m
overlapping can be coloured with m colours. The **per-GPU** model
(``cpsat-pergpu``) is the reference: one optional interval per (task or round, GPU) and a
no-overlap per GPU. Both are exact for the model (docs/model.md) on the integer grid of
``time_unit``.

Domains are cut by per-job deadlines d_j = (UB − Σ_{i≠j} w_i LB_i) / w_j from the ECT
incumbent UB and the critical-path bounds LB: every schedule at least
as good as the incumbent satisfies them, so no optimal schedule is lost.

Limits (:mod:`optsched.budget`): the whole method, model build and bound included,
runs within ``--time-limit``. The instance's ECT schedule comes first, evaluated without the
checker (one ECT schedule's time: when the limit is spent by then, it is the result); the
build stops between rounds when the limit is spent, and the Result is then the incumbent
(the ECT schedule, or the hint) with the critical-path bound, ``extra.model`` = ``not built:
time limit`` and ``extra.stopped`` = ``time limit``. Then the bound (``column-bound`` from
the incumbent, :mod:`optsched.exact.columns`) gets at most a fifth of the limit (a Ctrl-C
there ends the run: ``interrupted``, CP-SAT not started); on an exact grid CP-SAT's
objective is constrained to at least its value, so CP-SAT's own bound starts there and the
search stops when a schedule reaches it. CP-SAT gets what is left, less the time to read its
schedule back, and stops at a Ctrl-C too (``interrupted``). A model
with more than :data:`~optsched.budget.MAX_CPSAT_INTERVALS` intervals, or whose
integers would overflow CP-SAT's 62-bit domains, is refused (InputError). With a ``work``
budget (CP-SAT's deterministic time, :mod:`optsched.work`) and one worker, CP-SAT's search
repeats exactly under any load (``extra.stopped`` ``work`` when it ends it), on the budget
less what the bound spent of its fifth.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from optsched.budget import (
    EXACT_TIME_LIMIT,
    MAX_CPSAT_INTERVALS,
    TEARDOWN_SHARE,
    Budget,
    OutOfTime,
    fmt,
    solve_stoppable,
)
from optsched.check import ResolutionError, check
from optsched.contracts import MethodOutput, SolveContext
from optsched.critical_path import critical_path, round_lower_bounds
from optsched.ect import completions, ect_schedule, evaluate, incumbent
from optsched.errors import InputError, OptschedError
from optsched.exact.grid import (
    ScaledInstance,
    on_grid,
    scale,
    time_unit_or_default,
    to_steps,
)
from optsched.instance import Instance
from optsched.limits import MAX_VALUE
from optsched.options import Options, count, number, switch
from optsched.options import choice as one_of
from optsched.registry import register
from optsched.result import Status
from optsched.schedule import Schedule, Task
from optsched.work import cpsat_limit, cpsat_work, cpsat_work_spent, work_option

#: ``search=auto`` uses CP-SAT's core-based lower bounding in relaxed mode only while the
#: incumbent spans at most this many grid steps from the first arrival: its bound climbs
#: through objective values one step at a time, which proves the exact family's integer
#: instances several times faster (spans of tens to hundreds of steps) but stalls on a fine
#: grid (1 ms: spans of 10⁴–10⁵ steps; models/cpsat.md).
CORE_MAX_STEPS = 10_000


@dataclass(frozen=True)
class CpsatOptions(Options):
    """Options of ``cpsat`` and ``cpsat-pergpu``."""

    time_unit: float | None = number(
        "grid step in seconds (default 1 for integer data, else 0.001)", open_low=True
    )
    workers: int = count("CP-SAT worker threads (default 1)")
    objective: Literal["weighted", "makespan"] = one_of(
        "weighted (Σ w_j C_j, default) or makespan", ("weighted", "makespan")
    )
    hint: Literal["ect", "none"] = one_of(
        "ect (default: warm start from the ECT schedule) or none", ("ect", "none")
    )
    lp_bound: bool = switch(
        "1 (default): before the search, compute column-bound's LP bound (the "
        "time-indexed relaxation, in gang mode with conflict cuts) from the incumbent, "
        "within a fifth of the time limit or work budget; CP-SAT's objective starts at "
        "it (exact grids) and the search stops when a schedule reaches it; 0: do not",
        default=True,
    )
    search: Literal["auto", "default", "core"] = one_of(
        "auto (default: core in relaxed mode on a grid of at most 10,000 steps, else "
        "default), "
        "default, or core (CP-SAT's core-based lower bounding: stronger "
        "bounds in relaxed mode)",
        ("auto", "default", "core"),
    )
    work: float | None = work_option()


def assign_gpus(
    items: Sequence[tuple[Any, int, int, int, int]], groups: Sequence[Sequence[int]]
) -> dict[Any, list[int]]:
    """Interval colouring: give each item ``(key, group, start, end, demand)`` ``demand``
    distinct GPUs of its group that are free during ``[start, end)``.

    Items are swept by start time; at each start the GPUs whose last item ended are free,
    and the group's cumulative capacity guarantees enough of them (lowest indices first).
    """
    free_at = {g: 0 for group in groups for g in group}
    out: dict[Any, list[int]] = {}
    for key, q, start, end, demand in sorted(items, key=lambda it: (it[2], it[3])):
        free = [g for g in groups[q] if free_at[g] <= start]
        if len(free) < demand:
            raise OptschedError(f"interval colouring failed in group {q} at {start}")
        out[key] = free[:demand]
        for g in out[key]:
            free_at[g] = end
    return out


def _evaluate(inst: Instance, schedule: Schedule) -> tuple[int, int]:
    """(Σ w C, makespan) of a *feasible* schedule of the scaled instance (the ECT schedule,
    or a hint the checker passed), both exact integers (Python ints: no float rounding of
    the sum, whatever its size), from :func:`~optsched.heuristics.list_scheduling
    .completions` (the checker's completions, without its checks)."""
    done = [int(c) for c in completions(inst, schedule).tolist()]
    objective = sum(int(job.weight) * c for job, c in zip(inst.jobs, done, strict=True))
    return objective, max(done)


def _deadlines(inst: Instance, upper: int, makespan: bool, horizon: int) -> list[int]:
    """Per-job deadlines on the grid, in exact integer arithmetic: every schedule of the
    scaled instance with Σ w C ≤ ``upper`` (or makespan ≤ ``horizon``) meets them."""
    if makespan:
        return [horizon] * inst.n_jobs
    lb = [int(x) for x in critical_path(inst)]  # integers on the grid (exact below 2^53)
    w = [int(job.weight) for job in inst.jobs]
    total = sum(wi * li for wi, li in zip(w, lb, strict=True))
    return [(upper - (total - w[j] * lb[j])) // w[j] for j in range(inst.n_jobs)]


class _Model:
    """The CP-SAT model of one scaled instance over GPU ``groups``.

    Relaxed mode: a start per task and one optional fixed-size interval per (task, group).
    Gang mode: a start and a pace per round and one optional interval per (round, group)
    whose demand is the number of the round's tasks in that group. ``choice[unit][q]`` is the
    boolean (relaxed) or demand (gang) of that unit in group q; a unit is (j, r, k) or (j, r).
    Times in the model count from ``origin``, the first arrival (CP-SAT proved a wrong optimum,
    one step above the true one, with times around 1.7e12 steps); the objective carries
    the shift as a constant, so its values and bounds are absolute.
    """

    def __init__(
        self,
        inst: Instance,
        groups: Sequence[Sequence[int]],
        deadline: list[int],
        makespan: bool,
        budget: Budget | None = None,
    ) -> None:
        from ortools.sat.python import cp_model

        self.m = cp_model.CpModel()
        self.inst, self.groups = inst, groups
        self.origin = min(int(job.arrival) for job in inst.jobs)
        deadline = [d - self.origin for d in deadline]
        self.gang = inst.mode == "gang"
        self.round_length = [int(bound) for bound in round_lower_bounds(inst)]
        self.ready: dict[tuple[int, int], Any] = {}
        self.start: dict[tuple[int, ...], Any] = {}
        self.choice: dict[tuple[int, ...], dict[int, Any]] = {}
        self.present: dict[tuple[int, int, int], Any] = {}
        self.pace: dict[tuple[int, int], Any] = {}
        self.intervals: dict[int, list[Any]] = {q: [] for q in range(len(groups))}
        self.demands: dict[int, list[Any]] = {q: [] for q in range(len(groups))}
        begun = time.perf_counter()
        for j, job in enumerate(inst.jobs):
            for r in range(job.rounds):
                if budget is not None:  # OutOfTime: the caller returns its incumbent, and
                    # freeing what is built takes a share of the time it took
                    budget.check(TEARDOWN_SHARE * (time.perf_counter() - begun))
                earliest = int(job.arrival) - self.origin if r == 0 else 0
                after = self.ready.get((j, r - 1))
                if self.gang:
                    self._gang_round(j, r, earliest, deadline[j], after)
                else:
                    self._relaxed_round(j, r, earliest, deadline[j], after)
        if budget is not None:  # the resource constraints take a while on large models
            budget.check(TEARDOWN_SHARE * (time.perf_counter() - begun))
        for q, group in enumerate(groups):
            if not self.intervals[q]:
                continue
            if len(group) == 1:
                self.m.add_no_overlap(self.intervals[q])
            else:
                self.m.add_cumulative(self.intervals[q], self.demands[q], len(group))
        last = [self.ready[j, job.rounds - 1] for j, job in enumerate(inst.jobs)]
        if makespan:
            cmax = self.m.new_int_var(0, max(deadline), "cmax")
            self.m.add_max_equality(cmax, last)
            self.objective = cmax + self.origin
        else:
            weights = [int(job.weight) for job in inst.jobs]
            self.objective = sum(w * c for w, c in zip(weights, last, strict=True)) + (
                self.origin * sum(weights)
            )
        self.m.minimize(self.objective)
        #: Seconds freeing this model is expected to take (:data:`TEARDOWN_SHARE`).
        self.teardown = TEARDOWN_SHARE * (time.perf_counter() - begun)

    def at_least(self, value: int) -> None:
        """The objective is at least ``value``: a lower bound every schedule on the grid
        meets (so no solution is lost), from which CP-SAT's own bound starts."""
        self.m.add(self.objective >= value)

    def _group_data(self, j: int) -> list[tuple[int, int, int]]:
        """(group, compute, sync) of the groups job j can use."""
        out = []
        for q, group in enumerate(self.groups):
            g = group[0]
            if math.isfinite(self.inst.compute[j, g]):
                out.append((q, int(self.inst.compute[j, g]), int(self.inst.sync[j, g])))
        return out

    def _relaxed_round(self, j: int, r: int, earliest: int, deadline: int, after: Any) -> None:
        m = self.m
        ready = []
        for k in range(self.inst.jobs[j].tasks_per_round):
            s = m.new_int_var(earliest, deadline, f"s{j}_{r}_{k}")
            if after is not None:
                m.add(s >= after)
            self.start[j, r, k] = s
            choice = self.choice[j, r, k] = {}
            finish = []
            for q, p, sy in self._group_data(j):
                x = choice[q] = m.new_bool_var(f"x{j}_{r}_{k}_{q}")
                self.intervals[q].append(m.new_optional_fixed_size_interval_var(s, p, x, ""))
                self.demands[q].append(1)
                finish.append((p + sy) * x)
            m.add_exactly_one(choice.values())
            if k > 0:  # identical tasks of a round: sorted by (start, group)
                n_groups = len(self.groups)
                prev = self.choice[j, r, k - 1]
                m.add(
                    n_groups * self.start[j, r, k - 1] + sum(q * v for q, v in prev.items())
                    <= n_groups * s + sum(q * v for q, v in choice.items())
                )
            ready.append(s + sum(finish))
        self.ready[j, r] = m.new_int_var(earliest, deadline, f"R{j}_{r}")
        m.add_max_equality(self.ready[j, r], ready)
        # redundant: a round lasts at least its critical-path length (models/cpsat.md)
        m.add(
            self.ready[j, r] >= (after if after is not None else earliest) + self.round_length[j]
        )

    def _gang_round(self, j: int, r: int, earliest: int, deadline: int, after: Any) -> None:
        m = self.m
        k_tasks = self.inst.jobs[j].tasks_per_round
        data = self._group_data(j)
        s = m.new_int_var(earliest, deadline, f"S{j}_{r}")
        if after is not None:
            m.add(s >= after)
        pace = m.new_int_var(0, max(p + sy for _, p, sy in data), f"P{j}_{r}")
        end = m.new_int_var(earliest, deadline, f"R{j}_{r}")
        m.add(end == s + pace)
        self.start[j, r], self.pace[j, r], self.ready[j, r] = s, pace, end
        choice = self.choice[j, r] = {}
        paces = []
        for q, p, sy in data:
            cap = min(k_tasks, len(self.groups[q]))
            b = m.new_bool_var(f"b{j}_{r}_{q}")
            if cap == 1:
                d = b
            else:
                d = m.new_int_var(0, cap, f"d{j}_{r}_{q}")
                m.add(d >= 1).only_enforce_if(b)
                m.add(d == 0).only_enforce_if(~b)
            choice[q] = d
            self.present[j, r, q] = b
            self.intervals[q].append(m.new_optional_interval_var(s, pace, end, b, ""))
            self.demands[q].append(d)
            paces.append((p + sy) * b)
        m.add(sum(choice.values()) == k_tasks)
        m.add_max_equality(pace, paces)  # exact: the slowest chosen GPU sets the pace
        m.add(pace >= self.round_length[j])  # redundant (models/cpsat.md)

    # -- hints and solutions ------------------------------------------------------------------

    def hint(self, schedule: Schedule, budget: Budget | None = None) -> None:
        """Hint every decision variable from a feasible schedule of the scaled instance
        (``budget`` checked per round, keeping :attr:`teardown`: OutOfTime)."""
        inst, m = self.inst, self.m
        group_of = {g: q for q, group in enumerate(self.groups) for g in group}
        by_round: dict[tuple[int, int], list[Task]] = {}
        for t in schedule.tasks:
            by_round.setdefault((inst.job_index[t.job], t.round), []).append(t)
        for (j, r), tasks in by_round.items():
            if budget is not None:
                budget.check(self.teardown)
            tasks.sort(key=lambda t: (t.start, group_of[inst.gpu_index[t.gpu]]))
            used = [group_of[inst.gpu_index[t.gpu]] for t in tasks]
            ready = max(
                t.start
                + inst.compute[j, inst.gpu_index[t.gpu]]
                + inst.sync[j, inst.gpu_index[t.gpu]]
                for t in tasks
            )
            m.add_hint(self.ready[j, r], int(ready) - self.origin)
            if self.gang:
                m.add_hint(self.start[j, r], int(tasks[0].start) - self.origin)
                m.add_hint(self.pace[j, r], int(ready - tasks[0].start))
                for q, var in self.choice[j, r].items():
                    m.add_hint(var, used.count(q))
                    if self.present[j, r, q] is not var:
                        m.add_hint(self.present[j, r, q], int(q in used))
                continue
            for k, (t, q_used) in enumerate(zip(tasks, used, strict=True)):
                m.add_hint(self.start[j, r, k], int(t.start) - self.origin)
                for q, var in self.choice[j, r, k].items():
                    m.add_hint(var, int(q == q_used))

    def schedule(self, solver: Any) -> Schedule:
        """The solver's solution with concrete GPUs (interval colouring): a schedule of the
        scaled instance, starts in grid steps (:meth:`ScaledInstance.schedule_in_seconds`
        reads it back in seconds)."""
        inst = self.inst
        items = []
        for unit, choice in self.choice.items():
            j, r = unit[0], unit[1]
            start = solver.value(self.start[unit]) + self.origin
            for q, var in choice.items():
                n = solver.value(var)
                if n:
                    end = start + (
                        solver.value(self.pace[j, r])
                        if self.gang
                        else int(inst.compute[j, self.groups[q][0]])
                    )
                    items.append(((*unit, q), q, start, end, n))
        gpus = assign_gpus(items, self.groups)
        tasks = []
        next_task: dict[tuple[int, int], int] = {}
        for key, _, start, _, _ in sorted(items, key=lambda it: it[0]):
            j, r = key[0], key[1]
            for g in gpus[key]:
                k = key[2] if not self.gang else next_task.get((j, r), 0)
                next_task[j, r] = k + 1
                tasks.append(Task(inst.jobs[j].id, r, k, inst.gpus[g].id, float(start)))
        return Schedule(inst.name, tasks, inst.mode)


#: Solver packages CP-SAT methods load (the LP bound uses HiGHS).
CPSAT_IMPORTS = ("ortools.sat.python.cp_model", "highspy")

STATUS = {
    "OPTIMAL": "solution",
    "FEASIBLE": "solution",
    "UNKNOWN": "none",
    "INFEASIBLE": "bug",
    "MODEL_INVALID": "bug",
}


#: CP-SAT's integer variables and linear expressions must stay within ±2^62.
_CPSAT_MAX_INT = 2**62


def _check_intervals(inst: Instance, groups: Sequence[Sequence[int]], method: str) -> None:
    """Refuse (InputError) a model of more than MAX_CPSAT_INTERVALS intervals."""
    n_groups = [
        sum(1 for group in groups if math.isfinite(inst.compute[j, group[0]]))
        for j in range(inst.n_jobs)
    ]
    units = [job.rounds * (1 if inst.mode == "gang" else job.tasks_per_round) for job in inst.jobs]
    intervals = sum(u * g for u, g in zip(units, n_groups, strict=True))
    if intervals > MAX_CPSAT_INTERVALS:
        raise InputError(
            f"--method {method}: the CP-SAT model of this instance would have "
            f"about {fmt(intervals)} intervals; at most "
            f"{fmt(MAX_CPSAT_INTERVALS)} fit in memory (use a heuristic)"
        )


def _check_integers(
    inst: Instance, groups: Sequence[Sequence[int]], deadline: list[int], unit: float
) -> None:
    """Refuse (InputError naming time_unit) a horizon that overflows CP-SAT's integers."""
    total = sum(int(job.weight) * d for job, d in zip(inst.jobs, deadline, strict=True))
    if max(deadline, default=0) * (len(groups) + 1) >= _CPSAT_MAX_INT or total >= _CPSAT_MAX_INT:
        raise InputError(
            f"time_unit {unit:g} is too fine for CP-SAT: the horizon is "
            f"{fmt(max(deadline))} steps; choose a coarser time_unit"
        )


def _hint_on_grid(hint: Schedule | None, sc: ScaledInstance, *, exact: bool) -> Schedule | None:
    """``hint`` (starts in seconds) as a schedule of the scaled instance, its starts rounded
    up to the grid (:func:`~optsched.exact.grid.to_steps`); None without a hint, when a start
    is beyond MAX_VALUE steps, or (``exact``) when a start is not on the grid."""
    if hint is None:
        return None
    seconds = np.array([t.start for t in hint.tasks], dtype=float)
    steps = to_steps(seconds, sc.time_unit, "up")
    if not np.all(steps <= MAX_VALUE) or (exact and not on_grid(seconds, sc.time_unit)):
        return None
    inst = sc.instance
    return Schedule(
        inst.name,
        [dataclasses.replace(t, start=float(k)) for t, k in zip(hint.tasks, steps, strict=True)],
        inst.mode,
    )


def _feasible_on_grid(inst: Instance, own: Schedule, instance: Instance, given: Schedule) -> bool:
    """Whether ``own``, the schedule ``given`` of ``instance`` rounded onto the grid, is
    feasible on the scaled instance ``inst``. Where floats are too coarse to check its times,
    the refusal (:class:`~optsched.check.ResolutionError`) is the checker's on ``given`` in
    seconds, which names the instance's own times rather than grid steps."""
    try:
        return check(inst, own).feasible
    except ResolutionError:
        check(instance, given)  # the same refusal, in seconds
        raise


#: Seconds per task the end of a CP-SAT run takes (its schedule read back and converted to
#: seconds; measured about 10 µs): kept from CP-SAT's time.
FINISH_SECONDS_PER_TASK = 2e-5

#: The share of the time limit (or work budget) the bound before CP-SAT gets at most
#: (``column-bound`` from the incumbent): anytime, so whatever it gets gives a bound; on the
#: exact family it converges in 0.1-5 s, and CP-SAT gets the rest.
BOUND_SHARE = 0.2


def solve_cpsat(
    instance: Instance, ctx: SolveContext[CpsatOptions], *, per_gpu: bool
) -> MethodOutput:
    """Solve ``instance`` (already in ``ctx.mode``) with the grouped or per-GPU model.

    Within ``ctx.time_limit`` (see the module docstring): an incumbent is always returned
    with ``hint=ect``; the bound is the best of CP-SAT's (on an exact grid) and
    column-bound's, or none. Every solution is reported with the bound at that moment
    (``ctx.report``). A Ctrl-C stops the bound or the search: the best schedule and bound
    found are returned with ``extra["interrupted"]``.
    The ECT schedule of the instance comes first (no checker call): when the limit is
    spent by then, it is the result (``extra.stopped`` ``time limit``), nothing is built
    and CP-SAT is not even imported.
    """
    budget = Budget(ctx.time_limit)
    options = ctx.options
    unit = time_unit_or_default(instance, options.time_unit)
    objective, hint, workers, search, lp_bound = (
        options.objective,
        options.hint,
        options.workers,
        options.search,
        options.lp_bound,
    )
    makespan = objective == "makespan"
    use_lp = lp_bound and not makespan
    method = "cpsat-pergpu" if per_gpu else "cpsat"
    _check_intervals(
        instance,
        [(g,) for g in range(instance.n_gpus)] if per_gpu else instance.gpu_groups(),
        method,
    )
    sc = scale(instance, unit, "up")
    inst = sc.instance
    groups = [(g,) for g in range(inst.n_gpus)] if per_gpu else inst.gpu_groups()
    extra: dict[str, Any] = {
        "model": "per-gpu" if per_gpu else "grouped",
        "groups": len(groups),
        "time_unit": unit,
        "grid_exact": sc.exact,
        "workers": workers,
        "objective_kind": objective,
        "search": search,
    }
    not_built: dict[str, Any] = {
        "solver_status": "NOT_BUILT",
        "model": f"{extra['model']}, not built: time limit",
        "anytime": [],
        "solver_bound": None,
        "stopped": "time limit",
    }
    if use_lp:
        not_built.update(lp_bound=None, lp_status="time limit (build)")
    ect = incumbent(instance) if hint == "ect" else None  # the fallback, in seconds
    if budget.expired():
        if ect is None:
            return MethodOutput(status=Status.UNKNOWN, extra={**extra, **not_built})
        return MethodOutput(schedule=ect.schedule, extra={**extra, **not_built})

    from ortools.sat.python import cp_model

    start = ect_schedule(inst)
    upper, horizon = _evaluate(inst, start)
    from_hint = False
    own = _hint_on_grid(ctx.hint, sc, exact=True)
    if (
        own is not None
        and ctx.hint is not None
        and not budget.expired()
        and _feasible_on_grid(inst, own, instance, ctx.hint)
    ):
        own_upper, own_horizon = _evaluate(inst, own)  # a user's schedule on the grid
        if (own_horizon if makespan else own_upper) < (horizon if makespan else upper):
            start, upper, horizon, from_hint = own, own_upper, own_horizon, True
    if search == "auto":  # core-based bounds climb one objective step at a time
        span = horizon - min(int(job.arrival) for job in inst.jobs)
        search = "core" if instance.mode == "relaxed" and span <= CORE_MAX_STEPS else "default"
        extra["search"] = search
    deadline = _deadlines(inst, upper, makespan, horizon)
    _check_integers(inst, groups, deadline, unit)
    in_seconds = sc.schedule_in_seconds

    def fallback() -> Schedule:
        """The incumbent in seconds: the hint read back, else the instance's ECT schedule."""
        return in_seconds(start) if from_hint or ect is None else ect.schedule

    try:
        budget.check()
        model = _Model(inst, groups, deadline, makespan, budget)
        if hint == "ect":
            model.hint(start, budget)
        budget.check(model.teardown)
    except OutOfTime:  # what is certified so far: the incumbent and the critical path
        if hint != "ect":
            return MethodOutput(status=Status.UNKNOWN, extra={**extra, **not_built})
        return MethodOutput(schedule=fallback(), extra={**extra, **not_built})

    # the bound first (column-bound from the incumbent, within a fifth of the limit or of the
    # work budget): CP-SAT gets what it leaves, its objective starts at the bound and it
    # stops when a schedule reaches it
    first: dict[str, Any] = {}
    bound_work = 0.0
    if use_lp:
        if budget.expired():
            first = {"lp_bound": None, "lp_status": "time limit (build)", "lp_iterations": 0}
        else:
            left = budget.left()  # None exactly when the time limit is
            limit = ctx.time_limit
            within = Budget(
                None if left is None or limit is None else min(BOUND_SHARE * limit, left)
            )
            work = None if options.work is None else BOUND_SHARE * options.work
            first = _column_bound(instance, fallback(), within, ctx.report, work)
            bound_work = first.pop("lp_work")
        extra.update(first)
        if first["lp_status"] == "interrupted":  # a Ctrl-C: the incumbent and the bound
            stop = {**extra, "interrupted": True, "stopped": "interrupted", "work": bound_work}
            if hint != "ect":
                return MethodOutput(bound=first["lp_bound"], status=Status.UNKNOWN, extra=stop)
            return MethodOutput(schedule=fallback(), bound=first["lp_bound"], extra=stop)
        if first["lp_bound"] is not None and sc.exact:  # Σ w C on the grid = original × this
            per_unit = sc.weight_scale / sc.time_unit
            model.at_least(_grid_floor(first["lp_bound"] * per_unit, first["lp_parts"]))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = ctx.seed
    left = budget.left()
    if left is not None and ctx.time_limit is not None:
        # the end of the run (its schedule read back) keeps its share, at most half of what
        # is left
        solver.parameters.max_time_in_seconds = max(
            left
            - FINISH_SECONDS_PER_TASK * sum(job.n_tasks for job in inst.jobs)
            - model.teardown,
            0.5 * left,
        )
    # CP-SAT's deterministic time is the work (optsched.work) the bound left
    search_work = options.work
    if search_work is not None:
        search_work = max(search_work - bound_work, 0.0)
        solver.parameters.max_deterministic_time = cpsat_limit(search_work)
    solver.parameters.absolute_gap_limit = 0.0
    solver.parameters.relative_gap_limit = 0.0
    solver.parameters.linearization_level = 2
    solver.parameters.optimize_with_core = search == "core"
    exact_bound = sc.exact and not makespan

    def real(value: float) -> float:
        return sc.objective_to_original(value) if not makespan else sc.to_seconds(value)

    anytime: list[list[float]] = []
    started = time.perf_counter()

    class Log(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            anytime.append(
                [
                    round(time.perf_counter() - started, 4),
                    real(self.objective_value),
                    real(self.best_objective_bound),
                ]
            )
            ctx.report(
                None if makespan else anytime[-1][1], anytime[-1][2] if exact_bound else None
            )

    # a Ctrl-C stops the search and keeps its best solution (no best_bound_callback: it
    # aborted the process at a Ctrl-C under ortools 9.15)
    status, ctrl_c = solve_stoppable(solver, model.m, Log())
    name = solver.status_name(status)
    interrupted = ctrl_c and name != "OPTIMAL"
    extra.update(
        solver_status=name,
        anytime=anytime,
        interrupted=interrupted,
        stopped="interrupted" if interrupted else "done" if name == "OPTIMAL" else "time limit",
        work=cpsat_work(solver) + bound_work,
    )
    if extra["stopped"] == "time limit" and cpsat_work_spent(solver, search_work):
        extra["stopped"] = "work"
    if STATUS[name] == "bug":
        raise OptschedError(f"CP-SAT returned {name} although the incumbent is feasible")
    bound = real(solver.best_objective_bound) if exact_bound else None
    extra["solver_bound"] = bound
    if first.get("lp_bound") is not None:
        bound = first["lp_bound"] if bound is None else max(bound, first["lp_bound"])
    if makespan:  # a bound on the original only on an exact grid
        extra["makespan_bound"] = real(solver.best_objective_bound) if sc.exact else None
    if STATUS[name] == "solution":
        schedule = in_seconds(model.schedule(solver))
    elif hint == "ect":  # the solver found nothing better than the incumbent in time
        schedule = fallback()
    else:
        return MethodOutput(bound=bound, status=Status.UNKNOWN, extra=extra)
    schedule = Schedule(instance.name, schedule.tasks, instance.mode)
    return MethodOutput(schedule=schedule, bound=bound, extra=extra)


def _grid_floor(value: float, parts: int) -> int:
    """The least integer objective on the grid that a bound of ``value`` grid units allows:
    ⌈value⌉ less what its floats may add (each part's bound is within 2 units in the last
    place of its exact value, and the sum of ``parts`` parts, rounded down, and its
    conversion to grid units add 2 more), so no schedule is lost at an epoch-scale origin,
    where one unit in the last place exceeds 1e-6 of a grid unit."""
    return math.ceil(value - 1e-6 - (4 + 2 * parts) * math.ulp(value))


def _column_bound(
    instance: Instance, schedule: Schedule, budget: Budget, report: Any, work: float | None
) -> dict[str, Any]:
    """The fields of :func:`~optsched.exact.columns.column_bound_from` the feasible
    ``schedule`` (its rounds the master's first paths, its objective the deadlines'), within
    ``budget`` and ``work`` work-seconds, calling ``report(objective, bound)`` with each
    better bound: ``lp_bound`` (None where it gave none), ``lp_status`` (how it stopped, or
    why it gave none), ``lp_iterations``, ``lp_time_unit`` (its grid, the largest part's),
    ``lp_parts`` (the separated parts it summed; 1: the whole instance) and ``lp_work`` (the
    work-seconds it spent)."""
    from optsched.exact.columns import column_bound_from, column_time_unit
    from optsched.exact.lagrangian import BelowCriticalPath, TooLarge

    value, span = evaluate(instance, schedule)
    unit = column_time_unit(instance, span, None)
    none = {
        "lp_bound": None,
        "lp_iterations": 0,
        "lp_time_unit": unit,
        "lp_parts": 1,
        "lp_work": 0.0,
    }
    try:
        # relaxed mode without the conflict cuts: pricing its staggered rounds takes the
        # bound's whole share and cost a proof at 10 jobs (docs/models/cpsat.md)
        found = column_bound_from(
            instance,
            schedule,
            budget=budget,
            report=lambda bound: report(value, bound),
            work=work,
            cuts=instance.mode == "gang",
        )
    except TooLarge:
        return {**none, "lp_status": "too large"}
    except BelowCriticalPath:  # an objective within the checker's tolerance below it
        return {**none, "lp_status": "at the critical path"}
    return {
        "lp_bound": found.bound,
        "lp_status": found.stopped,
        "lp_iterations": found.iterations,
        "lp_time_unit": found.time_unit,
        "lp_parts": found.parts,
        "lp_work": found.work,
    }


@register(
    "cpsat",
    options=CpsatOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    imports=CPSAT_IMPORTS,
    description="CP-SAT over groups of interchangeable GPUs (exact, both modes)",
)
def _cpsat(instance: Instance, context: SolveContext[CpsatOptions]) -> MethodOutput:
    return solve_cpsat(instance, context, per_gpu=False)


@register(
    "cpsat-pergpu",
    options=CpsatOptions,
    imports=CPSAT_IMPORTS,
    default_time_limit=EXACT_TIME_LIMIT,
    description="CP-SAT with one interval per GPU (exact reference model, both modes)",
)
def _cpsat_pergpu(instance: Instance, context: SolveContext[CpsatOptions]) -> MethodOutput:
    return solve_cpsat(instance, context, per_gpu=True)
