"""Past job runs: the CSV format the estimator trains on, and a synthetic generator.

A runs CSV has one row per container of a finished job (a header row): ``job_type``,
``role`` (``ps`` | ``worker``), optionally ``job`` (rows of one job share it), any number of
feature columns (numbers, or strings hashed with 32-bit FNV-1a as Liquid's code does), and
label columns — those of
:data:`LABELS` that are present: ``cpu`` (%, max), ``mem`` (MB, max), ``bw_rx`` / ``bw_tx``
(bytes/s, mean), ``gpu_util`` (%, mean), ``gpu_util_std``, ``gpu_mem`` (MB, max). The features
of the paper and code: ``ps_number``, ``worker_number``, ``num_gpus``, ``batch_size``,
``num_batches`` (and ``role`` itself, 1 for a PS).

The synthetic generator draws jobs as Liquid's experiments do (1–2 PSs, 1–4 workers, batch
= 4·U{1..8}, num_batches = 50·U{4..20}) over five job types and computes labels from a stated
ground truth with multiplicative log-normal noise (σ = ``noise``). The ground truth is invented
for testing the estimator: it is *not* a measurement.

Guarantees:

- **Reading refuses, naming the file (and line and column), never guesses:** a file that is not
  UTF-8 (a UTF-8 byte-order mark is accepted and dropped), malformed CSV, a header that is
  empty, has an empty or duplicated column name, or lacks ``job_type``, ``role`` or every
  label column, a row whose field count differs from the header's, a role other than ``ps`` /
  ``worker``, and a label or numeric feature that is not a finite number of magnitude at most
  :data:`~optsched.limits.MAX_VALUE` (``inf``, ``nan``, ``1e309``).
- **Writing is atomic** (:func:`optsched.output.write_file`): a kill leaves the old file or
  the complete new one.
- **Generation is bounded:** at most :data:`MAX_SYNTHETIC_JOBS` jobs (about 4 rows and 600
  bytes of CSV each, built in memory before the atomic write: at most ~0.6 GB) and a noise σ in
  [0, :data:`MAX_NOISE`] (a larger σ pushes labels past the accepted magnitude), so what is
  generated can always be read back.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optsched.errors import InputError
from optsched.jsonfile import read_text
from optsched.limits import MAX_VALUE
from optsched.output import write_file

LABELS = ("cpu", "mem", "bw_rx", "bw_tx", "gpu_util", "gpu_util_std", "gpu_mem")
#: job type → (model size MB, GPU util % at batch 32, GPU memory MB at batch 0, MB per sample)
SYNTHETIC_TYPES = {
    "cnn-mnist": (2.0, 20.0, 600.0, 4.0),
    "neumf": (40.0, 35.0, 900.0, 2.0),
    "resnet50": (98.0, 80.0, 2500.0, 60.0),
    "inceptionv3": (92.0, 75.0, 2300.0, 55.0),
    "vgg16": (528.0, 85.0, 3500.0, 80.0),
}
#: The feature columns of synthetic runs, as :func:`write_runs` orders them.
SYNTHETIC_FEATURES = ("batch_size", "num_batches", "num_gpus", "ps_number", "worker_number")
#: Most jobs :func:`synthetic_runs` draws: about 4 million rows, ~0.6 GB of CSV in memory.
MAX_SYNTHETIC_JOBS = 1_000_000
#: Largest log-normal σ of the synthetic noise: with σ = 1 the largest of millions of draws
#: multiplies a label by about e^5.5 ≈ 250, keeping labels far below MAX_VALUE.
MAX_NOISE = 1.0
#: Rows and CSV bytes per synthetic job, on average (measured).
_ROWS_PER_JOB, _BYTES_PER_JOB = 4.0, 590.0


@dataclass(frozen=True)
class PastRun:
    """One container's run: its job type, role, features and measured labels."""

    job_type: str
    role: str
    features: dict[str, float]
    labels: dict[str, float]
    job: str = ""


def fnv1a_32(text: str) -> int:
    """32-bit FNV-1a hash (Liquid hashes string flags this way)."""
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _number(value: str) -> float | None:
    """``value`` as a float, or None when it is not a number at all."""
    try:
        return float(value)
    except ValueError:
        return None


def _bad_number(value: float) -> bool:
    return not (math.isfinite(value) and abs(value) <= MAX_VALUE)


