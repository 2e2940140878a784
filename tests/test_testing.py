"""optsched.testing: the strategies draw valid objects, the assertions catch what they claim,
and the README's three-line property test works."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optsched import check, solve
from optsched.placement.model import PlacementInstance
from optsched.schedule import Schedule
from optsched.testing import (
    assert_result,
    assert_schedule,
    cluster_instances,
    instances,
    instances_with_schedules,
    placement_instances,
    schedules,
)
from tests.conftest import n_examples


@settings(max_examples=40, deadline=None)
@given(instances_with_schedules())
def test_drawn_schedules_are_feasible(pair):
    instance, schedule = pair
    objective = assert_schedule(instance, schedule)
    assert objective == pytest.approx(check(instance, schedule).objective)


@settings(max_examples=10, deadline=None)
@given(cluster_instances(), st.data())
def test_cluster_instances_and_their_schedules(instance, data):
    assert instance.mode == "gang" and instance.topology is not None
    schedule = data.draw(schedules(instance))
    assert check(instance, schedule).feasible


@settings(max_examples=20, deadline=None)
@given(placement_instances())
def test_placement_instances(instance):
    assert isinstance(instance, PlacementInstance) and instance.jobs


@settings(max_examples=20, deadline=None)
@given(instances_with_schedules(max_jobs=3))
def test_the_assertions_catch_bad_schedules_and_results(pair):
    instance, schedule = pair
    first = schedule.tasks[0]
    early = dataclasses.replace(first, start=first.start - 1000.0)
    with pytest.raises(AssertionError, match="infeasible"):
        assert_schedule(
            instance, Schedule(schedule.instance, [early, *schedule.tasks[1:]], schedule.mode)
        )
    objective = assert_schedule(instance, schedule)
    with pytest.raises(AssertionError, match="lower bound"):
        assert_schedule(instance, schedule, bound=objective * 1.01 + 1.0)
    result = solve(instance, "ect")
    assert_result(instance, result)
    with pytest.raises(AssertionError, match="bound"):
        assert_result(instance, dataclasses.replace(result, bound=result.objective + 1.0))
    with pytest.raises(AssertionError, match="checker"):
        assert_result(instance, dataclasses.replace(result, objective=result.objective - 1.0))


@settings(max_examples=n_examples(15), deadline=None)
@given(instances(max_jobs=3))
def test_readme_property_test(instance):
    """As in the README: CP-SAT's bound after at most 1 s is a certified lower bound."""
    optimum = solve(instance, "cpsat", time_limit=1)
    assert_result(instance, solve(instance, "ect"), bound=optimum.bound)
