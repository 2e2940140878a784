"""The integral allocation of one scheduling round over the hosts (Sia-like, beyond Gavel's
time shares): which waiting jobs start on which vacant GPUs, each job on K GPUs of one GPU
class, either **consolidated** on one host or **spread** over several, at a value that
depends on that choice (a spread round is slower: Gavel's consolidated vs unconsolidated
throughputs, Liquid's placement factors).

**The problem.** Jobs j with K_j tasks and, per class c, the value of running consolidated
(``cons[j, c]``) and spread (``spread[j, c]``; 0: not allowed); hosts h with ``free[h, c]``
vacant GPUs of class c. Choose for each job at most one (class, placement):

    maximise   Σ_j Σ_c cons[j, c] · Σ_h y[j, c, h]  +  spread[j, c] · s[j, c]
    subject to Σ_c (Σ_h y[j, c, h] + s[j, c]) ≤ 1                       (one placement)
               Σ_h n[j, c, h] = K_j · s[j, c],  0 ≤ n[j, c, h] ≤ K_j − 1  (spread: ≥ 2 hosts)
               Σ_j K_j · y[j, c, h] + n[j, c, h] ≤ free[h, c]              (host capacity)

with y, s binary and n integer. One-task jobs have no host choice: they are counted against
their class's total vacancy (exact, as any vacant GPU takes them).

**Solved** in steps, each ending the solve once its allocation meets the bound so far (up
to the LP's headroom, :data:`LP_HEADROOM`): the greedy allocation (:func:`greedy_round`)
against the fractional knapsack (:func:`capacity_bound`); then the LP over classes
(:func:`class_lp`), a tighter bound whose solution guides a second greedy allocation; then
CP-SAT on integer values (each value × ``scale`` rounded, the largest 10⁶) on the options
some optimum may need (:func:`_prune`), started from the better greedy allocation, within a
deterministic time limit (CP-SAT's deterministic seconds, so that runs repeat exactly), on
one worker and without CP-SAT's presolve (which spent short budgets before finding any
solution).

**The certificate.** The upper bound is the least of the knapsack's, the LP's and CP-SAT's
turned back into the problem's units — (integer bound + ½ per job that can run) / scale,
which no allocation's true value exceeds whatever the rounding. The allocation returned is
the better of CP-SAT's and the greedy one, with the certified gap (upper − value) / upper: a
solve stopped early by its limit, or finding nothing, still returns the greedy allocation
with a bound (the *anytime fallback*).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from optsched.budget import solve_stoppable

#: The largest integer value CP-SAT sees (values are scaled to it).
VALUE_SCALE = 1_000_000
#: Relative headroom added to the class LP's optimum, which HiGHS computes within its
#: tolerances (1e-7), so that the bound stays an upper bound.
LP_HEADROOM = 1e-6
#: The host of a one-task job in CP-SAT's solution: any vacant GPU of its class.
ONE_TASK = -1


@dataclass(frozen=True)
class RoundProblem:
    """One round's allocation problem (module docstring): per job its task count ``k`` and
    its values ``cons``, ``spread`` (jobs × classes, 0 where not allowed), and the vacant
    GPUs ``free`` (hosts × classes)."""

    k: np.ndarray
    cons: np.ndarray
    spread: np.ndarray
    free: np.ndarray

    def __post_init__(self) -> None:
        n, m = self.cons.shape
        assert self.spread.shape == (n, m) and self.k.shape == (n,)
        assert self.free.shape[1] == m
        assert (self.cons >= 0).all() and (self.spread >= 0).all() and (self.k >= 1).all()


#: A job's placement: its class and the GPUs it takes per host ({host: count}).
Placement = tuple[int, dict[int, int]]


@dataclass(frozen=True)
class RoundAllocation:
    """A round's allocation: per job its placement or None, its value, an upper bound on
    every allocation's value, the certified relative gap, how the solve ended (``optimal``:
    a greedy allocation met a bound, or CP-SAT proved its optimum; ``feasible``: CP-SAT
    stopped at its limit with a solution, the better of it and the greedy one returned;
    ``greedy``: CP-SAT found none, the fallback) and the seconds."""

    placements: list[Placement | None]
    value: float
    upper: float
    gap: float
    found_by: str
    seconds: float


def value_of(problem: RoundProblem, placements: list[Placement | None]) -> float:
    """The value of ``placements`` (consolidated: one host; spread: more)."""
    return float(sum(_value(problem, j, p) for j, p in enumerate(placements) if p is not None))


def _value(problem: RoundProblem, j: int, placement: Placement) -> float:
    """Job ``j``'s value at ``placement``: consolidated on one host, else spread."""
    c, hosts = placement
    return float(problem.cons[j, c] if len(hosts) == 1 else problem.spread[j, c])


