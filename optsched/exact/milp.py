"""Exact disjunctive MILP through PuLP, solved with HiGHS or CBC (models/milp-disjunctive.md).

Continuous start times (no time grid), one binary per (task or gang round, GPU) assignment and
one ordering binary per pair of units that may share a GPU, linked by big-M rows (the classical
assignment-and-sequencing MILP, adapted to the model's per-task, per-GPU sync). Exact in both
modes. Its LP relaxation is weak; the time-indexed LP (``lp-bound``) is the strong relaxation.
Big-M and domains come from per-job deadlines of the ECT incumbent, which every schedule at
least as good as the incumbent meets.

PuLP's ``status`` says ``Optimal`` even after a time limit, so the outcome is read from
``sol_status`` (:func:`map_status`) and the bound from the solver itself: HiGHS's
``mip_dual_bound`` and CBC's log, each plus the objective constant PuLP keeps outside.

Limits (:mod:`optsched.budget`): a model estimated too large for
:func:`~optsched.budget.lp_too_large` is refused (InputError) before anything is built.
The build checks the time limit between units; when it runs out there, or too little is left
to hand the model to the solver (PuLP does that in Python, about
:data:`PULP_HANDOVER_SECONDS_PER_NONZERO` per non-zero, not interruptible), the Result is the
ECT schedule with the critical-path bound and ``extra.solver_status`` ``NOT_SOLVED: time
limit``. The solver gets what is left, less that hand-over.
"""

from __future__ import annotations

import math
import re
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from optsched.budget import (
    EXACT_TIME_LIMIT,
    MIN_SOLVER_SECONDS,
    Budget,
    OutOfTime,
    lp_too_large,
    size_text,
)
from optsched.contracts import MethodOutput, SolveContext
from optsched.ect import ect_schedule, evaluate
from optsched.errors import InputError
from optsched.exact.bounds import deadlines
from optsched.exact.grid import default_time_unit, scale, to_steps
from optsched.exact.highs import pulp_solver
from optsched.exact.quiet import native_stdout_silenced
from optsched.instance import Instance
from optsched.options import Options, choice, count, text
from optsched.output import output_target, write_file
from optsched.registry import register
from optsched.result import Status
from optsched.schedule import Schedule, Task


def _export_target(key: str, path: str) -> None:
    """Refuse an ``export`` path that is not a writable .lp or .mps file."""
    if not path.endswith((".lp", ".mps")):
        raise InputError(f"export file must end in .lp or .mps, got {path!r}")
    output_target(path, key)


@dataclass(frozen=True)
class MilpOptions(Options):
    """Options of ``milp-highs`` and ``milp-cbc``."""

    export: str | None = text(
        "write the model to this .lp or .mps file before solving (default: none)", _export_target
    )
    threads: int = count("solver threads (default 1)")
    relaxation: Literal["none", "lp"] = choice(
        "lp: solve only the LP relaxation and report it as the bound, "
        "with the ECT schedule (default: none, solve the MILP)",
        ("none", "lp"),
    )


def map_status(sol_status: int) -> tuple[Status | None, bool]:
    """PuLP's ``sol_status`` → (status when there is no solution, has a solution).

    1 optimal and 2 feasible have a solution (whose bound is read from the solver, never
    assumed); 0 no solution found (e.g. time limit) is ``unknown``; −1 infeasible; −2
    unbounded and anything else are ``error``.
    """
    if sol_status in (1, 2):
        return None, True
    if sol_status == 0:
        return Status.UNKNOWN, False
    if sol_status == -1:
        return Status.INFEASIBLE, False
    return Status.ERROR, False


_CBC_BOUND = re.compile(r"^(?:Lower bound|Objective bound):\s*(\S+)", re.M)
_CBC_OPTIMAL = re.compile(r"^Result - Optimal solution found", re.M)
_CBC_OBJECTIVE = re.compile(r"^Objective value:\s*(\S+)", re.M)


