"""Run a registered online policy and report a checked :class:`~optsched.result.Result`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optsched.exact.bounds import critical_path_bound
from optsched.instance import Instance
from optsched.online.simulator import Simulation, simulate
from optsched.result import Result, Status
from optsched.solve import checked, get_method


def run_policy(instance: Instance, policy: str, *, params: Mapping[str, str] | None = None,
               seed: int = 0, noise: float = 0.0, switch_cost: float = 0.0,
               tick: float | None = None, event_driven: bool = True, record: bool = True,
               progress: bool = False) -> tuple[Result, Simulation]:
    """Simulate the registered ``simulate`` method ``policy`` on ``instance``.

    The schedule (when ``record``) goes through the checker against the realised instance
    and the Result's objective and metrics are the checker's; without ``record`` they are the
    simulator's streamed ones. The bound is the realised instance's critical path.
    """
    info = get_method(policy, "simulate")
    params = dict(params or {})
    info.check_params(params)
    info.check_mode(instance.mode)
    chosen = info.func(params)
    sim = simulate(instance, chosen, seed=seed, noise=noise,
                   switch_cost=switch_cost, tick=tick, event_driven=event_driven,
                   record=record, progress=progress)
    objective, metrics = sim.objective, sim.metrics
    if sim.schedule is not None:
        objective, metrics = checked(sim.instance, sim.schedule, policy)
    bound = critical_path_bound(sim.instance)
    extra: dict[str, Any] = {
        "events": sim.events, "decisions": sim.decisions,
        "events_per_s": sim.events_per_s, "clairvoyant": chosen.clairvoyant,
        "noise": noise, "switch_cost": switch_cost, "tick": tick,
        "event_driven": event_driven, "bound_critical_path": bound,
    }
    result = Result(Status.FEASIBLE, method=policy, mode=instance.mode, objective=objective,
                    bound=bound, runtime_s=sim.runtime_s, seed=seed, params=params,
                    metrics=metrics, schedule=sim.schedule, extra=extra)
    return result, sim
