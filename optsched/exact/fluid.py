"""The fluid work bound: contention between jobs, at any scale (``fluid-bound``, both modes).

The critical path (:func:`~optsched.exact.bounds.critical_path`) lets every job run alone on
the whole cluster; at the Hare paper's scale, where hundreds of jobs compete for the GPUs, it
says little. This bound measures the cluster's capacity instead (docs/models/fluid-bound.md):

- **Work.** Each GPU g has a price π_g > 0 (one per GPU type). Job j's work is W_j = (its
  tasks) × p_j, with p_j = min_g π_g compute[j, g] the cost of its cheapest task. A task of
  j computing on GPU g does work at rate ρ_jg = p_j / compute[j, g] ≤ π_g, so each task
  contributes exactly p_j. Unit prices make p_j the fastest task time.
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

The bound holds in both modes (a gang round holds its GPUs at least while its tasks compute)
and for any prices; :func:`fluid_bound` starts at unit prices and searches those of the GPU
types. One price vector costs O(n·T + n log n) for n jobs on T GPU types. The Result's bound
is the better of this and the critical path (``extra.bound_source``); ``extra.fluid_bound``,
``extra.capacity`` and ``extra.prices`` (per GPU type, the highest 1) give the parts.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from optsched.budget import Budget
from optsched.contracts import MethodOutput, SolveContext
from optsched.critical_path import critical_path, from_origin
from optsched.ect import incumbent
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
    order = np.lexsort((np.arange(n), release)).tolist()  # by release, then index
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


class _Terms(NamedTuple):
    """The fluid bound's terms at some prices, per job: ``work`` W_j, the ``rate_cap`` R_j
    and ``after`` = W_j / (2 R_j) + s_j; and the cluster's ``capacity`` C."""

    work: npt.NDArray[np.float64]
    rate_cap: npt.NDArray[np.float64]
    after: npt.NDArray[np.float64]
    capacity: float


