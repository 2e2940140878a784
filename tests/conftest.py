"""Shared fixtures and helpers: paths to test data, hypothesis profiles, and what an exact
result under a time limit guarantees however loaded the machine is."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = DATA / "examples"
PEER_DATA = ROOT.parent / "shared" / "peer-data"

#: Hypothesis profile, from OPTSCHED_HYPOTHESIS: ``fast`` (default) draws few examples per
#: property, for the default run; ``thorough`` draws many, for a long run (README, "Run the
#: tests"). Neither has a deadline: a slow example on a loaded machine is not a failure.
PROFILE = os.environ.get("OPTSCHED_HYPOTHESIS", "fast")
settings.register_profile(
    "fast", max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "thorough", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(PROFILE)


def n_examples(thorough: int) -> int:
    """Examples for a property that states its own count: ``thorough`` under the thorough
    profile, a fifth of it (at least 3) in the fast one."""
    return thorough if PROFILE == "thorough" else max(3, thorough // 5)


def _field(result: Any, name: str) -> Any:
    """A field of a Result, or of its JSON form (``extra``'s keys beside the others)."""
    if isinstance(result, Mapping):
        return result[name] if name in result else result["extra"][name]
    return getattr(result, name) if hasattr(result, name) else result.extra[name]


def assert_out_of_time(result: Any) -> None:
    """A result (or its JSON) short of a proof is feasible and used at least half of its
    share of the time limit: a method that gives up early fails this; a slow machine does
    not."""
    status, runtime = _field(result, "status"), _field(result, "runtime_s")
    share = _field(result, "method_time_limit")
    assert status == "feasible", status
    assert runtime >= share / 2, f"no proof after {runtime:.3f} s of a {share:.3f} s limit"


def assert_optimum(result: Any, optimum: float, *, rel: float = 1e-6) -> None:
    """What an exact result (or its JSON) under a time limit says about a known ``optimum``
    on any machine: bound ≤ optimum ≤ objective; an optimal result has the optimum; any other
    ran out of time (:func:`assert_out_of_time`). No test then depends on a proof arriving
    in time."""
    slack = rel * max(1.0, abs(optimum))
    bound, objective = _field(result, "bound"), _field(result, "objective")
    if bound is not None:
        assert bound <= optimum + slack, (bound, optimum)
    assert objective is not None and objective >= optimum - slack, (objective, optimum)
    if _field(result, "status") == "optimal":
        assert objective == pytest.approx(optimum, rel=rel, abs=1e-9)
    else:
        assert_out_of_time(result)


class WallClock:
    """A wall-clock promise (a time limit kept, a refusal before any work, a prompt stop).
    A test taking the ``wall_clock`` fixture runs twice: ``untimed`` in the default run,
    checking everything but the clock, so a loaded machine cannot fail it; ``timed``, a slow
    check (``-m slow``, for a quiet machine), also checking :meth:`below`."""

    def __init__(self, timed: bool) -> None:
        self.timed = timed

    def below(self, elapsed: float, seconds: float, what: object = "") -> None:
        if self.timed:
            assert elapsed < seconds, f"{what} took {elapsed:.2f} s, promised < {seconds} s"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "wall_clock" in metafunc.fixturenames:
        metafunc.parametrize(
            "wall_clock",
            [
                pytest.param(False, id="untimed"),
                pytest.param(True, id="timed", marks=pytest.mark.slow),
            ],
            indirect=True,
        )


@pytest.fixture
def wall_clock(request: pytest.FixtureRequest) -> WallClock:
    return WallClock(request.param)


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


@pytest.fixture
def peer_data() -> Path:
    if not PEER_DATA.is_dir():
        pytest.skip("../shared/peer-data is not present")
    return PEER_DATA
