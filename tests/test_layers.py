"""The package's layers (docs/architecture.md): a module imports only from its own layer or
the layers below, and the method families only in their stated order. Every import counts,
those inside functions too; only imports for type annotations (``if TYPE_CHECKING:``) are
exempt, as they load nothing.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import optsched
from tests.conftest import ROOT

PACKAGE = ROOT / "optsched"

#: Bottom to top. A module belongs to the first entry that names it or a package above it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "base",
        (
            "optsched.errors",
            "optsched.limits",
            "optsched.output",
            "optsched.jsonfile",
            "optsched.options",
            "optsched.work",
            "optsched.ckernel",
            "optsched.metrics",
            "optsched.workloads",
            "optsched._exports",
        ),
    ),
    (
        "model",
        (
            "optsched.topology",
            "optsched.cluster_model",
            "optsched.instance",
            "optsched.schedule",
            "optsched.check",
            "optsched.critical_path",
            "optsched.fairness",
            "optsched.intervals",
            "optsched.result",
            "optsched.io",
            "optsched.traces",
            "optsched.subsets",
            "optsched.placement.model",
            "optsched.placement.cost",
            "optsched.placement.check",
            "optsched.placement.durations",
            "optsched.placement",
        ),
    ),
    (
        "runtime",
        (
            "optsched.budget",
            "optsched.contracts",
            "optsched.runtime",
            "optsched.registry",
            "optsched.ect",
            "optsched.solve",
        ),
    ),
    # the method families, in the order in which they may build on each other
    ("estimation", ("optsched.estimation",)),
    ("exact", ("optsched.exact",)),
    ("heuristics", ("optsched.heuristics",)),
    (
        "placement methods",
        (
            "optsched.placement.heuristics",
            "optsched.placement.exact",
            "optsched.placement.gga",
            "optsched.placement.run",
        ),
    ),
    ("online", ("optsched.online", "optsched.regret")),
    (
        "tools",
        (
            "optsched.generate",
            "optsched.placement.generate",
            "optsched.plot",
            "optsched.demo",
            "optsched.testing",
            "optsched.bench",
            "optsched.cli",
            "optsched.__main__",
            "optsched",
        ),
    ),
]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int:
    """The index in LAYERS of ``module`` (the longest matching prefix wins)."""
    best, length = None, -1
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > length:
                best, length = index, len(name)
    assert best is not None, f"{module} is in no layer of tests/test_layers.py"
    return best


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every optsched import in ``path`` outside ``if TYPE_CHECKING:``."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.append((node.lineno, base))
            # ``from optsched.x import y`` where y is a module imports optsched.x.y
            found.extend(
                (node.lineno, f"{base}.{a.name}")
                for a in node.names
                if _is_module(f"{base}.{a.name}")
            )
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text()))
    return [(line, m) for line, m in found if m == "optsched" or m.startswith("optsched.")]


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=[module_name(p) for p in SOURCES])
def test_no_module_imports_from_a_layer_above_its_own(path):
    own = layer_of(module_name(path))
    upward = [
        f"line {line}: {module} ({LAYERS[layer_of(module)][0]})"
        for line, module in imports(path)
        if layer_of(module) > own
    ]
    assert not upward, f"{module_name(path)} ({LAYERS[own][0]}) imports from above: " + "; ".join(
        upward
    )


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The scan finds imports inside functions and relative ones, and skips type-only ones."""
    fake = ROOT / "optsched" / "errors.py"
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from optsched.solve import solve\n"
        "def f():\n    from .online import run\n"
    )
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    found = [m for _, m in imports(fake)]
    assert found == ["optsched.online", "optsched.online.run"]
    assert layer_of("optsched.online.run") > layer_of("optsched.errors")


def test_no_two_modules_import_each_other_in_a_cycle():
    """Within a layer too, imports form no cycle (counting every import but type-only ones,
    and a package's ``__init__`` as its own module)."""
    graph = {module_name(p): {m for _, m in imports(p) if _is_module(m)} for p in SOURCES}
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            pytest.fail("import cycle: " + " -> ".join(cycle))
        if module in done:
            return
        for other in sorted(graph.get(module, ())):
            if other != module:
                walk(other, [*path, module])
        done.add(module)

    for module in sorted(graph):
        walk(module, [])


def _fresh(code: str) -> str:
    """Run ``code`` in a fresh interpreter; its stdout."""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_verbs_are_functions_whatever_was_imported_first():
    """optsched.solve, .check, .generate share their names with modules, .simulate and
    .place are imported on first use: each is the function, before and after its module is
    imported."""
    out = _fresh(
        "import optsched, optsched.solve, optsched.check, optsched.generate, "
        "optsched.online.run, optsched.placement.run\n"
        "print(*(n for n in ('check', 'generate', 'place', 'simulate', 'solve')"
        " if callable(getattr(optsched, n))))"
    )
    assert out.split() == ["check", "generate", "place", "simulate", "solve"]
    assert set(optsched.__all__) <= set(dir(optsched))


def test_start_up_loads_only_what_a_command_uses():
    """``import optsched`` loads no NumPy; looking up a solve method loads no online or
    placement method and no SciPy (every solve module is imported then, so each imports
    its solvers when it runs); the command line's parser loads no method family."""
    out = _fresh(
        "import sys, optsched\nprint('numpy' in sys.modules)\n"
        "optsched.get_method('ect')\n"
        "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('optsched.')"
        " and m.count('.') > 1}))\n"
        "print('scipy' in sys.modules)\n"
        "from optsched.cli import build_parser\nbuild_parser()\n"
        "print('optsched.bench.runner' in sys.modules)"
    )
    numpy_loaded, families, scipy_loaded, runner = out.splitlines()
    assert numpy_loaded == "False"
    assert "online" not in families and "placement" not in families
    assert scipy_loaded == "False"
    assert runner == "False"


def test_checking_a_schedule_loads_no_numpy(tmp_path):
    """``optsched check`` reads, validates and checks an instance and its schedule, fairness
    metrics included, in plain Python: its start-up never pays for NumPy."""
    from optsched.cli import main

    instance = ROOT / "optsched" / "data" / "instances" / "hare-toy.instance.json"
    schedule = tmp_path / "s.json"
    assert main(["solve", str(instance), "--method", "ect", "--out", str(schedule)]) == 0
    out = _fresh(
        "import sys\nfrom optsched.cli import main\n"
        f"code = main(['check', {str(instance)!r}, {str(schedule)!r}, '--json'])\n"
        "print(code, 'numpy' in sys.modules)"
    )
    assert out.splitlines()[-1] == "0 False"


def test_gen_lists_every_generator_family():
    from optsched.bench.grid import FAMILIES
    from optsched.cli.gen import FAMILY_NAMES

    assert tuple(FAMILIES) == FAMILY_NAMES
