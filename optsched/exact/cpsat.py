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

Limits (:mod:`optsched.exact.budget`): the whole method, model build and LP bound included,
runs within ``--time-limit``. The build stops between rounds when the limit is spent, and the
Result is then the incumbent (the ECT schedule, or the hint) with the critical-path bound and
``extra.model`` = ``not built: time limit``; CP-SAT gets what is left, less the LP's fifth;
the LP gets what CP-SAT leaves. A model with more than
:data:`~optsched.exact.budget.MAX_CPSAT_INTERVALS` intervals, or whose integers would overflow
CP-SAT's 62-bit domains, is refused (InputError).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optsched.check import check
from optsched.errors import InputError, OptschedError
from optsched.exact.bounds import (
    critical_path,
    lp_time_unit,
    round_lower_bound,
    solve_time_indexed_lp,
    time_indexed_lp_size,
)
from optsched.exact.budget import (
    MAX_CPSAT_INTERVALS,
    Budget,
    OutOfTime,
    fmt,
    handover_seconds,
    lp_too_large,
    stopped_by_ctrl_c,
)
from optsched.exact.grid import ScaledInstance, scale, time_unit_or_default
from optsched.heuristics.list_scheduling import ect_schedule
from optsched.instance import Instance
from optsched.options import Options, count, number
from optsched.options import choice as one_of
from optsched.result import Status
from optsched.schedule import Schedule, Task
from optsched.solve import EXACT_TIME_LIMIT, MethodOutput, SolveContext, register


@dataclass(frozen=True)
class CpsatOptions(Options):
    """Options of ``cpsat`` and ``cpsat-pergpu``."""

    time_unit: float | None = number("grid step in seconds (default 1 for integer data, "
                                     "else 0.001)", open_low=True)
    workers: int = count("CP-SAT worker threads (default 1)")
    objective: str = one_of("weighted (Σ w_j C_j, default) or makespan",
                            ("weighted", "makespan"))
    hint: str = one_of("ect (default: warm start from the ECT schedule) or none",
                       ("ect", "none"))
    lp_bound: str = one_of("on (default: unless proved optimal, also compute the "
                           "time-indexed LP bound from the final incumbent, in the last fifth "
                           "of the time limit) or off", ("on", "off"))
    search: str = one_of("auto (default: core in relaxed mode, default in gang mode), "
                         "default, or core (CP-SAT's core-based lower bounding: stronger "
                         "bounds in relaxed mode)", ("auto", "default", "core"))


def assign_gpus(items: Sequence[tuple[Any, int, int, int, int]],
                groups: Sequence[Sequence[int]]) -> dict[Any, list[int]]:
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


def _evaluate(inst: Instance, schedule: Schedule) -> tuple[float, int]:
    """(Σ w C, makespan) of a feasible schedule of the scaled instance."""
    report = check(inst, schedule)
    if report.objective is None or report.metrics is None or not report.feasible:
        raise OptschedError("the CP-SAT incumbent is not feasible")
    return report.objective, int(report.metrics["makespan"])


def _deadlines(inst: Instance, upper: float, makespan: bool, horizon: int) -> list[int]:
    if makespan:
        return [horizon] * inst.n_jobs
    lb = critical_path(inst)
    w = [job.weight for job in inst.jobs]
    total = sum(wi * li for wi, li in zip(w, lb, strict=True))
    return [math.floor((upper - (total - w[j] * lb[j])) / w[j] + 1e-9)
            for j in range(inst.n_jobs)]


