"""The documentation: the site builds with warnings as errors, its Python examples run, and
nothing that ships points to documents that do not."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


@pytest.mark.slow  # 7 s; CI builds the site after the default run (.ci/run)
def test_the_site_builds_without_warnings(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and "WARNING" not in run.stderr, run.stderr
    assert (tmp_path / "site" / "api" / "online" / "index.html").exists()
    page = (tmp_path / "site" / "api" / "optsched" / "index.html").read_text()
    assert ":func:" not in page and ":class:" not in page  # Sphinx roles rendered as code


@pytest.mark.parametrize(
    "page",
    [
        pytest.param("getting-started.md", marks=pytest.mark.slow),  # 7 s; CI runs it (.ci/run)
        "methods/online.md",
        "methods/liquid.md",
    ],
)
def test_the_python_in_the_docs_runs_as_written(page, tmp_path):
    """Each page's Python blocks, in order, in a fresh interpreter (files they write land in
    a temporary folder)."""
    text = (ROOT / "docs" / page).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    run = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr


def test_nothing_shipped_points_to_documents_that_do_not_ship():
    unshipped = re.compile(
        r"DESIGN\.md|formulations\.md|seeds\.md|peers\.md|style\.md|"
        r"fidelity-review|\.\./shared/"
    )
    files = [
        *ROOT.glob("optsched/**/*.py"),
        *ROOT.glob("models/*.md"),
        *ROOT.glob("docs/**/*.md"),
        ROOT / "README.md",
        ROOT / "CHANGELOG.md",
    ]
    offenders = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in files
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if unshipped.search(line)
    ]
    assert not offenders, offenders


def test_the_docs_say_how_to_call_optsched_by_name():
    """The command lines call `optsched` by name: the README and the getting-started page
    say to activate the virtual environment the README's commands create first."""
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        assert ". .venv/bin/activate" in page.read_text(), page


def test_which_method_when_names_only_registered_methods():
    """Every method the guide names in backticks exists (some kind of it)."""
    from optsched import methods

    text = (ROOT / "docs" / "methods" / "index.md").read_text()
    guide = text.split("## Which method when", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z][a-z0-9-]+)`", guide)) - {"simulate"}
    known = {info.name for info in methods()}
    assert named and named <= known, named - known


def test_the_method_tables_list_every_built_in_method():
    """The README's and the methods guide's tables name every registered method (an alias
    excepted), so a new method cannot be left out of them."""
    from optsched import methods

    builtin = {
        info.name
        for info in methods()
        if info.func.__module__.startswith("optsched.")  # not a test's or a plug-in's
        and not info.description.startswith("alias of")
    }
    for page in (ROOT / "README.md", ROOT / "docs" / "methods" / "index.md"):
        text = page.read_text()
        table = text.split("| methods |", 1)[1].split("\n\n", 1)[0]
        missing = builtin - set(re.findall(r"`([a-z][a-z0-9-]+)`", table))
        assert not missing, (page.name, sorted(missing))