def is_feasible(problem: RoundProblem, placements: list[Placement | None]) -> bool:
    """Whether ``placements`` fit the vacant GPUs, each job's K tasks on one class, a
    placement allowed for it (value > 0)."""
    used = np.zeros_like(problem.free)
    for j, p in enumerate(placements):
        if p is None:
            continue
        c, hosts = p
        wrong = sum(hosts.values()) != problem.k[j] or min(hosts.values()) < 1
        if wrong or _value(problem, j, p) <= 0:
            return False
        for h, count in hosts.items():
            used[h, c] += count
    return bool((used <= problem.free).all())


def greedy_round(problem: RoundProblem, guide: np.ndarray | None = None) -> list[Placement | None]:
    """A feasible allocation, fast: the jobs by decreasing best value per GPU (as for a
    knapsack: by value alone, wide jobs crowded out narrow ones for half the optimum on the
    benchmark's hardest rounds), each on its most valuable placement that still fits —
    consolidated on the host of that class with the fewest vacant GPUs that suffice (best
    fit), spread over the hosts with the most. With ``guide`` (jobs × classes, e.g. the
    class LP's solution), the jobs and each job's classes by decreasing guide first: the
    greedy then realises that solution on the hosts as far as they allow."""
    free = problem.free.copy()
    room = free.sum(axis=0)  # vacant GPUs per class
    n, m = problem.cons.shape
    out: list[Placement | None] = [None] * n
    guide = np.zeros((n, m)) if guide is None else guide
    density = np.maximum(problem.cons, problem.spread).max(axis=1) / problem.k
    for j in np.lexsort((-density, -guide.sum(axis=1))):
        k = int(problem.k[j])
        if k > room.max():
            if not room.any():
                break
            continue
        options = [(-guide[j, c], -problem.cons[j, c], 0, c) for c in range(m)]
        if k > 1:
            options += [(-guide[j, c], -problem.spread[j, c], 1, c) for c in range(m)]
        for _, minus, spread, c in sorted(options):
            value = -minus
            if value <= 0 or room[c] < k:
                continue
            column = free[:, c]
            hosts: dict[int, int] = {}
            if not spread:
                fits = np.flatnonzero(column >= k)
                if len(fits):
                    hosts = {int(fits[np.argmin(column[fits])]): k}  # the first of the least
            else:
                left = k
                for h in np.argsort(-column, kind="stable"):  # never all k on one host
                    take = int(min(column[h], left, k - 1))
                    if take <= 0:
                        break
                    hosts[int(h)] = take
                    left -= take
                hosts = hosts if left == 0 else {}
            if hosts:
                out[j] = (c, hosts)
                for h, count in hosts.items():
                    free[h, c] -= count
                room[c] -= k
                break
    return out


def capacity_bound(problem: RoundProblem) -> float:
    """An upper bound on every allocation's value without a solver: the jobs' best values
    taken by decreasing value per GPU until the vacant GPUs are used up, the last one in
    part (a fractional knapsack over the whole cluster)."""
    best = np.maximum(problem.cons, problem.spread).max(axis=1)
    room, total = float(problem.free.sum()), 0.0
    for j in np.argsort(-best / problem.k, kind="stable"):
        if best[j] <= 0 or room <= 0:
            break
        take = min(1.0, room / problem.k[j])
        total += take * best[j]
        room -= take * problem.k[j]
    return total


def class_lp(
    problem: RoundProblem, time_limit: float | None = None
) -> tuple[float, np.ndarray | None]:
    """An upper bound on every allocation's value, and the solution that attains it: the LP
    over jobs × classes with each job's best value on a class, each job at most once and
    each class's vacant GPUs shared by the jobs' task counts (hosts, and so consolidation,
    relaxed). Without an LP optimum (or within ``time_limit`` seconds):
    :func:`capacity_bound`, and no solution."""
    from scipy.sparse import coo_array

    from optsched.exact.highs import linprog

    n, m = problem.cons.shape
    value = np.maximum(problem.cons, problem.spread)
    vacant = problem.free.sum(axis=0)
    cols = np.arange(n * m)
    jobs, classes = np.divmod(cols, m)
    rows = np.concatenate([jobs, n + classes])
    coefficients = np.concatenate([np.ones(n * m), problem.k[jobs].astype(float)])
    matrix = coo_array((coefficients, (rows, np.tile(cols, 2))), shape=(n + m, n * m))
    usable = (value.ravel() > 0) & (problem.k[jobs] <= vacant[classes])
    result = linprog(
        -value.ravel(),
        A_ub=matrix,
        b_ub=np.concatenate([np.ones(n), vacant.astype(float)]),
        bounds=np.column_stack([np.zeros(n * m), usable.astype(float)]),
        time_limit=None if time_limit is None else max(time_limit, 1e-3),
    )
    if result.status != 0:
        return capacity_bound(problem), None
    # the LP's optimum within HiGHS's tolerances: a little headroom keeps the bound valid
    return max(0.0, float(-result.fun)) * (1 + LP_HEADROOM), result.x.reshape(n, m)


