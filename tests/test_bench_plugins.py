"""Plug-ins travel with benchmark runs: by content to any worker (a relative path from a fresh
directory, Dask included), and a record is reused only for the plug-in code that made it."""

from __future__ import annotations

import hashlib
import importlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from optsched.bench.grid import generate_set, load_grid
from optsched.bench.plugins import PluginCode, capture, install
from optsched.bench.records import load_records
from optsched.bench.report import dedupe
from tests.conftest import ROOT

TINY_GRID = ROOT / "benchmarks" / "grids" / "tiny.json"
registry = importlib.import_module("optsched.registry")
get_method = registry.get_method

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
    # reports keep the newest version's runs only, not both pooled
    kept = [r for r in dedupe(rows) if r["method"] == "travel-ect"]
    assert len(kept) == runs and {r["extra"]["version"] for r in kept} == {2}


HELPED = """
from helper import VERSION
from optsched.contracts import MethodOutput
from optsched.ect import ect_schedule
from optsched.registry import register

@register("helped-ect", description="ECT from a plug-in file with a helper beside it")
def _ect(instance, context):
    return MethodOutput(schedule=ect_schedule(instance), extra={"version": VERSION})
"""


def test_a_plugin_file_imports_its_helpers_which_travel_and_count_in_its_hash(tmp_path):
    """A plug-in file imports the module beside it (as a script does); the helper travels
    to the workers with it (installed there from its source) and editing it makes
    the plug-in's runs new ones."""
    distributed = pytest.importorskip("distributed")
    here = tmp_path / "project"
    here.mkdir()
    (here / "helped.py").write_text(HELPED)
    (here / "helper.py").write_text("VERSION = 1\n")
    generate_set(load_grid(TINY_GRID), tmp_path / "set")
    records = here / "r.jsonl"

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "optsched.cli", "--plugin", "helped.py", "bench", "run"]
        argv += [str(tmp_path / "set"), "--method", "helped-ect", "--records", str(records)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run(
            [*argv, *extra], cwd=here, env=env, capture_output=True, text=True, timeout=300
        )

    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        first = run("--scheduler", cluster.scheduler_address)
    assert first.returncode == 0, first.stderr
    runs = len(load_records(records))
    assert {r["extra"]["version"] for r in load_records(records)} == {1}
    assert f"{runs} already recorded" in run("--workers", "1").stdout  # the same code
    (here / "helper.py").write_text("VERSION = 2\n")
    edited = run("--workers", "1")
    assert edited.returncode == 0, edited.stderr
    versions = sorted(r["extra"]["version"] for r in load_records(records))
    assert versions == [1] * runs + [2] * runs


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
    again = bench(here, *args).stdout  # errors count as done, and the summary says so
    assert f"{n} already recorded ({n} of them as errors: --retry-errors" in again
    retried = bench(here, *args, "--retry-errors")
    assert retried.returncode == 0, retried.stderr
    rows = load_records(records)
    assert len(rows) == 2 * n
    kept = dedupe(rows)
    assert len(kept) == n and all(r["status"] != "error" for r in kept)
    assert "already recorded" in bench(here, *args, "--retry-errors").stdout  # nothing left


@pytest.fixture
def cleanup():
    """Forget the plug-in modules and methods a test loads into this process (the built-in
    methods loaded first, so that they and their modules stay, whatever ran before)."""
    registry.methods()
    before_modules, before_methods = set(sys.modules), dict(registry._REGISTRY)
    yield
    for name in set(sys.modules) - before_modules:
        del sys.modules[name]
    registry._REGISTRY.clear()
    registry._REGISTRY.update(before_methods)


def test_threads_install_one_plugin_once_and_the_hash_is_of_what_ran(tmp_path, cleanup):
    """A Dask worker's threads install a plug-in at once (its import takes a while): one
    installs, the others find it; and a file edited after its import keeps the hash of the
    text that ran, not of the file as it is now."""
    source = PLUGIN.replace("travel-ect", "threaded-ect") + "\nimport time\ntime.sleep(0.2)\n"
    code = PluginCode("threaded_plugin", source, hashlib.sha256(source.encode()).hexdigest())
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: install(code), range(8)))
    assert get_method("threaded-ect").plugin == "threaded_plugin"
    path = tmp_path / "edited_plugin.py"
    path.write_text(PLUGIN.replace("travel-ect", "edited-ect"))
    first = capture(str(path))
    path.write_text(
        PLUGIN.replace("travel-ect", "edited-ect").replace("VERSION = 1", "VERSION = 2")
    )
    assert capture(str(path)) == first  # this process runs the first text


def test_a_dotted_plugin_module_travels_by_name(tmp_path, monkeypatch, cleanup):
    package = tmp_path / "dotted_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "methods.py").write_text(PLUGIN.replace("travel-ect", "dotted-ect"))
    monkeypatch.chdir(tmp_path)
    code = capture("dotted_pkg.methods")
    assert code.source is None and code.name == "dotted_pkg.methods" and len(code.sha256) == 64
    install(code)  # by name: importable here
