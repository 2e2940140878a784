"""Min-cost bipartite matching: scipy's ``linear_sum_assignment``, without importing
``scipy.optimize``.

Importing the ``scipy.optimize`` package costs about 0.36 s of CPU on the 2-core reference
machine (it loads scipy's linear algebra, sparse, FFT and special-function modules), more
than a whole 300-job trace under AlloX takes to simulate. The matching itself is one
compiled extension, ``scipy/optimize/_lsap``, that needs only NumPy, so this module loads
that file directly. Where it is not there or does not load (another layout of scipy), the
public ``from scipy.optimize import linear_sum_assignment`` is used: the same function
either way, so the assignments are identical (tests/test_assignment.py).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

_NAME = "scipy.optimize._lsap"


def _load() -> Callable[..., Any]:
    """The compiled ``linear_sum_assignment``, loaded from its extension file, else from
    the public import."""
    try:
        import scipy

        folder = Path(scipy.__file__).parent / "optimize"
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = folder / f"_lsap{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader(_NAME, str(path))
                spec = importlib.util.spec_from_file_location(_NAME, path, loader=loader)
                if spec is None:
                    break
                module = importlib.util.module_from_spec(spec)
                loader.exec_module(module)
                return cast("Callable[..., Any]", module.linear_sum_assignment)
    except Exception:  # any failure: the public import below is the same function
        pass
    from scipy.optimize import linear_sum_assignment as public

    return cast("Callable[..., Any]", public)


#: ``linear_sum_assignment(cost) -> (rows, cols)``: a minimum-cost matching of the rows of a
#: finite cost matrix to distinct columns (every row when rows ≤ columns), as scipy's.
linear_sum_assignment = _load()
