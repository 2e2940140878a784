"""Exact pricing of one job's relaxed-mode paths with **staggered rounds**, for the conflict
cuts of ``column-bound`` in relaxed mode (docs/models/column-bound.md).

In relaxed mode a round's tasks need not start together: three of four tasks may run on a
group while one of its GPUs is busy, and the fourth when a GPU frees up. At prices that are
linear in the GPUs held (the capacity multipliers λ) putting all K tasks on the cheapest
slot is optimal, so the Lagrangian bound's programme never needs such rounds. The conflict
cuts price *how many* GPUs of a group a job holds at once (a price per step while it holds
at least k of them), and then a staggered round can be cheaper: it holds fewer GPUs at a
time for longer. This module finds a job's cheapest path over every relaxed schedule of
the job alone (each task on a group, at any start after its round's barrier) with CP-SAT,
and a certified lower bound on that least cost.

Guarantee: ``lower`` is at most the job's cost, at the prices given, of every relaxed
schedule of the job alone that keeps its windows (every round's barrier and results by its
deadlines on the grid), and at most as many of its tasks on a group at once as the group
has GPUs: CP-SAT's proved objective bound of a model whose cost coefficients are the true
ones rounded down (the completion cost w·max(C, CP) is integral on the grid and exact), so
every schedule's model objective is at most its true cost.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.budget import solve_stoppable
from optsched.exact.lagrangian import _Job, _Round

#: Largest model objective: costs are scaled to integers by a factor that keeps every
#: schedule's model objective below this (CP-SAT's arithmetic is 64-bit).
_MAX_OBJECTIVE = 2.0**52

#: Scale of the costs at most: one part in this of a grid unit is lost per rounded
#: coefficient.
_MAX_SCALE = 1e6

#: Most start counts in one job's model (one per round, group and start), and most terms
#: in its per-step sums of the counts computing (each count in as many as its task's steps):
#: larger models take longer to build than a pricing round is worth (a job of 6 rounds on a
#: 146-hour window of the Philly trace's day 80, 60-s steps, would have 210,276 counts and
#: grow to gigabytes; 12,606 counts of 300 steps each, 3.8·10⁶ terms, take 5.6 s and 0.5 GB).
MAX_STARTS = 50_000
MAX_TERMS = 1_000_000

#: CP-SAT's deterministic seconds in one work-second on these models (1 worker, no presolve):
#: 0.6–0.9 per second of CPU on the 2-core reference machine (the exact family, 10 and 20
#: jobs); the full search's rate (:data:`optsched.work.CPSAT_PER_WORK_SECOND`) is 4× lower.
DETERMINISTIC_PER_WORK_SECOND = 0.8


@dataclass(frozen=True)
class StaggeredPrice:
    """One job's exact pricing: ``lower`` ≤ its least cost (grid units); ``path``: the
    cheapest schedule found (None when CP-SAT found none in time), its tasks as rounds of one
    task (1/K of a round's GPUs each, priced steps only), and ``own`` its cost w·max(C, CP)
    without the prices; ``work``: work-seconds; ``stopped``: why ``lower`` is not proved
    to be the least cost (None when it is, up to the rounding): "work", "time limit", or
    "too large" (more than :data:`MAX_STARTS` start counts or :data:`MAX_TERMS` terms: the
    model was not built, ``lower`` is −∞)."""

    lower: float
    own: float | None
    path: list[_Round] | None
    work: float
    stopped: str | None

    @property
    def optimal(self) -> bool:
        """``lower`` is the least cost (up to the rounding)."""
        return self.stopped is None


#: Pricings that found and proved nothing: the time limit passed while the model was built,
#: or the model was too large to build.
_LATE = StaggeredPrice(-math.inf, None, None, 0.0, "time limit")
_TOO_LARGE = replace(_LATE, stopped="too large")


def price_staggered(
    job: _Job,
    lam: npt.NDArray[np.float64],
    sizes: list[int],
    conflicts: list[dict[int, npt.NDArray[np.float64]]] | None,
    horizon: int,
    *,
    hint: list[_Round] | None = None,
    time_limit: float | None = None,
    work: float | None = None,
    seed: int = 0,
) -> StaggeredPrice:
    """The job's least cost w·max(C, CP) + what its tasks pay: λ[q, t] / |q| per step a task
    computes on group q (``lam``: one row per group, priced steps), and per group, threshold
    k and step its conflict price (``conflicts[q][k]``: prefix sums over the priced steps)
    while it computes at least k tasks there. Nothing is paid from the ``horizon`` on. Stops
    at ``time_limit`` seconds (building the model included) or ``work`` work-seconds (a
    lower bound stands); a Ctrl-C raises KeyboardInterrupt. A model of more than
    :data:`MAX_STARTS` start counts or :data:`MAX_TERMS` terms is not built. ``hint``: the
    rounds of a path of the job (all K tasks of a round at one start on one group, in round
    order) to start the search from."""
    from ortools.sat.python import cp_model

    began = time.perf_counter()
    k_tasks, rounds = job.k_tasks, job.rounds
    options = [(o.rows[0], o.hold, o.ready) for o in job.options]
    task_price = {q: np.concatenate([[0.0], np.cumsum(lam[q] / sizes[q])]) for q, _, _ in options}
    step_price = {
        q: {k: np.diff(prefix) for k, prefix in conflicts[q].items()} if conflicts else {}
        for q, _, _ in options
    }

    def earliest(r: int) -> int:
        return job.first + r * job.rho

    def starts(r: int, ready: int) -> range:  # round r's tasks, results by its deadline
        return range(earliest(r), earliest(r + 1) + job.window - ready + 1)

    def paid(q: int, hold: int, start: int) -> float:
        if start >= horizon:
            return 0.0
        prefix = task_price[q]
        return float(prefix[min(start + hold, horizon)] - prefix[start])

    def late() -> bool:  # the time limit passed while building the model
        return time_limit is not None and time.perf_counter() - began > time_limit

    counts = [rounds * len(starts(0, ready)) for _, _, ready in options]  # each round alike
    terms = sum(n * hold for n, (_, hold, _) in zip(counts, options, strict=True))
    if sum(counts) > MAX_STARTS or terms > MAX_TERMS:
        return _TOO_LARGE
    # the costs, each to be rounded down, and the largest objective, for the scale
    costs: dict[tuple[int, int, int], float] = {}
    for r in range(rounds):
        for q, hold, ready in options:
            for t in starts(r, ready):
                costs[r, q, t] = max(paid(q, hold, t), 0.0)
    latest = earliest(rounds) + job.window
    top = job.weight * max(latest, job.floor) + k_tasks * rounds * max(costs.values(), default=0)
    top += sum(
        float(np.clip(p, 0, None).sum()) for prices in step_price.values() for p in prices.values()
    )
    scale = min(_MAX_SCALE, _MAX_OBJECTIVE / max(top, 1.0))

    m = cp_model.CpModel()
    count: dict[tuple[int, int, int], Any] = {}
    starting: dict[tuple[int, int], list[Any]] = {}  # (group, start): its counts
    objective = []
    ends = [
        m.new_int_var(earliest(r), earliest(r + 1) + job.window, f"E{r}") for r in range(rounds)
    ]
    for r in range(rounds):
        if late():
            return _LATE
        barrier = m.new_int_var(earliest(r), earliest(r) + job.window, f"B{r}")
        if r == 0:
            m.add(barrier == earliest(0))
        else:
            m.add_max_equality(barrier, [ends[r - 1], earliest(r)])
        tasks = []
        for q, _, ready in options:
            width = min(k_tasks, sizes[q])
            for t in starts(r, ready):
                n = m.new_int_var(0, width, f"n{r}_{q}_{t}")
                used = m.new_bool_var(f"u{r}_{q}_{t}")
                m.add(n <= width * used)
                m.add(n >= used)
                m.add(barrier <= t).only_enforce_if(used)
                m.add(ends[r] >= t + ready).only_enforce_if(used)
                count[r, q, t] = n
                starting.setdefault((q, t), []).append(n)
                tasks.append(n)
                coefficient = math.floor(costs[r, q, t] * scale)
                if coefficient:
                    objective.append(coefficient * n)
        m.add(sum(tasks) == k_tasks)
    completion = m.new_int_var(0, int(max(latest, job.floor)), "C")
    m.add_max_equality(completion, [ends[-1], earliest(rounds), job.floor])
    weight = int(job.weight)  # integral on the grid
    objective.append(math.floor(weight * scale) * completion)
    # at most |q| tasks at once on group q (only a round of more than |q| tasks can hold
    # more), and the conflict prices: an indicator per group, threshold and priced step, on
    # when the job computes at least k tasks there (forced on; off costs less)
    last = max((t for _, t in starting), default=-1)
    for q, hold, _ in options:
        width = min(k_tasks, sizes[q])
        for t in range(job.first, last + hold):
            if t % 256 == 0 and late():
                return _LATE
            prices = [
                (k, c)
                for k, p in (step_price[q].items() if t < horizon else ())
                if k <= width and (c := math.floor(p[t] * scale)) > 0
            ]
            if not prices and k_tasks <= sizes[q]:
                continue
            running = [n for s in range(t - hold + 1, t + 1) for n in starting.get((q, s), ())]
            if not running:
                continue
            held = sum(running)
            if k_tasks > sizes[q]:
                m.add(held <= sizes[q])
            for k, c in prices:
                on = m.new_bool_var(f"h{q}_{t}_{k}")
                m.add(held <= k - 1 + width * on)
                objective.append(c * on)
    m.minimize(sum(objective))
    if hint is not None:  # start from a known path (a cost cut on it slows the proof)
        for r, step in enumerate(hint):
            if (r, step.rows[0], step.start) in count:
                m.add_hint(count[r, step.rows[0], step.start], k_tasks)

    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    # small models: presolve and probing cost more than they save (the exact family's
    # 10-job instances: 3.8 s against 18 s to converge)
    solver.parameters.cp_model_presolve = False
    solver.parameters.cp_model_probing_level = 0
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = max(
            time_limit - (time.perf_counter() - began), 0.0
        )
    if work is not None:
        solver.parameters.max_deterministic_time = work * DETERMINISTIC_PER_WORK_SECOND
    status, interrupted = solve_stoppable(solver, m)
    if interrupted:
        raise KeyboardInterrupt
    spent = solver.deterministic_time / DETERMINISTIC_PER_WORK_SECOND
    stopped = None
    if status != cp_model.OPTIMAL:  # which limit stopped it
        stopped = "work" if work is not None and spent >= 0.99 * work else "time limit"
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        lower = solver.best_objective_bound / scale if status == cp_model.UNKNOWN else -math.inf
        return StaggeredPrice(lower, None, None, spent, stopped)
    hold_on = {q: hold for q, hold, _ in options}
    path = [
        _Round((q,), (solver.value(n) / k_tasks,), t, min(hold_on[q], horizon - t), 0.0)
        for (_, q, t), n in count.items()
        if t < horizon and solver.value(n)
    ]
    return StaggeredPrice(
        solver.best_objective_bound / scale,
        float(weight * solver.value(completion)),
        path,
        spent,
        stopped,
    )
