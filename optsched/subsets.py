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
from dataclasses import replace

from optsched.errors import InputError
from optsched.instance import Instance
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
    if first is not None and (isinstance(first, bool) or first < 1):
        raise InputError(f"--first must be an integer >= 1, got {first!r}")
    if not (isinstance(load, int | float) and math.isfinite(load) and 0 < load <= MAX_VALUE):
        raise InputError(f"--load must be a finite number > 0, got {load!r}")
    jobs = sorted(instance.jobs, key=lambda job: job.arrival)  # stable: ties keep their order
    origin = jobs[0].arrival
    if window is not None:
        start, end = window
        if end is not None and end <= start:
            raise InputError(
                f"--window: its end ({end:g} s) must be after its start ({start:g} s)"
            )
        jobs = [
            job
            for job in jobs
            if job.arrival - origin >= start and (end is None or job.arrival - origin < end)
        ]
    if first is not None:
        jobs = jobs[:first]
    if not jobs:
        raise InputError(
            f"no job of {instance.name!r} is left: no job arrives in the window "
            f"(its {instance.n_jobs} jobs arrive over "
            f"{max(job.arrival for job in instance.jobs) - origin:g} s)"
            if window is not None
            else f"no job of {instance.name!r} is left"
        )
    if load != 1.0:
        base = jobs[0].arrival
        jobs = [replace(job, arrival=base + (job.arrival - base) / load) for job in jobs]
    return replace(instance, jobs=tuple(jobs))
