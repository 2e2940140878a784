"""The resumable benchmark runner: methods × instances × modes × seeds.

Each run solves one instance with one method through :func:`optsched.solve`, or simulates an
online policy (a ``simulate`` method) through :func:`optsched.online.run.run_policy` — either
way every schedule is checked — and yields one record, appended to a JSON-lines file as soon
as it ends. A restarted runner skips every run whose key is already recorded, so killing it
loses only the runs in flight and never duplicates a record. Runs execute in local processes
by default, or on a Dask distributed cluster given its scheduler address (the ``dask`` extra);
the records are the same either way, up to the timing fields.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from optsched.bench.manifest import Manifest
from optsched.bench.records import (
    RECORD_FORMAT,
    RecordWriter,
    load_records,
    machine,
    run_key,
    versions,
)
from optsched.errors import InputError, UnknownNameError
from optsched.io import instance_from_dict, read_json
from optsched.online.run import run_policy
from optsched.placement.model import INSTANCE_FORMAT as PLACEMENT_INSTANCE_FORMAT
from optsched.placement.model import placement_instance_from_dict
from optsched.placement.place import place
from optsched.solve import MethodInfo, get_method, load_plugin, solve


@dataclass(frozen=True)
class Run:
    """One run: everything a worker needs, the instance included (no shared filesystem)."""

    instance: str
    instance_data: Mapping[str, Any] = field(repr=False)
    cell: Mapping[str, Any]
    instance_seed: int | None
    method: str
    mode: str
    seed: int
    params: Mapping[str, str]
    time_limit: float | None
    plugins: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return run_key(self.instance, self.method, self.mode, self.seed, self.params,
                       self.time_limit)


def plan(
    manifest: Manifest,
    methods: Sequence[str],
    *,
    modes: Sequence[str] | None = None,
    seeds: Sequence[int] = (0,),
    params: Mapping[str, str] | None = None,
    time_limit: float | None = None,
    plugins: Sequence[str] = (),
) -> list[Run]:
    """Every run of ``methods`` × the manifest's instances × ``modes`` × ``seeds``.

    ``modes`` None runs each instance in its own mode. Unknown methods, modes a method does
    not support and unknown parameters are refused here, before anything runs.
    """
    if not methods:
        raise InputError("bench run needs at least one method")
    for module in plugins:
        load_plugin(module)
    params = dict(params or {})
    instances = {name: read_json(manifest.path.parent / entry["file"])
                 for name, entry in manifest.instances.items()}
    # a set holds placement instances (place methods) or scheduling instances (the others)
    placement = any(data.get("format") == PLACEMENT_INSTANCE_FORMAT
                    for data in instances.values())
    for method in methods:
        info = _method(method, placement)
        info.check_params(params)
        for mode in () if placement else modes or ():
            info.check_mode(mode)
    runs: list[Run] = []
    for name, entry in manifest.instances.items():
        data = instances[name]
        for mode in ["placement"] if placement else modes or [data.get("mode", "relaxed")]:
            for method in methods:
                runs.extend(Run(name, data, entry.get("cell", {}), entry.get("seed"), method,
                                mode, seed, params, time_limit, tuple(plugins))
                            for seed in seeds)
    return runs


def _method(name: str, placement: bool = False) -> MethodInfo:
    """The ``place`` method ``name`` for placement instances; otherwise the ``solve``
    method, else the ``simulate`` method (online policy) ``name``."""
    for kind in ("place",) if placement else ("solve", "simulate"):
        try:
            return get_method(name, kind)
        except UnknownNameError:
            continue
    what = "placement" if placement else "scheduling"
    raise UnknownNameError(f"unknown {what} method {name!r} (see optsched methods)")


def execute(run: Run) -> dict[str, Any]:
    """Solve one run and return its record; a failure is recorded as status ``error``."""
    for module in run.plugins:
        load_plugin(module)
    record: dict[str, Any] = {
        "format": RECORD_FORMAT, "key": run.key, "instance": run.instance,
        "cell": dict(run.cell), "instance_seed": run.instance_seed, "method": run.method,
        "mode": run.mode, "seed": run.seed, "params": dict(run.params),
        "time_limit": run.time_limit,
    }
    started = time.perf_counter()
    try:
        kind = "place" if run.mode == "placement" else _method(run.method).kind
        if kind == "place":
            result, _ = place(placement_instance_from_dict(run.instance_data), run.method,
                              seed=run.seed, time_limit=run.time_limit, params=run.params)
        elif kind == "simulate":  # online policy: one simulation
            result, _ = run_policy(instance_from_dict(run.instance_data).with_mode(run.mode),
                                   run.method, params=run.params, seed=run.seed)
        else:
            result = solve(instance_from_dict(run.instance_data), run.method, mode=run.mode,
                           time_limit=run.time_limit, seed=run.seed, params=run.params)
        metrics = None
        if result.metrics is not None:
            metrics = {k: v for k, v in result.metrics.items() if k != "utilisation"}
            if "utilisation" in result.metrics:
                util = list(result.metrics["utilisation"].values())
                metrics["mean_utilisation"] = sum(util) / len(util)
        record.update(status=str(result.status), objective=result.objective,
                      bound=result.bound, gap=result.gap, runtime_s=result.runtime_s,
                      metrics=metrics, extra=dict(result.extra), error=None)
    except Exception as exc:  # recorded, so the run is not retried blindly
        record.update(status="error", objective=None, bound=None, gap=None,
                      runtime_s=time.perf_counter() - started, metrics=None, extra={},
                      error=f"{type(exc).__name__}: {exc}".splitlines()[0])
    record.update(versions=versions(), machine=machine(),
                  finished_at=datetime.now(UTC).isoformat(timespec="seconds"))
    return record


def _local(runs: Sequence[Run], workers: int) -> Iterator[dict[str, Any]]:
    if workers == 1:
        yield from map(execute, runs)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(execute, run) for run in runs]
        for future in as_completed(futures):
            yield future.result()


def _dask(runs: Sequence[Run], scheduler: str) -> Iterator[dict[str, Any]]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise InputError("--scheduler needs Dask: pip install 'optsched[dask]'") from None
    with Client(scheduler) as client:
        futures = [client.submit(execute, run, key=f"optsched-run-{i}-{run.key}", pure=False)
                   for i, run in enumerate(runs)]
        for future in dask_completed(futures):
            yield future.result()


@dataclass
class Summary:
    """What one invocation of the runner did."""

    planned: int
    skipped: int
    finished: int = 0
    errors: int = 0
    elapsed_s: float = 0.0


def _progress(stream: TextIO, done: int, total: int, record: Mapping[str, Any],
              elapsed: float) -> None:
    left = elapsed / done * (total - done)
    obj = record["objective"]
    gap = record["gap"]
    stream.write(
        f"[{done}/{total}] {record['instance']} {record['method']} {record['mode']} "
        f"seed {record['seed']}: {record['status']}"
        f"{'' if obj is None else f' obj {obj:.6g}'}"
        f"{'' if gap is None else f' gap {100 * gap:.2f}%'} ({record['runtime_s']:.2f} s)"
        f" | {elapsed:.0f} s elapsed, ~{left:.0f} s left\n")
    stream.flush()


def run_benchmark(
    runs: Sequence[Run],
    records: str | Path,
    *,
    workers: int = 2,
    scheduler: str | None = None,
    manifest: Manifest | None = None,
    progress: TextIO | None = sys.stderr,
) -> Summary:
    """Execute the runs not yet in ``records``, appending a record as each one ends.

    ``workers`` local processes (1: in this process) unless ``scheduler`` names a Dask
    scheduler. The manifest, when given, is updated and saved after every record.
    """
    if workers < 1:
        raise InputError("workers must be >= 1")
    if workers > (os.cpu_count() or 1) and progress is not None:
        progress.write(f"warning: {workers} workers on {os.cpu_count()} CPUs: runtimes will "
                       "be inflated\n")
    keys = [run.key for run in runs]
    if len(set(keys)) != len(keys):
        raise InputError("the plan lists the same run twice")
    existing = load_records(records, repair=True)
    done = {r["key"] for r in existing}
    # in case a run ended after its record was written but before the manifest was saved
    if manifest is not None and any([manifest.update(r) for r in existing]):
        manifest.save()
    todo = [run for run in runs if run.key not in done]
    summary = Summary(planned=len(runs), skipped=len(runs) - len(todo))
    if progress is not None and summary.skipped:
        progress.write(f"resuming: {summary.skipped} of {len(runs)} runs already recorded\n")
    started = time.perf_counter()
    stream: Iterable[dict[str, Any]] = (_dask(todo, scheduler) if scheduler
                                        else _local(todo, workers))
    with RecordWriter(records) as writer:
        for record in stream:
            writer.write(record)
            summary.finished += 1
            summary.errors += record["status"] == "error"
            if manifest is not None and manifest.update(record):
                manifest.save()
            if progress is not None:
                _progress(progress, summary.finished, len(todo), record,
                          time.perf_counter() - started)
    summary.elapsed_s = time.perf_counter() - started
    return summary