def read_runs(path: str | Path) -> list[PastRun]:
    """Read a runs CSV (see the module docstring); bad content is an :class:`InputError`
    naming the file, and the line and column where there is one."""
    name = str(path)
    text = read_text(path, "runs CSV")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        return _runs(name, reader)
    except csv.Error as exc:
        raise InputError(f"{name}:{reader.line_num}: malformed CSV: {exc}") from None


def _runs(name: str, reader: Iterator[list[str]]) -> list[PastRun]:
    header = next(reader, None)
    if header is None:
        raise InputError(
            f"{name}: empty; a runs CSV needs a header with job_type and role, and rows"
        )
    if header in ([], [""]):
        raise InputError(
            f"{name}:1: blank header line (a runs CSV starts with a header with job_type and role)"
        )
    seen: set[str] = set()
    for i, column in enumerate(header, 1):
        if not column:
            raise InputError(f"{name}:1: column {i} of the header has no name")
        if column in seen:
            raise InputError(f"{name}:1: column {column!r} appears twice in the header")
        seen.add(column)
    for column in ("job_type", "role"):
        if column not in seen:
            raise InputError(
                f"{name}:1: missing required column {column!r} (a runs CSV needs "
                "job_type, role and a label column)"
            )
    labels = [k for k in LABELS if k in seen]
    if not labels:
        raise InputError(f"{name}: no label column (one of {', '.join(LABELS)})")
    features = [k for k in header if k not in LABELS and k not in ("job_type", "role", "job")]
    line = getattr(reader, "line_num", 0)
    runs = []
    for fields in reader:
        line = getattr(reader, "line_num", line + 1)
        if not fields:
            continue  # a blank line
        if len(fields) != len(header):
            raise InputError(
                f"{name}:{line}: {len(fields)} fields, but the header has {len(header)}"
            )
        row = dict(zip(header, fields, strict=True))
        if row["role"] not in ("ps", "worker"):
            raise InputError(f"{name}:{line}: role must be ps or worker, got {row['role']!r}")
        values: dict[str, float] = {}
        for k in labels:
            number = _number(row[k])
            if number is None:
                raise InputError(f"{name}:{line}: column {k!r} must be a number, got {row[k]!r}")
            if _bad_number(number):
                raise InputError(
                    f"{name}:{line}: column {k!r} must be a finite number of "
                    f"magnitude at most {MAX_VALUE:g}, got {row[k]!r}"
                )
            values[k] = number
        feats: dict[str, float] = {}
        for k in features:
            number = _number(row[k])
            if number is None:
                number = float(fnv1a_32(row[k]))
            elif _bad_number(number):
                raise InputError(
                    f"{name}:{line}: feature column {k!r} must be a finite number "
                    f"of magnitude at most {MAX_VALUE:g} (or a string), got "
                    f"{row[k]!r}"
                )
            feats[k] = number
        feats["role"] = 1.0 if row["role"] == "ps" else 0.0
        runs.append(
            PastRun(row["job_type"], row["role"], feats, values, row.get("job") or f"row{line}")
        )
    if not runs:
        raise InputError(f"{name}: no rows after the header")
    return runs


def runs_csv(
    runs: Iterable[PastRun],
    *,
    features: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
) -> tuple[bytes, int]:
    """The runs as UTF-8 CSV text and the number of rows. Columns: ``job``, ``job_type``,
    ``role``, ``features`` (default: every feature of the runs but ``role``, sorted), ``labels``
    (default: those of :data:`LABELS` some run has). Giving both lets ``runs`` be a stream:
    only the text is held in memory."""
    if features is None or labels is None:
        runs = list(runs)
        if features is None:
            features = sorted({k for r in runs for k in r.features if k != "role"})
        if labels is None:
            labels = [k for k in LABELS if any(k in r.labels for r in runs)]
    buffer = io.BytesIO()
    text = io.TextIOWrapper(buffer, encoding="utf-8", newline="")
    out = csv.writer(text)
    out.writerow(["job", "job_type", "role", *features, *labels])
    count = 0
    for r in runs:
        out.writerow(
            [
                r.job,
                r.job_type,
                r.role,
                *(r.features.get(k, 0) for k in features),
                *(r.labels.get(k, "") for k in labels),
            ]
        )
        count += 1
    text.flush()
    data = buffer.getvalue()
    text.detach()
    return data, count


