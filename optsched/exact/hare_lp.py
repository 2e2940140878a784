"""Hare_Sched_RL at scale: its LP relaxation with Queyranne cuts separated lazily
(models/hare-rl-lp.md).

Hare's step 1 (HPDC'22 §5.2) solves Hare_Sched_RL, a mixed-integer quadratic
program over task→GPU assignments y and start times x. This module solves a linear relaxation
of it that is small enough for the paper's simulation scale (300 jobs, 160 GPUs, about 50,000
tasks):

* y is continuous, and the bilinear products y_im·x_i are replaced by their own variables
  z_im (the perspective form: x_i = Σ_m z_im, z_im ≥ e_i·y_im);
* GPUs with identical compute and sync columns are aggregated into groups q of m_q GPUs and
  the identical tasks of a round into one row of variables (both are symmetries of the
  relaxation, so nothing is lost by averaging over them, see the model file);
* Hare's inequality (9), Queyranne's parallel inequality, is imposed for *every* subset S of
  rounds on every group, in its aggregated form
  Σ_{i∈S} T_iq z_iq + ½ Σ_{i∈S} T_iq² y_iq ≥ (Σ_{i∈S} T_iq y_iq)² / (2 m_q),
  through tangent cuts added lazily (Kelley's cutting planes). For a given point the most
  violated S on a group is a prefix of the rounds sorted by their mean busy time on that
  group, so separation is exact; prefixes are represented with cumulative "chain" columns so
  that each cut has three non-zeros.

Guarantees:

* Every cut is valid for every schedule of the relaxed execution model (and so for every
  solution of Hare_Sched_RL), hence the optimum of *each* LP solved along the way, and in
  particular the last one, is a lower bound on the optimal Σ w_j C_j (up to HiGHS's
  feasibility tolerance, 1e-7). ``bound`` is that optimum; it is ``None`` only when no LP was
  solved to optimality in time.
* When ``converged`` is true, the final point violates no subset inequality by more than
  ``tol`` (relative), so ``bound`` is within that tolerance of the convex relaxation's optimum.
* The start estimates x̂ (``round_starts``) satisfy x̂ of round r+1 ≥ x̂ of round r + the
  job's fastest round time, so Algorithm 1's list respects the round order.
* Hare's α(2+α) guarantee (Theorem 4) is proven for the optimal Hare_Sched_RL solution only;
  what carries over to this LP, and what does not, is stated in models/hare-rl-lp.md.

Time: the whole call takes at most ``time_limit`` plus one HiGHS reaction time (HiGHS is
stopped at its deadline, :func:`optsched.exact.highs.run`); a limit that runs out during the
cut loop keeps the last LP solved (its bound is still valid). A Ctrl-C stops HiGHS the same
way (status ``interrupted``, or ``not solved (interrupted)`` before any LP was solved).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from optsched.budget import MIN_SOLVER_SECONDS, Budget, lp_too_large, size_text
from optsched.errors import InputError
from optsched.exact.highs import DEADLINE_MARGIN_SECONDS, presolve, run
from optsched.instance import Instance
from optsched.schedule import Schedule

#: Relative violation of a subset inequality below which it counts as satisfied.
DEFAULT_TOL = 1e-4
#: Cut rounds after which the loop stops (the bound of the last LP is still valid).
DEFAULT_MAX_ITERATIONS = 300
#: Most violated prefixes cut per group in one cut round (evenly spread, plus the worst).
MAX_CUTS_PER_GROUP = 256
#: A chain has a link (a prefix that cuts can use) every this many rounds of its order.
DEFAULT_STRIDE = 16
#: Orders shorter than this get no chain: their cuts are written out over the set.
MIN_CHAIN_ROUNDS = 512
#: Violated prefixes beyond which a new chain is built rather than rows of their own.
MAX_SET_CUTS = 8
#: Most chains (sort orders) per group; beyond, cuts are added on the existing chains only.
MAX_CHAINS_PER_GROUP = 12


@dataclass(frozen=True)
class HareLP:
    """The outcome of :func:`solve_hare_lp` (times in the instance's units).

    ``round_starts[j][r]`` is x̂ of the tasks of round r of job j (``None`` when no LP was
    solved); ``bound`` the optimum of the last LP solved (a lower bound on OPT, see the
    module docstring); ``status`` one of ``converged``, ``iteration limit``, ``time limit``,
    ``stalled`` (violations left only on negligible loads), ``solver: …`` (the cut loop
    stopped; the last LP's bound is valid) or ``not solved (…)`` (no LP solved);
    ``max_violation`` the largest relative violation of a subset inequality at the final
    point; ``history`` one ``(cut round, bound, cuts added, seconds)`` per LP solved.
    """

    round_starts: list[np.ndarray] | None
    bound: float | None
    status: str
    converged: bool
    iterations: int
    cuts: int
    chains: int
    max_violation: float | None
    columns: int
    rows: int
    nonzeros: int
    runtime_s: float
    history: list[tuple[int, float, int, float]] = field(default_factory=list)

    def extra(self) -> dict[str, Any]:
        """The fields a Result's ``extra`` records about this LP (history left out)."""
        return {
            "kind": "hare_sched_rl_lp",
            "bound": self.bound,
            "status": self.status,
            "converged": self.converged,
            "iterations": self.iterations,
            "cuts": self.cuts,
            "chains": self.chains,
            "max_violation": self.max_violation,
            "columns": self.columns,
            "rows": self.rows,
            "nonzeros": self.nonzeros,
            "lp_runtime_s": self.runtime_s,
        }


@dataclass
class _Chain:
    """Cumulative columns U_k, V_k over the rounds ``order`` usable on group ``q``:
    U_k = Σ_{i≤k} K T (z + ½ T y), V_k = Σ_{i≤k} K T y (per task of the round)."""

    q: int
    order: np.ndarray
    ends: np.ndarray
    u: np.ndarray
    v: np.ndarray
    position: np.ndarray  # position of every round in ``order`` (−1: not usable on q)
    link_at: np.ndarray  # link number of every position of ``order`` (−1: not a link)


class _Model:
    """The round-and-group aggregated LP in a HiGHS object, plus its index arrays."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        groups = instance.gpu_groups()
        rep = [g[0] for g in groups]
        self.m = np.array([len(g) for g in groups], dtype=float)
        n_q = len(groups)
        jobs = instance.jobs
        T = instance.compute[:, rep]  # (jobs, groups)
        S = instance.sync[:, rep]
        usable = np.isfinite(T)
        if not np.all(usable.any(axis=1)):
            raise InputError("Hare_Sched_RL LP: a job has no eligible GPU")
        fastest = np.where(usable, T + np.where(usable, S, 0.0), np.inf).min(axis=1)
        self.fastest = fastest
        counts = np.array([job.rounds for job in jobs])
        self.first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        n = int(counts.sum())
        self.n_rounds = n
        job_of = np.repeat(np.arange(len(jobs)), counts)
        rnd = np.arange(n) - self.first[job_of]
        self.job_of, self.rnd = job_of, rnd
        arrival = np.array([job.arrival for job in jobs], dtype=float)
        self.e = arrival[job_of] + rnd * fastest[job_of]  # earliest start of each round
        self.k = np.array([job.tasks_per_round for job in jobs], dtype=float)[job_of]
        self.T = np.where(usable, T, 0.0)[job_of]  # (rounds, groups), 0 where unusable
        self.S = np.where(usable, S, 0.0)[job_of]
        self.usable = usable[job_of]
        weights = np.array([job.weight for job in jobs], dtype=float)
        last = rnd == counts[job_of] - 1

        # columns: Y (round, group), D = z − e·y (round, group), R (round)
        rows_u, cols_u = np.nonzero(self.usable)
        n_pairs = len(rows_u)
        self.y_col = np.full((n, n_q), -1, dtype=np.int64)
        self.d_col = np.full((n, n_q), -1, dtype=np.int64)
        self.y_col[rows_u, cols_u] = np.arange(n_pairs)
        self.d_col[rows_u, cols_u] = n_pairs + np.arange(n_pairs)
        self.r_col = 2 * n_pairs + np.arange(n)
        n_cols = 2 * n_pairs + n
        lower = np.concatenate([np.zeros(2 * n_pairs), self.e + fastest[job_of]])
        upper = np.concatenate([np.ones(n_pairs), np.full(n_pairs + n, np.inf)])
        cost = np.zeros(n_cols)
        cost[self.r_col[last]] = weights[job_of[last]]

        # rows (CSR pieces): assignment, barrier, completion
        rs: list[np.ndarray] = []
        cs: list[np.ndarray] = []
        vs: list[np.ndarray] = []
        lo: list[np.ndarray] = []
        hi: list[np.ndarray] = []
        n_rows = 0

        def add(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray) -> None:
            rs.append(rows)
            cs.append(cols)
            vs.append(vals)

        # Σ_q Y = 1
        add(rows_u, self.y_col[rows_u, cols_u], np.ones(n_pairs))
        lo.append(np.ones(n))
        hi.append(np.ones(n))
        n_rows += n
        # barrier (7): x̂_ρ = e_ρ + Σ_q D ≥ R_{ρ−1}, for rounds r ≥ 1
        later = np.nonzero(rnd > 0)[0]
        bar_row = np.full(n, -1, dtype=np.int64)
        bar_row[later] = n_rows + np.arange(len(later))
        sel = rnd[rows_u] > 0
        add(bar_row[rows_u[sel]], self.d_col[rows_u[sel], cols_u[sel]], np.ones(int(sel.sum())))
        add(bar_row[later], self.r_col[later - 1], -np.ones(len(later)))
        lo.append(-self.e[later])
        hi.append(np.full(len(later), np.inf))
        n_rows += len(later)
        # completion (6): R_ρ − Σ_q D − Σ_q (T+S) Y ≥ e_ρ
        comp = n_rows + np.arange(n)
        add(comp, self.r_col, np.ones(n))
        add(comp[rows_u], self.d_col[rows_u, cols_u], -np.ones(n_pairs))
        add(
            comp[rows_u],
            self.y_col[rows_u, cols_u],
            -(self.T[rows_u, cols_u] + self.S[rows_u, cols_u]),
        )
        lo.append(self.e.copy())
        hi.append(np.full(n, np.inf))
        n_rows += n

        full = (self.k[:, None] * self.T).sum(axis=0)  # each group's load if it ran all
        self.full = full
        self.floor = np.maximum(1e-6 * full**2 / (2 * self.m), 1e-12)
        self.n_cols, self.n_rows = n_cols, n_rows
        self.nonzeros = int(sum(len(v) for v in vs))
        self.chains: list[_Chain] = []
        self.cuts = 0

        import highspy

        from optsched.exact.quiet import native_stdout_silenced

        with native_stdout_silenced():
            h = highspy.Highs()  # type: ignore[no-untyped-call, unused-ignore]
        h.setOptionValue("output_flag", False)
        inf = highspy.kHighsInf
        h.addVars(n_cols, lower, np.where(np.isinf(upper), inf, upper))
        h.changeColsCost(n_cols, np.arange(n_cols, dtype=np.int32), cost)
        self._add_rows(
            h,
            np.concatenate(rs),
            np.concatenate(cs),
            np.concatenate(vs),
            np.concatenate(lo),
            np.concatenate(hi),
            0,
        )
        self.h = h

    @staticmethod
    def _add_rows(
        h: Any,
        rows: np.ndarray,
        cols: np.ndarray,
        vals: np.ndarray,
        lo: np.ndarray,
        hi: np.ndarray,
        first: int,
    ) -> None:
        """Add rows numbered from ``first`` (row, col, value triplets) to HiGHS."""
        import highspy

        n = len(lo)
        order = np.lexsort((cols, rows))
        rows, cols, vals = rows[order] - first, cols[order], vals[order]
        starts = np.searchsorted(rows, np.arange(n)).astype(np.int32)
        inf = highspy.kHighsInf
        h.addRows(
            n,
            np.where(np.isinf(lo), -inf, lo),
            np.where(np.isinf(hi), inf, hi),
            len(vals),
            starts,
            cols.astype(np.int32),
            vals.astype(float),
        )

    def add_chain(self, q: int, order: np.ndarray, ends: np.ndarray) -> _Chain:
        """Cumulative columns over ``order`` (rounds usable on group q) at the prefix ends
        ``ends`` (increasing positions in ``order``, the last one ``len(order) − 1``)."""
        n = len(ends)
        u = self.n_cols + np.arange(n)
        v = self.n_cols + n + np.arange(n)
        self.h.addVars(2 * n, np.zeros(2 * n), np.full(2 * n, np.inf))
        self.n_cols += 2 * n
        kt = self.k[order] * self.T[order, q]
        mid = self.e[order] + 0.5 * self.T[order, q]
        link = np.searchsorted(ends, np.arange(len(order)))  # the link of each position
        first = self.n_rows
        ru = first + np.arange(n)
        rv = first + n + np.arange(n)
        rows = [ru, ru[1:], ru[link], ru[link], rv, rv[1:], rv[link]]
        cols = [
            u,
            u[:-1],
            self.d_col[order, q],
            self.y_col[order, q],
            v,
            v[:-1],
            self.y_col[order, q],
        ]
        vals = [np.ones(n), -np.ones(n - 1), -kt, -kt * mid, np.ones(n), -np.ones(n - 1), -kt]
        zero = np.zeros(2 * n)
        self._add_rows(
            self.h,
            np.concatenate(rows),
            np.concatenate(cols),
            np.concatenate(vals),
            zero,
            zero,
            first,
        )
        self.n_rows += 2 * n
        self.nonzeros += 4 * n - 2 + 3 * len(order)
        position = np.full(self.n_rounds, -1, dtype=np.int64)
        position[order] = np.arange(len(order))
        link_at = np.full(len(order), -1, dtype=np.int64)
        link_at[ends] = np.arange(n)
        chain = _Chain(q, order, ends, u, v, position, link_at)
        self.chains.append(chain)
        return chain

    def add_cuts(self, chain: _Chain, at: np.ndarray, load: np.ndarray) -> None:
        """Tangent cuts (m/L0)·U_k − V_k ≥ −L0/2 at positions ``at`` with L0 = ``load``."""
        n = len(at)
        m = self.m[chain.q]
        first = self.n_rows
        rows = np.repeat(first + np.arange(n), 2)
        cols = np.column_stack([chain.u[at], chain.v[at]]).ravel()  # at: link numbers
        vals = np.column_stack([m / load, -np.ones(n)]).ravel()
        self._add_rows(self.h, rows, cols, vals, -0.5 * load, np.full(n, np.inf), first)
        self.n_rows += n
        self.nonzeros += 2 * n
        self.cuts += n

    def add_set_cut(self, q: int, rounds: np.ndarray, load: float) -> None:
        """One tangent cut written out over the set ``rounds`` (no chain):
        (m/L0)·Σ K T (z + ½ T y) − Σ K T y ≥ −L0/2."""
        kt = self.k[rounds] * self.T[rounds, q]
        mid = self.e[rounds] + 0.5 * self.T[rounds, q]
        scale = self.m[q] / load
        n = len(rounds)
        cols = np.concatenate([self.d_col[rounds, q], self.y_col[rounds, q]])
        vals = np.concatenate([scale * kt, scale * kt * mid - kt])
        self._add_rows(
            self.h,
            np.full(2 * n, self.n_rows),
            cols,
            vals,
            np.array([-0.5 * load]),
            np.array([np.inf]),
            self.n_rows,
        )
        self.n_rows += 1
        self.nonzeros += 2 * n
        self.cuts += 1

    def terms(self, x: np.ndarray, q: int, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-round a = K T (z + ½ T y) and b = K T y on group q at the point x."""
        y = x[self.y_col[order, q]]
        d = x[self.d_col[order, q]]
        kt = self.k[order] * self.T[order, q]
        return kt * (d + (self.e[order] + 0.5 * self.T[order, q]) * y), kt * y

    def violations(
        self, x: np.ndarray, chain_q: int, order: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(relative violation, load B_k) of every prefix of ``order`` on group q."""
        a, b = self.terms(x, chain_q, order)
        big_a, big_b = np.cumsum(a), np.cumsum(b)
        need = big_b**2 / (2 * self.m[chain_q])
        # relative to the prefix's own size, but never to less than 1e-6 of the group's full
        # load (HiGHS's feasibility tolerance leaves ~1e-9 shares whose ratios mean nothing)
        rel = (need - big_a) / np.maximum(np.maximum(need, big_a), self.floor[chain_q])
        return rel, big_b

    def fresh_order(self, x: np.ndarray, q: int) -> np.ndarray:
        """Rounds usable on q sorted by their mean busy time on q (exact separation order);
        rounds with no share on q by x̂ + ½T."""
        rounds = np.nonzero(self.usable[:, q])[0]
        y = x[self.y_col[rounds, q]]
        d = x[self.d_col[rounds, q]]
        half = 0.5 * self.T[rounds, q]
        share = y > 1e-9
        key = np.where(
            share,
            self.e[rounds] + d / np.where(share, y, 1.0) + half,
            self.starts(x)[rounds] + half,
        )
        return rounds[np.lexsort((rounds, key))]

    def point(self, schedule: Schedule) -> np.ndarray:
        """The LP point of a schedule: y = share of the round's tasks on each group,
        z = y·(mean start of those tasks)."""
        instance = self.instance
        group_of = np.empty(instance.n_gpus, dtype=np.int64)
        for q, members in enumerate(instance.gpu_groups()):
            group_of[list(members)] = q
        x = np.zeros(self.n_cols)
        for t in schedule.tasks:
            rho = self.first[instance.job_index[t.job]] + t.round
            q = group_of[instance.gpu_index[t.gpu]]
            x[self.y_col[rho, q]] += 1.0 / self.k[rho]
            x[self.d_col[rho, q]] += (t.start - self.e[rho]) / self.k[rho]
        return x

    def starts(self, x: np.ndarray) -> npt.NDArray[np.float64]:
        """x̂ of every round: e + Σ_q D."""
        d = np.where(self.d_col >= 0, x[np.maximum(self.d_col, 0)], 0.0)
        starts: npt.NDArray[np.float64] = self.e + d.sum(axis=1)
        return starts


def _separate(
    model: _Model,
    q: int,
    order: np.ndarray,
    rel: np.ndarray,
    load: np.ndarray,
    tol: float,
    stride: int,
) -> int:
    """Cut the violated prefixes of ``order`` (the exact separation order) on group q.

    A prefix that is also a link of an existing chain (same set of rounds) gets a 3-non-zero
    cut there; when many are not, a new chain in this order takes them all; a few are
    written out as rows of their own. Returns the number of cuts added."""
    viol = np.nonzero((rel > tol) & (load > 1e-9 * model.full[q]))[0]
    if len(viol) == 0:
        return 0
    worst_at = int(viol[np.argmax(rel[viol])])
    if len(viol) > MAX_CUTS_PER_GROUP:
        viol = viol[np.linspace(0, len(viol) - 1, MAX_CUTS_PER_GROUP).round().astype(int)]
    pick = np.union1d(viol, [worst_at])
    todo = np.ones(len(pick), dtype=bool)
    steps = np.arange(len(order))
    added = 0
    for chain in [c for c in model.chains if c.q == q]:
        same = np.maximum.accumulate(chain.position[order]) == steps  # same prefix sets
        link = chain.link_at[pick]
        hit = todo & same[pick] & (link >= 0)
        if hit.any():
            model.add_cuts(chain, link[hit], load[pick[hit]])
            added += int(hit.sum())
            todo &= ~hit
    rest = pick[todo]
    if len(order) < MIN_CHAIN_ROUNDS:  # short orders: every cut written out is cheap
        for p in rest:
            model.add_set_cut(q, order[: p + 1], float(load[p]))
        return added + len(rest)
    if len(rest) > MAX_SET_CUTS and sum(c.q == q for c in model.chains) < MAX_CHAINS_PER_GROUP:
        ends = np.union1d(_ends(len(order), max(1, min(stride, len(order) // 256))), rest)
        chain = model.add_chain(q, order, ends)
        model.add_cuts(chain, chain.link_at[rest], load[rest])
        return added + len(rest)
    for p in rest[np.argsort(-rel[rest])][:MAX_SET_CUTS]:
        model.add_set_cut(q, order[: p + 1], float(load[p]))
        added += 1
    return added


def _ends(n: int, stride: int) -> np.ndarray:
    """Chain links every ``stride``-th prefix of an order of n rounds, and the last one."""
    return np.union1d(np.arange(stride - 1, n, stride), [n - 1])


def hare_lp_size(instance: Instance) -> tuple[int, int]:
    """(columns, non-zeros) of the base LP plus one chain per group: the part that exists
    before any cut (cuts add 1 row and 2 non-zeros each)."""
    groups = instance.gpu_groups()
    rep = [g[0] for g in groups]
    usable = np.isfinite(instance.compute[:, rep])
    rounds = np.array([job.rounds for job in instance.jobs])
    pairs = int((usable.sum(axis=1) * rounds).sum())
    n = int(rounds.sum())
    return 2 * pairs + n + 2 * pairs, 2 * pairs + n + 2 * n + 2 * pairs + 7 * pairs


def solve_hare_lp(
    instance: Instance,
    *,
    time_limit: float | None = None,
    tol: float = DEFAULT_TOL,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    stride: int = DEFAULT_STRIDE,
    report: Callable[[float | None, float | None], None] | None = None,
) -> HareLP:
    """Solve the LP relaxation of Hare_Sched_RL with lazily separated Queyranne cuts.

    Relaxed mode (the model of HPDC'22 §5.1). See the module docstring for what the result
    guarantees; the formulation and the proofs are in models/hare-rl-lp.md. ``report(None,
    bound)`` receives each round's LP value (a lower bound: fewer cuts, a weaker LP).

    Raises
    ------
    InputError
        If a job has no eligible GPU, or the LP before cuts would be too large for
        :func:`~optsched.budget.lp_too_large`.
    """
    import highspy

    started = time.perf_counter()
    budget = Budget(time_limit)
    columns, nonzeros = hare_lp_size(instance)
    if lp_too_large(columns, nonzeros):
        raise InputError(
            "the LP of Hare_Sched_RL would have "
            f"{size_text(columns, nonzeros)}; this instance is too large"
        )
    model = _Model(instance)
    h = model.h
    h.setOptionValue("presolve", presolve(nonzeros))
    n_q = len(model.m)
    history: list[tuple[int, float, int, float]] = []
    best_x: np.ndarray | None = None
    bound: float | None = None
    status = "not solved"
    max_violation: float | None = None
    iteration = 0
    added = 0
    solver = "ipm"
    abandoned = False
    while True:
        left = budget.left()
        if left is not None and left < MIN_SOLVER_SECONDS:
            status = "time limit" if bound is not None else "not solved (time limit)"
            break
        h.setOptionValue("time_limit", float(left) if left is not None else highspy.kHighsInf)
        h.setOptionValue("solver", solver)
        ended = run(
            h, None if left is None else time.perf_counter() + left + DEADLINE_MARGIN_SECONDS
        )
        if ended != "solved":  # a Ctrl-C, or HiGHS past its time limit: the last LP stands
            status = "interrupted" if ended == "interrupted" else "time limit"
            if bound is None:
                status = f"not solved ({status})"
            abandoned = ended == "abandoned"
            break
        solver = "simplex"
        model_status = h.getModelStatus()
        if model_status != highspy.HighsModelStatus.kOptimal:
            status = (
                "time limit"
                if model_status == highspy.HighsModelStatus.kTimeLimit
                else f"solver: {h.modelStatusToString(model_status)}"
            )
            if bound is None:
                status = f"not solved ({status})"
            break
        x = np.asarray(h.getSolution().col_value)
        best_x = x
        bound = float(h.getInfo().objective_function_value)
        history.append((iteration, bound, added, time.perf_counter() - started))
        if report is not None:
            report(None, bound)
        # separation: per group, the prefixes of the mean-busy-time order (exact)
        added = 0
        worst = 0.0
        for q in range(n_q):
            order = model.fresh_order(x, q)
            if len(order) == 0:
                continue
            rel, load = model.violations(x, q, order)
            worst = max(worst, float(rel.max()))
            added += _separate(model, q, order, rel, load, tol, stride)
        max_violation = worst
        if added == 0:
            status = "converged" if worst <= tol else "stalled"
            break
        iteration += 1
        if iteration >= max_iterations:
            status = "iteration limit"
            break
    round_starts = None
    if best_x is not None:
        xs = model.starts(best_x)
        round_starts = []
        for j, job in enumerate(instance.jobs):
            s = xs[model.first[j] : model.first[j] + job.rounds].copy()
            for r in range(1, job.rounds):  # remove floating-point noise in (6)-(7)
                s[r] = max(s[r], s[r - 1] + model.fastest[j])
            round_starts.append(s)
    # HiGHS keeps one global thread pool per process, sized by its first user; release it so
    # later HiGHS users (PuLP's milp-highs) start their own (not under a HiGHS still running)
    del model.h, h
    if not abandoned:
        highspy.Highs.resetGlobalScheduler(True)
    return HareLP(
        round_starts,
        bound,
        status,
        status == "converged",
        len(history),
        model.cuts,
        len(model.chains),
        max_violation,
        model.n_cols,
        model.n_rows,
        model.nonzeros,
        time.perf_counter() - started,
        history,
    )
