"""Job traces of peer systems, read into optsched instances.

Readers (each returns :class:`TraceJob` records, arrivals shifted so the first is 0):

- :func:`read_gavel_trace` — Gavel's 10-field TSV (``job_type, command, working_dir,
  num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight, SLO,
  arrival_time``) and its older 7-field per-VC msr traces (``job_type, command,
  num_steps_arg, needs_data_dir, total_steps, arrival_time, scale_factor``), told apart by
  the number of fields;
- :func:`read_tiresias_csv` — Tiresias' ``job_id,num_gpu,submit_time,iterations,model_name,
  duration,interval``;
- :func:`read_philly_csv` — Pollux's ``timestamp,duration,num_gpus,gpu_time,cluster``.

:func:`trace_instance` maps the records onto a cluster with one documented rule
(:class:`TraceMapping`): a task is one worker's share of ``quantum`` seconds of work on the
reference GPU type, so

- step traces (Gavel, whose job types are catalog workloads): rounds R and steps per task
  i from :func:`split_steps`: R close to total_steps × seconds per step on the reference
  type / quantum, and R × i within 1 % of total_steps for every job, at any quantum (the
  earlier rule, i = round(quantum / step), R = ceil(steps / i), added up to 51 % work to
  short jobs at 3,600 s quanta). A job on K > 1 GPUs runs Gavel's catalog workload
  ``"<job type> (scale factor K)"``: a step is one step of the whole K-GPU job at Gavel's
  distributed throughput (synchronisation included), and each of the K tasks of a round
  takes i such steps; K without a profile uses the largest profiled scale factor k < K,
  scaled linearly by k / K (marked in the job's meta);
- duration traces (Tiresias, Philly: durations measured on K GPUs of the reference type):
  rounds R = max(1, round(duration / quantum)), compute on the reference type = duration / R,
  on type t × (catalog seconds of the job's workload on t / on the reference type); the
  workload is drawn (seeded) from ``workloads`` as Gavel does for Philly jobs.

K = the trace's GPU count (scale factor), weight = the trace's priority (1 when absent), sync 0
(no trace records it). Jobs that cannot run (no duration, no GPU, no step) are skipped and
counted.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import numpy as np

from optsched.cluster_model import ClusterProfile, ClusterSpec, spread_patterns
from optsched.errors import InputError
from optsched.instance import GPU, Instance, Job
from optsched.jsonfile import read_text
from optsched.limits import MAX_FACTOR, MAX_TASKS, MAX_VALUE
from optsched.subsets import select_jobs as select_jobs  # cutting a mapped trace
from optsched.subsets import selected_jobs
from optsched.workloads import (
    Catalog,
    Workload,
    canonical_gpu_type,
    default_catalog,
    gavel_workload_name,
)

#: Hare's eight workloads: the default pool for duration-only traces.
DEFAULT_WORKLOADS = (
    "Hare/VGG-19",
    "Hare/ResNet-50",
    "Hare/Inception-V3",
    "Hare/BERT-base",
    "Hare/Transformer",
    "Hare/DeepSpeech",
    "Hare/FastGCN",
    "Hare/GraphSAGE",
)


@dataclass(frozen=True)
class TraceJob:
    """One job of a trace: steps (with a catalog workload) or a duration in seconds."""

    id: str
    arrival: float
    gpus: int
    weight: float = 1.0
    workload: str | None = None
    steps: int | None = None
    duration: float | None = None


@dataclass(frozen=True)
class Trace:
    """Records read from a file, and how many lines were skipped (and why, first one)."""

    name: str
    jobs: tuple[TraceJob, ...]
    skipped: int = 0
    first_skip: str | None = None


def _shifted(name: str, jobs: list[TraceJob], skipped: int, why: str | None) -> Trace:
    if not jobs:
        raise InputError(f"trace {name!r}: no usable job ({skipped} skipped; {why})")
    jobs.sort(key=lambda job: job.arrival)
    first = jobs[0].arrival
    return Trace(
        name,
        tuple(
            TraceJob(j.id, j.arrival - first, j.gpus, j.weight, j.workload, j.steps, j.duration)
            for j in jobs
        ),
        skipped,
        why,
    )


#: Most steps a step job may have: :data:`MAX_TASKS` rounds of :data:`MAX_FACTOR` steps.
MAX_STEPS = MAX_TASKS * int(MAX_FACTOR)


def _number(text: str, what: str, where: str, high: float = MAX_VALUE) -> float:
    """``text`` as a finite number of magnitude at most ``high``."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}: {what} must be a number, got {text!r}") from None
    if not (math.isfinite(value) and abs(value) <= high):
        raise InputError(
            f"{where}: {what} must be a finite number of magnitude at most {high:g}, got {text!r}"
        )
    return value