def write_runs(
    path: str | Path,
    runs: Iterable[PastRun],
    *,
    features: Sequence[str] | None = None,
    labels: Sequence[str] | None = None,
) -> int:
    """Write ``runs`` as a runs CSV (:func:`runs_csv`) atomically through
    :func:`optsched.output.write_file`: a kill leaves the old file or the whole new one.
    Returns the number of rows. Validate ``path`` with :func:`optsched.output.output_target`
    before generating the runs."""
    data, count = runs_csv(runs, features=features, labels=labels)
    write_file(path, data)
    return count


def check_synthetic(
    jobs: int, noise: float, *, jobs_name: str = "jobs", noise_name: str = "noise"
) -> None:
    """Refuse (InputError naming ``jobs_name`` / ``noise_name``) a job count outside
    [1, :data:`MAX_SYNTHETIC_JOBS`] (with the size it would have) or a noise σ outside
    [0, :data:`MAX_NOISE`] (NaN included)."""
    if jobs < 1:
        raise InputError(f"{jobs_name} must be >= 1, got {jobs}")
    if jobs > MAX_SYNTHETIC_JOBS:
        raise InputError(
            f"{jobs_name} {jobs:,} is too many: about {jobs * _ROWS_PER_JOB:,.0f} rows and "
            f"{jobs * _BYTES_PER_JOB / 1e9:,.3g} GB of CSV, built in memory before the atomic "
            f"write; at most {MAX_SYNTHETIC_JOBS:,} jobs"
        )
    if not 0 <= noise <= MAX_NOISE:
        raise InputError(
            f"{noise_name} must be in [0, {MAX_NOISE:g}] (a log-normal σ), got {noise!r}"
        )


def synthetic_runs(jobs: int, seed: int, noise: float = 0.1) -> list[PastRun]:
    """Rows for ``jobs`` synthetic jobs (one per container), seeded (:func:`iter_synthetic_runs`
    as a list)."""
    return list(iter_synthetic_runs(jobs, seed, noise))


def iter_synthetic_runs(jobs: int, seed: int, noise: float = 0.1) -> Iterator[PastRun]:
    """The rows of :func:`synthetic_runs`, one at a time (arguments checked at the call:
    :func:`check_synthetic`; ``seed`` >= 0)."""
    check_synthetic(jobs, noise)
    if seed < 0:
        raise InputError(f"seed must be >= 0, got {seed}")
    return _synthetic(jobs, seed, noise)


def _synthetic(jobs: int, seed: int, noise: float) -> Iterator[PastRun]:
    rng = np.random.default_rng(seed)
    types = list(SYNTHETIC_TYPES)
    for j in range(jobs):
        job_type = types[int(rng.integers(len(types)))]
        size, util, mem0, per_sample = SYNTHETIC_TYPES[job_type]
        ps, workers = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        batch, batches = 4 * int(rng.integers(1, 9)), 50 * int(rng.integers(4, 21))
        step = 0.05 + batch * per_sample / 2e4  # seconds per iteration (ground truth)
        features = {
            "ps_number": ps,
            "worker_number": workers,
            "num_gpus": 1,
            "batch_size": batch,
            "num_batches": batches,
        }

        def noisy(value: float) -> float:
            return float(value * rng.lognormal(0.0, noise))

        for role, count in (("ps", ps), ("worker", workers)):
            for _ in range(count):
                share = workers / ps if role == "ps" else 1.0
                traffic = size * 1e6 * share / step  # bytes per second
                labels = {
                    "cpu": noisy(100 + (30 * share if role == "ps" else 60 + batch)),
                    "mem": noisy(1500 + (2 * size if role == "ps" else 3 * size + 8 * batch)),
                    "bw_rx": noisy(traffic),
                    "bw_tx": noisy(traffic),
                    "gpu_util": 0.0
                    if role == "ps"
                    else min(100.0, noisy(util * math.sqrt(batch / 32))),
                    "gpu_util_std": 0.0 if role == "ps" else noisy(8 + batch / 8),
                    "gpu_mem": 0.0 if role == "ps" else noisy(mem0 + per_sample * batch),
                }
                yield PastRun(
                    job_type, role, {**features, "role": float(role == "ps")}, labels, f"j{j}"
                )
