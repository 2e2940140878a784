"""Per-job-type, per-label random forests (Liquid §4) and the paper's evaluation protocol.

:class:`ResourceEstimator` trains, for every job type and label, a scikit-learn
``RandomForestRegressor`` with the reference code's hyper-parameters (70 trees, depth 13,
min_samples_split 10, min_samples_leaf 5, max_features = features − 1; seeded). A job type
unseen in training falls back to a forest over all types. :func:`to_request` turns
predictions into Liquid's resource request (CPU cores, memory, GPU utilisation, GPU memory,
bandwidth weight = ceil(bw_rx / 100,000)), the weight placement uses
(:func:`with_bandwidth`); :func:`with_predictions` writes a cluster instance's predicted GPU
utilisation, GPU memory and bandwidth weight (in the jobs' cluster profiles), which the
liquid policy's sharing and placement decide on (execution uses the jobs' ``actual`` values
where given).

:func:`evaluate` is the paper's protocol (§7.2): a fixed test set of jobs, a training set grown
in steps, RMSE and R² per label, for the forest and the paper's comparison models (linear
regression, decision tree, AdaBoost, gradient boosting). scikit-learn is the optional
``estimation`` extra, imported lazily.

Guarantees: a seed outside [0, :data:`~optsched.limits.MAX_SEED`], an evaluation
that would score nothing (``test_jobs`` < 1, ``step`` < 1, no job left to train on, a step
larger than the training pool) and a prediction or score that is not finite are
:class:`~optsched.errors.InputError` naming the parameter or label, never a silent empty or
NaN result.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from optsched.errors import InputError
from optsched.estimation.runs import LABELS, PastRun
from optsched.instance import Instance
from optsched.limits import check_seed
from optsched.placement.model import PlacementInstance

MODELS = ("forest", "linear", "tree", "adaboost", "gbdt")


def _sklearn() -> Any:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise InputError(
            "resource estimation needs scikit-learn: pip install 'optsched[estimation]'"
        ) from None
    from sklearn import ensemble, linear_model, tree

    return ensemble, linear_model, tree


def _make(kind: str, n_features: int, seed: int) -> Any:
    ensemble, linear_model, tree = _sklearn()
    if kind == "forest":
        return ensemble.RandomForestRegressor(
            n_estimators=70,
            max_depth=13,
            min_samples_split=10,
            min_samples_leaf=5,
            max_features=max(1, n_features - 1),
            random_state=seed,
        )
    if kind == "linear":
        return linear_model.LinearRegression()
    if kind == "tree":
        return tree.DecisionTreeRegressor(random_state=seed)
    if kind == "adaboost":
        return ensemble.AdaBoostRegressor(random_state=seed)
    if kind == "gbdt":
        return ensemble.GradientBoostingRegressor(random_state=seed)
    raise InputError(f"model must be one of {MODELS}, got {kind!r}")


@dataclass
class ResourceEstimator:
    """Regressors per (job type, label); ``model`` one of :data:`MODELS` (default forest)."""

    model: str = "forest"
    seed: int = 0
    features: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    _fitted: dict[tuple[str | None, str], Any] = field(default_factory=dict, repr=False)

    def _matrix(self, runs: Sequence[PastRun]) -> np.ndarray:
        return np.array([[r.features.get(k, 0.0) for k in self.features] for r in runs])

    def fit(self, runs: Sequence[PastRun]) -> ResourceEstimator:
        """Train on ``runs`` (InputError: no run, an unknown model, a bad seed)."""
        if not runs:
            raise InputError("no run to train on")
        if self.model not in MODELS:
            raise InputError(f"model must be one of {MODELS}, got {self.model!r}")
        check_seed(self.seed)
        self.features = tuple(sorted({k for r in runs for k in r.features}))
        self.labels = tuple(k for k in LABELS if all(k in r.labels for r in runs))
        self._fitted = {}
        groups: dict[str | None, list[PastRun]] = {None: list(runs)}
        for r in runs:
            groups.setdefault(r.job_type, []).append(r)
        for job_type, rows in groups.items():
            x = self._matrix(rows)
            for label in self.labels:
                reg = _make(self.model, len(self.features), self.seed)
                reg.fit(x, [r.labels[label] for r in rows])
                self._fitted[job_type, label] = reg
        return self

    def predict(self, runs: Sequence[PastRun]) -> list[dict[str, float]]:
        """Predicted labels for each row (features and job type only are read); a prediction
        that is not finite (features far outside the training data) is an InputError naming
        the row's job and the label."""
        if not self._fitted:
            raise InputError("the estimator is not trained")
        out: list[dict[str, float]] = [{} for _ in runs]
        by_type: dict[str | None, list[int]] = {}
        for i, r in enumerate(runs):
            key = r.job_type if (r.job_type, self.labels[0]) in self._fitted else None
            by_type.setdefault(key, []).append(i)
        for job_type, rows in by_type.items():
            x = self._matrix([runs[i] for i in rows])
            for label in self.labels:
                for i, value in zip(rows, self._fitted[job_type, label].predict(x), strict=True):
                    if not math.isfinite(value):
                        raise InputError(
                            f"job {runs[i].job!r}: the {self.model} prediction "
                            f"of {label!r} is not finite ({value}); its features "
                            "are far outside the training data"
                        )
                    out[i][label] = float(value)
        return out


