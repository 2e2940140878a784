"""Branching on completion times over the column-generation bound (``column-bound`` with
``branch=1``, both modes; docs/models/column-bound.md, "Branching on completion
times").

The master LP of :mod:`optsched.exact.columns` mixes several paths of a job where no single
path of each job fits the capacity rows; its value then stays below the optimum however long
the columns are priced. Branching splits the schedules instead: a node is a box of
completion times, job j completing at a grid step within [least_j, greatest_j], and its
bound is :func:`~optsched.exact.columns.column_bound` restricted to the box (a job's paths
complete by its greatest and cost at least its weight × its least:
:func:`~optsched.exact.lagrangian.restrict_completions`). A node whose master mixes
completions of job j, with mean m, splits into C_j ≤ ⌊m⌋ and C_j ≥ ⌊m⌋ + 1: on the grid
every schedule of the node lies in exactly one child, and the mix is cut off in both.

Best first: the open node of least bound is split next (on the job whose mix has the largest
weighted variance), so the certified value, the least bound over the open nodes (a child
keeps at least its parent's bound, since it holds fewer schedules), rises as the lowest
nodes are closed. A child starts from its parent's paths that fit its box and from its
parent's best multipliers, and stops as soon as its master's value rounds to the bound it
has certified (:mod:`optsched.exact.columns`); its first pricing, at those multipliers,
prices only the job split, the others' values being its parent's. A node whose bound
reaches the incumbent's objective holds no better schedule and is dropped; when none is
left, the incumbent is optimal. The value is at most the optimum at any moment: anytime
within the budget, the work budget, or until a Ctrl-C.
In gang mode the nodes keep the conflict cuts (priced in the programmes); in relaxed mode
they go without them (there the cuts need CP-SAT's exact pricing, seconds per node).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from optsched.budget import Budget
from optsched.exact.lagrangian import EmptyBox, _problem, _Round
from optsched.instance import Instance
from optsched.schedule import Schedule

if TYPE_CHECKING:
    from optsched.exact.columns import ColumnBound, MasterState

#: A node: job → (least, greatest) completion step from the first arrival.
Box = dict[int, tuple[int, int]]

#: A master's paths: (job, cost, rounds) each (:attr:`ColumnBound.paths`).
Paths = tuple[tuple[int, float, list[_Round]], ...]


@dataclass(frozen=True)
class Branched:
    """The outcome of :func:`branch_on_completions`: the certified ``bound`` (instance
    units; None when the root found none), the ``nodes`` bounded, the ``open`` ones left,
    why it ``stopped`` (``optimal``: no node below the incumbent is left; ``integral``: the
    lowest node's master mixes no completions it can split, so branching cannot raise it;
    ``nodes``, ``time limit``, ``work``, ``interrupted``), the ``root`` run and the
    ``work`` spent (work-seconds)."""

    bound: float | None
    nodes: int
    open: int
    stopped: str
    root: ColumnBound
    work: float


def branch_on_completions(
    column_bound: Callable[..., ColumnBound],
    instance: Instance,
    upper: float,
    time_unit: float,
    *,
    iterations: int = 1000,
    cuts: bool = True,
    priced_until: float | None = None,
    start: Schedule | None = None,
    budget: Budget | None = None,
    work: float | None = None,
    report: Any = None,
    max_nodes: int | None = None,
) -> Branched:
    """Best-first branching on job completion times (module doc), each node bounded by
    ``column_bound`` (:func:`~optsched.exact.columns.column_bound`; in gang mode with the
    conflict cuts when ``cuts``, in relaxed mode without them), on the grid of
    ``time_unit`` from the deadlines of ``upper`` (the objective of the feasible ``start``,
    whose rounds are the root's first paths). Each node runs at most ``iterations`` pricing
    rounds; at most ``max_nodes`` nodes are bounded (default: no limit); ``report(bound)``
    is called with each better certified bound.

    Guarantees: at any moment the value is min(``upper``, the least bound of the open
    nodes), each node's bound being column-bound's certified value on its box (at least its
    parent's); the children of a node partition its schedules on the grid, so the value is
    at most the optimum."""
    spent = 0.0

    def left() -> float | None:
        return None if work is None else max(work - spent, 0.0)

    def bound_of(
        box: Box,
        first: Schedule | None,
        paths: Paths = (),
        lam: npt.NDArray[np.float64] | None = None,
        known: dict[int, float] | None = None,
        state: MasterState | None = None,
    ) -> ColumnBound:
        nonlocal spent
        found = column_bound(
            instance,
            upper,
            time_unit,
            iterations=iterations,
            cuts=cuts and instance.mode == "gang",
            priced_until=priced_until,
            budget=budget,
            work=left(),
            start=first,
            restrict=box,
            with_paths=paths,
            multipliers=lam,
            known=known,
            state=state,
            problem=problem,
        )
        spent += found.work
        return found

    problem = _problem(instance, upper, time_unit, priced_until)
    root = bound_of({}, start)
    if root.bound is None or root.stopped == "interrupted":
        best = None if root.bound is None else min(root.bound, upper)
        return Branched(best, 1, 0, root.stopped, root, spent)
    best = min(root.bound, upper)
    if report is not None:
        report(best)
    # (bound, tie-break, box, its column-bound run)
    heap: list[tuple[float, int, Box, ColumnBound]] = []
    if root.bound < upper:
        heap.append((root.bound, 0, {}, root))
    nodes, stopped = 1, "optimal"
    try:
        while heap:
            if budget is not None and budget.expired():
                stopped = "time limit"
                break
            if work is not None and spent >= work:
                stopped = "work"
                break
            if max_nodes is not None and nodes + 2 > max_nodes:
                stopped = "nodes"
                break
            value, _, box, ran = heap[0]
            split = _split(problem, box, ran.spread)
            if split is None:  # a node stopped early (iterations) may have no mix to show
                stopped = "integral" if ran.stopped in ("optimal", "converged") else ran.stopped
                break
            j, least, cut, greatest = split
            job = problem.jobs[j]
            # at the parent's multipliers every other job keeps its value: only j is priced
            known = None
            if ran.values is not None:
                known = {i: v for i, v in enumerate(ran.values) if i != j}
            children = []
            for limits in ((least, min(greatest, cut)), (max(least, cut + 1), greatest)):
                inner = {**box, j: limits}
                paths, state = _within(ran, j, limits, job.weight)
                try:
                    found = bound_of(inner, None, paths, ran.multipliers, known, state)
                except EmptyBox:  # no schedule completes within the child's box
                    continue
                nodes += 1
                if found.stopped == "interrupted":
                    raise KeyboardInterrupt
                # a node stopped before its first value keeps its parent's
                low = value if found.bound is None else max(value, found.bound)
                children.append((low, nodes, inner, found))
            # the node is replaced only once both children are bounded
            heapq.heappop(heap)
            for child in children:
                if child[0] < upper:
                    heapq.heappush(heap, child)
            lowest = min(heap[0][0], upper) if heap else upper
            if lowest > best:
                best = lowest
                if report is not None:
                    report(best)
    except KeyboardInterrupt:  # the least open bound stands (a node half split is open)
        stopped = "interrupted"
    return Branched(best, nodes, len(heap), stopped, root, spent)


def _split(
    problem: Any, box: Box, spread: tuple[tuple[int, float, float], ...]
) -> tuple[int, int, int, int] | None:
    """(job, least, cut, greatest): the job whose mixed completions have the largest
    weighted variance among those the cut ⌊mean⌋ splits inside their box (paths priced
    past the programme's horizon may complete after a job's default box), or None."""
    best, chosen = 0.0, None
    for j, mean, variance in spread:
        job = problem.jobs[j]
        least, greatest = box.get(j, (0, job.first + job.rounds * job.rho + job.window))
        cut = math.floor(mean)
        if least <= cut < greatest and job.weight * variance > best:
            best, chosen = job.weight * variance, (j, least, cut, greatest)
    return chosen


def _within(
    parent: ColumnBound, j: int, limits: tuple[int, int], weight: float
) -> tuple[Paths, MasterState | None]:
    """A ``parent``'s paths for its child where job j completes within ``limits``, and its
    master's state for them: j's paths that complete after them left out, and each of j's
    costs at least ``weight`` × the least (a path's cost is its weight × its completion, or ×
    the least of its box, whichever is later)."""
    least, greatest = limits
    out, kept = [], []
    for i, cost, rounds in parent.paths:
        keep = i != j or cost <= weight * greatest
        kept.append(keep)
        if keep:
            out.append((i, max(cost, weight * least) if i == j else cost, rounds))
    state = parent.state
    if state is not None:
        state = replace(
            state,
            paths=tuple(s for s, keep in zip(state.paths, kept, strict=True) if keep),
            columns=tuple(c for c, keep in zip(state.columns, kept, strict=True) if keep),
        )
    return tuple(out), state