class _Model:
    """The CP-SAT model of one scaled instance over GPU ``groups``.

    Relaxed mode: a start per task and one optional fixed-size interval per (task, group).
    Gang mode: a start and a pace per round and one optional interval per (round, group)
    whose demand is the number of the round's tasks in that group. ``choice[unit][q]`` is the
    boolean (relaxed) or demand (gang) of that unit in group q; a unit is (j, r, k) or (j, r).
    """

    def __init__(self, inst: Instance, groups: Sequence[Sequence[int]], deadline: list[int],
                 makespan: bool, budget: Budget | None = None) -> None:
        from ortools.sat.python import cp_model

        self.m = cp_model.CpModel()
        self.inst, self.groups = inst, groups
        self.gang = inst.mode == "gang"
        self.round_length = [int(round_lower_bound(inst, j)) for j in range(inst.n_jobs)]
        self.ready: dict[tuple[int, int], Any] = {}
        self.start: dict[tuple[int, ...], Any] = {}
        self.choice: dict[tuple[int, ...], dict[int, Any]] = {}
        self.present: dict[tuple[int, int, int], Any] = {}
        self.pace: dict[tuple[int, int], Any] = {}
        self.intervals: dict[int, list[Any]] = {q: [] for q in range(len(groups))}
        self.demands: dict[int, list[Any]] = {q: [] for q in range(len(groups))}
        for j, job in enumerate(inst.jobs):
            for r in range(job.rounds):
                if budget is not None:
                    budget.check()  # OutOfTime: the caller returns its incumbent
                earliest = int(job.arrival) if r == 0 else 0
                after = self.ready.get((j, r - 1))
                if self.gang:
                    self._gang_round(j, r, earliest, deadline[j], after)
                else:
                    self._relaxed_round(j, r, earliest, deadline[j], after)
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
            self.m.minimize(cmax)
        else:
            self.m.minimize(sum(int(job.weight) * c for job, c in zip(inst.jobs, last,
                                                                      strict=True)))

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
                m.add(n_groups * self.start[j, r, k - 1] + sum(q * v for q, v in prev.items())
                      <= n_groups * s + sum(q * v for q, v in choice.items()))
            ready.append(s + sum(finish))
        self.ready[j, r] = m.new_int_var(earliest, deadline, f"R{j}_{r}")
        m.add_max_equality(self.ready[j, r], ready)
        # redundant: a round lasts at least its critical-path length (models/cpsat.md)
        m.add(self.ready[j, r] >= (after if after is not None else earliest)
              + self.round_length[j])

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

    def hint(self, schedule: Schedule) -> None:
        """Hint every decision variable from a feasible schedule of the scaled instance."""
        inst, m = self.inst, self.m
        group_of = {g: q for q, group in enumerate(self.groups) for g in group}
        by_round: dict[tuple[int, int], list[Task]] = {}
        for t in schedule.tasks:
            by_round.setdefault((inst.job_index[t.job], t.round), []).append(t)
        for (j, r), tasks in by_round.items():
            tasks.sort(key=lambda t: (t.start, group_of[inst.gpu_index[t.gpu]]))
            used = [group_of[inst.gpu_index[t.gpu]] for t in tasks]
            ready = max(t.start + inst.compute[j, inst.gpu_index[t.gpu]]
                        + inst.sync[j, inst.gpu_index[t.gpu]] for t in tasks)
            m.add_hint(self.ready[j, r], int(ready))
            if self.gang:
                m.add_hint(self.start[j, r], int(tasks[0].start))
                m.add_hint(self.pace[j, r], int(ready - tasks[0].start))
                for q, var in self.choice[j, r].items():
                    m.add_hint(var, used.count(q))
                    if self.present[j, r, q] is not var:
                        m.add_hint(self.present[j, r, q], int(q in used))
                continue
            for k, (t, q_used) in enumerate(zip(tasks, used, strict=True)):
                m.add_hint(self.start[j, r, k], int(t.start))
                for q, var in self.choice[j, r, k].items():
                    m.add_hint(var, int(q == q_used))

    def schedule(self, solver: Any, sc: ScaledInstance) -> Schedule:
        """The solver's solution with concrete GPUs (interval colouring), in seconds."""
        inst = self.inst
        items = []
        for unit, choice in self.choice.items():
            j, r = unit[0], unit[1]
            start = solver.value(self.start[unit])
            for q, var in choice.items():
                n = solver.value(var)
                if n:
                    end = start + (solver.value(self.pace[j, r]) if self.gang
                                   else int(inst.compute[j, self.groups[q][0]]))
                    items.append(((*unit, q), q, start, end, n))
        gpus = assign_gpus(items, self.groups)
        tasks = []
        next_task: dict[tuple[int, int], int] = {}
        for key, _, start, _, _ in sorted(items, key=lambda it: it[0]):
            j, r = key[0], key[1]
            for g in gpus[key]:
                k = key[2] if not self.gang else next_task.get((j, r), 0)
                next_task[j, r] = k + 1
                tasks.append(Task(inst.jobs[j].id, r, k, inst.gpus[g].id, sc.to_seconds(start)))
        return Schedule(inst.name, tasks, inst.mode)


#: Solver packages CP-SAT methods load (the LP bound uses scipy's HiGHS).
CPSAT_IMPORTS = ("ortools.sat.python.cp_model", "scipy.optimize")

STATUS = {"OPTIMAL": "solution", "FEASIBLE": "solution", "UNKNOWN": "none",
          "INFEASIBLE": "bug", "MODEL_INVALID": "bug"}


#: CP-SAT's integer variables and linear expressions must stay within ±2^62.
_CPSAT_MAX_INT = 2**62


