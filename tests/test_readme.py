"""The README's Python example runs as written."""

from __future__ import annotations

import re

from tests.conftest import ROOT


def test_readme_python_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    first = re.findall(r"```python\n(.*?)```", text, flags=re.S)[0]
    exec(compile(first, "README.md", "exec"), {})
    status = capsys.readouterr().out.split()[0]
    assert status in ("optimal", "feasible")


def test_ci_runs_the_readme_test_command():
    text = (ROOT / "README.md").read_text()
    command = re.findall(r"Run the tests:\n\n```sh\n(.*?)\n```", text)[0]
    assert command in (ROOT / ".ci" / "run").read_text()