def to_request(prediction: Mapping[str, float]) -> dict[str, float]:
    """Liquid's request from predictions (Liquid §4.1; defaults where a label is missing)."""

    def up(key: str, unit: float, default: float) -> float:
        return (
            default
            if key not in prediction
            else math.ceil(max(0.0, prediction[key]) / unit) * unit
        )

    util = prediction.get("gpu_util")
    return {
        "cpus": up("cpu", 100, 400) / 100,
        "memory": up("mem", 1024, 4096),
        "gpu_util": 100.0 if util is None else math.ceil(max(0.0, util)) // 10 * 10,
        "gpu_memory": up("gpu_mem", 1024, 8192),
        "bandwidth": max(1.0, up("bw_rx", 100_000, 100_000) / 100_000),
    }


def with_bandwidth(instance: PlacementInstance, weights: Mapping[str, float]) -> PlacementInstance:
    """The placement instance with each listed job's bandwidth weight replaced."""
    unknown = sorted(set(weights) - {j.id for j in instance.jobs})
    if unknown:
        raise InputError(f"unknown job {unknown[0]!r}")
    jobs = tuple(replace(j, bandwidth=weights.get(j.id, j.bandwidth)) for j in instance.jobs)
    return PlacementInstance(instance.name, instance.topology, jobs)


def with_predictions(instance: Instance, estimator: ResourceEstimator) -> Instance:
    """The instance with each job's predicted ``util``, ``gpu_memory`` and ``bandwidth``
    (its :class:`~optsched.instance.ClusterProfile`) replaced by Liquid's request from the
    estimator's prediction for one of its workers (:func:`to_request`: utilisation rounded
    down to 10 %, at least 10 %; memory rounded up to GB). A job's type is its profile's
    ``model`` and its features are its PS/worker counts and ``meta``'s ``batch_size`` and
    ``num_batches``.

    These are predictions: the scheduler decides on them (Liquid §4, §6.2). A job's
    ``actual`` values, if any, are kept; without them execution takes the predictions as the
    truth — :func:`optsched.generate.with_actuals` draws actuals around them, so that a
    misprediction can overload a shared GPU or run it out of memory."""
    queries = []
    for job in instance.jobs:
        meta = job.meta if isinstance(job.meta, Mapping) else {}
        roles = job.profile.roles or ("worker",) * job.tasks_per_round
        features = {
            "ps_number": float(roles.count("ps")),
            "worker_number": float(roles.count("worker")),
            "num_gpus": 1.0,
            "role": 0.0,
            **{k: float(meta[k]) for k in ("batch_size", "num_batches") if k in meta},
        }
        queries.append(PastRun(job.profile.model or "", "worker", features, {}, job.id))
    jobs = []
    for job, prediction in zip(instance.jobs, estimator.predict(queries), strict=True):
        request = to_request(prediction)
        profile = replace(
            job.profile,
            util=min(1.0, max(10.0, request["gpu_util"]) / 100),
            gpu_memory=request["gpu_memory"],
            bandwidth=request["bandwidth"],
        )
        jobs.append(replace(job, cluster=profile))
    return replace(instance, jobs=tuple(jobs))