def _check_intervals(inst: Instance, groups: Sequence[Sequence[int]], method: str) -> None:
    """Refuse (InputError) a model of more than MAX_CPSAT_INTERVALS intervals."""
    n_groups = [sum(1 for group in groups if math.isfinite(inst.compute[j, group[0]]))
                for j in range(inst.n_jobs)]
    units = [job.rounds * (1 if inst.mode == "gang" else job.tasks_per_round)
             for job in inst.jobs]
    intervals = sum(u * g for u, g in zip(units, n_groups, strict=True))
    if intervals > MAX_CPSAT_INTERVALS:
        raise InputError(f"--method {method}: the CP-SAT model of this instance would have "
                         f"about {fmt(intervals)} intervals; at most "
                         f"{fmt(MAX_CPSAT_INTERVALS)} fit in memory (use a heuristic)")


def _check_integers(inst: Instance, groups: Sequence[Sequence[int]], deadline: list[int],
                    unit: float) -> None:
    """Refuse (InputError naming time_unit) a horizon that overflows CP-SAT's integers."""
    total = sum(int(job.weight) * d for job, d in zip(inst.jobs, deadline, strict=True))
    if max(deadline, default=0) * (len(groups) + 1) >= _CPSAT_MAX_INT or total >= _CPSAT_MAX_INT:
        raise InputError(f"time_unit {unit:g} is too fine for CP-SAT: the horizon is "
                         f"{fmt(max(deadline))} steps; choose a coarser time_unit")


def _lp_seconds(instance: Instance, incumbent: Schedule) -> float:
    """A rough forecast of the time the LP bound needs after CP-SAT, from the size of its LP
    at the incumbent (CP-SAT's final schedule is no worse, so its LP is no larger): the
    hand-over plus 5 µs per non-zero (HiGHS's dual simplex on small models here)."""
    report = check(instance, incumbent)
    if report.objective is None or report.metrics is None:
        return 0.0
    unit = lp_time_unit(instance, report.metrics["makespan"], upper=report.objective)
    variables, nonzeros = time_indexed_lp_size(instance, report.objective, unit)
    if lp_too_large(variables, nonzeros):
        return 0.0
    return handover_seconds(variables, nonzeros) + 5e-6 * nonzeros