def cbc_bound(log: str) -> float | None:
    """CBC's best bound from its log, *without* PuLP's objective constant.

    "Lower bound:" when CBC stopped early; the objective value when it reports an optimal
    solution (its gaps are set to 0, so the bound equals it); else ``None``.
    """
    match = _CBC_BOUND.search(log)
    if match:
        return float(match.group(1))
    objective = _CBC_OBJECTIVE.search(log)
    if _CBC_OPTIMAL.search(log) and objective:
        return float(objective.group(1))
    return None


#: Seconds per non-zero PuLP takes to hand a model to HiGHS (or to write CBC's MPS file),
#: measured at about 1.3 µs; reserved from the solver's share of the time limit.
PULP_HANDOVER_SECONDS_PER_NONZERO = 2e-6


def milp_size(inst: Instance) -> tuple[int, int]:
    """(variables, non-zeros) of :class:`_Disjunctive` for ``inst``, estimated in
    O(jobs² · GPUs) without building it (the disjunctions dominate: 5 terms per row, 6 in
    gang mode, two rows per pair of units and common GPU, one within a round)."""
    eligible = np.isfinite(inst.compute).astype(float)
    common = eligible @ eligible.T  # GPUs two jobs share
    gang = inst.mode == "gang"
    units = np.array(
        [job.rounds * (1 if gang else job.tasks_per_round) for job in inst.jobs], dtype=float
    )

    def pairs(matrix: np.ndarray) -> float:  # Σ_{i<j} u_i u_j matrix_ij
        return (float(units @ matrix @ units) - float(units**2 @ np.diag(matrix))) / 2

    across = pairs(common)
    within = (
        0.0
        if gang
        else sum(
            job.rounds * job.tasks_per_round * (job.tasks_per_round - 1) / 2 * common[j, j]
            for j, job in enumerate(inst.jobs)
        )
    )
    per_row = 6 if gang else 5
    assignments = float(units @ eligible.sum(axis=1))
    variables = int(pairs((common > 0).astype(float)) + 3 * units.sum() + assignments)
    return variables, int(per_row * (2 * across + within) + 4 * assignments)


