"""A placement method of your own, registered as an optsched ``place`` method.

Round-robin placement: the containers of every job, in order, on the hosts in turn, skipping a
host that lacks the GPUs, CPU or memory a container asks for. Registered as a
:class:`optsched.contracts.PlaceMethod`: ``method(instance, context) -> PlaceOutput``, where
``context.model`` is the cost model its placement is measured by and ``context.options`` its
typed options (a subclass of the cost model's ``CostOptions``). Load it with ``--plugin
examples/my_placement.py``, ``load_plugin`` in Python, or import it; ``place(instance,
"round-robin")`` then checks every placement and recomputes its cost.
"""

from __future__ import annotations

from dataclasses import dataclass

from optsched import Status, register
from optsched.contracts import PlaceContext, PlaceOutput
from optsched.options import count
from optsched.placement import CostOptions, PlacementInstance, containers, placement_from_hosts


@dataclass(frozen=True)
class RoundRobinOptions(CostOptions):
    """The method's options: the cost model's, and ``--param stride=2``."""

    stride: int = count("hosts to move on after each container (default 1)", 1)


@register(
    "round-robin",
    kind="place",
    options=RoundRobinOptions,
    description="containers on the hosts in turn (example plug-in)",
)
def round_robin(
    instance: PlacementInstance, context: PlaceContext[RoundRobinOptions]
) -> PlaceOutput:
    hosts = sorted(instance.host_gpus)
    # what each host has left: the memory of each free GPU, CPUs, memory
    gpus = {
        h: sorted(instance.gpu_memory(g) for g in instance.host_gpus[h] if g not in instance.busy)
        for h in hosts
    }
    cpus = {h: instance.capacity(h, "cpus") for h in hosts}
    memory = {h: instance.capacity(h, "memory") for h in hosts}
    chosen: dict[tuple[str, str], str] = {}
    at = 0
    for job, c in containers(instance):
        for step in range(len(hosts)):
            h = hosts[(at + step) % len(hosts)]
            fitting = [m for m in gpus[h] if m >= c.gpu_memory]  # smallest first
            if len(fitting) >= c.gpus and cpus[h] >= c.cpus and memory[h] >= c.memory:
                for m in fitting[: c.gpus]:
                    gpus[h].remove(m)
                cpus[h] -= c.cpus
                memory[h] -= c.memory
                chosen[job.id, c.id] = h
                at = (at + step + context.options.stride) % len(hosts)
                break
        else:  # no host has room: no placement (never a partial one)
            return PlaceOutput(status=Status.UNKNOWN, extra={"unplaced": f"{job.id}/{c.id}"})
    return PlaceOutput(placement=placement_from_hosts(instance, chosen))