def _fluid_terms(instance: Instance, prices: npt.NDArray[np.float64]) -> _Terms:
    """The fluid bound's :class:`_Terms` at GPU-class ``prices``
    (models/fluid-bound.md), in blocks of jobs so that no (jobs × classes) array exceeds
    about 100,000 entries (its temporaries stay under 10 MB on any trace)."""
    compute, sync = instance.class_compute, instance.class_sync
    size = np.bincount(instance.gpu_class, minlength=compute.shape[1]).astype(float)
    tasks = np.array([job.n_tasks for job in instance.jobs], dtype=float)
    at_once = np.array([job.tasks_per_round for job in instance.jobs], dtype=float)
    n = instance.n_jobs
    work, rate_cap, after = np.empty(n), np.empty(n), np.empty(n)
    best_rate = np.zeros(compute.shape[1])
    step = max(1, 100_000 // compute.shape[1])
    for lo in range(0, n, step):
        block = slice(lo, lo + step)
        c, s = compute[block], sync[block]
        eligible = np.isfinite(c)
        priced = (c * prices).min(axis=1)  # p_j: the job's cheapest task
        rate = np.where(eligible, priced[:, None] / np.where(eligible, c, 1.0), 0.0)
        np.maximum(best_rate, rate.max(axis=0), out=best_rate)
        # R_j: the K_j largest rates over GPUs, class by class from the fastest
        order = np.argsort(-rate, axis=1, kind="stable")
        sorted_rate = np.take_along_axis(rate, order, axis=1)
        count = size[order]
        taken = np.clip(at_once[block, None] - (np.cumsum(count, axis=1) - count), 0.0, count)
        work[block] = tasks[block] * priced
        rate_cap[block] = (taken * sorted_rate).sum(axis=1)
        after[block] = work[block] / (2 * rate_cap[block]) + np.where(eligible, s, np.inf).min(
            axis=1
        )
    return _Terms(work, rate_cap, after, float(size @ best_rate))


def _same_columns(compute: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
    """Each class's group: the classes with the same compute times (a GPU type), numbered
    in the lexicographic order of those times (as ``np.unique(compute.T, axis=0)`` numbers
    them, without its copies of the whole matrix)."""
    first: list[int] = []  # a representative class of each group
    of = np.empty(compute.shape[1], dtype=np.intp)
    for c in range(compute.shape[1]):
        same = [k for k, r in enumerate(first) if np.array_equal(compute[:, r], compute[:, c])]
        if not same:
            first.append(c)
        of[c] = same[0] if same else len(first) - 1
    ranked = sorted(range(len(first)), key=lambda k: compute[:, first[k]].tolist())
    rank = np.empty(len(first), dtype=np.intp)
    rank[ranked] = np.arange(len(first))
    return rank[of]


@dataclass(frozen=True)
class FluidBound:
    """The outcome of :func:`fluid_bound`: the certified ``bound`` on Σ w_j C_j, the GPU-class
    ``prices`` it was found at (the highest 1) and the cluster's ``capacity`` C at them (in
    GPUs of the highest price), and the number of price vectors ``tried``."""

    bound: float
    prices: tuple[float, ...]
    capacity: float
    tried: int


#: Price vectors :func:`fluid_bound` tries at most (each is one preemptive WSPT pass, about
#: 0.25 s at 82,247 jobs).
MAX_PRICE_TRIES = 40


def fluid_bound(
    instance: Instance,
    budget: Budget | None = None,
    path: npt.NDArray[np.float64] | None = None,
    *,
    search: bool = True,
) -> FluidBound:
    """The fluid work bound on Σ w_j C_j (module doc). Every price vector and split tried
    gives a bound, and the best is returned: unit prices first (the plain fluid bound), then,
    with ``search``, a coordinate search over the prices of the GPU types on a log scale (at
    most :data:`MAX_PRICE_TRIES` vectors, deterministic, at the unit prices' split; none when
    that split counts every job at its critical path). With a ``budget``,
    the search stops once it has expired (after the unit prices). ``path``: the instance's
    :func:`critical_path`, when the caller has it already."""
    n = instance.n_jobs
    release = np.array([job.arrival for job in instance.jobs], dtype=float)
    weight = np.array([job.weight for job in instance.jobs], dtype=float)
    path = critical_path(instance) if path is None else path  # C_j ≥ path_j
    # times from the first arrival, so that the safety margin is taken on this value, not
    # on Σ w × origin (exact where a time is at most twice the origin; elsewhere rounded
    # far inside the margin)
    origin = float(release.min())
    release, path = release - origin, path - origin

    def fluid(terms: _Terms, alone: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
        """Each job's fluid completion M_j + after_j, WSPT weighting the jobs of ``alone`` 0."""
        mean_busy = preemptive_wspt_mean_busy(
            release, terms.work / terms.capacity, weight * ~alone
        )
        return mean_busy + terms.after

    def value(completion: npt.NDArray[np.float64], alone: npt.NDArray[np.bool_]) -> float:
        """The bound with the jobs of ``alone`` at their critical path, the others at
        ``completion``: C_j ≥ max(path_j, M_j + after_j), and Σ_others w M is at least its
        WSPT minimum, so Σ_alone w path + Σ_others w (M^WSPT + after) is a bound."""
        return float(np.dot(weight, np.where(alone, path, completion)))

    def split(prices: npt.NDArray[np.float64]) -> tuple[float, npt.NDArray[np.bool_]]:
        """The best split at ``prices``: jobs join `alone` while their critical path exceeds
        their fluid completion."""
        terms = _fluid_terms(instance, prices)
        alone = np.zeros(n, dtype=bool)
        best, best_alone = 0.0, alone
        for _ in range(n + 1):
            completion = fluid(terms, alone)
            here = value(completion, alone)
            if here > best:
                best, best_alone = here, alone.copy()
            joining = ~alone & (path > completion)
            if not joining.any():
                break
            alone |= joining
            if budget is not None and budget.expired():
                break
        return best, best_alone

    group = _same_columns(instance.class_compute)  # one price per GPU type
    log_prices = np.zeros(int(group.max()) + 1)
    best, alone = split(np.ones(len(group)))
    best_prices, tried = log_prices.copy(), 1
    # the search keeps the unit prices' split: where it counts every job at its critical
    # path, no price vector could change the value
    if search and len(log_prices) > 1 and not alone.all():
        # coordinate search, steps 2, √2, ⁴√2 (each a bound)
        for step in (1.0, 0.5, 0.25):
            improved = True
            while improved and tried < MAX_PRICE_TRIES:
                improved = False
                for g in range(len(log_prices)):
                    for sign in (1.0, -1.0):
                        if tried >= MAX_PRICE_TRIES or (budget is not None and budget.expired()):
                            break
                        trial = best_prices.copy()
                        trial[g] += sign * step
                        tried += 1
                        terms = _fluid_terms(instance, 2.0 ** trial[group])
                        here = value(fluid(terms, alone), alone)
                        if here > best:
                            best, best_prices, improved = here, trial, True
        if tried > 1 and not (budget is not None and budget.expired()):
            best = max(best, split(2.0 ** best_prices[group])[0])
    prices = 2.0 ** (best_prices - best_prices.max())
    capacity = _fluid_terms(instance, prices[group]).capacity
    chosen = tuple(float(p) for p in prices[group])
    bound = from_origin(best, origin, weight, _MARGIN)  # back from times after the origin
    return FluidBound(bound, chosen, capacity, tried)


@register(
    "fluid-bound",
    description="ECT schedule + the fluid work bound (contention "
    "between jobs; any size, both modes)",
)
def _fluid_bound(instance: Instance, context: SolveContext[Options]) -> MethodOutput:
    budget = Budget(context.time_limit)
    start = incumbent(instance, context.hint, budget)
    fluid = fluid_bound(instance, budget)
    return MethodOutput(
        schedule=start.schedule,
        bound=fluid.bound,
        extra={
            "start": start.origin,
            "fluid_bound": fluid.bound,
            "capacity": fluid.capacity,
            "prices": {
                instance.gpus[members[0]].type: price
                for members, price in zip(instance.class_members, fluid.prices, strict=True)
            },
            "stopped": "time limit" if budget.expired() else "done",
        },
    )
