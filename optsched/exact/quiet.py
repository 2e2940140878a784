"""Silence native solver libraries that print to the process's standard output."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def native_stdout_silenced() -> Iterator[None]:
    """Send file descriptor 1 to /dev/null meanwhile (HiGHS prints a banner from C when a
    model is created, which would corrupt ``--json`` output)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