class _Disjunctive:
    """The disjunctive model of one instance (in its mode); the build raises
    :class:`~optsched.budget.OutOfTime` between units when ``budget`` is spent.

    Times are measured from the first arrival ``origin`` (Σ w_j · origin is the objective's
    constant), so the solver sees times of the instance's own span, not of its distance from
    time zero: at arrivals of 1e14 s its tolerances would otherwise exceed the differences
    that matter and its dual bound would not be one."""

    def __init__(self, inst: Instance, upper: float, budget: Budget | None = None) -> None:
        import pulp

        self.inst = inst
        self.gang = inst.mode == "gang"
        self.prob = pulp.LpProblem("optsched_disjunctive", pulp.LpMinimize)
        self.origin = origin = min(job.arrival for job in inst.jobs)
        d = deadlines(inst, upper) - origin
        finite = inst.compute[np.isfinite(inst.compute)] + inst.sync[np.isfinite(inst.sync)]
        self.big_m = float(d.max() + finite.max())
        self.start: dict[tuple[int, ...], Any] = {}
        self.assign: dict[tuple[int, ...], dict[int, Any]] = {}
        self.pace: dict[tuple[int, ...], Any] = {}
        ready: dict[tuple[int, ...], Any] = {}
        prob = self.prob
        self.budget = budget or Budget(None)
        for j, job in enumerate(inst.jobs):
            gpus = [int(g) for g in inst.eligible(j)]
            for r in range(job.rounds):
                self.budget.check()
                end = ready[j, r] = prob.add_variable(f"E_{j}_{r}", 0, float(d[j]))
                units: list[tuple[int, ...]] = (
                    [(j, r)] if self.gang else [(j, r, k) for k in range(job.tasks_per_round)]
                )
                for unit in units:
                    s = self.start[unit] = prob.add_variable(
                        "S_" + "_".join(map(str, unit)), job.arrival - origin, float(d[j])
                    )
                    x = self.assign[unit] = {
                        g: prob.add_variable("X_" + "_".join(map(str, (*unit, g))), cat="Binary")
                        for g in gpus
                    }
                    if r > 0:
                        prob += s >= ready[j, r - 1]
                    if self.gang:
                        pace = self.pace[j, r] = prob.add_variable(f"P_{j}_{r}", 0)
                        prob += pulp.lpSum(x.values()) == job.tasks_per_round
                        for g in gpus:
                            prob += pace >= float(inst.compute[j, g] + inst.sync[j, g]) * x[g]
                        prob += end == s + pace
                    else:
                        prob += pulp.lpSum(x.values()) == 1
                        prob += end >= s + pulp.lpSum(
                            float(inst.compute[j, g] + inst.sync[j, g]) * x[g] for g in gpus
                        )
                        if unit[2] > 0:  # identical tasks: order their starts
                            prob += self.start[j, r, unit[2] - 1] <= s
        self._disjunctions()
        prob += (
            pulp.lpSum(job.weight * ready[j, job.rounds - 1] for j, job in enumerate(inst.jobs))
            + sum(job.weight for job in inst.jobs) * origin
        )

    def _occupancy(self, unit: tuple[int, ...], g: int) -> Any:
        """How long ``unit`` holds GPU g when placed there."""
        j = unit[0]
        return self.pace[unit] if self.gang else float(self.inst.compute[j, g])

    def _disjunctions(self) -> None:
        prob, big_m = self.prob, self.big_m
        units = list(self.assign)
        for i, a in enumerate(units):
            self.budget.check()
            for b in units[i + 1 :]:
                if a[0] == b[0] and a[1] != b[1]:
                    continue  # rounds of one job are ordered by their barrier
                common = sorted(set(self.assign[a]) & set(self.assign[b]))
                if not common:
                    continue
                ordered = a[:2] == b[:2]  # same round (relaxed): starts already ordered
                y = (
                    None
                    if ordered
                    else prob.add_variable("Y_" + "_".join(map(str, (*a, *b))), cat="Binary")
                )
                for g in common:
                    both = 2 - self.assign[a][g] - self.assign[b][g]
                    after = 0 if y is None else 1 - y
                    prob += (
                        self.start[b]
                        >= self.start[a] + self._occupancy(a, g) - big_m * after - big_m * both
                    )
                    if y is not None:
                        prob += (
                            self.start[a]
                            >= self.start[b] + self._occupancy(b, g) - big_m * y - big_m * both
                        )

    def schedule(self) -> Schedule:
        """The solution decoded exactly: its GPU choices and its order of starts, timed
        semi-actively (each unit as early as its barrier and its GPUs allow). This removes the
        solver's tolerance noise and never delays anything beyond the MILP's own times."""
        inst, tasks = self.inst, []
        free = np.zeros(inst.n_gpus)
        ready: dict[tuple[int, int], float] = {}
        order = sorted(self.assign, key=lambda u: (float(self.start[u].value()), u[1], u))
        for unit in order:
            j, r = unit[0], unit[1]
            job = inst.jobs[j]
            chosen = [g for g, var in self.assign[unit].items() if var.value() > 0.5]
            earliest = job.arrival if r == 0 else ready[j, r - 1]
            begin = max([earliest, *(free[g] for g in chosen)])
            pace = max(inst.compute[j, g] + inst.sync[j, g] for g in chosen)
            for i, g in enumerate(chosen):
                k = i if self.gang else unit[2]
                tasks.append(Task(job.id, r, k, inst.gpus[g].id, float(begin)))
                free[g] = begin + (pace if self.gang else inst.compute[j, g])
            done = begin + pace
            # relaxed: the round is ready when its last task is; seen once all are placed
            ready[j, r] = max(ready.get((j, r), done), done) if not self.gang else done
        return Schedule(inst.name, tasks, inst.mode)


