"""The fluid work bound: contention between jobs, at any scale (``fluid-bound``, both modes).

The critical path (:func:`~optsched.exact.bounds.critical_path`) lets every job run alone on
the whole cluster; at the Hare paper's scale, where hundreds of jobs compete for the GPUs, it
says little. This bound measures the cluster's capacity instead (docs/models/fluid-bound.md):

- **Work.** Job j's work is W_j = (its tasks) × p_j, with p_j = min_g compute[j, g] its
  fastest task time. A task of j computing on GPU g does work at rate ρ_jg = p_j /
  compute[j, g] ≤ 1, so each task contributes exactly p_j.
- **Capacity.** At any instant each GPU computes at most one task, so the cluster does work
  at a total rate of at most C = Σ_g max_j ρ_jg (a GPU type slower than another for every job
  counts less than one GPU), and job j, which computes at most K_j tasks at once (one round),
  at a rate of at most R_j, the sum of its K_j largest ρ_jg.
- **Mean busy times.** On the work profile of any schedule, Σ_j w_j M_j (M_j the mean time
  at which j's work is done) is at least its value under preemptive WSPT — by w_j / W_j,
  preempting at arrivals — on one machine of speed C (Goemans' mean-busy-time relaxation
  of 1|r_j, pmtn|Σ w_j C_j, whose bound holds for every fractional profile of capacity C).
- **Completion.** Job j's work, done at rate at most R_j, ends no earlier than M_j +
  W_j / (2 R_j), and its last result is ready at least min_g sync[j, g] later. So
  Σ_j w_j C_j ≥ Σ_j w_j (M_j^WSPT + W_j / (2 R_j) + min_g sync[j, g]).

The bound holds in both modes (a gang round holds its GPUs at least while its tasks compute).
It costs O(n·M + n log n) for n jobs on M GPUs. The Result's bound is the better of this and
the critical path (``extra.bound_source``); ``extra.fluid_bound`` and ``extra.capacity`` give
the parts.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
import numpy.typing as npt

from optsched.budget import Budget
from optsched.contracts import MethodOutput, SolveContext
from optsched.critical_path import critical_path
from optsched.ect import ect_schedule
from optsched.instance import Instance
from optsched.options import Options
from optsched.registry import register

#: Relative margin taken off the bound for floating-point sums (a certified bound must never
#: exceed the optimum through rounding).
_MARGIN = 1e-9


def preemptive_wspt_mean_busy(
    release: npt.NDArray[np.float64],
    size: npt.NDArray[np.float64],
    weight: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """Each job's mean busy time under preemptive WSPT on one unit-speed machine: at every
    instant the released, unfinished job of largest ``weight / size`` runs (ties: the lower
    index), preempted only when a job arrives. It minimises Σ weight_j M_j over preemptive
    (and fractional) schedules with these release dates (Goemans)."""
    n = len(size)
    order = sorted(range(n), key=lambda j: (release[j], j))
    remaining = size.astype(float).copy()
    first_moment = np.zeros(n)  # ∫ t dt over the job's processing
    ready: list[tuple[float, int]] = []
    t, i = 0.0, 0
    while i < n or ready:
        if not ready:
            t = max(t, float(release[order[i]]))
        while i < n and release[order[i]] <= t:
            j = order[i]
            heapq.heappush(ready, (-weight[j] / size[j], j))
            i += 1
        j = ready[0][1]
        until = float(release[order[i]]) if i < n else math.inf
        run = min(float(remaining[j]), until - t)
        first_moment[j] += run * (t + run / 2)
        t += run
        if run == remaining[j]:
            heapq.heappop(ready)
            remaining[j] = 0.0
        else:
            remaining[j] -= run
    return first_moment / size


def fluid_bound(
    instance: Instance, budget: Budget | None = None, path: npt.NDArray[np.float64] | None = None
) -> tuple[float, float]:
    """(The fluid work bound on Σ w_j C_j, the cluster's capacity C) (see the module doc).
    Each split tried is a bound; with a ``budget``, the search for the best split stops
    once it has expired (after the first, the plain fluid bound), with the best so far.
    ``path``: the instance's :func:`critical_path`, when the caller has it already."""
    n = instance.n_jobs
    work, rate, tail = np.empty(n), np.empty(n), np.empty(n)
    capacity = np.zeros(instance.n_gpus)
    for j, job in enumerate(instance.jobs):
        compute, sync = instance.row(j)
        eligible = np.isfinite(compute)
        fastest = float(compute[eligible].min())
        rho = np.zeros(instance.n_gpus)
        rho[eligible] = fastest / compute[eligible]
        np.maximum(capacity, rho, out=capacity)
        k = min(job.tasks_per_round, int(eligible.sum()))
        rate[j] = float(np.sort(rho)[-k:].sum())
        work[j] = job.n_tasks * fastest
        tail[j] = float(sync[eligible].min())
    total = float(capacity.sum())
    release = np.array([job.arrival for job in instance.jobs], dtype=float)
    weight = np.array([job.weight for job in instance.jobs], dtype=float)
    after = work / (2 * rate) + tail  # C_j ≥ M_j + after_j
    path = critical_path(instance) if path is None else path  # C_j ≥ path_j
    # C_j ≥ max(path_j, M_j + after_j) ≥ path_j for the jobs in `alone`, M_j + after_j for
    # the others: for any such split, Σ_alone w path + min_M Σ_others w (M + after) is a
    # bound, the minimum by WSPT with the alone jobs weighted 0. Jobs join `alone` while
    # their critical path exceeds their fluid completion; the best split found is returned.
    alone = np.zeros(n, dtype=bool)
    best = 0.0
    for _ in range(n + 1):
        mean_busy = preemptive_wspt_mean_busy(release, work / total, weight * ~alone)
        fluid = mean_busy + after
        best = max(best, float(np.dot(weight, np.where(alone, path, fluid))))
        joining = ~alone & (path > fluid)
        if not joining.any():
            break
        alone |= joining
        if budget is not None and budget.expired():
            break
    return best * (1 - _MARGIN), total


@register(
    "fluid-bound",
    description="ECT schedule + the fluid work bound (contention "
    "between jobs; any size, both modes)",
)
def _fluid_bound(instance: Instance, context: SolveContext[Options]) -> MethodOutput:
    budget = Budget(context.time_limit)
    schedule = ect_schedule(instance)
    bound, capacity = fluid_bound(instance, budget)
    return MethodOutput(
        schedule=schedule,
        bound=bound,
        extra={
            "fluid_bound": bound,
            "capacity": capacity,
            "stopped": "time limit" if budget.expired() else "done",
        },
    )
