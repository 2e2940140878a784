"""A griffe extension for the docs build: docstrings are written with Sphinx roles
(:func:`name`, :class:`~module.Name`) and ``::`` literal blocks; this turns them into Markdown
code spans and plain colons, which mkdocstrings renders."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")


def markdown(text: str) -> str:
    """``text`` with every Sphinx role as a code span (``~`` keeps the last name only) and
    every ``::`` that opens a literal block as a colon."""
    def code(match: re.Match[str]) -> str:
        name = match.group(2)
        return f"`{name.rsplit('.', 1)[-1] if match.group(1) else name}`"

    return re.sub(r"::\n", ":\n", ROLE.sub(code, text))


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown(obj.docstring.value)