@dataclass(frozen=True)
class Score:
    """One cell of the evaluation: model, training jobs, label, RMSE, R²."""

    model: str
    train_jobs: int
    label: str
    rmse: float
    r2: float


def evaluate(
    runs: Sequence[PastRun],
    *,
    test_jobs: int = 50,
    step: int = 50,
    models: Sequence[str] = MODELS,
    seed: int = 0,
    names: Mapping[str, str] | None = None,
) -> list[Score]:
    """The paper's protocol: jobs shuffled (seeded); the last ``test_jobs`` jobs test, the
    first ``step``, 2·``step``, … train; RMSE and R² per label on the test rows.

    Raises InputError, naming the parameter (as ``names`` calls it, e.g. the command line's
    ``--test-jobs``), when nothing would be scored: ``test_jobs`` or ``step`` below 1, no job
    left to train on, or ``step`` above the training jobs; and naming the label when a score
    is not finite (labels too large to square)."""
    name = {"test_jobs": "test_jobs", "step": "step", **(names or {})}
    if test_jobs < 1:
        raise InputError(f"{name['test_jobs']} must be >= 1, got {test_jobs}")
    if step < 1:
        raise InputError(f"{name['step']} must be >= 1, got {step}")
    for kind in models:
        if kind not in MODELS:
            raise InputError(f"model must be one of {MODELS}, got {kind!r}")
    check_seed(seed)
    jobs = list(dict.fromkeys(r.job for r in runs))
    if len(jobs) <= test_jobs:
        raise InputError(
            f"{name['test_jobs']} {test_jobs}: the runs have {len(jobs)} jobs, "
            "so none would be left to train on"
        )
    if step > len(jobs) - test_jobs:
        raise InputError(
            f"{name['step']} {step} exceeds the {len(jobs) - test_jobs} training "
            f"jobs ({len(jobs)} jobs, {name['test_jobs']} {test_jobs}): nothing "
            "would be scored"
        )
    order = [jobs[i] for i in np.random.default_rng(seed).permutation(len(jobs))]
    test_ids = set(order[-test_jobs:])
    test = [r for r in runs if r.job in test_ids]
    pool = order[:-test_jobs]
    scores = []
    for size in range(step, len(pool) + 1, step):
        train_ids = set(pool[:size])
        train = [r for r in runs if r.job in train_ids]
        for kind in models:
            est = ResourceEstimator(kind, seed).fit(train)
            predicted = est.predict(test)
            for label in est.labels:
                truth = np.array([r.labels[label] for r in test])
                guess = np.array([p[label] for p in predicted])
                rmse = float(np.sqrt(np.mean((truth - guess) ** 2)))
                spread = float(np.sum((truth - truth.mean()) ** 2))
                r2 = 1.0 - float(np.sum((truth - guess) ** 2)) / spread if spread else 0.0
                if not (math.isfinite(rmse) and math.isfinite(r2)):
                    raise InputError(
                        f"label {label!r}: the {kind} scores are not finite "
                        f"(RMSE {rmse}, R² {r2}); the labels are too large"
                    )
                scores.append(Score(kind, size, label, rmse, r2))
    return scores
