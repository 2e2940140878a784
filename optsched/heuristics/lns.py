"""Large-neighbourhood search over the grouped CP-SAT model (``lns``, both modes).

An anytime improvement method: it starts from the best of the ECT schedule, with
``start=priority-search`` (the default) priority-search's schedule found in a tenth of the work
budget (or of the time limit, in work-seconds), and ``--hint`` (each with its starts rounded up
to the grid, when feasible there; a better start is returned as it is if the search does not
beat it), then repeats, until the time limit: choose a *neighbourhood* of jobs, fix every other
job's decisions (round or task starts, paces and GPU groups) at the incumbent's values, and let
CP-SAT re-optimise the freed jobs in the grouped model (:mod:`optsched.exact.cpsat`),
warm-started from the incumbent and stopped after ``step`` units of CP-SAT's deterministic time
(about seconds); a schedule with a smaller Σ w_j C_j becomes the incumbent. The neighbourhoods
rotate among three rules, seeded:

- **random**: jobs drawn uniformly;
- **window**: the jobs with a round running nearest a random instant of the incumbent;
- **delay**: jobs drawn with probability proportional to w_j (C_j − LB_j), their weighted
  delay beyond the critical path.

The size adapts: a neighbourhood solved to optimality within half its step grows by one job,
one that ran out of time without improving shrinks by one (at least 2 jobs).

Guarantees: every incumbent is a solution of the exact model, kept in grid steps and read back
in seconds once at the end (:meth:`~optsched.exact.grid.ScaledInstance.schedule_in_seconds`),
so the returned schedule is feasible (and the checker confirms it); it is never worse than the
ECT schedule (or its other starts). Time: the instance's ECT schedule and priority-search's
come first, evaluated without the checker (when the limit is spent by then, the better is the
result, ``extra.stopped`` ``time limit (model build)``); the build checks the limit per round
and each neighbourhood gets what is left less the time to read the incumbent back. LNS proves
nothing about the optimum: the Result's bound is the critical path. The search stops early when
a neighbourhood holding every job is solved to optimality (``extra.stopped`` ``optimal``:
nothing better exists on the grid). With one worker a run that ends after ``steps``
neighbourhoods, or when its ``work`` budget (the steps' CP-SAT deterministic time,
:mod:`optsched.work`) is spent, is reproducible for a seed, provided priority-search's start
ended on its work share or at its local optimum, not on the clock (``extra.start_stopped``); a
run the time limit ends depends on the machine, as does any run with more workers. A Ctrl-C
stops the search and returns the incumbent, marked ``interrupted``. Sizes: the model must fit
CP-SAT's limits (as ``cpsat``). At the Hare paper's scale the model fits on the default
0.001 s grid, but one neighbourhood takes minutes, so ``lns`` rarely improves its start there.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.budget import EXACT_TIME_LIMIT, Budget, OutOfTime, solve_stoppable
from optsched.check import check
from optsched.contracts import MethodOutput, SolveContext
from optsched.critical_path import critical_path, critical_path_bound
from optsched.ect import completions, ect_schedule, evaluate, incumbent
from optsched.exact.cpsat import (
    CPSAT_IMPORTS,
    STATUS,
    _check_integers,
    _check_intervals,
    _deadlines,
    _evaluate,
    _feasible_on_grid,
    _hint_on_grid,
    _Model,
)
from optsched.exact.grid import scale, time_unit_or_default
from optsched.instance import Instance
from optsched.options import Options, choice, count, number
from optsched.registry import register
from optsched.schedule import Schedule
from optsched.work import WorkMeter, cpsat_limit, cpsat_work, work_option

RULES = ("random", "window", "delay")

#: Work-seconds of a step beyond CP-SAT's search: a fixed part and one per variable of the
#: neighbourhood's copy of the model (fitted by ``benchmarks/work_rates.py``: 5-9 ms a step
#: on a 3-job instance, about 25 ms on 30 jobs).
STEP_BASE_WORK, STEP_WORK = 6e-3, 1e-5

#: Seconds per task to read the incumbent back in seconds at the end (measured about 10 µs):
#: kept from the search.
FINISH_SECONDS_PER_TASK = 2e-5


@dataclass(frozen=True)
class LnsOptions(Options):
    """Options of ``lns``."""

    time_unit: float | None = number(
        "grid step in seconds (default 1 for integer data, else 0.001)", open_low=True
    )
    step: float = number(
        "CP-SAT's deterministic time per neighbourhood, about seconds (default 1)",
        1.0,
        low=0.01,
        high=3600.0,
    )
    size: int | None = count(
        "jobs freed per neighbourhood at the start (default: a tenth of the jobs, at least 2)",
        None,
    )
    steps: int | None = count(
        "stop after this many neighbourhoods (default: none, run to the time limit)", None
    )
    workers: int = count("CP-SAT worker threads per neighbourhood (default 1)")
    start: str = choice(
        "priority-search (default: the better of its schedule, found in a tenth of the work "
        "budget or of the time limit, and ECT's) or ect",
        ("priority-search", "ect"),
    )
    work: float | None = work_option()


#: The share of the work budget (without one, of the time limit counted in work-seconds) that
#: ``start=priority-search`` gives priority-search before the neighbourhoods.
START_SHARE = 0.1


def _searched_start(
    instance: Instance, ctx: SolveContext[LnsOptions]
) -> tuple[Schedule, float, str]:
    """(priority-search's schedule of ``instance``, the work it spent, why it stopped), seeded
    like the run, within :data:`START_SHARE` of the work budget, or without one of the time
    limit counted in work-seconds (:mod:`optsched.work`), so that it repeats exactly on any
    machine; the time limit stays its last resort. With neither, to its local optimum."""
    from optsched.heuristics.priority_search import PrioritySearchOptions, priority_search

    total = ctx.options.work if ctx.options.work is not None else ctx.time_limit
    share = None if total is None else START_SHARE * total
    out = priority_search(
        instance,
        SolveContext(ctx.mode, PrioritySearchOptions(work=share), ctx.time_limit, ctx.seed),
    )
    assert out.schedule is not None  # never worse than ECT's, which always exists
    return out.schedule, float(out.extra.get("work") or 0.0), str(out.extra.get("stopped"))


def _decisions(model: _Model) -> dict[int, list[Any]]:
    """Per job, the variables that fix its decisions: starts, paces, ready times, choices."""
    out: dict[int, list[Any]] = {j: [] for j in range(model.inst.n_jobs)}
    for unit, var in model.start.items():
        out[unit[0]].append(var)
    for unit, picks in model.choice.items():
        out[unit[0]].extend(picks.values())
    for (j, _), var in model.ready.items():
        out[j].append(var)
    for (j, _), var in model.pace.items():
        out[j].append(var)
    for (j, _, _), var in model.present.items():
        out[j].append(var)
    return out


def _hinted(model: _Model) -> dict[int, int]:
    """Variable index → value of the model's solution hint."""
    hint = model.m.proto.solution_hint
    return dict(zip(hint.vars, hint.values, strict=True))


def _neighbourhood(
    rule: str,
    size: int,
    rng: np.random.Generator,
    inst: Instance,
    schedule: Schedule,
    lower: Sequence[float],
) -> list[int]:
    """``size`` job indices chosen by ``rule`` on the incumbent ``schedule``."""
    n = inst.n_jobs
    if rule == "random":
        return sorted(int(j) for j in rng.choice(n, size, replace=False))
    completion = {
        job.id: c for job, c in zip(inst.jobs, completions(inst, schedule).tolist(), strict=True)
    }
    if rule == "window":
        at = float(rng.uniform(0, max(completion.values())))
        spans: dict[int, list[float]] = {}
        for t in schedule.tasks:
            j = inst.job_index[t.job]
            g = inst.gpu_index[t.gpu]
            end = t.start + inst.compute[j, g]
            first, last = spans.get(j, [t.start, end])
            spans[j] = [min(first, t.start), max(last, end)]
        distance = {j: max(first - at, at - last, 0.0) for j, (first, last) in spans.items()}
        return sorted(sorted(distance, key=lambda j: (distance[j], j))[:size])
    return sorted(
        int(j)
        for j in rng.choice(n, size, replace=False, p=_delay_weights(inst, completion, lower))
    )


def _delay_weights(
    inst: Instance, completion: dict[str, float], lower: Sequence[float]
) -> npt.NDArray[np.float64]:
    """Probabilities proportional to w_j (C_j − LB_j), each raised by a billionth of their
    mean so that every job can be drawn: finite, positive and summing to 1 whatever the
    completions (a delay below 0, which a feasible schedule of ``inst`` never has, counts as
    0; no delay at all, or one that overflows, gives the uniform draw)."""
    delay = np.array(
        [job.weight * (completion[job.id] - lower[j]) for j, job in enumerate(inst.jobs)],
        dtype=float,
    )
    delay = np.where(np.isnan(delay), 0.0, np.maximum(delay, 0.0))
    total = float(delay.sum())
    if not 0 < total < math.inf:
        return np.full(inst.n_jobs, 1.0 / inst.n_jobs)
    weights = delay + 1e-9 * total / inst.n_jobs
    probabilities: npt.NDArray[np.float64] = weights / weights.sum()
    return probabilities


def _neighbourhood_model(
    model: _Model, decisions: dict[int, list[Any]], free: set[int], values: dict[int, int]
) -> Any:
    """A copy of ``model`` in which every job outside ``free`` has its decision variables
    fixed at ``values`` (index → value) and every variable is hinted at them."""
    sub = model.m.clone()
    for j, variables in decisions.items():
        if j not in free:
            for var in variables:
                domain = sub.proto.variables[var.index].domain  # [low, high]
                domain[0] = domain[1] = values[var.index]
    sub.clear_hints()  # type: ignore[no-untyped-call, unused-ignore]
    for index, value in values.items():
        sub.add_hint(sub.get_int_var_from_proto_index(index), value)
    return sub


def solve_lns(instance: Instance, ctx: SolveContext[LnsOptions]) -> MethodOutput:
    """Improve the best start of ``instance`` (ECT's, priority-search's, the hint) by LNS (see
    the module doc)."""
    options = ctx.options
    budget = Budget(ctx.time_limit)
    unit = time_unit_or_default(instance, options.time_unit)
    groups = instance.gpu_groups()
    _check_intervals(instance, groups, "lns")
    sc = scale(instance, unit, "up")
    inst = sc.instance
    # the fallback, in seconds: ECT's schedule, or priority-search's when better
    ect = incumbent(instance)
    fallback, fallback_objective, fallback_from = ect.schedule, ect.objective, "ect"
    searched, searched_work, searched_stop = None, 0.0, None
    if options.start == "priority-search" and not budget.expired():
        searched, searched_work, searched_stop = _searched_start(instance, ctx)
        objective, _ = evaluate(instance, searched)
        if objective < fallback_objective:
            fallback, fallback_objective, fallback_from = searched, objective, "priority-search"
    extra: dict[str, Any] = {
        "groups": len(groups),
        "time_unit": unit,
        "grid_exact": sc.exact,
        "start": fallback_from,
        "start_objective": fallback_objective,
        "ect_objective": ect.objective,
        "start_stopped": searched_stop,
    }
    if searched_stop == "interrupted":  # a Ctrl-C during the start ends the run with it
        return MethodOutput(
            schedule=fallback,
            extra={
                **extra,
                "steps": 0,
                "improvements": 0,
                "stopped": "interrupted",
                "interrupted": True,
            },
        )
    if budget.expired():
        return MethodOutput(
            schedule=fallback,
            extra={**extra, "steps": 0, "improvements": 0, "stopped": "time limit (model build)"},
        )
    from ortools.sat.python import cp_model

    incumbent_ = ect_schedule(inst)
    upper, horizon = _evaluate(inst, incumbent_)
    start_from = "ect"
    for name, candidate in (("priority-search", searched), ("hint", ctx.hint)):
        own = _hint_on_grid(candidate, sc, exact=False)  # its starts rounded up to the grid
        if (
            own is not None
            and candidate is not None
            and not budget.expired()
            and _feasible_on_grid(inst, own, instance, candidate)
        ):
            own_upper, _ = _evaluate(inst, own)
            if own_upper < upper:
                incumbent_, upper, start_from = own, own_upper, name
    deadline = _deadlines(inst, upper, False, horizon)
    _check_integers(inst, groups, deadline, unit)
    extra.update(start=start_from, start_objective=sc.objective_to_original(upper))

    in_seconds = sc.schedule_in_seconds  # the incumbent is kept in grid steps
    # reading the incumbent back in seconds at the end: kept from the search
    finish = FINISH_SECONDS_PER_TASK * sum(job.n_tasks for job in inst.jobs)

    try:
        budget.check()
        model = _Model(inst, groups, deadline, False, budget)
        model.hint(incumbent_, budget)
        budget.check(model.teardown)
    except OutOfTime:
        extra.update(steps=0, improvements=0, stopped="time limit (model build)")
        return MethodOutput(
            schedule=in_seconds(incumbent_) if start_from == "hint" else fallback, extra=extra
        )
    finish += model.teardown  # freeing the model at the end
    decisions = _decisions(model)
    values = _hinted(model)  # the incumbent's value of every decision variable
    tracked = list(values)
    rng = np.random.default_rng(ctx.seed)
    lower = [float(c) for c in critical_path(inst)]
    size = min(inst.n_jobs, max(2, options.size or math.ceil(inst.n_jobs / 10)))
    steps = improvements = 0
    anytime: list[list[float]] = []
    stopped = "time limit" if options.steps is None else "steps"
    started = time.perf_counter()
    interrupted = False
    # the work of a step: CP-SAT's deterministic time (optsched.work) and the neighbourhood's
    # copy of the model, STEP_WORK per variable
    meter = WorkMeter(None if options.work is None else max(0.0, options.work - searched_work))
    copy_work = STEP_BASE_WORK + STEP_WORK * len(model.m.proto.variables)
    floor = critical_path_bound(inst, np.array(lower))  # Σ w C of the grid's instance
    try:
        while options.steps is None or steps < options.steps:
            if meter.exhausted:
                stopped = "work"
                break
            if upper <= floor:  # the incumbent meets the critical path: proved optimal
                stopped = "optimal"
                break
            left = budget.left()
            if left is not None and left - finish < 0.05:
                break
            rule = RULES[steps % len(RULES)]
            free = set(_neighbourhood(rule, min(size, inst.n_jobs), rng, inst, incumbent_, lower))
            sub = _neighbourhood_model(model, decisions, free, values)
            left = budget.left()  # building the neighbourhood takes time on large models
            if left is not None:
                left -= finish
                if left < 0.05:
                    break
            solver = cp_model.CpSolver()
            solver.parameters.num_workers = options.workers
            solver.parameters.random_seed = int(rng.integers(2**31))
            # the step's limit is deterministic (reproducible); the run's is wall-clock
            left_work = meter.left()
            solver.parameters.max_deterministic_time = (
                options.step if left_work is None else min(options.step, cpsat_limit(left_work))
            )
            if left is not None:
                solver.parameters.max_time_in_seconds = left
            # a Ctrl-C stops the step's search at once, and the run
            code, stop = solve_stoppable(solver, sub)
            status = solver.status_name(code)
            steps += 1
            meter.spend(cpsat_work(solver) + copy_work)
            if STATUS[status] == "bug":
                raise RuntimeError(
                    f"LNS: CP-SAT returned {status} on a neighbourhood of a feasible incumbent"
                )
            if STATUS[status] == "solution" and solver.objective_value < upper - 0.5:
                solution = solver.response_proto.solution
                upper, values = int(solver.objective_value), {i: solution[i] for i in tracked}
                incumbent_ = model.schedule(solver)
                improvements += 1
                anytime.append(
                    [round(time.perf_counter() - started, 4), sc.objective_to_original(upper)]
                )
                ctx.report(sc.objective_to_original(upper), None)
            if status == "OPTIMAL" and len(free) == inst.n_jobs:  # the whole grid instance
                stopped = "optimal"
                break
            if status == "OPTIMAL" and solver.deterministic_time < options.step / 2:
                size = min(inst.n_jobs, size + 1)
            elif status != "OPTIMAL":
                size = max(2, size - 1)
            if stop:
                raise KeyboardInterrupt
    except KeyboardInterrupt:  # a genuine Ctrl-C: the incumbent is the result
        interrupted, stopped = True, "interrupted"
    extra.update(
        steps=steps,
        improvements=improvements,
        final_size=size,
        work=searched_work + meter.spent,  # the start's and the neighbourhoods
        anytime=anytime,
        stopped=stopped,
        interrupted=interrupted,
    )
    found = in_seconds(incumbent_) if improvements or start_from == "hint" else fallback
    ours, _ = evaluate(instance, found)
    if ctx.hint is not None and not interrupted:  # never worse than a feasible hint
        given = check(instance, ctx.hint)
        if given.feasible and given.objective is not None and given.objective < ours:
            extra["start"] = "hint (returned: better than the search on the grid)"
            return MethodOutput(schedule=ctx.hint, extra=extra)
    if fallback_objective < ours:  # the grid's rounding up cost more than the search won
        extra["returned"] = f"{fallback_from} (better than the search on the grid)"
        return MethodOutput(schedule=fallback, extra=extra)
    return MethodOutput(schedule=found, extra=extra)


@register(
    "lns",
    options=LnsOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    imports=CPSAT_IMPORTS,
    description="large-neighbourhood search: CP-SAT re-optimises a few jobs at a time "
    "around the incumbent (anytime, seeded, both modes)",
)
def _lns(instance: Instance, context: SolveContext[LnsOptions]) -> MethodOutput:
    return solve_lns(instance, context)
