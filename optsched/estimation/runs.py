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
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from optsched.errors import InputError

LABELS = ("cpu", "mem", "bw_rx", "bw_tx", "gpu_util", "gpu_util_std", "gpu_mem")
#: job type → (model size MB, GPU util % at batch 32, GPU memory MB at batch 0, MB per sample)
SYNTHETIC_TYPES = {
    "cnn-mnist": (2.0, 20.0, 600.0, 4.0),
    "neumf": (40.0, 35.0, 900.0, 2.0),
    "resnet50": (98.0, 80.0, 2500.0, 60.0),
    "inceptionv3": (92.0, 75.0, 2300.0, 55.0),
    "vgg16": (528.0, 85.0, 3500.0, 80.0),
}


@dataclass(frozen=True)
class Run:
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


def _feature(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        return float(fnv1a_32(value))
    return number if math.isfinite(number) else 0.0


def read_runs(path: str | Path) -> list[Run]:
    """Read a runs CSV (see the module docstring)."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise InputError(f"cannot read runs {path}: {exc.strerror}") from None
    rows = list(csv.DictReader(lines))
    if not rows or not {"job_type", "role"} <= set(rows[0]):
        raise InputError(f"{path}: a runs CSV needs a header with job_type and role, and rows")
    if not set(LABELS) & set(rows[0]):
        raise InputError(f"{path}: no label column (one of {', '.join(LABELS)})")
    runs = []
    for n, row in enumerate(rows, 2):
        if row["role"] not in ("ps", "worker"):
            raise InputError(f"{path.name}:{n}: role must be ps or worker, got {row['role']!r}")
        labels = {}
        for k in LABELS:
            if k in row:
                try:
                    labels[k] = float(row[k])
                except ValueError:
                    raise InputError(f"{path.name}:{n}: {k} must be a number, "
                                     f"got {row[k]!r}") from None
        features = {k: _feature(v) for k, v in row.items()
                    if k not in LABELS and k not in ("job_type", "role", "job")}
        features["role"] = 1.0 if row["role"] == "ps" else 0.0
        runs.append(Run(row["job_type"], row["role"], features, labels,
                        row.get("job") or f"row{n}"))
    return runs


def write_runs(path: str | Path, runs: Sequence[Run]) -> None:
    features = sorted({k for r in runs for k in r.features if k != "role"})
    labels = [k for k in LABELS if any(k in r.labels for r in runs)]
    with Path(path).open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["job", "job_type", "role", *features, *labels])
        for r in runs:
            out.writerow([r.job, r.job_type, r.role, *(r.features.get(k, 0) for k in features),
                          *(r.labels.get(k, "") for k in labels)])


def synthetic_runs(jobs: int, seed: int, noise: float = 0.1) -> list[Run]:
    """Rows for ``jobs`` synthetic jobs (one per container), seeded."""
    if jobs < 1 or not noise >= 0:
        raise InputError("synthetic runs: jobs must be >= 1 and noise >= 0")
    rng = np.random.default_rng(seed)
    types = list(SYNTHETIC_TYPES)
    runs = []
    for j in range(jobs):
        job_type = types[int(rng.integers(len(types)))]
        size, util, mem0, per_sample = SYNTHETIC_TYPES[job_type]
        ps, workers = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        batch, batches = 4 * int(rng.integers(1, 9)), 50 * int(rng.integers(4, 21))
        step = 0.05 + batch * per_sample / 2e4  # seconds per iteration (ground truth)
        features = {"ps_number": ps, "worker_number": workers, "num_gpus": 1,
                    "batch_size": batch, "num_batches": batches}

        def noisy(value: float) -> float:
            return float(value * rng.lognormal(0.0, noise))

        for role, count in (("ps", ps), ("worker", workers)):
            for _ in range(count):
                share = workers / ps if role == "ps" else 1.0
                traffic = size * 1e6 * share / step  # bytes per second
                labels = {
                    "cpu": noisy(100 + (30 * share if role == "ps" else 60 + batch)),
                    "mem": noisy(1500 + (2 * size if role == "ps" else 3 * size + 8 * batch)),
                    "bw_rx": noisy(traffic), "bw_tx": noisy(traffic),
                    "gpu_util": 0.0 if role == "ps" else min(100.0, noisy(
                        util * math.sqrt(batch / 32))),
                    "gpu_util_std": 0.0 if role == "ps" else noisy(8 + batch / 8),
                    "gpu_mem": 0.0 if role == "ps" else noisy(mem0 + per_sample * batch),
                }
                runs.append(Run(job_type, role, {**features, "role": float(role == "ps")},
                                labels, f"j{j}"))
    return runs
