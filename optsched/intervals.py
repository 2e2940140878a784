"""Checking another simulator's schedule: a job-level interval log against an instance.

Round-based simulators (Gavel, Sia, Blox and most others) record which GPUs each job held
and when, not our rounds of tasks. :func:`check_intervals` checks such a log, and reports the
model's metrics from it, under the preemptive reading of our model (docs/model.md): while a
job holds K GPUs, it advances at 1 / (its round's compute + sync there, the slowest of the
GPUs) rounds per second, and it completes the moment it has advanced its rounds (a
round-based simulator may hold its GPUs to the end of the round).

The log (:func:`read_interval_log`, documented in docs/formats.md) is a CSV with the header
``job,gpus,start,end``: the job's id, the GPU ids it held separated by ``;``, and the
interval [start, end) in seconds. :func:`read_gavel_log` reads Gavel's scheduler log (its
``[Micro-task scheduled]``, ``[Micro-task succeeded]`` and ``[Micro-task failed]`` lines)
into the same intervals,
naming Gavel's worker ``w`` of type ``t`` ``T-r`` (``T`` the type upper-cased, ``r`` the
rank of ``w`` among that type's workers in the log) and its job ``j`` ``jJ`` (the names
optsched's trace reader gives).

Every job is read as holding its K GPUs together, whatever the instance's mode (other
simulators run data-parallel jobs that way). Violations (each names the job, the GPUs and the
interval): an unknown job or GPU; an
interval that ends before it starts; one before the job's arrival; a number of GPUs other
than the job's K; a GPU it cannot run on; a GPU or a job in two intervals at once; a job
that did not advance its rounds (within ``tolerance``, relative).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from optsched.errors import InputError
from optsched.fairness import fairness_metrics
from optsched.instance import Instance
from optsched.jsonfile import read_text
from optsched.metrics import schedule_metrics


@dataclass(frozen=True)
class Interval:
    """Job ``job`` held GPUs ``gpus`` during [start, end)."""

    job: str
    gpus: tuple[str, ...]
    start: float
    end: float


@dataclass(frozen=True)
class IntervalViolation:
    kind: str
    job: str
    message: str


@dataclass(frozen=True)
class IntervalReport:
    """The verdict on an interval log: its violations, and when feasible each job's
    completion (when its work reached its rounds), the objective Σ w_j C_j and the metrics of
    docs/model.md (fairness included), and each job's work done (rounds)."""

    violations: tuple[IntervalViolation, ...]
    completion: dict[str, float] | None = None
    objective: float | None = None
    metrics: dict[str, Any] | None = None
    work: dict[str, float] = field(default_factory=dict)

    @property
    def feasible(self) -> bool:
        return not self.violations

    def to_dict(self) -> dict[str, Any]:
        return {
            "feasible": self.feasible,
            "objective": self.objective,
            "metrics": self.metrics,
            "violations": [
                {"kind": v.kind, "job": v.job, "message": v.message} for v in self.violations
            ],
        }


def read_interval_log(path: str | Path) -> list[Interval]:
    """The intervals of a ``job,gpus,start,end`` CSV (module docstring).

    Raises
    ------
    InputError
        A missing header field, an empty GPU list, or a start or end that is not a finite
        number, naming the line.
    """
    text = read_text(path, "interval log")
    rows = csv.reader(io.StringIO(text))
    header = [name.strip() for name in next(rows, [])]
    if sorted(header) != ["end", "gpus", "job", "start"]:
        raise InputError(
            f"{path}: an interval log's header is job,gpus,start,end (in any order), "
            f"got {','.join(header) or 'nothing'}"
        )
    column = {name: i for i, name in enumerate(header)}
    out = []
    for line, fields in enumerate(rows, start=2):
        if not fields:
            continue
        if len(fields) != 4:
            raise InputError(f"{path}:{line}: 4 fields (job,gpus,start,end), got {len(fields)}")
        row = {name: fields[i].strip() for name, i in column.items()}
        gpus = tuple(g.strip() for g in row["gpus"].split(";") if g.strip())
        try:
            start, end = float(row["start"]), float(row["end"])
        except ValueError:
            raise InputError(f"{path}:{line}: start and end must be numbers") from None
        if not gpus or not (math.isfinite(start) and math.isfinite(end)):
            raise InputError(f"{path}:{line}: a GPU list and finite start and end are needed")
        out.append(Interval(str(row["job"]).strip(), gpus, start, end))
    return out


_GAVEL_LINE = re.compile(
    r"\[(?P<time>[0-9.eE+-]+)\] \[Micro-task (?P<event>scheduled|succeeded|failed)\]\s+"
    r"Job ID: (?P<job>\d+)(?:\s+Worker type: (?P<type>\S+)\s+Worker ID\(s\): "
    r"\[?(?P<ids>[\d, ]+))?"
)