def solve_round(
    problem: RoundProblem, time_limit: float = 0.2, wall_limit: float | None = None
) -> RoundAllocation:
    """The allocation of ``problem`` with its certified gap: greedy, LP-guided greedy, then
    CP-SAT within ``time_limit`` deterministic seconds, as far as needed (module
    docstring). With ``wall_limit`` (seconds) the whole solve also ends by then, give or take
    the greedy allocation's time and one step of the model's construction: the LP and CP-SAT
    run with the time left and are skipped when none is, CP-SAT's model building stops at
    the deadline, and the better greedy allocation is returned with the bound found so far
    (results then depend on the machine's speed)."""
    started = time.perf_counter()
    deadline = math.inf if wall_limit is None else started + wall_limit

    def left() -> float:
        return deadline - time.perf_counter()

    greedy = greedy_round(problem)
    upper = capacity_bound(problem)
    if value_of(problem, greedy) < upper and left() > 0:  # else the bound is met, or no time
        # the LP over classes: a tighter bound, and a guide for a second greedy allocation
        lp_bound, guide = class_lp(problem, None if wall_limit is None else left())
        upper = min(upper, lp_bound)
        if guide is not None:
            guided = greedy_round(problem, guide)
            if value_of(problem, guided) > value_of(problem, greedy):
                greedy = guided
    placements, value, found_by = greedy, value_of(problem, greedy), "optimal"
    if upper - value > LP_HEADROOM * upper and left() <= 0:
        found_by = "greedy"  # out of time before CP-SAT
    elif upper - value > LP_HEADROOM * upper:  # else optimal, up to the bound's headroom
        found, cp_upper, found_by = _cpsat_round(problem, greedy, time_limit, deadline)
        upper = min(upper, cp_upper)
        if found is not None and value_of(problem, found) > value:
            placements, value = found, value_of(problem, found)
    upper = max(upper, value)
    gap = (upper - value) / upper if upper > 0 else 0.0
    return RoundAllocation(placements, value, upper, gap, found_by, time.perf_counter() - started)


