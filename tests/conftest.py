"""Shared fixtures: paths to test data, hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
EXAMPLES = DATA / "examples"
PEER_DATA = ROOT.parent / "shared" / "peer-data"

settings.register_profile("ci", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=20, deadline=None)
settings.register_profile("thorough", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def examples() -> Path:
    return EXAMPLES


@pytest.fixture
def peer_data() -> Path:
    if not PEER_DATA.is_dir():
        pytest.skip("../shared/peer-data is not present")
    return PEER_DATA