def _gpus(text: str, what: str, where: str) -> int:
    """A job's GPU count (scale factor), at most :data:`MAX_TASKS`: a round of more tasks
    than an instance holds is refused as it is read."""
    count = int(_number(text, what, where, math.inf))
    if count > MAX_TASKS:
        raise InputError(
            f"{where}: {what} must be at most {MAX_TASKS:,} (GPUs of one job; "
            f"an instance holds at most {MAX_TASKS:,} tasks), got {text!r}"
        )
    return count


def read_gavel_trace(path: str | Path) -> Trace:
    """Read a Gavel trace (10-field or 7-field TSV, see the module docstring)."""
    path = Path(path)
    jobs, skipped, why = [], 0, None
    for n, (line_no, line) in enumerate(_lines(path), 1):
        where = f"{path.name}:{line_no}"
        fields = line.split("\t")
        if len(fields) == 10:
            job_type, steps, scale, weight, arrival = (
                fields[0],
                fields[5],
                fields[6],
                fields[7],
                fields[9],
            )
        elif len(fields) == 7:
            job_type, steps, arrival, scale, weight = (
                fields[0],
                fields[4],
                fields[5],
                fields[6],
                "1",
            )
        else:
            raise InputError(
                f"{where}: a Gavel trace line has 10 or 7 tab-separated fields, got {len(fields)}"
            )
        k, total = (
            _gpus(scale, "scale_factor", where),
            int(_number(steps, "steps", where, MAX_STEPS)),
        )
        if k < 1 or total < 1:
            skipped += 1
            why = why or f"{where}: scale factor {k}, {total} steps"
            continue
        jobs.append(
            TraceJob(
                f"j{n - 1}",
                _number(arrival, "arrival", where),
                k,
                _number(weight, "priority_weight", where),
                job_type.strip(),
                steps=total,
            )
        )
    return _shifted(path.stem, jobs, skipped, why)


def _duration_trace(
    path: Path,
    gpus: str,
    arrival: Callable[[dict[str, str], str], float],
    job_id: Callable[[dict[str, str], int], str],
) -> Trace:
    """A CSV of jobs with a GPU count column ``gpus``, ``duration`` and an arrival."""
    jobs, skipped, why = [], 0, None
    for n, (line_no, row) in enumerate(_csv(path, (gpus, "duration")), 2):
        where = f"{path.name}:{line_no}"
        k = _gpus(row[gpus], gpus, where)
        duration = _number(row["duration"], "duration", where)
        if k < 1 or duration <= 0:
            skipped += 1
            why = why or f"{where}: {k} GPUs, duration {duration}"
            continue
        jobs.append(TraceJob(job_id(row, n), arrival(row, where), k, duration=duration))
    return _shifted(path.stem, jobs, skipped, why)


def read_tiresias_csv(path: str | Path) -> Trace:
    """Read a Tiresias job CSV (``job_id,num_gpu,submit_time,...,duration,...``)."""
    return _duration_trace(
        Path(path),
        "num_gpu",
        lambda row, where: _number(_column(row, "submit_time", where), "submit_time", where),
        lambda row, n: f"j{_column(row, 'job_id', str(n))}",
    )