def solve_cpsat(instance: Instance, ctx: SolveContext, *, per_gpu: bool) -> MethodOutput:
    """Solve ``instance`` (already in ``ctx.mode``) with the grouped or per-GPU model.

    Within ``ctx.time_limit`` (see the module docstring): an incumbent is always returned
    with ``hint=ect``; the bound is CP-SAT's (on an exact grid), the LP's or none. Every
    solution is reported with the bound at that moment (``ctx.report``). A Ctrl-C stops the search:
    the best schedule found is returned with ``extra["interrupted"]`` and no LP is solved.
    """
    from ortools.sat.python import cp_model

    budget = Budget(ctx.time_limit)
    options = ctx.options_as(CpsatOptions)
    unit = time_unit_or_default(instance, options.time_unit)
    objective, hint, workers, search, lp_bound = (options.objective, options.hint,
                                                  options.workers, options.search,
                                                  options.lp_bound)
    if search == "auto":
        search = "core" if instance.mode == "relaxed" else "default"
    makespan = objective == "makespan"
    use_lp = lp_bound == "on" and not makespan
    method = "cpsat-pergpu" if per_gpu else "cpsat"
    _check_intervals(instance, [(g,) for g in range(instance.n_gpus)] if per_gpu
                     else instance.gpu_groups(), method)
    sc = scale(instance, unit, "up")
    inst = sc.instance

    incumbent = ect_schedule(inst)
    upper, horizon = _evaluate(inst, incumbent)
    if ctx.hint is not None:  # a user's schedule in seconds, used if it fits the grid
        own = Schedule(inst.name, [Task(t.job, t.round, t.task, t.gpu, t.start / unit)
                                   for t in ctx.hint.tasks], inst.mode)
        if check(inst, own).feasible and all(t.start.is_integer() for t in own.tasks):
            own_upper, own_horizon = _evaluate(inst, own)
            if (own_horizon if makespan else own_upper) < (horizon if makespan else upper):
                incumbent, upper, horizon = own, own_upper, own_horizon
    deadline = _deadlines(inst, upper, makespan, horizon)
    groups = [(g,) for g in range(inst.n_gpus)] if per_gpu else inst.gpu_groups()
    _check_integers(inst, groups, deadline, unit)
    extra: dict[str, Any] = {
        "model": "per-gpu" if per_gpu else "grouped",
        "groups": len(groups), "time_unit": unit, "grid_exact": sc.exact,
        "workers": workers, "objective_kind": objective, "search": search,
    }

    def in_seconds(schedule: Schedule) -> Schedule:
        return Schedule(instance.name, [Task(t.job, t.round, t.task, t.gpu, t.start * unit)
                                        for t in schedule.tasks], instance.mode)

    try:
        model = _Model(inst, groups, deadline, makespan, budget)
        if hint == "ect":
            model.hint(incumbent)
        budget.check()
    except OutOfTime:  # what is certified so far: the incumbent and the critical path
        extra.update(solver_status="NOT_BUILT", model=f"{extra['model']}, not built: "
                     "time limit", anytime=[], solver_bound=None)
        if use_lp:
            extra.update(lp_bound=None, lp_status="time limit (build)")
        if hint != "ect":
            return MethodOutput(status=Status.UNKNOWN, extra=extra)
        return MethodOutput(schedule=in_seconds(incumbent), extra=extra)

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = ctx.seed
    left = budget.left()
    if left is not None and ctx.time_limit is not None:
        # the LP bound keeps the last fifth of the limit, or what it is expected to need if
        # more, but at most half of what is left
        reserve = max(0.2 * ctx.time_limit, _lp_seconds(instance, in_seconds(incumbent))) \
            if use_lp else 0.0
        solver.parameters.max_time_in_seconds = max(left - reserve, 0.5 * left)
    solver.parameters.absolute_gap_limit = 0.0
    solver.parameters.relative_gap_limit = 0.0
    solver.parameters.linearization_level = 2
    solver.parameters.optimize_with_core = search == "core"
    exact_bound = sc.exact and not makespan

    def real(value: float) -> float:
        return sc.objective_to_original(value) if not makespan else value * unit

    anytime: list[list[float]] = []
    started = time.perf_counter()

    class Log(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            anytime.append([round(time.perf_counter() - started, 4),
                            real(self.objective_value), real(self.best_objective_bound)])
            ctx.report(None if makespan else anytime[-1][1],
                       anytime[-1][2] if exact_bound else None)

    # CP-SAT stops at Ctrl-C (catch_sigint_signal) and returns its best solution (a
    # best_bound_callback would abort the process then: ortools 9.15)
    status = solver.solve(model.m, Log())
    name = solver.status_name(status)
    interrupted = stopped_by_ctrl_c(solver, name)
    extra.update(solver_status=name, anytime=anytime, interrupted=interrupted)
    if STATUS[name] == "bug":
        raise OptschedError(f"CP-SAT returned {name} although the incumbent is feasible")
    bound = real(solver.best_objective_bound) if exact_bound else None
    extra["solver_bound"] = bound
    if makespan:
        extra["makespan_bound"] = real(solver.best_objective_bound)
    if STATUS[name] == "solution":
        schedule = model.schedule(solver, sc)
    elif hint == "ect":  # the solver found nothing better than the incumbent in time
        schedule = in_seconds(incumbent)
    else:
        return MethodOutput(bound=bound, status=Status.UNKNOWN, extra=extra)
    schedule = Schedule(instance.name, schedule.tasks, instance.mode)
    if use_lp and name != "OPTIMAL" and not interrupted:
        report = check(instance, schedule)
        assert report.objective is not None and report.metrics is not None
        lp = solve_time_indexed_lp(
            instance, report.objective,
            lp_time_unit(instance, report.metrics["makespan"], upper=report.objective),
            time_limit=budget.left())
        extra.update(lp.extra())
        if lp.bound is not None:
            bound = lp.bound if bound is None else max(bound, lp.bound)
    return MethodOutput(schedule=schedule, bound=bound, extra=extra)


@register("cpsat", options=CpsatOptions, default_time_limit=EXACT_TIME_LIMIT,
          imports=CPSAT_IMPORTS,
          description="CP-SAT over groups of interchangeable GPUs (exact, both modes)")
def _cpsat(instance: Instance, context: SolveContext) -> MethodOutput:
    return solve_cpsat(instance, context, per_gpu=False)


@register("cpsat-pergpu", options=CpsatOptions, imports=CPSAT_IMPORTS,
          default_time_limit=EXACT_TIME_LIMIT,
          description="CP-SAT with one interval per GPU (exact reference model, both modes)")
def _cpsat_pergpu(instance: Instance, context: SolveContext) -> MethodOutput:
    return solve_cpsat(instance, context, per_gpu=True)
