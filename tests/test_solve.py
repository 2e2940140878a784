"""solve(): the registry, plug-ins, status handling, and the baseline on proven optima."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from optsched import MethodOutput, Schedule, Status, Task, register, solve
from optsched.critical_path import critical_path, critical_path_bound, round_lower_bound
from optsched.errors import InputError, OptschedError, UnknownNameError
from optsched.io import load_instance
from optsched.options import Options, count
from optsched.registry import get_method, methods
from tests.conftest import EXAMPLES
from tests.test_check import TINY

# proven optima of tests/data/examples (README there), relaxed and gang
OPTIMA = {"example-1": (206, 209), "example-2": (343, 372), "example-3": (83, 85)}


@pytest.mark.parametrize("name", sorted(OPTIMA))
@pytest.mark.parametrize("mode", ["relaxed", "gang"])
def test_baseline_and_bound_bracket_the_proven_optimum(name, mode):
    inst = load_instance(EXAMPLES / f"{name}.instance.json")
    optimum = OPTIMA[name][mode == "gang"]
    result = solve(inst, "ect", mode=mode)
    assert result.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert result.bound <= optimum <= result.objective
    assert result.mode == mode and result.schedule.mode == mode


def test_critical_path_by_hand():
    """TINY: J1 rounds need 2 tasks: relaxed min over {A: 1+2k, B: 0+3k} → 3 (B k=1, A k=1);
    gang: 2nd smallest of {3, 3} = 3. J2: 1 s. Bound = 2·(1 + 2·3) + 1·(0 + 1) = 15."""
    assert round_lower_bound(TINY, 0) == 3
    assert critical_path(TINY).tolist() == [7, 1]
    assert critical_path_bound(TINY) == 15
    assert critical_path_bound(TINY.with_mode("gang")) == 15
    result = solve(TINY, "ect")
    assert result.status is Status.OPTIMAL and result.objective == 15 and result.gap == 0


def test_relaxed_round_bound_uses_sequential_tasks_on_one_gpu():
    """K=3 on one fast GPU (1 s) and one slow (5 s): tasks 1,2,3 on the fast one → 3."""
    from optsched import GPU, Instance, Job

    inst = Instance(
        "x",
        (Job("J", tasks_per_round=3, compute={"F": 1, "S": 5}),),
        (GPU("f", "F"), GPU("s", "S")),
    )
    assert round_lower_bound(inst, 0) == 3
    assert solve(inst, "ect").objective == 3


def test_registry_lists_and_refuses():
    assert get_method("ect").modes == {"relaxed", "gang"}
    assert "ect" in [m.name for m in methods("solve")]
    with pytest.raises(UnknownNameError, match="unknown solve method 'nope'"):
        solve(TINY, "nope")
    with pytest.raises(InputError, match="method 'ect' has no parameter 'x'"):
        solve(TINY, "ect", params={"x": "1"})
    with pytest.raises(InputError, match="time limit must be > 0"):
        solve(TINY, "ect", time_limit=0)


@dataclass(frozen=True)
class KnobOptions(Options):
    k: int = count("a knob (default 1)")


def test_user_plugins_register_and_are_checked():
    @register(
        "test-relaxed-only",
        description="test",
        modes=["relaxed"],
        options=KnobOptions,
        replace=True,
    )
    def relaxed_only(instance, context):
        return MethodOutput(status=Status.UNKNOWN, extra={"echo": context.options.k})

    result = solve(TINY, "test-relaxed-only", params={"k": "3"})
    assert result.status is Status.UNKNOWN and result.schedule is None
    assert result.bound == 15 and result.params == {"k": "3"}
    assert result.to_dict()["echo"] == 3
    # typed options give the same run; the Result records them as text
    typed = solve(TINY, "test-relaxed-only", params=KnobOptions(k=3))
    assert typed.params == {"k": "3"} and typed.to_dict()["echo"] == 3
    with pytest.raises(InputError, match="k must be an integer"):
        solve(TINY, "test-relaxed-only", params={"k": "three"})
    with pytest.raises(InputError, match="takes KnobOptions, not Options"):
        solve(TINY, "test-relaxed-only", params=Options())
    with pytest.raises(InputError, match="does not support mode 'gang'"):
        solve(TINY, "test-relaxed-only", mode="gang", params={"k": "1"})
    with pytest.raises(InputError, match="already registered"):
        register("test-relaxed-only", description="again")(relaxed_only)


def test_infeasible_output_is_a_bug_not_a_result():
    @register("test-broken", description="returns an incomplete schedule", replace=True)
    def broken(instance, context):
        return MethodOutput(schedule=Schedule(instance.name, [Task("J2", 0, 0, "g0", 0)]))

    with pytest.raises(OptschedError, match="infeasible schedule"):
        solve(TINY, "test-broken")


def test_bound_above_objective_is_a_bug():
    @register("test-overclaim", description="claims too high a bound", replace=True)
    def overclaim(instance, context):
        from optsched.ect import ect_schedule

        return MethodOutput(schedule=ect_schedule(instance), bound=1e9)

    with pytest.raises(OptschedError, match="exceeds the checked objective"):
        solve(TINY, "test-overclaim")


def test_infeasible_status_carries_no_bound():
    @register("test-infeasible", description="says infeasible", replace=True)
    def infeasible(instance, context):
        return MethodOutput(status=Status.INFEASIBLE)

    result = solve(TINY, "test-infeasible")
    assert result.status is Status.INFEASIBLE and result.bound is None


def test_gang_mode_request_revalidates_the_instance():
    from optsched import GPU, Instance, Job

    inst = Instance("x", (Job("J", tasks_per_round=2, compute={"A": 1}),), (GPU("a", "A"),))
    with pytest.raises(InputError, match="needs 2 in gang mode"):
        solve(inst, "ect", mode="gang")


def test_result_validation():
    from optsched import Result

    with pytest.raises(ValueError, match="clashes with a Result field"):
        Result(Status.UNKNOWN, "m", "relaxed", None, None, 0.0, extra={"gap": 1})
    with pytest.raises(ValueError, match="runtime_s"):
        Result(Status.UNKNOWN, "m", "relaxed", None, None, -1.0)
    with pytest.raises(ValueError, match="needs an objective"):
        Result(Status.FEASIBLE, "m", "relaxed", None, None, 0.0)
    with pytest.raises(ValueError, match="optimal needs"):
        Result(Status.OPTIMAL, "m", "relaxed", 3.0, 2.0, 0.0, solution=Schedule("x", []))


def test_results_type_the_fields_every_method_may_set():
    result = solve(TINY, "cpsat", params={"workers": 1})
    assert result.time_limit == 60.0 and result.startup_s >= 0
    assert result.bound_source in ("method", "critical_path")
    assert result.interrupted is False
    assert result.to_dict()["time_limit"] == 60.0  # the JSON keeps them where they were
    plain = solve(TINY, "ect")
    assert plain.time_limit is None and plain.bound_source == "critical_path"
