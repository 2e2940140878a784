"""Property-testing helpers: hypothesis strategies for every instance family and assertions
that a schedule is sound, so a method can be property-tested in three lines::

    from hypothesis import given
    from optsched.testing import assert_schedule, instances

    @given(instances())
    def test_my_heuristic(instance):
        assert_schedule(instance, my_heuristic(instance))  # checker-clean, objective ≥ bound

The strategies draw *small* instances (a few jobs and GPUs), on which exact methods prove
optima quickly, so a property test can compare a method with the optimum
(:func:`assert_result` with ``solve(instance, "cpsat")``'s bound). Measured with
``instances(max_jobs=3)``: CP-SAT proves the optimum in a few milliseconds (median); on real
times (a 1 ms grid) the slowest of 25 examples took 1.6 s, so give such tests
``@settings(deadline=None)``; ``integer=True`` keeps every example well under a second.
A strategy is called without its ``draw`` argument (``instances(mode="relaxed")``).
optsched's own tests use these strategies. Needs hypothesis (``pip install
'optsched[test]'``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("optsched.testing needs hypothesis: pip install 'optsched[test]'") from exc

from optsched.check import check
from optsched.cluster_model import ClusterProfile
from optsched.instance import GPU, Instance, Job
from optsched.placement.model import Container, PlacementInstance, PlacementJob
from optsched.result import OPTIMAL_TOL, Result
from optsched.schedule import Schedule
from optsched.topology import Topology, tree_topology

__all__ = [
    "assert_result",
    "assert_schedule",
    "cluster_instances",
    "cluster_profiles",
    "instances",
    "instances_with_schedules",
    "placement_instances",
    "schedules",
]


@st.composite
def instances(
    draw: st.DrawFn,
    *,
    mode: str | None = None,
    max_jobs: int = 4,
    max_gpus: int = 4,
    max_rounds: int = 3,
    max_k: int = 3,
    integer: bool | None = None,
    positive_sync: bool = False,
) -> Instance:
    """A small instance of the basic model: 1–``max_jobs`` jobs on 1–``max_gpus`` GPUs of
    1–3 types, each job eligible on a drawn subset of the types, with arrivals in [0, 6],
    weights 1–3, 1–``max_rounds`` rounds of 1–``max_k`` tasks, per-type compute and sync
    times (integers with ``integer``, else 3-decimal reals; every sync > 0 with
    ``positive_sync``), in ``mode`` (drawn when None). Gang jobs never need more GPUs than
    they are eligible on."""
    n_gpus = draw(st.integers(1, max_gpus))
    n_types = draw(st.integers(1, min(3, n_gpus)))
    types = [f"T{t}" for t in range(n_types)]
    gpu_types = [types[t] for t in range(n_types)] + [
        draw(st.sampled_from(types)) for _ in range(n_gpus - n_types)
    ]
    gpus = tuple(GPU(f"g{i}", t) for i, t in enumerate(gpu_types))
    mode = mode or draw(st.sampled_from(["relaxed", "gang"]))
    integer = draw(st.booleans()) if integer is None else integer
    time = (
        st.integers(1, 9).map(float)
        if integer
        else st.floats(0.1, 9.0, allow_nan=False).map(lambda x: round(x, 3))
    )
    low = 1 if positive_sync else 0
    sync = (
        st.integers(low, 3).map(float)
        if integer
        else st.floats(low / 10, 3.0, allow_nan=False).map(lambda x: round(x, 3))
    )
    jobs = []
    for j in range(draw(st.integers(1, max_jobs))):
        eligible = draw(st.lists(st.sampled_from(types), min_size=1, unique=True))
        k_max = sum(gpu_types.count(t) for t in eligible) if mode == "gang" else max_k
        jobs.append(
            Job(
                id=f"j{j}",
                arrival=draw(st.integers(0, 6).map(float)),
                weight=draw(st.integers(1, 3).map(float)),
                rounds=draw(st.integers(1, max_rounds)),
                tasks_per_round=draw(st.integers(1, min(max_k, k_max))),
                compute={t: draw(time) for t in eligible},
                sync={t: draw(sync) for t in eligible},
            )
        )
    return Instance("hyp", tuple(jobs), gpus, mode=mode)


@st.composite
def cluster_instances(
    draw: st.DrawFn, *, max_jobs: int = 8, max_rounds: int = 3, actuals: bool | None = None
) -> Instance:
    """A small instance of the cluster model (Liquid's family, gang mode): 2–4 hosts,
    2–``max_jobs`` PS/worker and single-task jobs with launch and save phases, GPU memory,
    ``share_cap``, link contention drawn, and (with ``actuals``, drawn when None) actual
    utilisation and memory that differ from the predictions."""
    from optsched.generate import LiquidSpec, generate_liquid

    if max_jobs < 2:
        raise ValueError(f"cluster_instances: max_jobs must be at least 2, got {max_jobs}")
    actuals = draw(st.booleans()) if actuals is None else actuals
    spec = LiquidSpec(
        hosts=draw(st.integers(2, 4)),
        jobs=draw(st.integers(2, max_jobs)),
        distributed=draw(st.sampled_from([0.0, 0.3, 1.0])),
        interarrival=draw(st.sampled_from([0, 5, 20])),
        prediction_error=draw(st.sampled_from([0.2, 1.0])) if actuals else 0.0,
        gpu_memory_gb=draw(st.sampled_from([(2, 8), (3, 6)])),
        link_contention=draw(st.booleans()),
    )
    inst = generate_liquid(spec, draw(st.integers(0, 2**16)))
    rounds = draw(st.integers(1, max_rounds))
    return dataclasses.replace(
        inst, jobs=tuple(dataclasses.replace(job, rounds=rounds) for job in inst.jobs)
    )


@st.composite
def cluster_profiles(draw: st.DrawFn, *, tasks_per_round: int = 1) -> ClusterProfile:
    """A job's :class:`~optsched.instance.ClusterProfile` with each field either at its
    default or drawn (``roles`` for ``tasks_per_round`` tasks; times and factors with 3
    decimals), so the defaults themselves are drawn too. The drawn ``gpu_memory`` and
    ``actual["gpu_memory"]`` are 1–4 GB: put the job on GPUs with at least 4096 MB."""

    def maybe(default: Any, values: st.SearchStrategy[Any]) -> Any:
        return draw(st.one_of(st.just(default), values))

    def real(low: float, high: float) -> st.SearchStrategy[float]:
        return st.floats(low, high, allow_nan=False).map(lambda x: round(x, 3))

    util = st.integers(1, 10).map(lambda u: u / 10)
    memory = st.sampled_from([1024.0, 2048.0, 4096.0])
    patterns = st.sampled_from(["pww", "pw:w", "p:ww", "p:w:w", "w"])
    roles = st.lists(
        st.sampled_from(["ps", "worker"]), min_size=tasks_per_round, max_size=tasks_per_round
    ).map(tuple)
    return ClusterProfile(
        launch=maybe(0.0, real(0, 60)),
        save=maybe(0.0, real(0, 60)),
        util=maybe(1.0, util),
        gpu_memory=maybe(0.0, memory),
        roles=maybe(None, roles),
        placement_factor=maybe(None, st.dictionaries(patterns, real(0.5, 3), min_size=1)),
        actual=maybe(
            None,
            st.fixed_dictionaries(
                {}, optional={"util": util, "gpu_memory": memory, "bandwidth": real(0.1, 4)}
            ),
        ),
        flow_time=maybe(0.0, real(0, 30)),
        bandwidth=maybe(1.0, real(0.1, 4)),
        model=maybe(None, st.sampled_from(["resnet50", "inceptionv3", "vgg16"])),
    )


@st.composite
def placement_instances(draw: st.DrawFn, *, max_jobs: int = 2) -> PlacementInstance:
    """A small placement instance: 2–4 hosts (racks and domains drawn) of 1–3 GPUs with
    mixed memory and busy flags; 1–``max_jobs`` jobs of one PS and 1–2 workers with drawn
    CPU, memory and GPU demands."""
    n_hosts = draw(st.integers(2, 4))
    g = tree_topology(
        [["K80"] * draw(st.integers(1, 3)) for _ in range(n_hosts)],
        hosts_per_rack=draw(st.sampled_from([None, 1, 2])),
        racks_per_domain=draw(st.sampled_from([None, 2])),
    )
    for _, attrs in g.nodes(data=True):
        if attrs["kind"] == "host":
            attrs.update(cpus=draw(st.sampled_from([4, 8, 12])), memory=16)
        if attrs["kind"] == "gpu":
            attrs.update(gpu_memory=draw(st.sampled_from([8, 16])), busy=draw(st.booleans()))
    jobs = []
    for j in range(draw(st.integers(1, max_jobs))):
        containers = [Container("ps", "ps", cpus=draw(st.sampled_from([0, 2, 4])), memory=4)]
        for w in range(draw(st.integers(1, 2))):
            containers.append(
                Container(
                    f"w{w}",
                    "worker",
                    gpus=draw(st.integers(0, 2)),
                    cpus=draw(st.sampled_from([2, 4])),
                    memory=4,
                    gpu_memory=draw(st.sampled_from([0, 8, 12])),
                )
            )
        jobs.append(
            PlacementJob(f"j{j}", tuple(containers), draw(st.integers(1, 3)), draw(st.booleans()))
        )
    return PlacementInstance("tiny", Topology(g), tuple(jobs))


class _RandomGreedy:
    """Starts random waiting work on random idle eligible GPUs whenever it can (never
    leaves a startable task waiting, so it cannot stall)."""

    name = "random-greedy"
    clairvoyant = False
    modes = frozenset({"relaxed", "gang"})

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, view: Any) -> list[tuple[int, Any]]:
        idle = [int(g) for g in view.idle]
        out: list[tuple[int, Any]] = []
        jobs = list(view.waiting)
        for i in self.rng.permutation(len(jobs)):
            job = jobs[i]
            usable = [g for g in idle if np.isfinite(job.compute[g])]
            self.rng.shuffle(usable)
            if view.mode == "gang":
                if len(usable) >= job.tasks_per_round:
                    gpus = tuple(usable[: job.tasks_per_round])
                    out.append((job.index, gpus))
                    idle = [g for g in idle if g not in gpus]
                continue
            for g in usable[: job.waiting]:
                out.append((job.index, g))
                idle.remove(g)
        return out


@st.composite
def schedules(draw: st.DrawFn, instance: Instance) -> Schedule:
    """A random feasible schedule of ``instance``: an online run of a randomised greedy
    policy (basic model) or of Liquid's scheduler with random placement (cluster model),
    seeded by the draw."""
    seed = draw(st.integers(0, 2**31 - 1))
    if instance.needs_cluster_model:
        from optsched.online.run import simulate

        result = simulate(instance, "liquid", params={"placement": "random"}, seed=seed)
        assert result.schedule is not None
        return result.schedule
    from optsched.online.simulator import run_simulation

    schedule = run_simulation(instance, _RandomGreedy(seed)).schedule
    assert schedule is not None
    return schedule


@st.composite
def instances_with_schedules(draw: st.DrawFn, /, **kwargs: Any) -> tuple[Instance, Schedule]:
    """(instance, one of its feasible schedules): :func:`instances` (``kwargs`` passed on)
    then :func:`schedules`."""
    instance = draw(instances(**kwargs))
    return instance, draw(schedules(instance))


def assert_schedule(
    instance: Instance, schedule: Schedule, *, bound: float | None = None
) -> float:
    """Assert that ``schedule`` is feasible for ``instance`` (the independent checker) and
    that its objective Σ w_j C_j is at least ``bound`` (default: the critical-path bound,
    which every feasible schedule meets) within the optimality tolerance; return the
    objective.

    Raises
    ------
    AssertionError
        Naming the first violations, or the objective and the bound.
    """
    report = check(instance, schedule)
    assert report.feasible, f"infeasible schedule: {report.violations[:3]}"
    assert report.objective is not None
    objective = float(report.objective)
    if bound is None:
        from optsched.critical_path import critical_path_bound

        bound = critical_path_bound(instance)
    slack = OPTIMAL_TOL * max(1.0, abs(objective))
    assert objective >= bound - slack, (
        f"objective {objective:.12g} < lower bound {float(bound):.12g}"
    )
    return objective


def assert_result(instance: Instance, result: Result[Any], *, bound: float | None = None) -> None:
    """Assert that a method's :class:`~optsched.result.Result` is sound: its schedule passes
    :func:`assert_schedule` (against ``bound`` too, e.g. another method's certified bound),
    its objective is the checker's, and its own bound (if any) is at most its objective
    within the optimality tolerance."""
    assert result.schedule is not None, f"{result.method}: no schedule ({result.status})"
    objective = assert_schedule(instance, result.schedule, bound=bound)
    assert result.objective is not None and np.isclose(
        result.objective, objective, rtol=1e-9, atol=1e-9
    ), f"{result.method}: objective {result.objective}, the checker's {objective:.12g}"
    if result.bound is not None:
        slack = OPTIMAL_TOL * max(1.0, abs(objective))
        assert result.bound <= objective + slack, (
            f"{result.method}: bound {float(result.bound):.12g} > objective {objective:.12g}"
        )
