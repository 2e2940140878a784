"""Parts of a workload, and its load scaled: what a researcher runs instead of a whole trace.

:func:`select_jobs` keeps the jobs of an instance that arrive in a time window and/or the
first N of them, and scales the arrival rate; :func:`parse_duration` reads the window's
times as the command line takes them (``36h``, ``2d``). A smaller cluster is the other way
to load a trace: :func:`optsched.traces.parse_cluster` scales every GPU count.

Guarantees: the jobs kept are unchanged (rounds, tasks, times, weights, workloads: a trace
mapped once and then cut gives each job the workload the whole trace gave it), in arrival
order; only arrivals move, and only when the load is scaled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from optsched.errors import InputError
from optsched.instance import Instance, Job
from optsched.limits import MAX_VALUE

#: Seconds per unit of :func:`parse_duration`.
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, option: str = "--window") -> float:
    """Seconds of ``text``: a number with an optional unit ``s`` (default), ``m``, ``h`` or
    ``d`` (``90``, ``36h``, ``2.5d``); an InputError naming ``option`` otherwise."""
    body = text.strip()
    scale = UNITS.get(body[-1:].lower()) if body else None
    number = body[:-1] if scale is not None else body
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise InputError(
            f"{option}: expected a time such as 90, 36h or 2d (units s, m, h, d), got {text!r}"
        ) from None
    if not math.isfinite(value) or not 0 <= value <= MAX_VALUE:
        raise InputError(f"{option}: a time must be in [0, {MAX_VALUE:g}] s, got {text!r}")
    return value


def parse_window(text: str) -> tuple[float, float | None]:
    """``START:END`` (either may be empty: from the first arrival, to the last) as seconds
    after the first arrival, for ``--window``."""
    start, sep, end = text.partition(":")
    if not sep:
        raise InputError(f"--window: expected START:END (e.g. 2d:3d or :36h), got {text!r}")
    return (
        parse_duration(start) if start.strip() else 0.0,
        parse_duration(end) if end.strip() else None,
    )


def select_jobs(
    instance: Instance,
    *,
    first: int | None = None,
    window: tuple[float, float | None] | None = None,
    load: float = 1.0,
) -> Instance:
    """The jobs of ``instance`` arriving in ``window`` = (start, end) seconds after its first
    arrival (end None: to the last; [start, end)), then the ``first`` of them by arrival, with
    the arrival rate multiplied by ``load`` (each gap between arrivals divided by it: 2
    brings twice the jobs per hour; the first kept arrival stays where it is).

    Raises
    ------
    InputError
        ``first`` < 1, a window whose end is not after its start, a ``load`` that is not a
        finite number > 0, or a selection that keeps no job.
    """
    jobs = selected_jobs(instance.jobs, instance.name, first=first, window=window, load=load)
    return replace(instance, jobs=jobs)


def selected_jobs(
    jobs: Sequence[Job],
    name: str,
    *,
    first: int | None = None,
    window: tuple[float, float | None] | None = None,
    load: float = 1.0,
) -> tuple[Job, ...]:
    """The jobs :func:`select_jobs` keeps of ``jobs`` (those of the workload ``name``, which
    errors name), before any instance holds them: a trace mapped in gang mode is cut before
    its jobs are checked against the cluster, so a job outside the cut is never refused."""
    if first is not None and (isinstance(first, bool) or not isinstance(first, int) or first < 1):
        raise InputError(f"--first must be an integer >= 1, got {first!r}")
    if not (isinstance(load, int | float) and math.isfinite(load) and 0 < load <= MAX_VALUE):
        raise InputError(f"--load must be a finite number > 0, got {load!r}")
    if window is not None and not (
        isinstance(window, tuple | list)
        and len(window) == 2
        and isinstance(window[0], int | float)
        and (window[1] is None or isinstance(window[1], int | float))
    ):
        raise InputError(
            f"window must be (start, end) in seconds after the first arrival (end None: to the "
            f"last; parse_window reads '2d:3d'), got {window!r}"
        )
    if not jobs:
        raise InputError(f"no job of {name!r} to select from")
    kept = sorted(jobs, key=lambda job: job.arrival)  # stable: ties keep their order
    origin = kept[0].arrival
    if window is not None:
        start, end = window
        if end is not None and end <= start:
            raise InputError(
                f"--window: its end ({end:g} s) must be after its start ({start:g} s)"
            )
        kept = [
            job
            for job in kept
            if job.arrival - origin >= start and (end is None or job.arrival - origin < end)
        ]
    if first is not None:
        kept = kept[:first]
    if not kept:
        raise InputError(
            f"no job of {name!r} is left: no job arrives in the window (its {len(jobs)} jobs "
            f"arrive over {max(job.arrival for job in jobs) - origin:g} s)"
            if window is not None
            else f"no job of {name!r} is left"
        )
    if load != 1.0:
        base = kept[0].arrival
        kept = [replace(job, arrival=base + (job.arrival - base) / load) for job in kept]
    return tuple(kept)
