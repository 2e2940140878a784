"""Plug-ins travel with benchmark runs: by content to any worker (a relative path from a fresh
directory, Dask included), and a record is reused only for the plug-in code that made it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from optsched.bench.grid import generate_set, load_grid
from optsched.bench.records import load_records
from optsched.bench.report import dedupe
from tests.conftest import ROOT

TINY_GRID = ROOT / "benchmarks" / "grids" / "tiny.json"

PLUGIN = """
from optsched.contracts import MethodOutput
from optsched.ect import ect_schedule
from optsched.registry import register

@register("travel-ect", description="ECT from a plug-in file")
def _ect(instance, context):
    return MethodOutput(schedule=ect_schedule(instance), extra={"version": VERSION})

VERSION = 1
"""


def bench(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``optsched --plugin travel.py bench run …`` from ``cwd`` (the plug-in's folder)."""
    argv = [sys.executable, "-m", "optsched.cli", "--plugin", "travel.py", "bench", "run", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path]:
    """A fresh folder holding only the plug-in, and a tiny instance set elsewhere."""
    here = tmp_path / "project"
    here.mkdir()
    (here / "travel.py").write_text(PLUGIN)
    generate_set(load_grid(TINY_GRID), tmp_path / "set")
    return here, tmp_path / "set"


def test_a_relative_plugin_path_reaches_dask_workers(project):
    """Dask workers start elsewhere (another directory, another machine): the plug-in's
    source travels with each run, so every run is a result, none an error record."""
    distributed = pytest.importorskip("distributed")
    here, instances = project
    records = here / "r.jsonl"
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        done = bench(
            here,
            str(instances),
            "--method",
            "travel-ect",
            "--method",
            "ect",
            "--records",
            str(records),
            "--scheduler",
            cluster.scheduler_address,
        )
    assert done.returncode == 0, done.stderr
    rows = load_records(records)
    assert rows and all(r["status"] != "error" for r in rows), [r.get("error") for r in rows]
    assert {r["extra"].get("version") for r in rows if r["method"] == "travel-ect"} == {1}
    assert all(
        r["plugins"] == [{"name": "travel", "sha256": rows[0]["plugins"][0]["sha256"]}]
        for r in rows
    )


def test_a_record_is_reused_only_for_the_same_plugin_code(project):
    here, instances = project
    records = here / "r.jsonl"
    args = (str(instances), "--method", "travel-ect", "--method", "ect", "--records", str(records))
    first = bench(here, *args, "--workers", "2")
    assert first.returncode == 0, first.stderr
    n = len(load_records(records))
    runs = n // 2
    again = bench(here, *args, "--workers", "2")  # the same code: nothing to run
    assert again.returncode == 0 and f"{n} already recorded" in again.stdout
    (here / "travel.py").write_text(PLUGIN.replace("VERSION = 1", "VERSION = 2"))
    edited = bench(here, *args, "--workers", "2")  # a new version: its runs again, ECT's not
    assert edited.returncode == 0, edited.stderr
    assert f"{runs} already recorded" in edited.stdout
    rows = load_records(records)
    versions = [r["extra"]["version"] for r in rows if r["method"] == "travel-ect"]
    assert sorted(versions) == [1] * runs + [2] * runs
    hashes = {r["key"] for r in rows if r["method"] == "travel-ect"}
    assert len(hashes) == 2 * runs  # the two versions' runs have distinct keys


FLAKY = """
from pathlib import Path
from optsched.contracts import MethodOutput
from optsched.ect import ect_schedule
from optsched.registry import register

@register("flaky-ect", description="fails while a marker file exists")
def _ect(instance, context):
    if Path(MARKER).exists():
        raise RuntimeError("the worker lost its GPU")
    return MethodOutput(schedule=ect_schedule(instance))

MARKER = {marker!r}
"""


def test_retry_errors_runs_the_failed_runs_again_and_reports_keep_the_retries(project):
    here, instances = project
    marker = here / "broken"
    marker.touch()
    (here / "travel.py").write_text(FLAKY.format(marker=str(marker)))
    records = here / "r.jsonl"
    args = (str(instances), "--method", "flaky-ect", "--records", str(records), "--workers", "1")
    failed = bench(here, *args)
    n = len(load_records(records))
    assert failed.returncode == 1 and n > 0
    assert all(r["status"] == "error" for r in load_records(records))
    marker.unlink()  # the cause is gone
    assert f"{n} already recorded" in bench(here, *args).stdout  # errors count as done
    retried = bench(here, *args, "--retry-errors")
    assert retried.returncode == 0, retried.stderr
    rows = load_records(records)
    assert len(rows) == 2 * n
    kept = dedupe(rows)
    assert len(kept) == n and all(r["status"] != "error" for r in kept)
    assert "already recorded" in bench(here, *args, "--retry-errors").stdout  # nothing left