def read_philly_csv(path: str | Path) -> Trace:
    """Read Pollux's per-job Philly summary (``timestamp,duration,num_gpus,...``)."""

    def arrival(row: dict[str, str], where: str) -> float:
        stamp = _column(row, "timestamp", where)
        try:
            return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
        except ValueError:
            raise InputError(f"{where}: timestamp {stamp!r} is not a date") from None

    return _duration_trace(Path(path), "num_gpus", arrival, lambda row, n: f"j{n - 2}")


def _column(row: dict[str, str], name: str, where: str) -> str:
    value = row.get(name)
    if value is None:
        raise InputError(f"{where}: missing column {name!r}")
    return value


def read_trace(path: str | Path, kind: str = "auto") -> Trace:
    """Read a trace of ``kind`` gavel | tiresias | philly, or guess it from the file."""
    path = Path(path)
    if kind == "auto":
        head = next((line for _, line in _lines(path)), "")
        if "\t" in head:
            kind = "gavel"
        elif head.startswith("job_id,"):
            kind = "tiresias"
        elif head.startswith("timestamp,"):
            kind = "philly"
        else:
            raise InputError(f"{path}: not a Gavel, Tiresias or Philly trace")
    readers = {"gavel": read_gavel_trace, "tiresias": read_tiresias_csv, "philly": read_philly_csv}
    if kind not in readers:
        raise InputError(f"trace kind must be auto or one of {sorted(readers)}, got {kind!r}")
    return readers[kind](path)


def _lines(path: Path) -> list[tuple[int, str]]:
    """The non-blank lines of a trace, with their line numbers."""
    lines = read_text(path, "trace").split("\n")
    return [(n, line.rstrip("\r")) for n, line in enumerate(lines, 1) if line.strip()]


