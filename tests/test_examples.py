"""The tutorials in examples/ run as written, importing public names only."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT

EXAMPLES = ROOT / "examples"
#: the modules a tutorial may import from optsched: the documented public surface
PUBLIC = {
    "optsched",
    "optsched.online",
    "optsched.placement",
    "optsched.traces",
    "optsched.bench",
    "optsched.plot",
    "optsched.testing",
    "optsched.options",
    "optsched.contracts",
}


def run(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def source(script: str) -> str:
    """A tutorial's Python: a script's text, or a notebook's code cells."""
    path = EXAMPLES / script
    if path.suffix == ".ipynb":
        return "\n".join(c.source for c in nbformat.read(path, as_version=4).cells
                         if c.cell_type == "code")  # fmt: skip
    return path.read_text()


@pytest.mark.parametrize(
    "script",
    sorted(
        str(p.relative_to(EXAMPLES)) for p in [*EXAMPLES.rglob("*.py"), *EXAMPLES.glob("*.ipynb")]
    ),
)
def test_examples_import_public_names_only(script):
    tree = ast.parse(source(script))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("optsched"):
            assert node.module in PUBLIC, f"{script} imports from {node.module}"


def test_the_analysis_notebook_runs(tmp_path, monkeypatch):
    """examples/analysis.ipynb executes in a Jupyter kernel of this Python (nbclient), from
    the repository's root, without an error in any cell."""
    from nbclient import NotebookClient

    spec = tmp_path / "kernels" / "optsched-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "optsched test",
                "language": "python",
            }
        )
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's inline plots
    notebook = nbformat.read(EXAMPLES / "analysis.ipynb", as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="optsched-test", resources={"metadata": {"path": ROOT}}
    )
    client.execute()  # a cell that raises fails the test (CellExecutionError)
    outputs = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs]
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2  # both plots drawn
    assert any("| hlas | relaxed |" in o.get("text", "") for o in outputs)


# The four longest tutorials (5-15 s each) are slow checks; CI runs them after the default
# run (.ci/run), so every tutorial still runs in CI.


@pytest.mark.slow
def test_solve_and_compare(tmp_path):
    """Every method's row, Hare's guarantee and the Gantt chart. CP-SAT proves this optimum
    in about a second on a quiet machine; under its 30 s limit it may only be feasible."""
    out = run("examples/solve_and_compare.py", "--out", str(tmp_path)).stdout
    for method in ("cpsat", "hare", "ect"):
        assert re.search(rf"^{method} +(optimal|feasible) ", out, re.M), out
    assert "α(2+α)" in out and (tmp_path / "optimum.png").exists()


@pytest.mark.slow
def test_benchmark_my_heuristic(tmp_path):
    out = run("examples/benchmark_my_heuristic.py", "--out", str(tmp_path)).stdout
    assert "18 runs, 0 errors" in out and "wspt" in out
    assert (tmp_path / "report" / "gaps.md").exists()


@pytest.mark.slow
def test_property_tests_of_my_heuristic():
    out = run(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "examples/test_my_heuristic.py"
    ).stdout
    assert "2 passed" in out


def test_simulate_trace(tmp_path):
    out = run("examples/simulate_trace.py", "--out", str(tmp_path)).stdout
    for policy in ("hlas", "fifo-perf", "tiresias", "least-work-first"):
        assert policy in out


@pytest.mark.slow
def test_liquid_placement():
    out = run("examples/liquid_placement.py").stdout
    assert "gga" in out and "sharing + pre-scheduling" in out


def test_plugin_package_entry_point(tmp_path):
    """The example package's entry point, installed as pip would (a dist-info folder with
    its entry_points.txt on the path), makes its method available to every command."""
    package = EXAMPLES / "plugin-package"
    project = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    dist = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    points = project["entry-points"]["optsched.methods"]
    (dist / "entry_points.txt").write_text(
        "[optsched.methods]\n" + "".join(f"{k} = {v}\n" for k, v in points.items())
    )
    for module in points.values():
        (tmp_path / f"{module}.py").write_text((package / f"{module}.py").read_text())
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    assert "random-list" in run("-m", "optsched", "methods", env=env).stdout
    out = run(
        "-m",
        "optsched",
        "solve",
        str(ROOT / "instances/hare-toy/hare-toy.instance.json"),
        "--method",
        "random-list",
        "--seed",
        "3",
        env=env,
    ).stdout
    assert "feasible" in out or "optimal" in out


def test_policy_plugin(tmp_path):
    """The example policy runs from the command line as a plug-in, checked."""
    instance = tmp_path / "i.json"
    run(
        "-m",
        "optsched",
        "gen",
        "--seed",
        "0",
        "--jobs",
        "6",
        "--gpus",
        "3",
        "--out",
        str(instance),
    )
    for gpu in ("fastest", "any"):
        out = run(
            "-m",
            "optsched",
            "--plugin",
            "examples/my_policy.py",
            "simulate",
            str(instance),
            "--policy",
            "weighted-las",
            "--param",
            f"gpu={gpu}",
        ).stdout
        assert "status     feasible" in out


def test_placement_plugin(tmp_path):
    """The example placement method runs from the command line as a plug-in, checked."""
    instance = tmp_path / "p.json"
    run(
        "-m",
        "optsched",
        "gen",
        "--family",
        "placement",
        "--seed",
        "0",
        "--hosts",
        "5",
        "--jobs",
        "4",
        "--out",
        str(instance),
    )
    out = run(
        "-m",
        "optsched",
        "--plugin",
        "examples/my_placement.py",
        "place",
        str(instance),
        "--method",
        "round-robin",
        "--param",
        "stride=2",
    ).stdout
    assert "status     feasible" in out