def _cpsat_round(
    problem: RoundProblem,
    hint: list[Placement | None],
    time_limit: float,
    deadline: float = math.inf,
) -> tuple[list[Placement | None] | None, float, str]:
    """CP-SAT's allocation (module docstring), its bound in the problem's units and how it
    ended (``optimal``, ``feasible``; ``greedy`` with no allocation and an infinite bound
    when it found none, or when the ``deadline`` (a ``time.perf_counter()`` instant) passed
    before it could search), started from ``hint``."""
    from ortools.sat.python import cp_model

    n, m = problem.cons.shape
    top = max(float(problem.cons.max()), float(problem.spread.max()))
    scale = VALUE_SCALE / top
    cons_values, spread_values = _prune(problem, hint)
    model = cp_model.CpModel()
    objective: list[Any] = []
    # per (host, class): the GPUs the multi-task jobs take; per class: the one-task jobs
    load: dict[tuple[int, int], list[Any]] = {}
    singles: dict[int, list[Any]] = {}
    #: per chosen variable: its job, class and placement (host, or ONE_TASK, or the
    #: spread job's per-host counts)
    options: list[tuple[Any, int, int, int | dict[int, Any]]] = []
    runnable = 0
    vacant = problem.free.sum(axis=0)
    occupied = [list(map(int, np.flatnonzero(problem.free[:, c]))) for c in range(m)]
    candidates = (cons_values > 0).any(axis=1) | (spread_values > 0).any(axis=1)
    for built, j in enumerate(map(int, np.flatnonzero(candidates))):
        if built % 64 == 0 and time.perf_counter() >= deadline:
            return None, math.inf, "greedy"
        k = int(problem.k[j])
        mine: list[Any] = []
        for c in range(m):
            column = problem.free[:, c]
            cons, spread = cons_values[j, c], spread_values[j, c]
            if vacant[c] < k or (cons <= 0 and spread <= 0):
                continue
            if cons > 0 and k == 1:
                var = model.new_bool_var(f"a{j}_{c}")
                singles.setdefault(c, []).append(var)
                options.append((var, j, c, ONE_TASK))
                objective.append(round(cons * scale) * var)
                mine.append(var)
                continue
            if cons > 0:
                for h in (h for h in occupied[c] if column[h] >= k):
                    var = model.new_bool_var(f"y{j}_{c}_{h}")
                    load.setdefault((h, c), []).append(k * var)
                    options.append((var, j, c, h))
                    objective.append(round(cons * scale) * var)
                    mine.append(var)
            hosts = occupied[c]
            if spread > 0 and k > 1 and len(hosts) >= 2:
                var = model.new_bool_var(f"s{j}_{c}")
                parts = {h: model.new_int_var(0, min(k - 1, int(column[h])), "n") for h in hosts}
                for h, part in parts.items():
                    load.setdefault((h, c), []).append(part)
                model.add(sum(parts.values()) == k * var)
                options.append((var, j, c, parts))
                objective.append(round(spread * scale) * var)
                mine.append(var)
        if mine:
            runnable += 1
            model.add_at_most_one(mine)
    for (h, c), taken in load.items():
        model.add(sum(taken) <= int(problem.free[h, c]))
    for c, items in singles.items():
        multi = [t for (_, cc), taken in load.items() if cc == c for t in taken]
        model.add(sum(items) + sum(multi) <= int(problem.free[:, c].sum()))
    for var, j, c, where in options:  # the greedy allocation as the hint
        placed = hint[j]
        on = placed is not None and placed[0] == c
        if isinstance(where, dict):
            on = on and placed is not None and len(placed[1]) > 1
            for h, part in where.items():
                model.add_hint(part, placed[1].get(h, 0) if on and placed is not None else 0)
        elif where != ONE_TASK:
            on = on and placed is not None and placed[1] == {where: int(problem.k[j])}
        model.add_hint(var, on)
    model.maximize(sum(objective))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = float(time_limit)
    if deadline < math.inf:
        left = deadline - time.perf_counter()
        if left <= 0:
            return None, math.inf, "greedy"
        solver.parameters.max_time_in_seconds = left
    # presolve spent short budgets before any solution, the complete feasible hint included
    # (the hardest rounds of benchmarks/integral_gap.py at 256 GPUs: nothing within 0.2
    # deterministic s); without it the hinted start is improved at once (gaps ≤ 2e-5)
    solver.parameters.cp_model_presolve = False
    status, stop = solve_stoppable(solver, model)
    if stop:  # a Ctrl-C ends the run, not just this round's search
        raise KeyboardInterrupt
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):  # no solution, no bound
        return None, math.inf, "greedy"
    out: list[Placement | None] = [None] * n
    for var, j, c, where in options:
        if not solver.boolean_value(var):
            continue
        if isinstance(where, dict):
            counts = {h: int(solver.value(part)) for h, part in where.items()}
            out[j] = (c, {h: x for h, x in counts.items() if x > 0})
        else:
            out[j] = (c, {where: int(problem.k[j])})
    # no allocation's true value exceeds (integer bound + ½ per job that can run) / scale
    upper = (solver.best_objective_bound + 0.5 * runnable) / scale
    found_by = "optimal" if status == cp_model.OPTIMAL else "feasible"
    return _place_singles(problem, out), upper, found_by


def _prune(problem: RoundProblem, keep: list[Placement | None]) -> tuple[np.ndarray, np.ndarray]:
    """The values with only those options kept that some optimum may need, and those of
    ``keep`` (the hint): per class, task count and kind (consolidated or spread), the M most
    valuable jobs, M the most jobs an allocation can start (the vacant GPUs, the jobs). If
    an allocation starts a job outside those M, one of the M starts nowhere (at most M jobs
    start): it takes that job's exact place (same class, count and hosts) for at least the
    value."""
    most = int(min(problem.free.sum(), len(problem.k)))
    out = []
    for spread, values in enumerate((problem.cons, problem.spread)):
        kept = np.zeros_like(values)
        for k in np.unique(problem.k):
            rows = np.flatnonzero(problem.k == k)
            for c in range(values.shape[1]):
                top = rows[np.argsort(-values[rows, c], kind="stable")[:most]]
                kept[top, c] = values[top, c]
        for j, p in enumerate(keep):
            if p is not None and (len(p[1]) > 1) == bool(spread):
                kept[j, p[0]] = values[j, p[0]]
        out.append(kept)
    return out[0], out[1]


def _place_singles(
    problem: RoundProblem, placements: list[Placement | None]
) -> list[Placement | None]:
    """Give the one-task jobs (host :data:`ONE_TASK`) vacant GPUs of their class left by
    the others."""
    free = problem.free.copy()
    for p in placements:
        if p is not None and ONE_TASK not in p[1]:
            for h, count in p[1].items():
                free[h, p[0]] -= count
    out = list(placements)
    for j, p in enumerate(placements):
        if p is not None and ONE_TASK in p[1]:
            c = p[0]
            h = int(np.flatnonzero(free[:, c] > 0)[0])
            free[h, c] -= 1
            out[j] = (c, {h: 1})
    return out
