"""Exceptions raised on bad input.

Every error names its culprit (job, GPU, node, field) in a single line. The CLI turns an
``InputError`` into exit code 2; anything else escaping a command is an internal error.
"""

from __future__ import annotations


class OptschedError(Exception):
    """Base class of every optsched exception."""


class InputError(OptschedError, ValueError):
    """Bad input: malformed file, unknown format, unknown or missing key, bad value."""


class UnknownNameError(InputError, KeyError):
    """A reference to a job, GPU, node, workload or method that does not exist."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class MethodError(OptschedError):
    """A registered method misbehaved: it raised, exited, or returned something invalid (a bug
    in the method, never repaired; exit 70 on the command line). The message names the method
    and, when it came from one, its plug-in module."""