def _csv(path: Path, needed: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """The rows of a CSV trace (column → text), with the line each starts on; malformed CSV,
    a row with more or fewer fields than the header, or a missing column is an InputError
    naming the file and the line."""
    reader = csv.reader(io.StringIO(read_text(path, "trace"), newline=""), strict=True)
    header: list[str] | None = None
    rows = []
    line = 1
    try:
        for fields in reader:
            if any(field.strip() for field in fields):  # not a blank line
                if header is None:
                    header = fields
                elif len(fields) != len(header):
                    raise InputError(
                        f"{path.name}:{line}: {len(fields)} fields, but the "
                        f"header has {len(header)}"
                    )
                else:
                    rows.append((line, dict(zip(header, fields, strict=True))))
            line = reader.line_num + 1
    except csv.Error as exc:
        raise InputError(f"{path.name}:{line}: malformed CSV: {exc}") from None
    missing = [c for c in needed if header is not None and c not in header]
    if not rows or missing:
        raise InputError(
            f"{path}: expected CSV columns {', '.join(needed)}"
            + (f" (missing {', '.join(missing)})" if missing else " and rows")
        )
    return rows


#: Most GPUs a ``--cluster`` may list.
MAX_CLUSTER_GPUS = 1_000_000


def parse_cluster(
    spec: str, gpus_per_host: int | None = None, scale: float = 1.0
) -> tuple[GPU, ...]:
    """GPUs from ``"V100:85,T4:43"`` (ids ``V100-0``, …, in the order given); at most
    :data:`MAX_CLUSTER_GPUS` in all. With ``gpus_per_host``, each type's GPUs sit on hosts
    of that many (``V100-h0``, …; the last host of a type may hold fewer). ``scale``
    multiplies every count (rounded, at least 1: 0.1 makes a tenth of the cluster)."""
    if gpus_per_host is not None and not 1 <= gpus_per_host <= MAX_CLUSTER_GPUS:
        raise InputError(f"--gpus-per-host must be a positive integer, got {gpus_per_host!r}")
    if not (isinstance(scale, int | float) and math.isfinite(scale) and 0 < scale <= 1e6):
        raise InputError(f"--cluster-scale must be a number in (0, 1e6], got {scale!r}")
    counts: dict[str, int] = {}
    for part in spec.split(","):
        name, _, count = part.strip().partition(":")
        try:
            n = int(count)
        except ValueError:
            raise InputError(f"--cluster: expected TYPE:COUNT, got {part.strip()!r}") from None
        if not name or n < 1:
            raise InputError(f"--cluster: expected TYPE:COUNT with COUNT >= 1, got {part!r}")
        gpu_type = canonical_gpu_type(name)
        if gpu_type in counts:
            raise InputError(f"--cluster lists GPU type {gpu_type!r} twice")
        counts[gpu_type] = n if scale == 1.0 else max(1, round(n * scale))
        if sum(counts.values()) > MAX_CLUSTER_GPUS:
            raise InputError(f"--cluster {spec!r}: more than {MAX_CLUSTER_GPUS:,} GPUs")
    return tuple(
        GPU(f"{t}-{i}", t, host=None if gpus_per_host is None else f"{t}-h{i // gpus_per_host}")
        for t, n in counts.items()
        for i in range(n)
    )


@dataclass(frozen=True)
class TraceMapping:
    """How trace jobs become rounds of tasks (see the module docstring)."""

    quantum: float = 3600.0
    reference_type: str = "K80"
    workloads: tuple[str, ...] = DEFAULT_WORKLOADS
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.quantum <= MAX_VALUE:
            raise InputError(
                f"quantum (--quantum) must be in (0, {MAX_VALUE:g}] s, got {self.quantum!r}"
            )
        if not self.workloads:
            raise InputError("the workload pool is empty")


def trace_instance(
    trace: Trace,
    gpus: Sequence[GPU],
    mapping: TraceMapping | None = None,
    *,
    mode: str = "relaxed",
    catalog: Catalog | None = None,
    space_sharing: bool = False,
    select: Callable[[Sequence[Job]], Sequence[Job]] | None = None,
) -> Instance:
    """The instance of ``trace`` on ``gpus`` under ``mapping`` (module docstring), with
    ``space_sharing`` (gang mode) its jobs' GPUs shared at their co-location rates, and of the
    jobs ``select`` keeps of the mapped ones (default: all), so that only those are checked
    against the cluster."""
    mapping = mapping or TraceMapping()
    catalog = catalog or default_catalog()
    ref = canonical_gpu_type(mapping.reference_type)
    types = sorted({g.type for g in gpus})
    rng = np.random.default_rng(mapping.seed)
    pool = [catalog[w] for w in mapping.workloads]
    for w in pool:
        if ref not in w.cells:
            raise InputError(f"workload {w.name!r} has no {ref} profile (reference type)")
    profiled = {t for w in catalog.workloads.values() for t in w.cells}
    unknown = [t for t in types if t not in profiled]
    if unknown:
        raise InputError(
            f"--cluster: no workload of the catalog has a profile for GPU type "
            f"{unknown[0]!r} (profiled: {', '.join(sorted(profiled))})"
        )
    jobs = []
    tasks = 0
    hosts = mode == "gang" and all(g.host is not None for g in gpus)
    for tj in trace.jobs:
        if tj.steps is not None:
            jobs.append(_step_job(tj, catalog, ref, types, mapping, hosts))
            tasks = _count(tasks, jobs[-1].rounds * tj.gpus, mapping)
            continue
        assert tj.duration is not None
        w = pool[int(rng.integers(len(pool)))]
        rounds = max(1, round(tj.duration / mapping.quantum))
        tasks = _count(tasks, rounds * tj.gpus, mapping)
        base = tj.duration / rounds / w.cells[ref].seconds
        compute = {t: base * w.cells[t].seconds for t in types if t in w.cells}
        if not compute:
            raise InputError(
                f"trace job {tj.id}: its workload {w.name!r} has no profile for "
                f"the --cluster types {', '.join(types)}"
            )
        jobs.append(
            Job(
                id=tj.id,
                arrival=tj.arrival,
                weight=tj.weight,
                rounds=rounds,
                tasks_per_round=tj.gpus,
                compute=compute,
                meta={"workload": w.name, "duration": tj.duration},
            )
        )
    return Instance(
        trace.name,
        tuple(jobs if select is None else select(jobs)),
        tuple(gpus),
        mode=mode,
        catalog=catalog,
        cluster=ClusterSpec(space_sharing=space_sharing),
    )


#: Largest relative difference between a step job's R × i and its trace steps.
STEP_TOLERANCE = 0.01


def split_steps(steps: int, step_seconds: float, quantum: float) -> tuple[int, int]:
    """Rounds R ≥ 1 and steps per task i ≥ 1 for a job of ``steps`` steps of
    ``step_seconds`` each (reference type) and tasks of about ``quantum`` seconds.

    Guarantee: |R × i − steps| ≤ :data:`STEP_TOLERANCE` × steps (tested for any input). R is
    the target round(steps × step_seconds / quantum) (at least 1) when that keeps the
    error within tolerance: always when a task holds ≥ 50 steps, since rounding i = steps /
    R costs at most R / 2 steps; otherwise i is the target and R = round(steps / i), which
    costs at most i / 2 steps (fine when R ≥ 50); jobs too small for either (under 2,500
    steps) take the R nearest the target, in ratio, whose rounding error is within
    tolerance (R = steps, i = 1 is exact, so one exists).
    """
    if steps < 1:
        raise InputError(f"a step job needs at least one step, got {steps}")
    target = max(1, min(steps, round(steps * step_seconds / quantum)))

    def error(r: int) -> float:
        return abs(r * max(1, round(steps / r)) - steps)

    tol = STEP_TOLERANCE * steps
    if error(target) <= tol:
        return target, max(1, round(steps / target))
    iters = max(1, round(steps / target))
    rounds = max(1, round(steps / iters))
    if abs(rounds * iters - steps) <= tol:
        return rounds, iters
    best = min(
        (r for r in range(1, steps + 1) if error(r) <= tol),
        key=lambda r: (abs(math.log(r / target)), r),
    )
    return best, max(1, round(steps / best))


def _step_job(
    tj: TraceJob,
    catalog: Catalog,
    ref: str,
    types: Sequence[str],
    mapping: TraceMapping,
    hosts: bool = False,
) -> Job:
    """A Gavel step job (module docstring): its K-GPU workload and :func:`split_steps`; on
    ``hosts`` (gang mode), its spread factors (:func:`spread_factors`)."""
    assert tj.steps is not None
    name = gavel_workload_name(tj.workload or "", tj.gpus)
    scale = tj.gpus
    if name not in catalog and tj.gpus > 1:
        profiled = [
            k
            for k in range(tj.gpus - 1, 0, -1)
            if gavel_workload_name(tj.workload or "", k) in catalog
        ]
        if profiled:
            scale = profiled[0]
    w = catalog[gavel_workload_name(tj.workload or "", scale)]
    if ref not in w.cells:
        raise InputError(
            f"trace job {tj.id}: workload {w.name!r} has no {ref} profile (reference type)"
        )
    factor = scale / tj.gpus  # step time: linear scaling from k to K GPUs
    rounds, iters = split_steps(tj.steps, w.cells[ref].seconds * factor, mapping.quantum)
    if scale == tj.gpus:
        factors = spread_factors(w, tj.gpus, types) if hosts else {}
        return Job(
            id=tj.id,
            arrival=tj.arrival,
            weight=tj.weight,
            rounds=rounds,
            tasks_per_round=tj.gpus,
            workload=w.name,
            iters_per_task=iters,
            cluster=ClusterProfile(placement_factor=factors) if factors else None,
        )
    compute = {t: iters * w.cells[t].seconds * factor for t in types if t in w.cells}
    if not compute:
        raise InputError(
            f"trace job {tj.id}: its workload {w.name!r} has no profile for "
            f"the --cluster types {', '.join(types)}"
        )
    return Job(
        id=tj.id,
        arrival=tj.arrival,
        weight=tj.weight,
        rounds=rounds,
        tasks_per_round=tj.gpus,
        compute=compute,
        meta={
            "workload": w.name,
            "steps": tj.steps,
            "iters_per_task": iters,
            "throughput": f"scale factor {scale} scaled linearly to {tj.gpus}",
        },
    )


def spread_factors(workload: Workload, k: int, types: Sequence[str]) -> dict[str, float]:
    """A K-GPU workload's placement factors where it has spread throughputs: on each type,
    ``pattern@TYPE`` = its spread over its consolidated seconds per step, for every worker
    pattern on two or more hosts (Gavel measured one unconsolidated throughput, whatever
    the split). A type without a spread cell (Gavel's 0: not measured) gets no factor: a
    spread round there takes the consolidated time, an assumption."""
    out = {}
    for t in types:
        if t in workload.spread and t in workload.cells:
            factor = workload.spread[t].seconds / workload.cells[t].seconds
            for pattern in spread_patterns(k):
                out[f"{pattern}@{t}"] = factor
    return out


def _count(tasks: int, more: int, mapping: TraceMapping) -> int:
    """Running task count of a mapped trace; refuses (naming --quantum) more than an
    instance can hold."""
    if tasks + more > MAX_TASKS:
        raise InputError(
            f"--quantum {mapping.quantum:g}: the trace maps to more than "
            f"{MAX_TASKS:,} tasks; use a larger quantum"
        )
    return tasks + more


def load_workload(
    path: str | Path,
    *,
    cluster: str | Sequence[GPU] | None = None,
    trace_format: str = "auto",
    mapping: TraceMapping | None = None,
    mode: str | None = None,
    gpus_per_host: int | None = None,
    space_sharing: bool = False,
    first: int | None = None,
    window: tuple[float, float | None] | None = None,
    load: float = 1.0,
    cluster_scale: float = 1.0,
) -> tuple[Instance, Trace | None]:
    """What ``optsched simulate`` runs: an instance file (``.json``), or a trace (any other
    file, read by :func:`read_trace` in ``trace_format``) mapped onto ``cluster`` (GPUs, or
    ``TYPE:COUNT,...`` as :func:`parse_cluster` reads it, on hosts of ``gpus_per_host``,
    every count × ``cluster_scale``) by ``mapping``. ``mode`` (default: the instance's,
    ``relaxed`` for a trace) sets the execution mode; ``space_sharing`` (gang mode) lets the
    trace's single-GPU jobs share a GPU at their workloads' co-location rates. ``first``,
    ``window`` and ``load`` cut the jobs and scale their arrival rate
    (:func:`optsched.subsets.select_jobs`, after the whole trace is mapped, so each job keeps
    its workload, and before the jobs are checked against the cluster, so a job outside the
    cut that gang mode could not run is not refused). Returns the instance and the trace it
    came from (None for an instance file).

    Raises
    ------
    InputError
        A cluster given with an instance file, or missing for a trace; anything the readers
        refuse.
    """
    from optsched.io import in_mode, load_instance

    whole = first is None and window is None and load == 1.0
    if str(path).endswith(".json"):
        if cluster or gpus_per_host is not None or space_sharing or cluster_scale != 1.0:
            raise InputError(
                "--cluster, --cluster-scale, --gpus-per-host and --space-sharing go with a "
                "trace; an instance (.json) has its own GPUs and cluster fields"
            )
        instance = load_instance(path)
        if not whole:
            instance = select_jobs(instance, first=first, window=window, load=load)
        return in_mode(instance, mode, path), None
    if not cluster:
        raise InputError("a trace needs --cluster TYPE:COUNT,... (e.g. V100:85,T4:43)")
    if isinstance(cluster, str):
        gpus = parse_cluster(cluster, gpus_per_host, cluster_scale)
    elif gpus_per_host is not None or cluster_scale != 1.0:
        raise InputError(
            "gpus_per_host and cluster_scale go with a cluster spec; given GPUs are as they are"
        )
    else:
        gpus = tuple(cluster)
    if space_sharing and mode != "gang":
        raise InputError("--space-sharing needs --mode gang")
    trace = read_trace(path, trace_format)
    select = partial(selected_jobs, name=trace.name, first=first, window=window, load=load)
    instance = trace_instance(
        trace,
        gpus,
        mapping,
        mode=mode or "relaxed",
        space_sharing=space_sharing,
        select=None if whole else select,
    )
    return instance, trace