def read_gavel_log(path: str | Path) -> list[Interval]:
    """The intervals of Gavel's scheduler log (plain or gzipped; module docstring): each
    micro-task from its ``scheduled`` to its ``succeeded`` line.

    Raises
    ------
    InputError
        No micro-task in the file, or one scheduled and never finished.
    """
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read the Gavel log: {exc.strerror or exc}") from None
    text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8", "replace")
    running: dict[tuple[str, tuple[int, ...]], tuple[str, float]] = {}
    spans: list[tuple[str, str, tuple[int, ...], float, float]] = []
    for m in _GAVEL_LINE.finditer(text):
        if m["event"] == "failed":  # the job's running micro-tasks held their GPUs till now
            for key in [k for k in running if k[0] == m["job"]]:
                kind, start = running.pop(key)
                spans.append((m["job"], kind, key[1], start, float(m["time"])))
            continue
        ids = tuple(int(i) for i in (m["ids"] or "").replace(",", " ").split())
        key = (m["job"], ids)
        if m["event"] == "scheduled":
            running[key] = (m["type"], float(m["time"]))
        elif key in running:
            kind, start = running.pop(key)
            spans.append((m["job"], kind, ids, start, float(m["time"])))
    if running:
        job = next(iter(running))[0]
        raise InputError(
            f"{path}: a micro-task of job j{job} was scheduled and never finished (a "
            "truncated log?)"
        )
    if not spans:
        raise InputError(f"{path}: no Gavel micro-task found")
    workers: dict[str, set[int]] = defaultdict(set)
    for _, kind, ids, _, _ in spans:
        workers[kind].update(ids)
    rank = {
        (kind, w): f"{kind.upper()}-{r}"
        for kind, ids in workers.items()
        for r, w in enumerate(sorted(ids))
    }
    return [
        Interval(f"j{job}", tuple(rank[kind, w] for w in ids), start, end)
        for job, kind, ids, start, end in spans
    ]


def check_intervals(
    instance: Instance, intervals: Sequence[Interval], *, tolerance: float = 1e-9
) -> IntervalReport:
    """Check ``intervals`` against ``instance`` (module docstring); ``tolerance`` is the
    relative shortfall of a job's work accepted (a simulator that sizes jobs in steps
    rounds them: 0.02 lets Gavel's logs through optsched's trace mapping, whose rounds
    hold the trace's steps within 1 %)."""
    out: list[IntervalViolation] = []
    gpu_index = {gpu.id: g for g, gpu in enumerate(instance.gpus)}
    by_gpu: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    by_job: dict[str, list[Interval]] = defaultdict(list)
    paces: dict[Interval, float] = {}
    work: dict[str, float] = defaultdict(float)
    for iv in intervals:
        where = f"job {iv.job} on {';'.join(iv.gpus)} [{iv.start:g}, {iv.end:g})"
        j = instance.job_index.get(iv.job)
        if j is None:
            out.append(IntervalViolation("unknown-job", iv.job, f"{where}: no such job"))
            continue
        job = instance.jobs[j]
        unknown = [g for g in iv.gpus if g not in gpu_index]
        if unknown:
            out.append(IntervalViolation("unknown-gpu", iv.job, f"{where}: no GPU {unknown[0]}"))
            continue
        if not iv.end > iv.start:
            out.append(IntervalViolation("empty", iv.job, f"{where}: no length (end ≤ start)"))
            continue
        if iv.start < job.arrival:
            out.append(
                IntervalViolation(
                    "before-arrival", iv.job, f"{where}: before its arrival {job.arrival:g}"
                )
            )
        if len(set(iv.gpus)) != job.tasks_per_round:
            out.append(
                IntervalViolation(
                    "gpu-count",
                    iv.job,
                    f"{where}: {len(set(iv.gpus))} GPUs, the job runs on {job.tasks_per_round}",
                )
            )
            continue
        compute, sync = instance.row(j)
        pace = max(float(compute[gpu_index[g]] + sync[gpu_index[g]]) for g in iv.gpus)
        if not math.isfinite(pace):
            out.append(IntervalViolation("ineligible", iv.job, f"{where}: it cannot run there"))
            continue
        work[iv.job] += (iv.end - iv.start) / pace
        by_job[iv.job].append(iv)
        paces[iv] = pace
        for g in iv.gpus:
            by_gpu[g].append((iv.start, iv.end, iv.job))
    for g, held in by_gpu.items():
        held.sort()
        busy_until, holder = -math.inf, ""
        for start, end, who in held:  # each interval against the longest one before it
            if start < busy_until:
                out.append(
                    IntervalViolation(
                        "gpu-overlap",
                        who,
                        f"GPU {g}: job {holder} holds it until {busy_until:g}, job {who} "
                        f"from {start:g}",
                    )
                )
            if end > busy_until:
                busy_until, holder = end, who
    for name, ivs in by_job.items():
        ivs.sort(key=lambda iv: iv.start)
        for a, b in pairwise(ivs):
            if b.start < a.end:
                out.append(
                    IntervalViolation(
                        "job-overlap", name, f"job {name}: two intervals at once from {b.start:g}"
                    )
                )
    for job in instance.jobs:
        done = work.get(job.id, 0.0)
        if done < job.rounds * (1 - tolerance):
            out.append(
                IntervalViolation(
                    "incomplete", job.id, f"job {job.id}: {done:.6g} of its {job.rounds} rounds"
                )
            )
    if out:
        return IntervalReport(tuple(out), work=dict(work))
    completion = {job.id: _completion(job.rounds, by_job[job.id], paces) for job in instance.jobs}
    span = max(completion.values())  # GPUs held past the last completion count until it
    metrics = schedule_metrics(
        completion,
        {job.id: job.arrival for job in instance.jobs},
        {job.id: job.weight for job in instance.jobs},
        {
            gpu.id: [(a, min(b, span)) for a, b, _ in by_gpu.get(gpu.id, []) if a < span]
            for gpu in instance.gpus
        },
    )
    metrics.update(fairness_metrics(instance, completion))
    objective = sum(job.weight * completion[job.id] for job in instance.jobs)
    return IntervalReport((), completion, objective, metrics, dict(work))


def _completion(rounds: int, intervals: list[Interval], paces: dict[Interval, float]) -> float:
    """When the job's work reached its rounds: inside the interval where it did (a round-based
    simulator keeps the GPUs to the end of its round), else (short within the tolerance) the
    end of its last interval."""
    done = 0.0
    for iv in intervals:  # by start
        gained = (iv.end - iv.start) / paces[iv]
        if done + gained >= rounds:
            return min(iv.end, iv.start + (rounds - done) * paces[iv])
        done += gained
    return intervals[-1].end