def solve_pulp(
    prob: Any,
    backend: str,
    *,
    time_limit: float | None,
    threads: int,
    seed: int,
    report: Callable[[float | None, float | None], None] | None = None,
) -> tuple[float | None, str, bool]:
    """Solve ``prob`` with ``highs`` or ``cbc``; (the solver's own best bound plus the
    objective constant PuLP keeps outside, or None; the solver's status text; whether a
    Ctrl-C stopped it).

    With HiGHS, ``report(incumbent, bound)`` receives every improving solution, and a Ctrl-C
    stops the search (:func:`optsched.exact.highs.pulp_solver`: HiGHS runs in its own thread
    and is cancelled); what it found so far is kept. CBC runs as a child process, which a
    Ctrl-C ends with the run."""
    import pulp

    constant = float(prob.objective.constant)
    if backend == "highs":
        solver = pulp_solver(
            report,
            constant,
            msg=False,
            timeLimit=time_limit,
            threads=threads,
            gapRel=0.0,
            gapAbs=1e-9,
            random_seed=seed,
        )
        with native_stdout_silenced():
            prob.solve(solver)
        highs = prob.solverModel
        info = highs.getInfo()
        if solver.interrupted and info.primal_solution_status != 2:
            # PuLP reads HiGHS's "interrupted" as "integer feasible" even with no solution
            prob.sol_status = pulp.LpSolutionNoSolutionFound
        bound = info.mip_dual_bound + constant if math.isfinite(info.mip_dual_bound) else None
        return bound, highs.modelStatusToString(highs.getModelStatus()), solver.interrupted
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "cbc.log"
        with warnings.catch_warnings():  # the bundled CBC is tested; pulp is pinned
            warnings.simplefilter("ignore", DeprecationWarning)
            cbc = pulp.PULP_CBC_CMD(
                msg=False,
                timeLimit=time_limit,
                threads=threads,
                gapRel=0.0,
                gapAbs=0.0,
                logPath=str(log),
                options=[f"randomSeed {seed + 1}"],
            )
        with native_stdout_silenced():
            prob.solve(cbc)
        text = log.read_text(errors="replace") if log.exists() else ""
    raw = cbc_bound(text)
    return (None if raw is None else raw + constant), pulp.LpSolution[prob.sol_status], False


def solve_milp(instance: Instance, ctx: SolveContext[MilpOptions], backend: str) -> MethodOutput:
    """Solve the disjunctive MILP with ``backend`` = ``highs`` or ``cbc``, within
    ``ctx.time_limit`` (see the module docstring)."""
    budget = Budget(ctx.time_limit)
    options = ctx.options
    threads = options.threads
    variables, nonzeros = milp_size(instance)
    if lp_too_large(variables, nonzeros, pulp=True):
        raise InputError(
            f"--method milp-{backend}: the disjunctive MILP of this instance would "
            f"have {size_text(variables, nonzeros, pulp=True)} (use cpsat)"
        )
    incumbent = ect_schedule(instance)
    upper, _ = evaluate(instance, incumbent)  # the checker's objective, without its checks
    late = {
        "backend": backend,
        "threads": threads,
        "estimated_nonzeros": nonzeros,
        "solver_status": "NOT_SOLVED: time limit",
        "stopped": "time limit",
    }
    try:
        model = _Disjunctive(instance, upper, budget)
    except OutOfTime:  # what is certified so far: the ECT schedule, the critical path
        return MethodOutput(schedule=incumbent, extra=late)
    export = options.export
    if export:
        _export(model.prob, export)
    extra: dict[str, Any] = {
        "backend": backend,
        "threads": threads,
        "variables": model.prob.numVariables(),
        "constraints": model.prob.numConstraints(),
        "estimated_nonzeros": nonzeros,
    }
    left = budget.left()
    if left is not None:
        left -= PULP_HANDOVER_SECONDS_PER_NONZERO * nonzeros
        if left < MIN_SOLVER_SECONDS:
            return MethodOutput(schedule=incumbent, extra={**extra, **late})
    if options.relaxation == "lp":
        return _lp_relaxation(model, incumbent, backend, left, extra)
    bound, extra["solver_status"], extra["interrupted"] = solve_pulp(
        model.prob, backend, time_limit=left, threads=threads, seed=ctx.seed, report=ctx.report
    )
    status, has_solution = map_status(model.prob.sol_status)
    bound = certified(instance, bound)
    if extra["interrupted"] and not has_solution:  # stopped before a solution: the incumbent
        return MethodOutput(schedule=incumbent, bound=bound, extra=extra)
    if not has_solution:  # no incumbent of its own: the ECT schedule, as on a time-out
        return MethodOutput(
            schedule=incumbent, bound=bound if status is Status.UNKNOWN else None, extra=extra
        )
    return MethodOutput(schedule=model.schedule(), bound=bound, extra=extra)


