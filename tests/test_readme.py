"""The README's Python example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def test_readme_python_examples_run():
    """Every Python block of the README, in order, in one fresh interpreter (the examples
    build on each other; a fresh process keeps the registered example method out of the
    other tests)."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3
    run = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    status = run.stdout.split()[0]
    assert status in ("optimal", "feasible")


def test_ci_runs_the_readme_test_command():
    text = (ROOT / "README.md").read_text()
    command = re.findall(r"Run the tests:\n\n```sh\n(.*?)\n```", text)[0]
    assert command in (ROOT / ".ci" / "run").read_text()
