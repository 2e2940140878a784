"""Several online policies on one workload: one table, one JCT CDF (``optsched compare``).

:func:`compare` simulates each policy (a registered ``simulate`` method, with its own
parameters: ``hlas:mapping=A``) on the same instance with the same seed, noise and switch cost,
each in the instance's mode or, where it has only the other one and the mode is not imposed, in
its own (HLAS and AlloX are relaxed-mode policies, Tiresias and FIFO gang-mode ones; the table
says which), and returns a :class:`Comparison`: per policy its mode, JCT statistics (mean, p50,
p95, p99), makespan, the certified regrets (of the total weighted JCT, and of Σ w_j C_j, which
arrivals spread over months dilute) over the best lower bound the runs of its mode computed
(:mod:`optsched.regret`; one bound per mode, so the ratios compare; the gang runs take the
relaxed runs' bound where it is higher, since a gang schedule is a relaxed one of the same
objective; with ``bound="capacity"`` or ``"lagrangian"`` its LP, and the Lagrangian bound, run
once per mode, after the runs) and the simulation's CPU time; :meth:`Comparison.table` writes
them as a Markdown table in a unit of time of choice, and :meth:`Comparison.jcts_in` gives
every policy's JCTs in that unit for one CDF chart (:func:`optsched.plot.plot_jct_cdf`). Every
schedule is checked as :func:`~optsched.online.run.simulate` checks it (``record=False``
streams the metrics instead, for traces too large to keep, and says so in the table).

``offline`` adds the other side: an offline method (``priority-search``, ``lns``, ``cpsat``
...), given every arrival, solves the same realised instance in each mode, after the runs
and before the LP levels (whose deadlines then come from the best schedule), and its
checked schedule, or a checked policy's where better, is one the optimum is at most. Each
policy's objective over it is then a regret the true one is *at least*: with the bound, an
interval that holds the policy's distance from the optimum (printed rounded outwards). Its
bound, where higher, becomes the mode's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TextIO, cast

import numpy as np

from optsched.budget import check_time_limit
from optsched.errors import InputError
from optsched.instance import Instance
from optsched.regret import (
    CAPACITY_TIME_LIMIT,
    LP_LEVELS,
    OFFLINE_TIME_LIMIT,
    bound_levels,
    check_level,
    ratio_text,
    regret_ratio,
    weighted_arrivals,
)
from optsched.result import Result
from optsched.subsets import UNITS

#: Columns of :meth:`Comparison.rows`, in table order, with their headings (``{unit}``: the
#: table's unit of time).
COLUMNS = {
    "policy": "policy",
    "mode": "mode",
    "mean_jct": "mean JCT ({unit})",
    "p50_jct": "p50 ({unit})",
    "p95_jct": "p95 ({unit})",
    "p99_jct": "p99 ({unit})",
    "makespan": "makespan ({unit})",
    "regret_jct": "JCT regret",
    "regret": "regret",
    "cpu_s": "CPU s",
}

#: The columns :meth:`Comparison.rows` adds with an offline method: each regret the true one
#: is at least, over the best checked schedule of the policy's mode.
LEAST_COLUMNS = {"regret_jct_least": "JCT regret ≥", "regret_least": "regret ≥"}


def parse_policy(text: str, option: str = "--policy") -> tuple[str, dict[str, str]]:
    """``NAME`` or ``NAME:KEY=VALUE,KEY=VALUE`` → (name, parameters); an InputError naming
    ``option`` otherwise."""
    name, colon, rest = text.partition(":")
    if not name.strip():
        raise InputError(f"{option} {text!r}: no {option.removeprefix('--')} name")
    pairs = [p for p in (p.strip() for p in rest.split(",")) if p]
    if colon and not pairs:
        raise InputError(f"{option} {text!r}: expected NAME:KEY=VALUE,..., nothing after ':'")
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"{option} {text!r}: expected NAME:KEY=VALUE,..., got {pair!r}")
        if key in params:
            raise InputError(f"{option} {text!r}: {key} given twice")
        params[key] = value
    return name.strip(), params


@dataclass(frozen=True)
class PolicyRun:
    """One policy's simulation: its label (as given), the method and parameters, the
    checked Result and the CPU seconds it took."""

    label: str
    policy: str
    params: Mapping[str, str]
    result: Result[Any]
    cpu_s: float


@dataclass(frozen=True)
class Comparison:
    """What :func:`compare` returns: the runs, in the order given, on ``instance`` (the
    first run's realised instance: the same jobs and times for all), and per mode the best
    lower bound the runs in that mode computed (``bounds[mode]`` = (value, source); for gang
    mode the relaxed one where it is higher, its source ``"… of the relaxed runs"``; none
    with ``bound="none"``) and why the stronger bounds of the level gave none or less
    (``statuses[mode]``: ``capacity``, ``capacity parts``, ``lagrangian`` → status, as the
    runs' ``*_status`` fields), and what each of its bounds gave (``levels[mode]``:
    ``critical-path``, ``fluid``, ``capacity``, ``capacity-parts``, ``lagrangian`` → value,
    those computed; the bound is the highest, or the offline method's where that is higher).
    With an offline method (``offline``, its label), ``schedules[mode]`` = (objective,
    source): the best checked schedule of the mode, the offline method's or a run's (for
    relaxed mode a gang schedule too: it is a relaxed one), which the optimum is at most;
    ``offline_statuses[mode]``: how the method ended in each of its modes (its status,
    ``interrupted`` by a Ctrl-C, or why it did not run)."""

    instance: Instance
    runs: tuple[PolicyRun, ...]
    bounds: Mapping[str, tuple[float, str]]
    checked: bool = True
    statuses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    levels: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    offline: str | None = None
    schedules: Mapping[str, tuple[float, str]] = field(default_factory=dict)
    offline_statuses: Mapping[str, str] = field(default_factory=dict)

    @property
    def columns(self) -> dict[str, str]:
        """The table's columns (keys of :meth:`rows`) and headings: :data:`COLUMNS`, and
        :data:`LEAST_COLUMNS` after the regrets with an offline method."""
        out: dict[str, str] = {}
        for key, heading in COLUMNS.items():
            out[key] = heading
            if key == "regret" and self.offline is not None:
                out.update(LEAST_COLUMNS)
        return out

    @property
    def jcts(self) -> dict[str, list[float]]:
        """Each policy's JCTs (s), by label."""
        return {run.label: _simulation(run.result).jct for run in self.runs}

    def rows(self, unit: str = "h") -> list[dict[str, Any]]:
        """One mapping per policy, keys :attr:`columns`, times in ``unit`` (s, m, h, d)."""
        scale = _unit(unit)
        arrivals = weighted_arrivals(self.instance)
        out = []
        for run in self.runs:
            jct = np.asarray(_simulation(run.result).jct, dtype=float) / scale
            metrics = run.result.metrics or {}
            objective = run.result.objective
            total_jct = metrics.get("total_weighted_jct")
            bound = self.bounds.get(run.result.mode, (None, None))[0]
            least_jct = None if bound is None else bound - arrivals
            best = self.schedules.get(run.result.mode, (None, None))[0] if _basic(run) else None
            least = (
                {}
                if self.offline is None
                else {
                    "regret_least": (
                        regret_ratio(objective, best)
                        if objective is not None and best is not None
                        else None
                    ),
                    "regret_jct_least": (
                        regret_ratio(total_jct, best - arrivals)
                        if total_jct is not None and best is not None and best > arrivals
                        else None
                    ),
                }
            )
            row = {
                **least,
                "policy": run.label,
                "mode": run.result.mode,
                "mean_jct": float(jct.mean()),
                "p50_jct": float(np.percentile(jct, 50)),
                "p95_jct": float(np.percentile(jct, 95)),
                "p99_jct": float(np.percentile(jct, 99)),
                "makespan": _scaled(metrics.get("makespan"), scale),
                # the bound was checked against each run's objective (a bound above it
                # within the checker's tolerance is rounding)
                "regret": (
                    regret_ratio(objective, bound) if objective is not None and bound else None
                ),
                "regret_jct": (
                    regret_ratio(total_jct, least_jct)
                    if total_jct is not None and least_jct is not None and least_jct > 0
                    else None
                ),
                "cpu_s": run.cpu_s,
            }
            out.append({key: row[key] for key in self.columns})  # in table order
        return out

    def table(self, unit: str = "h") -> str:
        """The rows as a Markdown table, with a line on the workload and the bound above."""
        columns = self.columns
        head = [heading.format(unit=unit) for heading in columns.values()]
        arrivals, scale = weighted_arrivals(self.instance), _unit(unit)

        def end(value: float, relation: str, mode: str, source: str) -> str:
            """A bound or best schedule on Σ w_j C_j, and on Σ w_j JCT, with its source."""
            return (
                f"{_number(value / scale)} (Σ w_j JCT {relation} "
                f"{_number((value - arrivals) / scale)}; {mode} mode, {source}"
            )

        bounds = "; ".join(
            end(value, "≥", mode, source)
            + "".join(
                f"; {name}: {status}"
                for name, status in self.statuses.get(mode, {}).items()
                if status != "optimal"
            )
            + ")"
            for mode, (value, source) in sorted(self.bounds.items())
        )
        known = "; ".join(
            end(value, "≤", mode, source) + ")"
            for mode, (value, source) in sorted(self.schedules.items())
        )
        lines = [
            f"{self.instance.name}: {self.instance.n_jobs} jobs on {self.instance.n_gpus} GPUs; "
            + (
                f"regrets over the best lower bound on Σ w_j C_j ({unit}): {bounds}"
                if bounds
                else "no lower bound"
            )
            + (f"; best schedule known ({unit}): {known}" if known else "")
            + (
                f"; offline {self.offline}: "
                + ", ".join(f"{m} mode {s}" for m, s in sorted(self.offline_statuses.items()))
                if self.offline_statuses
                else ""
            )
            + ("" if self.checked else "; metrics streamed by the simulator, not checked"),
            "",
            "| " + " | ".join(head) + " |",
            "|" + "---|" * len(head),
        ]
        for row in self.rows(unit):
            cells = [row["policy"], row["mode"]] + [
                _number(row[k])
                if k not in _RATIOS or row[k] is None
                else ratio_text(row[k], up=k not in LEAST_COLUMNS)
                for k in list(columns)[2:]
            ]
            lines.append("| " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def to_dict(self, unit: str = "h") -> dict[str, Any]:
        """The comparison as plain JSON data (no NaN: a missing value is null); every time,
        Σ w_j C_j and its bounds included, in ``unit`` (each mode's bound as ``value``, on
        Σ w_j C_j, and ``weighted_jct``, on Σ w_j JCT: the value less Σ w_j a_j, with its
        ``statuses`` and its ``levels`` in the same form); with an offline method,
        ``offline`` (its label) and each mode's best checked schedule in ``schedules``, in the
        same form."""
        scale = _unit(unit)
        arrivals = weighted_arrivals(self.instance)

        def end(value: float, source: str | None = None) -> dict[str, Any]:
            """A bound or best schedule on Σ w_j C_j, and on Σ w_j JCT, with its source if
            given."""
            both = {"value": value / scale, "weighted_jct": (value - arrivals) / scale}
            return both if source is None else {**both, "source": source}

        return {
            "instance": self.instance.name,
            "jobs": self.instance.n_jobs,
            "gpus": self.instance.n_gpus,
            "unit": unit,
            "bounds": {
                mode: {
                    **end(value, source),
                    "statuses": dict(self.statuses.get(mode, {})),
                    "levels": {
                        name: end(found) for name, found in self.levels.get(mode, {}).items()
                    },
                }
                for mode, (value, source) in self.bounds.items()
            },
            "checked": self.checked,
            **(
                {}
                if self.offline is None
                else {
                    "offline": self.offline,
                    "offline_statuses": dict(self.offline_statuses),
                    "schedules": {
                        mode: end(value, source)
                        for mode, (value, source) in self.schedules.items()
                    },
                }
            ),
            "policies": [
                {
                    **row,
                    "method": run.policy,
                    "params": dict(run.params),
                    "objective": _scaled(run.result.objective, scale),
                }
                for row, run in zip(self.rows(unit), self.runs, strict=True)
            ],
        }

    def jcts_in(self, unit: str = "h") -> dict[str, list[float]]:
        """Each policy's JCTs in ``unit``, by label: what
        :func:`optsched.plot.plot_jct_cdf` draws (``unit=unit, log=True``)."""
        scale = _unit(unit)
        return {label: [v / scale for v in values] for label, values in self.jcts.items()}


def compare(
    instance: Instance,
    policies: Sequence[str | tuple[str, Mapping[str, str]]],
    *,
    mode: str | None = None,
    seed: int = 0,
    noise: float = 0.0,
    switch_cost: float = 0.0,
    record: bool = True,
    bound: str = "fluid",
    bound_time_limit: float | None = CAPACITY_TIME_LIMIT,
    progress: Callable[[str], None] | None = None,
    engine: str = "auto",
    offline: str | tuple[str, Mapping[str, str]] | None = None,
    offline_time_limit: float | None = OFFLINE_TIME_LIMIT,
) -> Comparison:
    """Simulate each of ``policies`` (``"hlas"``, ``"hlas:mapping=A"`` or (name, params)) on
    ``instance`` and compare them (module doc). Labels must differ. Each policy runs in
    ``mode`` when given (a policy without it is refused), else in the instance's mode or,
    when the policy has one mode only, in that one. ``progress(line)`` is told as each
    policy starts and ends. ``engine`` is each simulation's
    (:func:`~optsched.online.simulator.run_simulation`; ``compiled`` only when every policy
    has one). ``offline`` (a ``solve`` method, as a policy is given) solves the realised
    instance in each mode of the runs that it has, within ``offline_time_limit`` seconds
    per mode (None: the method's default time limit; module doc).

    Raises
    ------
    InputError
        No policy, a label given twice, an unknown policy, method or parameter, a policy
        without ``mode``, an offline method with none of the runs' modes (all before
        anything runs).
    """
    from optsched.online.run import simulate
    from optsched.registry import get_method

    specs = [
        (p, *parse_policy(p)) if isinstance(p, str) else (_label(*p), p[0], dict(p[1]))
        for p in policies
    ]
    if not specs:
        raise InputError("compare needs at least one policy")
    check_level(bound)
    check_time_limit(bound_time_limit, "--bound-time-limit")
    labels = [label for label, _, _ in specs]
    repeated = next((label for label in labels if labels.count(label) > 1), None)
    if repeated is not None:
        raise InputError(f"--policy {repeated!r} is given twice")
    modes = []
    for _, name, params in specs:  # bad input before the first (maybe long) simulation
        info = get_method(name, "simulate")
        own = mode or instance.mode
        if mode is None and own not in info.modes and len(info.modes) == 1:
            own = next(iter(info.modes))
        if mode is not None and mode not in info.modes:
            raise InputError(
                f"policy {name!r} has no {mode} mode (its modes: {', '.join(sorted(info.modes))}"
                "); leave the mode out to run each policy in its own"
            )
        info.check_mode(own)
        info.parse_options(params)
        modes.append(own)
    check_time_limit(offline_time_limit, "--offline-time-limit")
    search = None if offline is None else _offline_spec(offline, modes)
    for own in dict.fromkeys(modes):  # a job no GPUs can run in a mode: refused now
        if own != instance.mode:
            instance.with_mode(own)
    # the LP (and the Lagrangian bound) once per mode, after every run, not once per run
    heavy = bound in LP_LEVELS
    each = "fluid" if heavy else bound
    runs = []
    for i, ((label, name, params), own) in enumerate(zip(specs, modes, strict=True), 1):
        if progress is not None:
            progress(f"[{i}/{len(specs)}] {label} ...")
        cpu = time.process_time()
        result = simulate(
            instance,
            name,
            mode=own,
            params=params,
            seed=seed,
            noise=noise,
            switch_cost=switch_cost,
            record=record,
            bound=each,
            engine=engine,
        )
        runs.append(PolicyRun(label, name, params, result, time.process_time() - cpu))
        if progress is not None:
            progress(f"[{i}/{len(specs)}] {label}: mean JCT {_mean_jct(result):,.0f} s")
    # the offline schedules first: where better than every run's, they set the LP's deadlines
    solved: dict[str, Result[Any]] = {}
    offline_statuses: dict[str, str] = {}
    if search is not None:
        solved, offline_statuses = _offline_solves(
            search, runs, offline_time_limit, seed, progress
        )
    if heavy:
        runs = _with_mode_bound(runs, bound, bound_time_limit, progress, solved)
    bounds: dict[str, tuple[float, str]] = {}
    statuses: dict[str, dict[str, str]] = {}
    levels: dict[str, dict[str, float]] = {}
    for r in runs:  # a bound holds for the runs of its mode
        extra = r.result.extra
        if extra.get("regret_bound") is not None:
            found = (float(extra["regret_bound"]), str(extra["regret_source"]))
            if found >= bounds.get(r.result.mode, found):
                bounds[r.result.mode] = found
                statuses[r.result.mode] = {
                    key.removesuffix("_status").replace("_", " "): str(extra[key])
                    for key in _STATUSES
                    if key in extra
                }
                levels[r.result.mode] = bound_levels(extra)
    label = "" if search is None else search[0]
    schedules = {} if search is None else _best_schedules(runs, solved, label)
    for mode, result in solved.items():  # the method's bound, where it is higher
        if mode in bounds and result.bound is not None and result.bound > bounds[mode][0]:
            bounds[mode] = (result.bound, f"{label} offline")
    relaxed, gang = bounds.get("relaxed"), bounds.get("gang")
    if relaxed is not None and gang is not None and relaxed[0] > gang[0]:
        # a gang schedule is a relaxed one of the same objective: where the relaxed runs
        # bounded the same realised instance higher, that bound holds for the gang runs too
        instances = {
            r.result.mode: _simulation(r.result).instance
            for r in runs
            if r.result.extra.get("regret_bound") is not None
        }
        if instances["relaxed"].with_mode("gang") == instances["gang"]:
            bounds["gang"] = (relaxed[0], f"{relaxed[1]} of the relaxed runs")
            statuses["gang"] = statuses.get("relaxed", {})
            levels["gang"] = levels.get("relaxed", {})
    return Comparison(
        _simulation(runs[0].result).instance,
        tuple(runs),
        bounds,
        checked=all(r.result.extra.get("checked", True) for r in runs),
        statuses=statuses,
        levels=levels,
        offline=None if search is None else label,
        schedules=schedules,
        offline_statuses=offline_statuses,
    )


def _offline_spec(
    offline: str | tuple[str, Mapping[str, str]], modes: Sequence[str]
) -> tuple[str, str, dict[str, str], list[str]]:
    """(label, method, params, the runs' modes it has) of ``compare``'s offline method,
    checked before anything runs."""
    from optsched.registry import get_method

    name, params = (
        parse_policy(offline, "--offline")
        if isinstance(offline, str)
        else (offline[0], dict(offline[1]))
    )
    info = get_method(name, "solve")
    try:
        info.parse_options(params)
    except InputError as exc:
        raise InputError(f"--offline {_label(name, params)!r}: {exc}") from None
    own = [m for m in dict.fromkeys(modes) if m in info.modes]
    if not own:
        raise InputError(
            f"offline method {name!r} has no {' or '.join(dict.fromkeys(modes))} mode (its "
            f"modes: {', '.join(sorted(info.modes))})"
        )
    return _label(name, params), name, params, own


def _offline_solves(
    search: tuple[str, str, dict[str, str], list[str]],
    runs: Sequence[PolicyRun],
    time_limit: float | None,
    seed: int,
    progress: Callable[[str], None] | None,
) -> tuple[dict[str, Result[Any]], dict[str, str]]:
    """The offline method on the runs' realised instance (the basic model's: none where
    every run is a cluster policy's), in each of its modes, hinted with the mode's best
    checked run (a method that takes a hint, such as ``lns`` or ``cpsat``, starts there):
    per mode its checked Result, and how each mode ended (its status, ``interrupted``, or
    why it did not run). A Ctrl-C ends the offline work with the best schedule so far."""
    from optsched.solve import solve

    label, name, params, own = search
    basic = [run for run in runs if _basic(run)]
    if not basic:
        return {}, dict.fromkeys(own, "not run: no run of the basic model")
    realised = _simulation(basic[0].result).instance
    solved: dict[str, Result[Any]] = {}
    statuses = {
        mode: f"not run: {name} has no {mode} mode"
        for mode in sorted({run.result.mode for run in basic} - set(own))
    }
    for mode in own:
        if "interrupted" in statuses.values():
            statuses[mode] = "not run: interrupted"
            continue
        if progress is not None:
            progress(f"offline {label} ({mode} mode) ...")
        checked = [r.result for r in basic if r.result.mode == mode and _checked(r.result)]
        hint = min(checked, key=_objective).schedule if checked else None
        prefix = f"offline {label} ({mode} mode): "
        stream = None if progress is None else cast("TextIO", _Lines(progress, prefix))
        result = solve(
            realised,
            name,
            mode=mode,
            time_limit=time_limit,
            params=params,
            seed=seed,
            hint=hint,
            progress=stream,
        )
        statuses[mode] = "interrupted" if result.interrupted else result.status.value
        if result.objective is not None:
            solved[mode] = result
        if progress is not None:
            progress(
                f"offline {label} ({mode} mode): {statuses[mode]} in {result.runtime_s:.1f} s, "
                + (
                    "no schedule"
                    if result.objective is None
                    else f"Σ w_j C_j {result.objective:,.0f} s"
                )
            )
    return solved, statuses


def _best_schedules(
    runs: Sequence[PolicyRun], solved: Mapping[str, Result[Any]], label: str
) -> dict[str, tuple[float, str]]:
    """Per mode of the basic model's runs, the best checked schedule: the offline method's
    (``solved``) or a checked run's; a gang schedule is a relaxed one of the same objective,
    so relaxed mode takes the gang mode's where better."""
    basic = [run for run in runs if _basic(run)]
    found: dict[str, tuple[float, str]] = {}
    candidates = [(mode, _objective(r), f"{label} offline") for mode, r in solved.items()]
    candidates += [
        (run.result.mode, _objective(run.result), run.label)
        for run in basic
        if _checked(run.result)
    ]
    modes = {run.result.mode for run in basic}
    for mode, value, source in candidates:
        for into in {mode, "relaxed"} & modes:
            if into not in found or value < found[into][0]:
                found[into] = (value, source if into == mode else f"gang schedule of {source}")
    return found


class _Lines:
    """A text stream that hands each complete line to ``progress``, after ``prefix`` (a
    solve's progress lines, inside a comparison's)."""

    def __init__(self, progress: Callable[[str], None], prefix: str) -> None:
        self.progress, self.prefix, self.buffer = progress, prefix, ""

    def write(self, text: str) -> int:
        *lines, self.buffer = (self.buffer + text).split("\n")
        for line in lines:
            self.progress(self.prefix + line.strip())
        return len(text)

    def flush(self) -> None:
        pass


#: The columns that are regrets: printed rounded up (:func:`~optsched.regret.ratio_text`), the
#: ones the true regret is at least rounded down.
_RATIOS = ("regret", "regret_jct", *LEAST_COLUMNS)

#: The runs' fields that say how the level's LP and Lagrangian bound ended.
_STATUSES = ("capacity_status", "capacity_parts_status", "lagrangian_status")


def _with_mode_bound(
    runs: Sequence[PolicyRun],
    level: str,
    time_limit: float | None,
    progress: Callable[[str], None] | None,
    solved: Mapping[str, Result[Any]],
) -> list[PolicyRun]:
    """``runs`` with the regret of ``level`` (``capacity`` or ``lagrangian``,
    :func:`~optsched.regret.regret_bound`) in each run that has a bound (not a cluster
    policy's): one bound per mode, on the mode's realised instance (the same for every run
    of the mode: same seed, noise and switch cost), its deadlines from the least checked
    objective of the mode's runs and of its offline schedule (``solved[mode]``) and its grid
    up to that schedule's makespan (with none checked: no objective, the first run's
    makespan), within ``time_limit``: one LP instead of one per run. The least objective
    gives the tightest deadlines, but another schedule's grid can give a slightly different
    value. The bound holds for every schedule of the instance, so for every run of the
    mode."""
    from optsched.online.run import bound_end_line, bound_start_line, part_line, regret_fields
    from optsched.regret import regret_bound

    def report(k: int, parts: int, status: str, gain: float) -> None:
        assert progress is not None
        progress(part_line(k, parts, status, gain))

    out = list(runs)
    # the runs that carry a bound: not a cluster policy's (whose phases and placement
    # factors the bounds ignore; simulate gives them none)
    basic = [i for i, run in enumerate(runs) if _basic(run)]
    for mode in dict.fromkeys(runs[i].result.mode for i in basic):
        mine = [i for i in basic if runs[i].result.mode == mode]
        checked = [runs[i].result for i in mine if _checked(runs[i].result)]
        if mode in solved:
            checked.append(solved[mode])
        best = min(checked, key=_objective, default=None)
        instance = _simulation(runs[mine[0]].result).instance
        if progress is not None:
            progress(bound_start_line(level, mode))
        start = time.perf_counter()
        found = regret_bound(
            instance,
            level,
            objective=None if best is None else _objective(best),
            makespan=((best or runs[mine[0]].result).metrics or {}).get("makespan"),
            time_limit=time_limit,
            progress=report if progress is not None else None,
            schedule=None if best is None else best.schedule,
        )
        assert found is not None  # a level other than "none"
        took = time.perf_counter() - start
        if progress is not None:
            progress(bound_end_line(found, mode, took))
        for i in mine:
            result = runs[i].result
            fields = regret_fields(
                instance, found, _objective(result), result.metrics or {}, result.tolerance
            )
            fields["bound_seconds"] = took  # the mode's one bound, shared by its runs
            out[i] = replace(runs[i], result=replace(result, extra={**result.extra, **fields}))
    return out


def _basic(run: PolicyRun) -> bool:
    """Whether ``run`` is in the basic execution model, the one offline methods and bounds
    share (a cluster policy's has phases and placement factors; its runs say no
    ``clairvoyant``)."""
    return "clairvoyant" in run.result.extra


def _checked(result: Result[Any]) -> bool:
    """Whether a run's schedule went through the checker (not with ``record=False``)."""
    return result.tolerance is not None


def _objective(result: Result[Any]) -> float:
    assert result.objective is not None  # a simulation always has one
    return result.objective


def _label(name: str, params: Mapping[str, str]) -> str:
    return name + ("" if not params else ":" + ",".join(f"{k}={v}" for k, v in params.items()))


def _simulation(result: Result[Any]) -> Any:
    assert result.simulation is not None  # simulate always returns its simulation
    return result.simulation


def _mean_jct(result: Result[Any]) -> float:
    jct = _simulation(result).jct
    return math.fsum(jct) / len(jct) if jct else 0.0


def _unit(unit: str) -> float:
    if unit not in UNITS:
        raise InputError(f"unit must be one of {', '.join(UNITS)}, got {unit!r}")
    return UNITS[unit]


def _scaled(value: float | None, scale: float) -> float | None:
    return None if value is None else value / scale


def _number(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not math.isfinite(value):
        return "–"
    return f"{value:.4g}"
