"""Property tests of your own heuristic with optsched's hypothesis strategies.

Run with ``python -m pytest examples/test_my_heuristic.py``. Each test draws small random
instances (``optsched.testing.instances``) and checks, on every one, that the heuristic's
schedule passes the independent checker and is never better than a certified lower bound:
the critical path, and CP-SAT's proved optimum.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import given, settings

from optsched import solve
from optsched.testing import assert_result, instances

sys.path.insert(0, str(Path(__file__).parent))
import my_heuristic  # noqa: F401  (registers "wspt")


@settings(deadline=None)  # no per-example deadline: a busy machine is not a failure
@given(instances(mode="relaxed"))
def test_wspt_is_checker_clean_and_above_the_critical_path(instance):
    assert_result(instance, solve(instance, "wspt"))
    assert_result(instance, solve(instance, "wspt", params={"work": "mean"}))


@settings(deadline=None, max_examples=30)  # exact solves take milliseconds to seconds
@given(instances(mode="relaxed", max_jobs=3, integer=True))
def test_wspt_is_never_below_the_optimum(instance):
    optimum = solve(instance, "cpsat", time_limit=10)
    assert_result(instance, solve(instance, "wspt"), bound=optimum.bound)