#: The MILP solvers' tolerance on the objective, relative to the objective less its constant
#: Σ w_j × (first arrival): HiGHS's and CBC's feasibility and optimality tolerances are
#: about 1e-6, so their dual bound is proved only up to it.
SOLVER_TOL = 1e-6


def certified(instance: Instance, bound: float | None) -> float | None:
    """A solver's dual ``bound`` made a certified one: less :data:`SOLVER_TOL` of its part
    above Σ w_j × (first arrival); then, when every time is a whole number of steps of the
    default grid (1 s or 1 ms) and every weight a whole number of 1/``weight_scale`` (so
    every semi-active schedule, an optimal one among them, has an objective on that
    quantum), rounded up to the quantum. A bound the solver's tolerances left a hair below
    the optimum lands on it; one they lifted a hair above it is no longer above it."""
    if bound is None:
        return None
    constant = sum(job.weight for job in instance.jobs) * min(job.arrival for job in instance.jobs)
    safe = bound - SOLVER_TOL * max(1.0, abs(bound - constant))
    grid = scale(instance, default_time_unit(instance))
    scaled = safe * grid.weight_scale
    if not grid.exact or abs(scaled / grid.time_unit) >= 2.0**50:
        return safe
    return grid.objective_to_original(float(to_steps(scaled, grid.time_unit, "up")))


def _lp_relaxation(
    model: _Disjunctive,
    incumbent: Schedule,
    backend: str,
    time_limit: float | None,
    extra: dict[str, Any],
) -> MethodOutput:
    """The incumbent with the (weak) LP relaxation of the disjunctive model as its bound."""
    import pulp

    if backend == "highs":
        solver = pulp_solver(mip=False, msg=False, timeLimit=time_limit, threads=1)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            solver = pulp.PULP_CBC_CMD(mip=False, msg=False, timeLimit=time_limit)
    with native_stdout_silenced():
        model.prob.solve(solver)
    extra["interrupted"] = getattr(solver, "interrupted", False)
    proved = model.prob.sol_status == pulp.LpSolutionOptimal and not extra["interrupted"]
    extra["lp_relaxation"] = pulp.value(model.prob.objective) if proved else None
    return MethodOutput(
        schedule=incumbent, bound=certified(model.inst, extra["lp_relaxation"]), extra=extra
    )


def _export(prob: Any, path: str) -> None:
    """Write the model as LP or MPS through optsched.output (PuLP writes a temporary file in
    a private folder; its text is then written atomically to ``path``)."""
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder) / Path(path).name
        if path.endswith(".mps"):
            prob.writeMPS(str(tmp))
        else:
            prob.writeLP(str(tmp))
        write_file(path, tmp.read_bytes())


@register(
    "milp-highs",
    options=MilpOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    imports=("pulp", "highspy"),
    description="disjunctive MILP through PuLP + HiGHS (exact, both modes; small sizes)",
)
def _milp_highs(instance: Instance, context: SolveContext[MilpOptions]) -> MethodOutput:
    return solve_milp(instance, context, "highs")


@register(
    "milp-cbc",
    options=MilpOptions,
    default_time_limit=EXACT_TIME_LIMIT,
    imports=("pulp",),
    description="disjunctive MILP through PuLP + CBC (exact, both modes; small sizes)",
)
def _milp_cbc(instance: Instance, context: SolveContext[MilpOptions]) -> MethodOutput:
    return solve_milp(instance, context, "cbc")
