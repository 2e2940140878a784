"""Hare's relaxation Hare_Sched_RL, solved exactly with CP-SAT (models/hare-relaxation.md).

Hare (HPDC'22 §5.2) drops the no-overlap constraint (8) of Hare_Sched and keeps
release dates (4), assignment (5), completion (6) and round barriers (7), adding Queyranne's
per-GPU inequality (9):

    Σ_i y_im T_im (x_i + T_im) ≥ ½ [(Σ_i y_im T_im)² + Σ_i y_im T_im²]      for every GPU m,

with T_im the compute time of task i on GPU m. On the integer grid of ``time_unit`` the
products are exact: z_im = y_im·x_i by enforced equalities, (Σ y T)² by a multiplication
constraint, and (9)×2 reads 2 Σ T z + Σ T² y ≥ L_m².

Start times are integers on the grid. When the data are on the grid (``exact``), an optimal
schedule with integer starts exists (left-shift every task to an arrival, a GPU release or a
barrier), so the grid relaxation's optimum is still a lower bound on OPT; it is at least the
optimum of the continuous relaxation, so Hare's Theorem 4 (ALG ≤ α(2+α)·RL) implies the same
inequality against it.

Limits (:mod:`optsched.budget`): the build and the solve together take at most
``time_limit`` (plus one round of the build): the build stops between rounds when the limit is
spent and the feasible schedule is then the relaxation solution (``solver_status``
``NOT_BUILT``, nothing proved). A model of more than
:data:`~optsched.budget.MAX_RL_PAIRS` (task, GPU) pairs, or whose squared loads overflow
CP-SAT's 62-bit integers, is refused (InputError).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.budget import MAX_RL_PAIRS, Budget, OutOfTime, fmt, solve_stoppable
from optsched.errors import InputError, OptschedError
from optsched.exact.grid import scale
from optsched.instance import Instance
from optsched.schedule import Schedule, Task
from optsched.work import cpsat_limit, cpsat_work


@dataclass(frozen=True)
class RelaxedSolution:
    """A solution of Hare_Sched_RL in the instance's units.

    ``starts[(j, r, k)]`` is x̂ of task k of round r of job j; ``objective`` its Σ w_j Ĉ_j;
    ``proved`` is true when CP-SAT proved it optimal on an exact grid, and then ``bound`` equals
    ``objective``; otherwise ``bound`` is CP-SAT's best bound (on an exact grid) or ``None``.
    """

    starts: dict[tuple[int, int, int], float]
    objective: float
    proved: bool
    bound: float | None
    solver_status: str
    interrupted: bool = False  # a Ctrl-C stopped the search (the best solution is kept)
    work: float = 0.0  # work-seconds spent (CP-SAT's deterministic time, scaled)


def _rl_objective(
    inst: Instance, starts: dict[tuple[int, int, int], int], gpu: dict[tuple[int, int, int], int]
) -> int:
    """Σ w_j Ĉ_j of an assignment (no overlap ignored) on the grid of the scaled instance
    ``inst``: an exact integer (Python ints, whatever its size)."""
    total = 0
    for j, job in enumerate(inst.jobs):
        last = job.rounds - 1
        total += int(job.weight) * max(
            starts[j, last, k]
            + int(inst.compute[j, gpu[j, last, k]])
            + int(inst.sync[j, gpu[j, last, k]])
            for k in range(job.tasks_per_round)
        )
    return total


def relaxation_pairs(instance: Instance) -> int:
    """(task, eligible GPU) pairs of Hare_Sched_RL: the size :func:`check_relaxation_size`
    tests against :data:`~optsched.budget.MAX_RL_PAIRS`."""
    return sum(job.n_tasks * len(instance.eligible(j)) for j, job in enumerate(instance.jobs))


def relaxation_fits(instance: Instance) -> bool:
    """True when the exact Hare_Sched_RL (CP-SAT) may be built for ``instance``; beyond,
    step 1 of ``hare`` is the LP relaxation of :mod:`optsched.exact.hare_lp`."""
    return relaxation_pairs(instance) <= MAX_RL_PAIRS


def check_relaxation_size(instance: Instance) -> None:
    """Refuse (InputError) an instance whose Hare_Sched_RL has more than
    :data:`~optsched.budget.MAX_RL_PAIRS` (task, eligible GPU) pairs."""
    pairs = relaxation_pairs(instance)
    if pairs > MAX_RL_PAIRS:
        raise InputError(
            f"Hare_Sched_RL (methods hare, hare-ect, step1=exact) of this "
            f"instance would have {fmt(pairs)} (task, GPU) pairs; at most "
            f"{fmt(MAX_RL_PAIRS)} fit in memory (use step1=lp or auto)"
        )


def solve_hare_relaxation(
    instance: Instance,
    feasible: Schedule,
    *,
    time_unit: float,
    time_limit: float | None = None,
    seed: int = 0,
    workers: int = 1,
    work: float | None = None,
) -> RelaxedSolution:
    """Solve Hare_Sched_RL of ``instance`` (relaxed mode) on the grid of ``time_unit``.

        ``feasible`` is a checked feasible schedule of ``instance``; it is feasible for the
        relaxation too, so it warm-starts CP-SAT, sets per-job deadlines (every solution at
        least as good satisfies them) and is the fallback solution when CP-SAT finds none or
        the time limit runs out while the model is built (``solver_status`` ``NOT_BUILT``).
    ``work``: CP-SAT's deterministic time limit (a work budget, :mod:`optsched.work`).

        Raises
        ------
        InputError
            If the model would exceed :data:`~optsched.budget.MAX_RL_PAIRS` (task, GPU)
            pairs, or ``time_unit`` is so fine that the squared loads overflow CP-SAT's integers.
    """
    from ortools.sat.python import cp_model

    budget = Budget(time_limit)
    check_relaxation_size(instance)
    sc = scale(instance, time_unit, "up")
    inst = sc.instance
    unit = sc.time_unit
    tasks = sorted(feasible.tasks, key=lambda t: (t.start, inst.job_index[t.job], t.round))
    hint_gpu = {(inst.job_index[t.job], t.round, t.task): inst.gpu_index[t.gpu] for t in tasks}
    # the hint on the up-rounded grid: starts may move later to respect rounded-up times
    hint_start = _repair(inst, [(t, round(t.start / unit)) for t in tasks], hint_gpu)
    upper = _rl_objective(inst, hint_start, hint_gpu)

    weights = [int(job.weight) for job in inst.jobs]
    fastest_round = [
        int(min(inst.compute[j, g] + inst.sync[j, g] for g in inst.eligible(j)))
        for j in range(inst.n_jobs)
    ]
    lower = [int(job.arrival) + job.rounds * fastest_round[j] for j, job in enumerate(inst.jobs)]
    slack = upper - sum(w * lb for w, lb in zip(weights, lower, strict=True))
    deadline = [lower[j] + slack // weights[j] for j in range(inst.n_jobs)]  # exact ints

    loads = np.zeros(inst.n_gpus)
    for j, job in enumerate(inst.jobs):
        eligible = inst.eligible(j)
        loads[eligible] += job.n_tasks * inst.compute[j, eligible]
    load, horizon = int(loads.max()), max(deadline)
    # the largest sums in the model: inequality (9) (Σ T z ≤ load × horizon per GPU, Σ T² y
    # and L² ≤ load²) and the objective (Σ w × horizon); a far time origin alone is no reason
    if max(2 * load * horizon + 2 * load * load, sum(weights) * horizon) >= 2**62:
        first = min(job.arrival for job in instance.jobs)
        far = (
            f", or subtract the first arrival ({first:g} s) from every time: inequality (9) "
            "counts time from 0, as the paper does, so that far from 0 it also constrains "
            "nothing"
            if 2 * first >= load * unit  # then 2 Σ T x ≥ 2 · first · L ≥ L²: (9) holds anyway
            else ""
        )
        raise InputError(
            f"time_unit {time_unit:g} is too fine for Hare_Sched_RL: loads of "
            f"{load:.3g} steps over a horizon of {horizon:.3g} overflow CP-SAT's "
            f"62-bit integers; choose a coarser time_unit{far}"
        )
    try:
        m, start, choice = _build(inst, deadline, fastest_round, weights, budget)
    except OutOfTime:  # nothing solved: the feasible schedule is a relaxation solution
        starts = {key: sc.to_seconds(v) for key, v in hint_start.items()}
        return RelaxedSolution(starts, sc.objective_to_original(upper), False, None, "NOT_BUILT")
    for key, x in start.items():
        m.add_hint(x, hint_start[key])
        for g, y in choice[key].items():
            m.add_hint(y, int(g == hint_gpu[key]))

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.absolute_gap_limit = 0.0
    solver.parameters.relative_gap_limit = 0.0
    left = budget.left()
    if left is not None:
        solver.parameters.max_time_in_seconds = left
    if work is not None:
        solver.parameters.max_deterministic_time = cpsat_limit(work)
    code, stop = solve_stoppable(solver, m)
    status = solver.status_name(code)
    if status in ("INFEASIBLE", "MODEL_INVALID"):
        raise OptschedError(f"CP-SAT returned {status} for Hare_Sched_RL with a feasible hint")
    bound = sc.objective_to_original(solver.best_objective_bound) if sc.exact else None
    if status in ("OPTIMAL", "FEASIBLE"):
        found = {key: solver.value(x) for key, x in start.items()}
        value = sc.objective_to_original(solver.objective_value)
    else:  # nothing found in time: the feasible schedule is a relaxation solution too
        found, value = hint_start, sc.objective_to_original(upper)
    proved = status == "OPTIMAL" and sc.exact
    starts = {key: sc.to_seconds(v) for key, v in found.items()}
    return RelaxedSolution(
        starts,
        value,
        proved,
        value if proved else bound,
        status,
        stop and status != "OPTIMAL",
        cpsat_work(solver),
    )


def _build(
    inst: Instance,
    deadline: list[int],
    fastest_round: list[int],
    weights: list[int],
    budget: Budget,
) -> tuple[Any, dict[tuple[int, int, int], Any], dict[tuple[int, int, int], dict[int, Any]]]:
    """The CP-SAT model of Hare_Sched_RL on the grid (raises OutOfTime between rounds)."""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    start: dict[tuple[int, int, int], Any] = {}
    choice: dict[tuple[int, int, int], dict[int, Any]] = {}
    products: dict[int, list[tuple[int, Any, Any]]] = {g: [] for g in range(inst.n_gpus)}
    ready: dict[tuple[int, int], Any] = {}
    for j, job in enumerate(inst.jobs):
        for r in range(job.rounds):
            budget.check()
            earliest = int(job.arrival) + r * fastest_round[j]
            latest = deadline[j] - (job.rounds - r) * fastest_round[j]
            ready[j, r] = m.new_int_var(earliest + fastest_round[j], deadline[j], f"R{j}_{r}")
            for k in range(job.tasks_per_round):
                x = start[j, r, k] = m.new_int_var(earliest, latest, f"x{j}_{r}_{k}")
                if r > 0:
                    m.add(x >= ready[j, r - 1])  # (7)
                if k > 0:  # identical tasks of a round
                    m.add(start[j, r, k - 1] <= x)
                ys = choice[j, r, k] = {}
                for g in inst.eligible(j):
                    g = int(g)
                    y = ys[g] = m.new_bool_var(f"y{j}_{r}_{k}_{g}")
                    z = m.new_int_var(0, latest, f"z{j}_{r}_{k}_{g}")
                    m.add(z == x).only_enforce_if(y)
                    m.add(z == 0).only_enforce_if(~y)
                    products[g].append((int(inst.compute[j, g]), y, z))
                m.add_exactly_one(ys.values())  # (5)
                m.add(
                    ready[j, r]
                    >= x
                    + sum(  # (6)
                        int(inst.compute[j, g] + inst.sync[j, g]) * y for g, y in ys.items()
                    )
                )
    for g, terms in products.items():  # (9), doubled
        if not terms:
            continue
        total = sum(p for p, _, _ in terms)
        load = m.new_int_var(0, total, f"L{g}")
        m.add(load == sum(p * y for p, y, _ in terms))
        square = m.new_int_var(0, total * total, f"L2_{g}")
        m.add_multiplication_equality(square, [load, load])
        m.add(2 * sum(p * z for p, _, z in terms) + sum(p * p * y for p, y, _ in terms) >= square)
    m.minimize(sum(w * ready[j, inst.jobs[j].rounds - 1] for j, w in enumerate(weights)))
    return m, start, choice


def _repair(
    inst: Instance, starts: list[tuple[Task, int]], gpu: dict[tuple[int, int, int], int]
) -> dict[tuple[int, int, int], int]:
    """The feasible schedule's tasks (with their starts rounded to the grid, in the order of
    their real starts) retimed on the up-rounded grid: each as early as its rounded start,
    its release date or barrier and its GPU's previous task allow. Rounding alone can put two
    tasks of one GPU on one step (starts 0 and 0.4 steps both round to 0), which inequality
    (9) forbids and which would make the hint's deadlines too tight for any solution; kept in
    order on their GPUs, the tasks form a schedule of the grid instance, so a solution of the
    relaxation."""
    out: dict[tuple[int, int, int], int] = {}
    free: dict[int, int] = {}  # each GPU's end of its last task so far, in steps
    done: dict[tuple[int, int], int] = {}  # each round's results ready so far
    for task, rounded in starts:
        j = inst.job_index[task.job]
        key, g = (j, task.round, task.task), gpu[j, task.round, task.task]
        barrier = int(inst.jobs[j].arrival) if task.round == 0 else done[j, task.round - 1]
        start = max(rounded, barrier, free.get(g, 0))
        out[key] = start
        free[g] = start + int(inst.compute[j, g])
        ready = start + int(inst.compute[j, g] + inst.sync[j, g])
        done[j, task.round] = max(done.get((j, task.round), barrier), ready)
    return out


def heterogeneity_degree(instance: Instance) -> float | None:
    """Hare's α (HPDC'22 §5.3): the largest ratio, over tasks and their eligible GPUs, of
    the slowest to the fastest compute time and of the largest to the smallest sync time.

    A task whose syncs are all 0 has sync ratio 1; ``None`` when some task has both zero and
    positive syncs (the ratio is unbounded and the guarantee says nothing).
    """
    alpha = 1.0
    for j in range(instance.n_jobs):
        eligible = instance.eligible(j)
        c = instance.compute[j, eligible]
        s = instance.sync[j, eligible]
        alpha = max(alpha, float(c.max() / c.min()))
        if np.all(s == 0):
            continue
        if np.any(s == 0):
            return None
        alpha = max(alpha, float(s.max() / s.min()))
    return alpha
